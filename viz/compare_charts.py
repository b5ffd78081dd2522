"""Compare's two lessons as two charts, from the same runs (a comparison's summary: plain data, one
row per method with its shape, node budget, mean τ and speedup over prompts and their standard errors):

- τ against the node budget: which shape accepts more at the same budget (the paper's claim);
- speedup over AR against the node budget: what this machine rewards, each shape's auto budget marked
  by a star at the mean size it chose.

Each shape has its own colour, marker and dash (style.series_mark), so none is told by colour alone. A
static shape that holds fewer nodes than the budget (EAGLE-25 at n = 60) is drawn with an open marker and
its hover says how many it drafts. Pure functions of the summary.
"""

from __future__ import annotations

import plotly.graph_objects as go

from viz import style
from viz.cost_chart import cost_figure

COLOURS = style.TEMPLATE["layout"]["colorway"]
BUDGET_AXIS = "node budget n (draft tokens verified per step, log scale)"


def _pm(value, se, digits: int = 2, unit: str = "") -> str:
    if not isinstance(value, (int, float)):
        return "—"
    spread = f" ± {se:.{digits}f}" if isinstance(se, (int, float)) else ""
    return f"{value:.{digits}f}{unit}{spread}"


def shapes(summary: dict | None) -> dict[str, list[dict]]:
    """The tree rows by shape, in the order they ran (AR left out)."""
    out: dict[str, list[dict]] = {}
    for row in (summary or {}).get("rows", []):
        if row["shape"] != "ar":
            out.setdefault(row["shape"], []).append(row)
    return out


def _hover(row: dict, key: str, what: str) -> str:
    budget = "auto" if row["budget"] == 0 else f"n = {row['budget']}"
    n = row.get("prompts") or 0
    over = "(one prompt: no standard error)" if n == 1 else f"(mean ± SE over {n} prompts)"
    text = f"{row['shape']} · {budget}<br>{what} {_pm(row[key], row.get(key + '_se'))} {over}"
    if row.get("capacity"):
        text += f"<br>the shape holds {row['capacity']} nodes: it drafts {row['capacity']} of {row['budget']}"
    if isinstance(row.get("mean_nodes"), (int, float)):
        text += f"<br>{row['mean_nodes']:.1f} nodes per step on average"
    return text + "<extra></extra>"


def _error(rows: list[dict], key: str) -> dict:
    return dict(type="data", array=[r.get(key + "_se") or 0 for r in rows], visible=True, thickness=1.2, width=4)


def _traces(summary: dict, key: str, what: str) -> list[dict]:
    data, labelled = [], False
    # The auto stars of shapes that chose the same size coincide: they nest, one size per starred shape.
    starred = sum(any(r["budget"] == 0 for r in rows) for rows in shapes(summary).values())
    star_sizes = iter(style.nested_star_sizes(starred, smallest=15))
    for i, (shape, rows) in enumerate(shapes(summary).items()):
        colour, (symbol, dash) = COLOURS[i % len(COLOURS)], style.series_mark(i)
        fixed = sorted((r for r in rows if r["budget"] and isinstance(r.get(key), (int, float))),
                       key=lambda r: r["budget"])
        auto = [r for r in rows if r["budget"] == 0 and isinstance(r.get(key), (int, float))]
        if fixed:
            data.append(dict(type="scatter", mode="lines+markers", name=shape, legendgroup=shape,
                             x=[r["budget"] for r in fixed], y=[r[key] for r in fixed], error_y=_error(fixed, key),
                             line=dict(color=colour, width=2.5, dash=dash),
                             marker=dict(color=colour, size=9,
                                         symbol=[f"{symbol}-open" if r.get("capacity") else symbol for r in fixed]),
                             hovertemplate=[_hover(r, key, what) for r in fixed]))
        if auto:
            # The auto stars sit close together (every shape's auto budget picks a few nodes): one says
            # "auto", the subtitle's ★ and each star's hover say the rest, and no labels print on each other.
            data.append(dict(type="scatter", mode="markers+text", name=f"{shape} · auto",
                             legendgroup=shape, showlegend=not fixed,
                             x=[max(r.get("mean_nodes") or 1, 1) for r in auto], y=[r[key] for r in auto],
                             error_y=_error(auto, key),
                             text=None if labelled else ["auto"] + [""] * (len(auto) - 1),
                             textposition="top center", textfont=dict(size=10, color=style.GUIDE),
                             marker=dict(color=colour, size=next(star_sizes), symbol="star",
                                         line=dict(color=style.GUIDE, width=1)),
                             hovertemplate=[_hover(r, key, what) for r in auto]))
            labelled = True
    return data


def _layout(summary: dict | None, title: str, ytitle: str, empty: str) -> dict:
    rows = [r for rs in shapes(summary).values() for r in rs]
    budgets = sorted({r["budget"] for r in rows if r["budget"]})
    n = (summary or {}).get("prompts") or 0
    # The ticked budgets, or (the auto stars alone, at a few nodes) the powers of two: ticks where stars sit.
    ticks = [1, 2, *budgets] if budgets else [2 ** k for k in range(10)]
    over = "over 1 prompt (no standard error)" if n == 1 else f"mean ± one standard error over {n} prompts"
    sub = f"{over} · ★ auto budget, at the mean size it chose" if rows else ""
    if any(r.get("capacity") for r in rows):
        sub += "<br>open marker: the shape holds fewer nodes than n"
    layout = dict(template=style.TEMPLATE, height=380, margin=dict(l=55, r=10, t=78, b=48),
                  title=dict(text=f"{title}<br><sup>{sub}</sup>", x=0.01, font=dict(size=14)),
                  legend=dict(orientation="h", y=-0.22, x=0),
                  xaxis=dict(type="log", title=dict(text=BUDGET_AXIS), tickvals=ticks, ticktext=list(map(str, ticks))),
                  yaxis=dict(title=dict(text=ytitle), rangemode="tozero"))
    if not rows:
        layout["annotations"] = [dict(text=empty, showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5)]
    return layout


def tau_budget_figure(summary: dict | None) -> go.Figure:
    """Which shape accepts more at the same budget: mean τ (tokens per step) ± SE against the node budget."""
    layout = _layout(summary, "Which shape accepts more at the same budget", "τ (tokens per step, bonus included)",
                     "Press Compare:<br>τ at each node budget appears here")   # two short lines: a phone is narrow
    return go.Figure(dict(data=_traces(summary, "tau", "τ") if summary else [], layout=layout), _validate=False)


def speed_budget_figure(summary: dict | None) -> go.Figure:
    """What this machine rewards: mean speedup over AR ± SE against the node budget, from the same runs."""
    layout = _layout(summary, "What this machine rewards: speed against the budget",
                     "speedup over AR (tokens/s ratio)", "Press Compare:<br>the speed at each budget appears here")
    if shapes(summary):
        layout["shapes"] = [dict(type="line", xref="paper", x0=0, x1=1, yref="y", y0=1, y1=1,
                                 line=dict(color=style.GUIDE, dash="dot", width=1))]
        layout["annotations"] = [dict(text="AR", xref="paper", x=1, y=1, yref="y", showarrow=False,
                                      xanchor="right", yanchor="bottom", font=dict(size=10))]
    return go.Figure(dict(data=_traces(summary, "speedup", "speedup") if summary else [], layout=layout),
                     _validate=False)


def summary_cost(summary: dict | None) -> go.Figure:
    """The cost curve the comparison ran with, each auto-budget row's mean verified tokens marked on it."""
    marks = {f"{r['shape']} · auto": (r.get("mean_nodes") or 0) + 1 for r in (summary or {}).get("rows", [])
             if r["budget"] == 0 and r["shape"] != "ar"}
    return cost_figure((summary or {}).get("cost"), marks)
