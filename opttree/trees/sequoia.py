"""Sequoia's tree (Chen et al., 2024): the static tree of n nodes that maximises the expected number
of accepted draft tokens under a positional acceptance vector, found by dynamic programming.

A static tree is a list of rank paths (trees/static.py): (0,) is the root's most likely child,
(0, 1) that child's second most likely child. A node of rank r sits only beside its elder siblings
of ranks 0..r-1, so the ranks under any parent are always a prefix 0..c-1.

The positional acceptance vector `a` says how likely a child of each rank is to be accepted once
its parent was: a[r] = P(the parent's rank-r child is accepted | the parent was accepted), ranks at
or beyond len(a) counting 0 (train/acceptance.py measures it per draft and the card stores it). A
node is accepted exactly when its whole path is, so the expected number of accepted draft tokens is

    f(tree) = Σ over nodes of Π over the ranks on the node's path of a[rank].

At most one child of an accepted node is accepted (the target picks one token), so Σ_r a[r] ≤ 1
for a measured vector; the DP itself is exact for any vector in [0, 1], ordered or not.

The dynamic programme. Let T[d][m] be the best value of m nodes hung below one node within d
levels, and G[d][j][m] the best value of m nodes hung below it as its children of ranks j, j+1, …
(rank j first: the ranks stay a prefix). A child of rank j that carries s of the m nodes (itself
and s - 1 below it) is worth a[j] · (1 + T[d-1][s-1]), so

    G[d][j][0] = 0,   G[d][j][m] = max over s = 1..m of a[j] · (1 + T[d-1][s-1]) + G[d][j+1][m-s],
    T[d][m] = G[d][0][m],  T[0][m] = impossible for m > 0,

and for j ≥ len(a) every node is worth 0 (they hang as leaves of ranks j, j+1, …). The optimum
for n nodes within max depth D is T[D][n]; the choices of s rebuild the tree. Cost:
O(D · len(a) · n²) with numpy doing the inner maximum; each (vector, n, D) is solved once.

The hardware-aware form picks the size and depth as the auto budget does (auto_size.py): the
tree maximising (T[d][n] + 1) / (draft time of its layers + verify time of n + 1 tokens) over
n ≤ the ceiling and d ≤ max depth, drafting priced per layer from the measured cost curve.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from opttree.trace import counted
from opttree.trees.auto_size import StepCost, throughput
from opttree.trees.static import TR_RANK_PRIOR, build_static

Path = tuple[int, ...]

# A draft without a measured vector in its card (a hub draft, the tiny test models, the training-free
# drafters) uses Token Recycling's fixed guess at how often each rank is the target's choice.
DEFAULT_ACCEPTANCE: tuple[float, ...] = TR_RANK_PRIOR


def check_acceptance(acceptance) -> tuple[float, ...]:
    """The vector as a tuple of floats in [0, 1] (trailing zeros dropped), or ValueError."""
    try:
        values = [float(x) for x in acceptance]
    except (TypeError, ValueError):
        raise ValueError(f"an acceptance vector is a list of numbers, got {acceptance!r}") from None
    if not all(math.isfinite(x) and 0.0 <= x <= 1.0 for x in values):
        raise ValueError(f"acceptance rates must lie in [0, 1], got {values}")
    while values and values[-1] == 0.0:
        values.pop()
    return tuple(values)


def tree_value(acceptance, paths) -> float:
    """f(tree): Σ over the paths of the product of acceptance[rank] along each (0 past the vector)."""
    a = check_acceptance(acceptance)
    total = 0.0
    for path in paths:
        total += math.prod(a[r] if r < len(a) else 0.0 for r in path)
    return total


@dataclass(frozen=True)
class Tables:
    """The DP's tables for one vector up to `nodes` nodes and `depth` levels: values[d][m] = T[d][m];
    choice[d][j][m] = the s that rank j takes in G[d][j][m] (0 where unused)."""

    acceptance: tuple[float, ...]
    values: tuple[tuple[float, ...], ...]
    choice: tuple[tuple[tuple[int, ...], ...], ...]


@functools.lru_cache(maxsize=64)
def solve(acceptance: tuple[float, ...], nodes: int, depth: int) -> Tables:
    """The DP over every size up to `nodes` and every depth up to `depth` (cached per vector)."""
    a = check_acceptance(acceptance)
    width = min(len(a), nodes)
    size = nodes + 1
    values = [np.zeros(size)]                   # T[0]: only m = 0 is possible (value 0)
    choice = [()]
    s = np.arange(size)
    m = np.arange(size)
    gap = m[:, None] - s[None, :]                # m - s for every (m, s)
    usable = (gap >= 0) & (s[None, :] >= 1)
    for d in range(1, depth + 1):
        below = values[d - 1]
        feasible = s >= 1 if d > 1 else s == 1  # a child with s - 1 nodes below needs d - 1 ≥ 1 levels
        g_next = np.zeros(size)                 # G[d][width][·]: ranks past the vector are worth 0
        ranks = []
        for j in range(width - 1, -1, -1):
            child = np.where(feasible, a[j] * (1.0 + below[np.maximum(s - 1, 0)]), -np.inf)
            total = np.where(usable, child[None, :] + g_next[np.clip(gap, 0, None)], -np.inf)
            best_s = np.argmax(total, axis=1)     # ties: the fewest nodes under rank j (a wider tree)
            g = total[m, best_s]
            g[0], best_s[0] = 0.0, 0
            ranks.append(tuple(int(x) for x in best_s))
            g_next = g
        values.append(g_next)
        choice.append(tuple(reversed(ranks)))
    return Tables(a, tuple(tuple(float(x) for x in v) for v in values), tuple(choice))


def _paths(tables: Tables, prefix: Path, depth: int, count: int, out: list[Path]) -> None:
    """Append the `count` nodes the DP hangs below `prefix` within `depth` levels."""
    j = 0
    ranks = tables.choice[depth]
    while count > 0:
        if j >= len(ranks):                       # worth 0 from here: leaves of the next ranks
            out.extend(prefix + (r,) for r in range(j, j + count))
            return
        s = ranks[j][count]
        out.append(prefix + (j,))
        _paths(tables, prefix + (j,), depth - 1, s - 1, out)
        count -= s
        j += 1


def level_order(paths) -> list[Path]:
    """Breadth-first, ranks ascending: every cut of the list is a connected tree (as vLLM sorts them)."""
    return sorted((tuple(p) for p in paths), key=lambda p: (len(p), p))


def optimal_tree(acceptance: list[float], nodes: int, max_depth: int) -> list[Path]:
    """Sequoia's tree: exactly `nodes` rank paths of depth ≤ `max_depth` maximising `tree_value`,
    in level order (breadth-first, ranks ascending)."""
    if nodes < 0 or max_depth < 1:
        raise ValueError(f"need nodes ≥ 0 and max_depth ≥ 1, got {nodes} and {max_depth}")
    tables = solve(check_acceptance(acceptance), nodes, max_depth)
    out: list[Path] = []
    _paths(tables, (), max_depth, nodes, out)
    return level_order(out)


def expected_accepted(acceptance, nodes: int, max_depth: int) -> float:
    """T[max_depth][nodes]: the expected accepted draft tokens of Sequoia's tree."""
    return solve(check_acceptance(acceptance), nodes, max_depth).values[max_depth][nodes]


def layer_widths(paths) -> list[int]:
    """For each depth d ≥ 1: how many nodes of depth d - 1 (the root for d = 1) have children there,
    the width of the draft layer that grows depth d."""
    depth = max((len(p) for p in paths), default=0)
    return [len({p[:-1] for p in paths if len(p) == d}) for d in range(1, depth + 1)]


def draft_ms(cost: StepCost, paths) -> float:
    """The modelled drafting of a static tree: the per-step base (which grows depth 1) plus one draft
    layer for each deeper depth, at its width (as trees/static.build_static prices a shape)."""
    return cost.base_ms + sum(cost.layer(w) for w in layer_widths(paths)[1:])


@dataclass(frozen=True)
class Choice:
    """The hardware-aware pick: the tree and the auto budget's record of the objective."""

    paths: tuple[Path, ...]
    record: dict


@functools.lru_cache(maxsize=64)
def hardware_aware(acceptance: tuple[float, ...], cost: StepCost, max_nodes: int, max_depth: int) -> Choice:
    """The Sequoia tree of the size and depth with the largest expected tokens per second,
    J(d, n) = (T[d][n] + 1) / (drafting of that tree + verify(n + 1)) (ties: fewer layers, then fewer
    nodes). The record has the auto budget's layout (auto_size.Objective.record): one row of J per
    depth, and the chosen size's drafting at each depth."""
    tables = solve(check_acceptance(acceptance), max_nodes, max_depth)
    verify = cost.verify_table(max_nodes + 1)
    rows, best = [], (-math.inf, 0, 0)
    for d in range(1, max_depth + 1):
        row = []
        for n in range(1, max_nodes + 1):
            out: list[Path] = []
            _paths(tables, (), d, n, out)
            j = throughput(tables.values[d][n], draft_ms(cost, out), verify[n + 1])
            row.append(j)
            if j > best[0] + 1e-9:
                best = (j, d, n)
        rows.append(row)
    j, d, n = best
    chosen = optimal_tree(tables.acceptance, n, d)
    widths = layer_widths(chosen)
    drafting = [round(draft_ms(cost, [p for p in chosen if len(p) <= k]), 3) for k in range(1, max_depth + 1)]
    record = {"rule": "sequoia", "objective": [[round(x, 3) for x in row] for row in rows],
              "draft_model_ms": drafting, "widths": widths, "chosen_depth": d, "chosen_nodes": n,
              "chosen_tokens_per_s": round(j, 3)}
    return Choice(tuple(chosen), record)


def build_sequoia(expand, acceptance, nodes: int, max_depth: int, cost: StepCost | None = None,
                  shape_depth: int | None = None):
    """Grow Sequoia's tree for this vector with the static builder: n nodes at a fixed budget, or
    with `cost` (the auto budget) the size and depth `hardware_aware` picks up to `nodes`. With
    `shape_depth` the tree is the one for that depth, cut at `max_depth` (few tokens left): the same
    tree as every other step, shorter, not a new optimum for the lower depth."""
    a = check_acceptance(acceptance)
    built_for = max(shape_depth or max_depth, max_depth)
    if cost is None:
        paths, record = optimal_tree(a, nodes, built_for), None
    else:
        pick = hardware_aware(a, cost, nodes, built_for)
        paths, record = list(pick.paths), dict(pick.record)
    paths = [p for p in paths if len(p) <= max_depth]
    tree, info = build_static(expand, paths, len(paths))
    depth = max((len(p) for p in paths), default=0)
    info.stop_reason = (f"Sequoia's tree for this draft's acceptance vector: {counted(len(paths), 'node')} over "
                        f"{counted(depth, 'layer')}, {tree_value(a, paths):.2f} draft tokens expected to be accepted "
                        "under that vector (E(A) reads the draft's p̂ instead)")
    info.auto = record
    return tree, info
