"""The tree temperature: read from a draft's card (used at T = 0 and a fixed budget), or the run's own at
any T; it changes the tree's p̂ (and so its shape) but never the output."""

import json
import re

import pytest
import torch
from reference import PROMPTS, reference
from tiny import tiny_pair

from opttree.config import DecodeConfig, check_tree_temperature
from opttree.drafters.registry import make_drafter
from opttree.engine.speculative import run
from opttree.errors import BadInput
from opttree.models.draft_assets import card_temperature


def test_card_temperature_reads_the_card_and_defaults_to_one(tmp_path):
    draft = tmp_path / "d.safetensors"
    assert card_temperature(str(draft)) == 1.0  # no card
    draft.with_suffix(".json").write_text(json.dumps({"tree_temperature": 0.6}))
    assert card_temperature(str(draft)) == 0.6
    for bad in ("oops", -1, 0, 1e9, None):
        draft.with_suffix(".json").write_text(json.dumps({"tree_temperature": bad}))
        assert card_temperature(str(draft)) == 1.0
    draft.with_suffix(".json").write_text("{not json")
    assert card_temperature(str(draft)) == 1.0
    assert card_temperature("HuggingFaceTB/some-hub-id") == 1.0 and card_temperature(None) == 1.0


def test_a_given_tree_temperature_is_checked_as_every_numeric_setting_is():
    assert check_tree_temperature("0.7") == 0.7 and check_tree_temperature(2) == 2.0
    for bad, needle in ((True, "must be a number, got True"), ("warm", "must be a number"), (9, "between 0.05 and 5"),
                        (float("nan"), "between")):
        with pytest.raises(BadInput, match=needle):
            check_tree_temperature(bad)


def test_drafter_probabilities_are_the_softmax_at_the_tree_temperature():
    pair = tiny_pair("classic")
    pair.tree_temperature = 0.5
    greedy = make_drafter(pair, DecodeConfig(nodes=60, temperature=0.0))
    sampled = make_drafter(pair, DecodeConfig(temperature=0.8))
    logits = torch.randn(3, pair.target.config.vocab_size)
    assert torch.allclose(greedy.probs(logits), torch.softmax(logits / 0.5, -1))
    assert torch.allclose(sampled.probs(logits), torch.softmax(logits, -1))  # sampling: 1 unless the run sets one
    own = make_drafter(pair, DecodeConfig(temperature=0.8, tree_temperature=0.4))
    assert torch.allclose(own.probs(logits), torch.softmax(logits / 0.4, -1))


def test_tree_temperature_changes_the_tree_not_the_output():
    cfg = DecodeConfig(method="opt-tree", nodes=16, threshold=0.05, max_depth=6, max_new_tokens=24)
    for drafter in ("classic", "eagle"):
        pair = tiny_pair(drafter, eos=9)
        traces = {}
        for t in (1.0, 0.4):
            pair.tree_temperature = t
            traces[t] = [run(pair, "", cfg, prompt_ids=p) for p in PROMPTS]
            for p, tr in zip(PROMPTS, traces[t]):
                assert tr["output_ids"] == reference(pair.target, p, 24)
                assert tr["meta"]["tree_temperature"] == t
        shapes = {t: [[(s["parents"], s["tokens"]) for s in tr["steps"]] for tr in traces[t]] for t in traces}
        assert shapes[1.0] != shapes[0.4], "a sharper draft must change p̂ and with it the trees"


def test_run_summary_says_when_the_tree_temperature_is_not_one():
    from viz.metrics import run_summary

    pair = tiny_pair("classic")
    cfg = DecodeConfig(method="opt-tree", nodes=8, max_new_tokens=6)
    pair.tree_temperature = 0.6
    assert "tree temperature 0.6" in run_summary(run(pair, "", cfg, prompt_ids=[1, 2, 3]))
    pair.tree_temperature = 1.0
    assert "tree temperature" not in run_summary(run(pair, "", cfg, prompt_ids=[1, 2, 3]))


def test_a_runs_own_tree_temperature_overrides_the_drafts_at_any_temperature():
    """The app's slider: a run's setting wins over the shared pair's fitted value (which it must
    not change: other visitors share the pair); 0 means the fitted value at T = 0 and 1 when sampling."""
    cfg = DecodeConfig(method="opt-tree", nodes=16, threshold=0.05, max_depth=6, max_new_tokens=16)
    pair = tiny_pair("eagle", eos=9)
    pair.tree_temperature = 0.8
    for setting, used in ((0.0, 0.8), (0.4, 0.4), (1.5, 1.5)):
        c = DecodeConfig(**{**cfg.to_dict(), "tree_temperature": setting})
        tr = run(pair, "", c, prompt_ids=PROMPTS[0])
        assert tr["meta"]["tree_temperature"] == used and pair.tree_temperature == 0.8
        assert tr["output_ids"] == reference(pair.target, PROMPTS[0], 16)
    sampled = {setting: run(pair, "", DecodeConfig(**{**cfg.to_dict(), "temperature": 0.7, "seed": 3,
                                                      "tree_temperature": setting}), prompt_ids=PROMPTS[0])
               for setting in (0.0, 0.4)}
    assert [sampled[t]["meta"]["tree_temperature"] for t in (0.0, 0.4)] == [1.0, 0.4]
    assert sampled[0.0]["output_ids"] == sampled[0.4]["output_ids"]      # same seed, same text: only the trees differ
    # Under the auto budget, whose speed model reads p̂ as acceptance chances, 0 means 1; a run's
    # own setting still wins.
    for setting, used in ((0.0, 1.0), (0.4, 0.4)):
        c = DecodeConfig(**{**cfg.to_dict(), "nodes": 0, "tree_temperature": setting})
        tr = run(pair, "", c, prompt_ids=PROMPTS[0])
        assert tr["meta"]["tree_temperature"] == used and tr["output_ids"] == reference(pair.target, PROMPTS[0], 16)
    # The control's label says so, not only its folded help: 0 is 1 under the auto budget and when sampling.
    from opttree.config import SETTINGS  # the declared settings, here only

    assert "1 under auto or sampling" in SETTINGS["tree_temperature"].metadata["label"]


@pytest.mark.parametrize("bad,needle", [(0.01, "0 (the draft's fitted value) or between 0.05 and 5"),
                                        (6, "tree_temperature must be between"), (-1, "must be between"),
                                        ("warm", "tree_temperature must be a number")])
def test_out_of_range_tree_temperature_setting_is_a_clear_error(bad, needle):
    with pytest.raises(BadInput, match=re.escape(needle)):
        DecodeConfig(tree_temperature=bad)
