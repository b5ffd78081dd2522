"""Small charts about steps: accepted length per step, the δ rule's E(A)-by-depth curve, and the
expected-vs-actual acceptance scatter (the paper's Figure 4). Pure functions of traces."""

from __future__ import annotations

import html
import math

import plotly.graph_objects as go

from opttree.trace import committed_draft

from . import style


def _base(height: int, title: str) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(template="plotly_white", height=height, margin=dict(l=50, r=10, t=40, b=40),
                      title=dict(text=title, x=0.01, font=dict(size=14)), showlegend=False)
    return fig


def accept_bars(trace: dict | None, current: int | None = None) -> go.Figure:
    """Accepted draft tokens per step (bars) with the bonus token stacked on top; current step outlined."""
    fig = _base(260, "Tokens committed per step")
    steps = (trace or {}).get("steps", [])
    xs = list(range(1, len(steps) + 1))
    # A step cut short by EOS or the token limit commits fewer tokens than accepted + bonus.
    committed = [len(s["committed"]) if isinstance(s.get("committed"), list) else s["accept_length"] + 1
                 for s in steps]
    acc = [committed_draft(s) for s in steps]
    bonus = [1 if c > a else 0 for a, c in zip(acc, committed)]
    line = [3 if i == current else 0 for i in range(len(steps))]
    fig.add_trace(go.Bar(x=xs, y=acc, name="accepted draft tokens", marker=dict(
        color="#4c78a8", line=dict(width=line, color="#000")),
        hovertemplate="step %{x}: %{y} accepted<extra></extra>"))
    fig.add_trace(go.Bar(x=xs, y=bonus, name="bonus token", marker=dict(color=style.BONUS),
                         hovertemplate="step %{x}: +1 bonus<extra></extra>"))
    fig.update_layout(barmode="stack", showlegend=True, legend=dict(orientation="h", y=1.15, x=0.4),
                      xaxis=dict(title="step"), yaxis=dict(title="tokens", rangemode="tozero"))
    return fig


def why_shape(step: dict | None, meta: dict | None) -> go.Figure:
    """E(A) after each layer, with the δ rule: growth stops once a layer adds ≤ δ (or at max depth).

    Built from plain dicts without validation: it is redrawn on every scrubber step."""
    meta = meta or {}
    layout = dict(template=style.TEMPLATE, height=300, margin=dict(l=50, r=10, t=40, b=40), showlegend=False,
                  title=dict(text="Why this shape: E(A) by depth", x=0.01, font=dict(size=14)))
    if not step or not step.get("ea_by_depth"):
        return go.Figure(dict(data=[], layout=layout), _validate=False)
    ea = step["ea_by_depth"]
    xs = list(range(len(ea)))
    gains = [0.0] + [ea[i] - ea[i - 1] for i in range(1, len(ea))]
    delta = float(meta.get("threshold", 0.0) or 0.0)
    data = [dict(type="scatter", x=xs, y=ea, mode="lines+markers", name="E(A)", customdata=gains,
                 line=dict(color="#4c78a8", width=3),
                 hovertemplate="depth %{x}: E(A) = %{y:.3f} (gain %{customdata:.3f})<extra></extra>"),
            dict(type="bar", x=xs[1:], y=gains[1:], name="gain of this layer", marker=dict(color="#9ecae9"),
                 hovertemplate="layer %{x} added %{y:.3f}<extra></extra>")]
    shapes, notes = [], []
    if meta.get("method") == "opt-tree":
        shapes.append(dict(type="line", xref="paper", x0=0, x1=1, yref="y", y0=delta, y1=delta,
                           line=dict(color=style.ACCEPTED, dash="dash")))
        notes.append(dict(xref="paper", x=0, yref="y", y=delta, xanchor="left", yanchor="bottom",
                          showarrow=False, text=f"δ = {delta:g}: deepen only while a layer adds more"))
    reason = str(step.get("stop_reason") or "")
    if meta.get("method") == "opt-tree" and reason:
        # Point at the layer where growth stopped, with the rule's own words.
        notes.append(dict(x=len(ea) - 1, y=ea[-1], xref="x", yref="y", showarrow=True, arrowhead=2, ax=40, ay=-30,
                          text="stopped: " + html.escape(reason.replace("E(A) grew by", "gain")),
                          font=dict(size=11, color=style.ACCEPTED), xanchor="left"))
    max_depth = meta.get("max_depth")
    if isinstance(max_depth, (int, float)):
        shapes.append(dict(type="line", yref="paper", y0=0, y1=1, xref="x", x0=max_depth, x1=max_depth,
                           line=dict(color="#555", dash="dot")))
        notes.append(dict(yref="paper", y=1, xref="x", x=max_depth, xanchor="right", yanchor="top",
                          showarrow=False, text=f"max depth {max_depth:g}"))
    layout.update(shapes=shapes, annotations=notes, showlegend=True, legend=dict(orientation="h", y=-0.25, x=0),
                  xaxis=dict(title=dict(text="depth (layers drafted)"), dtick=1,
                             range=[-0.3, max(len(ea), (max_depth or 0) + 1) - 0.5]),
                  yaxis=dict(title=dict(text="E(A) = Σ p̂ of the best n nodes"), rangemode="tozero"))
    return go.Figure(dict(data=data, layout=layout), _validate=False)


def pearson(xs: list[float], ys: list[float]) -> float | None:
    n = len(xs)
    if n < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(xs, ys))
    sxx = sum((a - mx) ** 2 for a in xs)
    syy = sum((b - my) ** 2 for b in ys)
    if sxx <= 0 or syy <= 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def ea_points(trace: dict) -> dict:
    """The scatter's data for one run: label and (E(A), A) per step, A = the draft tokens the step
    committed (a step cut by EOS or the token limit counts only what it committed)."""
    meta = trace.get("meta", {})
    return {"label": f"{meta.get('method', '?')} · n={meta.get('nodes', '?')} · {meta.get('draft') or 'no draft'}",
            "ea": [s["expected_accept"] for s in trace.get("steps", [])],
            "a": [committed_draft(s) for s in trace.get("steps", [])]}


def ea_scatter(runs: list[dict]) -> tuple[go.Figure, float | None]:
    """E(A) vs actual accepted length over all steps of `runs` (from `ea_points`), with Pearson r."""
    xs = [v for r in runs for v in r["ea"]]
    ys = [v for r in runs for v in r["a"]]
    r = pearson(xs, ys)
    if r is not None:
        head = f"Pearson r = {r:.3f} over {len(xs)} steps"
    else:
        head = f"{len(xs)} steps (need ≥ 2 varied points for r)"
    fig = _base(460, f"Expected vs actual accepted length · {head}")
    for run in runs:
        fig.add_trace(go.Scatter(x=run["ea"], y=run["a"], mode="markers", name=run["label"], opacity=0.7,
                                 hovertemplate="E(A) %{x:.2f} → accepted %{y}<extra></extra>"))
    top = max(xs + ys + [1.0])
    fig.add_trace(go.Scatter(x=[0, top], y=[0, top], mode="lines", name="A = E(A)",
                             line=dict(color="#999", dash="dash"), hoverinfo="skip"))
    fig.update_layout(showlegend=True, xaxis=dict(title="E(A) = Σ p̂ (expected, before verifying)"),
                      yaxis=dict(title="A = draft tokens actually accepted"),
                      legend=dict(orientation="h", y=-0.2, x=0))
    return fig, r
