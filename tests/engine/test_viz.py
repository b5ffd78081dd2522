"""The pure view builders in viz/, on stored traces (a tiny-model run and hand-made steps)."""

import json

import pytest
from tiny import tiny_pair

from opttree.calibration import calibrate, pearson
from opttree.config import DecodeConfig
from opttree.engine.speculative import run, stream_run
from opttree.trace import summarize
from opttree.trace_file import dumps, loads
from viz import style
from viz.cost_chart import cost_figure
from viz.metrics import run_summary, step_metrics, why_slower
from viz.step_charts import BADGE_PX, accept_bars, ea_density, ea_points, why_shape
from viz.text_view import text_html, token_pieces
from viz.tree_figure import FRAME_PX, MAX_HEIGHT, ROW_PX, TITLE_TOP, figure_height, tree_figure
from viz.tree_layout import tidy_layout


@pytest.fixture(scope="module")
def trace():
    # The target drafting for itself: confident, multi-token acceptance and non-trivial trees.
    pair = tiny_pair("classic", draft_is_target=True)
    return run(pair, "", DecodeConfig(method="opt-tree", nodes=12, threshold=0.01, max_depth=4,
                                      max_new_tokens=10), prompt_ids=[5, 6, 7])


def make_step(parents, p_hat, texts=None, accepted=(), rejected=None):
    """A hand-made trace step (q derived so that p̂ = product of q along the path)."""
    n = len(parents)
    depth, q = [], []
    for i, p in enumerate(parents):
        depth.append(1 if p == -1 else depth[p] + 1)
        q.append(p_hat[i] / (1.0 if p == -1 else p_hat[p]))
    return {"tokens": list(range(n)), "texts": texts or [f"w{i}" for i in range(n)], "parents": parents,
            "depth": depth, "q": q, "p_hat": p_hat, "rank": [0] * n, "accepted": list(accepted),
            "accept_length": len(accepted), "bonus_token": 99, "bonus_text": " end", "rejected": rejected,
            "committed": [*accepted, 99], "expected_accept": sum(p_hat), "ea_by_depth": [0.0, 1.0],
            "stop_reason": "test", "draft_ms": 1.0, "build_ms": 1.0, "verify_ms": 1.0}


def by_name(fig, prefix):
    hits = [t for t in fig.data if (t.name or "").startswith(prefix)]
    return hits[0] if hits else None


# ---------------------------------------------------------------- layout

def test_layout_depth_rows_and_straight_chain():
    parents = [-1, -1, -1, 0, 0, 3, 1]
    p_hat = [0.6, 0.2, 0.1, 0.4, 0.1, 0.3, 0.1]
    x, y, root_y, rows = tidy_layout(parents, p_hat)
    assert x == [1, 1, 1, 2, 2, 3, 2]
    leaves = [i for i in range(len(parents)) if i not in parents]
    assert sorted(y[i] for i in leaves) == list(range(rows))        # one row per leaf, no overlaps
    assert root_y == y[0] == y[3] == y[5]                            # the likeliest chain is straight
    for node in range(-1, len(parents)):                             # parents sit within their children
        kids = [i for i, p in enumerate(parents) if p == node]
        if kids:
            here = root_y if node == -1 else y[node]
            assert min(y[k] for k in kids) <= here <= max(y[k] for k in kids)


def test_layout_handles_empty_and_deep_chains():
    assert tidy_layout([], []) == ([], [], 0.0, 1)
    n = 3000  # far deeper than the recursion limit
    x, y, _, rows = tidy_layout([i - 1 for i in range(n)], [0.9] * n)
    assert x[-1] == n and set(y) == {0.0} and rows == 1


# ---------------------------------------------------------------- tree figure

def test_tree_figure_traces_from_a_real_trace(trace):
    for step in trace["steps"]:
        fig = tree_figure(step, "t")
        names = [t.name for t in fig.data]
        assert names[:2] == ["draft edges", "draft nodes"]
        edges, nodes = fig.data[0], fig.data[1]
        n = len(step["tokens"])
        assert len(edges.x) == 3 * n and list(edges.x[2::3]) == [None] * n   # one trace, None-separated
        assert list(nodes.marker.color) == style.colour_values("log_p_hat", step["p_hat"], step["q"])
        assert list(tree_figure(step, colour="p_hat").data[1].marker.color) == step["p_hat"]
        assert list(tree_figure(step, colour="q").data[1].marker.color) == step["q"]
        acc = by_name(fig, "accepted path")
        assert acc is not None and len(acc.x) == 1 + len(step["accepted"])   # root + accepted nodes
        assert list(acc.marker.symbol[1:]) == ["diamond"] * len(step["accepted"])
        assert acc.line.width > edges.line.width
        assert (by_name(fig, "first rejected") is not None) == (step["rejected"] is not None)
        assert by_name(fig, "bonus token") is not None


def test_the_title_starts_below_the_pages_label_chip_and_ends_above_the_depth_ticks(trace):
    fig = tree_figure(trace["steps"][0], "opt-tree · step 1/3<br>accepted 1")
    title, margin = fig.layout.title, fig.layout.margin
    assert (title.yref, title.yanchor, title.y) == ("container", "top", 1) and title.pad.t >= TITLE_TOP
    assert margin.t - title.pad.t >= 20 * 3                  # two lines, then the ticks' row


def test_the_first_rejected_tokens_label_starts_clear_of_its_x():
    step = make_step([-1, -1, 0], [0.6, 0.3, 0.5], texts=["a", "b", "c"], accepted=[0], rejected=2)
    labels = list(tree_figure(step).data[1].text)
    assert labels[1] == "b" and labels[2] == "\u2002c"        # only the rejected node's label moves right
    assert by_name(tree_figure(step), "first rejected").marker.size > tree_figure(step).data[1].marker.size


@pytest.mark.parametrize("mode,limits,word", [("log_p_hat", (style.LOG_FLOOR, 0), "log"),
                                               ("p_hat", style.P_HAT_RANGE, "p̂"), ("q", (0.0, 1.0), "q")])
def test_colour_scale_is_fixed_and_titled(trace, mode, limits, word):
    axes = [tree_figure(s, colour=mode).layout.coloraxis for s in trace["steps"]]
    axes.append(tree_figure(None, colour=mode).layout.coloraxis)
    first = axes[0].to_plotly_json()
    assert (first["cmin"], first["cmax"]) == limits
    assert word in first["colorbar"]["title"]["text"]       # the colour bar says what it shows
    # ... in at most two lines along a thin bar: its width comes out of the tree's (a third of it on a phone)
    assert first["colorbar"]["title"]["text"].count("<br>") <= 1 and first["colorbar"]["thickness"] <= 12
    assert all(a.to_plotly_json() == first for a in axes)


def test_log_scale_separates_small_p_hat():
    # On the linear scale p̂ = 0.001 and 0.03 are the same dark colour (both < 3 % of the range);
    # on the log scale they are half the range apart. Values at or below the floor share the bottom.
    lin = style.colour_values("p_hat", [0.001, 0.03], [1, 1])
    log = style.colour_values("log_p_hat", [0.001, 0.03, 1e-9, 0.0], [1, 1, 1, 1])
    assert lin[1] - lin[0] < 0.03 and log[1] - log[0] > 1.4
    assert log[2] == log[3] == style.LOG_FLOOR and style.colour_values("log_p_hat", [1.0], [1])[0] == 0


def test_sources_get_their_own_marks_and_legend_entries():
    step = make_step([-1, 0, 0, 1], [0.6, 0.3, 0.2, 0.1], accepted=[0])
    plain = tree_figure(step)                         # an older trace: no source at all
    assert not [t for t in plain.data if t.name and t.name.split(" (")[0] in
                {m["name"].split(" (")[0] for m in style.SOURCE_MARKS.values()}]
    step["source"] = ["both", "draft", "retrieved", "retrieved"]
    fig = tree_figure(step)
    retrieved = by_name(fig, style.SOURCE_MARKS["retrieved"]["name"])
    both = by_name(fig, style.SOURCE_MARKS["both"]["name"])
    assert retrieved is not None and both is not None and by_name(fig, "recycled") is None
    assert list(retrieved.x) == [fig.data[1].x[2], fig.data[1].x[3]] and retrieved.name.endswith("(2)")
    assert retrieved.marker.symbol != both.marker.symbol and retrieved.marker.color != both.marker.color
    assert list(fig.data[1].marker.color) == list(plain.data[1].marker.color)   # node colours unchanged
    assert "from: retrieval" in fig.data[1].hovertext[2] and "draft model" in fig.data[1].hovertext[1]
    names = [t.name for t in fig.data]
    assert names.index(retrieved.name) < names.index(by_name(fig, "accepted path").name)   # drawn below it
    step["source"] = ["recycled"] * 4
    assert by_name(tree_figure(step), style.SOURCE_MARKS["recycled"]["name"]).name.endswith("(4)")


def test_hover_shows_whitespace_and_escapes_markup():
    step = make_step([-1, 0], [0.5, 0.25], texts=[" a\n", "<b>x</b>"], accepted=[0])
    fig = tree_figure(step)
    hover = " ".join(fig.data[1].hovertext)
    assert "␣a↵" in hover and "&lt;b&gt;x&lt;/b&gt;" in hover
    assert "q = " in hover and "p̂ = " in hover and "depth" in hover and "rank" in hover


def test_height_grows_with_leaves_and_500_nodes_build():
    wide = make_step([-1] * 400, [0.001] * 400)
    small = make_step([-1, 0], [0.5, 0.25])
    assert tree_figure(wide).layout.height > tree_figure(small).layout.height
    assert figure_height(400) > figure_height(40) >= figure_height(1)
    parents = [-1] * 20 + [i // 24 for i in range(480)]
    p_hat = [0.04] * 20 + [0.001] * 480
    fig = tree_figure(make_step(parents, p_hat, accepted=[0]))
    assert len(fig.data[1].x) == 500 and fig.data[1].text is None     # labels dropped when crowded
    json.loads(fig.to_json())
    # At most MAX_HEIGHT tall (the scrubber below stays near): 480 rows squeeze into it.
    assert fig.layout.height == MAX_HEIGHT < FRAME_PX + ROW_PX * 480


def test_empty_tree_and_placeholder():
    assert tree_figure(None).layout.annotations
    fig = tree_figure(make_step([], []))
    assert by_name(fig, "bonus token") is not None


# ---------------------------------------------------------------- text

def test_text_is_escaped_coloured_and_clickable():
    step = make_step([-1, 0], [0.9, 0.8], texts=["<script>", "alert(1)"], accepted=[0, 1])
    html = text_html({"steps": [step, step]}, current=1)
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert html.count('data-step="0"') == 3 and html.count('data-step="1"') == 3
    assert html.count("tok bonus") == 2 + 1           # two bonus tokens + the legend
    assert "current" in html


def test_token_pieces_follow_committed_tokens(trace):
    for step in trace["steps"]:
        pieces = token_pieces(step)
        assert len(pieces) == len(step["committed"])
        assert "".join(t for t, _ in pieces) == "".join(step["texts"][a] for a in step["accepted"]) + (
            step["bonus_text"] if len(step["committed"]) > len(step["accepted"]) else "")
    eos_step = make_step([-1, 0], [0.9, 0.8], accepted=[0, 1])
    eos_step["committed"] = [0]                   # stopped at EOS after the first accepted token
    assert token_pieces(eos_step) == [("w0", False)]


def test_text_placeholder():
    assert "appears here" in text_html(None)


# ---------------------------------------------------------------- charts and metrics

def test_accept_bars_and_why_shape(trace):
    bars = accept_bars(trace, 1)
    assert list(bars.data[0].y) == [min(s["accept_length"], len(s["committed"])) for s in trace["steps"]]
    assert sum(bars.data[0].y) + sum(bars.data[1].y) == len(trace["output_ids"])   # every committed token
    assert list(bars.data[0].marker.line.width).index(3) == 1
    why = why_shape(trace["steps"][0], trace["meta"])
    assert list(why.data[0].y) == trace["steps"][0]["ea_by_depth"]
    shapes = why.layout.shapes
    assert any(s.y0 == trace["meta"]["threshold"] for s in shapes)          # the δ line
    assert any(s.x0 == trace["meta"]["max_depth"] for s in shapes)          # the max-depth line
    assert why_shape(None, None).data == ()
    fused = dict(trace["steps"][0], stop_reason="E(A) grew by 0.1 <= δ=0.3 at depth 3 · retrieval: 2 matches")
    note = next(a for a in why_shape(fused, trace["meta"]).layout.annotations if a.text.startswith("stopped"))
    assert note.text == "stopped: gain 0.1 &lt;= δ=0.3 at depth 3<br>retrieval: 2 matches"   # one line each


def test_pearson_and_calibration():
    assert pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert pearson([1, 1], [1, 2]) is None and pearson([1], [1]) is None
    # A calibrated predictor of an integer outcome: each step's A is E(A) rounded at random, so the
    # per-step r is well below 1 while the decile means follow E(A) (binned r ≈ 1, slope ≈ 1).
    import random

    rng = random.Random(0)
    ea = [rng.uniform(0, 4) for _ in range(4000)]
    a = [int(e) + (rng.random() < e - int(e)) for e in ea]
    cal = calibrate(ea, a)
    assert len(cal["bins"]) == 10 and sum(b["steps"] for b in cal["bins"]) == 4000
    assert cal["binned_r"] > 0.99 and cal["slope"] == pytest.approx(1.0, abs=0.05)
    assert cal["per_step_r"] < 0.97
    assert all(b["lo"] <= b["ea"] <= b["hi"] and b["sem"] > 0 for b in cal["bins"])
    # Over-confident E(A) (twice the truth): the slope says so.
    assert calibrate([2 * e for e in ea], a)["slope"] == pytest.approx(0.5, abs=0.03)
    assert calibrate([], [])["binned_r"] is None


def test_ea_density_per_method(trace):
    points = ea_points(trace)
    binary = {**points, "method": "binary", "a": [max(x - 1, 0) for x in points["a"]]}
    fig, stats = ea_density([points, points, binary])
    assert set(stats) == {"opt-tree · draft model", "binary · draft model"}
    assert stats["opt-tree · draft model"]["steps"] == 2 * len(trace["steps"])
    heat = [t for t in fig.data if t.type == "histogram2d"]
    means = [t for t in fig.data if (t.name or "").endswith("mean A per E(A) decile")]
    assert len(heat) == 2 and len(means) == 2 and means[0].error_y.array is not None
    titles = [a.text for a in fig.layout.annotations]
    assert any(t.startswith("opt-tree · draft model: binned r") and "per-step r" in t for t in titles)
    empty, none = ea_density([])
    assert none == {} and empty.layout.annotations[-1].text == "No steps yet"
    for f in (fig, empty):      # the title starts below the label chip the page draws over the chart's top left
        title = f.layout.title
        assert (title.yref, title.yanchor) == ("container", "top") and title.pad.t >= BADGE_PX
        assert f.layout.margin.t >= BADGE_PX + 4 * title.font.size     # its three lines, below the chip


def auto_step(**extra):
    step = make_step([-1, 0, -1], [0.6, 0.4, 0.2], accepted=[0])
    step["auto"] = {"rule": "opt-tree", "objective": [[30.0, 31.0, 30.5], [29.0, 33.0]],
                    "draft_model_ms": [1.0, 3.0], "widths": [1, 2], "chosen_depth": 2, "chosen_nodes": 2,
                    "chosen_tokens_per_s": 33.0, **extra}
    return step


def test_why_shape_shows_the_auto_objective():
    fig = why_shape(auto_step(), {"method": "opt-tree", "nodes": 0, "max_depth": 10})
    heat, star = fig.data[0], fig.data[1]
    assert heat.type == "heatmap" and [list(r) for r in heat.z] == [[30.0, 31.0, 30.5], [29.0, 33.0, None]]
    assert (list(star.x), list(star.y)) == ([2], [2]) and star.marker.symbol == "star"
    assert "33.0 expected tokens/s" in fig.layout.annotations[0].text
    assert "auto" in fig.layout.title.text
    assert "fused" not in fig.layout.annotations[0].text
    # retrieval fusion sized the verified tree itself: both views say so beside the draft's own choice
    fused = auto_step(fused_nodes=7, fused_tokens_per_s=41.5)
    fig = why_shape(fused, {"method": "opt-tree", "nodes": 0, "max_depth": 10})
    chosen = fig.layout.annotations[0].text.replace("<br>", " ")     # wrapped to the panel's width
    assert "fused with retrieval: 7 nodes, 41.5 expected tokens/s" in chosen
    md = step_metrics({"steps": [fused], "summary": summarize([fused], 2, 1.0), "meta": {}}, 0)
    assert "| with retrieval fused in | 7 nodes, 41.5 expected tokens/s" in md


COST = {"tokens": [1, 8, 64], "verify_ms": [50.0, 60.0, 130.0], "widths": [1, 64], "layer_ms": [2.0, 12.0],
        "base_ms": 3.0, "device": "Test CPU", "dtype": "float32", "threads": 2, "measured_utc": "today"}


def test_cost_chart_and_the_sentence_for_a_slower_method(trace):
    fig = cost_figure(COST, {"opt-tree (n=60)": 61})
    assert [list(t.x) for t in fig.data] == [[1, 8, 64], [1, 64]]
    assert "Test CPU" in fig.layout.title.text and "2.5×" in fig.layout.annotations[0].text
    assert cost_figure(None).layout.annotations and cost_figure({"tokens": "x"}).data == ()
    assert "load average" not in fig.layout.title.text
    longer = cost_figure({**COST, "prefix_tokens": 128, "longer": {"prefix_tokens": 1024, "tokens": [1, 8, 64],
                                                                    "verify_ms": [60.0, 90.0, 300.0]}})
    assert [t.name for t in longer.data][:2] == ["target forward (verify) after 128 tokens", "… after 1024 tokens"]
    assert list(longer.data[1].y) == [60.0, 90.0, 300.0] and list(longer.data[1].customdata) == [1.0, 1.5, 5.0]
    busy = cost_figure({**COST, "isa": "avx2", "load_avg": [3.5, 2.0, 1.0]}).layout.title.text
    assert "Test CPU, avx2, float32" in busy and "load average 3.5 at the time" in busy
    assert "int8" not in fig.data[-1].name
    assert cost_figure({**COST, "draft_kernel": "int8"}).data[-1].name == "one draft layer (int8 weights)"
    fast, slow, ar = (json.loads(dumps(trace)) for _ in range(3))
    ar["meta"].update(method="ar", cost=COST)
    ar["summary"].update(tokens_per_s=20.0, mean_verify_ms=50.0)
    slow["meta"].update(nodes=60, cost=COST)
    slow["summary"].update(tokens_per_s=10.0, tau=2.4, mean_nodes=60.0, mean_draft_ms=40.0, mean_build_ms=5.0)
    fast["summary"].update(tokens_per_s=30.0)
    assert why_slower(slow, ar, COST) == ("verifying 61 tokens costs 2.5× one token on this machine, more than "
                                          "the 2.40 tokens a step commits.")
    # With the curve after a longer prefix too, the ratio is read at the runs' mean context, as the auto
    # budget prices a step: 550 tokens lie half way (in sixteenths) from 128 to 1,024, so 61 tokens cost
    # (126.25 + 288.75) / 2 ms against (50 + 60) / 2 for one.
    both = {**COST, "prefix_tokens": 128, "longer": {"prefix_tokens": 1024, "tokens": [1, 8, 64],
                                                     "verify_ms": [60.0, 90.0, 300.0]}}
    assert why_slower(slow, ar, both, 550) == ("verifying 61 tokens after a mean context of 550 tokens costs 3.8× "
                                               "one token on this machine, more than the 2.40 tokens a step commits.")
    assert why_slower(slow, ar, COST, 550).startswith("verifying 61 tokens costs 2.5×")   # one prefix measured
    assert why_slower(slow, ar, both).startswith("verifying 61 tokens costs 2.5×")        # no context given
    # Imported traces are untrusted: a malformed curve reads as one prefix or as none, never raises.
    for bad in ({**both, "base_ms": "x", "layer_ms": "ab", "widths": [[1]]},
                {**both, "longer": {**both["longer"], "prefix_tokens": "abc"}},
                {**both, "longer": {**both["longer"], "prefix_tokens": 64}},
                {**both, "longer": {**both["longer"], "verify_ms": [5.0, -5.0, 1.0]}},
                {**both, "verify_ms": [50.0, float("nan"), 130.0]}, {**both, "prefix_tokens": True}):
        for context in (550, float("inf"), float("nan"), -3, None):
            assert isinstance(why_slower(slow, ar, bad, context), str)
    assert why_slower(slow, ar, {**both, "longer": {**both["longer"], "prefix_tokens": 64}}, 550).startswith(
        "verifying 61 tokens costs 2.5×")          # a "longer" prefix that is not longer: one prefix
    slow["summary"].update(tau=3.0)
    assert "drafting adds 45 ms a step (0.9 AR steps)" in why_slower(slow, ar, COST)
    # Where the curve prices a step (2.5 + 0.9 AR steps) below the tokens it commits, the sentence does not
    # claim the step costs more: it says the method should have beaten AR and where its time went.
    slow["summary"].update(tau=4.0, mean_verify_ms=300.0)
    busy = why_slower(slow, ar, COST)
    assert "together more than" not in busy and "3.4 AR steps" in busy and "should beat AR" in busy
    assert "measured 345 ms (6.9 AR steps)" in busy and "slower than when the curve was measured" in busy
    slow["summary"].update(mean_verify_ms=100.0)
    assert "outside the steps" in why_slower(slow, ar, COST) and "2.9 AR steps" in why_slower(slow, ar, COST)
    assert why_slower(fast, ar, COST) == "" and why_slower(slow, None, COST) == ""


def test_step_metrics(trace):
    md = step_metrics(trace, 0)
    assert "E(A)" in md and f"Step 1 of {len(trace['steps'])}" in md and "τ" in md
    assert step_metrics(None, None).startswith("_No step")


def test_step_metrics_say_when_the_run_ended_inside_the_accepted_path():
    step = make_step([-1, 0, 1], [0.9, 0.8, 0.7], accepted=[0, 1, 2])
    step["committed"], step["accept_length"] = [0, 1], 2          # EOS was the second accepted token
    md = step_metrics({"steps": [step], "summary": summarize([step], 2, 1.0), "meta": {}}, 0)
    # The values are Markdown-escaped text (style.md_text): "\(" reads "(" on the page.
    assert r"| accepted draft tokens | 2 \(3 accepted; EOS or the token limit ended the run first\) |" in md
    full = make_step([-1, 0], [0.9, 0.8], accepted=[0, 1])
    md = step_metrics({"steps": [full], "summary": summarize([full], 3, 1.0), "meta": {}}, 0)
    assert r"| accepted draft tokens | 2 \(\+1 bonus\) |" in md


def test_exported_trace_replays_views(trace):
    again = loads(dumps(trace))
    for i, step in enumerate(again["steps"]):
        assert tree_figure(step).to_plotly_json() == tree_figure(trace["steps"][i]).to_plotly_json()
    assert text_html(again, 0) == text_html(trace, 0)


def test_every_lesson_preset_is_a_valid_run_setting():
    """The one-click lessons feed the run settings straight into the server's validation."""
    from opttree.config import DecodeConfig
    from viz.lessons import PRESETS

    keys = ("method", "nodes", "max_depth", "threshold", "temperature", "max_new_tokens", "tree_temperature")
    for p in PRESETS:
        cfg = DecodeConfig(**{k: p[k] for k in keys})
        assert p["name"] and p["lesson"] and p["prompt"] and cfg.method == p["method"]
    assert any(p["tree_temperature"] for p in PRESETS), "one lesson shows the tree temperature"


def test_run_summary_names_the_target_and_draft_it_ran(trace):
    meta = {**trace["meta"], "target": "HuggingFaceTB/SmolLM2-135M-Instruct (hub stand-in)", "draft": "<b>head</b>"}
    text = run_summary({**trace, "meta": meta})
    # as Markdown shows it: the names' Markdown characters escaped (viz.style.md_text)
    assert r"Target HuggingFaceTB/SmolLM2-135M-Instruct \(hub stand-in\)" in text and "&lt;b&gt;head" in text
    # tokens/s times the whole run: the prefill is named with it; a trace that did not time it says nothing
    ms = trace["summary"]["prefill_ms"]
    assert f"tokens/s (the whole run, the prompt's {ms:.0f} ms prefill included)" in text
    older = {**trace, "summary": {**trace["summary"], "prefill_ms": None}}
    assert "prefill" not in run_summary(older)


def test_a_runs_prefill_is_timed_once_and_within_its_wall_time():
    """The trace's summary holds the prompt's prefill (first step), the same in every streamed update; a
    one-token prompt has nothing to prefill."""
    pair = tiny_pair("eagle")
    cfg = DecodeConfig(method="opt-tree", nodes=6, max_new_tokens=8)
    seen = [t["summary"]["prefill_ms"] for t in stream_run(pair, "", cfg, prompt_ids=list(range(5, 40)))]
    assert len(seen) > 1 and len(set(seen)) == 1 and seen[0] > 0
    last = run(pair, "", cfg, prompt_ids=list(range(5, 40)))["summary"]
    assert 0 < last["prefill_ms"] < 1000 * last["wall_s"]
    one = run(pair, "", DecodeConfig(method="ar", max_new_tokens=3), prompt_ids=[5])
    assert one["summary"]["prefill_ms"] is None and "prefill" not in run_summary(one)


def test_the_page_css_is_assets_app_css_with_the_figure_colours():
    """assets/app.css is the page's stylesheet; its placeholders take the colours declared in viz/style.py."""
    import re
    import string

    from opttree import paths

    text = (paths.PAGE_ASSETS / "app.css").read_text(encoding="utf-8")
    assert style.page_css() == style.PAGE_CSS == string.Template(text).substitute(style.CSS_COLOURS)
    placeholders = set(re.findall(r"\$\{(\w+)\}", text))
    assert placeholders == set(style.CSS_COLOURS) and "$" not in style.PAGE_CSS     # each one used, all filled
    for line in text.splitlines():
        if "${" not in line:
            assert line in style.PAGE_CSS, line
    assert f"outline: 2px solid {style.ACCEPTED}" in style.PAGE_CSS
    assert f'fill: {style.svg_rgb(style.ROOT)}' in style.PAGE_CSS


def test_dark_mode_lightens_the_accepted_paths_labels(trace):
    """The accepted path's labels are drawn in its red, which the dark page restyles lighter (the red on
    a dark background was hard to read): the rule matches the colour Plotly writes for them."""
    fig = tree_figure(trace["steps"][0])
    accepted = next(t for t in fig.data if (t.name or "").startswith("accepted path"))
    assert accepted.textfont.color == style.ACCEPTED
    rule = f'.dark .js-plotly-plot text[style*="fill: {style.svg_rgb(style.ACCEPTED)}"] {{ fill: #ff8a8a !important; }}'
    assert rule in style.PAGE_CSS


def test_every_lesson_reads_its_text_from_assets(tmp_path, monkeypatch):
    """Each lesson's name and caption come from assets/lessons.json (under its id in RUNS), the Learn
    tab's prose from assets/learn.md; viz/lessons.py declares what the lessons run, not what they say."""
    from pathlib import Path

    from opttree import paths
    from viz import lessons

    texts = json.loads((paths.PAGE_ASSETS / "lessons.json").read_text(encoding="utf-8"))
    assert list(texts) == list(lessons.RUNS) and len(lessons.PRESETS) == len(texts) == 14
    source = Path(lessons.__file__).read_text(encoding="utf-8")
    for preset, text in zip(lessons.PRESETS, texts.values()):
        assert (preset["name"], preset["lesson"]) == (text["name"], text["lesson"])
        assert text["name"] not in source and text["lesson"][:40] not in source
    assert lessons.LEARN_TEXT == (paths.PAGE_ASSETS / "learn.md").read_text(encoding="utf-8")
    assert "### Why a tree?" in lessons.LEARN_TEXT and "### Why a tree?" not in source
    # Another folder's texts are what the lessons then say; a file that misses a lesson is refused.
    edited = {key: {"name": f"Lesson {key}", "lesson": "Edited."} for key in lessons.RUNS}
    (tmp_path / "lessons.json").write_text(json.dumps(edited), encoding="utf-8")
    (tmp_path / "learn.md").write_text("### Edited", encoding="utf-8")
    monkeypatch.setattr(paths, "PAGE_ASSETS", tmp_path)
    assert lessons.read_texts() == ("### Edited", edited)
    del edited["early-exit"]
    (tmp_path / "lessons.json").write_text(json.dumps(edited), encoding="utf-8")
    with pytest.raises(ValueError, match="a name and a lesson for each"):
        lessons.read_texts()


def test_ea_vs_a_keeps_only_drafted_steps_and_splits_drafters(trace):
    """E(A) vs A calibrates a drafter's beliefs: a step that drafted no tree (E(A) 0, A 0) is no
    calibration point, and two drafters under one method are two groups, each named."""
    eagle = json.loads(json.dumps(trace))
    eagle["meta"].update(drafter="eagle", draft="head.safetensors")
    eagle["steps"].append({**eagle["steps"][-1], "tokens": [], "texts": [], "parents": [], "depth": [], "q": [],
                           "p_hat": [], "accepted": [], "accept_length": 0, "expected_accept": 0.0})
    lookup = json.loads(json.dumps(trace))
    lookup["meta"].update(drafter="lookup", draft="prompt lookup")
    points = ea_points(eagle)
    assert len(points["ea"]) == len(trace["steps"]) and 0.0 not in points["ea"] and points["skipped"] == 1
    fig, stats = ea_density([points, ea_points(lookup)])
    assert set(stats) == {"opt-tree · EAGLE head", "opt-tree · prompt lookup"}
    titles = " ".join(a.text for a in fig.layout.annotations)
    assert "no draft model" in titles and "1 step without a tree left out" in fig.layout.title.text


def test_metrics_say_what_e_a_is_without_a_draft_model():
    """Prompt lookup and Token Recycling have no draft model: a 10-token retrieved chain has p̂ = 1 at each
    node, so E(A) = 10 is its length, not a belief the draft over-states (failed before: the note said
    "this draft over-states acceptance")."""
    chain = make_step([-1, *range(9)], [1.0] * 10, accepted=[0, 1])
    for drafter in ("lookup", "recycling"):
        trace = {"steps": [chain], "summary": summarize([chain], 3, 1.0),
                 "meta": {"method": "opt-tree", "drafter": drafter, "draft": "x"}}
        md = step_metrics(trace, 0)
        assert "| 10.00 |" in md and "no draft model" in md
        assert "over-states" not in md and "draft's own belief" not in md
    model = {"steps": [chain], "summary": summarize([chain], 3, 1.0),
             "meta": {"method": "opt-tree", "drafter": "eagle"}}
    assert "over-states" in step_metrics(model, 0) and "no draft model" not in step_metrics(model, 0)
