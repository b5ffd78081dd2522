"""The decoding loop: draft a tree, verify it in one target forward, commit, record the step.

`stream_run` yields the run's trace after every step (the app streams it); `run` returns the
finished trace. The autoregressive baseline ("ar") is the same loop with an empty tree, so all
methods share loading, verification, stopping rules and timing.
"""

from __future__ import annotations

import time
from dataclasses import replace

import torch

from opttree.config import AUTO_MAX_NODES, DecodeConfig
from opttree.decoding import cost
from opttree.decoding.kv_cache import new_cache
from opttree.decoding.prompts import encode_prompt
from opttree.decoding.sampling import TokenPicker, theory_distribution_note
from opttree.decoding.verify import accept, drafter_features, keep_accepted, target_side, verify_tree
from opttree.drafters.context import DraftContext
from opttree.drafters.factory import make_drafter
from opttree.drafters.tree_temperature import for_decoding
from opttree.errors import BadInput
from opttree.trace import ROWS_PER_RUN, ROWS_PER_STEP, TOPK, VERSION, StepData, step_record, summarize
from opttree.trees import length_control
from opttree.trees.draft_tree import ROOT, DraftTree
from opttree.trees.methods import build_tree

DRAFT_ROWS_KEPT = 4 * ROWS_PER_STEP   # full draft distributions held per step for the trace's rows
__all__ = ["Cancelled", "make_drafter", "new_trace", "run", "stream_run"]


class Cancelled(Exception):
    """Raised inside a run when its cancel check says stop; the partial trace stays valid."""


class DraftRows:
    """The draft's full distribution at the most likely nodes it expanded this step, for the trace's
    top-k rows: at most `keep` rows (the root first, then by p̂), copied out of each layer's output so
    the rest of that output can be freed."""

    def __init__(self, keep: int = DRAFT_ROWS_KEPT):
        self.keep = keep
        self.rows: dict[int, tuple[float, torch.Tensor]] = {}   # grown-tree node -> (p̂, distribution)

    def note(self, grown: DraftTree, nodes: list[int], probs: torch.Tensor) -> None:
        scored = [(grown.p_hat_of(node), node, j) for j, node in enumerate(nodes)]
        kept = sorted([(score, node, None) for node, (score, _) in self.rows.items()] + scored,
                      key=lambda c: -c[0])[: self.keep]
        self.rows = {node: self.rows[node] if j is None else (score, probs[j].clone())
                     for score, node, j in kept}

    def for_tree(self, tree: DraftTree) -> dict[int, torch.Tensor]:
        """The held rows keyed by the final tree's node ids (the root stays -1; a node the draft never
        grew, such as one retrieval fusion added, has origin -1 and no row)."""
        out = {ROOT: self.rows[ROOT][1]} if ROOT in self.rows else {}
        for new, old in enumerate(tree.origin):
            if old != ROOT and old in self.rows:
                out[new] = self.rows[old][1]
        return out


class TokenTexts:
    """Per-run cache of single-token texts (decoding 500 nodes a step adds up)."""

    def __init__(self, tokenizer):
        self.tokenizer, self.cache = tokenizer, {}

    def __call__(self, token: int) -> str:
        if token not in self.cache:
            self.cache[token] = self.tokenizer.decode([token])
        return self.cache[token]


def new_trace(pair, cfg: DecodeConfig, prompt: str, prompt_ids: list[int], record_target: bool = True,
              curve: dict | None = None) -> dict:
    meta = {"target": pair.target_name, "draft": pair.draft_name if cfg.method != "ar" else "",
            "drafter": pair.drafter_kind if cfg.method != "ar" else "none",
            **cfg.to_dict(), "device": str(pair.device), "dtype": str(pair.dtype).replace("torch.", ""),
            # the value the drafter used (the setting's 0 resolved to the draft's fitted one)
            "tree_temperature": for_decoding(pair, cfg) if cfg.method != "ar" else 1.0}
    if cfg.method != "ar" and record_target:   # what the steps' p_target / topk_rows p is (trace.py)
        meta["target_distribution"] = theory_distribution_note(cfg.temperature, cfg.top_k, cfg.top_p)
    if cfg.auto_nodes and cfg.method != "ar":
        meta["auto_max_nodes"] = AUTO_MAX_NODES
    if curve is not None:
        meta["cost"] = cost.compact(curve)   # what a forward costs here: the auto budget's input
    return {"version": VERSION, "meta": meta, "prompt": prompt, "prompt_ids": prompt_ids,
            "output_ids": [], "output_text": "", "steps": [], "summary": summarize([], 0, 0.0)}


def stream_run(pair, prompt: str, cfg: DecodeConfig, cancel=None, chat: bool = True,
               prompt_ids: list[int] | None = None, record_target: bool = True,
               context: DraftContext | None = None):
    """Decode with `cfg`, yielding the (same, growing) trace dict after each step.

    `cancel()` is polled between steps; when it returns True the run raises `Cancelled`.
    `record_target=False` leaves out the steps' target side (`p_target`, `topk_rows`): speed
    benchmarks skip that work (a few ms a step on a CPU), which AR runs never do. `context` carries
    what the drafter gets besides the models (a session's recycling table, a corpus).
    """
    if prompt_ids is None:
        prompt_ids = encode_prompt(pair.tokenizer, prompt, chat=chat)
    if not prompt_ids:
        raise BadInput("the prompt encodes to no tokens: the first step needs one to continue from.")
    limit = getattr(pair.target.config, "max_position_embeddings", None)
    if limit and len(prompt_ids) + cfg.max_new_tokens + cfg.max_depth + 1 > limit:
        raise BadInput(f"prompt ({len(prompt_ids)} tokens) + max new tokens exceeds the model's "
                       f"context of {limit} tokens.")
    curve = cost.load_or_measure(pair)   # measured once per machine and pair (seconds), then cached
    trace = new_trace(pair, cfg, prompt, prompt_ids, record_target, curve)
    text_of = TokenTexts(pair.tokenizer)
    start = time.perf_counter()
    for step in _decode(pair, prompt_ids, cfg, cancel, record_target, cost.step_cost(curve), context):
        trace["output_ids"].extend(step.committed)
        trace["steps"].append(step_record(len(trace["steps"]), step, text_of, pair.tokenizer.decode))
        trace["output_text"] = pair.tokenizer.decode(trace["output_ids"], skip_special_tokens=True)
        trace["summary"] = summarize(trace["steps"], len(trace["output_ids"]), time.perf_counter() - start)
        yield trace


def run(pair, prompt: str, cfg: DecodeConfig, cancel=None, chat: bool = True,
        prompt_ids: list[int] | None = None, record_target: bool = True,
        context: DraftContext | None = None) -> dict:
    trace = None
    for trace in stream_run(pair, prompt, cfg, cancel, chat, prompt_ids, record_target, context):  # noqa: B007
        pass
    return trace


def _check(cancel) -> None:
    if cancel is not None and cancel():
        raise Cancelled("run cancelled")


def capped_config(cfg: DecodeConfig, left: int) -> DecodeConfig | None:
    """The settings the builder gets when only `left` tokens may still be committed.

    A step commits at most the accepted draft tokens plus the target's bonus token, so drafting
    deeper than `left - 1` cannot add a committed token (the bonus takes the last place). None when
    no draft token can be committed (left = 1): the target picks that token alone. Otherwise `cfg`
    with max_depth capped at `left - 1`.
    """
    cap = left - 1
    if cap < 1:
        return None
    return cfg if cap >= cfg.max_depth else replace(cfg, max_depth=cap)


@torch.inference_mode()
def _decode(pair, prompt_ids: list[int], cfg: DecodeConfig, cancel, record_target: bool = True, step_cost=None,
            context: DraftContext | None = None):
    target, device = pair.target, pair.device
    drafter = make_drafter(pair, cfg, context)
    lengths = length_control.controller_for(cfg, pair)   # None: the builder's own δ rule decides the depth
    # Hidden states the forwards return: the drafter's layers (feature head: the last, fused head: a
    # low, a middle and the last; early exit: N) and, for a length controller that reads it, the last.
    feat_layers = drafter.feature_layers if drafter else ()
    state_layer = -1 if lengths and lengths.needs_features else None
    layers = tuple(dict.fromkeys((*feat_layers, *(() if state_layer is None else (state_layer,)))))
    cache = new_cache(target)
    if drafter:
        drafter.attach(cache)   # an early-exit drafter runs the target's first layers on this cache
    committed = list(prompt_ids)
    # The target's features of the committed tokens the drafter has not read yet (it keeps the
    # ones it has read in its own cache): only new rows are kept, never the whole history.
    feats = None
    last_state = None   # the target's state at the token before the next root, for a length controller
    _check(cancel)   # a run can be stopped before its prefill too (time limit, Stop)
    # The last prompt token is not prefilled: it is the first step's root, verified with the tree.
    if len(committed) > 1:
        out = target(input_ids=torch.tensor([committed[:-1]], device=device), past_key_values=cache,
                     use_cache=True, output_hidden_states=bool(layers))
        feats = drafter_features({layer: out.hidden_states[layer][0] for layer in layers}, feat_layers)
        last_state = out.hidden_states[-1][0][-1] if state_layer is not None else None
        if drafter:
            drafter.observe(committed[:-1], out.logits[0])  # the prompt's rows (Token Recycling's first table)
    picker = TokenPicker(cfg.temperature, cfg.top_k, cfg.top_p, cfg.seed)
    eos, produced = pair.eos_ids, 0
    rows_left = ROWS_PER_RUN if record_target else 0
    while produced < cfg.max_new_tokens:
        _check(cancel)
        t0 = time.perf_counter()
        draft_s = record_s = 0.0   # record_s: keeping draft rows for the trace, not part of any phase
        draft_rows = DraftRows()
        step_cfg = capped_config(cfg, cfg.max_new_tokens - produced) if drafter else cfg
        # The tokens-left cap, read before a length controller lowers the depth for its own reasons.
        token_cap = step_cfg.max_depth if step_cfg is not None and step_cfg.max_depth < cfg.max_depth else None
        decision = lengths.choose(last_state) if lengths and step_cfg is not None else None
        if decision:
            step_cfg = length_control.apply(step_cfg, decision)
        if step_cfg is not None and drafter:
            drafter.begin_step(committed, feats)
            feats = None   # read: the drafter keeps what it needs
            draft_s = time.perf_counter() - t0

        def expand(tree, nodes, k, draft_rows=draft_rows, record=rows_left > 0):
            nonlocal draft_s, record_s
            t = time.perf_counter()
            if not record:          # the drafter's own fast path: one top-k per layer
                out = drafter.top_children(tree, nodes, k)
                draft_s += time.perf_counter() - t
                return out
            # Recording the trace's draft rows needs each node's whole distribution.
            probs = drafter.expand(tree, nodes)
            top = torch.topk(probs, min(k, probs.shape[-1]), dim=-1)
            draft_s += time.perf_counter() - t
            t = time.perf_counter()
            draft_rows.note(tree, nodes, probs)
            record_s += time.perf_counter() - t
            return top.indices.cpu(), top.values.cpu()

        if step_cfg is None:
            tree, info = DraftTree(), {"ea_by_depth": [0.0],
                                       "stop_reason": "one token left to generate: the target picks it, no draft"}
        else:
            tree, info = build_tree(expand, step_cfg, step_cost)
            if drafter:
                tree, info = drafter.finish_tree(tree, info, step_cfg)   # node sources; retrieval fusion when on
            if decision:
                info["length"] = decision
            if token_cap is not None:
                info["stop_reason"] = (f"{info.get('stop_reason', '')}; depth capped at {token_cap}: "
                                       f"{cfg.max_new_tokens - produced} tokens left to generate").lstrip("; ")
        t1 = time.perf_counter()
        prefix = cache.get_seq_length()
        logits, states = verify_tree(target, cache, committed[-1], tree, device, layers)
        accepted, bonus, rejected = accept(tree, logits, picker)
        t_obs = time.perf_counter()
        if drafter:
            drafter.observe([committed[-1], *tree.tokens], logits)  # every scored row, rejected ones too
        observe_s = time.perf_counter() - t_obs   # the drafter's work (Token Recycling's table), not verifying
        keep_accepted(cache, prefix, accepted)
        rows = [0] + [a + 1 for a in accepted]     # the root's and the accepted nodes' rows
        if feat_layers:
            got = drafter_features(states, feat_layers)
            got = got.index_select(0, torch.tensor(rows, device=got.device))
            feats = got if feats is None else torch.cat([feats, got])
        if state_layer is not None:
            last_state = states[state_layer][rows[-1]]
        if drafter and step_cfg is not None:
            drafter.end_step([tree.origin[a] for a in accepted])
        if decision:
            lengths.observe(tree.max_depth, len(accepted))
        t2 = time.perf_counter()
        p_target = topk_rows = None
        if drafter and record_target:   # after the timed phases: the trace's own cost is not the method's
            p_target, topk_rows = target_side(tree, logits, picker.distribution, draft_rows.for_tree(tree),
                                              accepted, min(ROWS_PER_STEP, rows_left), TOPK)
            rows_left -= len(topk_rows)
        kept = []
        for tok in [tree.tokens[a] for a in accepted] + [bonus]:
            kept.append(tok)
            if tok in eos or produced + len(kept) >= cfg.max_new_tokens:
                break
        committed.extend(kept)
        produced += len(kept)
        yield StepData(tree, info, accepted, bonus, rejected, kept, draft_ms=(draft_s + observe_s) * 1e3,
                       build_ms=(t1 - t0 - draft_s - record_s) * 1e3, verify_ms=(t2 - t1 - observe_s) * 1e3,
                       p_target=p_target, topk_rows=topk_rows)
        if kept[-1] in eos:
            return
