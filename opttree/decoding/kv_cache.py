"""The engine's KV caches: `new_cache` (transformers' `DynamicCache` with layers that append in
place), and compaction: after verification only the accepted path's keys/values stay.

`DynamicCache.crop` is only right for chains (and `crop(n > 0)` raises in transformers 5.23), so we
select the kept sequence positions directly in every layer.

Every layer keeps the whole context, sliding-window and chunked-attention layers too (transformers
would keep only their last window, which a tree's compaction cannot follow): the masks keep those
layers inside their windows (`nets/attention_mask.py`), the models' own for a plain forward, the
tree mask for a tree's. The price is memory: such layers hold the whole run instead of one window.
"""

from __future__ import annotations

import functools

import torch


def compact(cache, keep: torch.Tensor) -> None:
    """Keep only sequence positions `keep` (1D LongTensor, ascending) in every layer, in place.

    After a verification `keep` is the whole prefix plus a few accepted tree slots. The prefix
    already sits where it belongs, so only the moved tail is gathered into place and the rest is
    cut off as a view: copying the whole cache every step cost ~2 % of a small-tree step (2026-11-22), and the
    next forward writes after the view (`new_cache`'s layers) or concatenates onto it."""
    keep = keep.cpu()
    n = keep.numel()
    start = _in_place_prefix(keep)
    for layer in cache.layers:
        if getattr(layer, "keys", None) is None or layer.keys.numel() == 0:
            continue
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
    """A `DynamicCache` for `model` whose plain layers append in place (`_growing_layer`)."""
    from transformers import DynamicCache  # transformers is heavy: imported when a model is built
    from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

    cache = DynamicCache(config=model.config)
    grow = _growing_layer()
    # Sliding-window and chunked layers (one class) keep the whole context here too: see the module's note.
    plain = (DynamicLayer, DynamicSlidingWindowLayer)
    cache.layers = [grow() if type(layer) in plain else layer for layer in cache.layers]
    if getattr(cache, "layer_class_to_replicate", None) is DynamicLayer:   # a config without layer types
        cache.layer_class_to_replicate = grow
    return cache


@functools.cache
def _growing_layer():
    """transformers' `DynamicLayer` appends by `torch.cat`: every forward copies every layer's whole
    cache, for AR's one token and a tree's many alike (after 1,536 tokens, 71 MB a forward of the
    bundled target; avoiding it saves 2-12 ms of a 41-95 ms forward of 1-16 tokens on the 2-core CPU on 2026-11-28,
    benchmarks/growing_cache.md). This layer keeps its keys and values as views of buffers with
    room to spare and writes new positions into that room: a forward copies only its own rows, and a
    buffer is reallocated (a quarter larger than needed) when it fills. The views are what
    `DynamicLayer` holds, so everything that reads or slices `keys` and `values` (`compact`,
    attention, `get_seq_length`) works unchanged. With gradients on (training) it concatenates, as
    `DynamicLayer` does: writing into a buffer would change tensors an earlier step's graph saved."""
    from transformers.cache_utils import DynamicLayer  # transformers is heavy: imported when a model is built

    class GrowingLayer(DynamicLayer):
        def lazy_initialization(self, key_states, value_states) -> None:
            super().lazy_initialization(key_states, value_states)
            self.key_room = self.value_room = None

        def update(self, key_states, value_states, *args, **kwargs):
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            if torch.is_grad_enabled() or key_states.requires_grad or value_states.requires_grad:
                return super().update(key_states, value_states, *args, **kwargs)
            n, new = self.get_seq_length(), key_states.shape[-2]
            self.key_room, self.keys = _append(self.key_room, self.keys, key_states, n, new)
            self.value_room, self.values = _append(self.value_room, self.values, value_states, n, new)
            return self.keys, self.values

    return GrowingLayer


def _append(room: torch.Tensor | None, held: torch.Tensor, new_rows: torch.Tensor, n: int, new: int):
    """(buffer, its first n + new positions) with `new_rows` written after the n held ones."""
    if not _holds(room, held, new_rows, n + new):
        shape = list(new_rows.shape)
        shape[-2] = (n + new) * 5 // 4 + 64     # a quarter to spare: reallocated once per quarter's growth
        fresh = new_rows.new_empty(shape)
        if n:
            fresh[..., :n, :] = held
        room = fresh
    with torch.inference_mode(room.is_inference()):   # a buffer made under inference mode takes writes only there
        room[..., n:n + new, :] = new_rows
    return room, room[..., :n + new, :]


def _holds(room: torch.Tensor | None, held: torch.Tensor, rows: torch.Tensor, size: int) -> bool:
    """Whether `held` is still the buffer's own leading view (nothing replaced it since) with room for
    `size` positions of `rows`' kind."""
    if room is None or room.shape[-2] < size or room.dtype != rows.dtype or room.device != rows.device:
        return False
    if room.shape[:-2] != rows.shape[:-2] or room.shape[-1] != rows.shape[-1]:
        return False
    return held.numel() == 0 or (held.data_ptr() == room.data_ptr() and held.stride() == room.stride())
