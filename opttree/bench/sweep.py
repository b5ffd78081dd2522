"""Paper-style sweeps: τ and speedup vs the node budget per method, OPT-Tree vs δ, E(A) vs A.

Like the benchmark, everything runs in one process, interleaved per prompt (the AR reference for
speedups included), after a warm-up that runs every setting once. Settings that give the same tree are
run once: the EAGLE-25 static tree stops growing at 25 nodes and a chain at max_depth, so larger budgets
reuse that result (marked `same_as`). With `verify_cost` the target's forward time vs tree tokens is measured too, and
every point gets a `predicted_speedup` = τ · t(1) / (t(nodes + 1) + draft + build), the cost model
that explains why the best budget is small on a CPU and large on a GPU.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace

from opttree.bench.env import machine_info, note_load, progress_bar
from opttree.bench.harness import MethodRunner, aggregate, check_warmup, pearson, warm_up
from opttree.bench.verify_cost import cost_at
from opttree.calibration import calibrate
from opttree.config import AUTO_MAX_NODES, DecodeConfig
from opttree.decoding.prompts import encode_prompt
from opttree.errors import BadInput

DEFAULT_BUDGETS = (10, 25, 60, 150, 300, 500)
DEFAULT_SWEEP_METHODS = ("opt-tree", "eagle-dynamic", "eagle-static", "binary")
POINT_KEYS = ("tau", "tokens_per_s", "speedup", "speedup_median", "exact_match", "mean_nodes", "mean_depth",
              "mean_draft_ms", "mean_build_ms", "mean_verify_ms", "mean_expected_accept",
              "mean_accepted_draft_tokens", "draft_acceptance_rate",
              "ea_a_pearson_r", "ea_a_steps")


def parse_numbers(text, kind=float, name="value") -> list:
    items = [t.strip() for t in (text.split(",") if isinstance(text, str) else map(str, text)) if t.strip()]
    try:
        out = [kind(t) for t in items]
    except ValueError:
        raise BadInput(f"{name} must be a comma-separated list of numbers, got {text!r}.") from None
    if not out:
        raise BadInput(f"{name} list is empty.")
    return out


def effective_budget(method: str, nodes: int, max_depth: int) -> int:
    """The node count a method's tree can actually reach (same tree => run once)."""
    if method == "eagle-static":
        return min(nodes, 25)
    if method == "chain":
        return min(nodes, max_depth)
    if method == "tr-static":
        return min(nodes, 80)
    return nodes


def _calibration(points: list) -> dict:
    """Per-step Pearson r (`pearson_r`) and the binned calibration: mean A per E(A) decile, the r
    between those means (`binned_r`) and their slope (opttree/calibration.py)."""
    cal = calibrate([p[0] for p in points], [p[1] for p in points])
    rnd = lambda x: round(x, 4) if isinstance(x, (int, float)) else None  # noqa: E731
    return {"pearson_r": pearson([p[0] for p in points], [p[1] for p in points]), "steps": len(points),
            "binned_r": rnd(cal["binned_r"]), "slope": rnd(cal["slope"]),
            "bins": [{k: round(v, 4) if isinstance(v, float) else v for k, v in b.items()} for b in cal["bins"]]}


def ea_a_stats(ea_a: dict) -> dict:
    pooled = [p for pts in ea_a.values() for p in pts]
    return {**_calibration(pooled), "by_method": {m: _calibration(v) for m, v in ea_a.items() if v}}


def sweep_settings(methods, budgets, thresholds, base: DecodeConfig, threshold_nodes: int, caps: dict):
    """The (kind, method, nodes, threshold) settings to run, deduplicated by the tree they produce, and
    {(kind, method, budget or δ): the setting it is the same as}."""
    settings, same_as, seen = [], {}, {}
    for n in budgets:
        for m in methods:
            if n > caps.get(m, n):
                continue  # capped: too slow to run at this budget on this device (recorded in meta)
            key = (m, effective_budget(m, n, base.max_depth), base.threshold)
            if key in seen:
                same_as[("nodes", m, n)] = seen[key]
                continue
            seen[key] = ("nodes", m, n)
            settings.append(("nodes", m, n, base.threshold))
    for d in thresholds:
        key = ("opt-tree", threshold_nodes, float(d))
        if key in seen:
            same_as[("threshold", "opt-tree", float(d))] = seen[key]
            continue
        seen[key] = ("threshold", "opt-tree", float(d))
        settings.append(("threshold", "opt-tree", threshold_nodes, float(d)))
    return settings, same_as


def run_interleaved(runner, encoded, settings, log, max_minutes):
    """AR and every setting on each prompt, the order rotated each prompt: (rows per setting, AR rows
    by prompt id, E(A)/A steps per setting, why it stopped early or None, prompts done)."""
    rows: dict = {s: [] for s in settings}
    ar_rows, steps = {}, {s: [] for s in settings}
    stopped, n_done = None, 0
    t0 = time.perf_counter()
    order = [("ar",)] + settings
    progress = progress_bar(unit="runs", total=len(encoded) * len(order))
    for i, (q, ids) in enumerate(encoded):
        k = i % len(order)
        for s in order[k:] + order[:k]:
            if s == ("ar",):
                row, _ = runner("ar", q.prompt, ids)
                ar_rows[q.id] = {"prompt_id": q.id, **row}
            else:
                _, m, n, d = s
                row, st = runner(m, q.prompt, ids, nodes=n, threshold=d)
                rows[s].append({"prompt_id": q.id, "category": q.category, **row})
                steps[s].extend(st)
            progress.update()
        n_done += 1
        log(f"sweep prompt {i + 1}/{len(encoded)} done ({time.perf_counter() - t0:.0f} s)")
        if max_minutes and time.perf_counter() - t0 > 60 * max_minutes and i + 1 < len(encoded):
            stopped = f"time budget of {max_minutes:g} min reached: {i + 1} of {len(encoded)} prompts run"
            log(stopped)
            break
    progress.close()
    return rows, ar_rows, steps, stopped, n_done


def sweep_points(agg, methods, budgets, thresholds, base, threshold_nodes, same_as, caps, verify_cost):
    """The budget curves per method and the δ sweep's points, each with its predicted speedup."""
    cost_one = cost_at(verify_cost, 1) if verify_cost else None

    def point(s, **extra):
        a = agg[s]
        p = {**extra, **{k: a[k] for k in POINT_KEYS}}
        if cost_one and a["mean_nodes"] is not None:
            denom = cost_at(verify_cost, a["mean_nodes"] + 1) + (a["mean_draft_ms"] or 0) + (a["mean_build_ms"] or 0)
            p["predicted_speedup"] = round(a["tau"] * cost_one / denom, 4) if denom > 0 else None
        return p

    curves: dict = {m: [] for m in methods}
    for n in budgets:
        for m in methods:
            if n > caps.get(m, n):
                continue
            s = ("nodes", m, n, base.threshold)
            src = same_as.get(("nodes", m, n))
            if src:
                s = ("nodes", src[1], src[2], base.threshold)
            curves[m].append(point(s, nodes=n, **({"same_as": {"nodes": src[2]}} if src else {})))
    thr_points = []
    for d in thresholds:
        src = same_as.get(("threshold", "opt-tree", float(d)))
        if src:
            s = ("nodes", "opt-tree", threshold_nodes, float(d)) if src[0] == "nodes" else \
                ("threshold", "opt-tree", threshold_nodes, float(src[2]))
        else:
            s = ("threshold", "opt-tree", threshold_nodes, float(d))
        thr_points.append(point(s, threshold=float(d)))
    return curves, thr_points


def run_sweep(pair, prompts, base: DecodeConfig, methods=DEFAULT_SWEEP_METHODS, budgets=DEFAULT_BUDGETS,
              thresholds=(), threshold_nodes: int | None = None, warmup: int = 1, chat: bool = True,
              verify_cost: dict | None = None, log=None, max_minutes: float | None = None,
              caps: dict | None = None) -> dict:

    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    check_warmup(warmup)
    for n in budgets:
        replace(base, nodes=n)  # validates each budget before any decoding
    runner = MethodRunner(pair, base, chat=chat)
    threshold_nodes = threshold_nodes or (AUTO_MAX_NODES if base.auto_nodes else base.nodes)  # δ needs a fixed n
    caps = caps or {}
    settings, same_as = sweep_settings(methods, budgets, thresholds, base, threshold_nodes, caps)
    encoded = [(q, encode_prompt(pair.tokenizer, q.prompt, chat=chat)) for q in prompts]
    # Every setting once, not each method at one budget: a tree size's first run pays for its new shapes.
    runs = [("ar", {})] + [(m, {"nodes": n, "threshold": d}) for _, m, n, d in settings]
    for _ in warm_up(runner, [(q.prompt, ids) for q, ids in encoded[:warmup]], runs, base.max_new_tokens):
        pass
    t0 = time.perf_counter()
    rows, ar_rows, steps, stopped, n_done = run_interleaved(runner, encoded, settings, log, max_minutes)
    agg = {s: aggregate(rows[s], ar_rows, steps[s], base.greedy) for s in settings}
    curves, thr_points = sweep_points(agg, methods, budgets, thresholds, base, threshold_nodes, same_as, caps,
                                      verify_cost)
    ea_a: dict = {}
    for s, pts in steps.items():
        ea_a.setdefault(s[1], []).extend(pts)
    ar_agg = aggregate(list(ar_rows.values()), ar_rows, [], base.greedy)
    best = best_budget(curves.get("opt-tree", []), "predicted_speedup" if verify_cost else "speedup")
    meta = {"machine": note_load(machine_info(pair.device)), "target": pair.target_name,
            "drafter": pair.drafter_kind, "draft": pair.draft_name, "dtype": str(pair.dtype).replace("torch.", ""),
            "config": {k: v for k, v in base.to_dict().items() if k not in ("method", "nodes")},
            "prompts": n_done, "budgets": list(budgets), "methods": list(methods),
            "warmup_runs": warmup, "caps": caps, "sweep_wall_s": round(time.perf_counter() - t0, 1),
            "order": "AR and every setting interleaved per prompt, rotated each prompt; warm-up not recorded",
            **({"stopped_early": stopped} if stopped else {})}
    return {"meta": meta, "ar": {k: ar_agg[k] for k in ("tau", "tokens_per_s", "new_tokens", "steps")},
            "nodes": {"curves": curves},
            "threshold": {"nodes": threshold_nodes, "points": thr_points},
            "best_budget": best, "ea_a_summary": ea_a_stats(ea_a), "ea_a": ea_a,
            "verify_cost": verify_cost}


def best_budget(points: list[dict], key: str = "speedup") -> dict | None:
    """The budget with the highest `key` (measured "speedup" or "predicted_speedup"; ties: smaller budget)."""
    have = [p for p in points if p.get(key) is not None]
    if not have:
        return None
    top = max(have, key=lambda p: (p[key], -p["nodes"]))
    return {"nodes": top["nodes"], "by": key, "speedup": top["speedup"], "tau": top["tau"],
            "predicted_speedup": top.get("predicted_speedup")}
