"""Retrieval fusion (after RASD, Quan et al., 2025): one tree from a draft model's tree and a retrieval trie.

Pure: the draft tree a builder chose, the retrieval trie (drafters/retrieval.py) and the draft
model's probabilities of the retrieved tokens in, the fused tree out. Four steps:

1. Prune. A retrieved node whose parent the draft model expanded has a draft probability q_d for
   its token. Below PRUNE_Q the node and everything retrieved under it are dropped: the draft
   model finds that continuation very unlikely here. A q_d of exactly 0 is no opinion, not a veto:
   a draft with a reduced vocabulary (the bundled head proposes 12,288 of 49,152 tokens) cannot
   propose rare words at all, and copying those from the text is where retrieval helps most.
2. Score. A kept retrieved node scores q = max(q_d where known, RETRIEVED_Q x its share of the
   matches): retrieval evidence may raise a draft's doubt but the draft model can veto (step 1).
3. Merge by longest-prefix matching. Each retrieved path walks down the draft tree while the tokens
   agree; that shared prefix is the draft's own nodes (now source "both", q the larger of the two
   scores) and the rest hangs below it as new "retrieved" nodes. Equal prefixes are one node.
4. Budget. p̂ is recomputed as the product of q along each path, and the best `nodes` nodes by p̂
   are kept (ties by depth, so a parent always ranks before its child and the tree stays connected).

q and p̂ of a fused tree rank nodes for the budget; they are not calibrated probabilities. Under the
auto budget the fused tree's size still reads them as acceptance estimates (drafters/fusion.py's
`sized_by_objective` sums them as E(A)); benchmarks/auto_budget.md measures what that choice does.
"""

from __future__ import annotations

from dataclasses import dataclass

from opttree.trees.draft_tree import ROOT, DraftTree

PRUNE_Q = 0.01       # retrieved tokens the draft model gives less than this are dropped
RETRIEVED_Q = 0.8    # q of a retrieved node that all matches agree on (scaled by its share)
NO_ORIGIN = -1       # origin of a node the draft model never grew (drafters keep no cache for it)


@dataclass
class _Node:
    token: int
    parent: tuple
    q: float
    rank: int
    source: str
    origin: int


def paths_of(tree: DraftTree) -> list[tuple[int, ...]]:
    """Each node's token path from the root (parents must precede children, as builders leave them)."""
    out: list[tuple[int, ...]] = []
    for p, t in zip(tree.parents, tree.tokens):
        out.append((out[p] if p != ROOT else ()) + (t,))
    return out


def fuse(draft: DraftTree, retrieved: DraftTree, draft_q: dict, nodes: int, origin_of: dict | None = None,
         prune_below: float = PRUNE_Q, retrieved_q: float = RETRIEVED_Q,
         max_depth: int | None = None) -> tuple[DraftTree, dict]:
    """The fused tree (at most `nodes` nodes, none deeper than `max_depth`, breadth-first) and counts
    for the step's notes.

    `draft_q` maps a token path to (q_d, rank) of its last token in the draft model's distribution
    at its parent, for retrieved nodes whose parent the draft expanded; `origin_of` maps a path to
    the grown-tree node the drafter forwarded for it (so its cache entry can be kept if accepted).
    """
    origin_of = origin_of or {}
    merged: dict[tuple, _Node] = {}
    for i, path in enumerate(paths_of(draft)):
        merged[path] = _Node(draft.tokens[i], path[:-1], draft.q[i], draft.rank[i],
                             draft.source[i] if draft.source else "draft",
                             draft.origin[i] if draft.origin else i)
    kept, pruned = set(), 0
    for j, path in enumerate(paths_of(retrieved)):
        parent = path[:-1]
        if (parent and parent not in kept) or (max_depth is not None and len(path) > max_depth):
            continue                                   # under a pruned node, or too deep
        known = draft_q.get(path)
        if known is not None and known[0] <= 0.0:
            known = None                               # outside the draft's vocabulary: no opinion
        if known is not None and known[0] < prune_below:
            pruned += 1
            continue
        kept.add(path)
        score = retrieved_q * retrieved.q[j]
        if known is not None:
            score = max(score, known[0])
        node = merged.get(path)
        if node is not None:
            if node.source == "draft":
                node.source = "both"
            node.q = max(node.q, score)
        else:
            merged[path] = _Node(retrieved.tokens[j], parent, min(score, 1.0),
                                 known[1] if known is not None else retrieved.rank[j], "retrieved",
                                 origin_of.get(path, NO_ORIGIN))
    p_hat: dict[tuple, float] = {}
    order = {path: i for i, path in enumerate(merged)}
    for path, node in merged.items():        # parents were inserted before their children
        p_hat[path] = (p_hat[node.parent] if node.parent else 1.0) * node.q
    best = sorted(merged, key=lambda p: (-p_hat[p], len(p), order[p]))[: max(nodes, 0)]
    out = DraftTree()
    new_id: dict[tuple, int] = {}
    for path in sorted(best, key=lambda p: (len(p), order[p])):
        node = merged[path]
        new_id[path] = out.add(new_id[node.parent] if node.parent else ROOT, node.token, node.q, node.rank)
        out.origin.append(node.origin)
        out.source.append(node.source)
    return out, counts(out, pruned)


def counts(fused: DraftTree, pruned: int) -> dict:
    """The step's notes on a fused tree: its retrieved and shared nodes, and the retrieved ones pruned."""
    return {"retrieved": sum(s == "retrieved" for s in fused.source), "both": sum(s == "both" for s in fused.source),
            "pruned": pruned}


def cut(fused: DraftTree, notes: dict, nodes: int) -> tuple[DraftTree, dict]:
    """`fuse`'s tree and notes at a smaller budget, from its tree at a larger one: its best `nodes`
    nodes, ranked as `fuse` ranks them (p̂, then depth, then breadth-first order), so the tree equals
    what `fuse` builds at `nodes` without fusing again."""
    out = fused.best_subtree(nodes)
    return out, counts(out, notes["pruned"])
