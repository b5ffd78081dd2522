"""`python -m opttree.bench.profile_step`: where a speculative step's time goes, by phase and by op."""

from __future__ import annotations

import pytest
from tiny import tiny_pair

from opttree.bench import profile_step
from opttree.config import DecodeConfig
from opttree.errors import BadInput


@pytest.fixture(scope="module")
def pair():
    # The draft is the target itself: trees get accepted, so a step commits more than one token.
    return tiny_pair("classic", draft_is_target=True)


def test_profile_step_says_where_a_step_goes(pair):
    """`python -m opttree.bench.profile_step`: a decode's time by phase (the trace's own timings) and by
    op (torch.profiler), here on a tiny pair on CPU."""
    cfg = DecodeConfig(method="opt-tree", nodes=6, max_depth=3, max_new_tokens=8, temperature=0.0, retrieval="off")
    s = profile_step.profile_dtype(pair, list(range(3, 15)), cfg, ops=4)
    assert s["tokens"] == 8 and 1 <= s["steps"] < 8                      # the draft is the target: τ > 1
    assert s["draft_ms"] > 0 and s["verify_ms"] > 0 and 1 <= s["mean_depth"] <= 3
    assert s["draft_layer_ms"] == pytest.approx(s["draft_ms"] / s["mean_depth"])
    assert "aten::" in s["cpu_ops"] and "cuda_ops" not in s                # CPU: no CUDA table
    line = profile_step.format_summary("tiny", s)
    assert line.startswith("== tiny: ") and "ms a draft layer" in line
    with pytest.raises(BadInput, match="--nodes"):
        profile_step.main(["--nodes", "0"])
