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


def tree_inputs(tree: DraftTree, root_token: int, prefix_len: int, dtype, device, config=None):
    """input_ids, position_ids and the 4D additive mask for verifying `tree` after `prefix_len` (for
    the target whose `config` is given, its local layers' windows too: `tree_mask`)."""
    ids = torch.tensor([[root_token] + tree.tokens], device=device)
    pos = torch.tensor([[prefix_len] + [prefix_len + d for d in tree.depth]], device=device)
    root_col = prefix_len
    visible = [[root_col]]
    for i in range(len(tree)):
        visible.append([root_col] + [root_col + 1 + a for a in tree.path(i)])
    # The target's cache holds the committed text in order: key column i is position i.
    mask = tree_mask(prefix_len, prefix_len + 1 + len(tree), visible, dtype, device, config,
                     lambda: (pos[0], torch.cat([torch.arange(prefix_len, device=device), pos[0]])))
    return ids, pos, mask


@torch.inference_mode()
def verify_tree(target, cache, root_token: int, tree: DraftTree, device, layers=()):
    """Logits (n+1, vocab) and {layer: hidden states (n+1, hidden)} for each index in `layers` of the
    forward's `hidden_states` (-1: the last, what a feature head reads; a fused head also reads a low
    and a middle one; N: after N layers, what an early-exit head reads)."""
    prefix_len = cache.get_seq_length()
    dtype = target.get_input_embeddings().weight.dtype
    ids, pos, mask = tree_inputs(tree, root_token, prefix_len, dtype, device, target.config)
    out = target(input_ids=ids, position_ids=pos, attention_mask=mask, past_key_values=cache,
                 use_cache=True, output_hidden_states=bool(layers))
    return out.logits[0], {layer: out.hidden_states[layer][0] for layer in layers}


def drafter_features(states, layers: tuple[int, ...]) -> torch.Tensor | None:
    """The rows a drafter reads (its `feature_layers`): those layers' hidden states side by side,
    (k, len(layers) * hidden); one layer's as they are. `states` maps a layer to its (k, hidden) rows."""
    if not layers:
        return None
    if len(layers) == 1:
        return states[layers[0]]
    device = states[layers[-1]].device   # with device_map the layers' rows may sit on different GPUs
    return torch.cat([states[layer].to(device) for layer in layers], -1)


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


def recorded_nodes(tree: DraftTree, accepted: list[int], available, limit: int) -> list[int]:
    """Which verified rows the trace keeps: the root, the accepted nodes in order, then the other
    nodes by p̂ (highest first); only nodes in `available` (those the draft expanded), at most `limit`."""
    others = sorted(range(len(tree)), key=lambda i: (-tree.p_hat[i], i))
    out: list[int] = []
    for node in [ROOT, *accepted, *others]:
        if len(out) >= limit:
            break
        if node in available and node not in out:
            out.append(node)
    return out


@torch.inference_mode()
def target_side(tree: DraftTree, logits: torch.Tensor, distribution, draft_rows: dict, accepted: list[int],
                limit: int, k: int) -> tuple[list[float], list[dict]]:
    """The target's side of one verified step, for the trace (`p_target` and `topk_rows`).

    `distribution(rows)` maps logits rows to the target's p (see sampling.theory_distribution);
    `draft_rows` maps a node (ROOT included) to the draft's full distribution over its children.
    Returns p_target (per node, p of the node's token at its parent's row) and up to `limit` row
    records {"node", "ids", "p", "q"}: the union of the target's and the draft's top-k tokens at
    that row with both probabilities, ordered by p, then q (highest first).
    """
    chosen = recorded_nodes(tree, accepted, draft_rows, limit)
    needed = sorted(set(tree.parents) | set(chosen))
    if not needed:
        return [], []
    where = {node: i for i, node in enumerate(needed)}
    rows = torch.tensor([0 if node == ROOT else node + 1 for node in needed], device=logits.device)
    probs = distribution(logits.index_select(0, rows))
    p_target: list[float] = []
    if len(tree):
        at = torch.tensor([where[p] for p in tree.parents], device=probs.device)
        tok = torch.tensor(tree.tokens, device=probs.device)
        p_target = probs[at, tok].tolist()
    if not chosen:
        return p_target, []
    p_rows = probs.index_select(0, torch.tensor([where[node] for node in chosen], device=probs.device))
    q_rows = torch.stack([draft_rows[node] for node in chosen]).to(probs.device, probs.dtype)
    # Every row's top-k ids on both sides and both probabilities of each, read off the device at once.
    ids = torch.cat([torch.topk(side, min(k, side.shape[-1]), dim=-1).indices for side in (p_rows, q_rows)], -1)
    p_vals, q_vals, ids = p_rows.gather(1, ids).tolist(), q_rows.gather(1, ids).tolist(), ids.tolist()
    records = []
    for node, row, p_row, q_row in zip(chosen, ids, p_vals, q_vals):
        first: dict[int, int] = {}      # each id's first column: the target's top-k, then the draft's new ones
        for j, tok in enumerate(row):
            first.setdefault(tok, j)
        order = sorted(first, key=lambda tok: (-p_row[first[tok]], -q_row[first[tok]]))
        records.append({"node": node, "ids": order, "p": [p_row[first[t]] for t in order],
                        "q": [q_row[first[t]] for t in order]})
    return p_target, records
