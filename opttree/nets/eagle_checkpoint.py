"""Official EAGLE-1 / EAGLE-2 draft heads (the reference repo's checkpoints), from a hub id or a folder.

Layout of such a checkpoint: a `config.json` (a Llama config: hidden size, heads, layers, rope) and
`model.safetensors` or `pytorch_model.bin` holding
- `fc.weight` (h × 2h) and, when the config's `bias` is not false, `fc.bias`: the input projection
  over the concatenation **[token embedding ; target feature]** (embedding first);
- `layers.N.*`: Llama decoder layers (self_attn q/k/v/o, mlp gate/up/down, post_attention_layernorm),
  where layer 0 has **no input_layernorm** (it reads the projection directly) and no final norm
  follows the last layer (its output goes straight to the target's LM head);
- optionally `embed_tokens.weight` (a copy of the target's embedding; the target's own is used).

This project's head (`nets/feature_head.py`) computes the same function with its projection over
[target feature ; token embedding], so reading a checkpoint swaps the two column blocks of `fc.weight`
and turns the two norms EAGLE does not have into identities. EAGLE-3 heads (a fused three-layer
feature, a separate draft vocabulary and LM head) are a different network and are rejected with a
clear message.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from opttree.errors import ModelLoadError
from opttree.nets.feature_head import FeatureHead, rope_theta
from opttree.paths import is_hub_id

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def is_eagle_checkpoint(spec: str) -> bool:
    """A folder with an EAGLE config and weights, or a hub id with its owner (`org/name`): a one-part name is
    read as a head file of this project's (the loader takes `random`, the untrained head, before asking)."""
    path = Path(spec)
    if path.is_dir():
        return (path / "config.json").is_file() and any((path / w).is_file() for w in WEIGHT_FILES)
    return is_checkpoint_id(spec)


def is_checkpoint_id(spec: str) -> bool:
    """Whether a head argument names an EAGLE checkpoint on the hub: an id with its owner (`org/name`); a
    one-part name is a head file of this project's."""
    return "/" in spec and is_hub_id(spec)


def _folder(spec: str) -> Path:
    path = Path(spec)
    if path.is_dir():
        return path
    try:
        from huggingface_hub import snapshot_download  # only for hub ids

        return Path(snapshot_download(spec, allow_patterns=["config.json", *WEIGHT_FILES]))
    except Exception as exc:  # noqa: BLE001 (offline, unknown id, no access: one clear message)
        raise ModelLoadError(f"cannot fetch the EAGLE head {spec!r} from the hub: {type(exc).__name__}: "
                             f"{str(exc)[:200]}") from None


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    if (folder / "model.safetensors").is_file():
        from safetensors.torch import load_file  # imported with the weights it reads

        return load_file(str(folder / "model.safetensors"))
    if (folder / "pytorch_model.bin").is_file():
        return torch.load(folder / "pytorch_model.bin", map_location="cpu", weights_only=True)
    raise ModelLoadError(f"{folder} has no model.safetensors or pytorch_model.bin.")


def head_config(cfg: dict, target_config) -> dict:
    """Our head's config for an EAGLE checkpoint's `config.json` (checked against the target)."""
    h = cfg.get("hidden_size")
    if h != target_config.hidden_size:
        raise ModelLoadError(f"this EAGLE head has hidden size {h}; the target has {target_config.hidden_size}.")
    if cfg.get("vocab_size") not in (None, target_config.vocab_size):
        raise ModelLoadError(f"this EAGLE head was trained for a vocabulary of {cfg.get('vocab_size')} tokens; "
                             f"the target has {target_config.vocab_size}.")
    heads = cfg["num_attention_heads"]
    return {
        "hidden_size": h, "intermediate_size": cfg["intermediate_size"], "num_attention_heads": heads,
        "num_key_value_heads": cfg.get("num_key_value_heads") or heads,
        "head_dim": cfg.get("head_dim") or h // heads, "rms_norm_eps": cfg.get("rms_norm_eps", 1e-6),
        "rope_theta": rope_theta(_Obj(cfg)), "max_position_embeddings": cfg.get("max_position_embeddings", 4096),
        "num_hidden_layers": cfg.get("num_hidden_layers", 1), "draft_vocab": 0, "eagle_norms": True,
    }


class _Obj:
    def __init__(self, d: dict):
        self.__dict__.update(d)


def load_eagle_head(spec: str, target) -> FeatureHead:
    folder = _folder(spec)
    try:
        cfg = json.loads((folder / "config.json").read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ModelLoadError(f"{folder}/config.json is not readable: {exc}") from None
    tensors = _weights(folder)
    if "fc.weight" not in tensors or any(k.startswith(("midlayer.", "d2t", "t2d")) for k in tensors):
        raise ModelLoadError(f"{spec} is not an EAGLE-1/EAGLE-2 head (EAGLE-3 heads, with a fused "
                             "three-layer feature and their own vocabulary, are not supported).")
    config = head_config(cfg, target.config)
    head = FeatureHead(config)
    h = config["hidden_size"]
    fc = tensors["fc.weight"]
    if tuple(fc.shape) != (h, 2 * h):
        raise ModelLoadError(f"{spec}: fc.weight has shape {tuple(fc.shape)}, expected {(h, 2 * h)}.")
    state = {"fc.weight": torch.cat([fc[:, h:], fc[:, :h]], dim=1),       # [embedding; feature] -> ours
             "fc.bias": tensors.get("fc.bias", torch.zeros(h, dtype=fc.dtype))}
    for name, value in tensors.items():
        if name.startswith("layers."):
            state["decoder." + name] = value
    own = head.state_dict()
    # (the decoder's own one-row embedding is unused: the head is fed `inputs_embeds`)
    missing = [k for k in own if k not in state and k not in ("vocab_ids", "decoder.embed_tokens.weight")]
    unknown = [k for k in state if k not in own]
    if missing or unknown:
        raise ModelLoadError(f"{spec} does not match an EAGLE-1/2 head of this shape: missing "
                             f"{missing[:4]}, unexpected {unknown[:4]}.")
    head.load_state_dict(state, strict=False)
    return head
