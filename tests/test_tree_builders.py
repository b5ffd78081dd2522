"""Tree builders on synthetic draft distributions (no model): OPT-Tree equals brute force."""

import hashlib
import itertools

import pytest
import torch

from opttree.trees.delta_rule import expected_acceptance
from opttree.trees.draft_tree import ROOT
from opttree.trees.eagle_dynamic import build_eagle_dynamic
from opttree.trees.opt_tree import build_opt_tree
from opttree.trees.static import EAGLE_25, build_static, shape_paths

VOCAB = 5


def dist(path: tuple[int, ...], sharp: float) -> torch.Tensor:
    """A fixed pseudo-random distribution over VOCAB tokens for each token path (no ties)."""
    seed = int(hashlib.sha256(repr((path, sharp)).encode()).hexdigest()[:8], 16)
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(torch.randn(VOCAB, generator=g, dtype=torch.float64) * sharp, dim=0)


def make_expand(sharp: float, calls: list | None = None):
    def expand(tree, nodes, k):
        if calls is not None:
            calls.append(list(nodes))
        rows = [dist(tuple(tree.tokens[a] for a in tree.path(n)) if n != ROOT else (), sharp) for n in nodes]
        top = torch.topk(torch.stack(rows), min(k, VOCAB), dim=-1)
        return top.indices, top.values
    return expand


def all_paths(depth: int, sharp: float):
    """Every token path up to `depth` with its p̂ (the exhaustive candidate set)."""
    out = {}
    for d in range(1, depth + 1):
        for path in itertools.product(range(VOCAB), repeat=d):
            parent_p = out[path[:-1]] if d > 1 else 1.0
            out[path] = parent_p * float(dist(path[:-1], sharp)[path[-1]])
    return out


def token_paths(tree):
    return {tuple(tree.tokens[a] for a in tree.path(i)) for i in range(len(tree))}


@pytest.mark.parametrize("nodes", [1, 3, 7, 12, 25])
@pytest.mark.parametrize("sharp", [0.5, 2.0, 4.0])
@pytest.mark.parametrize("threshold", [0.0, 0.05, 0.3])
def test_opt_tree_equals_brute_force(nodes, sharp, threshold):
    max_depth = 4
    tree, info = build_opt_tree(make_expand(sharp), nodes, threshold, max_depth)
    depth_reached = len(info["ea_by_depth"]) - 1
    cands = all_paths(depth_reached, sharp)
    best = sorted(cands, key=lambda p: -cands[p])[:nodes]
    assert token_paths(tree) == set(best)
    # connected, within budget and depth; p̂ is the product of q along parents
    assert len(tree) == min(nodes, len(cands)) and tree.max_depth <= max_depth
    for i in range(len(tree)):
        assert tree.parents[i] < i
        parent_p = 1.0 if tree.parents[i] == ROOT else tree.p_hat[tree.parents[i]]
        assert tree.p_hat[i] == pytest.approx(parent_p * tree.q[i])
    # E(A) per depth is the brute-force sum of the best n p̂ among paths up to that depth
    for d in range(1, depth_reached + 1):
        up_to_d = [v for p, v in cands.items() if len(p) <= d]
        assert info["ea_by_depth"][d] == pytest.approx(expected_acceptance(up_to_d, nodes))
    # it stopped exactly by the δ rule
    gains = [b - a for a, b in zip(info["ea_by_depth"], info["ea_by_depth"][1:])]
    assert all(g > threshold for g in gains[:-1])
    assert gains[-1] <= threshold or depth_reached == max_depth or "can have a child" in info["stop_reason"]


def test_delta_rule_controls_depth():
    deep, info_deep = build_opt_tree(make_expand(3.0), 10, 0.0, 6)
    shallow, info_shallow = build_opt_tree(make_expand(3.0), 10, 0.9, 6)
    assert len(info_deep["ea_by_depth"]) - 1 == 6 and "max depth" in info_deep["stop_reason"]
    assert len(info_shallow["ea_by_depth"]) - 1 < 6 and "δ" in info_shallow["stop_reason"]


def test_opt_tree_expands_each_layer_once_and_only_useful_nodes():
    calls = []

    def recording(tree, nodes, k):
        calls.append([tree.p_hat_of(n) for n in nodes])
        bar = sorted(tree.p_hat, reverse=True)[7] if len(tree) >= 8 else 0.0
        # every forwarded node could still place a child among the best 8 (the bar only rises)
        assert all(p > bar for p in calls[-1])
        return make_expand(2.0)(tree, nodes, k)

    tree, info = build_opt_tree(recording, 8, 0.0, 3)
    assert len(calls) == 3 and calls[0] == [1.0]
    assert all(len(c) <= 8 for c in calls) and len(calls[2]) < 8


def widths(tree):
    out = {}
    for d in tree.depth:
        out[d] = out.get(d, 0) + 1
    return [out[d] for d in sorted(out)]


def test_static_shapes():
    chain, _ = build_static(make_expand(1.0), shape_paths("chain", 60, 6), 60)
    assert widths(chain) == [1] * 6 and set(chain.rank) == {0}
    binary, _ = build_static(make_expand(1.0), shape_paths("binary", 10, 10), 10)
    assert widths(binary) == [2, 4, 4] and all(len(binary.children(i)) <= 2 for i in range(len(binary)))
    eagle, _ = build_static(make_expand(1.0), shape_paths("eagle-static", 60, 10), 60)
    assert len(EAGLE_25) == 25 and widths(eagle) == [4, 8, 8, 3, 2]
    cut, _ = build_static(make_expand(1.0), shape_paths("eagle-static", 10, 2), 10)
    assert len(cut) == 10 and cut.max_depth == 2
    for tree in (chain, binary, eagle):  # children by draft rank: rank r child = r-th best token
        for i in range(len(tree)):
            path = tuple(tree.tokens[a] for a in tree.path(tree.parents[i])) if tree.parents[i] != ROOT else ()
            order = torch.argsort(dist(path, 1.0), descending=True).tolist()
            assert tree.tokens[i] == order[tree.rank[i]]


def test_eagle_dynamic_beam_and_budget():
    calls = []
    tree, info = build_eagle_dynamic(make_expand(2.0, calls), 12, 4, top_k=2)
    assert len(calls) == 4 and all(len(c) <= 2 for c in calls)
    assert len(tree) == 12 and tree.max_depth <= 4
    assert all(tree.parents[i] < i for i in range(len(tree)))
