"""A step trace as a file: `dumps` writes one, and `loads` reads an untrusted one back (a file upload, the
API): it refuses one over MAX_TRACE_BYTES, checks it with `validate_trace` (structure, types, sizes and the
tree invariants of opttree/trace.py's contract) and recomputes its summary from its steps. Of the summary it
keeps the timings (`wall_s`, `prefill_ms`), and `tokens_per_s` where it is the file's new tokens over its
wall_s up to `summarize`'s rounding; a speed its own figures contradict reads as the one they give, and a
summary without wall_s reads the one its new tokens over its speed give. The wall time holds the prefill and
every step: a file whose steps' times add up to more is refused, and a prefill that does not fit beside them
reads as not timed."""

from __future__ import annotations

import json
import math

from opttree.errors import BadInput
from opttree.trace import (
    MS_DECIMALS,
    PREFILL_DECIMALS,
    ROWS_PER_RUN,
    ROWS_PER_STEP,
    SOURCES,
    SPEED_DECIMALS,
    STEP_TIMES,
    SUMMARY_SHOWN,
    TOPK,
    VERSION,
    WALL_DECIMALS,
    is_number,
    summarize,
)

STEP_LISTS = ("tokens", "texts", "parents", "depth", "q", "p_hat", "rank")   # one entry per node
MAX_STEPS, MAX_NODES, MAX_TRACE_BYTES = 5000, 2000, 64 * 1024 * 1024


def dumps(trace: dict) -> str:
    return json.dumps(trace, ensure_ascii=False)


def loads(text: str | bytes) -> dict:
    """Parse and validate an untrusted trace (file upload, API); raises BadInput with the reason."""
    if len(text) > MAX_TRACE_BYTES:       # bytes, or characters (decoding never makes more of them)
        raise BadInput("trace file is too large (limit 64 MB).")
    try:
        trace = json.loads(text.decode("utf-8", errors="replace") if isinstance(text, bytes) else text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise BadInput(f"not a JSON trace: {str(exc)[:200]}") from None
    validate_trace(trace)
    # The figures its steps give are recomputed (the file keeps its timings, its speed where its wall time gives
    # it, and step means its steps lack), and an auto step without a best rate reads 0: a false summary, a speed
    # its own figures contradict, -Infinity where nothing was found, read as a new run's.
    new_tokens = len(trace["output_ids"])
    stated = {"wall_s": _wall_of(trace["summary"], new_tokens), **trace["summary"]}
    kept = ("wall_s", "prefill_ms", *(f"mean_{k}" for k in STEP_TIMES if any(k not in s for s in trace["steps"])),
            *(("tokens_per_s",) if _speed_fits(stated, new_tokens) else ()))
    trace["summary"] = {**summarize(trace["steps"], new_tokens, stated["wall_s"]),
                        **{k: stated[k] for k in kept if k in stated}}
    _fit_in_wall(trace["summary"])
    for auto in (s["auto"] for s in trace["steps"] if isinstance(s.get("auto"), dict)):
        if not is_number(auto.get("chosen_tokens_per_s", 0)):
            auto["chosen_tokens_per_s"] = 0.0
    return trace


def _wall_of(summary: dict, new_tokens: int) -> float:
    """The wall time a summary without wall_s implies: its new tokens over its tokens_per_s (0 without a speed,
    as `summarize` writes an untimed run)."""
    wall = new_tokens / summary["tokens_per_s"] if summary["tokens_per_s"] > 0 else 0.0
    return round(wall, WALL_DECIMALS) if is_number(wall) else 0.0     # a speed near 0 overflows it


def _fit_in_wall(summary: dict) -> None:
    """A run's wall_s times its prefill and every step (0: not timed, nothing checked): refuse steps whose draft,
    build and verify times add up to more (counted as steps × their means, which keeps a step without its own
    times at the file's mean), and read a prefill that does not fit beside them, or is negative, as not timed.
    The slack is the rounding a run's file carries: wall_s's, each step time's and each mean's, and prefill_ms's."""
    n, wall_ms = summary["steps"], summary["wall_s"] * 1e3
    if wall_ms == 0:      # a run that timed nothing as a whole (no wall_s and no speed): nothing to contradict
        return
    steps_ms = n * sum(summary[f"mean_{k}"] for k in STEP_TIMES)
    rounding = 1e3 * _half(WALL_DECIMALS) + n * len(STEP_TIMES) * 2 * _half(MS_DECIMALS)
    room = wall_ms - steps_ms + rounding + 1e-9 * max(1.0, wall_ms, steps_ms)      # + floating-point error
    _need(room >= 0, f"its steps' {', '.join(STEP_TIMES)} add up to {steps_ms:.0f} ms, more than "
                     f"summary.wall_s ({summary['wall_s']:g} s), which times the whole run")
    prefill = summary.get("prefill_ms")
    if prefill is not None and not 0 <= prefill <= room + _half(PREFILL_DECIMALS):
        summary["prefill_ms"] = None


def _speed_fits(summary: dict, new_tokens: int) -> bool:
    """Whether a file's tokens_per_s is what `summarize` gives its new tokens over some wall time that rounds to
    its wall_s."""
    wall, speed = summary["wall_s"], summary["tokens_per_s"]
    half_wall, half_speed = _half(WALL_DECIMALS), _half(SPEED_DECIMALS)
    if wall + half_wall <= 0:          # no time: summarize's speed is 0, the one recomputing it gives
        return False
    slowest = new_tokens / (wall + half_wall)
    fastest = new_tokens / (wall - half_wall) if wall > half_wall else (math.inf if new_tokens else 0.0)
    slack = 1e-9 * max(1.0, abs(speed))      # the bounds' own floating-point error
    return slowest - half_speed - slack <= speed <= fastest + half_speed + slack


def _half(decimals: int) -> float:
    """Half a unit of the last decimal a figure rounded to `decimals` places keeps: how far rounding moved it."""
    return 0.5 * 10.0 ** -decimals


def _need(cond: bool, msg: str) -> None:
    if not cond:
        raise BadInput(f"invalid trace: {msg}")


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def validate_trace(trace) -> None:
    """Check structure, types and tree invariants (p̂ = product of q along parents, the accepted
    path follows parents). Parents must precede their children, which also rules out cycles."""
    _need(isinstance(trace, dict), "top level must be an object")
    version = trace.get("version", VERSION)      # the first traces carried none
    _need(_is_int(version) and 1 <= version <= VERSION,
          f"version {str(version)[:20]!r} is not one this reader knows (1 to {VERSION}): a newer release wrote it?")
    for key in ("meta", "steps", "summary", "output_ids", "output_text", "prompt"):
        _need(key in trace, f"missing field {key!r}")
    _need(isinstance(trace["meta"], dict), "meta must be an object")
    _need(isinstance(trace["summary"], dict), "summary must be an object")
    _need(all(is_number(trace["summary"].get(k)) for k in SUMMARY_SHOWN)
          and all(is_number(v) or (k.endswith("_by_depth") and _numbers(v, MAX_NODES))
                  or (v is None and k == "prefill_ms") for k, v in trace["summary"].items()),
          f"summary must hold numbers ({', '.join(SUMMARY_SHOWN)} among them)")
    timed = ("wall_s", "tokens_per_s", *(f"mean_{k}" for k in STEP_TIMES))    # views print them as times and rates
    _need(all(trace["summary"].get(k, 0) >= 0 for k in timed), f"summary: {', '.join(timed)} must be ≥ 0")
    _need(isinstance(trace["prompt"], str) and isinstance(trace["output_text"], str),
          "prompt and output_text must be strings")
    _need(isinstance(trace["output_ids"], list) and all(_is_int(t) for t in trace["output_ids"]),
          "output_ids must be a list of integers")
    for key in ("threshold", "tree_temperature", "max_depth"):     # views read them as numbers
        _need(trace["meta"].get(key) is None or is_number(trace["meta"][key]), f"meta.{key} must be a number")
    _need(isinstance(trace["meta"].get("model", ""), str), "meta.model must be a model id")
    if "cost" in trace["meta"]:
        _validate_cost(trace["meta"]["cost"])
    steps = trace["steps"]
    _need(isinstance(steps, list) and len(steps) <= MAX_STEPS, f"steps must be a list of at most {MAX_STEPS}")
    for i, step in enumerate(steps):
        _validate_step(i, step)
    rows = sum(len(s.get("topk_rows", [])) for s in steps)
    _need(rows <= ROWS_PER_RUN, f"{rows} topk_rows in all (at most {ROWS_PER_RUN} per run)")


def _numbers(x, most: int = 1000) -> bool:
    return isinstance(x, list) and len(x) <= most and all(is_number(v) for v in x)


def _validate_cost(cost, where: str = "meta.cost") -> None:
    _need(isinstance(cost, dict), f"{where} must be an object")
    if cost.get("longer") is not None:       # the same numbers after a longer prefix (engine/cost.py)
        _need(where == "meta.cost", f"{where}: a longer prefix's costs hold no further longer ones")
        _validate_cost(cost["longer"], f"{where}.longer")
    for a, b in (("tokens", "verify_ms"), ("widths", "layer_ms")):
        _need(_numbers(cost.get(a, []), 100) and _numbers(cost.get(b, []), 100)
              and len(cost.get(a, [])) == len(cost.get(b, [])), f"{where}: {a} and {b} must be equal-length numbers")
    _need(all(x > 0 for x in cost.get("tokens", []) + cost.get("verify_ms", [])),
          f"{where}: tokens and verify_ms must be positive")
    prefix = cost.get("prefix_tokens")
    _need(prefix is None or (_is_int(prefix) and prefix >= 0), f"{where}: prefix_tokens must be a whole number")


def _validate_auto(where: str, auto) -> None:
    _need(isinstance(auto, dict), f"{where}: auto must be an object")
    rows = auto.get("objective")
    _need(isinstance(rows, list) and len(rows) <= 100 and all(_numbers(r) for r in rows),
          f"{where}: auto.objective must be lists of numbers")
    _need(_numbers(auto.get("draft_model_ms", []), 100) and _numbers(auto.get("widths", []), 100),
          f"{where}: auto.draft_model_ms and auto.widths must be numbers")
    d, n = auto.get("chosen_depth", 0), auto.get("chosen_nodes", 0)
    _need(_is_int(d) and _is_int(n) and 0 <= d <= len(rows) and (d == 0 or 0 <= n <= len(rows[d - 1])),
          f"{where}: auto.chosen_depth/chosen_nodes must point into the objective")
    _need(type(auto.get("chosen_tokens_per_s", 0)) in (int, float),     # older files: -inf where none was found
          f"{where}: auto.chosen_tokens_per_s must be a number")
    fused, rate = auto.get("fused_nodes"), auto.get("fused_tokens_per_s")
    _need(fused is None or (_is_int(fused) and 0 <= fused <= 1000 and _numbers([rate])),
          f"{where}: auto.fused_nodes must be a node count with its fused_tokens_per_s")


def _validate_step(i: int, step) -> None:
    where = f"step {i}"
    _need(isinstance(step, dict), f"{where} must be an object")
    for key in STEP_LISTS + ("accepted", "bonus_token", "expected_accept", "ea_by_depth"):
        _need(key in step, f"{where} lacks {key!r}")
    n = len(step["tokens"]) if isinstance(step["tokens"], list) else -1
    _need(0 <= n <= MAX_NODES, f"{where}: tokens must be a list of at most {MAX_NODES}")
    for key in STEP_LISTS:
        _need(isinstance(step[key], list) and len(step[key]) == n,
              f"{where}: {key} must hold one entry per node: tokens holds {n}")
    _need(all(isinstance(t, str) for t in step["texts"]), f"{where}: texts must be strings")
    _validate_token_texts(where, step, n)
    if "source" in step:   # optional: older traces lack it
        _need(isinstance(step["source"], list) and len(step["source"]) == n
              and all(isinstance(s, str) and s in SOURCES for s in step["source"]),
              f"{where}: source must list one of {', '.join(SOURCES)} per node")
    for key in ("tokens", "parents", "depth", "rank"):
        _need(all(_is_int(x) for x in step[key]), f"{where}: {key} must be integers")
    for key in ("q", "p_hat"):
        _need(all(is_number(x) and 0.0 <= x <= 1.0 for x in step[key]), f"{where}: {key} must be in [0, 1]")
    _need(_is_int(step["bonus_token"]), f"{where}: bonus_token must be an integer")
    _need(is_number(step["expected_accept"]), f"{where}: expected_accept must be a number")
    _need(isinstance(step["ea_by_depth"], list) and len(step["ea_by_depth"]) <= 1000
          and all(is_number(x) for x in step["ea_by_depth"]), f"{where}: ea_by_depth must be numbers")
    for j, (p, d) in enumerate(zip(step["parents"], step["depth"])):
        _need(-1 <= p < j, f"{where}: node {j} has parent {p} (parents must precede children)")
        _need(d == (1 if p == -1 else step["depth"][p] + 1), f"{where}: node {j} has wrong depth {d}")
        expect = step["q"][j] * (1.0 if p == -1 else step["p_hat"][p])
        _need(abs(step["p_hat"][j] - expect) <= 1e-4 + 1e-3 * expect, f"{where}: p_hat of node {j} "
              "is not the product of q along its path")
    if "auto" in step:
        _validate_auto(where, step["auto"])
    if "length" in step:
        _validate_length(where, step["length"])
    acc = step["accepted"]
    _need(isinstance(acc, list) and all(_is_int(a) and 0 <= a < n for a in acc),
          f"{where}: accepted must be node indices")
    _validate_commit(where, step)
    prev = -1
    for a in acc:
        _need(step["parents"][a] == prev, f"{where}: accepted path does not follow parents")
        prev = a
    if "p_target" in step:
        pt = step["p_target"]
        _need(isinstance(pt, list) and len(pt) == n and all(is_number(x) and 0.0 <= x <= 1.0 for x in pt),
              f"{where}: p_target must be {n} numbers in [0, 1]")
    if "topk_rows" in step:
        _validate_rows(where, step["topk_rows"], n)


def _strings(x, count: int | None = None, most: int = MAX_NODES + 1) -> bool:
    return isinstance(x, list) and len(x) <= most and (count is None or len(x) == count) \
        and all(isinstance(t, str) for t in x)


def _validate_token_texts(where: str, step: dict, n: int) -> None:
    """The optional bytes labels, committed pieces and pending label ("Token texts" in opttree/trace.py)."""
    if "labels" in step:
        _need(_strings(step["labels"], n), f"{where}: labels must hold one string per node")
    for key in ("bonus_label", "pending", "bonus_text", "committed_text"):
        _need(isinstance(step.get(key, ""), str), f"{where}: {key} must be a string")
    if "pieces" in step:
        committed = step.get("committed")
        _need(_strings(step["pieces"], len(committed) if isinstance(committed, list) else None),
              f"{where}: pieces must hold one string per committed token")


def _validate_commit(where: str, step: dict) -> None:
    """What the step committed and its timings, as the views count and print them (all optional but
    `accept_length`)."""
    _need(_is_int(step.get("accept_length")) and 0 <= step["accept_length"] <= MAX_NODES,
          f"{where}: accept_length must be a count of draft tokens")
    committed = step.get("committed", [])
    _need(isinstance(committed, list) and len(committed) <= MAX_NODES + 1 and all(_is_int(t) for t in committed),
          f"{where}: committed must be a list of token ids")
    _need(step.get("rejected") is None or _is_int(step["rejected"]), f"{where}: rejected must be a node index or null")
    for key in STEP_TIMES:
        _need(is_number(step.get(key, 0)) and step.get(key, 0) >= 0, f"{where}: {key} must be a number ≥ 0")


def _validate_length(where: str, length) -> None:
    _need(isinstance(length, dict) and length.get("control") in ("thompson", "predictor"),
          f"{where}: length must be a Thompson or predictor decision")
    if length["control"] == "thompson":
        _need(all(is_number(length.get(k)) for k in ("alpha", "beta", "theta", "price")) and length["alpha"] > 0
              and length["beta"] > 0 and 0.0 <= length["theta"] <= 1.0, f"{where}: length needs alpha, beta > 0, "
              "theta in [0, 1] and a price")
    else:
        pred = length.get("predicted")
        _need(pred is None or (is_number(pred) and pred >= 0), f"{where}: length's predicted must be a number ≥ 0")
    _need(_is_int(length.get("depth")) and 1 <= length["depth"] <= MAX_NODES,
          f"{where}: length depth must be an integer from 1 to {MAX_NODES}")


def _validate_rows(where: str, rows, n: int) -> None:
    _need(isinstance(rows, list) and len(rows) <= ROWS_PER_STEP,
          f"{where}: topk_rows must be a list of at most {ROWS_PER_STEP}")
    seen = set()
    for r in rows:
        _need(isinstance(r, dict) and all(key in r for key in ("node", "ids", "texts", "p", "q")),
              f"{where}: each of topk_rows needs node, ids, texts, p and q")
        node = r["node"]
        _need(_is_int(node) and -1 <= node < n and node not in seen,
              f"{where}: topk_rows node {node!r} is not a distinct node index (-1 = the root)")
        seen.add(node)
        m = len(r["ids"]) if isinstance(r["ids"], list) else -1
        _need(1 <= m <= 2 * TOPK, f"{where}: a topk_rows entry must have 1 to {2 * TOPK} ids")
        for key in ("texts", "p", "q"):
            _need(isinstance(r[key], list) and len(r[key]) == m, f"{where}: topk_rows {key} must have {m} entries")
        _need(all(_is_int(t) and t >= 0 for t in r["ids"]) and len(set(r["ids"])) == m,
              f"{where}: topk_rows ids must be distinct token ids")
        _need(all(isinstance(t, str) for t in r["texts"]), f"{where}: topk_rows texts must be strings")
        _need("labels" not in r or _strings(r["labels"], m), f"{where}: topk_rows labels must have {m} strings")
        for key in ("p", "q"):
            vals = r[key]
            _need(all(is_number(x) and 0.0 <= x <= 1.0 for x in vals) and sum(vals) <= 1.0 + 1e-3,
                  f"{where}: topk_rows {key} must be probabilities (each in [0, 1], at most 1 in all)")
