"""A run uses exactly the positions it needs, and a target whose layers attend over a sliding window
(Mistral, Gemma 2/3, Qwen 2 with its window on) runs exactly while the run fits that window and is
refused beyond it, instead of failing every run."""

from __future__ import annotations

import pytest
import torch
from tiny import ToyTokenizer, tiny_llama
from transformers import (
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    MistralConfig,
    MistralForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
)

from opttree.config import DecodeConfig
from opttree.decoding.kv_cache import local_attention_span
from opttree.engine.speculative import run
from opttree.errors import BadInput
from opttree.models.loading import ModelPair
from opttree.nets.grouped_attention import use_grouped_attention

PROMPT = list(range(3, 13))       # 10 tokens
METHODS = ("ar", "opt-tree")


def with_draft(target) -> ModelPair:
    with torch.no_grad():        # sharper logits: confident drafts, trees with accepted paths
        target.lm_head.weight.mul_(4)
    pair = ModelPair(target.eval().requires_grad_(False), ToyTokenizer(), "target", device=torch.device("cpu"))
    pair.drafter_kind, pair.draft_model, pair.draft_name = "classic", tiny_llama(1, 64, layers=1, scale=4.0), "d"
    use_grouped_attention(pair.target)
    use_grouped_attention(pair.draft_model)
    return pair


def decode(pair, method: str, new: int) -> list[int]:
    cfg = DecodeConfig(method=method, nodes=10, max_depth=6, max_new_tokens=new)
    return run(pair, "", cfg, chat=False, prompt_ids=PROMPT)["output_ids"]


def test_a_run_may_use_every_position_of_the_target_and_no_more():
    """Learned positions (GPT-2) fail past the last one: the check lets a run reach it, not pass it."""
    torch.manual_seed(0)
    gpt2 = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=64, n_positions=256,
                                      bos_token_id=None, eos_token_id=None))
    pair = with_draft(gpt2)
    seen = []
    hook = gpt2.transformer.wpe.register_forward_pre_hook(lambda mod, args: seen.append(int(args[0].max())))
    try:
        for method in METHODS:
            seen.clear()
            assert len(decode(pair, method, 247)) == 247             # 10 + 247 - 1 = 256 positions
            assert max(seen) == 255, method                          # the last one, reached
            with pytest.raises(BadInput, match=r"\(248\) exceeds the model's context of 256 tokens by 1"):
                decode(pair, method, 248)
    finally:
        hook.remove()


TINY = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=512, eos_token_id=None, bos_token_id=None, pad_token_id=None)


def mistral(window: int | None, seed: int = 0):
    torch.manual_seed(seed)
    cfg = MistralConfig(**TINY, sliding_window=window)
    cfg._attn_implementation = "sdpa"
    return MistralForCausalLM(cfg)


def test_within_its_window_a_sliding_window_target_attends_causally():
    """What the span means in transformers' own masks: up to `span` positions the windowed model's logits
    are the plain causal model's, one more and they are not (the first key leaves the window)."""
    windowed, full = mistral(40).eval(), mistral(None).eval()
    assert local_attention_span(windowed.config) == 40 and local_attention_span(full.config) is None
    ids = torch.randint(0, 64, (1, 41), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.allclose(windowed(ids[:, :40]).logits, full(ids[:, :40]).logits, atol=1e-5)
        assert not torch.allclose(windowed(ids).logits[:, -1], full(ids).logits[:, -1], atol=1e-3)


WINDOWED = {   # Mistral: every layer windowed; Gemma 3 (interleaved) and Qwen 2 (upper layers): some
    "mistral": lambda: mistral(40),
    "gemma3": lambda: Gemma3ForCausalLM(Gemma3TextConfig(**TINY, head_dim=8, sliding_window=40,
                                                         sliding_window_pattern=2)),
    "qwen2": lambda: Qwen2ForCausalLM(Qwen2Config(**TINY, sliding_window=40, use_sliding_window=True,
                                                  max_window_layers=1)),
}


@pytest.mark.parametrize("family", WINDOWED)
def test_a_sliding_window_target_decodes_exactly_within_its_window_and_refuses_beyond(family):
    torch.manual_seed(0)
    target = WINDOWED[family]()
    target.config._attn_implementation = "sdpa"
    pair = with_draft(target)

    def plain(n: int) -> list[int]:     # greedy with no cache: every forward sees the model's own masks
        ids = torch.tensor([PROMPT])
        with torch.no_grad():
            for _ in range(n):
                ids = torch.cat([ids, target(ids).logits[:, -1].argmax(-1, keepdim=True)], 1)
        return ids[0, len(PROMPT):].tolist()

    expected = plain(31)                                                  # 10 + 31 - 1 = 40 positions
    for method in METHODS:
        assert decode(pair, method, 31) == expected, method
        with pytest.raises(BadInput, match="exceeds by 1 the 40 tokens this target's sliding-window"):
            decode(pair, method, 32)


@pytest.mark.parametrize("config,span", [
    (LlamaConfig(), None),
    (MistralConfig(sliding_window=4096), 4096),
    (MistralConfig(sliding_window=None), None),                        # Mistral v0.2+: no window
    (Qwen2Config(sliding_window=4096, use_sliding_window=False), None),
    (Qwen2Config(sliding_window=4096, use_sliding_window=True, max_window_layers=1, num_hidden_layers=2), 4096),
    (LlamaConfig(num_hidden_layers=2, layer_types=["sliding_attention", "full_attention"]), None),  # no size given
])
def test_local_attention_span_reads_the_config_as_transformers_does(config, span):
    assert local_attention_span(config) == span


def test_local_attention_span_takes_the_shortest_of_windows_and_chunks():
    cfg = LlamaConfig(num_hidden_layers=3)
    cfg.layer_types = ["sliding_attention", "chunked_attention", "full_attention"]
    cfg.sliding_window, cfg.attention_chunk_size = 512, 256
    assert local_attention_span(cfg) == 256
    cfg.layer_types = ["sliding_attention", "full_attention", "full_attention"]
    assert local_attention_span(cfg) == 512
