"""The early-exit drafter (EESD-style): the target's first N layers on the target's own KV cache plus an
exit head. Greedy output is the target's with every method and length controller (the shared checks
in test_greedy_exact, test_sampling_lossless and test_length_control run it too); the shared cache
is handed back exactly as the target left it; an exit head equal to the target's last layer drafts
exactly what the target would say; bad exit layers and unsupported targets get clear messages."""

from __future__ import annotations

import pytest
import torch
from reference import node_path, reference
from tiny import ToyTokenizer, tiny_llama, tiny_pair

from opttree.config import METHODS, DecodeConfig
from opttree.decoding.kv_cache import new_cache
from opttree.drafters.early_exit import check_matches_target, first_layers
from opttree.drafters.registry import make_drafter
from opttree.engine.speculative import run
from opttree.errors import BadInput
from opttree.models.loading import ModelPair
from opttree.nets.attention_mask import causal_mask
from opttree.nets.exit_head import ExitHead, exit_config
from opttree.trees.draft_tree import ROOT, DraftTree

PROMPTS = [[3, 5, 7, 11, 13], [1], [40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50]]


@pytest.mark.parametrize("n", [1, 2, 3])
def test_first_layers_are_the_targets_hidden_states_with_and_without_a_cache(n):
    model = tiny_llama(layers=4)
    ids = torch.tensor([[5, 9, 2, 33, 7, 1]])
    full = model(input_ids=ids, output_hidden_states=True).hidden_states[n]
    pos = torch.arange(6)[None]
    alone = first_layers(model, ids, pos, causal_mask(0, 6, torch.float32, ids.device), None, n)
    torch.testing.assert_close(alone, full)
    # Four tokens into a cache, then two more on top of it: the same states, and only layers < n grow.
    cache = new_cache(model)
    first_layers(model, ids[:, :4], pos[:, :4], causal_mask(0, 4, torch.float32, ids.device), cache, n)
    tail = first_layers(model, ids[:, 4:], pos[:, 4:], causal_mask(4, 2, torch.float32, ids.device), cache, n)
    torch.testing.assert_close(tail, full[:, 4:])
    grown = [getattr(layer, "keys", None) is not None and layer.keys.shape[-2] == 6 for layer in cache.layers]
    assert grown == [i < n for i in range(4)]


@pytest.mark.parametrize("exit_layer", [1, 3])
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("control", ["delta", "thompson"])
def test_greedy_output_is_the_targets(method, exit_layer, control):
    pair = tiny_pair("early-exit", eos=9, layers=4, exit_layer=exit_layer)
    for prompt in PROMPTS:
        ref = reference(pair.target, prompt, 30)
        cfg = DecodeConfig(method=method, nodes=24, threshold=0.05, max_depth=6, max_new_tokens=30,
                           length_control=control, seed=3)
        trace = run(pair, "", cfg, prompt_ids=prompt)
        assert trace["output_ids"] == ref, (prompt, method)
        assert trace["meta"]["drafter"] == ("none" if method == "ar" else "early-exit")


def test_greedy_output_is_the_targets_with_the_auto_budget_and_retrieval_fusion():
    pair = tiny_pair("early-exit", eos=9, layers=4, exit_layer=2)
    prompt = [3, 5, 7, 3, 5, 7, 3, 5, 7, 11]
    ref = reference(pair.target, prompt, 30)
    for cfg in (DecodeConfig(nodes=0, max_new_tokens=30), DecodeConfig(nodes=20, retrieval="on", max_new_tokens=30)):
        assert run(pair, "", cfg, prompt_ids=prompt)["output_ids"] == ref


def _perfect_pair() -> ModelPair:
    """A target and an exit head after layer L-1 that IS the target's last layer and final norm (no
    reduced vocabulary): its draft distribution is the target's own, if the drafter runs the first
    L-1 layers on the right cache slots, positions and mask."""
    target = tiny_llama(layers=3, scale=4.0)
    head = ExitHead(exit_config(target.config, 2))
    head.decoder.layers[0].load_state_dict(target.model.layers[2].state_dict())
    head.decoder.norm.load_state_dict(target.model.norm.state_dict())
    pair = ModelPair(target, ToyTokenizer(), "tiny-target")
    pair.drafter_kind, pair.draft_model, pair.draft_name = "early-exit", head.eval(), "perfect-exit"
    return pair


@pytest.mark.parametrize("method", ["chain", "opt-tree"])
def test_an_exit_head_equal_to_the_target_drafts_what_the_target_says(method):
    pair = _perfect_pair()
    cfg = DecodeConfig(method=method, nodes=20, threshold=0.0, max_depth=5, max_new_tokens=60)
    trace = run(pair, "", cfg, prompt_ids=[4, 8, 15, 16, 23, 42])
    assert trace["output_ids"] == reference(pair.target, [4, 8, 15, 16, 23, 42], 60)
    for step in trace["steps"][:-1]:   # the last step may be cut short by max_new_tokens
        # Every node on the draft's greedy path is accepted: the deepest one the tree holds.
        greedy = [i for i in range(len(step["rank"])) if all(step["rank"][a] == 0 for a in node_path(step, i))]
        assert step["accept_length"] == max(step["depth"][i] for i in greedy)
    if method == "chain":
        assert all(step["accept_length"] == 5 for step in trace["steps"][:-1])
    assert trace["steps"][0]["q"][0] == pytest.approx(trace["steps"][0]["p_target"][0], abs=1e-5)


def test_the_shared_cache_is_handed_back_as_the_target_left_it():
    pair = tiny_pair("early-exit", layers=4, exit_layer=2)
    committed = [3, 5, 7, 11, 13, 17]
    cache = new_cache(pair.target)
    pair.target(input_ids=torch.tensor([committed[:-1]]), past_key_values=cache, use_cache=True)
    before = [(layer.keys.clone(), layer.values.clone()) for layer in cache.layers]
    feats = pair.target(input_ids=torch.tensor([committed[:-1]]), output_hidden_states=True).hidden_states[2][0]
    drafter = make_drafter(pair, DecodeConfig(nodes=10))
    drafter.attach(cache)
    drafter.begin_step(committed, feats)
    tree = DraftTree()
    ids, q = drafter.top_children(tree, [ROOT], 3)
    for rank, (t, p) in enumerate(zip(ids[0].tolist(), q[0].tolist())):
        tree.add(ROOT, t, p, rank)
    drafter.top_children(tree, list(range(len(tree))), 3)   # a second layer grows the first 2 layers' cache
    assert cache.layers[0].keys.shape[-2] == len(committed) + len(tree)
    drafter.finish_tree(tree, {}, DecodeConfig(nodes=10))
    for layer, (k, v) in zip(cache.layers, before):
        assert torch.equal(layer.keys, k) and torch.equal(layer.values, v)


def test_bad_exit_layers_and_unsupported_targets_get_clear_messages():
    target = tiny_llama(layers=4)
    for bad in (0, 4, -1, 2.5):
        with pytest.raises(BadInput, match="exit layer"):
            exit_config(target.config, bad)
    from transformers import GPT2Config, GPT2LMHeadModel

    gpt2 = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=64)).eval()
    with pytest.raises(BadInput, match="Llama-style"):
        check_matches_target(gpt2, 1)


def test_a_head_for_another_layer_is_refused_clearly(tmp_path):
    from opttree.models.draft_assets import load_exit_head
    from opttree.train.common import export_fp16

    target = tiny_llama(layers=4)
    head = ExitHead(exit_config(target.config, 2))
    path = tmp_path / "exit.safetensors"
    export_fp16(path, head.state_dict(), head.config)
    assert load_exit_head(str(path), target).exit_layer == 2
    assert load_exit_head(str(path), target, exit_layer=2).exit_layer == 2
    with pytest.raises(BadInput, match="exits after layer 2, not 3"):
        load_exit_head(str(path), target, exit_layer=3)


def test_exit_layer_is_refused_for_other_drafters():
    from opttree.drafters.registry import with_drafter

    base = tiny_pair("none")
    for drafter in ("recycling", "lookup", "eagle", "none"):
        with pytest.raises(BadInput, match="early-exit drafter only"):
            with_drafter(base, drafter, exit_layer=1)
    assert with_drafter(base, "recycling").drafter_kind == "recycling"
