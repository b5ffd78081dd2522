"""`python -m opttree.bench.profile_step`: where a speculative step's time goes, by phase and by op."""

from __future__ import annotations

import pytest
import torch
from tiny import tiny_pair

from opttree.bench import profile_step
from opttree.config import DecodeConfig
from opttree.errors import BadInput


@pytest.fixture(scope="module")
def pair():
    # The draft is the target itself: trees get accepted, so a step commits more than one token.
    return tiny_pair("classic", draft_is_target=True)


def test_profile_step_says_where_a_step_goes(pair):
    """`python -m opttree.bench.profile_step`: a decode's time by phase (the trace's own timings), one
    draft layer's time by width (the cost curve's measurement) and the ops (torch.profiler), here on a
    tiny pair on CPU."""
    cfg = DecodeConfig(method="opt-tree", nodes=6, max_depth=3, max_new_tokens=8, temperature=0.0, retrieval="off")
    s = profile_step.profile_dtype(pair, "", cfg, ops=4, widths=(1, 4), prompt_ids=list(range(3, 15)))
    assert s["new_tokens"] == 8 and 1 <= s["steps"] < 8                  # the draft is the target: τ > 1
    assert s["mean_draft_ms"] > 0 and s["mean_verify_ms"] > 0 and 1 <= s["mean_depth"] <= 3
    assert set(s["draft_layer_ms"]) == {1, 4} and all(ms > 0 for ms in s["draft_layer_ms"].values())
    assert s["draft_base_ms"] > 0
    assert "aten::" in s["cpu_ops"] and "cuda_ops" not in s                # CPU: no CUDA table
    line = profile_step.format_summary("tiny", s)
    assert line.startswith("== tiny: ") and "draft layer by width: 1 → " in line and "begin_step" in line
    for bad in (["--nodes", "0"], ["--dtypes", " , "]):
        with pytest.raises(BadInput, match="--nodes"):
            profile_step.main(bad)


def test_a_random_target_has_the_real_ones_shape_and_not_its_weights(smollm):
    """`--random-target`: the bundled target's architecture with weights drawn at random, and the
    bundled head drafting for it, so a draft layer or a verify forward costs what it costs there."""
    rand = profile_step.random_target_pair(smollm.target_spec, "cpu", "auto")
    assert rand.target_name.endswith("(random weights)") and rand.drafter_kind == "eagle"
    assert rand.draft_model is not None and rand.dtype is torch.float32
    real_params = dict(smollm.target.named_parameters())
    shapes = {k: tuple(v.shape) for k, v in rand.target.named_parameters()}
    assert shapes == {k: tuple(v.shape) for k, v in real_params.items()}
    name = "model.layers.0.self_attn.q_proj.weight"
    assert not torch.equal(dict(rand.target.named_parameters())[name], real_params[name])
