"""Targets with sliding-window or chunked layers (Mistral v0.1, Gemma 2/3, Qwen 2 with its window on,
Llama 4's chunks) decode exactly at any length: the tree mask carries each local layer's window
(`attention_mask.for_model`), for the target's verification and for the drafters that run a model's
own layers (a classic draft, the early exit's first N target layers)."""

from __future__ import annotations

import pytest
import torch
from tiny import ToyTokenizer
from transformers import (
    Gemma2Config,
    Gemma2ForCausalLM,
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    Llama4ForCausalLM,
    Llama4TextConfig,
    LlamaConfig,
    MistralConfig,
    MistralForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
)

from opttree.config import LIMITS, DecodeConfig
from opttree.decoding.kv_cache import new_cache
from opttree.decoding.tree_attention import tree_mask
from opttree.decoding.verify import tree_inputs, verify_tree
from opttree.drafters.early_exit import EarlyExitDrafter, first_layers
from opttree.engine.cost import synthetic_tree
from opttree.engine.speculative import check_room, run
from opttree.errors import BadInput
from opttree.models.loading import ModelPair, load_causal_lm
from opttree.nets.attention_mask import cache_scaled_limit, causal_mask, layer_kinds, local_spans
from opttree.nets.exit_head import ExitHead, exit_config
from opttree.nets.feature_head import FeatureHead, head_config_from_target
from opttree.nets.grouped_attention import use_grouped_attention

WINDOW = 8
PROMPT = list(range(3, 23))       # 20 tokens: already past the window
TINY = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=512, eos_token_id=None, bos_token_id=None, pad_token_id=None)

FAMILIES = {   # every layer windowed; interleaved; upper layers only; chunks beside a full layer
    "mistral": lambda: MistralForCausalLM(MistralConfig(**TINY, sliding_window=WINDOW)),
    "gemma3": lambda: Gemma3ForCausalLM(Gemma3TextConfig(**TINY, head_dim=8, sliding_window=WINDOW,
                                                         sliding_window_pattern=2)),
    "qwen2": lambda: Qwen2ForCausalLM(Qwen2Config(**TINY, sliding_window=WINDOW, use_sliding_window=True,
                                                  max_window_layers=1)),
    "llama4": lambda: Llama4ForCausalLM(Llama4TextConfig(**TINY, head_dim=8, intermediate_size_mlp=64,
                                                         attention_chunk_size=WINDOW, num_local_experts=1,
                                                         interleave_moe_layer_step=2, no_rope_layers=[1, 0])),
}
LLAMA_STYLE = ("mistral", "qwen2")    # the early exit runs the target's layers one by one (Gemma scales its embedding)


def target_of(family: str, seed: int = 0):
    torch.manual_seed(seed)
    model = FAMILIES[family]()
    model.config._attn_implementation = "sdpa"
    with torch.no_grad():        # sharper logits: confident drafts, trees with accepted paths
        model.lm_head.weight.mul_(4)
    return model.eval().requires_grad_(False)


def test_the_families_have_the_local_layers_they_stand_for():
    kinds = {family: layer_kinds(target_of(family).config) for family in FAMILIES}
    assert kinds == {"mistral": ["sliding_attention"] * 2, "gemma3": ["sliding_attention", "full_attention"],
                     "qwen2": ["full_attention", "sliding_attention"],
                     "llama4": ["chunked_attention", "full_attention"]}
    assert all(local_spans(target_of(family).config) for family in FAMILIES)


def plain_logits(model, ids: list[int]) -> torch.Tensor:
    """No cache, no mask of ours: the model's own masks."""
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0]


@pytest.mark.parametrize("family", FAMILIES)
def test_a_tree_verified_past_the_window_gives_every_node_its_own_logits(family):
    target = target_of(family)
    prefix = PROMPT + list(range(30, 40))                     # 30 tokens: past the window more than thrice
    tree = synthetic_tree(14, 64, seed=3)                     # 4 layers deep
    cache = new_cache(target)
    with torch.no_grad():
        target(torch.tensor([prefix[:-1]]), past_key_values=cache, use_cache=True)
        logits, _ = verify_tree(target, cache, prefix[-1], tree, torch.device("cpu"))
    for node in range(-1, len(tree)):
        path = [] if node < 0 else [tree.tokens[a] for a in tree.path(node)]
        want = plain_logits(target, prefix + path)[-1]
        assert torch.allclose(logits[node + 1], want, atol=1e-4), (family, node)

    # The same forward without the windows in the mask is wrong: the windows matter at this length.
    truncated = new_cache(target)
    with torch.no_grad():
        target(torch.tensor([prefix[:-1]]), past_key_values=truncated, use_cache=True)
        ids, pos, mask = tree_inputs(tree, prefix[-1], len(prefix) - 1, torch.float32, "cpu")
        blind = target(input_ids=ids, position_ids=pos, attention_mask=mask, past_key_values=truncated).logits[0]
    assert not torch.allclose(blind, logits, atol=1e-3)


def with_drafter(target, kind: str) -> ModelPair:
    pair = ModelPair(target, ToyTokenizer(), "target", device=torch.device("cpu"))
    pair.drafter_kind, pair.draft_name = kind, "d"
    torch.manual_seed(1)
    if kind == "classic":            # a windowed draft of the same family
        pair.draft_model = target_of("mistral", seed=1)
    elif kind == "eagle":
        pair.draft_model = FeatureHead(head_config_from_target(target.config)).eval().requires_grad_(False)
    elif kind == "early-exit":
        pair.draft_model = ExitHead(exit_config(target.config, 1)).eval().requires_grad_(False)
    use_grouped_attention(pair.target)
    if pair.draft_model is not None:
        use_grouped_attention(pair.draft_model)
    return pair


def greedy(model, n: int) -> list[int]:
    ids = list(PROMPT)
    for _ in range(n):
        ids.append(int(plain_logits(model, ids)[-1].argmax()))
    return ids[len(PROMPT):]


CASES = [(f, k) for f in FAMILIES for k in ("classic", "eagle", "early-exit", "lookup")
         if k != "early-exit" or f in LLAMA_STYLE]


@pytest.mark.parametrize("family,kind", CASES)
def test_a_target_with_local_layers_decodes_exactly_far_past_its_window(family, kind):
    target = target_of(family)
    expected = greedy(target, 40)                              # 20 + 40 tokens: the window is 8
    pair = with_drafter(target, kind)
    for method in ("ar", "opt-tree"):
        cfg = DecodeConfig(method=method, nodes=10, max_depth=5, max_new_tokens=40)
        assert run(pair, "", cfg, chat=False, prompt_ids=PROMPT)["output_ids"] == expected, (method, kind)


def test_a_gemma2_target_loads_on_the_attention_it_has_and_decodes_exactly_past_its_window(tmp_path):
    """Gemma 2 softcaps its attention scores, which transformers' SDPA path cannot: the loader leaves the
    kernel to transformers (OPTTREE_ATTN unset), which takes eager attention for it and SDPA elsewhere."""
    torch.manual_seed(0)
    Gemma2ForCausalLM(Gemma2Config(**TINY, head_dim=8, sliding_window=WINDOW)).save_pretrained(tmp_path)
    target = load_causal_lm(str(tmp_path), torch.device("cpu"), torch.float32)
    assert target.config._attn_implementation == "eager" and layer_kinds(target.config)[0] == "sliding_attention"
    pair = ModelPair(target, ToyTokenizer(), "gemma2", device=torch.device("cpu"))
    pair.drafter_kind, pair.draft_name = "lookup", "lookup"
    cfg = DecodeConfig(method="opt-tree", nodes=10, max_depth=5, max_new_tokens=30)
    assert run(pair, "", cfg, chat=False, prompt_ids=PROMPT)["output_ids"] == greedy(target, 30)


@pytest.mark.parametrize("family", ["mistral", "gemma3"])
def test_a_classic_draft_that_is_its_windowed_target_drafts_exactly_its_guesses(family):
    """The draft's own tree forwards carry its windows: a draft identical to the target proposes the
    target's own greedy chain at every depth, so a chain is accepted whole, step after step."""
    target = target_of(family)
    pair = ModelPair(target, ToyTokenizer(), "target", device=torch.device("cpu"))
    pair.drafter_kind, pair.draft_model, pair.draft_name = "classic", target, "itself"
    trace = run(pair, "", DecodeConfig(method="chain", nodes=4, max_depth=4, max_new_tokens=41), chat=False,
                prompt_ids=PROMPT)
    assert trace["output_ids"] == greedy(target, 41)
    assert [s["accept_length"] for s in trace["steps"]] == [4] * 8 + [0]   # 8 × 5 tokens, then the last one


@pytest.mark.parametrize("family", LLAMA_STYLE)
def test_the_early_exits_first_layers_past_the_window_are_the_targets_own(family):
    target = target_of(family)
    ids = PROMPT + list(range(30, 40))
    cache = new_cache(target)
    with torch.no_grad():
        want = target(torch.tensor([ids]), output_hidden_states=True).hidden_states[1][0, -3:]
        target(torch.tensor([ids[:-3]]), past_key_values=cache, use_cache=True)
        pos = torch.arange(len(ids) - 3, len(ids))[None]
        mask = causal_mask(len(ids) - 3, 3, torch.float32, "cpu", target.config)
        got = first_layers(target, torch.tensor([ids[-3:]]), pos, mask, cache, 1)[0]
    assert torch.allclose(got, want, atol=1e-4)


@pytest.mark.parametrize("config,spans", [
    (LlamaConfig(), {}),
    (MistralConfig(sliding_window=4096), {"sliding_attention": 4096}),
    (MistralConfig(sliding_window=None), {}),                        # Mistral v0.2+: no window
    (Qwen2Config(sliding_window=4096, use_sliding_window=False), {}),
    (Qwen2Config(sliding_window=4096, use_sliding_window=True, max_window_layers=1, num_hidden_layers=2),
     {"sliding_attention": 4096}),
    (LlamaConfig(num_hidden_layers=2, layer_types=["sliding_attention", "full_attention"]), {}),  # no size given
    (None, {}),
])
def test_local_spans_read_the_config_as_transformers_does(config, spans):
    assert local_spans(config) == spans


def test_a_model_with_one_kind_of_layer_gets_one_mask_and_mixed_layers_a_mask_per_kind():
    visible = [[4], [4, 5]]                                    # a root at column 4 and its child
    positions = lambda: (torch.tensor([4, 5]), torch.arange(6))  # noqa: E731
    plain = tree_mask(4, 6, visible, torch.float32, "cpu")
    assert torch.equal(tree_mask(4, 6, visible, torch.float32, "cpu", LlamaConfig(), positions), plain)
    windowed = tree_mask(4, 6, visible, torch.float32, "cpu", MistralConfig(sliding_window=3), positions)
    seen = windowed[0, 0] == 0
    assert seen.tolist() == [[False, False, True, True, True, False], [False, False, False, True, True, True]]
    mixed = tree_mask(4, 6, visible, torch.float32, "cpu", target_of("qwen2").config, positions)
    assert set(mixed) == {"full_attention", "sliding_attention"} and torch.equal(mixed["full_attention"], plain)


@pytest.mark.parametrize("family", LLAMA_STYLE)
def test_the_early_exits_tree_layers_past_the_window_see_what_the_target_sees(family):
    """Each tree node's state after the target's first layer, computed by the drafter over the shared cache
    (its own tree mask, windows and key positions included), is the target's own for that node's text."""
    target = target_of(family)
    head = ExitHead(exit_config(target.config, 1)).eval().requires_grad_(False)
    drafter = EarlyExitDrafter(head, target, 64)
    committed = PROMPT + list(range(30, 40))                  # 30 tokens, the root the last
    seen = []
    hook = target.model.layers[0].register_forward_hook(
        lambda mod, args, out: seen.append((out[0] if isinstance(out, tuple) else out)[0]))
    tree = synthetic_tree(14, 64, seed=3)
    try:
        drafter.begin_step(committed, None)
        seen.clear()
        layers = sorted({tree.depth[i] for i in range(len(tree))})
        order = []
        for d in layers:          # a tree layer's nodes are forwarded once their parents are
            nodes = [i for i in range(len(tree)) if tree.depth[i] == d]
            drafter.distributions(tree, nodes)
            order += nodes
    finally:
        hook.remove()
    rows = torch.cat(seen)
    with torch.no_grad():
        for row, node in zip(rows, order):
            text = committed + [tree.tokens[a] for a in tree.path(node)]
            want = target(torch.tensor([text]), output_hidden_states=True).hidden_states[1][0, -1]
            assert torch.allclose(row, want, atol=1e-4), (family, node)


def test_a_stray_layer_types_on_a_model_that_ignores_it_gets_one_mask():
    """Mistral builds one mask from `sliding_window` whatever `layer_types` a checkpoint carries: a mask per
    kind would crash its forward."""
    cfg = MistralConfig(**TINY, sliding_window=WINDOW)
    cfg.layer_types = ["sliding_attention", "full_attention"]
    assert layer_kinds(cfg) == ["sliding_attention"] * 2
    torch.manual_seed(0)
    target = MistralForCausalLM(cfg).eval().requires_grad_(False)
    target.config._attn_implementation = "sdpa"
    pair = ModelPair(target, ToyTokenizer(), "target", device=torch.device("cpu"))
    pair.drafter_kind, pair.draft_name = "lookup", "lookup"
    cfg = DecodeConfig(method="opt-tree", nodes=10, max_depth=5, max_new_tokens=20)
    assert run(pair, "", cfg, chat=False, prompt_ids=PROMPT)["output_ids"] == greedy(target, 20)


def test_a_target_that_scales_queries_by_its_cache_length_keeps_its_trees_below_the_step():
    """Llama 4's NoPE layers scale queries by floor((cache length + i + 1) / floor_scale): a tree node's
    factor is its position's only while no tree crosses a step, so longer runs are refused."""
    pair = ModelPair(target_of("llama4"), ToyTokenizer(), "target", device=torch.device("cpu"))
    pair.drafter_kind, pair.draft_name = "lookup", "lookup"
    largest = LIMITS["nodes"][1] + 1
    scale = 20 + 40 - 1 + largest + 1                         # the run's 59 positions and the largest tree fit
    pair.target.config.floor_scale = scale
    assert cache_scaled_limit(pair.target.config) == scale - 1
    check_room(pair, 20, 40)
    with pytest.raises(BadInput, match="NoPE layers scale queries by the cache's length"):
        check_room(pair, 20, 41)
    pair.target.config.no_rope_layers = [1, 1]              # every layer has rope: no such scaling
    assert cache_scaled_limit(pair.target.config) is None
    assert cache_scaled_limit(target_of("mistral").config) is None
