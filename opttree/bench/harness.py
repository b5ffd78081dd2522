"""The benchmark runner: every method on every prompt, in one process, interleaved per prompt.

Machine noise (other jobs on a shared CPU) then hits all methods alike; the order of methods is
rotated from prompt to prompt so no method always follows the same neighbour. A short warm-up run
of every method comes first and is not recorded. `ar` is always run: it is the speed and
exact-match reference measured in the same run.

A method is a tree method (`opt-tree`, `binary`, ...) run with the pair's drafter, optionally at its own
budget (`opt-tree@10`), with retrieval fusion on every prompt (`opt-tree+retrieval`; a plain method
follows the run's `--retrieval`, so `auto` benches the app's default), or with another drafter on the
same target: one that needs no draft model (`recycling:opt-tree`, `lookup:chain`) or another bundled
draft (`early-exit:opt-tree~thompson`, `eagle:chain`); `recycling` and `lookup` alone mean
`recycling:tr-static` and `lookup:opt-tree`. `hf-assisted` and `hf-lookup` are transformers'
assisted generation and prompt lookup. Token Recycling's table is fresh for every run unless the
settings say `recycling_scope: session`: then one table serves the whole benchmark, warm-up included.

Result JSON (the documented fields):
  meta        machine (CPU, threads, versions, date, load), models, decode settings, hf config
  meta        … plus `cost`: the machine's cost curve (compact form, engine/cost.py) the auto budget used,
              and `other_drafters`: {drafter: {draft, cost}} for the drafters methods name before ':'
  methods     {method: aggregate}, aggregate = {prompts, new_tokens, steps, tau, tau_mean,
              tokens_per_s, speedup, speedup_median, exact_match, mean_draft_ms, mean_build_ms,
              mean_verify_ms, draft_share, mean_nodes, mean_depth, mean_expected_accept,
              mean_accepted_draft_tokens, draft_acceptance_rate, acceptance_by_depth,
              drafted_by_depth, mean_prefill_ms, ea_a_pearson_r, ea_a_steps} (acceptance names:
              trace.acceptance; mean_prefill_ms: the prompts' prefill a run, timed within wall_s;
              exact_match: the share of prompts whose output equals AR's, sampled runs too, since every
              run draws with the same seed; None for transformers' rows when sampled, which draw otherwise)
  by_category {category: {method: aggregate}}
  meta        … and the timing's bookkeeping: `warmup_order` (the methods run before any timing, in order)
              and `run_order` ([prompt id, [methods in the order they ran on it]] per prompt)
  runs        one row per (prompt, method): the trace summary plus wall_s, exact, output_ids
  ea_a        {method: [[E(A), A], ...]} per step that drafted a tree (tree methods; calibration.ea_a_pairs)
  traces      {prompt id: {method: trace}}, only for the prompts `keep_traces` names (the app's tree panels)

`iter_bench` runs the same benchmark one run at a time: it yields a progress message before each run
(the app's Compare tab shows them and can stop between runs or steps, `cancel`) and the result last;
`run_bench` is it without the messages.
"""

from __future__ import annotations

import copy
import statistics
import sys
import time
from dataclasses import dataclass, replace

from opttree import calibration
from opttree.bench.env import machine_info, note_load, progress_bar
from opttree.bench.hf_assisted import (
    HF_LOOKUP,
    HF_LOOKUP_CONFIG,
    HF_METHOD,
    configure_assistant,
    run_hf_assisted,
    run_hf_lookup,
)
from opttree.config import AUTO_NODES, LENGTH_CONTROLS, METHODS, MODEL_DRAFTERS, TRAINING_FREE, DecodeConfig
from opttree.decoding.prompts import encode_prompt
from opttree.drafters.context import DraftContext
from opttree.drafters.recycling import RecyclingTable
from opttree.drafters.registry import with_drafter
from opttree.engine import cost
from opttree.engine.speculative import run
from opttree.errors import BadInput
from opttree.nets.few_row_linear import kernel_of
from opttree.trace import percent

HF_METHODS = (HF_METHOD, HF_LOOKUP)
BENCH_METHODS = ("ar", HF_METHOD, HF_LOOKUP, "chain", "binary", "eagle-static", "eagle-dynamic", "opt-tree",
                 "opt-tree+retrieval", "recycling", "lookup")
SHORTCUTS = {"recycling": "recycling:tr-static", "lookup": "lookup:opt-tree"}
SUMMARY_KEYS = ("new_tokens", "steps", "tau", "tokens_per_s", "mean_draft_ms", "mean_build_ms",
                "mean_verify_ms", "mean_nodes", "mean_depth", "mean_expected_accept", "mean_accepted_draft_tokens",
                "acceptance_by_depth", "drafted_by_depth", "prefill_ms")
WARMUP_TOKENS = 16           # a warm-up run's length (short: it is not recorded)
clock = time.perf_counter    # what each run is timed with (a test hands it a fake clock)


def parse_methods(text) -> list[str]:
    items = [m.strip() for m in (text.split(",") if isinstance(text, str) else text) if m.strip()]
    if not items:
        raise BadInput("--methods is empty: name at least one of " + ", ".join(BENCH_METHODS) + ".")
    bad = [m for m in items if m not in HF_METHODS and parse_spec(m).method not in METHODS]
    if bad:
        raise BadInput(f"unknown method(s) {', '.join(bad)}: choose from {', '.join(BENCH_METHODS)} "
                       "(a tree method may carry its own budget, e.g. opt-tree@10, retrieval fusion, e.g. "
                       "opt-tree+retrieval, a length control, e.g. opt-tree@25~thompson, or a drafter without a "
                       "draft model, e.g. recycling:opt-tree).")
    out = list(dict.fromkeys(items))
    if "ar" not in out:
        out.insert(0, "ar")  # the reference for speedup and exact match
    return out


def split_method(name: str) -> tuple[str, int | None]:
    """'opt-tree@10' -> ('opt-tree', 10): a method run at its own node budget; 'opt-tree@auto' -> ('opt-tree', 0),
    the auto budget; 'binary' -> ('binary', None)."""
    if "@" not in name:
        return name, None
    base, _, n = name.partition("@")
    try:
        nodes = AUTO_NODES if n == "auto" else int(n)
    except ValueError:
        raise BadInput(f"method {name!r}: the budget after '@' must be a whole number or 'auto'.") from None
    if base in ("ar", *HF_METHODS):
        raise BadInput(f"method {name!r}: only tree methods take a budget.")
    DecodeConfig(method=base if base in METHODS else "ar", nodes=nodes)  # validates the budget
    return base, nodes


@dataclass(frozen=True)
class Spec:
    """A benchmark method name, parsed: [drafter:]method[@nodes][~length control][+retrieval]."""

    drafter: str | None      # None: the pair's own drafter; else a TRAINING_FREE or MODEL_DRAFTERS kind
    method: str
    nodes: int | None
    retrieval: bool
    length_control: str | None = None   # None: the run's own setting


def parse_spec(name: str) -> Spec:
    full = SHORTCUTS.get(name, name)
    drafter, _, rest = full.rpartition(":")
    rest, plus, tail = rest.partition("+")
    rest, tilde, control = rest.partition("~")
    if tilde and control not in LENGTH_CONTROLS:
        raise BadInput(f"method {name!r}: the length control after '~' must be one of {', '.join(LENGTH_CONTROLS)}.")
    if drafter and drafter not in TRAINING_FREE + MODEL_DRAFTERS:
        raise BadInput(f"method {name!r}: the drafter before ':' must be one of "
                       f"{', '.join(TRAINING_FREE + MODEL_DRAFTERS)}.")
    if plus and tail != "retrieval":
        raise BadInput(f"method {name!r}: only '+retrieval' may follow a method.")
    method, nodes = split_method(rest)
    if method == "ar" and (drafter or plus):
        raise BadInput(f"method {name!r}: ar has no tree to draft or fuse.")
    if drafter in TRAINING_FREE and plus:
        raise BadInput(f"method {name!r}: retrieval fusion joins a draft model's tree, and {drafter} has none.")
    if tilde and method == "ar":
        raise BadInput(f"method {name!r}: ar drafts nothing, so no length control applies.")
    return Spec(drafter or None, method, nodes, bool(plus), control or None)


def needs_draft_model(methods) -> bool:
    """True when some method drafts with the pair's own (model) drafter."""
    return any(m not in ("ar", *HF_METHODS) and parse_spec(m).drafter is None for m in methods)


def pearson(xs: list[float], ys: list[float]) -> float | None:
    """The per-step Pearson r the report prints: None below three points, else rounded to 4 places."""
    r = calibration.pearson(xs, ys) if len(xs) >= 3 else None
    return None if r is None else round(r, 4)


class MethodRunner:
    """Runs one method on one prompt and returns a flat row (engine methods and hf-assisted alike)."""

    def __init__(self, pair, base: DecodeConfig, assistant=None, hf_knobs=None, chat: bool = True, corpus=None,
                 cancel=None, pairs: dict | None = None):
        """`cancel()`: polled between steps (a run it stops raises Cancelled); `pairs`: {drafter: pair} for
        the drafters methods name before ':' (the app's allow-listed pairs), else each is loaded here."""
        if assistant is not None and assistant is pair.target:
            assistant = copy.deepcopy(assistant)  # the forward hook must count target calls only
        self.pair, self.base, self.assistant, self.chat = pair, base, assistant, chat
        self.hf_config = configure_assistant(assistant, hf_knobs) if assistant is not None else None
        self.corpus, self.cancel = corpus, cancel
        self.table: RecyclingTable | None = None   # the benchmark's one table (recycling_scope: session)
        self._pairs = dict(pairs or {})
        self.last_trace: dict | None = None        # the trace of the last engine run

    def pair_for(self, drafter: str | None):
        """The pair itself, or the same target drafting with another drafter (its bundled draft)."""
        if drafter is None or drafter == self.pair.drafter_kind:
            return self.pair
        if drafter not in self._pairs:
            self._pairs[drafter] = with_drafter(self.pair, drafter)
        return self._pairs[drafter]

    def context_for(self, drafter: str | None, cfg: DecodeConfig) -> DraftContext:
        table = None
        if drafter == "recycling" and cfg.recycling_scope == "session":
            if self.table is None:
                self.table = RecyclingTable(self.pair.target.config.vocab_size)
            table = self.table
        return DraftContext(table=table, corpus=self.corpus)

    def __call__(self, method: str, prompt: str, prompt_ids: list[int], max_new_tokens: int | None = None,
                 paths=None, **overrides) -> tuple[dict, list]:
        """`paths`: a static shape that replaces the method's tree (export-tree's fitted stand-in); `overrides`:
        DecodeConfig fields."""
        cfg = replace(self.base, **overrides)
        if max_new_tokens is not None:
            cfg = replace(cfg, max_new_tokens=max_new_tokens)
        if method == HF_METHOD:
            if self.assistant is None:
                raise BadInput("hf-assisted needs a classic draft model as the assistant "
                               "(--assistant-model-path, or --drafter classic).")
            row = run_hf_assisted(self.pair, self.assistant, prompt_ids, cfg.max_new_tokens, cfg.temperature,
                                  cfg.top_p, cfg.top_k, cfg.seed)
            return row, []
        if method == HF_LOOKUP:
            row = run_hf_lookup(self.pair, prompt_ids, cfg.max_new_tokens, cfg.temperature, cfg.top_p, cfg.top_k,
                                cfg.seed)
            return row, []
        spec = parse_spec(method)
        # "+retrieval" fuses on every prompt; a plain method follows the run's own setting (off unless
        # asked: `--retrieval auto` benches the app's default, fusion wherever a draft model drafts), and a drafter
        # with no draft model has nothing to fuse.
        pair = self.pair_for(spec.drafter)
        retrieval = "on" if spec.retrieval else "off" if pair.drafter_kind in TRAINING_FREE else cfg.retrieval
        cfg = replace(cfg, method=spec.method, retrieval=retrieval,
                      **({"nodes": spec.nodes} if spec.nodes is not None else {}),
                      **({"length_control": spec.length_control} if spec.length_control else {}))
        context = self.context_for(spec.drafter, cfg)
        t0 = clock()
        # A speed measurement: the trace's target side (theory view data) is not recorded.
        trace = run(pair, prompt, cfg, cancel=self.cancel, chat=self.chat, prompt_ids=prompt_ids,
                    record_target=False, context=context, paths=paths)
        wall = clock() - t0
        self.last_trace = trace
        row = {k: trace["summary"][k] for k in SUMMARY_KEYS}
        row.update(wall_s=round(wall, 4), tokens_per_s=round(row["new_tokens"] / wall, 3) if wall > 0 else 0.0,
                   output_ids=trace["output_ids"])
        if spec.method != "ar":   # what the run did ("auto" resolves per drafter: registry.resolve_retrieval)
            row["retrieval"] = trace["meta"]["retrieval"]
        steps = calibration.ea_a_pairs(trace["steps"]) if spec.method != "ar" else []
        return row, steps


def combined_acceptance(rows: list[dict]) -> dict:
    """trace.acceptance over several runs: totals first, then the rates (never a mean of rates); exact up
    to the rounding of the per-run figures."""
    have = [r for r in rows if r.get("drafted_by_depth") is not None]
    nodes = sum(r["mean_nodes"] * r["steps"] for r in have)
    accepted = sum(r["mean_accepted_draft_tokens"] * r["steps"] for r in have)
    depth = max((len(r["drafted_by_depth"]) for r in have), default=0)
    drafted = [sum(r["drafted_by_depth"][d] for r in have if d < len(r["drafted_by_depth"])) for d in range(depth)]
    reached = [sum(r["acceptance_by_depth"][d] * r["drafted_by_depth"][d] for r in have
                   if d < len(r["drafted_by_depth"])) for d in range(depth)]
    return {"draft_acceptance_rate": round(accepted / nodes, 4) if have and nodes else None,
            "acceptance_by_depth": [round(r / k, 4) for r, k in zip(reached, drafted)] if have else None,
            "drafted_by_depth": drafted if have else None}


def aggregate(rows: list[dict], ar_rows: dict, ea_a: list, greedy: bool) -> dict:
    """Aggregate one method's rows; `ar_rows` maps prompt id -> the ar row of the same run."""
    tokens = sum(r["new_tokens"] for r in rows)
    steps = sum(r["steps"] for r in rows)
    wall = sum(r["wall_s"] for r in rows)
    out = {"prompts": len(rows), "new_tokens": tokens, "steps": steps,
           "tau": round(tokens / steps, 4) if steps else 0.0,
           "tau_mean": round(statistics.fmean(r["tau"] for r in rows), 4) if rows else 0.0,
           "wall_s": round(wall, 3), "tokens_per_s": round(tokens / wall, 3) if wall > 0 else 0.0}
    ar = [ar_rows[r["prompt_id"]] for r in rows if r["prompt_id"] in ar_rows]
    ar_tokens, ar_wall = sum(r["new_tokens"] for r in ar), sum(r["wall_s"] for r in ar)
    out["speedup"] = (round(out["tokens_per_s"] / (ar_tokens / ar_wall), 4)
                      if ar and ar_wall > 0 and ar_tokens and out["tokens_per_s"] else None)
    ratios = [r["tokens_per_s"] / ar_rows[r["prompt_id"]]["tokens_per_s"] for r in rows
              if r["prompt_id"] in ar_rows and ar_rows[r["prompt_id"]]["tokens_per_s"] > 0]
    out["speedup_median"] = round(statistics.median(ratios), 4) if ratios else None
    # Sampled, every engine run draws with the run's seed and each committed token costs one draw, so a tree
    # run commits AR's tokens too (decoding/sampling.TokenPicker); transformers' own sampling draws otherwise.
    drawn_alike = greedy or not any(r["method"] in HF_METHODS for r in rows)
    if drawn_alike and ar:
        same = [r["output_ids"] == ar_rows[r["prompt_id"]]["output_ids"] for r in rows if r["prompt_id"] in ar_rows]
        out["exact_match"] = round(sum(same) / len(same), 4) if same else None
    else:
        out["exact_match"] = None
    for key in ("mean_draft_ms", "mean_build_ms", "mean_verify_ms", "mean_nodes", "mean_depth",
                "mean_expected_accept", "mean_accepted_draft_tokens"):
        have = [r for r in rows if r.get(key) is not None]
        n = sum(r["steps"] for r in have)
        out[key] = round(sum(r[key] * r["steps"] for r in have) / n, 3) if have and n else None
    prefills = [r["prefill_ms"] for r in rows if r.get("prefill_ms") is not None]   # per run, not per step
    out["mean_prefill_ms"] = round(statistics.fmean(prefills), 2) if prefills else None
    out.update(combined_acceptance(rows))
    # The share of a step's time spent drafting and building the tree (the rest is verification).
    parts = [out["mean_draft_ms"], out["mean_build_ms"], out["mean_verify_ms"]]
    out["draft_share"] = (round((parts[0] + parts[1]) / sum(parts), 4)
                          if all(isinstance(x, (int, float)) for x in parts) and sum(parts) > 0 else None)
    out["ea_a_pearson_r"] = pearson([p[0] for p in ea_a], [p[1] for p in ea_a])
    out["ea_a_steps"] = len(ea_a)
    return out


def summarize_runs(rows: list[dict], methods: list[str], ea_a: dict, greedy: bool) -> tuple[dict, dict]:
    ar_rows = {r["prompt_id"]: r for r in rows if r["method"] == "ar"}
    by_method = {m: aggregate([r for r in rows if r["method"] == m], ar_rows, ea_a.get(m, []), greedy)
                 for m in methods}
    by_cat: dict = {}
    for cat in sorted({r["category"] for r in rows}):
        cat_rows = [r for r in rows if r["category"] == cat]
        ids = {r["prompt_id"] for r in cat_rows}
        by_cat[cat] = {m: {k: v for k, v in aggregate([r for r in cat_rows if r["method"] == m],
                                                      {i: ar_rows[i] for i in ids if i in ar_rows},
                                                      [], greedy).items()
                           if k not in ("ea_a_pearson_r", "ea_a_steps")}
                       for m in methods}
    return by_method, by_cat


def check_warmup(warmup: int) -> None:
    """Refuses a benchmark without a warm-up. The first run of each method in a process pays one-time costs
    (kernel set-up, allocations, lazy initialisation) that a timed run would read as the method's speed: with
    no warm-up the AR reference, which runs first, paid them, and a tiny pair's sweep read speedups of ×70–×100
    where warm runs give ×0.7–×0.8. Refusing keeps every recorded number a warm run's; clamping would quietly
    run something other than what was asked."""
    if warmup < 1:
        raise BadInput(f"--warmup must be at least 1, got {warmup}: each method's first run in a process pays "
                       "one-time start-up costs that would read as its speed (and the AR reference's, inflating "
                       "every speedup), so one untimed warm-up prompt always runs first.")


def warm_up(runner: MethodRunner, prompts: list[tuple[str, list[int]]], runs: list[tuple[str, dict]],
            max_new_tokens: int):
    """The untimed warm-up before any timed run: on each (text, ids) of `prompts`, each (method, MethodRunner
    keywords) of `runs` once, at most WARMUP_TOKENS long. A setting's first run in a process pays one-time costs
    (kernel set-up, allocations, a tree size's new shapes) that a timed run would read as its speed, so every
    setting a benchmark times runs here first. Yields (prompt index, method) before each run."""
    for i, (text, ids) in enumerate(prompts):
        for method, keywords in runs:
            yield i, method
            runner(method, text, ids, **{**keywords, "max_new_tokens": min(WARMUP_TOKENS, max_new_tokens)})


def bench_meta(pair, runner: MethodRunner, methods: list[str], base: DecodeConfig, prompts: int, warmup: int,
               assistant, corpus, log) -> dict:
    """The result's meta, and before any timed run the machine's cost curve (the auto budget's input) for
    every pair the methods use."""
    curve = cost.load_or_measure(pair, log=log)
    others = {}   # the other drafters named in methods: their draft and cost curve (an early exit's N layers)
    for drafter in sorted({parse_spec(m).drafter for m in methods if m not in ("ar", *HF_METHODS)} - {None}):
        other = runner.pair_for(drafter)
        others[drafter] = {"draft": other.recorded_names()[1],
                           "cost": cost.compact(cost.load_or_measure(other, log=log))}
    target, draft = pair.recorded_names()     # as a trace records them: a served pair's public names
    return {"machine": machine_info(pair.device), "target": target, "drafter": pair.drafter_kind,
            "draft": draft, "dtype": str(pair.dtype).replace("torch.", ""),
            "assistant": getattr(assistant, "name_or_path", None) and str(assistant.name_or_path),
            "assistant_kernel": None if assistant is None else kernel_of(assistant),
            "config": {k: v for k, v in base.to_dict().items() if k != "method"},
            "methods": methods, "prompts": prompts, "warmup_runs": warmup,
            "hf_assisted_config": runner.hf_config, "cost": cost.compact(curve), "other_drafters": others,
            "hf_lookup_config": HF_LOOKUP_CONFIG if HF_LOOKUP in methods else None,
            "retrieval_corpus_tokens": None if corpus is None else len(corpus),
            "recycling_table": ("one table for the whole benchmark (warm-up included), in method order"
                                if base.recycling_scope == "session" else "a fresh table per run (prompt rows)"),
            "order": "methods interleaved per prompt, rotated by one each prompt; warm-up not recorded",
            "warmup_order": [], "run_order": []}


def stop_reason(done: int, total: int, entered: float, timed_from: float, max_minutes: float | None,
                deadline_s: float | None) -> str | None:
    """Why the benchmark ends after its `done`-th prompt, or None: the time budget is spent (`max_minutes`
    of timed runs), or the next prompt, taking as long as the mean one so far, would end past the
    deadline (`deadline_s` after `entered`)."""
    if done >= total:
        return None
    now = clock()
    if max_minutes and now - timed_from > 60 * max_minutes:
        return f"time budget of {max_minutes:g} min reached: {done} of {total} prompts run (every method on each)"
    if deadline_s and now - entered + (now - timed_from) / done > deadline_s:
        return f"the time limit was near: {done} of {total} prompts run (every method on each)"
    return None


def rotated(methods: list[str], i: int) -> list[str]:
    """The order of methods on the i-th prompt: rotated by one each prompt, so no method always runs
    first (or always follows the same neighbour)."""
    k = i % len(methods)
    return methods[k:] + methods[:k]


def iter_bench(pair, prompts, methods: list[str], base: DecodeConfig, assistant=None, hf_knobs=None,
               warmup: int = 1, chat: bool = True, log=None, max_minutes: float | None = None, corpus=None,
               cancel=None, pairs: dict | None = None, keep_traces=(), deadline_s: float | None = None):
    """The benchmark one run at a time: yields {"phase": "warm-up" | "timed", "prompt", "prompts",
    "prompt_id", "method", "run", "runs"} before each run (prompt and run counted from 1), then
    {"phase": "done", "result": result} (see the module docstring). `cancel`, `pairs`: MethodRunner's;
    `keep_traces`: prompt ids whose traces the result keeps; `deadline_s`: seconds from this call after
    which no prompt should end (the next prompt is left out when it would likely pass it)."""
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    t_enter = clock()
    check_warmup(warmup)
    methods = parse_methods(methods)
    runner = MethodRunner(pair, base, assistant, hf_knobs, chat, corpus, cancel, pairs)
    meta = bench_meta(pair, runner, methods, base, len(prompts), warmup, assistant, corpus, log)
    encoded = [(q, encode_prompt(pair.tokenizer, q.prompt, chat=chat)) for q in prompts]
    n_warm = min(warmup, len(encoded)) * len(methods)
    total = n_warm + len(encoded) * len(methods)
    warm = warm_up(runner, [(q.prompt, ids) for q, ids in encoded[:warmup]], [(m, {}) for m in methods],
                   base.max_new_tokens)
    for n, (w, m) in enumerate(warm, 1):
        yield {"phase": "warm-up", "prompt": w + 1, "prompts": len(encoded), "prompt_id": encoded[w][0].id,
               "method": m, "run": n, "runs": total}
        meta["warmup_order"].append(m)
    if n_warm:
        log(f"warm-up of {len(methods)} methods done")
    rows, ea_a, traces = [], {m: [] for m in methods}, {}
    t_start = clock()
    progress = progress_bar(unit="runs", total=len(encoded) * len(methods))
    for i, (q, ids) in enumerate(encoded):
        meta["run_order"].append([q.id, rotated(methods, i)])
        for m in meta["run_order"][-1][1]:
            yield {"phase": "timed", "prompt": i + 1, "prompts": len(encoded), "prompt_id": q.id, "method": m,
                   "run": n_warm + len(rows) + 1, "runs": total}
            row, steps = runner(m, q.prompt, ids)
            rows.append({"prompt_id": q.id, "category": q.category, "method": m, "prompt_tokens": len(ids), **row})
            ea_a[m].extend(steps)
            if q.id in keep_traces and runner.last_trace is not None and m not in HF_METHODS:
                traces.setdefault(q.id, {})[m] = runner.last_trace
            progress.update()
        log(f"prompt {i + 1}/{len(encoded)} [{q.category}] " + "  ".join(
            f"{r['method']}: τ={r['tau']:.2f} {r['tokens_per_s']:.1f}t/s" for r in rows if r["prompt_id"] == q.id))
        why = stop_reason(i + 1, len(encoded), t_enter, t_start, max_minutes, deadline_s)
        if why:
            meta.update(stopped_early=why, prompts=i + 1)
            log(why)
            break
    progress.close()
    by_method, by_cat = summarize_runs(rows, methods, ea_a, base.greedy)
    meta["bench_wall_s"] = round(clock() - t_start, 1)
    note_load(meta["machine"])
    result = {"meta": meta, "methods": by_method, "by_category": by_cat, "runs": rows,
              "ea_a": {m: v for m, v in ea_a.items() if v}}
    if keep_traces:
        result["traces"] = traces
    yield {"phase": "done", "result": result}


def run_bench(pair, prompts, methods: list[str], base: DecodeConfig, assistant=None, hf_knobs=None,
              warmup: int = 1, chat: bool = True, log=None, max_minutes: float | None = None, corpus=None,
              **more) -> dict:
    """Run the benchmark; returns the result dict (see the module docstring). `more`: iter_bench's
    cancel, pairs and keep_traces."""
    for message in iter_bench(pair, prompts, methods, base, assistant, hf_knobs, warmup, chat, log, max_minutes,
                              corpus, **more):
        if message["phase"] == "done":
            return message["result"]
    raise AssertionError("iter_bench ended without a result")


def format_table(result: dict) -> str:
    head = (f"{'method':<22}{'τ':>6}{'tok/s':>8}{'speedup':>9}{'exact':>7}{'draft':>8}{'build':>7}"
            f"{'verify':>8}{'share':>7}{'nodes':>7}{'depth':>7}{'E(A)':>7}{'acc':>6}{'rate':>6}")
    lines = [head, "-" * len(head)]

    def f(x, spec):
        return format(x, spec) if isinstance(x, (int, float)) else format("-", ">" + spec.split(".")[0])

    def rate(x):
        return percent(x) if isinstance(x, (int, float)) else "-"

    for m, a in result["methods"].items():
        exact = percent(a['exact_match']) if a.get("exact_match") is not None else "-"
        share = percent(a['draft_share']) if a.get("draft_share") is not None else "-"
        lines.append(f"{m:<22}{f(a['tau'], '6.2f')}{f(a['tokens_per_s'], '8.1f')}"
                     f"{f(a['speedup'], '8.2f')}x{exact:>7}{f(a['mean_draft_ms'], '8.1f')}"
                     f"{f(a['mean_build_ms'], '7.1f')}{f(a['mean_verify_ms'], '8.1f')}{share:>7}"
                     f"{f(a['mean_nodes'], '7.1f')}"
                     f"{f(a['mean_depth'], '7.2f')}{f(a['mean_expected_accept'], '7.2f')}"
                     f"{f(a['mean_accepted_draft_tokens'], '6.2f')}{rate(a.get('draft_acceptance_rate')):>6}")
    lines.append("τ = tokens per target forward (bonus included); speedup = tokens/s over ar in this run; "
                 "times are ms per step; share = draft + build as a part of a step's time; E(A) = expected and "
                 "acc = committed draft tokens per step; rate = committed draft tokens / draft tokens verified.")
    return "\n".join(lines)
