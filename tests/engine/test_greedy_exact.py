"""Greedy output of every method and both drafters equals the target's own greedy decoding."""

import pytest
from reference import PROMPTS, node_path, reference
from tiny import DEVICES, tiny_pair

from opttree.config import METHODS, DecodeConfig
from opttree.engine.speculative import run


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("drafter", ["classic", "eagle", "fused", "early-exit"])
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("nodes", [24, 0], ids=["n24", "auto"])
def test_tiny_models_match_generate(drafter, method, device, nodes):
    """On CUDA (when present) as well: run with a GPU and the same checks cover it. nodes = 0 is the
    auto budget (each step sized from the measured cost curve)."""
    pair = tiny_pair(drafter, eos=9, device=device)
    for prompt in PROMPTS:
        ref = reference(pair.target, prompt, 30)
        cfg = DecodeConfig(method=method, nodes=nodes, threshold=0.05, max_depth=6, max_new_tokens=30)
        trace = run(pair, "", cfg, prompt_ids=prompt)
        assert trace["output_ids"] == ref
        assert trace["summary"]["new_tokens"] == len(ref)


def test_eos_stops_like_generate():
    pair = tiny_pair("classic")
    # Choose as EOS a token the target really emits, so some runs must stop early.
    eos = reference(pair.target, [0, 1], 12)[5]
    pair.target.generation_config.eos_token_id = eos
    hits = 0
    for start in range(20):
        prompt = [start, start + 1]
        ref = reference(pair.target, prompt, 40)
        trace = run(pair, "", DecodeConfig(max_new_tokens=40, nodes=10), prompt_ids=prompt)
        assert trace["output_ids"] == ref
        hits += eos in ref
    assert hits > 0, "no prompt reached EOS: the check would be vacuous"


@pytest.mark.parametrize("method", ["chain", "binary", "eagle-static", "opt-tree"])
def test_draft_equal_to_target_accepts_full_depth(method):
    pair = tiny_pair("classic", draft_is_target=True)
    cfg = DecodeConfig(method=method, nodes=30, threshold=0.0, max_depth=5, max_new_tokens=60)
    trace = run(pair, "", cfg, prompt_ids=[4, 8, 15, 16, 23, 42])
    for step in trace["steps"][:-1]:  # the last step may be cut by max_new_tokens
        greedy_chain = [i for i, r in enumerate(step["rank"]) if r == 0 and all(
            step["rank"][a] == 0 for a in node_path(step, i))]
        deepest = max(step["depth"][i] for i in greedy_chain)
        assert step["accept_length"] == deepest
        assert all(step["rank"][a] == 0 for a in step["accepted"])
    if method != "opt-tree":
        assert all(s["accept_length"] == max(s["depth"]) for s in trace["steps"][:-1])
        assert trace["summary"]["tau"] > 0.9 * (max(trace["steps"][0]["depth"]) + 1)


BUNDLED_PROMPTS = ["Explain photosynthesis.", "Write a haiku about the sea.", "What is 17 * 23?"]


@pytest.mark.parametrize("prompt", BUNDLED_PROMPTS)
def test_bundled_smollm_matches_generate(smollm, prompt):
    """The real model: tree decoding (random head, and the target as its own classic draft)."""
    from opttree.decoding.prompts import encode_prompt
    from opttree.engine import cost
    from opttree.models.draft_assets import RANDOM_HEAD, load_feature_head
    from opttree.models.loading import ModelPair

    ids = encode_prompt(smollm.tokenizer, prompt)
    ref = reference(smollm.target, ids, 24)
    head = ModelPair(smollm.target, smollm.tokenizer, "smollm", "eagle",
                     load_feature_head(RANDOM_HEAD, smollm.target), "random")
    self_draft = ModelPair(smollm.target, smollm.tokenizer, "smollm", "classic", smollm.target, "self")
    # Exactness needs no timing of a 30-layer draft's layers (half a minute on one thread): the self-draft
    # prices its fixed-budget trees with the head's curve.
    self_draft.cost_curve = {**cost.load_or_measure(head), "key": cost.cache_key(self_draft)}
    for pair, method, nodes in [(head, "opt-tree", 20), (head, "opt-tree", 0), (self_draft, "opt-tree", 20),
                                (self_draft, "eagle-static", 20), (smollm, "ar", 20)]:
        cfg = DecodeConfig(method=method, nodes=nodes, max_depth=6, max_new_tokens=24)
        trace = run(pair, prompt, cfg)
        assert trace["output_ids"] == ref, (method, pair.draft_name, nodes)


def _tokens_left(trace):
    """Tokens each step could still commit when it started."""
    left, out = trace["meta"]["max_new_tokens"], []
    for step in trace["steps"]:
        out.append(left)
        left -= len(step["committed"])
    return out


@pytest.mark.parametrize("drafter", ["classic", "eagle", "early-exit"])
@pytest.mark.parametrize("method", [m for m in METHODS if m != "ar"])
def test_last_steps_draft_no_deeper_than_the_tokens_left(drafter, method):
    """A step that may commit only k more tokens drafts at most k - 1 layers (the bonus takes the
    last place) and none when k = 1; the output is still the target's own."""
    pair = tiny_pair(drafter, draft_is_target=True) if drafter == "classic" else tiny_pair(drafter)
    for max_new in (7, 8, 9):
        cfg = DecodeConfig(method=method, nodes=30, threshold=0.0, max_depth=5, max_new_tokens=max_new)
        trace = run(pair, "", cfg, prompt_ids=[4, 8, 15, 16, 23, 42])
        assert trace["output_ids"] == reference(pair.target, [4, 8, 15, 16, 23, 42], max_new)
        for step, left in zip(trace["steps"], _tokens_left(trace)):
            assert max(step["depth"], default=0) <= min(5, left - 1), (max_new, left, step["depth"])
            if left == 1:
                assert step["tokens"] == [] and "one token left" in step["stop_reason"]
            assert len(step["accepted"]) <= len(step["committed"])   # nothing accepted is thrown away
    if drafter == "classic":   # the draft is the target: every full step accepts to the cap
        last = trace["steps"][-1]
        assert "depth capped" in last["stop_reason"] or last["tokens"] == []


@pytest.mark.parametrize("control", ["thompson", "predictor"])
def test_bundled_smollm_with_each_length_controller_matches_generate(smollm, control):
    """The bundled pair with the trained head, the depth set by Thompson sampling or by the bundled
    length predictor (it reads this target's hidden states)."""
    from opttree.decoding.prompts import encode_prompt
    from opttree.drafters.registry import KINDS
    from opttree.models.draft_assets import load_feature_head
    from opttree.models.loading import ModelPair

    head = ModelPair(smollm.target, smollm.tokenizer, smollm.target_name, "eagle",
                     load_feature_head(KINDS["eagle"].default_draft(smollm.target_name), smollm.target), "head")
    for prompt in BUNDLED_PROMPTS[:2]:
        ids = encode_prompt(smollm.tokenizer, prompt)
        cfg = DecodeConfig(method="opt-tree", nodes=20, max_depth=8, max_new_tokens=24, length_control=control)
        trace = run(head, prompt, cfg)
        assert trace["output_ids"] == reference(smollm.target, ids, 24)
        assert all(s["length"]["control"] == control for s in trace["steps"] if s["tokens"])
