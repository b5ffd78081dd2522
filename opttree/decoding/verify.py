"""Verification: the target scores the root and every tree node in ONE forward.

Inputs are [root, node_1, ..., node_n]; node i sits at position (root position + depth) and sees
the committed prefix, the root and its own ancestors only (tree attention). Row 0 of the logits is
the target's distribution after the root, row i+1 the one after node i.
"""

from __future__ import annotations

import torch

from opttree.decoding.kv_cache import compact
from opttree.decoding.tree_attention import tree_mask
from opttree.trees.draft_tree import ROOT, DraftTree


def tree_inputs(tree: DraftTree, root_token: int, prefix_len: int, dtype, device):
    """input_ids, position_ids and the 4D additive mask for verifying `tree` after `prefix_len`."""
    ids = torch.tensor([[root_token] + tree.tokens], device=device)
    pos = torch.tensor([[prefix_len] + [prefix_len + d for d in tree.depth]], device=device)
    root_col = prefix_len
    visible = [[root_col]]
    for i in range(len(tree)):
        visible.append([root_col] + [root_col + 1 + a for a in tree.path(i)])
    mask = tree_mask(prefix_len, prefix_len + 1 + len(tree), visible, dtype, device)
    return ids, pos, mask


@torch.inference_mode()
def verify_tree(target, cache, root_token: int, tree: DraftTree, device, want_features: bool):
    """Logits (n+1, vocab) and, for feature-head drafters, last hidden states (n+1, hidden)."""
    prefix_len = cache.get_seq_length()
    dtype = target.get_input_embeddings().weight.dtype
    ids, pos, mask = tree_inputs(tree, root_token, prefix_len, dtype, device)
    out = target(input_ids=ids, position_ids=pos, attention_mask=mask, past_key_values=cache,
                 use_cache=True, output_hidden_states=want_features)
    feats = out.hidden_states[-1][0] if want_features else None
    return out.logits[0], feats


def keep_accepted(cache, prefix_len: int, accepted: list[int]) -> None:
    """Compact the target cache to prefix + root + accepted nodes (the bonus is fed next step)."""
    keep = [*range(prefix_len + 1), *(prefix_len + 1 + a for a in accepted)]
    compact(cache, torch.tensor(keep, dtype=torch.long))


def children_by_token(tree: DraftTree) -> dict[int, dict[int, int]]:
    out: dict[int, dict[int, int]] = {}
    for i, (p, t) in enumerate(zip(tree.parents, tree.tokens)):
        out.setdefault(p, {})[t] = i
    return out


def accept(tree: DraftTree, logits: torch.Tensor, pick) -> tuple[list[int], int, int | None]:
    """Walk down the tree with the target's own token choices (the per-node target-sample rule).

    At the root, and then at each accepted node, the target picks its next token `s` exactly as it
    would without a draft (argmax at T=0, a sample from its warped distribution otherwise). If a
    child carries `s` it is accepted and the walk continues from it; otherwise `s` is the bonus
    token and the step ends. Every committed token is therefore the target's own choice given its
    context, so greedy output is identical and sampled output has exactly the target's
    distribution, whatever the draft proposed.

    Returns (accepted node ids in order, bonus token, the draft's top child that was rejected).
    """
    kids = children_by_token(tree)
    accepted: list[int] = []
    node = ROOT
    while True:
        row = 0 if node == ROOT else node + 1
        s = pick(logits[row])
        child = kids.get(node, {}).get(s)
        if child is None:
            options = kids.get(node, {}).values()
            rejected = min(options, key=lambda c: tree.rank[c]) if options else None
            return accepted, s, rejected
        accepted.append(child)
        node = child
