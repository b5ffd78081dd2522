"""A run uses exactly the positions it needs: every position of the target, and no more
(tests/engine/test_local_attention.py: sliding windows and chunks set no limit)."""

from __future__ import annotations

import pytest
import torch
from tiny import ToyTokenizer, tiny_llama
from transformers import (
    GPT2Config,
    GPT2LMHeadModel,
)

from opttree.config import DecodeConfig
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


def test_a_classic_draft_with_fewer_positions_than_the_run_needs_is_refused_by_name(tmp_path, monkeypatch):
    """The draft LM reads every position the target does, and is timed after a 128-token prefix for
    the cost curve: a GPT-2 draft has no position past its table."""
    monkeypatch.setenv("OPTTREE_COSTS", str(tmp_path))       # nothing cached: the first run measures
    torch.manual_seed(0)
    pair = with_draft(tiny_llama(0, 64))
    pair.draft_model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=64, n_positions=128,
                                                  bos_token_id=None, eos_token_id=None)).eval()
    with pytest.raises(BadInput, match="this draft model has 128 positions; measuring"):
        decode(pair, "opt-tree", 8)
    pair.draft_model.config.max_position_embeddings = 300     # the check reads the config; the table is bigger
    pair.draft_model.transformer.wpe = torch.nn.Embedding(1024, 16)
    assert len(decode(pair, "opt-tree", 291)) == 291               # 10 + 291 - 1 = 300 positions
    with pytest.raises(BadInput, match=r"exceeds the draft model's context of 300 tokens by 1"):
        decode(pair, "opt-tree", 292)


def test_a_draft_with_learned_positions_short_of_the_longer_cost_prefix_keeps_its_near_costs(tmp_path, monkeypatch):
    """The cost curve times the draft after a second, longer prefix (1,024 tokens where the target has
    room), where a 512-position GPT-2 draft has no position left. A rotary draft is not held to its
    max positions: it reads past them (less well), and the output stays the target's."""
    monkeypatch.setenv("OPTTREE_COSTS", str(tmp_path))
    torch.manual_seed(0)
    pair = with_draft(tiny_llama(0, 64))
    pair.target.config.max_position_embeddings = 2048
    pair.draft_model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=64, n_positions=512,
                                                  bos_token_id=None, eos_token_id=None)).eval()
    trace = run(pair, "", DecodeConfig(method="opt-tree", nodes=10, max_depth=6, max_new_tokens=8), chat=False,
                prompt_ids=PROMPT)
    curve = pair.cost_curve
    assert curve["longer"]["prefix_tokens"] > 512 - 128 and curve["longer"]["draft"] == curve["draft"]
    assert len(trace["output_ids"]) == 8
    rotary = with_draft(tiny_llama(0, 64))
    rotary.draft_model.config.max_position_embeddings = 16                   # a RoPE draft: no position table
    assert decode(rotary, "opt-tree", 40) == decode(with_draft(tiny_llama(0, 64)), "ar", 40)


def test_a_classic_draft_with_fewer_token_ids_than_the_tokenizer_is_refused(tmp_path):
    """A draft reads the prompt's and the target's tokens by id: a smaller table has no row for some."""
    from tiny import tiny_pair

    from opttree.drafters.registry import with_drafter

    class Tokenizer(ToyTokenizer):
        vocab_size = 64         # the base vocabulary; one token added past it, as Gemma 3's image placeholder

        def __len__(self):
            return 65

    base = tiny_pair("none")
    base.tokenizer = Tokenizer()
    tiny_llama(1, 48, layers=1).save_pretrained(tmp_path / "small")
    tiny_llama(1, 64, layers=1).save_pretrained(tmp_path / "same")
    with pytest.raises(BadInput, match="the draft model has 48 token ids, the target's tokenizer 64"):
        with_drafter(base, "classic", str(tmp_path / "small"))
    assert with_drafter(base, "classic", str(tmp_path / "same")).draft_model is not None   # 64 rows of 65 ids


def test_a_longrope_target_runs_up_to_its_switch_to_the_long_factors_and_no_further():
    """Past original_max_position_embeddings, transformers encodes a LongRoPE model's whole sequence
    again with the long factors; a kept cache cannot follow, and AR itself left `generate`'s output there."""
    from transformers import Phi3Config, Phi3ForCausalLM

    half = 4        # head_dim 8: four rotary frequencies
    config = Phi3Config(vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64,
                        num_key_value_heads=2, max_position_embeddings=512, original_max_position_embeddings=32,
                        pad_token_id=0, bos_token_id=None, eos_token_id=None,
                        rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0, "short_factor": [1.0] * half,
                                         "long_factor": [4.0 + i for i in range(half)],
                                         "original_max_position_embeddings": 32})
    torch.manual_seed(0)
    pair = with_draft(Phi3ForCausalLM(config))
    with torch.no_grad():
        want = pair.target.generate(torch.tensor([PROMPT]), max_new_tokens=23, do_sample=False)[0, len(PROMPT):]
    for method in METHODS:
        assert decode(pair, method, 23) == want.tolist(), method      # 10 + 23 - 1 = 32 positions
        with pytest.raises(BadInput, match="passes position 32, where this target's LongRoPE switches"):
            decode(pair, method, 24)
