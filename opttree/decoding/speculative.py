"""The decoding loop: draft a tree, verify it in one target forward, commit, record the step.

`stream_run` yields the run's trace after every step (the app streams it); `run` returns the
finished trace. The autoregressive baseline ("ar") is the same loop with an empty tree, so all
methods share loading, verification, stopping rules and timing.
"""

from __future__ import annotations

import time

import torch

from opttree.config import AUTO_MAX_NODES, DecodeConfig
from opttree.decoding import cost
from opttree.decoding.kv_cache import new_cache
from opttree.decoding.prompts import encode_prompt
from opttree.decoding.sampling import TokenPicker
from opttree.decoding.verify import accept, keep_accepted, verify_tree
from opttree.drafters.factory import make_drafter
from opttree.drafters.tree_temperature import for_decoding
from opttree.errors import BadInput
from opttree.trace import VERSION, StepData, step_record, summarize
from opttree.trees.methods import build_tree

__all__ = ["Cancelled", "make_drafter", "new_trace", "run", "stream_run"]


class Cancelled(Exception):
    """Raised inside a run when its cancel check says stop; the partial trace stays valid."""


class TokenTexts:
    """Per-run cache of single-token texts (decoding 500 nodes a step adds up)."""

    def __init__(self, tokenizer):
        self.tokenizer, self.cache = tokenizer, {}

    def __call__(self, token: int) -> str:
        if token not in self.cache:
            self.cache[token] = self.tokenizer.decode([token])
        return self.cache[token]


def new_trace(pair, cfg: DecodeConfig, prompt: str, prompt_ids: list[int], curve: dict | None = None) -> dict:
    meta = {"target": pair.target_name, "draft": pair.draft_name if cfg.method != "ar" else "",
            "drafter": pair.drafter_kind if cfg.method != "ar" else "none",
            **cfg.to_dict(), "device": str(pair.device), "dtype": str(pair.dtype).replace("torch.", ""),
            # the value the drafter used (the setting's 0 resolved to the draft's fitted one)
            "tree_temperature": for_decoding(pair, cfg) if cfg.method != "ar" else 1.0}
    if cfg.auto_nodes and cfg.method != "ar":
        meta["auto_max_nodes"] = AUTO_MAX_NODES
    if curve is not None:
        meta["cost"] = cost.compact(curve)   # what a forward costs here: the auto budget's input
    return {"version": VERSION, "meta": meta, "prompt": prompt, "prompt_ids": prompt_ids,
            "output_ids": [], "output_text": "", "steps": [], "summary": summarize([], 0, 0.0)}


def stream_run(pair, prompt: str, cfg: DecodeConfig, cancel=None, chat: bool = True,
               prompt_ids: list[int] | None = None):
    """Decode with `cfg`, yielding the (same, growing) trace dict after each step.

    `cancel()` is polled between steps; when it returns True the run raises `Cancelled`.
    """
    if prompt_ids is None:
        prompt_ids = encode_prompt(pair.tokenizer, prompt, chat=chat)
    limit = getattr(pair.target.config, "max_position_embeddings", None)
    if limit and len(prompt_ids) + cfg.max_new_tokens + cfg.max_depth + 1 > limit:
        raise BadInput(f"prompt ({len(prompt_ids)} tokens) + max new tokens exceeds the model's "
                       f"context of {limit} tokens.")
    curve = cost.load_or_measure(pair)   # measured once per machine and pair (seconds), then cached
    trace = new_trace(pair, cfg, prompt, prompt_ids, curve)
    text_of = TokenTexts(pair.tokenizer)
    start = time.perf_counter()
    for step in _decode(pair, prompt_ids, cfg, cancel, cost.step_cost(curve)):
        trace["output_ids"].extend(step.committed)
        trace["steps"].append(step_record(len(trace["steps"]), step, text_of, pair.tokenizer.decode))
        trace["output_text"] = pair.tokenizer.decode(trace["output_ids"], skip_special_tokens=True)
        trace["summary"] = summarize(trace["steps"], len(trace["output_ids"]), time.perf_counter() - start)
        yield trace


def run(pair, prompt: str, cfg: DecodeConfig, cancel=None, chat: bool = True,
        prompt_ids: list[int] | None = None) -> dict:
    trace = None
    for trace in stream_run(pair, prompt, cfg, cancel, chat, prompt_ids):  # noqa: B007 (keep the last)
        pass
    return trace


@torch.inference_mode()
def _decode(pair, prompt_ids: list[int], cfg: DecodeConfig, cancel, step_cost=None):
    target, device = pair.target, pair.device
    drafter = make_drafter(pair, cfg)
    want_feats = bool(drafter and drafter.needs_features)
    cache = new_cache(target)
    committed = list(prompt_ids)
    feats = None
    # The last prompt token is not prefilled: it is the first step's root, verified with the tree.
    if len(committed) > 1:
        out = target(input_ids=torch.tensor([committed[:-1]], device=device), past_key_values=cache,
                     use_cache=True, output_hidden_states=want_feats)
        feats = out.hidden_states[-1][0] if want_feats else None
    picker = TokenPicker(cfg.temperature, cfg.top_k, cfg.top_p, cfg.seed)
    eos, produced = pair.eos_ids, 0
    while produced < cfg.max_new_tokens:
        if cancel is not None and cancel():
            raise Cancelled("run cancelled")
        t0 = time.perf_counter()
        draft_s = 0.0
        if drafter:
            drafter.begin_step(committed, feats)
            draft_s = time.perf_counter() - t0

        def expand(tree, nodes, k):
            nonlocal draft_s
            t = time.perf_counter()
            out = drafter.top_children(tree, nodes, k)
            draft_s += time.perf_counter() - t
            return out

        tree, info = build_tree(expand, cfg, step_cost)
        t1 = time.perf_counter()
        prefix = cache.get_seq_length()
        logits, new_feats = verify_tree(target, cache, committed[-1], tree, device, want_feats)
        accepted, bonus, rejected = accept(tree, logits, picker)
        keep_accepted(cache, prefix, accepted)
        if want_feats:
            rows = torch.tensor([0] + [a + 1 for a in accepted], device=new_feats.device)
            got = new_feats.index_select(0, rows)
            feats = got if feats is None else torch.cat([feats, got])
        if drafter:
            drafter.end_step([tree.origin[a] for a in accepted])
        t2 = time.perf_counter()
        kept = []
        for tok in [tree.tokens[a] for a in accepted] + [bonus]:
            kept.append(tok)
            if tok in eos or produced + len(kept) >= cfg.max_new_tokens:
                break
        committed.extend(kept)
        produced += len(kept)
        yield StepData(tree, info, accepted, bonus, rejected, kept,
                       draft_ms=draft_s * 1e3, build_ms=(t1 - t0 - draft_s) * 1e3, verify_ms=(t2 - t1) * 1e3)
        if kept[-1] in eos:
            return
