"""KV-cache compaction keeps exactly the asked positions, moving only the tail that must move."""

import pytest
import torch
from tiny import tiny_pair

from opttree.decoding.kv_cache import compact, new_cache, truncate


class _Layer:  # the two attributes compaction touches on a transformers cache layer
    def __init__(self, keys):
        self.keys, self.values = keys.clone(), -keys.clone()


class _Cache:
    def __init__(self, keys):
        self.layers = [_Layer(keys), _Layer(2 * keys)]


@pytest.mark.parametrize("keep", [[0, 1, 2, 5, 7], [0, 1, 2, 3], [1, 3], [0, 2, 3], [], list(range(10))])
def test_compact_keeps_exactly_the_asked_positions(keep):
    keys = torch.randn(1, 2, 10, 4)
    cache = _Cache(keys)
    idx = torch.tensor(keep, dtype=torch.long)
    compact(cache, idx)
    for layer, scale in zip(cache.layers, (1, 2)):
        assert torch.equal(layer.keys, scale * keys.index_select(-2, idx))
        assert torch.equal(layer.values, -scale * keys.index_select(-2, idx))


@torch.inference_mode()
def test_a_compacted_real_cache_decodes_on_like_a_copied_one():
    """The in-place tail move on a transformers cache gives the same next-step logits as copying
    the kept positions into fresh tensors (what compaction did before)."""
    target = tiny_pair("none").target
    ids = torch.randint(0, target.config.vocab_size, (1, 9))
    caches = [new_cache(target), new_cache(target)]
    for cache in caches:
        target(input_ids=ids, past_key_values=cache, use_cache=True)
    keep = torch.tensor([0, 1, 2, 3, 4, 6, 8])      # slots 5 and 7 dropped, as a rejected branch is
    compact(caches[0], keep)
    for layer in caches[1].layers:
        layer.keys, layer.values = layer.keys.index_select(-2, keep), layer.values.index_select(-2, keep)
    nxt, pos = torch.randint(0, target.config.vocab_size, (1, 1)), torch.tensor([[7]])
    got, want = (target(input_ids=nxt, past_key_values=c, use_cache=True, position_ids=pos).logits
                 for c in caches)
    assert torch.equal(got, want) and caches[0].get_seq_length() == caches[1].get_seq_length() == 8
    truncate(caches[0], 3)
    assert caches[0].get_seq_length() == 3


def _plain_cache(model):
    from transformers import DynamicCache

    return DynamicCache(config=model.config)


@torch.inference_mode()
def test_the_growing_cache_appends_in_place_and_matches_transformers_cache():
    """A speculative run's pattern (prefill, then forwards of 1-5 rows, each followed by a compaction
    that drops some of them): every forward's logits and every layer's keys and values equal those
    of transformers' own `DynamicCache`, and the layers reallocate only when their room runs out."""
    target = tiny_pair("none").target
    g = torch.Generator().manual_seed(0)
    ours, theirs = new_cache(target), _plain_cache(target)
    assert type(ours.layers[0]).__name__ == "GrowingLayer" and type(theirs.layers[0]).__name__ == "DynamicLayer"
    ids = torch.randint(0, target.config.vocab_size, (1, 20), generator=g)
    for cache in (ours, theirs):
        target(input_ids=ids, past_key_values=cache, use_cache=True)
    buffers, moved = {id(layer.key_room) for layer in ours.layers}, 0
    for _ in range(60):
        n = ours.get_seq_length()
        rows = int(torch.randint(1, 6, (1,), generator=g))
        new = torch.randint(0, target.config.vocab_size, (1, rows), generator=g)
        pos = torch.arange(n, n + rows)[None]
        a = target(input_ids=new, position_ids=pos, past_key_values=ours, use_cache=True).logits
        b = target(input_ids=new, position_ids=pos, past_key_values=theirs, use_cache=True).logits
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
        kept = torch.randint(0, rows + 1, (1,), generator=g).item()        # keep the first `kept` new rows, some
        keep = torch.cat([torch.arange(n), n + torch.randperm(rows, generator=g)[:kept].sort().values])
        for cache in (ours, theirs):
            compact(cache, keep)
        for la, lb in zip(ours.layers, theirs.layers):
            assert torch.equal(la.keys, lb.keys) and torch.equal(la.values, lb.values)
            assert la.keys.data_ptr() == la.key_room.data_ptr()        # a view of the layer's own buffer
        now = {id(layer.key_room) for layer in ours.layers}
        moved += len(now - buffers)
        buffers = now
    grown = ours.get_seq_length() - 20
    assert grown > 40
    # 60 forwards; a layer reallocates only when a quarter's growth (at least 64 rows) is used up
    assert moved <= len(ours.layers) * (grown // 64 + 1)


def test_the_growing_cache_concatenates_under_autograd_and_takes_a_replaced_tensor():
    """With gradients on it concatenates as `DynamicLayer` does (a buffer write would change what an earlier
    step's graph saved); a tensor put in place of its keys by someone else is copied into a new buffer."""
    target = tiny_pair("none").target
    layer = new_cache(target).layers[0]
    k = torch.randn(1, 2, 3, 4, requires_grad=True)
    keys, _ = layer.update(k, k * 2)
    assert layer.key_room is None and torch.equal(keys, k)
    keys.sum().backward()
    assert torch.equal(k.grad, torch.ones_like(k))
    layer.update(torch.randn(1, 2, 1, 4), torch.randn(1, 2, 1, 4))     # grad mode on: no buffer either
    assert layer.key_room is None and layer.get_seq_length() == 4
    with torch.no_grad():
        layer.update(torch.randn(1, 2, 1, 4), torch.randn(1, 2, 1, 4))
    assert layer.keys.data_ptr() == layer.key_room.data_ptr() and layer.get_seq_length() == 5
    layer = new_cache(target).layers[0]
    with torch.inference_mode():
        layer.update(torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4))
        replaced = torch.randn(1, 2, 5, 4)
        layer.keys, layer.values = replaced, -replaced
        new = torch.randn(1, 2, 1, 4)
        keys, values = layer.update(new, -new)
    assert torch.equal(keys, torch.cat([replaced, new], -2)) and torch.equal(values, -keys)
    assert keys.data_ptr() == layer.key_room.data_ptr() != replaced.data_ptr()
    want = keys[..., [0, 2, 5], :].clone()
    compact(_Wrap(layer), torch.tensor([0, 2, 5]))     # outside inference mode it still moves rows in its buffer
    assert torch.equal(layer.keys, want) and layer.keys.data_ptr() == layer.key_room.data_ptr()


class _Wrap:      # a cache of one layer, for `compact`
    def __init__(self, layer):
        self.layers = [layer]
