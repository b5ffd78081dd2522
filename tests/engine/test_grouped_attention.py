"""Grouped-query tree attention without the KV copy (nets/grouped_attention.py): the same outputs as
transformers' SDPA, the copy really gone, the fallbacks, the switch, and the cost key that tells them apart."""

from __future__ import annotations

import pytest
import torch
import transformers.integrations.sdpa_attention as hf_sdpa
from tiny import tiny_llama, tiny_pair

from opttree.decoding.kv_cache import new_cache, truncate
from opttree.decoding.verify import verify_tree
from opttree.engine import cost
from opttree.nets import grouped_attention as GA


def _tree_logits(model, prefix: torch.Tensor, tree) -> torch.Tensor:
    cache = new_cache(model)
    with torch.inference_mode():
        model(input_ids=prefix, past_key_values=cache, use_cache=True)
        logits, _ = verify_tree(model, cache, 0, tree, torch.device("cpu"))
        truncate(cache, prefix.shape[1])
    return logits


def test_a_tree_forward_matches_transformers_sdpa_and_copies_no_kv(monkeypatch):
    model = tiny_llama(seed=3, vocab=64, layers=2)
    assert model.config.num_attention_heads // model.config.num_key_value_heads == 2   # grouped
    prefix = torch.randint(0, 64, (1, 40), generator=torch.Generator().manual_seed(0))
    trees = [cost.synthetic_tree(n, 64, seed=n) for n in (1, 4, 9, 20)]
    expected = [_tree_logits(model, prefix, t) for t in trees]            # transformers' SDPA (copies)
    GA.use_grouped_attention(model)
    assert GA.attention_of(model) == GA.NAME
    calls = []
    real = GA.F.scaled_dot_product_attention

    def spy(q, k, v, **kw):
        calls.append((q.shape, k.shape))
        return real(q, k, v, **kw)

    monkeypatch.setattr(GA.F, "scaled_dot_product_attention", spy)
    monkeypatch.setattr(hf_sdpa, "repeat_kv", lambda *a, **k: pytest.fail("the KV cache was copied"))
    for tree, want in zip(trees, expected):
        got = _tree_logits(model, prefix, tree)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
        assert torch.equal(got.argmax(-1), want.argmax(-1))
    # one folded call per layer and tree: 2 KV heads, each with its group's 2 query heads stacked
    # down the query rows (2 × the tree's tokens, root included); the rest are the causal prefills
    folded = [q[2] for q, k in calls if q[1] == k[1] == 2]
    assert folded == [2 * (n + 1) for n in (1, 4, 9, 20) for _ in range(2)]


def test_the_cases_it_does_not_fold_go_to_transformers_unchanged():
    model = tiny_llama(seed=4)
    attn = model.model.layers[0].self_attn
    g = torch.Generator().manual_seed(1)
    q = torch.randn(1, 4, 3, 8, generator=g)
    k, v = torch.randn(1, 2, 10, 8, generator=g), torch.randn(1, 2, 10, 8, generator=g)
    per_head = torch.zeros(1, 4, 3, 10)                  # a mask per head: not one block shared by all
    per_head[..., 5:] = torch.finfo(torch.float32).min
    one_row = per_head[:, :1, :1]                        # one mask row broadcast to every query
    one_query = q[:, :, :1]
    for args in ((q, k, v, per_head), (one_query, k, v, None), (q, k, v, None), (q, k, v, one_row)):
        got, _ = GA.grouped_sdpa(attn, *args, scaling=attn.scaling)
        want, _ = hf_sdpa.sdpa_attention_forward(attn, *args, scaling=attn.scaling)
        assert torch.equal(got, want)
    with pytest.raises(ValueError, match="softcap"):     # transformers' refusal, not a silent fold
        GA.grouped_sdpa(attn, q, k, v, per_head[:, :1], scaling=attn.scaling, softcap=30.0)


@pytest.mark.parametrize("kind", ["float", "bool", "batch of two"])
def test_a_shared_mask_is_folded_to_transformers_numbers(kind, monkeypatch):
    model = tiny_llama(seed=4)
    attn = model.model.layers[0].self_attn
    g = torch.Generator().manual_seed(1)
    batch = 2 if kind == "batch of two" else 1
    q = torch.randn(batch, 4, 3, 8, generator=g)
    k, v = torch.randn(batch, 2, 10, 8, generator=g), torch.randn(batch, 2, 10, 8, generator=g)
    allowed = torch.rand(batch, 1, 3, 10, generator=g) > 0.4
    allowed[..., 0] = True                                 # every query sees at least one key
    mask = allowed if kind == "bool" else torch.zeros(allowed.shape).masked_fill_(~allowed, -1e30)
    want, _ = hf_sdpa.sdpa_attention_forward(attn, q, k, v, mask, scaling=attn.scaling)
    monkeypatch.setattr(hf_sdpa, "repeat_kv", lambda *a, **kw: pytest.fail("the KV cache was copied"))
    got, _ = GA.grouped_sdpa(attn, q, k, v, mask, scaling=attn.scaling)
    assert got.shape == (batch, 3, 4, 8)
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)


def _decode_logits(model, ids: torch.Tensor, steps: int) -> list[torch.Tensor]:
    """A causal prefill (no mask passed), then `steps` one-token forwards feeding back the argmax."""
    out, cache = [], new_cache(model)
    with torch.inference_mode():
        logits = model(input_ids=ids, past_key_values=cache, use_cache=True).logits[0, -1]
        out.append(logits)
        for _ in range(steps):
            nxt = logits.argmax().view(1, 1)
            logits = model(input_ids=nxt, past_key_values=cache, use_cache=True).logits[0, -1]
            out.append(logits)
    return out


def test_prefill_and_ar_forwards_are_unchanged_and_the_switch_round_trips():
    model = tiny_llama(seed=5)
    ids = torch.randint(0, 64, (1, 7), generator=torch.Generator().manual_seed(2))
    want = _decode_logits(model, ids, 4)
    GA.use_grouped_attention(model)
    GA.use_copying_attention(model)
    assert GA.attention_of(model) == "sdpa"
    GA.use_grouped_attention(model)
    assert GA.attention_of(model) == GA.NAME
    for got, ref in zip(_decode_logits(model, ids, 4), want):
        assert torch.equal(got, ref)


def test_eager_models_and_the_off_switch_are_left_alone(monkeypatch):
    eager = tiny_llama(attn="eager")
    GA.use_grouped_attention(eager)
    assert GA.attention_of(eager) == "eager"
    monkeypatch.setenv("OPTTREE_PLAIN_ATTENTION", "1")
    model = tiny_llama()
    GA.use_grouped_attention(model)
    assert GA.attention_of(model) == "sdpa"
    assert GA.attention_of(object()) is None


def test_the_loaders_switch_targets_and_drafts_and_leave_other_families_alone():
    from transformers import GPT2Config, GPT2LMHeadModel

    from opttree.models.draft_assets import RANDOM_HEAD, load_exit_head, load_feature_head
    from opttree.models.loading import prepare

    target = prepare(tiny_llama(seed=6), torch.device("cpu"))
    assert GA.attention_of(target) == GA.NAME
    assert GA.attention_of(load_feature_head(RANDOM_HEAD, target)) == GA.NAME
    load_exit_head(RANDOM_HEAD, target, 1)                   # no attention of its own: loads as before
    gpt2 = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=64))
    gpt2.config._attn_implementation = "sdpa"
    GA.use_grouped_attention(gpt2)                           # a family the fold was not checked for
    assert GA.attention_of(gpt2) == "sdpa"


@pytest.mark.parametrize("drafter", ["eagle", "classic"])
def test_decoding_never_copies_the_cache_in_a_tree_forward_and_stays_exact(drafter, monkeypatch):
    """Every masked forward over several tokens (verifications, wide draft layers) takes the fold; the
    output is still the target's own greedy output."""
    from reference import PROMPTS, reference

    from opttree.config import DecodeConfig
    from opttree.engine.speculative import run

    pair = tiny_pair(drafter)
    folded = []
    real_sdpa, real_forward = GA.F.scaled_dot_product_attention, hf_sdpa.sdpa_attention_forward

    def fallback(module, query, key, value, attention_mask, *args, **kwargs):
        if attention_mask is not None and query.shape[2] > 1:
            pytest.fail("a masked forward over several tokens went to transformers' copying SDPA")
        return real_forward(module, query, key, value, attention_mask, *args, **kwargs)

    def spy(q, k, v, **kw):
        folded.append(q.shape[1] == k.shape[1])
        return real_sdpa(q, k, v, **kw)

    monkeypatch.setattr(hf_sdpa, "sdpa_attention_forward", fallback)
    monkeypatch.setattr(GA.F, "scaled_dot_product_attention", spy)
    cfg = DecodeConfig(method="opt-tree", nodes=6, threshold=0.0, max_depth=4, max_new_tokens=16)
    for prompt in PROMPTS[:2]:
        assert run(pair, "", cfg, prompt_ids=prompt)["output_ids"] == reference(pair.target, prompt, 16)
    assert any(folded)


def test_the_cost_key_and_the_verify_cost_curve_tell_the_attentions_apart():
    from opttree.bench.verify_cost import verify_cost_curve

    pair = tiny_pair("eagle")
    GA.use_copying_attention(pair.target)
    GA.use_copying_attention(pair.draft_model)
    copying = cost.cache_key(pair)
    GA.use_grouped_attention(pair.target)
    GA.use_grouped_attention(pair.draft_model)
    grouped = cost.cache_key(pair)
    assert (copying["attention"], grouped["attention"]) == ("sdpa", GA.NAME)
    assert (copying["draft_attention"], grouped["draft_attention"]) == ("sdpa", GA.NAME)
    assert "draft_attention" not in cost.target_key(pair)
    curve = verify_cost_curve(pair, (1, 3, 9), prefix_tokens=20, reps=2, warmup=0)
    assert curve["meta"]["attention"] == GA.NAME and curve["meta"]["prefix_tokens"] == 20
    assert all(p["copy_kv_median_ms"] > 0 and p["copy_kv_relative"] > 0 for p in curve["points"])
    assert GA.attention_of(pair.target) == GA.NAME        # timing the copy leaves the fold on
    GA.use_copying_attention(pair.target)
    assert "copy_kv_median_ms" not in verify_cost_curve(pair, (1, 3), prefix_tokens=20, reps=1, warmup=0)["points"][0]
