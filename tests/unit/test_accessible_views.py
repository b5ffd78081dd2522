"""Views for readers who cannot rely on colour or sight: text drawn in a meaning colour keeps WCAG AA contrast
(4.5:1) on its background in light and dark mode, the text strip marks bonus tokens by more than colour and
says the selected step in a sentence for screen readers, and series that colour tells apart (Compare's
methods, the Theory tab's schemes) differ by marker and line too."""

from __future__ import annotations

import re

from opttree.theory.table import SCHEMES
from viz import style
from viz.compare_charts import tau_budget_figure
from viz.text_view import step_summary, text_html
from viz.theory import dists_figure, preset_dists, rates, rates_figure
from viz.tree_figure import tree_figure

WHITE = "#ffffff"
# Gradio's Soft theme in dark mode: the figure block's background (neutral-800), the lighter of the page's
# dark backgrounds, so the harder one for light text.
DARK_BLOCK = "#1f2937"
AA_TEXT, AA_GRAPHIC = 4.5, 3.0


def luminance(colour: str) -> float:
    colour = style.svg_rgb(colour) if colour.startswith("#") else colour
    rgb = [int(v) / 255 for v in re.findall(r"\d+", colour)[:3]]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def a_step(**extra) -> dict:
    """Root → 0 → 1 accepted, 2 the draft's rejected sibling of 1, then the bonus token."""
    step = {"tokens": [10, 11, 12, 13], "texts": [" far", "-", "off", " near"], "parents": [-1, 0, 0, -1],
            "depth": [1, 2, 2, 1], "q": [0.9, 0.5, 0.4, 0.1], "p_hat": [0.9, 0.45, 0.36, 0.1], "rank": [0, 0, 1, 1],
            "accepted": [0, 1], "rejected": 2, "accept_length": 2, "bonus_token": 14, "bonus_text": "\n",
            "committed": [10, 11, 14], "committed_text": " far-\n", "expected_accept": 1.81}
    return {**step, **extra}


def a_trace(*steps) -> dict:
    return {"prompt": "Go", "meta": {"method": "opt-tree"}, "steps": list(steps)}


def test_every_label_of_the_tree_reads_at_aa_contrast_on_the_white_figure():
    fig = tree_figure(a_step(), context="Go")
    paper = style.TEMPLATE["layout"]["paper_bgcolor"]
    colours = {t.name: t.textfont.color for t in fig.data if t.text is not None and t.textfont.color}
    assert {"accepted path (2)", "bonus token (from the target)", "root"} <= set(colours)
    for name, colour in colours.items():
        assert contrast(colour, {"white": WHITE}.get(paper, paper)) >= AA_TEXT, (name, colour)


def marks(fig) -> dict[str, str]:
    """Each trace's bars or fixed-colour markers: the colour that sets them off from the white figure (a
    marker's outline where it has one 1 px or wider). Markers coloured on the p̂ axis count by their outline."""
    out = {}
    for t in fig.data:
        m = t.marker
        if t.type == "bar":
            out[t.name] = m.color
        elif "markers" in (t.mode or ""):
            if m.line.color and (m.line.width or 0) >= 1:
                out[t.name] = m.line.color
            elif isinstance(m.color, str) or m.color is None:
                out[t.name] = m.color or t.line.color      # lines+markers: the markers take the line's colour
    return out


def test_every_marker_and_bar_of_the_tree_and_theory_figures_shows_at_3_to_1_on_white():
    tree = tree_figure(a_step(source=["recycled", "retrieved", "both", "draft"]), context="Go")
    d = preset_dists()
    theory = [dists_figure(d, children={d.labels[0]: "a child"}), rates_figure(rates(d), tree_mark=(2, 0.5, "x"))]
    colours = {name: c for fig in (tree, *theory) for name, c in marks(fig).items()}
    assert {"draft q", "target p", "child in this tree", "this tree at this node", "root", "accepted path (2)",
            "recycled (Token Recycling table) (1)", "retrieved (from the text) (1)"} <= set(colours), colours
    assert len(colours) >= 8 + len(SCHEMES)
    colours["tree edges"] = style.EDGE          # the lines that show which node continues which
    for name, colour in colours.items():
        assert contrast(colour, WHITE) >= AA_GRAPHIC, (name, colour, round(contrast(colour, WHITE), 2))


def test_dark_mode_redraws_the_meaning_coloured_labels_light_enough():
    css = style.PAGE_CSS
    for drawn in (style.ACCEPTED, style.BONUS_TEXT):
        rule = re.search(r'\.dark \.js-plotly-plot text\[style\*="fill: ' + re.escape(style.svg_rgb(drawn))
                         + r'"\] \{ fill: (#[0-9a-f]{6}) !important; \}', css)
        assert rule, drawn
        assert contrast(rule.group(1), DARK_BLOCK) >= AA_TEXT, (drawn, rule.group(1))


def test_the_keyboard_focus_ring_shows_on_the_pages_light_and_dark_backgrounds():
    # Gradio's Soft theme: white blocks on a neutral-50 page; dark: neutral-950 page, 800 blocks, 700 fields.
    dark = ("#0b0f19", DARK_BLOCK, "#374151")
    for ring, backgrounds in ((style.FOCUS, (WHITE, "#f9fafb")), (style.FOCUS_DARK, dark)):
        for background in backgrounds:
            assert contrast(ring, background) >= AA_GRAPHIC, (ring, background)


def test_bonus_tokens_in_the_text_strip_differ_by_more_than_colour():
    html = text_html(a_trace(a_step()), 0)
    assert html.count('class="tok bonus') == 2          # the legend's and the step's bonus token
    rule = re.search(r"\.gen-text \.tok\.bonus[^{]*\{([^}]*)\}", style.PAGE_CSS)
    assert rule, "no rule for bonus tokens"
    mark = re.search(r"box-shadow: inset 0 -(\d+)px 0 (rgb\([^)]*\))", rule.group(1))
    assert mark and int(mark.group(1)) >= 2, rule.group(1)       # a bar under the token, not only its shade
    for shade in style.BONUS_TEXT_BG:        # the bar itself shows on the token's shade (WCAG's 3:1 for graphics)
        assert contrast(mark.group(2), shade) >= AA_GRAPHIC


def test_the_text_strip_says_the_selected_step_in_words_for_screen_readers():
    second = a_step(accepted=[0], accept_length=1, rejected=None, bonus_text="The", committed=[10, 14])
    trace = a_trace(a_step(), second)
    said = step_summary(trace, 0)
    assert said == ("Step 1 of 2: the draft tree has 4 nodes, 2 layers deep; the target accepted 2 draft tokens "
                    "(“far”, “-”) and added the bonus token “↵”; the draft's first rejected guess was “off”.")
    assert step_summary(trace, 1).endswith("accepted 1 draft token (“far”) and added the bonus token “The”.")
    html = text_html(trace, 1)
    assert html.startswith(f'<p class="sr-only">{step_summary(trace, 1)}</p>')
    assert '<p class="sr-only">' not in text_html(trace)        # no step selected: no sentence
    assert re.search(r"\.sr-only \{[^}]*clip: rect\(0, 0, 0, 0\)", style.PAGE_CSS)   # read, not drawn
    # A step that EOS ended before its bonus token says so by leaving the bonus out; markup is escaped.
    cut = a_step(texts=["<b>", "-", "off", " near"], committed=[10, 11])
    assert step_summary(a_trace(cut), 0) == ("Step 1 of 1: the draft tree has 4 nodes, 2 layers deep; the target "
                                             "accepted 2 draft tokens (“&lt;b&gt;”, “-”); the draft's first "
                                             "rejected guess was “off”.")


def test_compares_methods_and_the_theory_schemes_differ_by_marker_and_line_not_colour_alone():
    rows = [{"method": f"{shape}@{n}", "shape": shape, "budget": n, "tau": 2.0 + i, "speedup": 1.0, "prompts": 2}
            for i, shape in enumerate(("opt-tree", "binary", "eagle-static", "chain")) for n in (4, 60)]
    fig = tau_budget_figure({"rows": rows, "prompts": 2})
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    assert len(lines) == 4
    marks = {(t.marker.symbol[0], t.line.dash) for t in lines}
    assert len({m[0] for m in marks}) == 4 and len({m[1] for m in marks}) == 4, marks
    table = {"k": [1, 2], **{name: [0.5, 0.6] for name in SCHEMES}}
    schemes = [t for t in rates_figure(table).data if t.mode == "lines+markers"]
    assert len({t.marker.symbol for t in schemes}) == len(SCHEMES) == len(schemes)
