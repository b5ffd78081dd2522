"""KV-cache compaction: after verification only the accepted path's keys/values stay.

`DynamicCache.crop` is only right for chains (and `crop(n > 0)` raises in transformers 5.23), so we
select the kept sequence positions directly in every layer.
"""

from __future__ import annotations

import torch


def compact(cache, keep: torch.Tensor) -> None:
    """Keep only sequence positions `keep` (1D LongTensor, ascending) in every layer, in place.

    After a verification `keep` is the whole prefix plus a few accepted tree slots. The prefix
    already sits where it belongs, so only the moved tail is gathered into place and the rest is
    cut off as a view: copying the whole cache every step cost ~2 % of a small-tree step, and the
    next forward concatenates onto the view anyway."""
    keep = keep.cpu()
    n = keep.numel()
    start = _in_place_prefix(keep)
    for layer in cache.layers:
        if getattr(layer, "keys", None) is None or layer.keys.numel() == 0:
            continue
        if hasattr(layer, "sliding_window") and getattr(layer, "sliding_window", None):
            raise NotImplementedError("tree decoding does not support sliding-window KV caches")
        if start < n:
            tail = keep[start:].to(layer.keys.device)
            # A cache filled under inference mode holds inference tensors, which only take in-place
            # writes inside inference mode (callers such as tests may compact outside it).
            with torch.inference_mode(layer.keys.is_inference()):
                layer.keys[..., start:n, :] = layer.keys.index_select(-2, tail)
                layer.values[..., start:n, :] = layer.values.index_select(-2, tail)
        layer.keys = layer.keys[..., :n, :]
        layer.values = layer.values[..., :n, :]


def _in_place_prefix(keep: torch.Tensor) -> int:
    """How many leading entries of `keep` are 0, 1, 2, ... (positions that need not move)."""
    same = keep == torch.arange(keep.numel())
    return keep.numel() if bool(same.all()) else int(same.int().argmin())


def truncate(cache, length: int) -> None:
    """Drop everything after the first `length` positions."""
    if cache.get_seq_length() > length:
        compact(cache, torch.arange(length))


def new_cache(model):
    from transformers import DynamicCache  # transformers is heavy: imported when a model is built

    return DynamicCache(config=model.config)
