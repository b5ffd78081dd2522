"""The draft heads' plain decoder forward (nets/draft_decoder.py) computes what transformers'
`LlamaModel.forward` computes over the same layers, and leaves the same keys and values in the cache:
causally with and without a cache before it, under a tree mask, one query row, a batch with a mask per
sequence, the EAGLE checkpoints' missing norms, two layers, each attention implementation, and gradients."""

from __future__ import annotations

import pytest
import torch
from tiny import tiny_llama

from opttree.decoding.kv_cache import new_cache
from opttree.decoding.tree_attention import tree_mask
from opttree.nets import grouped_attention as GA
from opttree.nets.draft_decoder import decoder_forward
from opttree.nets.feature_head import FeatureHead, head_config_from_target


def _head(layers: int = 1, eagle_norms: bool = False, attention: str = "grouped", seed: int = 0) -> FeatureHead:
    target = tiny_llama(seed=seed, layers=2, hidden=32)
    assert target.config.num_attention_heads > target.config.num_key_value_heads   # grouped queries
    cfg = head_config_from_target(target.config, layers=layers)
    cfg["eagle_norms"] = eagle_norms
    torch.manual_seed(seed)
    head = FeatureHead(cfg).eval()
    with torch.no_grad():      # norms away from 1 and a rotary base that matters: nothing passes by default
        for p in head.parameters():
            p.add_(0.1 * torch.randn_like(p))
    if attention == "grouped":
        GA.use_grouped_attention(head.decoder)
    else:
        head.decoder.config._attn_implementation = attention
    return head


def _reference(decoder, x, pos, mask=None, cache=None):
    return decoder(inputs_embeds=x, position_ids=pos, attention_mask=mask, past_key_values=cache,
                   use_cache=cache is not None).last_hidden_state


def _prefilled(decoder, n: int, g: torch.Generator):
    """Two caches holding the same n positions, each filled by `LlamaModel` itself."""
    x = torch.randn(1, n, decoder.config.hidden_size, generator=g)
    caches = new_cache(decoder), new_cache(decoder)
    for cache in caches:
        _reference(decoder, x, torch.arange(n)[None], None, cache)
    return caches


def _same_caches(a, b):
    assert a.get_seq_length() == b.get_seq_length()
    for la, lb in zip(a.layers, b.layers):
        torch.testing.assert_close(la.keys, lb.keys, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(la.values, lb.values, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("attention", ["grouped", "sdpa", "eager"])
@pytest.mark.parametrize("layers,eagle_norms", [(1, False), (2, False), (1, True)])
def test_causal_with_and_without_a_cache_and_under_a_tree_mask(layers, eagle_norms, attention):
    head = _head(layers, eagle_norms, attention)
    dec = head.decoder
    h = dec.config.hidden_size
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        # causal, no cache: a training batch's first depth (two sequences)
        x, pos = torch.randn(2, 9, h, generator=g), torch.arange(9)[None].expand(2, 9)
        torch.testing.assert_close(decoder_forward(dec, x, pos), _reference(dec, x, pos), rtol=1e-5, atol=1e-5)

        # causal after a cache: begin_step's new committed tokens (the mask must align to the cache's end)
        for new in (1, 3):
            ours, theirs = _prefilled(dec, 6, g)
            x, pos = torch.randn(1, new, h, generator=g), torch.arange(6, 6 + new)[None]
            torch.testing.assert_close(decoder_forward(dec, x, pos, None, ours), _reference(dec, x, pos, None, theirs),
                                       rtol=1e-5, atol=1e-5)
            _same_caches(ours, theirs)

        # a tree layer: 4 nodes after 6 committed positions and 2 earlier tree slots
        ours, theirs = _prefilled(dec, 8, g)
        mask = tree_mask(6, 12, [[6, 8], [6, 9], [7, 10], [11]], torch.float32, "cpu")
        x, pos = torch.randn(1, 4, h, generator=g), torch.tensor([[8, 8, 8, 7]])
        got = decoder_forward(dec, x, pos, mask, ours)
        torch.testing.assert_close(got, _reference(dec, x, pos, mask, theirs), rtol=1e-5, atol=1e-5)
        _same_caches(ours, theirs)


def test_a_cached_forward_is_the_forward_over_the_whole_sequence():
    """Independent of transformers: feeding a sequence in pieces through the cache gives the rows of
    one causal forward over all of it."""
    dec = _head(layers=2).decoder
    g = torch.Generator().manual_seed(2)
    x = torch.randn(1, 10, dec.config.hidden_size, generator=g)
    with torch.no_grad():
        whole = decoder_forward(dec, x, torch.arange(10)[None])
        cache, parts, at = new_cache(dec), [], 0
        for n in (4, 1, 3, 2):
            parts.append(decoder_forward(dec, x[:, at:at + n], torch.arange(at, at + n)[None], None, cache))
            at += n
    torch.testing.assert_close(torch.cat(parts, 1), whole, rtol=1e-5, atol=1e-5)
    assert cache.get_seq_length() == 10


def test_a_masked_batch_and_its_gradients_match():
    """Training's later depths: a batch with one (n, k·n) mask each, and the gradients through it."""
    head = _head()
    head.train()
    dec = head.decoder
    g = torch.Generator().manual_seed(3)
    h = dec.config.hidden_size
    ours, theirs = new_cache(dec), new_cache(dec)
    x0 = torch.randn(2, 5, h, generator=g)
    pos0 = torch.arange(5)[None].expand(2, 5)
    with torch.no_grad():
        decoder_forward(dec, x0, pos0, None, ours)
        _reference(dec, x0, pos0, None, theirs)
    neg = torch.finfo(torch.float32).min
    mask = torch.cat([torch.full((5, 5), neg).triu(1), torch.full((5, 5), neg).fill_diagonal_(0.0)], 1)
    mask = torch.stack([mask, mask.clone()])[:, None]
    mask[1, 0, 3, :5] = neg            # the second sequence's row 3 sees only its own earlier depth: masks differ
    x = torch.randn(2, 5, h, generator=g)
    grads = []
    for run, cache in ((decoder_forward, ours), (_reference, theirs)):
        head.zero_grad()
        xi = x.clone().requires_grad_(True)
        out = run(dec, xi, pos0 + 1, mask, cache)
        (out ** 2).sum().backward()
        grads.append((out.detach(), xi.grad, [p.grad.clone() for p in dec.parameters() if p.grad is not None]))
    (o1, gx1, gp1), (o2, gx2, gp2) = grads
    torch.testing.assert_close(o1, o2, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(gx1, gx2, rtol=1e-4, atol=1e-5)
    assert len(gp1) == len(gp2) > 0
    for a, b in zip(gp1, gp2):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_the_head_runs_through_it(monkeypatch):
    """FeatureHead.features goes through decoder_forward, never through LlamaModel.forward, and its
    attention is the one the config names: the fold when switched on, transformers' otherwise."""
    head = _head()
    folded = []
    real = GA.grouped_sdpa
    monkeypatch.setattr("opttree.nets.draft_decoder.grouped_sdpa", lambda *a, **k: folded.append(1) or real(*a, **k))
    monkeypatch.setattr(type(head.decoder), "forward", lambda *a, **k: pytest.fail("LlamaModel.forward ran"))
    h = head.config["hidden_size"]
    out = head.features(torch.randn(1, 3, h), torch.randn(1, 3, h), torch.arange(3)[None])
    assert out.shape == (1, 3, h) and torch.isfinite(out).all() and folded == [1]
    GA.use_copying_attention(head.decoder)
    head.features(torch.randn(1, 3, h), torch.randn(1, 3, h), torch.arange(3)[None])
    assert folded == [1]
