"""Shared visual conventions, so every panel and every step reads the same way.

Each node colour scale is fixed (`coloraxis`: log p̂, the default, from 10^LOG_FLOOR to 1; p̂ and q from 0
to 1) and never rescaled per step: a class comparing two steps or two panels must be able to trust that the
same colour means the same probability.
"""

from __future__ import annotations

import html
import math
import string
import textwrap

import plotly.io as pio

from opttree import paths

# Unvalidated figures (built from dicts for speed) need the template as a dict, not a name.
TEMPLATE = pio.templates["plotly_white"].to_plotly_json()

P_HAT_COLORSCALE = "Viridis"
P_HAT_RANGE = (0.0, 1.0)
P_HAT_TITLE = "p̂<br>(the draft's belief the path is accepted)"

ACCEPTED = "#d62728"       # accepted path: red, thick, diamonds
REJECTED = "#7f7f7f"       # the draft's top guess that the target refused
BONUS = "#ff7f0e"          # the token the target adds itself
# Text in a meaning colour keeps WCAG AA contrast (4.5:1) on the white figure: the bonus orange itself reads
# 2.5:1 there, so its labels take a darker orange (dark mode draws them in BONUS, app.css).
BONUS_TEXT = "#b35900"
EDGE = "#8c8c8c"
ROOT = "#333333"
LABEL = "#454545"          # node labels beside the tree's nodes (not Plotly's own #444: dark mode restyles this)
GUIDE = "#555555"          # node outlines and dotted reference lines
# The Theory tab: the two distributions and one colour per acceptance scheme (the two optima in black
# and dark grey, drawn dashed: they are bounds, not verifiers). Every marker and bar colour of the tree and
# Theory figures keeps WCAG's 3:1 for graphics on the white figure (or has a dark outline): q's orange and
# the recycled cyan are darker shades of Plotly's (#f58518 and #17becf read 2.5:1 and 2.3:1).
TARGET_P = "#4c78a8"       # the target's p
DRAFT_Q = "#c8690f"        # the draft's q
SCHEME_COLORS = {"optimal_iid": "#222222", "optimal_wor": "#666666", "greedy_draft": "#7570b3",
                 "rrs_iid": "#e7298a", "rrs_wor": "#1b9e77", "kseq": "#a6761d", "topk_set": ACCEPTED}
THIS_TREE = BONUS          # the marker for this tree's own children at a node
# Series told apart by colour (Compare's methods, the Theory tab's schemes) differ by marker shape too, and
# Compare's lines by dash: the default colours' red and green look alike to a deuteranope, and a greyscale
# projector shows none of them. Series i takes entry i (cycled); "-open" marks a shape's open variant.
SERIES_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "triangle-down", "cross", "x", "pentagon")
SERIES_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")


def series_mark(i: int) -> tuple[str, str]:
    """(marker symbol, line dash) of the `i`-th series of a chart."""
    return SERIES_SYMBOLS[i % len(SERIES_SYMBOLS)], SERIES_DASHES[i % len(SERIES_DASHES)]
# Where a node came from (the trace's `source`): an open marker around the coloured node, one legend
# entry each. Nodes from a draft model alone carry no extra mark.
SOURCE_MARKS = {
    "recycled": dict(symbol="hexagon-open", color="#0e8a97", name="recycled (Token Recycling table)"),
    "retrieved": dict(symbol="triangle-up-open", color="#9467bd", name="retrieved (from the text)"),
    "both": dict(symbol="pentagon-open", color="#8c564b", name="draft model + retrieval (shared)"),
}
SOURCE_LABELS = {"draft": "draft model", "recycled": "Token Recycling table", "retrieved": "retrieval",
                 "both": "draft model and retrieval"}
# The ring round a field reached with the keyboard (app.css): at least WCAG's 3:1 for graphics on the page's
# light and dark backgrounds.
FOCUS = "#1d4ed8"
FOCUS_DARK = "#93c5fd"
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
        cmin, cmax, title = LOG_FLOOR, 0, "p̂, log scale<br>(the draft's belief the path is accepted)"
    elif mode == "q":
        ticks = dict(tickvals=[0, 0.25, 0.5, 0.75, 1.0])
        cmin, cmax, title = 0.0, 1.0, "q (draft's prob.<br>given the parent)"
    else:
        ticks = dict(tickvals=[0, 0.25, 0.5, 0.75, 1.0])
        (cmin, cmax), title = P_HAT_RANGE, P_HAT_TITLE
    return dict(colorscale=P_HAT_COLORSCALE, cmin=cmin, cmax=cmax,
                # A fixed pixel length pinned to the top: tall 500-node trees keep a compact bar in view.
                # Two title lines along the bar and small ticks: the bar's width is taken from the tree's,
                # a third of it on a phone.
                colorbar=dict(title=dict(text=title, side="right", font=dict(size=11)), thickness=12,
                              tickfont=dict(size=10), lenmode="pixels", len=280, yanchor="top", y=1.0, **ticks))


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


def plotly_text(text) -> str:
    """Text a trace holds (a method, a drafter, a token) for a Plotly title or label: Plotly reads its own subset
    of HTML there (links, styles), so any markup is escaped and shows as itself."""
    return html.escape(str(text), quote=False)


def md_text(text) -> str:
    """Text a visitor or a trace gave (an error quoting a setting, a model's name, a stop reason) for Markdown:
    shown as itself on one line, never as HTML or Markdown (a link, an image the browser would fetch; a line
    break would end a table row or start a heading). `$$` is left as it is: the page's Markdown blocks draw no
    maths (ui/app.py no_maths)."""
    escaped = html.escape(" ".join(str(text).splitlines()), quote=False)
    return "".join("\\" + c if c in "\\`*_[]()#+!|~" else c for c in escaped)   # < and > are entities by now


def hover_safe(text: str) -> str:
    """Token text for Plotly hover/labels: visible whitespace and no markup Plotly would interpret."""
    return plotly_text(visible(text))


# Characters a line of a chart's note or title may hold in a half-width panel (about 420 px): Plotly
# draws text on one line however long, so a longer one is cut at the figure's edge.
NOTE_CHARS = 70


def wrap_lines(text: str, width: int = NOTE_CHARS) -> tuple[str, int]:
    """`text` (Plotly markup; "<br>" breaks kept) broken at spaces into lines of at most `width`
    characters, joined by "<br>", and how many lines that makes. A word longer than `width` stays whole."""
    out = []
    for part in text.split("<br>"):
        out.extend(textwrap.wrap(part, width, break_long_words=False, break_on_hyphens=False) or [""])
    return "<br>".join(out), len(out)


NEST_STEP = 4              # px between the sizes of stars that share a point


def nested_star_sizes(count: int, smallest: int) -> list[int]:
    """Marker sizes for `count` stars, in drawing order, that may share a point: each later star is
    NEST_STEP px smaller, drawn on top, so every one still shows (nested) at its true place."""
    return [smallest + NEST_STEP * (count - 1 - i) for i in range(count)]


def svg_rgb(colour: str) -> str:
    """'#2a3f5f' or 'white' as Plotly writes it into an SVG element's style: 'rgb(42, 63, 95)'."""
    colour = {"white": "#ffffff", "black": "#000000"}.get(colour.lower(), colour)
    digits = colour.lstrip("#")
    if len(digits) == 3:
        digits = "".join(d * 2 for d in digits)
    return "rgb({}, {}, {})".format(*(int(digits[i:i + 2], 16) for i in (0, 2, 4)))


# The page's stylesheet (assets/app.css) names these colours by placeholders: hex where a rule draws
# with one, Plotly's SVG form where a dark-mode selector matches the inline style Plotly writes with
# the light template's colours (the page restyles those and leaves every colour that means something).
_LAYOUT = TEMPLATE["layout"]
CSS_COLOURS = {
    "accepted": ACCEPTED, "bonus": BONUS,
    "paper_bg": _LAYOUT["paper_bgcolor"],        # Plotly writes the SVG's background as given ("white")
    "plot_bg": svg_rgb(_LAYOUT["plot_bgcolor"]), "figure_text": svg_rgb(_LAYOUT["font"]["color"]),
    "label": svg_rgb(LABEL), "grid": svg_rgb(_LAYOUT["xaxis"]["gridcolor"]), "guide": svg_rgb(GUIDE),
    "root": svg_rgb(ROOT), "accepted_text": svg_rgb(ACCEPTED), "bonus_text": svg_rgb(BONUS_TEXT),
    "focus": FOCUS, "focus_dark": FOCUS_DARK,
}


def page_css() -> str:
    """The page's stylesheet: assets/app.css with its colour placeholders filled from CSS_COLOURS."""
    return string.Template((paths.PAGE_ASSETS / "app.css").read_text(encoding="utf-8")).substitute(CSS_COLOURS)


PAGE_CSS = page_css()     # read when the page starts: the app passes it to `launch`, the HTML export embeds it


def keys_script() -> str:
    """The browser script that gives a page of steps its keys (← / → step, Space play / pause; the text strip
    and each chart's toolbar one Tab stop, with arrows among their buttons), its step buttons' spoken names and
    the text strip's live region, which says each new step's sentence: assets/keys.js, a function a page calls
    once. The app's page and the HTML export both run it."""
    return (paths.PAGE_ASSETS / "keys.js").read_text(encoding="utf-8")
