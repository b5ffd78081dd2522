"""Sequoia's tree: the DP equals brute force over every valid tree (ordered and unordered acceptance
vectors), its trees are valid rank trees, and the hardware-aware form weighs the cost curve."""

import random

import pytest
import torch

from opttree.config import DecodeConfig
from opttree.trace_file import _validate_auto
from opttree.trees.auto_size import StepCost
from opttree.trees.draft_tree import ROOT
from opttree.trees.export import check_paths
from opttree.trees.methods import build_tree
from opttree.trees.sequoia import (
    build_sequoia,
    expected_accepted,
    hardware_aware,
    layer_widths,
    optimal_tree,
    tree_value,
)


def every_tree(nodes: int, depth: int) -> list[list[tuple[int, ...]]]:
    """Every rank tree of exactly `nodes` nodes within `depth` levels (ordered forests: the first
    child takes s nodes, the later siblings the rest, ranks shifted by one)."""
    if nodes == 0:
        return [[]]
    if depth == 0:
        return []
    out = []
    for s in range(1, nodes + 1):
        for below in every_tree(s - 1, depth - 1):
            for rest in every_tree(nodes - s, depth):
                out.append([(0,)] + [(0,) + p for p in below] + [(p[0] + 1,) + p[1:] for p in rest])
    return out


def brute_force(acceptance, nodes, depth) -> float:
    return max(tree_value(acceptance, t) for t in every_tree(nodes, depth))


def greedy_tree(acceptance, nodes, depth):
    """A plausible wrong answer: add, one node at a time, the open place with the largest path weight
    (an open place: its parent and elder sibling are in the tree). Right for many vectors, not all."""
    chosen: list[tuple[int, ...]] = []
    while len(chosen) < nodes:
        have = set(chosen)
        open_ = {(0,)} | {p + (0,) for p in chosen if len(p) < depth} | {p[:-1] + (p[-1] + 1,) for p in chosen}
        chosen.append(max(open_ - have, key=lambda p: (tree_value(acceptance, [p]), -len(p))))
    return chosen


NON_MONOTONE = [(0.1, 0.9), (0.2, 0.0, 0.7), (0.3, 0.6, 0.05), (0.5, 0.1, 0.4, 0.3), (0.05, 0.05, 0.9)]
MONOTONE = [(0.8, 0.1, 0.05), (0.6, 0.2), (0.95,), (0.5, 0.3, 0.1, 0.05)]


def test_every_tree_enumerates_plane_forests():
    # Catalan numbers count ordered forests of n nodes; within depth 1 there is one (a fan).
    assert [len(every_tree(n, 10)) for n in range(7)] == [1, 1, 2, 5, 14, 42, 132]
    assert len(every_tree(5, 1)) == 1


@pytest.mark.parametrize("acceptance", NON_MONOTONE + MONOTONE)
@pytest.mark.parametrize("nodes,depth", [(1, 1), (3, 2), (4, 4), (5, 2), (6, 3), (7, 4)])
def test_dp_equals_brute_force(acceptance, nodes, depth):
    best = brute_force(acceptance, nodes, depth)
    paths = optimal_tree(list(acceptance), nodes, depth)
    assert tree_value(acceptance, paths) == pytest.approx(best, abs=1e-12)
    assert expected_accepted(acceptance, nodes, depth) == pytest.approx(best, abs=1e-12)


def test_dp_equals_brute_force_on_random_vectors():
    rng = random.Random(7)
    for _ in range(120):
        a = [rng.random() for _ in range(rng.randint(1, 5))]
        nodes, depth = rng.randint(0, 7), rng.randint(1, 5)
        assert tree_value(a, optimal_tree(a, nodes, depth)) == pytest.approx(brute_force(a, nodes, depth), abs=1e-12)


def test_a_greedy_tree_would_fail_the_brute_force_check():
    """The cases above tell a greedy heap from the DP: it misses the optimum on some of them."""
    worse = [(a, n, d) for a in NON_MONOTONE + MONOTONE for n, d in [(3, 2), (5, 2), (6, 3), (7, 4)]
             if tree_value(a, greedy_tree(a, n, d)) < brute_force(a, n, d) - 1e-9]
    assert worse, "the brute-force cases cannot tell a greedy tree from the optimum"


@pytest.mark.parametrize("acceptance", NON_MONOTONE + MONOTONE)
def test_trees_are_valid_rank_trees_in_level_order(acceptance):
    for nodes in (1, 5, 25, 60):
        for depth in (1, 3, 10):
            paths = optimal_tree(acceptance, nodes, depth)
            assert len(paths) == nodes and check_paths(paths) == paths    # prefix- and sibling-closed, level order
            assert max(len(p) for p in paths) <= depth
            for cut in range(nodes + 1):                                   # every cut is a connected tree
                check_paths(paths[:cut])


def test_ranks_past_the_vector_count_zero_and_a_non_monotone_vector_keeps_elder_siblings():
    assert tree_value([0.5], [(0,), (1,), (0, 0)]) == pytest.approx(0.75)
    # Rank 1 is worth most, but it needs rank 0 beside it: two nodes give (0,), (1,).
    assert optimal_tree([0.1, 0.9], 2, 3) == [(0,), (1,)]
    assert tree_value([0.1, 0.9], [(0,), (1,)]) == pytest.approx(1.0)
    assert optimal_tree([0.1, 0.9], 4, 2) == [(0,), (1,), (1, 0), (1, 1)]


def test_a_chain_wins_when_only_the_top_choice_is_ever_accepted():
    assert optimal_tree([0.9], 5, 10) == [(0,) * d for d in range(1, 6)]


def test_bad_vectors_are_refused():
    for bad in ([1.5], [-0.1], [float("nan")], "abc"):
        with pytest.raises(ValueError):
            optimal_tree(bad, 3, 2)


def test_hardware_aware_follows_the_cost_curve():
    a = (0.7, 0.15, 0.05)
    flat = hardware_aware(a, StepCost.flat(10.0), 30, 6)
    steep = hardware_aware(a, StepCost((1, 2, 31), (10.0, 20.0, 310.0)), 30, 6)
    assert len(flat.paths) > len(steep.paths) >= 1
    # Free drafting and a flat verify: the largest expected acceptance wins (fewest nodes on ties).
    assert tree_value(a, flat.paths) == pytest.approx(expected_accepted(a, 30, 6))
    for pick in (flat, steep):
        _validate_auto("step 0", pick.record)
        d, n = pick.record["chosen_depth"], pick.record["chosen_nodes"]
        assert n == len(pick.paths) and max(len(p) for p in pick.paths) <= d
        best = max(max(row) for row in pick.record["objective"])
        assert pick.record["objective"][d - 1][n - 1] == pytest.approx(best)


def test_drafting_cost_prices_each_layer_by_its_width():
    paths = [(0,), (1,), (0, 0), (0, 1), (1, 0), (0, 0, 0)]
    assert layer_widths(paths) == [1, 2, 1]
    a = (0.6, 0.3)
    cheap = hardware_aware(a, StepCost((1, 64), (10.0, 10.0), (1, 64), (0.0, 0.0)), 20, 8)
    dear = hardware_aware(a, StepCost((1, 64), (10.0, 10.0), (1, 64), (50.0, 50.0)), 20, 8)
    assert max(len(p) for p in dear.paths) < max(len(p) for p in cheap.paths)


VOCAB = 6


def expand(tree, nodes, k):
    """Deterministic draft rows: node-dependent tokens, q decreasing by rank."""
    q = torch.tensor([0.5, 0.2, 0.1, 0.08, 0.07, 0.05], dtype=torch.float64)[:k]
    rows = []
    for n in nodes:
        seed = 0 if n == ROOT else tree.tokens[n] + 7 * tree.depth[n]
        rows.append(torch.roll(torch.arange(VOCAB), seed % VOCAB)[:k])
    return torch.stack(rows), q.expand(len(nodes), -1)


def rank_paths(tree):
    out = []
    for parent, rank in zip(tree.parents, tree.rank):
        out.append((out[parent] if parent != ROOT else ()) + (rank,))
    return out


def test_the_builder_grows_exactly_the_optimal_tree():
    a = [0.3, 0.6, 0.05]
    tree, info = build_sequoia(expand, a, 9, 4)
    assert rank_paths(tree) == optimal_tree(a, 9, 4)
    assert "Sequoia" in info.stop_reason and info.auto is None
    # Its expected accepted length is under the acceptance vector, not E(A)'s p̂: the reason says which.
    assert f"{tree_value(a, optimal_tree(a, 9, 4)):.2f} draft tokens expected to be accepted under that vector" \
        in info.stop_reason and "p̂" in info.stop_reason
    cfg = DecodeConfig(method="sequoia", nodes=9, max_depth=4)
    tree2, _ = build_tree(expand, cfg, acceptance=a)
    assert rank_paths(tree2) == rank_paths(tree)
    auto, info = build_tree(expand, DecodeConfig(method="sequoia", nodes=0, max_depth=4), StepCost.flat(), a)
    assert info.auto["rule"] == "sequoia" and len(auto) == info.auto["chosen_nodes"]
