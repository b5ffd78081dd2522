"""EAGLE-2's dynamic draft tree (Li et al., 2024), for comparison with OPT-Tree.

Fixed depth; at each layer only the top-k nodes (by p̂) are expanded, each with its top-k children;
all k*k children are kept as candidates. The final tree is the best n candidates by p̂ (the same
global rerank as OPT-Tree; the difference is the beam width k and the fixed depth).
"""

from __future__ import annotations

from opttree.trees.delta_rule import expected_acceptance
from opttree.trees.draft_tree import ROOT, DraftTree
from opttree.trees.growth import add_best_children


def build_eagle_dynamic(expand, nodes: int, max_depth: int, top_k: int = 10):
    grown = DraftTree()
    frontier = [ROOT]
    ea = [0.0]
    for _ in range(max_depth):
        tokens, q = expand(grown, frontier, top_k)
        layer = add_best_children(grown, frontier, tokens, q, keep=tokens.numel())
        ea.append(expected_acceptance(grown.p_hat, nodes))
        frontier = layer[:top_k]  # already sorted by p̂
        if not frontier:
            break
    return grown.best_subtree(nodes), {"ea_by_depth": ea, "stop_reason": f"fixed depth {max_depth}"}
