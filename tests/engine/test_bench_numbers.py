"""A benchmark's figures are what their labels say, computed afresh from its own runs and traces."""

from __future__ import annotations

import pytest
import torch
from tiny import tiny_pair

from opttree.bench.harness import combined_acceptance, run_bench
from opttree.bench.prompts import with_given
from opttree.config import DecodeConfig
from opttree.trace import summarize
from viz.step_charts import ea_points


@pytest.fixture(autouse=True)
def one_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)   # tiny models on a shared machine
    yield
    torch.set_num_threads(old)


def test_bench_e_a_pairs_are_the_steps_that_drafted_a_tree():
    """The bench's (E(A), A) pairs, which the report's E(A)-vs-A r and slope are computed from, are the app's:
    a step without a tree (prompt lookup finding no match; a run's last single token) has E(A) = A = 0
    whatever the drafter believes and is no calibration point. Failed before: the bench kept every step,
    so a lookup run on a prompt without repeats gave its r over (0, 0) points the app's view leaves out."""
    prompts = with_given(["t5 t6 t7 t8 t5 t6 t7 t9", "t11 t12 t13"], [])
    cfg = DecodeConfig(method="ar", nodes=4, max_depth=3, max_new_tokens=12)
    pair = tiny_pair("classic", draft_is_target=True)
    result = run_bench(pair, prompts, ["ar", "opt-tree", "lookup:chain"], cfg, warmup=1, chat=False,
                       log=lambda m: None, keep_traces=[q.id for q in prompts])
    for method in ("opt-tree", "lookup:chain"):
        runs = [result["traces"][q.id][method] for q in prompts]
        points = [ea_points(t) for t in runs]
        want = [[e, a] for p in points for e, a in zip(p["ea"], p["a"])]
        assert result["ea_a"].get(method, []) == want
        assert result["methods"][method]["ea_a_steps"] == len(want)
        skipped = sum(p["skipped"] for p in points)
        assert len(want) + skipped == result["methods"][method]["steps"]
    assert sum(p["skipped"] for q in prompts for p in [ea_points(result["traces"][q.id]["lookup:chain"])]) > 0


def test_an_imported_trace_shows_the_figures_its_steps_give():
    """A trace file's summary is recomputed from its steps on import (only the measured timings, wall_s,
    tokens_per_s and prefill_ms, are the file's), so the run summary cannot state a τ, step count or mean E(A)
    its steps do not give. Failed before: only the acceptance figures were recomputed, and a file saying
    τ = 9.00 over 3 steps showed '999 tokens in 3 steps · τ = **9.00**' for a 40-token, 5-step run."""
    from opttree.engine.speculative import run
    from opttree.trace_file import dumps, loads
    from viz.metrics import run_summary

    pair = tiny_pair("classic", scale=30.0, draft_is_target=True)
    trace = run(pair, "", DecodeConfig(method="opt-tree", nodes=15, threshold=0.01, max_new_tokens=40),
                prompt_ids=[5, 6, 7, 8])
    honest = dict(trace["summary"])
    trace["summary"].update(tau=9.0, steps=3, new_tokens=999, mean_nodes=1.0, mean_depth=9.0,
                            mean_expected_accept=8.5, mean_verify_ms=0.001)
    loaded = loads(dumps(trace))
    assert loaded["summary"] == honest
    text = run_summary(loaded)
    assert f"{honest['new_tokens']} tokens in {honest['steps']} steps" in text
    assert f"τ = **{honest['tau']:.2f}**" in text
    steps = [{**s, "draft_ms": 1.0, "build_ms": 1.0, "verify_ms": 1.0} for s in trace["steps"]]   # within 3.2 s
    timed = loads(dumps({**trace, "steps": steps,
                         "summary": {**honest, "tokens_per_s": 12.5, "wall_s": 3.2, "prefill_ms": 7.0}}))
    assert [timed["summary"][k] for k in ("tokens_per_s", "wall_s", "prefill_ms")] == [12.5, 3.2, 7.0]


def test_pooling_leaves_out_an_older_results_steps_without_a_tree(tmp_path):
    """An older bench JSON holds its steps without a tree as (0, 0) pairs; pooling it into a sweep's E(A) vs A
    counts only the steps that drafted a tree, as the bench and the app do now (calibration.ea_a_pairs)."""
    import json

    from opttree.bench.pool import pool_ea_a

    older = tmp_path / "older.json"
    older.write_text(json.dumps({"ea_a": {"lookup": [[0.0, 0], [0.0, 0], [1.5, 1], [0.8, 0]]}}))
    result = {"ea_a": {"opt-tree": [[2.0, 2], [1.0, 1]]}}
    pooled = pool_ea_a(result, [older])
    assert pooled["lookup"] == [[1.5, 1], [0.8, 0]] and pooled["opt-tree"] == [[2.0, 2], [1.0, 1]]
    assert result["ea_a_pooled"]["steps"] == 4


def test_a_pooled_acceptance_rate_never_passes_one():
    """The pooled draft acceptance rate reads each run's mean nodes per step: one node over 7 steps, accepted,
    is a rate of 100 % (failed before: mean_nodes rounded to 0.14 against 0.1429 accepted, 102 %, as
    `opttree bench` printed for recycling on 8 new tokens)."""
    drafted = {"tokens": [9], "depth": [1], "expected_accept": 0.5, "accept_length": 1}
    plain = {"tokens": [], "depth": [], "expected_accept": 0.0, "accept_length": 0}
    row = summarize([drafted] + [plain] * 6, new_tokens=8, wall_s=1.0)
    assert row["draft_acceptance_rate"] == 1.0
    assert combined_acceptance([row])["draft_acceptance_rate"] == 1.0
