"""Bundled draft weights in `assets/drafts/` and how a draft argument maps to a draft model.

File format (both kinds): one fp16 safetensors file whose metadata holds a JSON `config`; a JSON
card beside it (`*.json`) records how it was trained and what it reached.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch

from opttree.config import RANDOM_HEAD, check_tree_temperature
from opttree.errors import BadInput, ModelLoadError
from opttree.models import bundled
from opttree.nets import length_predictor
from opttree.nets.eagle_checkpoint import is_eagle_checkpoint, load_eagle_head
from opttree.nets.exit_head import ExitHead, exit_config
from opttree.nets.feature_head import FeatureHead, head_config_from_target
from opttree.nets.few_row_linear import apply_choice, choice_of, use_few_row_linear
from opttree.nets.grouped_attention import use_grouped_attention
from opttree.nets.placement import input_device

TEMPERATURE_KEY = "tree_temperature"   # the card's fitted tree temperature (drafters/tree_temperature.py)
ACCEPTANCE_KEY = "acceptance_by_rank"  # the card's measured acceptance by rank (trees/sequoia.py)


def card_temperature(draft: str | None) -> float:
    """The fitted tree temperature in the card beside a draft file, 1.0 when there is none."""
    if not draft:
        return 1.0
    card = Path(draft).with_suffix(".json")
    try:
        return check_tree_temperature(json.loads(card.read_text()).get(TEMPERATURE_KEY, 1.0))
    except Exception:  # no card, unreadable card, or a bad value: the draft's own probabilities
        return 1.0


def card_acceptance(draft: str | None) -> tuple[float, ...] | None:
    """The positional acceptance vector in the card beside a draft file (`ACCEPTANCE_KEY`: per rank r,
    how often the rank-r child of an accepted node is accepted; train/acceptance.py measures it), or
    None when there is no card, no vector or a malformed one."""
    if not draft:
        return None
    card = Path(draft).with_suffix(".json")
    try:
        values = json.loads(card.read_text()).get(ACCEPTANCE_KEY)
        rates = tuple(float(x) for x in values)
    except Exception:  # no card, unreadable card, no vector: the run falls back to the default vector
        return None
    ok = rates and all(math.isfinite(x) and 0.0 <= x <= 1.0 for x in rates)
    return rates if ok else None


def check_card_target(draft: str, target: str, kind: str = "draft",
                      advice: str = "pass a draft for this target", shown: str | None = None) -> None:
    """A draft whose card names the target it was trained for loads only with that target (the
    bundled target's hub stand-in counts as the same: same tokenizer and weights family). `shown`: the
    target as the refusal names it (a served pair's public name, `ModelPair.recorded_names`), else `target`."""
    card = Path(str(draft)).with_suffix(".json")
    try:
        trained_for = json.loads(card.read_text()).get("target")
    except (OSError, ValueError, AttributeError):
        return                      # no card (a hub id, a folder): nothing to check
    bundled_card = trained_for in bundled.BUNDLED_ALIASES    # the stand-in counts by its id or its pair's label
    if trained_for and target != trained_for and not (
            bundled_card and (bundled.is_bundled(target) or target == bundled.HUB_FALLBACK)):
        raise BadInput(f"{kind} {Path(str(draft)).name} was trained for the target {trained_for!r}, "
                       f"not {shown or target!r} (its card says so): {advice}.")


# What each kind of draft file holds (`_read` names it when a file is none of them).
FEATURE_HEAD_FILE = ("an EAGLE feature head (tensors fc.weight and decoder.layers.N.*, from python -m opttree.train "
                     "--kind head; an official EAGLE checkpoint is given by its folder or hub id)")
EXIT_HEAD_FILE = ("an early-exit head (tensors decoder.layers.N.* and decoder.norm.weight, from python -m "
                  "opttree.train --kind early-exit)")
CLASSIC_FILE = ("a classic draft file (tensors model.layers.N.*, from python -m opttree.train --kind classic; a "
                "Hugging Face model is given by its folder or hub id)")


# A rotary embedding's buffers of frequencies (transformers' `*RotaryEmbedding`), fp32 in a model of any dtype.
ROTARY_BUFFERS = ("inv_freq", "original_inv_freq")


def _read(path: Path, what: str) -> tuple[dict, dict]:
    """The `config` a draft file from python -m opttree.train carries in its metadata, and its tensors; a
    file without one (a Hugging Face model's model.safetensors, say) is refused as not being `what`, before
    its tensors are read."""
    from safetensors import SafetensorError, safe_open  # imported with the weights it reads or writes

    if not path.exists():
        raise ModelLoadError(f"draft weights {path} not found (train them: python -m opttree.train).")
    try:
        with safe_open(str(path), framework="pt") as f:
            meta, names = f.metadata() or {}, list(f.keys())
            tensors = {k: f.get_tensor(k) for k in names} if "config" in meta else None
    except SafetensorError as exc:   # a GGUF, a .bin, a truncated file: say what the file is not
        raise ModelLoadError(f"draft weights {path} are not a safetensors file ({exc}): a draft here is a "
                             ".safetensors file from python -m opttree.train, or an EAGLE checkpoint's "
                             "folder.") from None
    if tensors is None:
        shown = ", ".join(sorted(names)[:3]) + (", …" if len(names) > 3 else "")
        raise ModelLoadError(f"{path} is not {what}: it has no `config` in its metadata, which every draft "
                             f"file from python -m opttree.train carries, and its tensors are {shown or 'none'}.")
    return json.loads(meta["config"]), tensors


def load_feature_head(spec: str, target):
    if spec == RANDOM_HEAD:
        torch.manual_seed(0)
        head = FeatureHead(head_config_from_target(target.config))
    elif is_eagle_checkpoint(spec):
        head = load_eagle_head(spec, target)
    else:
        path = Path(spec)
        if path.is_dir():
            path = path / "head.safetensors"
        config, tensors = _read(path, FEATURE_HEAD_FILE)
        if config.get("hidden_size") != target.config.hidden_size:
            raise ModelLoadError(f"feature head {spec} was trained for hidden size "
                                 f"{config.get('hidden_size')}, target has {target.config.hidden_size}.")
        layers = int(target.config.num_hidden_layers)
        if any(not 0 <= int(i) <= layers for i in config.get("fused_layers") or []):
            raise ModelLoadError(f"fused head {spec} reads the target's layers {config['fused_layers']}; "
                                 f"the target has {layers}.")
        head = FeatureHead(config)
        head.load_state_dict(tensors)
    beside_target(head, target).eval().requires_grad_(False)
    use_few_row_linear(head, draft=True)  # a tree layer drafts a few nodes at once (few_row_linear.py)
    apply_choice(head, choice_of(target) or {})   # the target's kernel choice, shape by shape
    use_grouped_attention(head)
    return head


def load_exit_head(spec: str, target, exit_layer: int | None = None):
    """An early-exit head (nets/exit_head.py) for `target`; `exit_layer` (None: the head's own)
    must be the layer it was trained after. "random" is an untrained head after `exit_layer`."""
    if spec == RANDOM_HEAD:
        torch.manual_seed(0)
        head = ExitHead(exit_config(target.config, exit_layer or 1))
    else:
        config, tensors = _read(Path(spec), EXIT_HEAD_FILE)
        if config.get("kind") != "early-exit":
            raise ModelLoadError(f"{spec} is not an early-exit head (its config has no exit layer).")
        if config.get("hidden_size") != target.config.hidden_size:
            raise ModelLoadError(f"early-exit head {spec} was trained for hidden size "
                                 f"{config.get('hidden_size')}, target has {target.config.hidden_size}.")
        if exit_layer is not None and exit_layer != config["exit_layer"]:
            raise BadInput(f"early-exit head {Path(spec).name} exits after layer {config['exit_layer']}, not "
                           f"{exit_layer}: train one for layer {exit_layer} (python -m opttree.train --kind "
                           f"early-exit --exit-layer {exit_layer} --out FILE) and pass it with --exit-head-path.")
        head = ExitHead(config)
        head.load_state_dict(tensors)
    beside_target(head, target).eval().requires_grad_(False)
    use_few_row_linear(head, draft=True)
    apply_choice(head, choice_of(target) or {})
    use_grouped_attention(head)
    return head


def load_bundled_classic(spec: str, target):
    """A classic draft stored as a safetensors file; None when `spec` is a hub id or HF folder.

    Tensors named in the metadata's `from_target` map are copied from the target at load time
    instead of being stored (e.g. the embedding the draft was initialised from and kept frozen).
    """
    path = Path(spec)
    if path.suffix != ".safetensors":
        return None
    from transformers import AutoConfig, AutoModelForCausalLM  # transformers is heavy: imported when a model is built

    config, tensors = _read(path, CLASSIC_FILE)
    from safetensors import safe_open  # imported with the weights it reads or writes

    with safe_open(str(path), framework="pt") as f:
        shared = json.loads((f.metadata() or {}).get("from_target", "{}"))
    cfg = AutoConfig.for_model(**config)
    cfg._attn_implementation = "sdpa"
    model = AutoModelForCausalLM.from_config(cfg)
    target_state = target.state_dict()
    for name, src in shared.items():
        tensors[name] = target_state[src]
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    missing = [m for m in missing if not (m == "lm_head.weight" and cfg.tie_word_embeddings)]
    if missing or unexpected:
        raise ModelLoadError(f"classic draft {spec}: missing {missing[:3]}, unexpected {unexpected[:3]}")
    model.tie_weights()
    return beside_target(model, target).eval().requires_grad_(False)


def beside_target(draft: torch.nn.Module, target) -> torch.nn.Module:
    """`draft` (built in fp32) moved to where the target's embedding computes, in that embedding's dtype,
    except its rotary inverse frequencies, which stay fp32 as transformers builds them in a model of any
    dtype: the rotary embedding multiplies positions by them in fp32, and `Module.to(bf16)` would round them
    to 8 bits, turning the angle at position 500 by up to 0.69 rad (1.4 at 1000) from the one the draft was
    trained with."""
    device, dtype = input_device(target), target.get_input_embeddings().weight.dtype
    kept = {name: buf for name, buf in draft.named_buffers() if name.rsplit(".", 1)[-1] in ROTARY_BUFFERS}
    draft.to(device=device, dtype=dtype)
    for name, buf in kept.items():
        owner, _, leaf = name.rpartition(".")
        setattr(draft.get_submodule(owner), leaf, buf.to(device))
    return draft


def length_predictor_for(pair) -> length_predictor.LengthPredictor:
    """The bundled learned length predictor (AdaEAGLE), for a target its card names."""
    path = length_predictor.DEFAULT_PREDICTOR   # read at call time: tests point it at a tiny predictor
    check_card_target(str(path), pair.target_name, kind="length predictor",
                      advice="use --length-control delta or thompson with this target", shown=pair.recorded_names()[0])
    return length_predictor.load_length_predictor(path, pair.target.config.hidden_size)
