"""The one loader: target and draft models from the bundled GGUF, a hub id or a local path.

Everything that touches `from_pretrained` lives here, so the app, CLI, benchmarks and tests load
models the same way (same device choice, dtype, attention implementation and error messages).
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field
from pathlib import Path

import torch

from opttree import paths
from opttree.errors import BadInput, ModelLoadError
from opttree.models import bundled
from opttree.models.draft_assets import load_bundled_classic
from opttree.nets.attention_mask import tree_refusal
from opttree.nets.few_row_linear import apply_choice, choice_of, mark_target, use_few_row_linear
from opttree.nets.grouped_attention import use_grouped_attention
from opttree.nets.kernel_choice import choose_kernels
from opttree.nets.placement import input_device


def resolve_device(device: str = "auto") -> torch.device:
    if device in (None, "", "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise BadInput(f"--device {device} asked for, but no CUDA GPU is visible to torch.")
    if device not in ("cpu", "mps") and not device.startswith("cuda"):
        raise BadInput(f"unknown device {device!r}: use auto, cpu or cuda[:N].")
    return torch.device(device)


def resolve_dtype(dtype: str, device: torch.device, target: str | None = None) -> torch.dtype:
    """fp32 on CPU (exactness, and CPU half matmuls are slow); on GPU bf16/fp16, except for the bundled
    target (its aliases; a hub id of the same model is treated as any other target), which stays fp32:
    on an H200 (benchmarks/gpu/2026-11-27-nvidia-h200.md) fp32 ran OPT-Tree at ~1.7x AR, where bf16 ran
    it at 0.47x (n = 60), with a draft-layer cost not yet explained, and its greedy output differed from
    AR's on 56 % of prompts. fp32 is exact, and 135M parameters fit any GPU in it."""
    if dtype in (None, "", "auto"):
        if device.type == "cuda" and target not in bundled.BUNDLED_ALIASES:
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    table = {"fp32": torch.float32, "float32": torch.float32, "fp16": torch.float16,
             "float16": torch.float16, "bf16": torch.bfloat16, "bfloat16": torch.bfloat16}
    if dtype not in table:
        raise BadInput(f"unknown dtype {dtype!r}: use auto, fp32, fp16 or bf16.")
    return table[dtype]


def model_folder(spec: str) -> str:
    """Map a model argument to what `from_pretrained` takes (the bundled id becomes its cache dir, converted on
    first use), once `checked_model` takes it."""
    spec = checked_model(spec)
    return bundled.source() if spec in bundled.BUNDLED_ALIASES else spec


def checked_model(spec: str) -> str:
    """A model argument as given (stripped), or refused with what to give instead: a file (a GGUF, a weights
    file) or a local path that is not there (transformers would call a file an invalid config JSON and a missing
    folder a malformed repo id). Reads no weights: the bundled ids pass as they are (their conversion waits for a
    load), so a command that never loads the model checks it for nothing."""
    if not spec or not str(spec).strip():
        raise BadInput("a model id or path is required.")
    spec = str(spec).strip()
    if spec in bundled.BUNDLED_ALIASES:
        return spec
    path = Path(spec)
    if path.is_file():
        gguf = (f"; a GGUF loads only as the bundled model's ({bundled.GGUF_NAME}): set OPTTREE_GGUF to it and "
                f"use '{bundled.BUNDLED_ID}'") if path.suffix.lower() == ".gguf" else ""
        raise BadInput(f"model {spec!r} is a file: give the model's folder (config.json, tokenizer and weights) "
                       f"or a hub id{gguf}.")
    if not path.exists() and not paths.is_hub_id(spec):
        raise BadInput(f"model {spec!r}: no such folder (a local model is a folder with config.json, tokenizer "
                       "and weights).")
    if path.is_dir() and not (path / "config.json").is_file():
        raise ModelLoadError(f"model {spec!r}: the folder has no config.json (a local model is a folder with "
                             "config.json, tokenizer and weights, as save_pretrained writes it).")
    return spec


# The files one of transformers' tokenizers is read from: a folder with none of them holds no tokenizer.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json", "vocab.txt",
                   "spiece.model", "sentencepiece.bpe.model", "tekken.json")


def _quiet_transformers() -> None:
    """Weight-loading progress bars flood the CLI and test logs; our own phases report progress."""
    from transformers.utils import logging as hf_logging  # transformers is heavy: imported when a model is built

    hf_logging.disable_progress_bar()


def load_tokenizer(spec: str, trust_remote_code: bool = False):
    from transformers import AutoTokenizer  # transformers is heavy: imported when a model is built

    folder = model_folder(spec)
    try:
        return AutoTokenizer.from_pretrained(folder, trust_remote_code=trust_remote_code)
    except Exception as exc:  # transformers raises OSError/ValueError/HTTP errors for bad ids
        if Path(folder).is_dir() and not any((Path(folder) / name).is_file() for name in TOKENIZER_FILES):
            raise ModelLoadError(f"model {spec!r}: the folder has no tokenizer ({', '.join(TOKENIZER_FILES[:2])}, "
                                 "...): save the model's tokenizer beside it (tokenizer.save_pretrained(folder)).") \
                from exc
        raise ModelLoadError(_load_message(spec, exc)) from exc


def load_causal_lm(spec: str, device: torch.device, dtype: torch.dtype,
                   device_map: str | None = None, trust_remote_code: bool = False):
    from transformers import AutoConfig, AutoModelForCausalLM  # heavy: imported when a model is built

    _quiet_transformers()
    folder = model_folder(spec)
    try:
        config = AutoConfig.from_pretrained(folder, trust_remote_code=trust_remote_code)
    except Exception as exc:
        raise ModelLoadError(_load_message(spec, exc)) from exc
    refusal = tree_refusal(config)     # read from the config, before any weight is loaded
    if refusal:
        raise BadInput(f"model {spec!r} cannot run here: {refusal}")
    kwargs = dict(config=config, dtype=dtype, attn_implementation=paths.attention_impl(),
                  trust_remote_code=trust_remote_code)
    if device_map:
        kwargs["device_map"] = device_map  # spreads a big target over the visible GPUs
    try:
        model = AutoModelForCausalLM.from_pretrained(folder, **kwargs)
    except Exception as exc:
        raise ModelLoadError(_load_message(spec, exc)) from exc
    return prepare(model, device, device_map)


def prepare(model, device: torch.device, device_map: str | None = None):
    """A built target made ready to decode: on `device` (unless `device_map` spread it), in eval mode,
    without gradients, on the fastest CPU kernel for each layer shape and row count this machine
    measured (nets/kernel_choice.py), and attending over grouped KV heads
    without copying them (nets/grouped_attention.py)."""
    if not device_map:
        model.to(device)
    model.eval()
    model.requires_grad_(False)
    mark_target(model)       # never put on int8, even where it drafts for itself
    use_few_row_linear(model)
    choose_kernels(model)    # measured once per machine and cached
    use_grouped_attention(model)
    return model


def _load_message(spec: str, exc: Exception) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return (f"could not load model {spec!r}: {first[:300]} "
            f"(use '{bundled.BUNDLED_ID}' for the bundled offline model, a local folder, or a "
            "Hugging Face id with network access)")


def last_logits_only(model) -> dict:
    """The forward argument that keeps only the last position's logits, where the model's forward takes
    it (transformers' causal LMs: `logits_to_keep`); none where it does not. For forwards that read no
    other row: a prompt's prefill computes the LM head over every token otherwise (a sixth of its time
    for SmolLM2 on the 2-core CPU, 2026-11-28, and 0.2 MB of logits a token)."""
    return {"logits_to_keep": 1} if _takes_logits_to_keep(type(model)) else {}


@functools.cache
def _takes_logits_to_keep(cls) -> bool:
    return "logits_to_keep" in inspect.signature(cls.forward).parameters


@dataclass
class ModelPair:
    """A target, its tokenizer, and (optionally) a drafter; shared read-only between runs."""

    target: object
    tokenizer: object
    target_name: str
    drafter_kind: str = "none"          # a kind of drafters/registry.py, or "none" (AR only)
    draft_model: object = None          # classic: a causal LM; eagle: a FeatureHead; early-exit: an ExitHead
    draft_name: str = ""
    tree_temperature: float = 1.0       # from the draft's card (draft_assets.card_temperature)
    acceptance_by_rank: tuple[float, ...] | None = None   # from the draft's card (draft_assets.card_acceptance)
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    dtype: torch.dtype = torch.float32
    cost_curve: dict | None = None      # this machine's measured costs (engine/cost.py), once measured
    target_spec: str = ""               # the target argument it was loaded from (bundled id, hub id, path)
    # What traces, and so every view and export, call the target and the draft where that is not target_name /
    # draft_name: the app names a server's folders and files publicly (serve/allow_list.py); "" keeps the real
    # names, which load the models and key the caches (a command-line run records its own paths).
    public_target: str = ""
    public_draft: str = ""

    def recorded_names(self) -> tuple[str, str]:
        """(target, draft) as a trace records them: the public names where set, else the real ones."""
        return self.public_target or self.target_name, self.public_draft or self.draft_name

    @property
    def eos_ids(self) -> set[int]:
        eos = self.target.generation_config.eos_token_id
        if eos is None:
            eos = self.tokenizer.eos_token_id
        if eos is None:
            return set()
        return {int(e) for e in (eos if isinstance(eos, (list, tuple)) else [eos])}


def load_target(target: str = bundled.BUNDLED_ID, device: str = "auto", dtype: str = "auto",
                device_map: str | None = None, trust_remote_code: bool = False) -> ModelPair:
    """A target and its tokenizer, with no drafter yet (drafters/registry.py gives it one)."""
    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev, target)
    tok = load_tokenizer(target, trust_remote_code)
    tgt = load_causal_lm(target, dev, dt, device_map, trust_remote_code)
    name = target
    if target in bundled.BUNDLED_ALIASES and not bundled.available():
        name = bundled.STAND_IN_NAME
    return ModelPair(tgt, tok, name, device=input_device(tgt), dtype=dt, target_spec=target)


def check_draft_vocab(draft_model, tokenizer) -> None:
    """BadInput unless a draft LM has a row for every token of the target's vocabulary: the draft reads
    the prompt's and the target's tokens by id, so it must share the target's tokenizer. The bound is the
    tokenizer's base vocabulary: a token added beside it that text never holds (Gemma 3's image
    placeholder) may lie past a text-only draft's rows."""
    rows, need = draft_model.get_input_embeddings().num_embeddings, getattr(tokenizer, "vocab_size", None)
    if isinstance(need, int) and rows < need:
        raise BadInput(f"the draft model has {rows} token ids, the target's tokenizer {need}: a draft must use "
                       "the target's tokenizer (the same vocabulary, or a larger one with the same ids).")


def learned_position_limit(model) -> int | None:
    """How many positions a model with learned absolute position embeddings (GPT-2, OPT) can read at
    all: one past them has no row. None for rotary models, which read any position (past their
    training length, less well)."""
    cfg = getattr(model, "config", None)
    if cfg is None or any(getattr(cfg, k, None) is not None for k in ("rope_parameters", "rope_scaling", "rotary_dim")):
        return None
    return getattr(cfg, "max_position_embeddings", None)


def draft_position_limit(pair) -> int | None:
    """The positions a pair's draft LM can read at all (`learned_position_limit`): a classic draft reads
    every position the target does; None for any other drafter, whose draft has no positions of its own."""
    return learned_position_limit(pair.draft_model) if pair.drafter_kind == "classic" else None


def load_classic_draft(draft: str, target, device, dtype, trust_remote_code=False):
    model = load_bundled_classic(draft, target)
    if model is None:
        model = load_causal_lm(draft, device, dtype, None, trust_remote_code)
    model = model.to(input_device(target))
    use_few_row_linear(model, draft=True)
    apply_choice(model, choice_of(target) or {})   # the target's kernel choice, shape by shape
    use_grouped_attention(model)
    return model
