"""The one additive-mask builder: the tree mask, the draft heads' causal mask and the early exit's all
come from nets/attention_mask.py."""

from __future__ import annotations

import pytest
import torch

from opttree.decoding.tree_attention import tree_mask
from opttree.nets.attention_mask import additive_mask, causal_mask


def test_additive_mask_blocks_with_the_dtype_minimum():
    allowed = torch.tensor([[True, False, True], [False, False, True]])
    for dtype in (torch.float32, torch.bfloat16):
        mask = additive_mask(allowed, dtype)
        assert mask.shape == (1, 1, 2, 3) and mask.dtype == dtype
        assert torch.equal(mask[0, 0] == 0, allowed)
        assert bool((mask[0, 0][~allowed] == torch.finfo(dtype).min).all())


@pytest.mark.parametrize("prefix, new", [(0, 1), (0, 5), (3, 1), (4, 3), (10, 6)])
def test_causal_mask_is_the_tree_mask_of_a_chain(prefix, new):
    chain = [list(range(prefix, prefix + j + 1)) for j in range(new)]   # each new token sees those before it
    expected = tree_mask(prefix, prefix + new, chain, torch.float32, "cpu")
    assert torch.equal(causal_mask(prefix, new, torch.float32, "cpu"), expected)


def test_causal_mask_aligns_to_the_cache_end():
    # Two new queries after three cached keys: the first sees keys 0-3, the second keys 0-4.
    seen = causal_mask(3, 2, torch.float32, "cpu")[0, 0] == 0
    assert seen.tolist() == [[True, True, True, True, False], [True, True, True, True, True]]
