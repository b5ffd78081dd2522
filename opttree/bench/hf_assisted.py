"""The peer baselines: transformers assisted generation (`generate(assistant_model=...)`) and its
prompt lookup (`generate(prompt_lookup_num_tokens=...)`).

transformers 5.x reads the assistant knobs only from the **assistant's** `generation_config`
(`num_assistant_tokens`, `num_assistant_tokens_schedule`, `assistant_confidence_threshold`); passing
them to `generate()` is silently ignored, so `configure_assistant` sets them there.

Default configuration here = the library's own defaults for an assistant (20 tokens max per round,
"constant" schedule, confidence cut-off 0.4 — the draft stops early when its top token's probability
falls below the threshold; the threshold only adapts when scikit-learn is installed). It is chain
drafting, batch 1, greedy at T=0.

τ is counted honestly: a forward hook on the target counts every target forward that `generate`
makes (the first one also consumes the prompt, and yields a token, exactly like the engine's first
verification step), and τ = new tokens / target forwards.

Prompt lookup (`hf-lookup`) needs no assistant: transformers matches the last n tokens (n up to
`max_matching_ngram_size`, its default 2) against the text so far and proposes the next
`prompt_lookup_num_tokens` tokens that followed, as one chain; both are set here (HF_LOOKUP_CONFIG).
"""

from __future__ import annotations

import copy
import time

import torch

from opttree.errors import BadInput

HF_METHOD = "hf-assisted"
HF_LOOKUP = "hf-lookup"
HF_LOOKUP_CONFIG = {"prompt_lookup_num_tokens": 10, "max_matching_ngram_size": 2}
DEFAULT_KNOBS = {"num_assistant_tokens": 20, "num_assistant_tokens_schedule": "constant",
                 "assistant_confidence_threshold": 0.4}


def configure_assistant(assistant, knobs: dict | None = None) -> dict:
    """Set the assistant knobs on the assistant's generation_config; returns the configuration."""
    cfg = {**DEFAULT_KNOBS, **(knobs or {})}
    if cfg["num_assistant_tokens_schedule"] not in ("constant", "heuristic", "heuristic_transient"):
        raise BadInput("hf assistant schedule must be constant, heuristic or heuristic_transient.")
    gc = assistant.generation_config
    for key, value in cfg.items():
        setattr(gc, key, value)
    try:
        import sklearn  # noqa: F401
        adaptive = True
    except ImportError:
        adaptive = False
    return {**cfg, "confidence_threshold_adapts": adaptive}


class ForwardCounter:
    """Counts forward calls of a module while active (a context manager)."""

    def __init__(self, module):
        self.module, self.count, self.handle = module, 0, None

    def _hook(self, *_):
        self.count += 1

    def __enter__(self):
        self.count = 0
        self.handle = self.module.register_forward_hook(self._hook)
        return self

    def __exit__(self, *exc):
        self.handle.remove()
        return False


def run_hf_assisted(pair, assistant, prompt_ids: list[int], max_new_tokens: int, temperature: float = 0.0,
                    top_p: float = 1.0, top_k: int = 0, seed: int = 0) -> dict:
    """One assisted-generation run; returns a summary shaped like the engine trace's."""
    return _run_generate(pair, prompt_ids, max_new_tokens, temperature, top_p, top_k, seed,
                         assistant_model=assistant)


def run_hf_lookup(pair, prompt_ids: list[int], max_new_tokens: int, temperature: float = 0.0,
                  top_p: float = 1.0, top_k: int = 0, seed: int = 0) -> dict:
    """One prompt-lookup run (transformers' own); returns a summary shaped like the engine trace's."""
    return _run_generate(pair, prompt_ids, max_new_tokens, temperature, top_p, top_k, seed, **HF_LOOKUP_CONFIG)


@torch.inference_mode()
def _run_generate(pair, prompt_ids: list[int], max_new_tokens: int, temperature: float, top_p: float, top_k: int,
                  seed: int, assistant_model=None, **config) -> dict:
    target, device = pair.target, pair.device
    eos = sorted(pair.eos_ids)
    gen = copy.deepcopy(target.generation_config)
    sample = temperature > 0
    gen.do_sample = sample
    gen.temperature = temperature if sample else None
    gen.top_p = top_p if sample and top_p < 1.0 else None
    gen.top_k = top_k if sample and top_k > 0 else None
    gen.max_new_tokens = max_new_tokens
    gen.max_length = None
    gen.min_new_tokens = None
    gen.eos_token_id = eos or None
    if gen.pad_token_id is None:
        gen.pad_token_id = eos[0] if eos else 0
    for key, value in config.items():
        setattr(gen, key, value)
    ids = torch.tensor([prompt_ids], device=device)
    if sample:
        torch.manual_seed(seed)
    with ForwardCounter(target) as counter:
        t0 = time.perf_counter()
        out = target.generate(ids, attention_mask=torch.ones_like(ids), assistant_model=assistant_model,
                              generation_config=gen)
        wall = time.perf_counter() - t0
    new = [int(t) for t in out[0, len(prompt_ids):].tolist()]
    forwards = max(counter.count, 1)
    return {"output_ids": new, "new_tokens": len(new), "steps": forwards,
            "tau": round(len(new) / forwards, 4), "wall_s": round(wall, 4),
            "tokens_per_s": round(len(new) / wall, 3) if wall > 0 else 0.0}
