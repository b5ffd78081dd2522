"""The draft tree of one step as a Plotly figure (pure: a trace step in, a figure out).

Traces, in a fixed order so the browser can find them by name:
  edges          every parent→child edge in ONE scatter separated by None (one trace per edge is
                 far slower to redraw at 500 nodes)
  draft nodes    every node, coloured on the shared fixed colour axis (log p̂ by default; p̂ or q)
  sources        one trace per source other than a draft model (recycled / retrieved / both) that
                 the step has: an open marker of its own shape and colour around those nodes
  accepted path  the accepted edges and nodes: thick red line and large diamonds (shape + width +
                 colour, so it survives colour-blindness and greyscale projectors)
  rejected       the draft's top child at the point where the target disagreed (an X)
  bonus token    the token the target supplied itself after the accepted path (a star)
  root           the last committed token the tree grows from
"""

from __future__ import annotations

import plotly.graph_objects as go

from opttree import paths
from opttree.trace import BROKEN, bonus_shown, committed_draft, counted, node_text

from . import style
from .text_view import run_pieces
from .tree_layout import tidy_layout

LABEL_LIMIT = 80          # above this many nodes only the accepted path keeps text labels
LABELLED = 30             # nodes labelled beside the accepted path: the likeliest by p̂ (the rest on hover)
LABEL_CHARS = 12          # a label longer than this is cut with "…" (the hover has the whole token)
CONTEXT_CHARS = 18        # how much of the text the step continues the root's label shows
# MAX_HEIGHT: a wider tree squeezes its rows (and thins its labels) instead of growing past it, so the
# scrubber below a 500-node tree stays within a scroll or two; the chart's zoom spreads the rows again.
ROW_PX, MIN_HEIGHT, MAX_HEIGHT = 16, 380, 1600
FRAME_PX = 160            # title, axis, legend and margins around the rows
TITLE_TOP = 50            # the title starts below the label chip the page draws over a chart's top left
ROOT_LABEL_PX = 26        # how far below the root its label (the text the step continues) reaches
LABEL_PX = 10             # a node label's font size
ACCEPTED_LABEL_PX = 11    # an accepted token's label's font size (above its diamond)
DIAMOND_PX = 15           # an accepted node's diamond
LINE = 1.3                # a label's line box, in font sizes
# Said on hover of a token shown by its bytes label (opttree/trace.py, "Token texts").
BYTES_NOTE = "<br>part of a character split over several tokens: ⟨…⟩ holds its bytes in hex"
PRESENT_HEIGHT = 500      # presenter mode: the tallest tree, so the step fits a 1280 × 720 screen
PRESENT_LARGER = 2        # presenter mode: labels this many px larger


def figure_height(leaf_rows: int, cap: int = MAX_HEIGHT) -> int:
    return int(min(cap, max(MIN_HEIGHT, FRAME_PX + ROW_PX * leaf_rows)))


def _hover(step: dict, i: int) -> str:
    source = step.get("source")
    origin = f"<br>from: {style.SOURCE_LABELS.get(source[i], source[i])}" if source else ""
    text = node_text(step, i)
    note = BYTES_NOTE if text != step["texts"][i] else ""
    return (f"<b>{style.hover_safe(text)}</b> (id {step['tokens'][i]}){note}<br>"
            f"q = {step['q'][i]:.3f} · p̂ = {step['p_hat'][i]:.3f}<br>"
            f"depth {step['depth'][i]} · rank {step['rank'][i]} among siblings' draft choices{origin}")


# The tree chart's name: the app's block label (ui/explore.py), which the app's script gives the chart as its
# accessible name, and the HTML export's chart's aria-label.
TREE_NAME = "Draft tree of the selected step"


def label_script() -> str:
    """The browser script that fits these figures' labels to the width each is drawn at (on a phone a label
    that would print over another is hidden or moved): assets/fit_labels.js, a function a page calls once.
    The app's page and the HTML export both run it."""
    return (paths.PAGE_ASSETS / "fit_labels.js").read_text(encoding="utf-8")


def root_context(trace: dict, index: int) -> str:
    """The end of the text step `index` continues (its root is that text's last token): the output
    committed by the steps before it, or for the first step the end of the prompt."""
    text = "".join(s.get("committed_text", "") for s in (trace.get("steps") or [])[:index])
    if BROKEN in text:       # a character split over two steps: mended from the output text where it lines up
        mended = "".join(t for pieces in run_pieces(trace)[:index] for t, _ in pieces)
        text = text if BROKEN in mended else mended
    if not text.strip():
        text = trace.get("prompt", "")
    text = " ".join(text.split())
    return text if len(text) <= CONTEXT_CHARS else "…" + text[-CONTEXT_CHARS:]


def _label(text: str) -> str:
    """A token's label: cut to LABEL_CHARS characters as a reader sees them, then escaped once (an
    escape before the cut would count "&lt;" as four characters and could split it)."""
    text = style.visible(text)
    return style.hover_safe(text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…")


def tree_figure(step: dict | None, title: str = "", uirevision: str = "tree", colour: str = "log_p_hat",
                context: str = "", present: bool = False) -> go.Figure:
    """Figure for one trace step; `None` gives an empty placeholder with the same colour bar.

    `colour`: what node colour shows (`style.COLOUR_MODES`: log p̂, p̂ or q); `context`: the text the
    step continues, shown at the root (root_context); `present`: presenter mode (larger title and
    labels, at most PRESENT_HEIGHT px tall). A tree taller than its cap (MAX_HEIGHT, PRESENT_HEIGHT) squeezes
    its rows, labels thinned in proportion."""
    if colour not in style.COLOUR_MODES:
        colour = "log_p_hat"
    # Plain dicts assembled into one unvalidated Figure: validating each go.Scatter cost ~20 ms per
    # tree (2026-11-21), and this runs on every scrubber step (the traces are built right by construction).
    layout = _layout(title, uirevision, colour, present)
    if not step:
        return _empty(layout, colour)
    x, y, root_y, rows = tidy_layout(step["parents"], step["p_hat"])
    at = _Positions(x, y, root_y)
    shade = style.colour_values(colour, step["p_hat"], step["q"])
    cap = PRESENT_HEIGHT if present else MAX_HEIGHT
    height = figure_height(rows, cap)
    labels, larger = LABELLED, PRESENT_LARGER if present else 0
    natural = FRAME_PX + ROW_PX * rows
    if natural > cap:                                  # squeezed rows: labels thinned in proportion
        labels = max(8, LABELLED * cap // natural)
    row_px = (height - FRAME_PX) / max(rows, 1)       # below ROW_PX where the rows are squeezed
    traces = [_edges(step, at), _nodes(step, at, shade, labels, row_px, larger, bool(context)), *_sources(step, at),
              _accepted(step, at, shade, colour)]
    rej = step.get("rejected")
    if isinstance(rej, int) and 0 <= rej < len(step["parents"]):
        traces.append(_rejected(step, at, rej))
    traces += [_bonus(step, at), _root(root_y, context, _root_side(step, at))]
    if larger:     # larger labels for the back of a room
        for trace in traces:
            if "textfont" in trace:
                trace["textfont"] = {**trace["textfont"], "size": trace["textfont"]["size"] + larger}
    layout["xaxis"]["range"] = [-0.4, max(x, default=0.0) + 1.8]
    layout["height"] = height
    return _figure(traces, layout)


class _Positions:
    """Where each node sits; node -1 is the root."""

    def __init__(self, x: list[float], y: list[float], root_y: float):
        self.x, self.y, self.root_y = x, y, root_y

    def __call__(self, i: int) -> tuple[float, float]:
        return (0.0, self.root_y) if i == -1 else (self.x[i], self.y[i])


def _layout(title: str, uirevision: str, colour: str, present: bool = False) -> dict:
    lines = title.count("<br>") + 1 if title else 0
    return dict(coloraxis=style.coloraxis(colour), template=style.TEMPLATE, showlegend=True,
                legend=dict(orientation="h", y=-0.02, yanchor="top", x=0, font=dict(size=11)),
                margin=dict(l=10, r=10, t=TITLE_TOP + 20 * (lines + 1) if title else 16, b=40),
                xaxis=dict(title="depth (root = last committed token)", dtick=1, zeroline=False,
                           showgrid=True, side="top"),
                yaxis=dict(visible=False, autorange="reversed"),
                hoverlabel=dict(font=dict(family="monospace")),
                # From the top down, below the page's label chip (a two-line title centred in the margin
                # would reach the depth ticks under it).
                title=dict(text=title, x=0.01, y=1, yref="container", yanchor="top", pad=dict(t=TITLE_TOP),
                           font=dict(size=16 if present else 14)) if title else None,
                # Keep the visitor's zoom while they scrub between steps of one run.
                uirevision=uirevision)


def _empty(layout: dict, colour: str) -> go.Figure:
    traces = [dict(type="scatter", x=[0], y=[0], mode="markers", name="draft nodes",
                   marker=dict(color=style.colour_values(colour, [0.0], [0.0]), coloraxis="coloraxis", size=1),
                   hoverinfo="skip")]
    layout.update(height=MIN_HEIGHT, annotations=[dict(text="Run a prompt to see its draft trees", showarrow=False,
                                                       x=0.5, y=0.5, xref="paper", yref="paper")])
    return _figure(traces, layout)


def _edges(step: dict, at: _Positions) -> dict:
    ex, ey = [], []
    for i, p in enumerate(step["parents"]):
        (px, py), (cx, cy) = at(p), at(i)
        ex += [px, cx, None]
        ey += [py, cy, None]
    return dict(type="scatter", x=ex, y=ey, mode="lines", name="draft edges", hoverinfo="skip",
                line=dict(color=style.EDGE, width=1), showlegend=False)


def labelled_nodes(step: dict, limit: int = LABELLED, y: list[float] | None = None,
                   rows_apart: float = 0.0, blocked: tuple = ()) -> set[int]:
    """The nodes that carry a text label beside the accepted path: all of a small tree, the `limit`
    likeliest by p̂ of a larger one (labels of every node of a 60-node tree overlap), none above
    LABEL_LIMIT nodes. With positions `y`, a node is skipped when a label in its column (an accepted
    node's included) sits less than `rows_apart` rows away, or when it lies in a `blocked` band
    (depth, from row, to row) that another label covers: labels never print on each other."""
    n = len(step["parents"])
    if n > LABEL_LIMIT:
        return set()
    order = sorted(range(n), key=lambda i: -step["p_hat"][i])
    if y is None:
        return set(order[:limit])
    taken: dict[int, list[float]] = {}
    chosen: set[int] = set()        # the accepted path's labels count toward the limit
    for a in step.get("accepted") or []:
        taken.setdefault(step["depth"][a], []).append(y[a])
        chosen.add(a)
    for i in order:
        if len(chosen) >= limit:
            break
        if i in chosen:
            continue
        d = step["depth"][i]
        column = taken.setdefault(d, [])
        if any(bd == d and lo < y[i] < hi for bd, lo, hi in blocked):
            continue
        if all(abs(y[i] - other) >= max(rows_apart, 1.0) for other in column):
            chosen.add(i)
            column.append(y[i])
    return chosen


def _nodes(step: dict, at: _Positions, shade: list, labels: int = LABELLED, row_px: float = ROW_PX,
           larger: int = 0, root_label: bool = False) -> dict:
    n = len(step["parents"])
    # Labels in a column keep a label's height apart; accepted nodes carry their label on the accepted-
    # path trace (above the thick line); the root's label hangs below the root across two columns.
    font = LABEL_PX + larger
    reach = (ROOT_LABEL_PX + larger + font / 2 + 2) / row_px
    lo, hi = (at.root_y, at.root_y + reach) if _root_side(step, at) == "bottom" else (at.root_y - reach, at.root_y)
    blocked = ((1, lo, hi), (2, lo, hi)) if root_label else ()
    # An accepted token's label sits above its diamond, centred on its column: a label of that column whose
    # line (half of it either side of its node) reaches the accepted label's line would print on it.
    accepted, half = step.get("accepted") or [], LINE * font / 2
    top, line = DIAMOND_PX / 2, LINE * (ACCEPTED_LABEL_PX + larger)
    blocked += tuple((step["depth"][a], at.y[a] - (top + line + half) / row_px, at.y[a] - (top - half) / row_px)
                     for a in accepted)
    shown = labelled_nodes(step, labels, at.y, (font + 6) / row_px, blocked) - set(accepted)
    # The first rejected token's X (`_rejected`) is wider than a node's dot: its label starts an en space
    # later (a character SVG does not collapse), clear of the X's right arm.
    pad = {step.get("rejected"): "\u2002"}
    return dict(type="scatter",
                x=at.x, y=at.y, mode="markers+text" if shown else "markers", name="draft nodes",
                text=[pad.get(i, "") + _label(node_text(step, i)) if i in shown else "" for i in range(n)]
                if shown else None,
                textposition="middle right", textfont=dict(size=LABEL_PX, color=style.LABEL),
                hovertext=[_hover(step, i) for i in range(n)], hoverinfo="text",
                marker=dict(color=shade, coloraxis="coloraxis", size=9 if n <= 150 else 6,
                            line=dict(width=0.5, color=style.GUIDE)))


def _sources(step: dict, at: _Positions) -> list[dict]:
    n, sources, out = len(step["parents"]), step.get("source") or [], []
    for name, mark in style.SOURCE_MARKS.items():
        idx = [i for i, src in enumerate(sources) if src == name]
        if idx:
            out.append(dict(type="scatter", x=[at.x[i] for i in idx], y=[at.y[i] for i in idx], mode="markers",
                            name=f"{mark['name']} ({len(idx)})", hoverinfo="skip",
                            marker=dict(symbol=mark["symbol"], size=15 if n <= 150 else 10, color=mark["color"],
                                        line=dict(width=2, color=mark["color"]))))
    return out


def _accepted(step: dict, at: _Positions, shade: list, colour: str) -> dict:
    acc = list(step.get("accepted") or [])
    ax, ay = [at(-1)[0]] + [at.x[a] for a in acc], [at(-1)[1]] + [at.y[a] for a in acc]
    return dict(type="scatter",
                x=ax, y=ay, mode="lines+markers+text", name=f"accepted path ({len(acc)})",
                text=[""] + [_label(node_text(step, a)) for a in acc], textposition="top center",
                textfont=dict(size=ACCEPTED_LABEL_PX, color=style.ACCEPTED),
                hovertext=["root"] + [_hover(step, a) for a in acc], hoverinfo="text",
                line=dict(color=style.ACCEPTED, width=5),
                marker=dict(symbol=["square"] + ["diamond"] * len(acc), size=[10] + [DIAMOND_PX] * len(acc),
                            color=style.colour_values(colour, [1.0], [1.0]) + [shade[a] for a in acc],
                            coloraxis="coloraxis", line=dict(width=2.5, color=style.ACCEPTED)))


def _rejected(step: dict, at: _Positions, rej: int) -> dict:
    return dict(type="scatter",
                x=[at.x[rej]], y=[at.y[rej]], mode="markers", name="first rejected draft token",
                hovertext=["rejected: " + _hover(step, rej)], hoverinfo="text",
                marker=dict(symbol="x", size=16, color=style.REJECTED, line=dict(width=1, color="#000")))


def _bonus(step: dict, at: _Positions) -> dict:
    acc = step.get("accepted") or []
    lx, ly = at(acc[-1] if acc else -1)
    # Half a column right of the last accepted node: the bonus is not a draft node, and this keeps
    # it clear of the rejected sibling drawn one full column right; its label sits above the star and
    # runs right from it, where neither the rejected X, that node's own label nor the last accepted
    # token's label (centred above its diamond) reaches.
    bx = lx + 0.55
    bonus_text = bonus_shown(step)
    hover = (f"<b>{style.hover_safe(bonus_text)}</b> (id {step.get('bonus_token')})"
             + (BYTES_NOTE if bonus_text != step.get("bonus_text", "") else ""))
    return dict(type="scatter",
                x=[lx, bx], y=[ly, ly], mode="lines+markers+text", name="bonus token (from the target)",
                text=["", _label(bonus_text)], textposition="top right",
                textfont=dict(size=12, color=style.BONUS_TEXT),
                hovertext=["", f"{hover}<br>the target's own next token"],
                hoverinfo="text", line=dict(color=style.BONUS, width=2, dash="dot"),
                marker=dict(symbol=["circle", "star"], size=[1, 18], color=style.BONUS,
                            line=dict(width=1, color="#000")))


def _root_side(step: dict, at: _Positions) -> str:
    """Where the root's label hangs: below the root, or above it when the accepted path leaves the root
    downwards (the first accepted token's label, above its diamond, would meet it there)."""
    acc = step.get("accepted") or []
    return "top" if acc and at.y[acc[0]] > at.root_y else "bottom"


def _root(root_y: float, context: str = "", side: str = "bottom") -> dict:
    shown = style.plotly_text(context)
    return dict(type="scatter", x=[0.0], y=[root_y], mode="markers+text", name="root", showlegend=False,
                text=[shown], textposition=f"{side} right", textfont=dict(size=11, color=style.ROOT),
                hovertext=[f"root: the last committed token{f' of «{shown}»' if shown else ''}"], hoverinfo="text",
                marker=dict(symbol="square", size=12, color=style.ROOT))


def _figure(traces: list[dict], layout: dict) -> go.Figure:
    if layout.get("title") is None:
        layout.pop("title", None)
    return go.Figure(dict(data=traces, layout=layout), _validate=False)


def step_title(trace: dict, index: int) -> str:
    method = style.plotly_text(trace.get("meta", {}).get("method", ""))
    steps = trace.get("steps", [])
    if not steps:
        return method
    s = steps[index]
    # Two short lines: one long line was cut at a phone's width (Plotly never wraps a title).
    return (f"{method} · step {index + 1}/{len(steps)} · {counted(len(s['tokens']), 'node')}<br>"
            f"accepted {committed_draft(s)} · E(A) = {s['expected_accept']:.2f}")
