"""Views keep their words readable: the root says which text the step continues, the bonus token's
label is never under the rejected X, a 60-node tree labels its likeliest nodes only, and chart notes
never print on each other."""

from __future__ import annotations

from viz.metrics import step_metrics
from viz.style import md_text
from viz.tree_figure import FRAME_PX, LABELLED, root_context, tree_figure


def step_of(parents, p_hat, accepted=(), rejected=None, bonus="B"):
    n = len(parents)
    depth = []
    for p in parents:
        depth.append(1 if p == -1 else depth[p] + 1)
    return {"tokens": list(range(n)), "texts": [f"w{i}" for i in range(n)], "parents": parents, "depth": depth,
            "q": p_hat, "p_hat": p_hat, "rank": [0] * n, "accepted": list(accepted), "rejected": rejected,
            "bonus_token": 99, "bonus_text": bonus, "committed": [], "committed_text": "", "expected_accept": 0.0}


def by_name(fig, name):
    return next(t for t in fig.data if t.name and t.name.startswith(name))


def test_the_root_shows_the_text_the_step_continues():
    trace = {"prompt": "Why  blue?", "steps": [{"committed_text": " The sky"}, {"committed_text": " is"}]}
    assert root_context(trace, 0) == "Why blue?"          # whitespace runs shown as one space
    assert root_context(trace, 2) == "The sky is"
    long = {"prompt": "x", "steps": [{"committed_text": "a" * 40 + " tail end"}]}
    assert root_context(long, 1).startswith("…") and root_context(long, 1).endswith("tail end")
    fig = tree_figure(step_of([-1, 0], [0.6, 0.3]), context="The sky is")
    root = by_name(fig, "root")
    assert list(root.text) == ["The sky is"] and "The sky is" in root.hovertext[0]


def test_bonus_label_sits_above_its_star_clear_of_the_rejected_x():
    # Nothing accepted: the bonus star is half a column right of the root, the rejected X one column right.
    fig = tree_figure(step_of([-1, -1], [0.6, 0.3], accepted=[], rejected=0, bonus="leigh"))
    bonus, rejected = by_name(fig, "bonus token"), by_name(fig, "first rejected")
    assert bonus.text[-1] == "leigh" and bonus.textposition.startswith("top")      # above the star
    assert bonus.x[-1] < rejected.x[0]


def test_a_60_node_tree_labels_only_its_likeliest_nodes():
    parents = [-1] * 6 + [i // 9 for i in range(54)]
    p_hat = [0.5 - 0.005 * i for i in range(60)]
    fig = tree_figure(step_of(parents, p_hat, accepted=[0]))
    labels = [t for t in by_name(fig, "draft nodes").text if t]
    assert len(labels) == LABELLED - 1                     # node 0 is labelled on the accepted path
    assert set(labels) == {f"w{i}" for i in range(1, LABELLED)}
    small = tree_figure(step_of([-1, 0, 1], [0.6, 0.3, 0.1]))
    assert [t for t in by_name(small, "draft nodes").text if t] == ["w0", "w1", "w2"]


def test_no_draft_label_prints_on_an_accepted_label_above_its_diamond():
    # Fifteen siblings at 16 px a row: the likeliest, accepted, in the middle row, the next one row above it.
    n = 15
    step = step_of([-1] * n, [0.9 - 0.05 * i for i in range(n)], accepted=[0])
    for present in (False, True):
        fig = tree_figure(step, present=present)
        acc, nodes = by_name(fig, "accepted path"), by_name(fig, "draft nodes")
        row_px = (fig.layout.height - FRAME_PX) / n
        # The accepted label's line box: from the diamond's top up one line (1.3 em); a draft label's: its
        # line centred on its node. Pixels downwards from the accepted diamond's centre.
        font, top = acc.textfont.size, acc.marker.size[1] / 2
        band = (-top - 1.3 * font, -top)
        ay = acc.y[1]
        labelled = [y for y, text in zip(nodes.y, nodes.text) if text]
        assert len(labelled) >= (n - 2 if not present else 5), labelled     # the column keeps its other labels
        for y in labelled:
            half = 1.3 * nodes.textfont.size / 2
            lo, hi = (y - ay) * row_px - half, (y - ay) * row_px + half
            assert hi <= band[0] or lo >= band[1], (present, y, ay, (lo, hi), band)


def test_long_token_labels_are_cut_but_hover_keeps_them():
    step = step_of([-1], [0.9])
    step["texts"] = ["internationalisation"]
    nodes = by_name(tree_figure(step), "draft nodes")
    assert nodes.text[0].endswith("…") and len(nodes.text[0]) <= 12
    assert "internationalisation" in nodes.hovertext[0]


def test_markup_in_a_label_is_escaped_once_after_the_cut():
    """A token such as <|im_end|> shows as itself (Plotly reads one level of entities), and the cut counts
    the characters a reader sees, so it never splits an entity such as &lt;."""
    step = step_of([-1], [0.9], accepted=[0], bonus="<|im_end|>")
    step["texts"] = ["a<b<c<d<e<f<g<h"]
    bonus, accepted = by_name(tree_figure(step), "bonus token"), by_name(tree_figure(step), "accepted path")
    assert bonus.text[-1] == "&lt;|im_end|&gt;" and "<b>&lt;|im_end|&gt;</b>" in bonus.hovertext[-1]
    assert accepted.text[-1] == "a&lt;b&lt;c&lt;d&lt;e&lt;f…"      # eleven characters as read, then "…"


def test_cost_marks_close_together_share_one_label_and_others_are_staggered():
    from viz.cost_chart import cost_figure, mark_groups

    marks = {"opt-tree (auto)": 5.2, "binary (auto)": 5.6, "chain (auto)": 3.4, "AR": 1, "n=60": 61}
    assert mark_groups(marks) == [(1, ["AR"]), (3.4, ["chain (auto)"]), (5.2, ["opt-tree (auto)", "binary (auto)"]),
                                  (61, ["n=60"])]
    cost = {"tokens": [1, 2, 4, 8, 64], "verify_ms": [20.0, 21.0, 22.0, 25.0, 60.0]}
    notes = cost_figure(cost, marks).layout.annotations
    assert len(notes) == 4 and len({n.y for n in notes}) == 4 and all(n.textangle is None for n in notes)
    assert "opt-tree (auto), binary (auto)" in notes[2].text


def test_why_shape_puts_the_stop_note_apart_from_max_depth():
    from viz.step_charts import why_shape

    step = {"ea_by_depth": [0.0, 1.0, 1.5, 1.6], "stop_reason": "E(A) grew by 0.1 <= δ=0.3 at depth 3"}
    notes = why_shape(step, {"method": "opt-tree", "threshold": 0.3, "max_depth": 3}).layout.annotations
    stop = next(n for n in notes if n.text.startswith("stopped"))
    depth = next(n for n in notes if n.text.startswith("max depth"))
    assert stop.yref == "paper" and stop.yanchor == "bottom" and stop.y >= 1.0      # above the plot
    assert depth.yanchor == "top" and depth.y <= 1.0                               # inside it
    assert stop.text.startswith("stopped: gain 0.1")
    rule = next(n for n in notes if n.text.startswith("δ ="))
    assert rule.yanchor == "bottom"                                               # above a low δ line
    # δ = 1 with max depth 1: the line runs near the top, where "max depth" sits: its note goes under it.
    high = why_shape({"ea_by_depth": [0.0, 1.1], "stop_reason": "reached max depth 1"},
                     {"method": "opt-tree", "threshold": 1.0, "max_depth": 1}).layout.annotations
    assert next(n for n in high if n.text.startswith("δ =")).yanchor == "top"


def test_ea_vs_a_cautions_below_100_steps():
    from viz.step_charts import FEW_STEPS, ea_density

    few = {"label": "x", "method": "opt-tree", "ea": [1.0, 2.0] * 10, "a": [1, 2] * 10}
    many = {**few, "ea": few["ea"] * FEW_STEPS, "a": few["a"] * FEW_STEPS}
    assert "noisy" in ea_density([few])[0].layout.title.text
    assert "noisy" not in ea_density([many])[0].layout.title.text


def test_long_chart_text_wraps_at_spaces():
    from viz.style import wrap_lines

    assert wrap_lines("one two three", 7) == ("one two<br>three", 2)
    assert wrap_lines("a<br>b c", 10) == ("a<br>b c", 2)                     # breaks already there stay
    assert wrap_lines("internationalisation x", 5) == ("internationalisation<br>x", 2)   # a word stays whole
    assert wrap_lines("") == ("", 1)


def why_lines(fig) -> list[tuple[str, str]]:
    """(where, line) for every line of a figure's title and notes."""
    parts = [("title", fig.layout.title.text)] + [("note", a.text) for a in fig.layout.annotations]
    return [(where, line) for where, text in parts for line in text.split("<br>")]


def test_why_this_shape_keeps_its_words_inside_the_panel_and_clear_of_its_label():
    from viz.step_charts import AXIS_TITLE_PX, BADGE_PX, NOTE_PX, TITLE_CHARS, why_shape
    from viz.style import NOTE_CHARS

    reason = ("layer 2 did not raise the best expected throughput · retrieval: no earlier occurrence of the "
              "last token, so nothing was fused into this step's tree")
    auto = {"ea_by_depth": [0.0, 0.9], "stop_reason": reason, "length": {"control": "thompson", "depth": 3},
            "auto": {"objective": [[30.0, 31.0], [29.0]], "draft_model_ms": [1.0, 3.0], "chosen_depth": 1,
                     "chosen_nodes": 2, "fused_nodes": 7, "fused_tokens_per_s": 41.5}}
    delta = {"ea_by_depth": [0.0, 1.0, 1.5], "stop_reason": "E(A) grew by 0.1 <= δ=0.3 at depth 2 · " + reason}
    thompson = {"ea_by_depth": [0.0], "length": {"control": "thompson", "alpha": 9.0, "beta": 3.0, "theta": 0.8,
                                                 "price": 0.3, "depth": 5}}
    predictor = {"ea_by_depth": [0.0], "length": {"control": "predictor", "predicted": 1.234, "depth": 3},
                 "depth": [1, 2], "accept_length": 1, "committed": [5, 6]}
    meta = {"method": "opt-tree", "threshold": 0.3, "max_depth": 10}
    for step in (auto, delta, thompson, predictor):
        fig = why_shape(step, meta)
        lines = why_lines(fig)
        assert all(len(line) <= (TITLE_CHARS if where == "title" else NOTE_CHARS) for where, line in lines), lines
        title = fig.layout.title
        assert title.yref == "container" and title.yanchor == "top" and title.pad.t >= BADGE_PX
        above = [a for a in fig.layout.annotations if a.yref == "paper" and a.y == 1.0 and a.yanchor == "bottom"]
        title_lines = title.text.count("<br>") + 1
        note_lines = sum(a.text.count("<br>") + 1 for a in above)
        assert fig.layout.margin.t >= BADGE_PX + title_lines * title.font.size + note_lines * NOTE_PX
    stop = next(a for a in why_shape(auto, meta).layout.annotations if a.text.startswith("stopped"))
    assert stop.text.count("<br>") >= 1                                   # the long reason wraps
    assert stop.yanchor == "top" and stop.y == 0 and stop.yshift <= -AXIS_TITLE_PX      # under the axis title
    assert why_shape(auto, meta).layout.margin.b >= AXIS_TITLE_PX + (stop.text.count("<br>") + 1) * NOTE_PX
    # the controller's cap as what it allowed: the tokens left may cap the tree tighter (the stop note)
    assert "allowed at most 3 layers" in why_shape(auto, meta).layout.title.text.replace("<br>", " ")


def test_the_cost_curves_legend_sits_below_its_axis_title():
    from viz.cost_chart import cost_figure

    cost = {"tokens": [1, 8, 64], "verify_ms": [20.0, 25.0, 60.0], "widths": [1, 64], "layer_ms": [2.0, 9.0]}
    layout = cost_figure(cost).layout
    assert layout.legend.yref == "container" and layout.legend.y == 0 and layout.legend.yanchor == "bottom"
    assert layout.margin.b >= 40 + 3 * 20          # the axis title, then three legend rows
    long = {**cost, "device": "Intel(R) Xeon(R) Processor", "isa": "avx512", "dtype": "float32", "threads": 2,
            "measured_utc": "2026-11-28 13:31 UTC", "load_avg": [1.1, 1.0, 1.0]}
    title = cost_figure(long).layout.title.text
    small = [line.replace("<sup>", "").replace("</sup>", "") for line in title.split("<br>")[1:]]
    assert len(small) == 2 and all(len(line) <= 95 for line in small) and "load average 1.1" in " ".join(small)


def test_the_accepted_length_legend_and_the_predictors_labels_stay_clear_of_the_bars():
    """The committed-tokens legend sits at the panel's foot, not over the tallest bar; the predictor's
    value labels sit above their bars inside the axis range, not clipped at its top."""
    from viz.step_charts import accept_bars, why_predictor

    steps = [{"committed": [1] * k, "accept_length": k - 1, "accepted": list(range(k - 1))} for k in (2, 9, 3)]
    layout = accept_bars({"steps": steps}).layout
    assert layout.legend.yref == "container" and layout.legend.y == 0 and layout.legend.yanchor == "bottom"
    assert layout.margin.b >= 40 + 20
    step = {"length": {"control": "predictor", "predicted": 3.87, "depth": 5}, "depth": [1, 2, 3, 4, 5],
            "accepted": [0, 1, 2, 3], "committed": [1, 2, 3, 4, 5], "accept_length": 4}
    fig = why_predictor(step, {})
    top = fig.layout.yaxis.range[1]
    assert fig.data[0].cliponaxis is False and top >= 1.15 * max(fig.data[0].y)


def test_the_delta_rule_label_sits_over_the_deep_layers():
    """The δ line's words sit at its right end (the first layers' tall gain bars are at the left), on a
    translucent ground."""
    from viz.step_charts import why_shape

    step = {"ea_by_depth": [0.0, 0.9, 1.25, 1.38, 1.42], "stop_reason": "E(A) grew by 0.04 <= δ=0.2 at depth 4"}
    notes = why_shape(step, {"method": "opt-tree", "threshold": 0.2, "max_depth": 10}).layout.annotations
    rule = next(n for n in notes if n.text.startswith("δ = 0.2"))
    assert rule.x == 1 and rule.xanchor == "right" and rule.y == 0.2 and rule.bgcolor


def test_a_traces_names_and_tokens_show_as_text_in_chart_titles():
    """An imported trace's method and drafter are free text and a node's token can be any text, while Plotly reads
    its own subset of HTML in a title: a method '<a href=...>' was a live link over the tree, a token '<s>' struck
    through the rest of the Theory chart's title. Each shows as itself (Plotly reads one level of entities)."""
    from viz.step_charts import ea_density
    from viz.theory import step_view
    from viz.tree_figure import step_title

    link = '<a href="https://example.com/">click</a>'
    step = {**step_of([-1], [0.9], accepted=[0]), "texts": ["<s>"], "accept_length": 1, "expected_accept": 0.9,
            "topk_rows": [{"node": 0, "ids": [1, 2], "texts": ["x", "y"], "p": [0.6, 0.4], "q": [0.5, 0.5]}]}
    trace = {"meta": {"method": link}, "steps": [step]}
    assert step_title(trace, 0).startswith("&lt;a href=\"https://example.com/\"&gt;click&lt;/a&gt; · step 1/1")
    run = {"label": "x", "method": link, "drafter": "<b>EAGLE</b>", "ea": [1.0], "a": [1]}
    (title,) = [a.text for a in ea_density([run])[0].layout.annotations]
    assert title.startswith("&lt;a href=\"https://example.com/\"&gt;click&lt;/a&gt; · &lt;b&gt;EAGLE&lt;/b&gt;: ")
    dists, rates, _ = step_view(trace, 0, 0)
    assert "node 0: &lt;s&gt; (depth 1, accepted)" in dists.layout.title.text and "<s>" not in rates.layout.title.text


def test_quotes_in_a_runs_text_show_as_quotes_in_the_charts():
    """Plotly decodes &amp; &lt; &gt; and numeric entities but not &quot;: the root's text (a prompt that quotes
    something) and a stop reason are escaped for Plotly (style.plotly_text), never with '"' as &quot;."""
    from viz.step_charts import why_shape
    from viz.style import plotly_text

    context = 'Say "hi" & <go>'
    root = by_name(tree_figure(step_of([-1, 0], [0.6, 0.3]), context=context), "root")
    assert list(root.text) == [plotly_text(context)] == ['Say "hi" &amp; &lt;go&gt;']
    assert "&quot;" not in root.hovertext[0] and plotly_text(context) in root.hovertext[0]
    reason = 'reached the "max depth" 1'
    delta = why_shape({"ea_by_depth": [0.0, 1.1], "stop_reason": reason}, {"method": "opt-tree", "max_depth": 1})
    auto = why_shape({"ea_by_depth": [0.0, 0.9], "stop_reason": reason,
                      "auto": {"objective": [[5.0]], "chosen_depth": 1, "chosen_nodes": 1}}, {"method": "opt-tree"})
    for fig in (delta, auto):
        texts = [a.text for a in fig.layout.annotations] + [fig.layout.title.text]
        assert any('"max depth"' in t for t in texts) and not any("&quot;" in t for t in texts)


def test_text_shown_in_markdown_keeps_to_one_line():
    """Failed before: a line break in a trace's name or stop reason ended the metrics table's row, and
    "x\\n===" made a heading of the line above it."""
    assert md_text("x\n===\r\ny") == "x === y"
    step = {"tokens": [], "texts": [], "parents": [], "depth": [], "q": [], "p_hat": [], "rank": [],
            "accepted": [], "accept_length": 0, "expected_accept": 0.0, "stop_reason": "first\n| injected | row |"}
    table = step_metrics({"steps": [step], "summary": {"new_tokens": 1, "steps": 1, "tau": 1.0, "tokens_per_s": 1.0},
                          "meta": {}}, 0)
    assert "| why it stopped growing | first \\| injected \\| row \\| |" in table
