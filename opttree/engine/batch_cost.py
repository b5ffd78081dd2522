"""Speculation in a batch: this machine's verify cost surface and a throughput model built on it.

A server verifies many sequences in one forward. The surface is the time of one target forward over
B sequences × T tokens each (a KV prefix of `PREFIX_TOKENS` per sequence, the T tokens a tree of
T - 1 nodes under tree attention, then cut back), B in SURFACE_BATCHES and T in SURFACE_TOKENS,
sizes interleaved over repetitions, each point's fastest repetition kept for the model (as the
decoder's cost curve does, engine/cost.py; the surface shares its cache folder and keying and is
measured again with `refresh`).

The model (pure: `model_table`), for a Sequoia tree of n nodes and a batch of B sequences:

    tokens/s(n, B) = B · (E(n) + 1) / (verify(B, n + 1) + B · draft(n))

E(n) is the expected accepted draft tokens of the n-node Sequoia tree under the draft's measured
acceptance vector (the DP's value, trees/sequoia.py); verify(B, T) the surface, linear between
measured T (and B); draft(n) the per-sequence drafting of that tree from the draft's cost curve
(one step base plus a layer per depth), paid once per sequence because this engine drafts one
sequence at a time. Autoregressive decoding is n = 0: B / verify(B, 1). Speculation pays at B where
some n beats that. It is a model built from measurements, not a measured batched speculative
run; bench/serving_report.py checks it against real runs and writes the dated page, and the app's
Serving tab (ui/serving.py) draws it (viz/serving_chart.py).
"""

from __future__ import annotations

import datetime as dt
import statistics
import time

import torch

from opttree import paths
from opttree.decoding.kv_cache import new_cache, truncate
from opttree.decoding.verify import tree_inputs
from opttree.engine import cost
from opttree.models.loading import last_logits_only
from opttree.trees.auto_size import StepCost, interpolate, monotone
from opttree.trees.sequoia import DEFAULT_ACCEPTANCE, draft_ms, expected_accepted, optimal_tree

VERSION = 2   # 2: the KV cache appends in place (decoding/kv_cache.py)
SURFACE_BATCHES = (1, 2, 4, 8, 16)
SURFACE_TOKENS = (1, 2, 4, 8, 16, 32, 64)
PREFIX_TOKENS = cost.PREFIX_TOKENS
MODEL_NODES = (0, 1, 2, 4, 6, 8, 12, 16, 25, 40, 60)   # tree sizes the model tabulates (0 = AR)
MODEL_DEPTH = 10


def surface_key(pair, batches, tokens) -> dict:
    """The target's cache key (`cost.target_key`: the surface is the target's alone) and the grid."""
    return {**cost.target_key(pair), "surface": "batch x tokens", "batches": list(batches), "tokens": list(tokens),
            "prefix_tokens": PREFIX_TOKENS}


def forward_runner(pair, batches, prefix_tokens: int = PREFIX_TOKENS):
    """`run(B, T)`: one target forward of B sequences × T tree tokens on a prefilled cache of B
    sequences, cut back to the prefix afterwards. One cache per batch size, filled once."""
    target, device = pair.target, pair.device
    vocab = target.config.vocab_size
    dtype = target.get_input_embeddings().weight.dtype
    g = torch.Generator().manual_seed(2)
    caches = {}
    with torch.inference_mode():
        for b in batches:
            caches[b] = new_cache(target)
            prefix = torch.randint(0, vocab, (b, prefix_tokens), generator=g).to(device)
            target(input_ids=prefix, past_key_values=caches[b], use_cache=True, **last_logits_only(target))

    @torch.inference_mode()
    def run(b: int, t: int) -> None:
        tree = cost.synthetic_tree(t - 1, vocab, seed=t)
        _, pos, mask = tree_inputs(tree, 0, prefix_tokens, dtype, device)
        ids = torch.randint(0, vocab, (b, t), generator=g).to(device)
        target(input_ids=ids, position_ids=pos.expand(b, -1), attention_mask=mask.expand(b, -1, -1, -1).contiguous(),
               past_key_values=caches[b], use_cache=True)
        cost.sync(device)
        truncate(caches[b], prefix_tokens)

    return run


def time_surface(run, batches=SURFACE_BATCHES, tokens=SURFACE_TOKENS, reps: int = 3, warmup: int = 1,
                 clock=time.perf_counter, log=None) -> dict:
    """ms of `run(B, T)` per (B, T) over `reps` repetitions after `warmup`, sizes interleaved (the
    order reversed every other repetition); `clock()` is seconds (tests pass a synthetic one)."""
    grid = [(b, t) for b in batches for t in tokens]
    times = {point: [] for point in grid}
    for rep in range(warmup + reps):
        for b, t in (grid if rep % 2 == 0 else grid[::-1]):
            t0 = clock()
            run(b, t)
            ms = (clock() - t0) * 1e3
            if rep >= warmup:
                times[(b, t)].append(ms)
        if log:
            log(f"cost surface: repetition {rep + 1}/{warmup + reps}")
    return times


def surface_from_times(times: dict, key: dict, seconds: float, reps: int) -> dict:
    points = [{"batch": b, "tokens": t, "best_ms": round(min(ts), 3), "median_ms": round(statistics.median(ts), 3)}
              for (b, t), ts in sorted(times.items())]
    return {"version": VERSION, "key": key, "reps": reps, "prefix_tokens": PREFIX_TOKENS,
            "measured_utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "seconds": round(seconds, 2), "points": points}


def load_or_measure_surface(pair, batches=SURFACE_BATCHES, tokens=SURFACE_TOKENS, refresh: bool = False,
                            reps: int = 3, clock=time.perf_counter, log=None) -> dict:
    """The pair's surface on this machine: read from the cost cache, else measured (and cached)."""
    key = surface_key(pair, batches, tokens)
    path = cost.cache_path(key)
    surface = None if refresh else cost.read_cached(path, key, VERSION)
    if surface is None:
        t0 = clock()
        times = time_surface(forward_runner(pair, batches), batches, tokens, reps, clock=clock, log=log)
        surface = surface_from_times(times, key, clock() - t0, reps)
        paths.write_cache_json(path, surface)
    return surface


def surface_with_draft(pair, refresh: bool = False, log=None) -> dict:
    """The surface as the model reads it: the target's (B, T) times plus the draft's per-sequence
    costs (`draft`, the decoder's compact cost curve, measured once and cached like the surface)."""
    surface = dict(load_or_measure_surface(pair, refresh=refresh, log=log))
    surface["draft"] = cost.compact(cost.load_or_measure(pair, log=log))
    return surface


# ---- the model (pure) -------------------------------------------------------------------------------

def verify_ms(surface: dict, batch: int, tokens: int) -> float:
    """The surface at (B, T): per measured B the fastest times made non-decreasing in T and
    interpolated in T, then linear in B between measured batch sizes."""
    by_b: dict[int, list[tuple[int, float]]] = {}
    for p in surface["points"]:
        by_b.setdefault(p["batch"], []).append((p["tokens"], p["best_ms"]))
    bs = sorted(by_b)
    at = []
    for b in bs:
        pts = sorted(by_b[b])
        at.append(interpolate([t for t, _ in pts], monotone([ms for _, ms in pts]), tokens))
    return interpolate(bs, monotone(at), batch)


def draft_cost(surface: dict) -> StepCost:
    """The draft's per-sequence costs carried with the surface (`surface["draft"]`, a compact cost
    curve); free drafting when there are none."""
    draft = surface.get("draft") or {}
    return StepCost((1,), (1.0,), tuple(draft.get("widths") or [1]), tuple(draft.get("layer_ms") or [0.0]),
                    float(draft.get("base_ms") or 0.0))


def model_point(surface: dict, acceptance, nodes: int, batch: int, max_depth: int = MODEL_DEPTH) -> dict:
    """One (n, B) cell of the model: E(n), the step's modelled ms and the batch's tokens/s."""
    if nodes == 0:
        ea, drafting = 0.0, 0.0
    else:
        ea = expected_accepted(acceptance, nodes, max_depth)
        drafting = draft_ms(draft_cost(surface), optimal_tree(acceptance, nodes, max_depth))
    step = verify_ms(surface, batch, nodes + 1) + batch * drafting
    return {"nodes": nodes, "batch": batch, "expected_accepted": round(ea, 4), "step_ms": round(step, 3),
            "tokens_per_s": round(batch * (ea + 1.0) * 1000.0 / step, 2) if step > 0 else 0.0}


def model_table(surface: dict, acceptance=DEFAULT_ACCEPTANCE, nodes=MODEL_NODES, batches=None,
                max_depth: int = MODEL_DEPTH) -> list[dict]:
    """Every (n, B) cell, with its speedup over AR (n = 0) at the same batch size."""
    batches = batches or sorted({p["batch"] for p in surface["points"]})
    rows = []
    for b in batches:
        ar = model_point(surface, acceptance, 0, b, max_depth)
        for n in nodes:
            row = model_point(surface, acceptance, n, b, max_depth)
            row["speedup"] = round(row["tokens_per_s"] / ar["tokens_per_s"], 3) if ar["tokens_per_s"] else None
            rows.append(row)
    return rows


def best_by_batch(table: list[dict]) -> dict[int, dict]:
    """Per batch size, the row with the most tokens/s (n = 0 when no tree pays)."""
    best: dict[int, dict] = {}
    for row in table:
        if row["batch"] not in best or row["tokens_per_s"] > best[row["batch"]]["tokens_per_s"]:
            best[row["batch"]] = row
    return best
