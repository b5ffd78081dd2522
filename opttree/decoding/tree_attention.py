"""Tree attention: one forward over many tree nodes, each seeing only the prefix and its ancestors.

transformers 5.x passes a 4D mask `(batch, 1, queries, keys)` through untouched. It must be an
*additive float* mask (0 = attend, dtype min = blocked): a bool mask is right with SDPA but silently
wrong with eager attention, which computes `scores + mask`.
"""

from __future__ import annotations

import torch


def additive_mask(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """bool (q, k) -> float (1, 1, q, k) with 0 where allowed and the dtype's min elsewhere."""
    mask = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
    mask.masked_fill_(~allowed, torch.finfo(dtype).min)
    return mask[None, None]


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
