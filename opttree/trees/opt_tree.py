"""OPT-Tree (Wang et al., TACL 2025): the adaptive draft tree that maximises E(A) for n nodes.

Layer by layer: every node of the current layer proposes its top-n children; the n candidates with
the largest p̂ become the next layer (no better n-node tree can use any other node of that depth).
Deepen while the δ rule allows; the final tree is the best n nodes by p̂ over all layers.

One exact shortcut: a node whose p̂ is already below the n-th best p̂ found so far can never have a
child in the final tree (p̂ only shrinks along a path and the bar only rises), so it is not
forwarded. The tree and E(A) are unchanged; deep layers get much cheaper to draft.
"""

from __future__ import annotations

import heapq

from opttree.trees.delta_rule import expected_acceptance, stop_reason
from opttree.trees.draft_tree import ROOT, DraftTree
from opttree.trees.growth import add_best_children


def build_opt_tree(expand, nodes: int, threshold: float, max_depth: int):
    """`expand(tree, node_ids, k)` -> (tokens (m, k), probs (m, k)), the top-k children per node.

    Returns (final tree, info) with info["ea_by_depth"] (E after each layer, starting at 0 for the
    empty tree) and info["stop_reason"].
    """
    grown = DraftTree()
    frontier = [ROOT]
    ea = [0.0]
    reason = "no candidates left"
    for depth in range(1, max_depth + 1):
        tokens, q = expand(grown, frontier, nodes)
        layer = add_best_children(grown, frontier, tokens, q, keep=nodes)
        ea.append(expected_acceptance(grown.p_hat, nodes))
        reason = stop_reason(ea, threshold, depth, max_depth)
        if reason:
            break
        bar = heapq.nlargest(nodes, grown.p_hat)[-1] if len(grown) >= nodes else 0.0
        frontier = [i for i in layer if grown.p_hat[i] > bar]
        if not frontier:
            reason = f"no node of depth {depth} can have a child among the best {nodes}"
            break
    return grown.best_subtree(nodes), {"ea_by_depth": ea, "stop_reason": reason}
