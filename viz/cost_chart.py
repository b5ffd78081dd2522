"""What a forward costs here: the measured cost curve a trace's meta records (`meta["cost"]`, the
compact form of opttree/engine/cost.py) as a small chart, and the one sentence that explains a
method slower than AR from it. Pure functions of trace data."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from opttree.trace import draft_weights
from opttree.trees.auto_size import from_numbers

from . import style


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def usable(cost) -> bool:
    """A compact cost curve with matching, non-empty lists of finite numbers, its times positive
    (traces are imported untrusted)."""
    if not isinstance(cost, dict):
        return False
    tokens, ms = cost.get("tokens"), cost.get("verify_ms")
    return (isinstance(tokens, list) and isinstance(ms, list) and 0 < len(tokens) == len(ms)
            and all(_number(x) for x in tokens + ms) and all(x > 0 for x in ms))


def has_longer(cost: dict) -> bool:
    """The curve was also measured after a longer KV prefix (`longer`), as the auto budget reads it."""
    longer = cost.get("longer")
    near, far = cost.get("prefix_tokens"), usable(longer) and longer.get("prefix_tokens")
    return (usable(cost) and isinstance(near, int) and isinstance(far, int) and not isinstance(far, bool)
            and 0 <= near < far)


def context_read(cost: dict, context) -> float | None:
    """`context` (a KV prefix in tokens) where the curve can be read after it: a finite, positive number
    and a curve with `has_longer`; else None (the curve is read as measured, after its short prefix)."""
    return context if _number(context) and context > 0 and has_longer(cost) else None


def _verify_only(cost: dict) -> dict:
    """The verify numbers alone (what `usable` and `has_longer` checked), for `from_numbers`."""
    out = {"tokens": cost["tokens"], "verify_ms": cost["verify_ms"], "prefix_tokens": cost.get("prefix_tokens")}
    return {**out, "longer": _verify_only(cost["longer"]) if has_longer(cost) else None}


def verify_ratio(cost: dict, tokens: float, prefix: float | None = None) -> float:
    """A forward over `tokens` tokens as a multiple of a one-token forward, from the measured curve made
    non-decreasing as the cost model makes it (`auto_size.from_numbers`); after `prefix` tokens of KV
    prefix where `context_read` allows, each point linear in the prefix between the two measured ones
    as the auto budget prices a step (`StepCost.at_prefix`)."""
    at = from_numbers(_verify_only(cost))
    prefix = context_read(cost, prefix)
    if prefix is not None:
        at = at.at_prefix(round(prefix))
    return at.verify(tokens) / at.verify(1)


def mark_groups(marks: dict[str, float] | None, close: float = 1.15) -> list[tuple[float, list[str]]]:
    """Marks sorted by position, those within a factor `close` of the group's first merged into one
    label (methods of nearly the same size share one line)."""
    groups: list[tuple[float, list[str]]] = []
    for label, at in sorted(((k, v) for k, v in (marks or {}).items()
                             if isinstance(v, (int, float)) and v > 0), key=lambda kv: kv[1]):
        if groups and at <= groups[-1][0] * close:
            groups[-1][1].append(label)
        else:
            groups.append((at, [label]))
    return groups


LEGEND_PX = 110     # the bottom margin: tick labels and the axis title (40 px), then three legend rows


def cost_figure(cost: dict | None, marks: dict[str, float] | None = None) -> go.Figure:
    """Target forward time vs tokens and one draft layer vs width (ms); `marks` maps a label to the
    mean tokens a method verified per step (drawn as dotted lines)."""
    # The legend's rows (three in a half-width panel) sit at the figure's foot, under the axis title.
    layout = dict(template=style.TEMPLATE, height=380, margin=dict(l=50, r=10, t=46, b=LEGEND_PX),
                  title=dict(text="What a forward costs here", x=0.01, font=dict(size=14)),
                  legend=dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0))
    if not usable(cost):
        layout["annotations"] = [dict(text="Run Compare (or Measure) to see this machine's costs", showarrow=False,
                                      xref="paper", yref="paper", x=0.5, y=0.5)]
        return go.Figure(dict(data=[], layout=layout), _validate=False)
    tokens, ms = cost["tokens"], cost["verify_ms"]
    rel = [m / ms[0] for m in ms]
    after = f" after {cost['prefix_tokens']} tokens" if cost.get("prefix_tokens") else ""
    data = [dict(type="scatter", x=tokens, y=ms, customdata=rel, mode="lines+markers",
                 name=f"target forward (verify){after}", line=dict(color="#4c78a8", width=3),
                 hovertemplate="%{x} tokens: %{y:.1f} ms (%{customdata:.2f}× one token)<extra></extra>")]
    longer = cost.get("longer")
    if usable(longer) and longer.get("prefix_tokens"):   # a long prompt makes each extra token dearer
        far = longer["verify_ms"]
        data.append(dict(type="scatter", x=longer["tokens"], y=far, customdata=[m / far[0] for m in far],
                         mode="lines+markers", name=f"… after {longer['prefix_tokens']} tokens",
                         line=dict(color="#4c78a8", width=2, dash="dash"),
                         hovertemplate=f"after {longer['prefix_tokens']} prefix tokens, %{{x}} tokens: %{{y:.1f}} ms "
                                       "(%{customdata:.2f}× one token)<extra></extra>"))
    widths, layer = cost.get("widths") or [], cost.get("layer_ms") or []
    if isinstance(widths, list) and isinstance(layer, list) and len(widths) == len(layer) and widths:
        data.append(dict(type="scatter", x=widths, y=layer, mode="lines+markers",
                         name=f"one draft layer{draft_weights(cost)}",
                         line=dict(color=style.BONUS, width=2),
                         hovertemplate="%{x} nodes: %{y:.1f} ms per draft layer<extra></extra>"))
    shapes, notes = [], []
    for i, (at, labels) in enumerate(mark_groups(marks)):
        shapes.append(dict(type="line", xref="x", x0=at, x1=at, yref="paper", y0=0, y1=1,
                           line=dict(color=style.GUIDE, dash="dot", width=1)))
        # On a log axis a shape takes data values but an annotation takes log10 of them. Labels are
        # horizontal and staggered in height, so marks close together never print on each other.
        notes.append(dict(xref="x", x=math.log10(at), yref="paper", y=1 - 0.11 * (i % 4), showarrow=False,
                          xanchor="left", yanchor="top", font=dict(size=10), bgcolor="rgba(255,255,255,0.8)",
                          text=f"{', '.join(labels)}: {verify_ratio(cost, at):.1f}×"))
    where = ", ".join(str(cost[k]) for k in ("device", "isa", "dtype") if cost.get(k))
    threads = f", {cost['threads']} threads" if cost.get("threads") else ""
    load = cost.get("load_avg")       # a curve measured on a busy machine prices trees too high
    busy = f" · load average {load[0]:.1f} at the time" if load else ""
    # The subtitle's small print holds about 95 characters a line in a half-width panel.
    sub, lines = style.wrap_lines(f"{where}{threads} · measured {cost.get('measured_utc', '')}{busy}", 95)
    sub = sub.replace("<br>", "</sup><br><sup>")
    layout["margin"] = {**layout["margin"], "t": 46 + 12 * (lines - 1)}
    layout["height"] += 12 * (lines - 1)
    layout.update(shapes=shapes, annotations=notes,
                  title=dict(text=f"What a forward costs here<br><sup>{sub}</sup>", x=0.01, font=dict(size=14)),
                  xaxis=dict(type="log", tickvals=sorted(set(tokens) | set(widths if isinstance(widths, list) else [])),
                             title=dict(text="tokens per forward (tree nodes + root) / draft width")),
                  yaxis=dict(title=dict(text="ms"), rangemode="tozero"))
    return go.Figure(dict(data=data, layout=layout), _validate=False)
