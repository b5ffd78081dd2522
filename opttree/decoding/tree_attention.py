"""Tree attention: one forward over many tree nodes, each seeing only the prefix and its ancestors.

The mask is additive and 4D, as transformers 5.x reads it (nets/attention_mask.py says why).
"""

from __future__ import annotations

import torch

from opttree.nets.attention_mask import additive_mask


def tree_mask(prefix_len: int, key_len: int, visible: list[list[int]], dtype, device) -> torch.Tensor:
    """Mask for queries that all see the first `prefix_len` keys plus their own listed key columns.

    `visible[i]` lists the key columns (>= prefix_len) query i may attend to: its ancestors' cache
    slots and its own slot.
    """
    allowed = torch.zeros(len(visible), key_len, dtype=torch.bool, device=device)
    allowed[:, :prefix_len] = True
    rows = [i for i, cols in enumerate(visible) for _ in cols]
    cols = [c for cols in visible for c in cols]
    if rows:
        allowed[torch.tensor(rows, device=device), torch.tensor(cols, device=device)] = True
    return additive_mask(allowed, dtype)
