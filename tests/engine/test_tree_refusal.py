"""Targets whose forward over a draft tree cannot equal their plain forwards are refused when their
config is read, before any weight loads, with the reason (`attention_mask.tree_refusal`): ALiBi, which
counts distances in cache slots; recurrent and linear-attention layers, whose state every node runs
through; GPT-Neo's local layers, windowed by cache slot. The refusal is warranted: such a model's tree
forward gives some node other logits than its plain forward."""

from __future__ import annotations

import pytest
import torch
from transformers import (
    BloomConfig,
    FalconConfig,
    Gemma2Config,
    GPTNeoConfig,
    GPTNeoForCausalLM,
    LlamaConfig,
    MambaConfig,
    MistralConfig,
    MptConfig,
    MptForCausalLM,
    PretrainedConfig,
    Qwen3NextConfig,
    Qwen3NextForCausalLM,
    RwkvConfig,
)

from opttree.decoding.kv_cache import new_cache
from opttree.decoding.verify import verify_tree
from opttree.engine.cost import synthetic_tree
from opttree.errors import BadInput
from opttree.models.loading import load_causal_lm
from opttree.nets.attention_mask import tree_refusal

SMALL = dict(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4)
REFUSED = {
    "bloom": (lambda: BloomConfig(vocab_size=64, hidden_size=32, n_layer=2, n_head=4), "ALiBi"),
    "mpt": (lambda: MptConfig(vocab_size=64, d_model=32, n_layers=2, n_heads=4, max_seq_len=128), "ALiBi"),
    "falcon with alibi": (lambda: FalconConfig(**SMALL, alibi=True), "ALiBi"),
    "jais-style": (lambda: LlamaConfig(**SMALL, position_embedding_type="alibi"), "ALiBi"),   # remote code: its key
    "mamba": (lambda: MambaConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2), "recurrent"),
    "rwkv": (lambda: RwkvConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2), "recurrent"),
    "qwen3-next": (lambda: Qwen3NextConfig(**SMALL, intermediate_size=64, num_key_value_heads=2, head_dim=8,
                                          num_experts=2, num_experts_per_tok=1, moe_intermediate_size=32,
                                          shared_expert_intermediate_size=32, linear_num_key_heads=2,
                                          linear_num_value_heads=2, linear_key_head_dim=8, linear_value_head_dim=8,
                                          layer_types=["linear_attention", "full_attention"]), "recurrent"),
    "gpt-neo": (lambda: GPTNeoConfig(vocab_size=64, hidden_size=32, num_layers=2, num_heads=4, window_size=8,
                                     attention_types=[[["global", "local"], 1]]), "cache slot"),
}


@pytest.mark.parametrize("name", REFUSED)
def test_refused_from_its_config_before_any_weight_loads(tmp_path, name):
    config, reason = REFUSED[name]
    config().save_pretrained(tmp_path)          # a config alone: loading weights would fail differently
    with pytest.raises(BadInput, match=reason):
        load_causal_lm(str(tmp_path), torch.device("cpu"), torch.float32)


class BaichuanStyle(PretrainedConfig):
    """Baichuan's config as its remote code declares it: a model type and sizes, no position scheme."""
    model_type = "baichuan"


@pytest.mark.parametrize("width, refused", [(5120, True), (4096, False)], ids=["13B (ALiBi)", "7B (rotary)"])
def test_baichuan_is_refused_where_it_uses_alibi(width, refused):
    reason = tree_refusal(BaichuanStyle(hidden_size=width, num_hidden_layers=2))
    assert (reason is not None and "ALiBi" in reason) if refused else reason is None


@pytest.mark.parametrize("config", [LlamaConfig(**SMALL), FalconConfig(**SMALL),
                                    MistralConfig(**SMALL, sliding_window=8), Gemma2Config(**SMALL, head_dim=8)],
                         ids=lambda c: c.model_type)
def test_attention_from_positions_and_the_mask_is_not_refused(config):
    assert tree_refusal(config) is None


def tree_and_plain(model, prefix: list[int]) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Every node's logits from one tree forward after `prefix`, and each node's from a plain forward
    of its own text."""
    tree = synthetic_tree(6, 64, seed=3)
    cache = new_cache(model)
    with torch.no_grad():
        model(torch.tensor([prefix[:-1]]), past_key_values=cache, use_cache=True)
        logits, _ = verify_tree(model, cache, prefix[-1], tree, torch.device("cpu"))
        plain = [model(torch.tensor([prefix + ([] if n < 0 else [tree.tokens[a] for a in tree.path(n)])])).logits[0, -1]
                 for n in range(-1, len(tree))]
    return logits, plain


@pytest.mark.parametrize("name, build", [
    ("mpt", lambda: MptForCausalLM(REFUSED["mpt"][0]())),
    ("qwen3-next", lambda: Qwen3NextForCausalLM(REFUSED["qwen3-next"][0]())),
    ("gpt-neo", lambda: GPTNeoForCausalLM(REFUSED["gpt-neo"][0]())),
])
def test_the_refused_kinds_get_some_tree_node_wrong(name, build):
    torch.manual_seed(0)
    model = build().eval().requires_grad_(False)
    logits, plain = tree_and_plain(model, list(range(3, 23)))       # 20 tokens: past GPT-Neo's window of 8
    worst = max((logits[i] - p).abs().max().item() for i, p in enumerate(plain))
    assert logits[0].allclose(plain[0], atol=1e-4)                  # the root is a plain token
    assert worst > 1e-3, name
