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

from opttree.trace import committed_draft

from . import style
from .tree_layout import tidy_layout

LABEL_LIMIT = 80          # above this many nodes only the accepted path keeps text labels
ROW_PX, MIN_HEIGHT, MAX_HEIGHT = 16, 380, 9000


def figure_height(leaf_rows: int) -> int:
    return int(min(MAX_HEIGHT, max(MIN_HEIGHT, 110 + ROW_PX * leaf_rows)))


def _hover(step: dict, i: int) -> str:
    source = step.get("source")
    origin = f"<br>from: {style.SOURCE_LABELS.get(source[i], source[i])}" if source else ""
    return (f"<b>{style.hover_safe(step['texts'][i])}</b> (id {step['tokens'][i]})<br>"
            f"q = {step['q'][i]:.3f} · p̂ = {step['p_hat'][i]:.3f}<br>"
            f"depth {step['depth'][i]} · rank {step['rank'][i]} among siblings' draft choices{origin}")


def tree_figure(step: dict | None, title: str = "", uirevision: str = "tree", colour: str = "log_p_hat") -> go.Figure:
    """Figure for one trace step; `None` gives an empty placeholder with the same colour bar.

    `colour`: what node colour shows (`style.COLOUR_MODES`: log p̂, p̂ or q)."""
    if colour not in style.COLOUR_MODES:
        colour = "log_p_hat"
    # Plain dicts assembled into one unvalidated Figure: validating each go.Scatter costs ~20 ms per
    # tree, and this runs on every scrubber step (the traces are built right by construction).
    traces: list[dict] = []
    layout = dict(coloraxis=style.coloraxis(colour), template=style.TEMPLATE, showlegend=True,
                      legend=dict(orientation="h", y=-0.02, yanchor="top", x=0, font=dict(size=11)),
                      margin=dict(l=10, r=10, t=40 if title else 16, b=40),
                      xaxis=dict(title="depth (root = last committed token)", dtick=1, zeroline=False,
                                 showgrid=True, side="top"),
                      yaxis=dict(visible=False, autorange="reversed"),
                      hoverlabel=dict(font=dict(family="monospace")),
                      title=dict(text=title, x=0.01, font=dict(size=14)) if title else None,
                      # Keep the visitor's zoom while they scrub between steps of one run.
                      uirevision=uirevision)
    if not step:
        traces.append(dict(type="scatter", x=[0], y=[0], mode="markers", name="draft nodes",
                           marker=dict(color=style.colour_values(colour, [0.0], [0.0]), coloraxis="coloraxis",
                                       size=1), hoverinfo="skip"))
        layout.update(height=MIN_HEIGHT, annotations=[dict(text="Run a prompt to see its draft trees",
                                                           showarrow=False, x=0.5, y=0.5,
                                                           xref="paper", yref="paper")])
        return _figure(traces, layout)
    parents, p_hat = step["parents"], step["p_hat"]
    shade = style.colour_values(colour, p_hat, step["q"])
    n = len(parents)
    x, y, root_y, rows = tidy_layout(parents, p_hat)

    def pos(i):
        return (0.0, root_y) if i == -1 else (x[i], y[i])

    ex, ey = [], []
    for i, p in enumerate(parents):
        (px, py), (cx, cy) = pos(p), pos(i)
        ex += [px, cx, None]
        ey += [py, cy, None]
    traces.append(dict(type="scatter", x=ex, y=ey, mode="lines", name="draft edges", hoverinfo="skip",
                             line=dict(color=style.EDGE, width=1), showlegend=False))

    labels = n <= LABEL_LIMIT
    accepted_set = set(step.get("accepted") or [])
    traces.append(dict(type="scatter",
        x=x, y=y, mode="markers+text" if labels else "markers", name="draft nodes",
        # Accepted nodes carry their label on the accepted-path trace (above the thick line).
        text=[("" if i in accepted_set else style.hover_safe(t)) for i, t in enumerate(step["texts"])]
        if labels else None,
        textposition="middle right", textfont=dict(size=10, color=style.LABEL),
        hovertext=[_hover(step, i) for i in range(n)], hoverinfo="text",
        marker=dict(color=shade, coloraxis="coloraxis", size=9 if n <= 150 else 6,
                    line=dict(width=0.5, color=style.GUIDE))))

    sources = step.get("source") or []
    for name, mark in style.SOURCE_MARKS.items():
        idx = [i for i, src in enumerate(sources) if src == name]
        if idx:
            traces.append(dict(type="scatter", x=[x[i] for i in idx], y=[y[i] for i in idx], mode="markers",
                               name=f"{mark['name']} ({len(idx)})", hoverinfo="skip",
                               marker=dict(symbol=mark["symbol"], size=15 if n <= 150 else 10, color=mark["color"],
                                           line=dict(width=2, color=mark["color"]))))

    acc = list(step.get("accepted") or [])
    ax, ay = [pos(-1)[0]], [pos(-1)[1]]
    for a in acc:
        ax.append(x[a])
        ay.append(y[a])
    traces.append(dict(type="scatter",
        x=ax, y=ay, mode="lines+markers+text", name=f"accepted path ({len(acc)})",
        text=[""] + [style.hover_safe(step["texts"][a]) for a in acc], textposition="top center",
        textfont=dict(size=11, color=style.ACCEPTED),
        hovertext=["root"] + [_hover(step, a) for a in acc], hoverinfo="text",
        line=dict(color=style.ACCEPTED, width=5),
        marker=dict(symbol=["square"] + ["diamond"] * len(acc), size=[10] + [15] * len(acc),
                    color=style.colour_values(colour, [1.0], [1.0]) + [shade[a] for a in acc], coloraxis="coloraxis",
                    line=dict(width=2.5, color=style.ACCEPTED))))

    rej = step.get("rejected")
    if isinstance(rej, int) and 0 <= rej < n:
        traces.append(dict(type="scatter",
            x=[x[rej]], y=[y[rej]], mode="markers", name="first rejected draft token",
            hovertext=["rejected: " + _hover(step, rej)], hoverinfo="text",
            marker=dict(symbol="x", size=16, color=style.REJECTED, line=dict(width=1, color="#000"))))

    last = acc[-1] if acc else -1
    lx, ly = pos(last)
    # Half a column right of the last accepted node: the bonus is not a draft node, and this keeps
    # it clear of the rejected sibling drawn one full column right.
    bx = lx + 0.55
    bonus_text = style.hover_safe(step.get("bonus_text", ""))
    traces.append(dict(type="scatter",
        x=[lx, bx], y=[ly, ly], mode="lines+markers+text", name="bonus token (from the target)",
        text=["", bonus_text], textposition="middle right", textfont=dict(size=11, color=style.BONUS),
        hovertext=["", f"<b>{bonus_text}</b> (id {step.get('bonus_token')})<br>the target's own next token"],
        hoverinfo="text", line=dict(color=style.BONUS, width=2, dash="dot"),
        marker=dict(symbol=["circle", "star"], size=[1, 18], color=style.BONUS,
                    line=dict(width=1, color="#000"))))

    traces.append(dict(type="scatter", x=[0.0], y=[root_y], mode="markers", name="root", showlegend=False,
                             hovertext=["root: the last committed token"], hoverinfo="text",
                             marker=dict(symbol="square", size=12, color=style.ROOT)))
    depth = max(x, default=0.0)
    layout["xaxis"]["range"] = [-0.4, depth + 1.8]
    layout["height"] = figure_height(rows)
    return _figure(traces, layout)


def _figure(traces: list[dict], layout: dict) -> go.Figure:
    if layout.get("title") is None:
        layout.pop("title", None)
    return go.Figure(dict(data=traces, layout=layout), _validate=False)


def step_title(trace: dict, index: int) -> str:
    meta = trace.get("meta", {})
    steps = trace.get("steps", [])
    if not steps:
        return f"{meta.get('method', '')}"
    s = steps[index]
    return (f"{meta.get('method', '')} · step {index + 1}/{len(steps)} · {len(s['tokens'])} nodes · "
            f"accepted {committed_draft(s)} · E(A) = {s['expected_accept']:.2f}")
