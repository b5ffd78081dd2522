"""Shared visual conventions, so every panel and every step reads the same way.

The p̂ colour scale is fixed to [0, 1] (never rescaled per step): a class comparing two steps or two
panels must be able to trust that the same colour means the same probability.
"""

from __future__ import annotations

import html
import math

import plotly.io as pio

# Unvalidated figures (built from dicts for speed) need the template as a dict, not a name.
TEMPLATE = pio.templates["plotly_white"].to_plotly_json()

P_HAT_COLORSCALE = "Viridis"
P_HAT_RANGE = (0.0, 1.0)
P_HAT_TITLE = "p̂ (chance the<br>path is accepted)"

ACCEPTED = "#d62728"       # accepted path: red, thick, diamonds
REJECTED = "#7f7f7f"       # the draft's top guess that the target refused
BONUS = "#ff7f0e"          # the token the target adds itself
EDGE = "#b8b8b8"
ROOT = "#333333"
LABEL = "#454545"          # node labels beside the tree's nodes (not Plotly's own #444: dark mode restyles this)
GUIDE = "#555555"          # node outlines and dotted reference lines
# The Theory tab: the two distributions and one colour per acceptance scheme (the two optima in black
# and dark grey, drawn dashed: they are bounds, not verifiers).
TARGET_P = "#4c78a8"       # the target's p
DRAFT_Q = "#f58518"        # the draft's q
SCHEME_COLORS = {"optimal_iid": "#222222", "optimal_wor": "#666666", "greedy_draft": "#7570b3",
                 "rrs_iid": "#e7298a", "rrs_wor": "#1b9e77", "kseq": "#a6761d", "topk_set": ACCEPTED}
THIS_TREE = BONUS          # the marker for this tree's own children at a node
# Where a node came from (the trace's `source`): an open marker around the coloured node, one legend
# entry each. Nodes from a draft model alone carry no extra mark.
SOURCE_MARKS = {
    "recycled": dict(symbol="hexagon-open", color="#17becf", name="recycled (Token Recycling table)"),
    "retrieved": dict(symbol="triangle-up-open", color="#9467bd", name="retrieved (from the text)"),
    "both": dict(symbol="pentagon-open", color="#8c564b", name="draft model + retrieval (shared)"),
}
SOURCE_LABELS = {"draft": "draft model", "recycled": "Token Recycling table", "retrieved": "retrieval",
                 "both": "draft model and retrieval"}
DRAFT_TEXT_BG = ("#d8ecff", "#bcdcff")   # accepted draft tokens, alternating by step
BONUS_TEXT_BG = ("#ffe0bf", "#ffd09e")   # bonus tokens from the target, alternating by step


# What node colour shows. Most nodes of a 60-node tree have p̂ near 0, so on a linear scale they all
# look alike; the log scale (the default) spreads them out. q is the draft's own probability of the
# node given its parent (how sure the draft was at that branch).
COLOUR_MODES = {"log_p_hat": "log p̂ (default)", "p_hat": "p̂ (linear)", "q": "q (draft's probability at the node)"}
LOG_FLOOR = -4          # log10 p̂ below this shares the darkest colour


def coloraxis(mode: str = "p_hat") -> dict:
    """The fixed colour axis of a colour mode (never rescaled per step)."""
    if mode == "log_p_hat":
        ticks = dict(tickvals=list(range(LOG_FLOOR, 1)),
                     ticktext=[f"≤1e{LOG_FLOOR}"] + [f"{10.0 ** e:g}" for e in range(LOG_FLOOR + 1, 1)])
        cmin, cmax, title = LOG_FLOOR, 0, "p̂, log scale<br>(chance the path<br>is accepted)"
    elif mode == "q":
        ticks = dict(tickvals=[0, 0.25, 0.5, 0.75, 1.0])
        cmin, cmax, title = 0.0, 1.0, "q (draft's prob.<br>given the parent)"
    else:
        ticks = dict(tickvals=[0, 0.25, 0.5, 0.75, 1.0])
        (cmin, cmax), title = P_HAT_RANGE, P_HAT_TITLE
    return dict(colorscale=P_HAT_COLORSCALE, cmin=cmin, cmax=cmax,
                # A fixed pixel length pinned to the top: tall 500-node trees keep a compact bar in view.
                colorbar=dict(title=dict(text=title, side="right"), thickness=14, lenmode="pixels",
                              len=280, yanchor="top", y=1.0, **ticks))


def colour_values(mode: str, p_hat: list[float], q: list[float]) -> list[float]:
    """Each node's value on the colour axis of `mode`."""
    if mode == "q":
        return list(q)
    if mode == "log_p_hat":
        return [max(LOG_FLOOR, math.log10(p)) if p > 0 else LOG_FLOOR for p in p_hat]
    return list(p_hat)


def visible(text: str) -> str:
    """A token as a reader can see it: spaces, newlines and tabs drawn as symbols."""
    return (text.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥").replace("\r", "␍")) or "∅"


def hover_safe(text: str) -> str:
    """Token text for Plotly hover/labels: visible whitespace and no markup Plotly would interpret."""
    return html.escape(visible(text), quote=False)

def svg_rgb(colour: str) -> str:
    """'#2a3f5f' or 'white' as Plotly writes it into an SVG element's style: 'rgb(42, 63, 95)'."""
    colour = {"white": "#ffffff", "black": "#000000"}.get(colour.lower(), colour)
    digits = colour.lstrip("#")
    if len(digits) == 3:
        digits = "".join(d * 2 for d in digits)
    return "rgb({}, {}, {})".format(*(int(digits[i:i + 2], 16) for i in (0, 2, 4)))


# Dark mode (Gradio's `?__theme=dark`, or the system's): the figures are drawn light on the server,
# so the page restyles the parts of Plotly's SVG that carry the light template's colours — matched
# by the inline style Plotly writes — and leaves every colour that means something (p̂, the accepted
# path, bonus tokens) alone. `!important` is what lets a stylesheet beat an inline style.
_FIG = ".dark .js-plotly-plot"
_LAYOUT = TEMPLATE["layout"]
_TEXT = [_LAYOUT["font"]["color"], LABEL]
DARK_CSS = "\n".join([
    f'{_FIG} svg.main-svg[style*="background: {_LAYOUT["paper_bgcolor"]}"] {{ background: transparent !important; }}',
    f'{_FIG} rect.bg[style*="fill: {svg_rgb(_LAYOUT["plot_bgcolor"])}"] {{ fill: transparent !important; }}',
    ", ".join(f'{_FIG} text[style*="fill: {svg_rgb(c)}"]' for c in _TEXT)
    + " { fill: var(--body-text-color) !important; }",
    f'{_FIG} path[style*="stroke: {svg_rgb(_LAYOUT["xaxis"]["gridcolor"])}"] '
    "{ stroke: rgba(255, 255, 255, 0.14) !important; }",
    f'{_FIG} path[style*="stroke: {svg_rgb(GUIDE)}"] {{ stroke: #9ca3af !important; }}',
    f'{_FIG} path.point[style*="fill: {svg_rgb(ROOT)}"] {{ fill: #e5e7eb !important; }}',
    # Tokens keep their light origin colours, so their text stays dark.
    ".dark .gen-text .tok, .dark .gen-legend .tok { color: #1f2937; }",
    ".dark .gen-legend .hint { color: #9ca3af; }",
    f".dark .notice {{ background: rgba(255, 127, 14, 0.15); border-left-color: {BONUS}; }}",
])

# The page's own CSS (the app passes it to `launch`); the token colours come from the constants above.
PAGE_CSS = f"""
.gen-text {{ font-family: ui-monospace, monospace; line-height: 1.9; white-space: pre-wrap; font-size: 15px; }}
.gen-text .tok {{ cursor: pointer; border-radius: 3px; padding: 1px 0; }}
.gen-text .tok.current {{ outline: 2px solid {ACCEPTED}; }}
.gen-legend {{ font-size: 12px; margin-bottom: 4px; }}
.gen-legend .tok {{ padding: 1px 4px; border-radius: 3px; }}
.gen-legend .hint {{ color: #666; margin-left: 8px; }}
.notice {{ background: #fff4e5; border-left: 4px solid {BONUS}; padding: 6px 10px; }}
{DARK_CSS}
"""
