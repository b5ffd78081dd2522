"""EAGLE-2's dynamic draft tree (Li et al., 2024), for comparison with OPT-Tree.

Fixed depth; at each layer only the top-k nodes (by p̂) are expanded, each with its top-k children;
all k*k children are kept as candidates. The final tree is the best n candidates by p̂ (the same
global rerank as OPT-Tree; the difference is the beam width k and the fixed depth).
"""

from __future__ import annotations

from opttree.trace import BuildInfo
from opttree.trees.auto_size import Objective, StepCost
from opttree.trees.delta_rule import expected_acceptance
from opttree.trees.draft_tree import ROOT, DraftTree
from opttree.trees.growth import add_best_children


def build_eagle_dynamic(expand, nodes: int, max_depth: int, top_k: int = 10, cost: StepCost | None = None):
    """With `cost` (the auto budget) the depth stays fixed, as EAGLE-2's rule has it, and only the
    number of nodes is chosen: the n with the largest expected throughput after the last layer."""
    grown = DraftTree()
    frontier = [ROOT]
    ea = [0.0]
    objective = Objective(cost, nodes) if cost is not None else None
    draft, widths = (cost.base_ms if cost is not None else 0.0), []
    for depth in range(1, max_depth + 1):
        if objective is not None and depth > 1:
            draft += cost.layer(len(frontier))
        widths.append(len(frontier))
        tokens, q = expand(grown, frontier, top_k)
        layer = add_best_children(grown, frontier, tokens, q, keep=tokens.numel())
        ea.append(expected_acceptance(grown.p_hat, nodes))
        if objective is not None:
            objective.add_layer([grown.p_hat[i] for i in grown.ranked()], draft)
        frontier = layer[:top_k]  # already sorted by p̂
        if not frontier:
            break
    reason = f"fixed depth {max_depth}"
    if objective is None:
        return grown.best_subtree(nodes), BuildInfo(ea, reason)
    n = objective.choose_in_last_row()
    ea = grown.ea_by_depth(n, len(ea) - 1)
    return grown.best_subtree(n), BuildInfo(ea, reason, auto=objective.record(widths, "eagle-dynamic"))
