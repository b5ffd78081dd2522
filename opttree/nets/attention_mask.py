"""Attention masks as transformers 5.x and the engine's attention read them.

A 4D mask `(batch, 1, queries, keys)` passes through transformers untouched. It must be an *additive
float* mask (0 = attend, the dtype's min = blocked): a bool mask is right with SDPA but silently wrong
with eager attention, which computes `scores + mask`. Every mask the engine builds (the tree mask of
decoding/tree_attention.py, the causal masks of the draft heads and the early exit) ends here.
"""

from __future__ import annotations

import torch


def additive_mask(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """bool (q, k) -> float (1, 1, q, k) with 0 where allowed and the dtype's min elsewhere."""
    mask = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
    mask.masked_fill_(~allowed, torch.finfo(dtype).min)
    return mask[None, None]


def causal_mask(prefix_len: int, new: int, dtype, device) -> torch.Tensor:
    """`new` tokens after `prefix_len` cached ones, each seeing the prefix and the new ones up to itself:
    causal aligned to the cache's end (SDPA's `is_causal` aligns to its start)."""
    allowed = torch.ones(new, prefix_len + new, dtype=torch.bool, device=device).tril(prefix_len)
    return additive_mask(allowed, dtype)
