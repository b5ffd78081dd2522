"""Tree builders on synthetic draft distributions (no model): OPT-Tree equals brute force."""

import hashlib
import itertools
import random

import pytest
import torch

from opttree.trees.auto_size import StepCost
from opttree.trees.delta_rule import expected_acceptance
from opttree.trees.draft_tree import ROOT
from opttree.trees.eagle_dynamic import build_eagle_dynamic
from opttree.trees.opt_tree import build_opt_tree, build_opt_tree_auto
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
    depth_reached = len(info.ea_by_depth) - 1
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
        assert info.ea_by_depth[d] == pytest.approx(expected_acceptance(up_to_d, nodes))
    # it stopped exactly by the δ rule
    gains = [b - a for a, b in zip(info.ea_by_depth, info.ea_by_depth[1:])]
    assert all(g > threshold for g in gains[:-1])
    assert gains[-1] <= threshold or depth_reached == max_depth or "can have a child" in info.stop_reason


def test_delta_rule_controls_depth():
    deep, info_deep = build_opt_tree(make_expand(3.0), 10, 0.0, 6)
    shallow, info_shallow = build_opt_tree(make_expand(3.0), 10, 0.9, 6)
    assert len(info_deep.ea_by_depth) - 1 == 6 and "max depth" in info_deep.stop_reason
    assert len(info_shallow.ea_by_depth) - 1 < 6 and "δ" in info_shallow.stop_reason


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


def test_eagle_static_is_eagles_published_25_node_tree():
    """EAGLE-25 is EAGLE-1's default tree, `mc_sim_7b_63` in SafeAILab/EAGLE's model/choices.py (the
    "EAGLE tree" OPT-Tree is compared with at 25 nodes), in its own level order."""
    assert EAGLE_25 == [
        (0,), (1,), (2,), (3,),
        (0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (2, 0), (2, 1), (3, 0),
        (0, 0, 0), (0, 0, 1), (0, 0, 2), (0, 1, 0), (0, 1, 1), (0, 2, 0), (0, 2, 1), (1, 0, 0),
        (0, 0, 0, 0), (0, 0, 0, 1), (0, 0, 0, 2),
        (0, 0, 0, 0, 0), (0, 0, 0, 0, 1),
    ]


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


# ---------------------------------------------------------------- the auto budget (trees/auto_size.py)

FLAT = StepCost.flat(10.0)
# Verification flat up to 8 tokens, then linear: a CPU-like curve; drafting a layer costs 1-3 ms.
CPU_LIKE = StepCost((1, 8, 16, 64), (10.0, 10.0, 20.0, 80.0), (1, 8, 64), (1.0, 1.0, 3.0), base_ms=0.5)
STEEP = StepCost((1, 2), (10.0, 20.0))        # every extra token costs a whole forward
RISING = StepCost((1, 4, 32), (5.0, 6.0, 30.0), (1, 32), (2.0, 9.0), 1.0)


@pytest.mark.parametrize("nodes", [3, 7, 12, 25])
@pytest.mark.parametrize("sharp", [0.5, 2.0, 4.0])
def test_auto_with_flat_cost_and_free_drafting_is_the_papers_tree(nodes, sharp):
    """A flat verify cost and free drafting: the whole budget, deepened while E(A) grows (δ = 0)."""
    paper, paper_info = build_opt_tree(make_expand(sharp), nodes, 0.0, 4)
    auto, info = build_opt_tree_auto(make_expand(sharp), FLAT, nodes, 4)
    assert token_paths(auto) == token_paths(paper) and len(auto) == len(paper)
    assert info.auto["chosen_nodes"] == len(paper)
    assert len(info.auto["objective"]) in (len(paper_info.ea_by_depth) - 1, len(paper_info.ea_by_depth))


@pytest.mark.parametrize("sharp", [0.5, 2.0, 4.0])
def test_auto_with_steep_cost_grows_small_trees(sharp):
    flat, _ = build_opt_tree_auto(make_expand(sharp), FLAT, 25, 4)
    steep, info = build_opt_tree_auto(make_expand(sharp), STEEP, 25, 4)
    assert len(steep) <= 2 < len(flat)
    cpu, cpu_info = build_opt_tree_auto(make_expand(sharp), CPU_LIKE, 25, 4)
    assert len(cpu) <= 7 < len(flat)             # past 8 tokens a node must pay for a rising forward


@pytest.mark.parametrize("cost", [FLAT, CPU_LIKE, STEEP, RISING])
@pytest.mark.parametrize("sharp", [0.5, 2.0, 4.0])
def test_auto_picks_the_true_argmax_of_the_objective(cost, sharp):
    """Every objective entry is J(d, n) = (E + 1) / (draft + verify) with E brute-forced over all token
    paths of depth ≤ d, and the tree is the argmax: the best n paths of depth ≤ d."""
    nodes, max_depth = 12, 4
    calls = []
    tree, info = build_opt_tree_auto(make_expand(sharp, calls), cost, nodes, max_depth)
    auto = info.auto
    rows, draft = auto["objective"], auto["draft_model_ms"]
    assert len(rows) == len(calls) and [len(c) for c in calls] == auto["widths"]
    # the modelled draft time: the base, plus one measured layer per forwarded layer (the root's is free)
    assert draft == pytest.approx([cost.base_ms + sum(cost.layer(w) for w in auto["widths"][1:d])
                                   for d in range(1, len(rows) + 1)], abs=1e-3)
    cands = all_paths(len(rows), sharp)
    best, where = -1.0, None
    for d, row in enumerate(rows, 1):
        ranked = sorted((v for p, v in cands.items() if len(p) <= d), reverse=True)
        for n, j in enumerate(row, 1):
            want = (sum(ranked[:n]) + 1) * 1000 / (draft[d - 1] + cost.verify(n + 1))
            assert j == pytest.approx(want, rel=1e-3, abs=1e-3)
            if want > best + 1e-9:
                best, where = want, (d, n)
    assert (auto["chosen_depth"], auto["chosen_nodes"]) == where
    d, n = where
    top = sorted((p for p in cands if len(p) <= d), key=lambda p: -cands[p])[:n]
    assert token_paths(tree) == set(top)
    # greedy growth: every layer but the last raised the best J
    peaks = [max(r) for r in rows]
    assert all(b > a for a, b in zip(peaks, peaks[1:-1]))


def test_auto_needs_a_cost_curve_and_other_methods_cut_their_own_trees():
    from opttree.config import DecodeConfig
    from opttree.trees.methods import build_tree

    with pytest.raises(ValueError, match="cost curve"):
        build_tree(make_expand(2.0), DecodeConfig(method="opt-tree", nodes=0))
    # Static shapes: the best breadth-first prefix of the shape.
    tree, info = build_static(make_expand(2.0), shape_paths("binary", 60, 4), 60, CPU_LIKE)
    rows = info.auto["objective"]
    full, _ = build_static(make_expand(2.0), shape_paths("binary", 60, 4), 60)
    n = info.auto["chosen_nodes"]
    assert max(max(r) for r in rows) == pytest.approx(rows[info.auto["chosen_depth"] - 1][n - 1])
    assert tree.tokens == full.tokens[:n] and tree.parents == full.parents[:n] and n <= 7
    # EAGLE-2 keeps its fixed depth and chooses only its size, on the last row.
    tree, info = build_eagle_dynamic(make_expand(2.0), 60, 3, top_k=3, cost=CPU_LIKE)
    last = info.auto["objective"][-1]
    assert info.auto["chosen_depth"] == 3 and len(tree) == info.auto["chosen_nodes"]
    assert last[len(tree) - 1] == max(last)


def test_at_confidence_one_the_next_layer_test_is_a_bound():
    """No n that `still_in_play` (confidence 1) rules out can beat the best J after a real next layer:
    over any number k of the last layer's parents (best-first), whatever children they bring (their q
    sum to at most 1 per parent, sometimes exactly 1), priced at that layer's measured width k."""
    from opttree.trees.auto_size import Objective, throughput

    widening = StepCost((1, 16), (10.0, 14.0), (1, 2, 8), (1.0, 4.0, 8.0), 0.5)   # wider layers cost more
    rng = random.Random(0)
    for case in range(400):
        cost = (CPU_LIKE, RISING, STEEP, widening)[case % 4]
        most = rng.choice([3, 6, 12])
        p = sorted((rng.random() ** 2 for _ in range(rng.randint(1, 14))), reverse=True)
        last = [rng.random() < 0.6 for _ in p]
        objective = Objective(cost, most)
        objective.add_layer(p, cost.base_ms)
        top = objective.still_in_play(p, list(itertools.accumulate(x if a else 0.0 for x, a in zip(p, last))), 1.0)
        parents = [pi for pi, is_last in zip(p[:most], last) if is_last]
        verify = cost.verify_table(most + 1)
        for k in range(1, len(parents) + 1):
            children = []
            for pi in parents[:k]:
                q = [rng.random() for _ in range(rng.randint(1, 3))]
                scale = (1.0 if rng.random() < 0.3 else rng.random()) / sum(q)
                children += [pi * x * scale for x in q]
            after = list(itertools.accumulate(sorted(p[:most] + children, reverse=True)))
            for n in range(top + 1, min(most, len(after)) + 1):
                real = throughput(after[n - 1], cost.base_ms + cost.layer(k), verify[n + 1])
                assert real <= objective.best[0] + 1e-9, (case, k, n, top)


def test_cost_interpolation_and_monotone_fit():
    from opttree.trees.auto_size import interpolate, monotone

    xs, ys = (1, 8, 16), (10.0, 10.0, 26.0)
    assert interpolate(xs, ys, 0) == 10.0 and interpolate(xs, ys, 12) == 18.0
    assert interpolate(xs, ys, 24) == 42.0                      # the last slope beyond the last point
    assert monotone([5.0, 3.0, 4.0, 8.0]) == [4.0, 4.0, 4.0, 8.0]
    assert monotone([1.0, 2.0]) == [1.0, 2.0]


def test_cost_at_a_prefix_is_linear_between_the_two_measured_prefixes():
    """After a long prompt each extra tree token costs more: the cost model takes each point linear
    in the prefix between the two measured ones, held at the ends, and the auto budget then grows a
    smaller tree for the same draft."""
    far = StepCost((1, 8, 64), (40.0, 80.0, 400.0), (1, 64), (2.0, 10.0), 1.0, prefix_tokens=1024)
    near = StepCost((1, 8, 64), (10.0, 12.0, 80.0), (1, 64), (1.0, 3.0), 0.5, prefix_tokens=128, longer=far)
    assert near.at_prefix(0).verify_ms == near.at_prefix(128).verify_ms == near.verify_ms
    assert near.at_prefix(128).longer is None                       # a step's cost is plain numbers
    mid = near.at_prefix(576)                                        # halfway
    assert mid.verify_ms == (25.0, 46.0, 240.0) and mid.layer_ms == (1.5, 6.5) and mid.base_ms == 0.75
    assert mid.prefix_tokens == 576 and mid is near.at_prefix(580)  # sixteenths: cached, shared
    assert near.at_prefix(5000).verify_ms == far.verify_ms and near.at_prefix(5000).layer_ms == far.layer_ms
    assert StepCost.flat(3.0).at_prefix(900) == StepCost.flat(3.0)  # one prefix measured: unchanged
    short, _ = build_opt_tree_auto(make_expand(2.0), near.at_prefix(100), 25, 6)
    long, _ = build_opt_tree_auto(make_expand(2.0), near.at_prefix(2000), 25, 6)
    assert len(long) < len(short)


def test_best_size_over_finished_candidates_is_the_argmax_of_the_objective():
    """The fused tree's size under the auto budget: J(n) = (Σ top-n p̂ + 1) / (draft + verify(n + 1)),
    brute-forced; ties take fewer nodes; no candidate that pays gives 0."""
    from opttree.trees.auto_size import best_size, throughput

    ranked = [0.9, 0.8, 0.6, 0.2, 0.05, 0.01]
    for cost in (FLAT, CPU_LIKE, STEEP, RISING):
        n, j = best_size(ranked, 3.0, cost, 60)
        every = [throughput(sum(ranked[:k]), 3.0, cost.verify(k + 1)) for k in range(len(ranked) + 1)]
        assert j == pytest.approx(max(every)) and n == every.index(max(every))
    assert best_size(ranked, 3.0, FLAT, 60)[0] == len(ranked)          # a flat cost takes every candidate
    assert best_size(ranked, 3.0, FLAT, 2)[0] == 2                     # never past max_nodes
    assert best_size([0.001], 0.0, STEEP, 60)[0] == 0 and best_size([], 0.0, FLAT, 60)[0] == 0


def test_cost_model_reads_each_points_fastest_repetition():
    """Interference only adds time: the measured point whose median two slow repetitions pulled up (a
    1-token forward timed at 48 ms beside 2 tokens at 32 ms) costs its fastest repetition, so small
    trees keep their real advantage; reports keep the median."""
    from opttree.engine.cost import _stats, compact, step_cost

    one, two = _stats([28.0, 48.0, 80.0]), _stats([30.0, 32.0, 64.0])
    assert one["median_ms"] == 48.0 and one["best_ms"] == 28.0
    curve = {"key": {"device_name": "cpu", "dtype": "float32", "threads": 1, "kernel": "default"},
             "points": [{"tokens": 1, **one}, {"tokens": 2, **two}],
             "draft": {"base_ms": 2.0, "points": [{"width": 1, **_stats([2.0, 9.0, 9.0])}]}}
    cost = step_cost(curve)
    assert cost.verify_ms == (28.0, 30.0) and cost.layer_ms == (2.0,) and cost.longer is None
    assert step_cost(compact(curve)) == cost            # a trace's meta gives the same model
    longer = {"prefix_tokens": 1024, "points": [{"tokens": 1, **_stats([50.0, 51.0])}, {"tokens": 2, **_stats([70.0])}],
              "draft": {"base_ms": 3.0, "points": [{"width": 1, **_stats([4.0, 5.0])}]}}
    cost = step_cost({**curve, "prefix_tokens": 128, "longer": longer})
    assert cost.prefix_tokens == 128 and cost.longer.verify_ms == (50.0, 70.0) and cost.longer.prefix_tokens == 1024
    assert step_cost(compact({**curve, "prefix_tokens": 128, "longer": longer})) == cost
