"""Compare's views (viz/compare_charts.py, viz/compare_table.py) on a hand-made comparison summary."""

from __future__ import annotations

from viz import style
from viz.compare_charts import BUDGET_AXIS, speed_budget_figure, summary_cost, tau_budget_figure
from viz.compare_table import ALL, budget_choices, compare_table, table_label, verdict_text

COST = {"tokens": [1, 8, 64], "verify_ms": [20.0, 30.0, 90.0], "widths": [1, 64], "layer_ms": [2.0, 9.0],
        "base_ms": 3.0, "device": "Test CPU", "dtype": "float32", "threads": 2, "measured_utc": "today"}


def row(method, shape, budget, tau, speedup, nodes, capacity=None, **more):
    return {"method": method, "shape": shape, "budget": budget, "capacity": capacity, "tau": tau, "tau_se": 0.2,
            "speedup": speedup, "speedup_se": 0.1, "prompts": 5, "tokens_per_s": 40.0 * speedup,
            "exact_match": 1.0, "mean_nodes": nodes, "mean_depth": 3.0, "mean_accepted_draft_tokens": tau - 1,
            "draft_acceptance_rate": 0.3, "mean_draft_ms": 5.0, "mean_build_ms": 1.0, "mean_verify_ms": 25.0,
            "mean_prefill_ms": 123.4, **more}


SUMMARY = {
    "rows": [row("ar", "ar", None, 1.0, 1.0, None, mean_accepted_draft_tokens=None),
             row("opt-tree@4", "opt-tree", 4, 2.6, 1.5, 4.0), row("binary@4", "binary", 4, 2.2, 1.4, 4.0),
             row("opt-tree@60", "opt-tree", 60, 4.4, 0.8, 58.0), row("binary@60", "binary", 60, 2.9, 0.7, 60.0),
             row("eagle-static@60", "eagle-static", 60, 3.0, 0.9, 25.0, capacity=25),
             row("opt-tree@auto", "opt-tree", 0, 3.2, 1.6, 6.0), row("binary@auto", "binary", 0, 2.6, 1.7, 5.0)],
    "prompts": 5, "verdict": "At the same node budget OPT-Tree accepts more tokens per step than the best static "
                             "tree at n = 60 (+47% ± 9%, vs eagle-static).",
    "cost": COST, "stopped_early": None, "greedy": True}


def test_tau_chart_puts_the_node_budget_on_the_x_axis_with_the_spread():
    fig = tau_budget_figure(SUMMARY)
    assert fig.layout.xaxis.title.text == BUDGET_AXIS and "node budget" in BUDGET_AXIS
    assert fig.layout.xaxis.type == "log" and list(fig.layout.xaxis.tickvals) == [1, 2, 4, 60]
    lines = {t.name: t for t in fig.data if t.mode == "lines+markers"}
    assert list(lines["opt-tree"].x) == [4, 60] and list(lines["opt-tree"].y) == [2.6, 4.4]
    assert list(lines["opt-tree"].error_y.array) == [0.2, 0.2]
    assert "over 5 prompts" in fig.layout.title.text
    # EAGLE-25 at n = 60: an open marker, and its hover says it drafts 25 of 60.
    eagle = next(t for t in fig.data if t.name == "eagle-static")
    assert list(eagle.marker.symbol) == [style.series_mark(2)[0] + "-open"]
    assert "drafts 25 of 60" in eagle.hovertemplate[0]
    stars = [t for t in fig.data if t.marker.symbol == "star"]
    assert {t.name for t in stars} == {"opt-tree · auto", "binary · auto"}
    assert [list(t.x) for t in stars] == [[6.0], [5.0]]           # drawn at the size the auto budget chose
    assert stars[0].marker.size > stars[1].marker.size             # two on one point nest, the later on top
    # The auto budget alone: ticks where its stars sit (powers of two), not 1 and 2 with the stars past them.
    auto_only = {**SUMMARY, "rows": [r for r in SUMMARY["rows"] if r["budget"] in (0, None)]}
    assert [1, 2, 4, 8] == list(tau_budget_figure(auto_only).layout.xaxis.tickvals)[:4]


def test_speed_chart_marks_the_auto_budget_and_ar():
    fig = speed_budget_figure(SUMMARY)
    assert fig.layout.xaxis.title.text == BUDGET_AXIS and "machine" in fig.layout.title.text
    assert fig.layout.shapes[0].y0 == 1 and fig.layout.annotations[0].text == "AR"
    auto = next(t for t in fig.data if t.name == "binary · auto")
    assert list(auto.y) == [1.7]
    # the stars sit close together: one of them carries the word, so no two labels print on each other
    stars = [t for t in fig.data if t.marker.symbol == "star"]
    assert len(stars) == 2 and [list(t.text or []) for t in stars] == [["auto"], []]
    assert summary_cost(SUMMARY).layout.shapes[0].x0 in (6.0, 7.0)
    for empty in (tau_budget_figure(None), speed_budget_figure(None)):
        assert not empty.data and "Press Compare" in empty.layout.annotations[0].text


def test_table_shows_means_with_their_spread_over_the_prompts():
    table = compare_table(SUMMARY)
    head, data = table["headers"], table["data"]
    tau, speed = head.index("τ ± SE"), head.index("speedup vs AR ± SE")
    assert table_label(SUMMARY).startswith("Each figure is a mean over 5 prompts ± one standard error")
    assert [r[:2] for r in data][:3] == [["ar", "—"], ["opt-tree", "n = 4"], ["binary", "n = 4"]]
    assert data[1][tau] == "2.60 ± 0.20" and data[1][speed] == "1.50 ± 0.10×"
    eagle = next(r for r in data if r[0] == "eagle-static")
    assert eagle[head.index("nodes / step")] == "25.0 (holds 25 of 60)"
    slow = next(r for r in data if r[:2] == ["opt-tree", "n = 60"])
    assert slow[-1].startswith("verifying 59 tokens costs") and data[1][-1] == ""
    assert next(r for r in data if r[0] == "binary")[head.index("same output as AR")] == "yes (5/5)"
    assert data[1][head.index("prefill ms / run")] == "123" and "prefill included" in table_label(SUMMARY)
    older = {**SUMMARY, "rows": [{**r, "mean_prefill_ms": None} for r in SUMMARY["rows"]]}   # not timed
    assert compare_table(older)["data"][1][head.index("prefill ms / run")] == "—"
    # A curve measured after a long prefix too is read at the runs' mean context: after 1,024 tokens,
    # 59 tokens cost (60 + 120 · 51/56) / 40 one-token forwards.
    longer = {**SUMMARY, "context_tokens": 1024.0, "cost": {**COST, "prefix_tokens": 128, "longer": {
        "prefix_tokens": 1024, "tokens": [1, 8, 64], "verify_ms": [40.0, 60.0, 180.0]}}}
    far = next(r for r in compare_table(longer)["data"] if r[:2] == ["opt-tree", "n = 60"])[-1]
    assert far.startswith("verifying 59 tokens after a mean context of 1024 tokens costs 4.2×"), far
    assert budget_choices(SUMMARY) == [ALL, "n = 4", "n = 60", "auto"]
    at_auto = compare_table(SUMMARY, "auto")["data"]
    assert [r[:2] for r in at_auto] == [["ar", "—"], ["opt-tree", "auto"], ["binary", "auto"]]
    assert compare_table(None)["data"] == []


def test_verdict_text_names_its_prompts_and_escapes():
    text = verdict_text(SUMMARY)
    assert text.startswith("**Verdict** (5 prompts;") and "OPT-Tree accepts more" in text and "± 9%" in text
    odd = {**SUMMARY, "verdict": "<b>x</b>", "stopped_early": "time budget reached: 2 of 5 prompts run"}
    assert "&lt;b&gt;" in verdict_text(odd) and "2 of 5 prompts run" in verdict_text(odd)
    assert verdict_text(None) == "" and "One prompt has no spread" in verdict_text({**SUMMARY, "prompts": 1})


def test_table_columns_share_the_width_and_hold_their_header_words():
    from viz.compare_table import CELL_PAD_PX, COLUMNS, HEADER_CHAR_PX, TABLE_PX, WIDTHS

    shares = [float(w.rstrip("%")) for w in WIDTHS]
    assert len(shares) == len(COLUMNS) and sum(shares) == 100
    for header, share in zip(COLUMNS, shares):
        longest = max(len(word) for word in header.split())
        assert longest * HEADER_CHAR_PX + CELL_PAD_PX <= TABLE_PX * share / 100, header


def test_one_prompt_and_one_child_read_in_the_singular():
    """Failed before: "over 1 prompt ± one standard error (SE) over them", "gave the node 1 children"."""
    from viz.theory import children_text

    one = table_label({**SUMMARY, "prompts": 1})
    assert "over 1 prompt (one prompt: no standard error)" in one and "over them" not in one
    assert children_text(1) == "1 child" and children_text(3, bold=True) == "**3** children"


def test_auto_stars_nest_in_the_order_their_shapes_ran():
    """Auto stars on one point nest: each later shape's star 4 px smaller, on top (style.nested_star_sizes, the
    rule the Serving chart's stars follow too); a shape without an auto budget takes no star."""
    summary = {"rows": [row("ar", "ar", None, 1.0, 1.0, None), row("opt-tree@auto", "opt-tree", 0, 3.2, 1.6, 6.0),
                        row("binary@8", "binary", 8, 2.2, 1.4, 8.0), row("chain@auto", "chain", 0, 2.0, 1.2, 6.0),
                        row("eagle-static@auto", "eagle-static", 0, 2.6, 1.7, 6.0)], "prompts": 5}
    for figure in (tau_budget_figure, speed_budget_figure):
        stars = [t for t in figure(summary).data if t.marker.symbol == "star"]
        assert [t.name for t in stars] == ["opt-tree · auto", "chain · auto", "eagle-static · auto"]
        assert [t.marker.size for t in stars] == [23, 19, 15]
    assert style.nested_star_sizes(3, smallest=15) == [23, 19, 15] and style.nested_star_sizes(0, smallest=15) == []
