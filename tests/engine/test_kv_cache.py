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
