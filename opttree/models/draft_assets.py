"""Bundled draft weights in `assets/drafts/` and how a draft argument maps to a draft model.

File format (both kinds): one fp16 safetensors file whose metadata holds a JSON `config`; a JSON
card beside it (`*.json`) records how it was trained and what it reached.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from opttree import paths
from opttree.config import DRAFT_FLAGS
from opttree.drafters.early_exit import ExitHead, check_matches_target, exit_config
from opttree.drafters.head_model import FeatureHead, head_config_from_target
from opttree.errors import BadInput, ModelLoadError
from opttree.models import bundled
from opttree.models.eagle_checkpoint import is_eagle_checkpoint, load_eagle_head
from opttree.models.few_row_linear import use_few_row_linear

ASSETS = paths.DRAFTS
BUNDLED_HEAD = ASSETS / "smollm2-eagle-head.safetensors"
BUNDLED_CLASSIC = ASSETS / "smollm2-classic.safetensors"
BUNDLED_EXIT = ASSETS / "smollm2-early-exit.safetensors"
BUNDLED = {"eagle": BUNDLED_HEAD, "classic": BUNDLED_CLASSIC, "early-exit": BUNDLED_EXIT}
RANDOM_HEAD = "random"  # an untrained head: for tests and to show what a useless draft looks like


def default_draft_for(target: str, drafter: str) -> str:
    if target in bundled.BUNDLED_ALIASES:
        return str(BUNDLED[drafter])
    hint = " (train one: python -m opttree.train --kind early-exit)" if drafter == "early-exit" else ""
    raise BadInput(f"target {target!r} has no bundled {drafter} draft: pass one with {DRAFT_FLAGS[drafter]}{hint}.")


def check_card_target(draft: str, target: str, kind: str = "draft",
                      advice: str = "pass a draft for this target") -> None:
    """A draft whose card names the target it was trained for loads only with that target (the
    bundled target's hub stand-in counts as the same: same tokenizer and weights family)."""
    card = Path(str(draft)).with_suffix(".json")
    try:
        trained_for = json.loads(card.read_text()).get("target")
    except (OSError, ValueError, AttributeError):
        return                      # no card (a hub id, a folder): nothing to check
    same = {trained_for} | (bundled.BUNDLED_ALIASES | {bundled.HUB_FALLBACK}
                            if trained_for in bundled.BUNDLED_ALIASES else set())
    if trained_for and target not in same:
        raise BadInput(f"{kind} {Path(str(draft)).name} was trained for the target {trained_for!r}, not {target!r} "
                       f"(its card says so): {advice}.")


def _read(path: Path) -> tuple[dict, dict]:
    from safetensors import safe_open  # imported with the weights it reads or writes

    if not path.exists():
        raise ModelLoadError(f"draft weights {path} not found (train them: python -m opttree.train).")
    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata() or {}
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    return json.loads(meta.get("config", "{}")), tensors


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
        config, tensors = _read(path)
        if config.get("hidden_size") != target.config.hidden_size:
            raise ModelLoadError(f"feature head {spec} was trained for hidden size "
                                 f"{config.get('hidden_size')}, target has {target.config.hidden_size}.")
        layers = int(target.config.num_hidden_layers)
        if any(not 0 <= int(i) <= layers for i in config.get("fused_layers") or []):
            raise ModelLoadError(f"fused head {spec} reads the target's layers {config['fused_layers']}; "
                                 f"the target has {layers}.")
        head = FeatureHead(config)
        head.load_state_dict(tensors)
    emb = target.get_input_embeddings().weight
    head.to(device=emb.device, dtype=emb.dtype).eval().requires_grad_(False)
    use_few_row_linear(head)  # a tree layer drafts a few nodes at once (few_row_linear.py)
    return head


def load_exit_head(spec: str, target, exit_layer: int | None = None):
    """An early-exit head (drafters/early_exit.py) for `target`; `exit_layer` (None: the head's own)
    must be the layer it was trained after. "random" is an untrained head after `exit_layer`."""
    if spec == RANDOM_HEAD:
        torch.manual_seed(0)
        head = ExitHead(exit_config(target.config, exit_layer or 1))
    else:
        config, tensors = _read(Path(spec))
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
    check_matches_target(target, head.exit_layer)
    emb = target.get_input_embeddings().weight
    head.to(device=emb.device, dtype=emb.dtype).eval().requires_grad_(False)
    use_few_row_linear(head)
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

    config, tensors = _read(path)
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
    emb = target.get_input_embeddings().weight
    return model.to(device=emb.device, dtype=emb.dtype).eval().requires_grad_(False)
