"""The draft tree: nodes with a token, a parent (-1 = the root, i.e. the last committed token),
a depth (1 = child of the root), the draft probability q of the node's token given its parent, and
p̂ = the product of q along the path from the root (the paper's estimate of the node's chance of
being accepted). Builders grow it; the verifier and the trace read it. Once built, each node also
names its source (trace.SOURCES): the draft model, the Token Recycling table, retrieval, or both a draft
model and retrieval (a fused tree, trees/fusion.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

ROOT = -1


@dataclass
class DraftTree:
    tokens: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    depth: list[int] = field(default_factory=list)
    q: list[float] = field(default_factory=list)
    p_hat: list[float] = field(default_factory=list)
    rank: list[int] = field(default_factory=list)  # rank of the token in its parent's draft distribution
    origin: list[int] = field(default_factory=list)  # after `subset` (or fusion): each node's id in the grown tree
    source: list[str] = field(default_factory=list)  # per node, one of trace.SOURCES (set once the tree is final)

    def __len__(self) -> int:
        return len(self.tokens)

    def add(self, parent: int, token: int, q: float, rank: int) -> int:
        parent_p = 1.0 if parent == ROOT else self.p_hat[parent]
        self.tokens.append(int(token))
        self.parents.append(int(parent))
        self.depth.append(1 if parent == ROOT else self.depth[parent] + 1)
        self.q.append(float(q))
        self.p_hat.append(parent_p * float(q))
        self.rank.append(int(rank))
        return len(self.tokens) - 1

    def p_hat_of(self, node: int) -> float:
        return 1.0 if node == ROOT else self.p_hat[node]

    def path(self, node: int) -> list[int]:
        """Nodes from the root's child down to `node` (the root itself excluded)."""
        out = []
        while node != ROOT:
            out.append(node)
            node = self.parents[node]
        return out[::-1]

    def children(self, node: int) -> list[int]:
        return [i for i, p in enumerate(self.parents) if p == node]

    @property
    def max_depth(self) -> int:
        return max(self.depth, default=0)

    def ranked(self, max_depth: int | None = None) -> list[int]:
        """Node ids best-first by p̂ (ties: shallower first), optionally only down to `max_depth`.

        Every prefix is a connected tree: q <= 1 makes p̂ non-increasing along a path, and ties
        are broken by depth, so a node's parent always ranks before it."""
        ids = range(len(self)) if max_depth is None else (i for i in range(len(self)) if self.depth[i] <= max_depth)
        return sorted(ids, key=lambda i: (-self.p_hat[i], self.depth[i], i))

    def ea_by_depth(self, n: int, depths: int) -> list[float]:
        """E(A) of the best n nodes down to each depth 0..`depths`: the record of an auto-sized tree's
        layers, read at the size the objective chose."""
        return [0.0] + [sum(self.p_hat[i] for i in self.ranked(d)[:n]) for d in range(1, depths + 1)]

    def best_subtree(self, n: int, max_depth: int | None = None) -> DraftTree:
        """The n nodes with the largest p̂ (down to `max_depth`), re-indexed in breadth-first order."""
        return self.subset(self.ranked(max_depth)[: max(n, 0)])

    def subset(self, keep: list[int]) -> DraftTree:
        """The nodes `keep` (a connected set), re-indexed in breadth-first order; each keeps its id in
        the grown tree (`origin`: its index here, or its own origin when this tree already has them)."""
        keep = sorted(set(keep), key=lambda i: (self.depth[i], i))
        new_id = {old: new for new, old in enumerate(keep)}
        out = DraftTree()
        for old in keep:
            parent = self.parents[old]
            if parent != ROOT and parent not in new_id:
                raise ValueError(f"subset is not connected: node {old} lacks its parent {parent}")
            out.tokens.append(self.tokens[old])
            out.parents.append(ROOT if parent == ROOT else new_id[parent])
            out.depth.append(self.depth[old])
            out.q.append(self.q[old])
            out.p_hat.append(self.p_hat[old])
            out.rank.append(self.rank[old])
            out.origin.append(self.origin[old] if self.origin else old)
            if self.source:
                out.source.append(self.source[old])
        return out
