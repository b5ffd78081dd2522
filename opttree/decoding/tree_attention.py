"""Tree attention: one forward over many tree nodes, each seeing only the prefix and its ancestors.

The mask is additive and 4D, as transformers 5.x reads it (nets/attention_mask.py says why). For a
model with sliding-window or chunked layers it also carries each such layer's window
(`attention_mask.for_model`), so a tree forward is exact at any length: a node sees the keys of its
own text (the prefix, then its ancestors) that its window holds, exactly as a plain forward of that text.
"""

from __future__ import annotations

import torch

from opttree.nets.attention_mask import additive_mask, for_model, local_spans


def tree_mask(prefix_len: int, key_len: int, visible: list[list[int]], dtype, device, config=None,
              positions=None):
    """Mask for queries that all see the first `prefix_len` keys plus their own listed key columns.

    `visible[i]` lists the key columns (>= prefix_len) query i may attend to: its ancestors' cache
    slots and its own slot. With the `config` of a model that has local layers, `positions()` gives
    (the queries' positions (q,), the key columns' positions (key_len,)) and the answer is
    `for_model`'s; otherwise it is one tensor and `positions` is never called.
    """
    allowed = torch.zeros(len(visible), key_len, dtype=torch.bool, device=device)
    allowed[:, :prefix_len] = True
    rows = [i for i, cols in enumerate(visible) for _ in cols]
    cols = [c for cols in visible for c in cols]
    if rows:
        allowed[torch.tensor(rows, device=device), torch.tensor(cols, device=device)] = True
    if not local_spans(config):
        return additive_mask(allowed, dtype)
    query_pos, key_pos = positions()
    return for_model(allowed, dtype, config, query_pos.to(device), key_pos.to(device))
