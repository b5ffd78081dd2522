"""One layer of tree growth, shared by the dynamic builders (OPT-Tree and EAGLE-2)."""

from __future__ import annotations

import torch

from opttree.trees.draft_tree import DraftTree


def add_best_children(tree: DraftTree, parents: list[int], tokens: torch.Tensor, q: torch.Tensor,
                      keep: int) -> list[int]:
    """Add the `keep` children with the largest p̂ = p̂(parent) * q among all proposed ones.

    `tokens`/`q` are (len(parents), k): each parent's top-k children, sorted by q. Returns the new
    node ids in order of p̂. Zero-probability candidates are never added.
    """
    base = torch.tensor([tree.p_hat_of(p) for p in parents], dtype=torch.float64)
    cand = (base[:, None] * q.double().cpu()).flatten()
    top = torch.topk(cand, min(keep, cand.numel()))
    k = q.shape[1]
    added = []
    for score, flat in zip(top.values.tolist(), top.indices.tolist()):
        if score <= 0.0:
            break
        row, rank = divmod(flat, k)
        added.append(tree.add(parents[row], int(tokens[row, rank]), float(q[row, rank]), rank))
    return added
