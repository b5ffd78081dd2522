"""The verify-cost curve: one target forward's time vs the number of tree tokens, on this device.

This is the hardware fact behind the best node budget: on a GPU a forward over 60 tokens costs about
the same as over one, so big trees are nearly free; on a 2-core CPU the cost grows with the tokens,
so every extra node must pay for itself in accepted tokens. Each size is timed with the same tree
attention and KV-cache prefix as a real verification step (a complete binary tree of that size over
a prefilled cache, then compacted back), sizes interleaved across repetitions so noise hits all
sizes alike.
"""

from __future__ import annotations

import statistics
import time

import torch

from opttree.bench.env import machine_info, note_load
from opttree.decoding.kv_cache import new_cache, truncate
from opttree.decoding.verify import verify_tree
from opttree.models.few_row_linear import use_few_row_linear, use_plain_linear, uses_few_row_linear
from opttree.trees.draft_tree import ROOT, DraftTree

DEFAULT_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


def synthetic_tree(n: int, vocab: int, seed: int = 0) -> DraftTree:
    """A complete binary tree of n nodes (breadth-first), random tokens, made-up q."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, vocab, (max(n, 1),), generator=g).tolist()
    tree = DraftTree()
    for i in range(n):
        parent = ROOT if i < 2 else (i - 2) // 2
        tree.add(parent, tokens[i], 0.5, i % 2)
    return tree


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@torch.inference_mode()
def verify_cost_curve(pair, sizes=DEFAULT_SIZES, prefix_tokens: int = 128, reps: int = 5, warmup: int = 1,
                      log=None) -> dict:
    """Median/p25/p75 ms of one verification forward for trees of `sizes` nodes (+ the root).

    When the target runs the few-row CPU kernel (few_row_linear.py), every size is also timed with
    the plain `F.linear` kernel in the same repetitions, so the curve shows what the kernel buys."""

    target, device = pair.target, pair.device
    vocab = target.config.vocab_size
    g = torch.Generator().manual_seed(1)
    prefix = torch.randint(0, vocab, (1, prefix_tokens), generator=g).to(device)
    cache = new_cache(target)
    target(input_ids=prefix, past_key_values=cache, use_cache=True)
    trees = {n: synthetic_tree(n - 1, vocab, seed=n) for n in sizes}  # n tokens = root + n-1 nodes
    kernels = ("few-row", "plain") if uses_few_row_linear(target) else ("default",)
    times = {(k, n): [] for k in kernels for n in sizes}
    try:
        for rep in range(warmup + reps):
            for n in (sizes if rep % 2 == 0 else tuple(reversed(sizes))):
                for k in (kernels if rep % 2 == 0 else tuple(reversed(kernels))):
                    if k == "plain":
                        use_plain_linear(target)
                    _sync(device)
                    t0 = time.perf_counter()
                    verify_tree(target, cache, 0, trees[n], device, False)
                    _sync(device)
                    dt = (time.perf_counter() - t0) * 1e3
                    if k == "plain":
                        use_few_row_linear(target)
                    truncate(cache, prefix_tokens)
                    if rep >= warmup:
                        times[(k, n)].append(dt)
            if log:
                log(f"verify-cost repetition {rep + 1}/{warmup + reps}")
    finally:
        if kernels[0] == "few-row":
            use_few_row_linear(target)
    points = _points(times, kernels[0], sizes)
    if len(kernels) > 1:
        for p, q in zip(points, _points(times, "plain", sizes, base_kernel=kernels[0])):
            p["plain_median_ms"], p["plain_relative"] = q["median_ms"], q["relative"]
    meta = {"machine": note_load(machine_info(device)), "target": pair.target_name,
            "dtype": str(pair.dtype).replace("torch.", ""), "prefix_tokens": prefix_tokens, "reps": reps,
            "kernel": kernels[0]}
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
    """Interpolated forward time (ms) for a tree of `tokens` tokens (log-linear between points)."""
    pts = cost["points"]
    if tokens <= pts[0]["tokens"]:
        return pts[0]["median_ms"]
    for a, b in zip(pts, pts[1:]):
        if a["tokens"] <= tokens <= b["tokens"]:
            w = (tokens - a["tokens"]) / (b["tokens"] - a["tokens"])
            return a["median_ms"] + w * (b["median_ms"] - a["median_ms"])
    last, prev = pts[-1], pts[-2] if len(pts) > 1 else pts[-1]
    slope = (last["median_ms"] - prev["median_ms"]) / max(last["tokens"] - prev["tokens"], 1)
    return last["median_ms"] + slope * (tokens - last["tokens"])
