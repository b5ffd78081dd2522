"""The verify-cost sweep: one target forward's time vs the number of tree tokens, on this device,
over a wide range of sizes and with each CPU kernel (the decoder's own, shorter curve is
`opttree/engine/cost.py`; both time their forwards with its `time_verify`).

This is the hardware fact behind the best node budget: on a GPU a forward over 60 tokens costs about
the same as over one, so big trees are nearly free; on a 2-core CPU the cost grows with the tokens,
so every extra node must pay for itself in accepted tokens. Each size is timed with the same tree
attention and KV-cache prefix as a real verification step (a complete binary tree of that size over
a prefilled cache, then compacted back), sizes interleaved across repetitions so noise hits all
sizes alike.
"""

from __future__ import annotations

import statistics

from opttree.bench.env import machine_info, note_load
from opttree.engine.cost import SIZES, synthetic_tree, time_verify
from opttree.nets.few_row_linear import ONEDNN, PLAIN, choice_of, uses_few_row_linear
from opttree.nets.grouped_attention import NAME as GROUPED
from opttree.nets.grouped_attention import attention_of
from opttree.nets.kernel_choice import timed_kernels
from opttree.trees.auto_size import interpolate

__all__ = ["DEFAULT_SIZES", "cost_at", "synthetic_tree", "verify_cost_curve"]

DEFAULT_SIZES = tuple(sorted({*SIZES, 128, 256, 512}))   # the decoder's sizes, then long trees


def verify_cost_curve(pair, sizes=DEFAULT_SIZES, prefix_tokens: int = 128, reps: int = 5, warmup: int = 1,
                      log=None) -> dict:
    """Median/p25/p75 ms of one verification forward for trees of `sizes` tokens (root included),
    after a KV prefix of `prefix_tokens`.

    The forwards are timed by `engine.cost.time_verify`, the measurement the decoder's own cost
    curve uses. When the target runs the engine's CPU kernels (nets/kernel_choice.py), every size is
    also timed in the same repetitions with each kernel alone at every row count (plain `F.linear`,
    oneDNN's, and MKL's packed GEMM where the build has it); when it attends over grouped KV heads
    without copying them (grouped_attention.py), with transformers' copying SDPA too, so the curve shows
    what each buys."""
    few_row = uses_few_row_linear(pair.target)
    chosen = choice_of(pair.target)
    # each kernel alone, where that is not what the choice already runs everywhere
    alone = tuple(f"{k}-only" for k in timed_kernels() if k != PLAIN and (chosen or k != ONEDNN)) \
        if chosen is not None else ()
    others = (("plain",) * few_row + alone * few_row + ("copy-kv",) * (attention_of(pair.target) == GROUPED))
    kernels = ("few-row" if few_row else "default",) + others
    times = time_verify(pair, tuple(sizes), prefix_tokens, reps, warmup, kernels, log)
    points = _points(times, kernels[0], sizes)
    for other in others:
        name = other.replace("-", "_")
        for p, q in zip(points, _points(times, other, sizes, base_kernel=kernels[0])):
            p[f"{name}_median_ms"], p[f"{name}_relative"] = q["median_ms"], q["relative"]
    meta = {"machine": note_load(machine_info(pair.device)), "target": pair.target_name,
            "dtype": str(pair.dtype).replace("torch.", ""), "prefix_tokens": prefix_tokens, "reps": reps,
            "kernel": kernels[0], "kernels": chosen, "attention": attention_of(pair.target)}
    return {"meta": meta, "points": points}


def _points(times: dict, kernel: str, sizes, base_kernel: str | None = None) -> list[dict]:
    """Per size: median, quartiles and the ratio to the 1-token forward of `base_kernel`."""
    base = statistics.median(times[(base_kernel or kernel, sizes[0])])
    points = []
    for n in sizes:
        ts = sorted(times[(kernel, n)])
        q = statistics.quantiles(ts, n=4) if len(ts) >= 2 else [ts[0], ts[0], ts[0]]
        med = statistics.median(ts)
        points.append({"tokens": n, "median_ms": round(med, 2), "p25_ms": round(q[0], 2),
                       "p75_ms": round(q[2], 2), "relative": round(med / base, 3), "reps": len(ts)})
    return points


def cost_at(cost: dict, tokens: int) -> float:
    """Interpolated forward time (ms) for a tree of `tokens` tokens (linear between points)."""
    pts = cost["points"]
    return interpolate([p["tokens"] for p in pts], [p["median_ms"] for p in pts], tokens)
