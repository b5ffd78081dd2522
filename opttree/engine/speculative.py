"""The decoding loop: draft a tree, verify it in one target forward, commit, record the step.

`stream_run` yields the run's trace after every step (the app streams it); `run` returns the
finished trace. The autoregressive baseline ("ar") is the same loop with an empty tree, so all
methods share loading, verification, stopping rules and timing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import torch

from opttree.config import AUTO_MAX_NODES, LIMITS, DecodeConfig
from opttree.decoding.prompts import encode_prompt
from opttree.decoding.sampling import TokenPicker, theory_distribution_note
from opttree.decoding.verify import target_side
from opttree.drafters.context import DraftContext
from opttree.drafters.registry import can_draft, make_drafter, resolve_retrieval
from opttree.drafters.tree_temperature import for_decoding
from opttree.engine import cost
from opttree.engine.recording import DraftRows, RecordingExpand, TokenTexts
from opttree.engine.step_timer import StepTimer
from opttree.engine.target_state import TargetState
from opttree.errors import BadInput
from opttree.models.draft_assets import length_predictor_for
from opttree.models.loading import draft_position_limit
from opttree.nets.attention_mask import cache_scaled_limit, rope_switch_limit
from opttree.trace import (
    ROWS_PER_RUN,
    ROWS_PER_STEP,
    TOPK,
    VERSION,
    BuildInfo,
    StepData,
    counted,
    step_record,
    summarize,
)
from opttree.trees import length_control
from opttree.trees.delta_rule import depth_reached
from opttree.trees.draft_tree import DraftTree
from opttree.trees.methods import build_tree
from opttree.trees.sequoia import DEFAULT_ACCEPTANCE
from opttree.trees.static import STATIC_SHAPE

__all__ = ["Cancelled", "new_trace", "run", "run_acceptance", "stream_run", "warm_up"]

# A short run at a fixed budget (no cost curve needed) that drafts, builds, verifies and commits.
WARM_UP, WARM_UP_PROMPT = DecodeConfig(nodes=10, max_depth=4, max_new_tokens=8), 16


class Cancelled(Exception):
    """Raised inside a run when its cancel check says stop; the partial trace stays valid."""


def run_acceptance(pair) -> tuple[tuple[float, ...], str]:
    """The run's positional acceptance vector (what Sequoia's tree is optimal for) and where it came
    from: the draft's card, or trees/sequoia.DEFAULT_ACCEPTANCE when the draft has none."""
    card = getattr(pair, "acceptance_by_rank", None)
    return (tuple(card), "card") if card else (DEFAULT_ACCEPTANCE, "default")


def new_trace(pair, cfg: DecodeConfig, prompt: str, prompt_ids: list[int], record_target: bool = True,
              curve: dict | None = None, paths=None) -> dict:
    target, draft = pair.recorded_names()     # a served pair's public names: no server paths in a trace
    meta = {"target": target, "draft": draft if cfg.method != "ar" else "",
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
    if cfg.method != "ar":   # the draft's acceptance by rank: Sequoia's tree is optimal for it, exports read it
        vector, meta["acceptance_source"] = run_acceptance(pair)
        meta["acceptance_by_rank"] = list(vector)
    if paths is not None and cfg.method != "ar":     # a given static shape replaced the method's tree
        meta["static_paths"] = [list(p) for p in paths]
    return {"version": VERSION, "meta": meta, "prompt": prompt, "prompt_ids": prompt_ids,
            "output_ids": [], "output_text": "", "steps": [], "summary": summarize([], 0, 0.0)}


def check_room(pair, prompt_tokens: int, max_new_tokens: int) -> None:
    """BadInput unless the run fits the target's positions (and a classic draft's learned ones). The target reads
    positions 0 .. prompt + max new tokens - 2: a tree never reaches past the tokens left
    (`capped_config`) and the last bonus token is committed without a forward. Sliding-window and
    chunked layers set no limit: their masks keep them inside their windows at any length
    (`nets/attention_mask.py`). A model that scales queries by its cache's length (Llama 4) keeps the
    largest tree below its next step (`cache_scaled_limit`); a LongRoPE model stays below its switch to
    the long factors (`rope_switch_limit`)."""
    used = prompt_tokens + max_new_tokens - 1
    limits = (("model", getattr(pair.target.config, "max_position_embeddings", None)),
              ("draft model", draft_position_limit(pair)))    # a rotary draft reads past its length
    for name, limit in limits:
        if limit and used > limit:
            raise BadInput(f"prompt ({prompt_tokens} tokens) + max new tokens ({max_new_tokens}) exceeds the "
                           f"{name}'s context of {limit} tokens by {used - limit}.")
    switch = rope_switch_limit(pair.target.config)
    if switch is not None and used > switch:
        raise BadInput(f"prompt ({prompt_tokens} tokens) + max new tokens ({max_new_tokens}) passes position {switch}, "
                       f"where this target's LongRoPE switches to its long factors and encodes the whole sequence "
                       f"again, which a kept cache cannot follow: at most {switch} positions.")
    scaled = cache_scaled_limit(pair.target.config)
    largest = LIMITS["nodes"][1] + 1          # a tree and its root, at the largest node budget
    if scaled is not None and used + largest > scaled:
        raise BadInput(f"prompt ({prompt_tokens} tokens) + max new tokens ({max_new_tokens}) is too long for this "
                       f"target: its NoPE layers scale queries by the cache's length, which a tree forward keeps "
                       f"exact while the run uses at most {scaled - largest} positions (the largest tree, "
                       f"{largest} slots, stays below {scaled + 1}).")


def stream_run(pair, prompt: str, cfg: DecodeConfig, cancel=None, chat: bool = True,
               prompt_ids: list[int] | None = None, record_target: bool = True,
               context: DraftContext | None = None, paths=None):
    """Decode with `cfg`, yielding the (same, growing) trace dict after each step.

    `cancel()` is polled between steps; when it returns True the run raises `Cancelled`.
    `record_target=False` leaves out the steps' target side (`p_target`, `topk_rows`): speed
    benchmarks skip that work (a few ms a step on a CPU), which AR runs never do. `context` carries
    what the drafter gets besides the models (a session's recycling table, a corpus). `paths` (rank
    paths in level order) replaces the method's tree by that static shape (trees/methods.py).
    """
    if prompt_ids is None:
        prompt_ids = encode_prompt(pair.tokenizer, prompt, chat=chat)
    if not prompt_ids:
        raise BadInput("the prompt encodes to no tokens: the first step needs one to continue from.")
    check_room(pair, len(prompt_ids), cfg.max_new_tokens)
    asked = cfg.retrieval
    cfg = resolve_retrieval(cfg, pair)   # "auto": on wherever a draft model drafts
    curve = cost.load_or_measure(pair)   # measured once per machine and pair (seconds), then cached
    trace = new_trace(pair, cfg, prompt, prompt_ids, record_target, curve, paths)
    if asked != cfg.retrieval:
        trace["meta"]["retrieval_asked"] = asked    # the setting; meta["retrieval"] is what the run did
    if cfg.tree_temperature != trace["meta"]["tree_temperature"]:
        trace["meta"]["tree_temperature_asked"] = cfg.tree_temperature   # e.g. 0: the draft's fitted value
    text_of = TokenTexts(pair.tokenizer)
    start, prefill_ms = time.perf_counter(), None
    for step in decode(pair, prompt_ids, cfg, cancel, record_target, cost.step_cost(curve), context, paths):
        prefill_ms = step.prefill_ms if step.prefill_ms is not None else prefill_ms
        # Everything that can fail first: a run that fails here keeps the trace it last streamed, whole.
        record = step_record(len(trace["steps"]), step, text_of, pair.tokenizer.decode)
        ids = trace["output_ids"] + step.committed
        text = pair.tokenizer.decode(ids, skip_special_tokens=True)
        trace["output_ids"].extend(step.committed)
        trace["steps"].append(record)
        trace["output_text"] = text
        trace["summary"] = summarize(trace["steps"], len(ids), time.perf_counter() - start, prefill_ms)
        yield trace


def run(pair, prompt: str, cfg: DecodeConfig, cancel=None, chat: bool = True,
        prompt_ids: list[int] | None = None, record_target: bool = True,
        context: DraftContext | None = None, paths=None) -> dict:
    trace = None
    for trace in stream_run(pair, prompt, cfg, cancel, chat, prompt_ids, record_target, context,  # noqa: B007
                            paths):
        pass
    return trace


def warm_up(pair) -> None:
    """One short untimed run of a freshly loaded pair. A process's first forwards pay one-time costs
    (kernel set-up, allocations, lazy initialisation) that would otherwise land in the first run's
    prefill and tokens/s and read as the method's cost (docs/architecture.md, "Timing")."""
    ids = list(range(1, 1 + WARM_UP_PROMPT))     # any tokenizer's ids: no template, no text to encode
    cfg = WARM_UP if can_draft(pair) else replace(WARM_UP, method="ar")   # a pair loaded for AR alone
    run(pair, "", cfg, chat=False, prompt_ids=ids, record_target=False)


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


@dataclass
class StepPlan:
    cfg: DecodeConfig | None          # the builder's settings; None: no draft this step (one token left)
    decision: dict | None = None      # the length controller's choice of depth
    token_cap: int | None = None      # the depth the tokens left allow, where it is below max depth
    full_depth: int | None = None     # then the run's max depth, which a static shape is built for


def plan_step(cfg: DecodeConfig, left: int, drafter, lengths, last_state) -> StepPlan:
    """The step's settings: capped by the tokens left, then by the length controller's depth."""
    step_cfg = capped_config(cfg, left) if drafter else cfg
    if step_cfg is None:
        return StepPlan(None)
    # The tokens-left cap, read before a length controller lowers the depth for its own reasons.
    token_cap = step_cfg.max_depth if step_cfg.max_depth < cfg.max_depth else None
    decision = lengths.choose(last_state) if lengths else None
    if decision:
        step_cfg = length_control.apply(step_cfg, decision)
    return StepPlan(step_cfg, decision, token_cap, cfg.max_depth if token_cap is not None else None)


def grow_tree(plan: StepPlan, drafter, state: TargetState, expand, step_cost, timer: StepTimer, left: int,
              shape: dict | None = None):
    """The tree to verify: the method's builder over the drafter's proposals, finished by the drafter.
    `shape` holds the builder's plain-number inputs besides the settings (`acceptance`, `paths`)."""
    if plan.cfg is None:
        return DraftTree(), BuildInfo(stop_reason="one token left to generate: the target picks it, no draft")
    if drafter:
        with timer.phase("draft"):
            state.begin_step()
    tree, info = build_tree(expand, plan.cfg, step_cost, shape_depth=plan.full_depth, **(shape or {}))
    depth = plan.decision["depth"] if plan.decision else None
    if depth and (info.stop_reason == depth_reached(depth)
                  or info.stop_reason == STATIC_SHAPE and max(tree.depth, default=0) == depth):
        # the builder's max depth was the controller's choice this step, not the setting (a static shape as deep
        # as that choice may or may not have been cut by it: the reason says only what holds either way)
        shape = "static shape, drafted to" if info.stop_reason == STATIC_SHAPE else "reached"
        info.stop_reason = (f"{shape} the {counted(depth, 'layer')} "
                            f"{length_control.controller_name(plan.decision)} allowed")
    if drafter:     # after the builder's own reason: retrieval fusion appends its note to it
        tree, info = drafter.finish_tree(tree, info, plan.cfg, step_cost)   # node sources; fusion when on
    info.length = plan.decision
    if plan.token_cap is not None:
        info.note(f"depth capped at {plan.token_cap}: {left} tokens left to generate")
    return tree, info


def committed_tokens(tree: DraftTree, accepted: list[int], bonus: int, eos: set[int], room: int) -> list[int]:
    """The accepted path's tokens and the bonus token, cut after EOS or at `room` tokens."""
    kept = []
    for tok in [tree.tokens[a] for a in accepted] + [bonus]:
        kept.append(tok)
        if tok in eos or len(kept) >= room:
            break
    return kept


@torch.inference_mode()
def decode(pair, prompt_ids: list[int], cfg: DecodeConfig, cancel=None, record_target: bool = True,
           step_cost=None, context: DraftContext | None = None, paths=None):
    """Yield one StepData per step: draft a tree, verify it in one target forward, commit."""
    cfg = resolve_retrieval(cfg, pair)
    drafter = make_drafter(pair, cfg, context)
    shape = {"acceptance": run_acceptance(pair)[0], "paths": paths}
    lengths = length_control.controller_for(cfg, lambda: length_predictor_for(pair))  # None: the δ rule
    state = TargetState(pair, drafter, lengths, prompt_ids)
    _check(cancel)   # a run can be stopped before its prefill too (time limit, Stop)
    t0 = time.perf_counter()
    state.prefill()
    cost.sync(pair.device)
    # handed to the trace with the first step; None when the prompt is one token (nothing to prefill)
    prefill_ms = (time.perf_counter() - t0) * 1e3 if len(prompt_ids) > 1 else None
    picker = TokenPicker(cfg.temperature, cfg.top_k, cfg.top_p, cfg.seed)
    rows_left, produced = (ROWS_PER_RUN if record_target else 0), 0
    while produced < cfg.max_new_tokens:
        _check(cancel)
        timer, left = StepTimer(), cfg.max_new_tokens - produced
        rows = DraftRows() if drafter and rows_left > 0 else None
        with timer.phase("build"):
            plan = plan_step(cfg, left, drafter, lengths, state.last_state)
            here = step_cost.at_prefix(len(state.committed)) if step_cost else None   # cost grows with the prefix
            tree, info = grow_tree(plan, drafter, state, RecordingExpand(drafter, timer, rows), here,
                                   timer, left, shape)
        with timer.phase("verify"):
            accepted, bonus, rejected, logits = state.verify(tree, picker, timer, drafted=plan.cfg is not None)
            if plan.decision:
                lengths.observe(tree.max_depth, len(accepted))
        p_target = topk_rows = None
        if drafter and record_target:   # after the timed phases: the trace's own cost is not the method's
            p_target, topk_rows = target_side(tree, logits, picker.distribution, rows.for_tree(tree) if rows else {},
                                              accepted, min(ROWS_PER_STEP, rows_left), TOPK)
            rows_left -= len(topk_rows)
        kept = committed_tokens(tree, accepted, bonus, pair.eos_ids, left)
        state.committed.extend(kept)
        produced += len(kept)
        yield StepData(tree, info, accepted, bonus, rejected, kept, draft_ms=timer.ms("draft"),
                       build_ms=timer.ms("build"), verify_ms=timer.ms("verify"),
                       p_target=p_target, topk_rows=topk_rows, prefill_ms=prefill_ms)
        prefill_ms = None
        if kept[-1] in pair.eos_ids:
            return
