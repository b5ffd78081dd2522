"""Every lesson says what its own run shows: each claim of a caption in assets/lessons.json checked on
a real run of that lesson (its prompt, pair and settings from viz/lessons.py RUNS) with the bundled
model, through the app's own run service and allow-list. The runs are the lessons' own: short (24-48
tokens), greedy, so the same on every run; each is made once per test session and shared.

Marked `model` (the bundled SmolLM2 target; a few minutes on a CPU): `-m "not model"` skips them."""

from __future__ import annotations

import statistics

import pytest

from opttree.config import SETTING_NAMES
from opttree.serve.service import RunService
from viz.lessons import PRESETS, RUNS

pytestmark = pytest.mark.model

INDEX = {key: i for i, key in enumerate(RUNS)}


def caption(key: str) -> str:
    return PRESETS[INDEX[key]]["lesson"]


@pytest.fixture(scope="module")
def lesson_run():
    """run(key, session=None, **changes) -> the finished trace of that lesson (made once, then reused)."""
    service = RunService(time_limit_s=1800)
    made: dict = {}

    def run(key: str, session: str | None = None, again: int = 0, **changes) -> dict:
        name = (key, session, again, tuple(sorted(changes.items())))
        if name not in made:
            preset = PRESETS[INDEX[key]]
            settings = {**{k: preset[k] for k in SETTING_NAMES if k in preset}, **changes}
            trace = None
            for update in service.stream(preset["model"] or service.registry.default, preset["prompt"], settings,
                                         session=session):
                trace = update.trace
            made[name] = trace
        return made[name]

    return run


def full_steps(trace: dict) -> list[dict]:
    """The steps whose tree the token limit did not cut or leave out (their depth is the method's own)."""
    return [s for s in trace["steps"] if "left to generate" not in str(s.get("stop_reason", ""))]


def depths(trace: dict) -> list[int]:
    return [max(s["depth"], default=0) for s in full_steps(trace)]


def first_layer(trace: dict) -> float:
    return statistics.mean(sum(1 for d in s["depth"] if d == 1) for s in full_steps(trace))


def tau(trace: dict) -> float:
    return trace["summary"]["tau"]


def test_deep_chain_spends_its_budget_on_depth(lesson_run):
    deep, wide = lesson_run("deep-chain"), lesson_run("wide-tree")
    assert "five layers or more" in caption("deep-chain") and "more than twice" in caption("deep-chain")
    assert min(depths(deep)) >= 5 and first_layer(deep) < first_layer(wide)
    assert tau(deep) > 2 * tau(wide), (tau(deep), tau(wide))


def test_wide_tree_spreads_its_budget_sideways(lesson_run):
    deep, wide = lesson_run("deep-chain"), lesson_run("wide-tree")
    assert "at least twice as many first-layer guesses" in caption("wide-tree")
    assert first_layer(wide) >= 2 * first_layer(deep), (first_layer(wide), first_layer(deep))
    assert statistics.mean(depths(wide)) < statistics.mean(depths(deep))


def test_high_delta_stops_after_two_to_five_layers_and_low_delta_drafts_twice_as_deep(lesson_run):
    high, low = lesson_run("high-delta"), lesson_run("low-delta")
    assert "two to five layers" in caption("high-delta") and "twice as deep" in caption("high-delta")
    assert "twice as deep" in caption("low-delta")
    assert 2 <= min(depths(high)) and max(depths(high)) <= 5, depths(high)
    assert statistics.mean(depths(low)) >= 1.7 * statistics.mean(depths(high)), (depths(low), depths(high))
    # Low δ stops where a layer adds (almost) nothing, or at the maximum depth.
    assert all("δ" in s["stop_reason"] or "max depth" in s["stop_reason"] for s in full_steps(low))


def test_the_auto_budget_verifies_a_handful_of_nodes_on_a_cpu(lesson_run):
    trace = lesson_run("auto-budget")
    assert "a handful to a dozen nodes" in caption("auto-budget")
    if trace["meta"]["device"] != "cpu":
        pytest.skip("the caption speaks of a CPU")
    nodes = [len(s["tokens"]) for s in full_steps(trace)]
    assert all(s.get("auto") for s in full_steps(trace)) and statistics.mean(nodes) <= 16, nodes


def test_a_static_binary_tree_keeps_one_shape(lesson_run):
    trace = lesson_run("static-binary")
    assert "every step has the same shape" in caption("static-binary")
    shapes = {tuple(s["parents"]) for s in full_steps(trace)}
    assert len(full_steps(trace)) >= 3 and len(shapes) == 1


def test_a_sharper_draft_grows_deeper_narrower_trees_but_tau_does_not_rise(lesson_run):
    base, sharp = lesson_run("wide-tree"), lesson_run("tree-temperature")
    text = caption("tree-temperature")
    assert "deeper trees with fewer first-layer guesses" in text and "τ does not rise" in text
    assert sharp["meta"]["tree_temperature"] == 0.3 < base["meta"]["tree_temperature"]
    assert statistics.mean(depths(sharp)) > statistics.mean(depths(base))
    assert first_layer(sharp) < first_layer(base)
    ea = [t["summary"]["mean_expected_accept"] for t in (base, sharp)]
    assert ea[1] >= 1.5 * ea[0], ea                                  # "E(A) rises by half or more"
    assert sharp["output_text"] == base["output_text"] and tau(sharp) <= tau(base)


def test_token_recycling_accepts_more_on_its_second_run(lesson_run):
    first = lesson_run("token-recycling", session="class")
    second = lesson_run("token-recycling", session="class", again=1)
    assert "the second run accepts more" in caption("token-recycling")
    assert tau(second) > tau(first), (tau(first), tau(second))


def test_prompt_lookup_accepts_whole_chains_or_one_target_token(lesson_run):
    trace = lesson_run("prompt-lookup")
    assert "chains of four tokens or more" in caption("prompt-lookup")
    assert max(s["accept_length"] for s in trace["steps"]) >= 4
    empty = [s for s in full_steps(trace) if not s["tokens"]]
    assert empty and all(len(s["committed"]) == 1 for s in empty)


def test_retrieval_fusion_adds_retrieved_and_shared_nodes_and_accepts_more(lesson_run):
    on, off = lesson_run("retrieval-fusion"), lesson_run("retrieval-fusion", retrieval="off")
    assert "triangles" in caption("retrieval-fusion") and "accepts fewer tokens" in caption("retrieval-fusion")
    sources = {src for s in on["steps"] for src in s.get("source") or []}
    assert {"retrieved", "both"} <= sources
    assert tau(on) > tau(off), (tau(on), tau(off))


def test_thompson_sampling_narrows_its_posterior_and_climbs_to_the_maximum(lesson_run):
    trace = lesson_run("thompson-sampling")
    assert "α + β grows every step" in caption("thompson-sampling")
    lengths = [s["length"] for s in trace["steps"] if s.get("length")]
    spread = [d["alpha"] + d["beta"] for d in lengths]
    assert len(spread) >= 3 and all(b > a for a, b in zip(spread, spread[1:])), spread
    seen = depths(trace)
    assert seen[0] <= 3 and max(seen) == RUNS["thompson-sampling"]["max_depth"], seen


def test_the_learned_predictor_drafts_one_layer_past_its_prediction(lesson_run):
    trace = lesson_run("learned-predictor")
    assert "one layer past the predicted accepted length" in caption("learned-predictor")
    checked = 0
    for step in full_steps(trace):
        decision = step.get("length") or {}
        if decision.get("predicted") is None or decision["depth"] >= RUNS["learned-predictor"]["max_depth"]:
            continue
        assert max(step["depth"]) == decision["depth"] and abs(decision["depth"] - 1 - decision["predicted"]) <= 0.5
        checked += 1
    assert checked >= 3


def test_early_exit_drafts_short_chains_whose_length_thompson_sampling_picks(lesson_run):
    trace = lesson_run("early-exit")
    assert "mostly a single token" in caption("early-exit")
    for step in full_steps(trace):
        assert step["parents"] == list(range(-1, len(step["parents"]) - 1))     # a chain
        assert step["length"]["control"] == "thompson" and len(step["tokens"]) <= step["length"]["depth"]
    assert statistics.median(depths(trace)) == 1


def test_sequoia_keeps_its_optimal_shape_every_step(lesson_run):
    from opttree.trees.export import rank_paths
    from opttree.trees.sequoia import optimal_tree

    trace = lesson_run("sequoia")
    assert "the same shape every step" in caption("sequoia") and "25 nodes" in caption("sequoia")
    vector = trace["meta"]["acceptance_by_rank"]
    assert trace["meta"]["acceptance_source"] == "card"          # the draft's measured vector, from its card
    want = optimal_tree(vector, 25, 10)
    assert len(full_steps(trace)) >= 3 and all(rank_paths(s) == want for s in full_steps(trace))
