"""A benchmark's figures are what their labels say, computed afresh from its own runs and traces."""

from __future__ import annotations

import pytest
import torch
from tiny import tiny_pair

from opttree.bench.harness import run_bench
from opttree.bench.prompts import with_given
from opttree.config import DecodeConfig
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
