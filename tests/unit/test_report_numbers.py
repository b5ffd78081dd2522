"""The numbers the benchmark report and the E(A)-vs-A views print say what their labels say, at the edges too:
no spread to correlate, no measured speed to compare."""

from __future__ import annotations

import pytest

from opttree.calibration import calibrate, pearson, slope


@pytest.mark.parametrize("value", [0.1, 0.3, 1.7, 2.3])
@pytest.mark.parametrize("steps", [7, 13, 30])
def test_constant_e_a_has_no_r_and_no_slope(value, steps):
    """E(A) the same at every step gives nothing to correlate A with: r and slope are None (the report's
    "n/a"), not rounding noise. Failed before: the mean of seven 0.1s is 0.10000000000000002, so the centred
    sum of squares was 1e-33 and the slope read 9.14 over 7 steps, 6.40 over 13, 3.20 over 30."""
    a = [(3 * i) % 4 for i in range(steps)]
    ea = [value] * steps
    cal = calibrate(ea, a)
    assert (cal["binned_r"], cal["slope"], cal["per_step_r"]) == (None, None, None)
    assert pearson(ea, a) is None and slope(ea, a) is None
    assert pearson(a, ea) is None


def test_a_real_spread_is_still_measured():
    """Spreads far below 1 but above the numbers' rounding still give an r and a slope."""
    ea = [1 + 1e-6 * i for i in range(10)]
    a = [i % 3 for i in range(10)]
    assert pearson(ea, a) == pytest.approx(pearson(list(range(10)), a))
    assert slope(ea, ea) == pytest.approx(1.0)


def _aggregate(speedup, tokens_per_s=40.0):
    return {"tau": 2.0, "tokens_per_s": tokens_per_s, "speedup": speedup, "draft_share": None, "exact_match": 1.0}


def test_goals_without_a_measured_speedup_claim_nothing():
    """Where AR's runs timed at 0 s (or the speedup is otherwise missing) no speedup was measured: the goals
    table says so, and claims neither "short by 1.80×" nor "slower than AR". Failed before: the missing
    speedup counted as 0, so the table read "–× | no (short by 1.80×)" and "–× | slower than AR"."""
    from opttree.bench.report import targets_section

    bench = {"methods": {"ar": _aggregate(None), "opt-tree": _aggregate(None), "opt-tree@auto": _aggregate(None)},
             "meta": {"config": {"nodes": 25}}, "runs": []}
    text = "\n".join(targets_section(bench, None))
    assert "| OPT-Tree auto ≥ 1.8× over AR (bench) | – | not measured |" in text
    assert "over AR | – | not measured |" in text
    assert "short by" not in text and "slower than AR" not in text


def test_goals_with_a_measured_speedup_say_met_or_short():
    from opttree.bench.report import targets_section

    bench = {"methods": {"ar": _aggregate(1.0), "opt-tree": _aggregate(1.09), "opt-tree@auto": _aggregate(1.45)},
             "meta": {"config": {"nodes": 25}}, "runs": []}
    text = "\n".join(targets_section(bench, None))
    assert "| OPT-Tree auto ≥ 1.8× over AR (bench) | 1.45× | no (short by 0.35×) |" in text
    assert "| fastest OPT-Tree variant (`opt-tree@auto`, n=auto) over AR | 1.45× | faster than AR |" in text


def test_compare_charts_over_one_prompt_claim_no_standard_error():
    """Over one prompt there is no standard error: the charts' subtitle and hovers say so (Compare's table
    label does too). Failed before: the subtitle read "mean ± one standard error over 1 prompt" and each
    hover "(mean ± SE over 1 prompts)"."""
    from viz.compare_charts import speed_budget_figure, tau_budget_figure

    one = {"method": "opt-tree@4", "shape": "opt-tree", "budget": 4, "capacity": None, "tau": 2.4, "tau_se": None,
           "speedup": 0.85, "speedup_se": None, "prompts": 1, "mean_nodes": 3.2}
    many = {**one, "tau_se": 0.2, "speedup_se": 0.07, "prompts": 3}
    for figure in (tau_budget_figure, speed_budget_figure):
        fig = figure({"rows": [one], "prompts": 1})
        assert "over 1 prompt (no standard error)" in fig.layout.title.text and "±" not in fig.layout.title.text
        hover = fig.data[0].hovertemplate[0]
        assert "(one prompt: no standard error)" in hover and "±" not in hover
        fig = figure({"rows": [many], "prompts": 3})
        assert "mean ± one standard error over 3 prompts" in fig.layout.title.text
        assert "± 0." in fig.data[0].hovertemplate[0] and "(mean ± SE over 3 prompts)" in fig.data[0].hovertemplate[0]


def test_the_bench_table_says_its_tokens_per_s_time_whole_runs():
    """The bench table's tokens/s and speedup are pooled over whole runs, prefill included (harness.aggregate:
    Σ tokens / Σ wall_s, AR's over the same prompts); the text under the table says so. Failed before: it said
    only "Speedup = tokens/s over AR's tokens/s in the same run", leaving a reader to assume decode-only speed."""
    from opttree.bench.report import bench_section

    agg = {k: None for k in ("speedup_median", "exact_match", "mean_draft_ms", "mean_build_ms", "mean_verify_ms",
                             "mean_nodes", "mean_depth", "mean_expected_accept", "mean_accepted_draft_tokens")}
    bench = {"meta": {"target": "t", "dtype": "float32", "drafter": "eagle", "draft": "d", "prompts": 2,
                      "warmup_runs": 1, "order": "interleaved",
                      "config": {"temperature": 0, "max_new_tokens": 8, "nodes": 4, "threshold": 0.5,
                                 "max_depth": 4}},
             "methods": {"ar": {**agg, "tau": 1.0, "tokens_per_s": 20.0, "speedup": 1.0}}, "by_category": {}}
    text = " ".join(bench_section(bench))
    assert "each run timed whole, the prompt's prefill included" in text
    assert "speedup = that over AR's tokens/s on the same prompts in the same run" in text


def _sweep(points):
    """A sweep result of OPT-Tree points (nodes, τ, measured speedup, predicted speedup)."""
    keys = ("nodes", "tau", "speedup", "predicted_speedup")
    curve = [{**dict(zip(keys, p)), "mean_depth": 2.0, "mean_expected_accept": 1.0,
              "mean_accepted_draft_tokens": 1.0} for p in points]
    from opttree.bench.sweep import best_budget

    return {"nodes": {"curves": {"opt-tree": curve}}, "threshold": {"nodes": 25, "points": []},
            "ea_a_summary": {"steps": 0, "pearson_r": None},
            "best_budget": best_budget(curve, "predicted_speedup" if points[0][3] is not None else "speedup")}


def test_the_sweep_names_the_basis_of_its_best_budget_and_the_measured_best():
    """`opttree sweep`'s closing line names which speedup chose its budget: the verify-cost model's prediction
    when the curve was measured (the default), and the budget the same run measured fastest beside it. Failed
    before: it printed "best OPT-Tree budget on this device: n=4 (speedup 1.601, τ 1.94)" with the measured
    speedup of the predicted best, while n=10 measured 1.616 in the same run (benchmarks/sweep.log)."""
    from opttree.bench.cli import format_sweep

    text = format_sweep(_sweep([(4, 1.94, 1.601, 1.603), (10, 2.29, 1.616, 1.523), (25, 2.59, 1.228, 1.202)]))
    assert "on this device: n=4 (speedup 1.601" not in text
    assert "by the speedup the verify-cost curve predicts: n=4 (predicted 1.603×, measured 1.601×, τ 1.94)" in text
    assert "by the speedup this sweep measured: n=10 (1.616×, τ 2.29; one run" in text
    same = format_sweep(_sweep([(4, 1.94, 1.65, 1.603), (10, 2.29, 1.616, 1.523)]))
    assert "by the speedup this sweep measured: n=4 (1.65×, τ 1.94; one run" in same


def test_a_sweep_without_a_cost_curve_says_its_budget_is_the_measured_best():
    """With --no-verify-cost there is no prediction: the line says the budget is the measured best."""
    from opttree.bench.cli import format_sweep

    text = format_sweep(_sweep([(4, 1.94, 1.601, None), (10, 2.29, 1.616, None)]))
    assert "by the speedup this sweep measured: n=10 (1.616×, τ 2.29; one run" in text and "predicts" not in text
