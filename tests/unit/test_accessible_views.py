"""Views for readers who cannot rely on colour or sight: text drawn in a meaning colour keeps WCAG AA contrast
(4.5:1) on its background in light and dark mode."""

from __future__ import annotations

import re

from viz import style
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


def test_dark_mode_redraws_the_meaning_coloured_labels_light_enough():
    css = style.PAGE_CSS
    for drawn in (style.ACCEPTED, style.BONUS_TEXT):
        rule = re.search(r'\.dark \.js-plotly-plot text\[style\*="fill: ' + re.escape(style.svg_rgb(drawn))
                         + r'"\] \{ fill: (#[0-9a-f]{6}) !important; \}', css)
        assert rule, drawn
        assert contrast(rule.group(1), DARK_BLOCK) >= AA_TEXT, (drawn, rule.group(1))
