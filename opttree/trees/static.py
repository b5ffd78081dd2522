"""Static draft trees: the same shape every step, children picked by draft rank.

A shape is a list of rank paths with every parent before its children: (0,) is the root's most
likely child, (0, 1) that child's second most likely child, and so on. Cutting such a list at any
length leaves a connected tree, which is how the node budget and max depth are applied.
"""

from __future__ import annotations

import heapq

from opttree.trace import BuildInfo
from opttree.trees.auto_size import Objective, StepCost
from opttree.trees.delta_rule import expected_acceptance
from opttree.trees.draft_tree import ROOT, DraftTree

# EAGLE-1's default tree (`mc_sim_7b_63` in SafeAILab/EAGLE's model/choices.py, 25 nodes despite the name),
# the "EAGLE tree" OPT-Tree is compared with: widths 4/8/8/3/2 by depth, most of it under rank 0.
EAGLE_25 = [
    (0,), (1,), (2,), (3,),
    (0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (2, 0), (2, 1), (3, 0),
    (0, 0, 0), (0, 0, 1), (0, 0, 2), (0, 1, 0), (0, 1, 1), (0, 2, 0), (0, 2, 1), (1, 0, 0),
    (0, 0, 0, 0), (0, 0, 0, 1), (0, 0, 0, 2),
    (0, 0, 0, 0, 0), (0, 0, 0, 0, 1),
]

STATIC_SHAPE = "static shape"     # the stop reason of a static tree grown whole (the engine reads it)


# Token Recycling's template (our own, in the spirit of the paper's fixed ~80-node tree): the 80 rank
# paths with the largest prior weight, where a path's weight is the product over its ranks of
# TR_RANK_PRIOR (a fixed guess at how often the candidate of each rank is the target's choice; ranks
# 0..7, the table keeps 8 candidates per token). Listed best first, so the node budget keeps the n
# best paths of that prior: widths by depth 8/20/19/19/6/7/1 at n = 80, most of it under rank 0.
TR_RANK_PRIOR = (0.55, 0.18, 0.09, 0.06, 0.04, 0.03, 0.025, 0.02)
TR_NODES, TR_MAX_DEPTH = 80, 10


def prior_paths(prior: tuple[float, ...], count: int, max_depth: int) -> list[tuple[int, ...]]:
    """The `count` rank paths with the largest product of `prior` over their ranks, best first
    (ties: the lexicographically smaller path). Every prior value is below 1, so a path always
    comes after its parent."""
    out: list[tuple[int, ...]] = []
    heap = [(-w, (r,)) for r, w in enumerate(prior)]
    heapq.heapify(heap)
    while heap and len(out) < count:
        neg, path = heapq.heappop(heap)
        out.append(path)
        if len(path) < max_depth:
            for r, w in enumerate(prior):
                heapq.heappush(heap, (neg * w, path + (r,)))
    return out


TR_STATIC = prior_paths(TR_RANK_PRIOR, TR_NODES, TR_MAX_DEPTH)


def chain_paths(depth: int) -> list[tuple[int, ...]]:
    return [(0,) * d for d in range(1, depth + 1)]


def kary_paths(k: int, nodes: int, max_depth: int) -> list[tuple[int, ...]]:
    """A complete k-ary tree filled breadth-first up to `nodes` nodes and `max_depth` levels."""
    out, layer = [], [()]
    while len(out) < nodes and layer and len(layer[0]) < max_depth:
        layer = [p + (r,) for p in layer for r in range(k)]
        out.extend(layer)
    return out[:nodes]


def shape_paths(method: str, nodes: int, max_depth: int) -> list[tuple[int, ...]]:
    if method == "chain":
        return chain_paths(min(nodes, max_depth))
    if method == "binary":
        return kary_paths(2, nodes, max_depth)
    if method == "eagle-static":
        return [p for p in EAGLE_25 if len(p) <= max_depth][:nodes]
    if method == "tr-static":
        return [p for p in TR_STATIC if len(p) <= max_depth][:nodes]
    raise ValueError(f"unknown static tree {method!r}")


def build_static(expand, paths: list[tuple[int, ...]], nodes: int, cost: StepCost | None = None):
    """Grow the given shape: one `expand` per depth over the nodes that have children there.

    With `cost` (the auto budget) the shape is cut where the expected throughput is largest: after
    each depth the objective table gets a row over the shape's breadth-first prefixes, drafting
    stops at the first depth that does not raise it, and the tree is the best prefix."""
    tree = DraftTree()
    node_of = {(): ROOT}
    ea = [0.0]
    objective = Objective(cost, nodes) if cost is not None else None
    draft, widths = (cost.base_ms if cost is not None else 0.0), []
    reason = STATIC_SHAPE
    for depth in range(1, max((len(p) for p in paths), default=0) + 1):
        layer = [p for p in paths if len(p) == depth and p[:-1] in node_of]
        if not layer:
            break
        parents = sorted({p[:-1] for p in layer}, key=lambda p: node_of[p])
        width = max(p[-1] for p in layer) + 1
        if objective is not None and depth > 1:
            draft += cost.layer(len(parents))
        widths.append(len(parents))
        tokens, q = expand(tree, [node_of[p] for p in parents], width)
        row = {p: i for i, p in enumerate(parents)}
        for p in layer:
            r, rank = row[p[:-1]], p[-1]
            if rank < q.shape[1] and float(q[r, rank]) > 0.0:
                node_of[p] = tree.add(node_of[p[:-1]], int(tokens[r, rank]), float(q[r, rank]), rank)
        ea.append(expected_acceptance(tree.p_hat, nodes))
        # Node ids are breadth-first, so the n-node candidate is the first n nodes.
        if objective is not None and not objective.add_layer(list(tree.p_hat), draft):
            reason = f"static shape, cut: depth {depth} did not raise the best expected throughput"
            break
    if objective is None:
        return tree.subset(list(range(len(tree)))), BuildInfo(ea, reason)
    depth, n = objective.chosen
    ea = [0.0] + [sum(tree.p_hat[:n][: sum(1 for x in tree.depth if x <= d)]) for d in range(1, len(ea))]
    return tree.subset(list(range(n))), BuildInfo(ea, reason, auto=objective.record(widths, "static"))
