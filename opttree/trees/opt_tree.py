"""OPT-Tree (Wang et al., TACL 2025): the adaptive draft tree that maximises E(A) for n nodes.

Layer by layer: every node of the current layer proposes its top-n children; the n candidates with
the largest p̂ become the next layer (no better n-node tree can use any other node of that depth).
Deepen while the δ rule allows; the final tree is the best n nodes by p̂ over all layers.

One exact shortcut: a node whose p̂ is already below the n-th best p̂ found so far can never have a
child in the final tree (p̂ only shrinks along a path and the bar only rises), so it is not
forwarded. The tree and E(A) are unchanged; deep layers get much cheaper to draft.

`build_opt_tree_auto` grows the same layer-wise candidates but chooses the depth and the node count
from the machine's cost curve (auto_size.py) instead of a fixed n and δ.
"""

from __future__ import annotations

import heapq

from opttree.trace import BuildInfo
from opttree.trees.auto_size import Objective, StepCost, kept_share, layer_masses
from opttree.trees.delta_rule import depth_reached, expected_acceptance, stop_reason
from opttree.trees.draft_tree import ROOT, DraftTree
from opttree.trees.growth import add_best_children


def build_opt_tree(expand, nodes: int, threshold: float, max_depth: int):
    """`expand(tree, node_ids, k)` -> (tokens (m, k), probs (m, k)), the top-k children per node.

    Returns (final tree, BuildInfo) with its ea_by_depth (E after each layer, starting at 0 for the
    empty tree) and stop_reason.
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
    return grown.best_subtree(nodes), BuildInfo(ea, reason)


def build_opt_tree_auto(expand, cost: StepCost, max_nodes: int, max_depth: int):
    """OPT-Tree whose depth and size maximise the expected throughput J(d, n) (auto_size.py).

    Layer by layer as above; after each layer the objective table gets a row (J for every n up to
    the beam, from the best-n candidates so far and the modelled draft time). Growth stops at the
    first layer that does not raise the best J (the δ rule's greedy stop, with the layer priced by
    the cost curve), at max depth, or when the next layer is not expected to make any n the best
    (its children expected to keep the share of p̂ this layer's best children kept). The beam
    starts at the ceiling and only narrows: the next layer's frontier holds the nodes an n still
    in play could use (as in OPT-Tree at budget n), so every row is exact for the n it lists. The
    tree is the table's argmax: the best n nodes of depth ≤ d.

    Returns (tree, BuildInfo) whose `auto` holds the table (auto_size.Objective.record)."""
    grown = DraftTree()
    frontier = [ROOT]
    objective = Objective(cost, max_nodes)
    beam, draft, widths = max_nodes, cost.base_ms, []
    reason = "no candidates left"
    for depth in range(1, max_depth + 1):
        if depth > 1:                       # the root's children come with begin_step: no layer to pay
            draft += cost.layer(len(frontier))
        widths.append(len(frontier))
        tokens, q = expand(grown, frontier, beam)
        layer = add_best_children(grown, frontier, tokens, q, keep=beam)
        order = grown.ranked()[:beam]
        p = [grown.p_hat[i] for i in order]
        if not objective.add_layer(p, draft):
            reason = f"layer {depth} did not raise the best expected throughput"
            break
        if depth >= max_depth:
            reason = depth_reached(max_depth)
            break
        masses = layer_masses(order, grown.depth, grown.p_hat, depth)
        beam = min(beam, objective.still_in_play(p, masses, kept_share(grown, layer)))
        bar = p[beam - 1] if 0 < beam <= len(p) else 0.0
        frontier = [i for i in layer if grown.p_hat[i] > bar] if beam else []
        if not frontier:
            reason = f"the next layer could not beat {objective.best[0]:.1f} tokens/s"
            break
    depth, n = objective.chosen
    ea = grown.ea_by_depth(n, len(objective.rows))
    return grown.best_subtree(n, depth), BuildInfo(ea, reason, auto=objective.record(widths, "opt-tree"))
