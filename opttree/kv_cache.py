"""KV-cache compaction: after verification only the accepted path's keys/values stay.

`DynamicCache.crop` is only right for chains (and `crop(n > 0)` raises in transformers 5.23), so we
select the kept sequence positions directly in every layer.
"""

from __future__ import annotations

import torch


def compact(cache, keep: torch.Tensor) -> None:
    """Keep only sequence positions `keep` (1D LongTensor, in order) in every layer, in place."""
    for layer in cache.layers:
        if getattr(layer, "keys", None) is None or layer.keys.numel() == 0:
            continue
        if hasattr(layer, "sliding_window") and getattr(layer, "sliding_window", None):
            raise NotImplementedError("tree decoding does not support sliding-window KV caches")
        idx = keep.to(layer.keys.device)
        layer.keys = layer.keys.index_select(-2, idx)
        layer.values = layer.values.index_select(-2, idx)


def truncate(cache, length: int) -> None:
    """Drop everything after the first `length` positions."""
    if cache.get_seq_length() > length:
        compact(cache, torch.arange(length))


def new_cache(model):
    from transformers import DynamicCache

    return DynamicCache(config=model.config)
