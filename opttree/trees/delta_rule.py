"""The δ stopping rule of OPT-Tree.

E(A), the expected number of accepted draft tokens of a tree, is the sum of p̂ over its nodes
(each node is accepted exactly when its whole path is). With a budget of n nodes the best tree
found so far has E = the sum of the n largest p̂ among all candidates explored. Each extra layer
costs a draft forward, so the tree only deepens while that E still grows by more than δ.
"""

from __future__ import annotations

import heapq


def expected_acceptance(p_hats: list[float], n: int) -> float:
    """E(A) of the best n-node tree among these candidates: the sum of the n largest p̂."""
    return float(sum(heapq.nlargest(n, p_hats)))


def depth_reached(max_depth: int) -> str:
    """The stop reason of a tree that grew to its maximum depth (every builder words it so; the engine
    reads it to say when that depth was a length controller's choice)."""
    return f"reached max depth {max_depth}"


def stop_reason(ea_by_depth: list[float], threshold: float, depth: int, max_depth: int) -> str | None:
    """Why growth stops after `depth` layers, or None to deepen.

    `ea_by_depth[d]` is E after d layers (ea_by_depth[0] = 0 for the empty tree).
    """
    gain = ea_by_depth[depth] - ea_by_depth[depth - 1]
    if gain <= threshold:
        return f"E(A) grew by {gain:.3f} <= δ={threshold:g} at depth {depth}"
    if depth >= max_depth:
        return depth_reached(max_depth)
    return None
