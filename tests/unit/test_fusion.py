"""Retrieval fusion (trees/fusion.py) as a pure function: budget, merged prefixes, connectivity, pruning."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opttree.drafters.retrieval import continuation_tree
from opttree.trace import SOURCES
from opttree.trees.draft_tree import ROOT, DraftTree
from opttree.trees.fusion import PRUNE_Q, RETRIEVED_Q, cut, fuse, paths_of

VOCAB = 4   # few tokens: draft and retrieved paths collide often


@st.composite
def draft_trees(draw):
    """A builder-like tree: parents first, distinct tokens among siblings, q in (0, 1]."""
    tree = DraftTree()
    for _ in range(draw(st.integers(0, 14))):
        parent = draw(st.integers(-1, len(tree) - 1))
        used = {t for t, p in zip(tree.tokens, tree.parents) if p == parent}
        free = [t for t in range(VOCAB) if t not in used]
        if not free:
            continue
        tree.add(parent, draw(st.sampled_from(free)), draw(st.floats(0.01, 1.0)), len(used))
    tree = tree.subset(list(range(len(tree))))      # breadth-first, with origins, as builders return it
    tree.source = ["draft"] * len(tree)
    return tree


@st.composite
def cases(draw):
    draft = draw(draft_trees())
    conts = draw(st.lists(st.lists(st.integers(0, VOCAB - 1), min_size=1, max_size=5), max_size=5))
    retrieved = continuation_tree(conts).tree
    draft_q = {}
    for path in paths_of(retrieved):
        if draw(st.booleans()):
            draft_q[path] = (draw(st.sampled_from([0.0, PRUNE_Q / 2, PRUNE_Q, 0.3, 1.0])), 0)
    return draft, retrieved, draft_q, draw(st.integers(0, 40))


def product_ok(tree: DraftTree) -> bool:
    return all(abs(tree.p_hat[i] - tree.q[i] * tree.p_hat_of(p)) <= 1e-12 for i, p in enumerate(tree.parents))


def unpruned(retrieved: DraftTree, draft_q: dict) -> set:
    """Retrieved paths that survive pruning: no path prefix with 0 < q_d < PRUNE_Q."""
    out = set()
    for path in paths_of(retrieved):
        qs = [draft_q.get(path[:d], (1.0, 0))[0] for d in range(1, len(path) + 1)]
        if all(not 0.0 < q < PRUNE_Q for q in qs):
            out.add(path)
    return out


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_fused_tree_is_within_budget_connected_and_merged(case):
    draft, retrieved, draft_q, nodes = case
    fused, notes = fuse(draft, retrieved, draft_q, nodes)
    assert len(fused) <= nodes
    for i, p in enumerate(fused.parents):                       # connected, parents first, right depths
        assert ROOT <= p < i
        assert fused.depth[i] == (1 if p == ROOT else fused.depth[p] + 1)
    siblings = list(zip(fused.parents, fused.tokens))
    assert len(siblings) == len(set(siblings))                   # equal prefixes are one node
    assert product_ok(fused) and all(0.0 < q <= 1.0 for q in fused.q)
    assert len(fused.source) == len(fused.origin) == len(fused) and set(fused.source) <= set(SOURCES)
    draft_paths, kept = set(paths_of(draft)), unpruned(retrieved, draft_q)
    for path, src in zip(paths_of(fused), fused.source):
        assert path in draft_paths or path in kept                 # nothing invented, nothing pruned added
        assert (src == "retrieved") == (path not in draft_paths)
        assert (src == "both") == (path in draft_paths and path in kept)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.integers(0, 60), st.one_of(st.none(), st.integers(1, 5)))
def test_cutting_a_wide_fused_tree_is_fusing_at_the_smaller_budget(case, other, max_depth):
    """Under the auto budget the drafter fuses once at the ceiling and cuts to the size it chose."""
    draft, retrieved, draft_q, nodes = case
    small, large = sorted((nodes, other))
    wide, wide_notes = fuse(draft, retrieved, draft_q, large, max_depth=max_depth)
    want, want_notes = fuse(draft, retrieved, draft_q, small, max_depth=max_depth)
    got, got_notes = cut(wide, wide_notes, small)
    assert got == want and got_notes == want_notes          # every field: tokens, p̂, origin, source …


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_with_room_everything_unpruned_is_kept(case):
    draft, retrieved, draft_q, _ = case
    fused, _ = fuse(draft, retrieved, draft_q, nodes=len(draft) + len(retrieved))
    assert set(paths_of(fused)) == set(paths_of(draft)) | unpruned(retrieved, draft_q)


def test_shared_prefix_becomes_one_node_and_the_rest_hangs_below():
    draft = DraftTree()
    a = draft.add(ROOT, 1, 0.5, 0)
    b = draft.add(a, 2, 0.5, 0)
    draft.add(b, 3, 0.5, 0)
    draft = draft.subset([0, 1, 2])
    draft.source = ["draft"] * 3
    retrieved = continuation_tree([[1, 2, 4, 5]]).tree
    fused, notes = fuse(draft, retrieved, {(1,): (0.5, 0), (1, 2, 4): (0.2, 3)}, nodes=10, origin_of={})
    assert paths_of(fused) == [(1,), (1, 2), (1, 2, 3), (1, 2, 4), (1, 2, 4, 5)]
    assert fused.source == ["both", "both", "draft", "retrieved", "retrieved"]
    assert fused.q[0] == RETRIEVED_Q and fused.q[3] == RETRIEVED_Q     # retrieval evidence raises q
    assert fused.rank[3] == 3 and fused.origin[3] == -1                # the draft's rank; never grown
    assert notes == {"retrieved": 2, "both": 2, "pruned": 0}
    pruned, notes = fuse(draft, retrieved, {(1, 2, 4): (PRUNE_Q / 2, 9)}, nodes=10)
    assert paths_of(pruned) == [(1,), (1, 2), (1, 2, 3)] and notes["pruned"] == 1
    # A probability of exactly 0 (a token outside a reduced draft vocabulary) is no veto.
    kept, _ = fuse(draft, retrieved, {(1, 2, 4): (0.0, 6144)}, nodes=10)
    assert (1, 2, 4, 5) in paths_of(kept)
    small, _ = fuse(draft, retrieved, {}, nodes=2)
    assert paths_of(small) == [(1,), (1, 2)]
