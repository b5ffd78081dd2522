"""Small charts about steps: accepted length per step, why a tree has its shape (the δ rule's
E(A)-by-depth curve, or the auto budget's objective by depth and size), and E(A) against the
accepted length over many steps (the paper's Figure 4: a density plus a binned calibration).
Pure functions of traces."""

from __future__ import annotations

import math

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from opttree.calibration import calibrate, ea_a_pairs
from opttree.trace import committed_draft, counted
from opttree.trees.length_control import controller_name

from . import style
from .drafters import drafter_name, has_draft_model, sampled_at, tree_temperature_text

BADGE_PX = 44           # the panel's label (Gradio's) covers this much of the figure's top-left corner
TITLE_CHARS = 64        # a 13-14 px title's line in a half-width panel
NOTE_PX = 14            # one line of an 11 px note
AXIS_TITLE_PX = 40      # an x axis's tick labels and title, below the plot


def top_title(text: str, note_lines: int = 0, size: int = 13) -> tuple[dict, int]:
    """A title wrapped to the panel's width, its top below the panel's label, and the top margin that
    holds it and `note_lines` lines of notes between it and the plot."""
    text, lines = style.wrap_lines(text, TITLE_CHARS)
    title = dict(text=text, x=0.01, xanchor="left", yref="container", y=1, yanchor="top", pad=dict(t=BADGE_PX),
                 font=dict(size=size))
    return title, BADGE_PX + lines * (size + 5) + note_lines * NOTE_PX + 8


def _base(height: int, title: str) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(template="plotly_white", height=height, margin=dict(l=50, r=10, t=40, b=40),
                      title=dict(text=title, x=0.01, font=dict(size=14)), showlegend=False)
    return fig


def accept_bars(trace: dict | None, current: int | None = None) -> go.Figure:
    """Accepted draft tokens per step (bars) with the bonus token stacked on top; current step outlined."""
    fig = _base(290, "Tokens committed per step")
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
    # The legend sits at the panel's foot, below the axis title, where no bar can reach it (two rows'
    # room: at a narrow width its entries wrap).
    fig.update_layout(barmode="stack", showlegend=True, margin=dict(b=40 + 2 * 20),
                      legend=dict(orientation="h", x=0, xanchor="left", yref="container", y=0, yanchor="bottom"),
                      xaxis=dict(title="step"), yaxis=dict(title="tokens", rangemode="tozero"))
    return fig


def why_shape(step: dict | None, meta: dict | None) -> go.Figure:
    """E(A) after each layer, with the δ rule: growth stops once a layer adds ≤ δ (or at max depth).

    Built from plain dicts without validation: it is redrawn on every scrubber step. A step sized by
    the auto budget shows its objective table instead (`why_auto`)."""
    meta = meta or {}
    # With the auto budget the objective table chose the tree (a length controller only capped its
    # depth, which the table's title then says); otherwise the controller's own chart.
    if step and isinstance(step.get("auto"), dict) and step["auto"].get("objective"):
        return why_auto(step, meta)
    if step and isinstance(step.get("length"), dict):
        if step["length"].get("control") == "predictor":
            return why_predictor(step, meta)
        return why_thompson(step, meta)
    reason = str((step or {}).get("stop_reason") or "") if meta.get("method") == "opt-tree" else ""
    # The rule's own words go in the band between the title and the plot (where no other label is);
    # a fused tree adds a retrieval note after " · ".
    stopped, lines = style.wrap_lines("stopped: " + style.plotly_text(reason.replace("E(A) grew by", "gain"))
                                      .replace(" · ", "<br>")) if reason else ("", 0)
    title, top = top_title("Why this shape: E(A) by depth", lines, size=14)
    layout = dict(template=style.TEMPLATE, height=256 + top, margin=dict(l=50, r=10, t=top, b=40), showlegend=False,
                  title=title)
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
        # At the right end, over the deep layers' small gains (the first layers' tall bars are at the left),
        # on a translucent ground where a bar still reaches it; under the line when the line runs near the
        # top, where the max-depth label sits.
        high = delta > 0.8 * max([delta, *ea])
        notes.append(dict(xref="paper", x=1, yref="y", y=delta, xanchor="right", yanchor="top" if high else "bottom",
                          showarrow=False, text=f"δ = {delta:g}: deepen only while a layer adds more",
                          bgcolor="rgba(255, 255, 255, 0.75)"))
    if stopped:     # and a ring on the layer where growth stopped
        notes.append(dict(xref="paper", x=0, yref="paper", y=1.0, xanchor="left", yanchor="bottom", showarrow=False,
                          align="left", text=stopped, font=dict(size=11, color=style.ACCEPTED)))
        data.append(dict(type="scatter", x=[len(ea) - 1], y=[ea[-1]], mode="markers", name="stopped here",
                         hoverinfo="skip", marker=dict(symbol="circle-open", size=16, color=style.ACCEPTED,
                                                       line=dict(width=2))))
    max_depth = meta.get("max_depth")
    if isinstance(max_depth, (int, float)):
        shapes.append(dict(type="line", yref="paper", y0=0, y1=1, xref="x", x0=max_depth, x1=max_depth,
                           line=dict(color=style.GUIDE, dash="dot")))
        notes.append(dict(yref="paper", y=1, xref="x", x=max_depth, xanchor="right", yanchor="top",
                          showarrow=False, text=f"max depth {max_depth:g}"))
    layout.update(shapes=shapes, annotations=notes, showlegend=True, legend=dict(orientation="h", y=-0.25, x=0),
                  xaxis=dict(title=dict(text="depth (layers drafted)"), dtick=1,
                             range=[-0.3, max(len(ea), (max_depth or 0) + 1) - 0.5]),
                  yaxis=dict(title=dict(text="E(A) = Σ p̂ of the best n nodes"), rangemode="tozero"))
    return go.Figure(dict(data=data, layout=layout), _validate=False)


def why_thompson(step: dict, meta: dict) -> go.Figure:
    """The Thompson controller's decision (trees/length_control.py): the θ it drew from its Beta
    posterior, what each layer would add under that θ (θ^L) and under the posterior mean, the price
    δ, and the depth it chose."""
    length = step["length"]
    a, b, theta, price, chosen = (length[k] for k in ("alpha", "beta", "theta", "price", "depth"))
    mean = a / (a + b)
    drafted = max(step.get("depth") or [0])
    depths = list(range(1, chart_depth(meta, chosen) + 1))
    colours = [style.ACCEPTED if d == chosen else ("#4c78a8" if d < chosen else "#c6dbef") for d in depths]
    data = [dict(type="bar", x=depths, y=[theta ** d for d in depths], name="θ̃^L: what layer L adds (sampled θ̃)",
                 marker=dict(color=colours), hovertemplate="layer %{x}: adds %{y:.3f} expected tokens<extra></extra>"),
            dict(type="scatter", x=depths, y=[mean ** d for d in depths], mode="lines+markers",
                 name="under the posterior mean", line=dict(color=style.GUIDE, dash="dot"),
                 hovertemplate="layer %{x}: %{y:.3f} at the mean θ<extra></extra>")]
    shapes = [dict(type="line", xref="paper", x0=0, x1=1, yref="y", y0=price, y1=price,
                   line=dict(color=style.ACCEPTED, dash="dash"))]
    notes = [dict(xref="paper", x=1, yref="y", y=price, xanchor="right", yanchor="bottom", showarrow=False,
                  text=f"δ = {price:g}: a layer must add more"),
             dict(x=chosen, y=theta ** chosen, xref="x", yref="y", showarrow=True, arrowhead=2, ax=30, ay=-30,
                  text=f"at most {counted(chosen, 'layer')} (drafted {drafted})",
                  font=dict(size=11, color=style.ACCEPTED), xanchor="left")]
    title = (f"Why this shape (Thompson sampling): θ̃ = {theta:.2f} drawn from Beta({a:g}, {b:g}) "
             f"(mean {mean:.2f}, {counted(round(a + b - 2), 'depth')} seen)")
    title, top = top_title(title)
    layout = dict(template=style.TEMPLATE, height=260 + top, margin=dict(l=50, r=10, t=top, b=40), showlegend=True,
                  title=title, shapes=shapes, annotations=notes,
                  legend=dict(orientation="h", y=-0.25, x=0),
                  xaxis=dict(title=dict(text="layer L"), dtick=1),
                  yaxis=dict(title=dict(text="expected tokens it adds"), range=[0, 1.05]))
    return go.Figure(dict(data=data, layout=layout), _validate=False)


CHART_MAX_DEPTH = 64     # a chart's widest depth axis (an imported trace may claim anything)
FEW_STEPS = 100          # fewer steps than this: E(A) vs A says its decile means are noisy


def chart_depth(meta: dict, chosen: int) -> int:
    """How many layers a length chart spans: the run's max depth when it is a sane number, at least the
    decision, at most CHART_MAX_DEPTH."""
    md = meta.get("max_depth")
    md = int(md) if isinstance(md, (int, float)) and not isinstance(md, bool) and 1 <= md <= CHART_MAX_DEPTH else 0
    return max(1, min(CHART_MAX_DEPTH, max(md, int(chosen))))


def length_note(step: dict) -> str:
    """A length controller's cap in words, for the auto table's title ('' when none): what it allowed,
    since a tighter cap (the tokens left, which the stop note names) may have cut the tree further."""
    length = step.get("length")
    if not isinstance(length, dict):
        return ""
    who = controller_name(length)
    depth = length["depth"]
    return f"; {who} allowed at most {counted(depth, 'layer')}"


def why_predictor(step: dict, meta: dict) -> go.Figure:
    """The learned predictor's decision: the accepted length it predicted from the target's last hidden
    state, the depth it allowed (one layer past it), the layers the tree reached and what the step accepted."""
    length = step["length"]
    predicted, chosen = length.get("predicted"), length["depth"]
    accepted = committed_draft(step)
    names = ["predicted accepted length Â", "layers allowed", "layers drafted", "accepted this step"]
    values = [predicted if predicted is not None else 0.0, chosen, max(step.get("depth") or [0]), accepted]
    data = [dict(type="bar", x=names, y=values, marker=dict(color=["#9ecae9", style.ACCEPTED, "#fdae6b", "#4c78a8"]),
                 text=[f"{v:.2f}" if isinstance(v, float) else str(v) for v in values], textposition="outside",
                 cliponaxis=False, hovertemplate="%{x}: %{y}<extra></extra>")]
    what = (f"Â = {predicted:.2f} from the target's last hidden state → at most {counted(chosen, 'layer')}"
            if predicted is not None else f"no hidden state yet → up to the maximum depth ({counted(chosen, 'layer')})")
    title, top = top_title(f"Why this shape (learned predictor): {what}")
    layout = dict(template=style.TEMPLATE, height=260 + top, margin=dict(l=50, r=10, t=top, b=40), showlegend=False,
                  title=title,
                  yaxis=dict(title=dict(text="tokens"), range=[0, max(values) * 1.2 + 0.3]))   # room for the labels
    return go.Figure(dict(data=data, layout=layout), _validate=False)


def why_auto(step: dict, meta: dict | None = None) -> go.Figure:
    """The auto budget's choice: expected tokens/s J(d, n) = (E(A) + 1) / (draft + verify) for every
    candidate depth d and size n the step weighed, the chosen point marked."""
    auto = step["auto"]
    rows = [r for r in auto["objective"] if isinstance(r, list)]
    width = max((len(r) for r in rows), default=0)
    z = [list(r) + [None] * (width - len(r)) for r in rows]
    draft = auto.get("draft_model_ms") or []
    d, n = auto.get("chosen_depth", 0), auto.get("chosen_nodes", 0)
    hover = [[f"depth {i + 1}, {j + 1} nodes" for j in range(width)] for i in range(len(rows))]
    data = [dict(type="heatmap", z=z, x=list(range(1, width + 1)), y=list(range(1, len(rows) + 1)), text=hover,
                 colorscale="Blues", colorbar=dict(title=dict(text="tokens/s"), thickness=12),
                 hovertemplate="%{text}: %{z:.1f} expected tokens/s<extra></extra>")]
    best = [max(r) if r else None for r in rows]
    notes, chosen_lines, stop_lines = [], 0, 0
    if d and n:
        j = z[d - 1][n - 1] if d <= len(z) and n <= width else None
        data.append(dict(type="scatter", x=[n], y=[d], mode="markers", name="chosen",
                         marker=dict(symbol="star", size=18, color=style.ACCEPTED, line=dict(color="#fff", width=1)),
                         hovertemplate=f"chosen: {n} nodes, depth {d}<extra></extra>"))
        drafted = f", drafting modelled at {draft[d - 1]:.1f} ms" if d <= len(draft) else ""
        text, chosen_lines = style.wrap_lines(f"chosen: {counted(n, 'node')} over {counted(d, 'layer')}, {j:.1f} "
                                              f"expected tokens/s (modelled from the cost curve){drafted}"
                                              f"{fused_note(auto)}" if isinstance(j, (int, float)) else "chosen")
        notes.append(dict(xref="paper", x=0, yref="paper", y=1.0, yanchor="bottom", xanchor="left", showarrow=False,
                          align="left", font=dict(size=11), text=text))
    reason = str(step.get("stop_reason") or "")
    if reason:      # below the x axis's title
        text, stop_lines = style.wrap_lines("stopped: " + style.plotly_text(reason))
        notes.append(dict(xref="paper", x=0, yref="paper", y=0, yanchor="top", yshift=-AXIS_TITLE_PX,
                          xanchor="left", align="left", showarrow=False, font=dict(size=11, color=style.ACCEPTED),
                          text=text))
    title, top = top_title("Why this shape (auto): expected tokens/s = (E(A) + 1) / (draft + verify time)"
                           + length_note(step), chosen_lines)
    bottom = AXIS_TITLE_PX + stop_lines * NOTE_PX + 6
    layout = dict(template=style.TEMPLATE, height=190 + top + bottom, margin=dict(l=50, r=10, t=top, b=bottom),
                  showlegend=False, title=title,
                  annotations=notes, xaxis=dict(title=dict(text="nodes verified (n)")),
                  yaxis=dict(title=dict(text="layers drafted (d)"), dtick=1, autorange="reversed"),
                  meta=dict(best_by_depth=best))
    return go.Figure(dict(data=data, layout=layout), _validate=False)


def fused_note(auto: dict) -> str:
    """Where retrieval fusion sized the verified tree itself (drafters/fusion.py): its nodes and rate."""
    n, rate = auto.get("fused_nodes"), auto.get("fused_tokens_per_s")
    if not n or not isinstance(rate, (int, float)):
        return ""
    return f"; fused with retrieval: {n} nodes, {rate:.1f} expected tokens/s"


def ea_points(trace: dict) -> dict:
    """One run's (E(A), A) for each step that drafted a tree (opttree.calibration.ea_a_pairs, which the bench
    reads too), with its method, drafter, how it drew its tokens (`sampled`: drafters.sampled_at, "" when
    greedy) and the tree temperature its p̂ were taken at (`tree_temperature`: drafters.tree_temperature_text,
    "" at 1); the calibration is per all four. The steps without a tree are counted in `skipped`."""
    meta = trace.get("meta", {})
    nodes = meta.get("nodes", "?")
    budget = "auto" if nodes == 0 else f"n={nodes}"
    steps = trace.get("steps", [])
    pairs = ea_a_pairs(steps)
    return {"label": f"{meta.get('method', '?')} · {budget} · {meta.get('draft') or 'no draft'}",
            "method": str(meta.get("method", "?")), "drafter": drafter_name(meta),
            "sampled": sampled_at(meta), "tree_temperature": tree_temperature_text(meta),
            "draft_model": has_draft_model(meta), "skipped": len(steps) - len(pairs),
            "ea": [e for e, _ in pairs], "a": [a for _, a in pairs]}


def group_of(run: dict) -> str:
    """A run's calibration group: its method and drafter ('opt-tree · EAGLE head'), then for a sampled run its
    sampling and for p̂ taken at a tree temperature other than 1 that temperature (`group_notes`: 'opt-tree ·
    EAGLE head · sampled at T = 0.7 · tree temperature 0.5'); older entries without a drafter use their
    method, or their label's first part."""
    return " · ".join([method_group(run), *group_notes(run)])


def method_group(run: dict) -> str:
    """A run's method and drafter ('opt-tree · EAGLE head'): its group before `group_notes`."""
    method = run.get("method") or run["label"].split(" · ")[0]
    return f"{method} · {run['drafter']}" if run.get("drafter") else method


def group_notes(run: dict) -> list[str]:
    """What sets a run's group apart beyond its method and drafter: its sampling and its tree temperature."""
    return [note for note in (run.get("sampled"), run.get("tree_temperature")) if note]


def by_method(runs: list[dict]) -> dict[str, tuple[list[float], list[float]]]:
    """Steps pooled per method, drafter and sampling (runs from `ea_points`): two drafters' p̂ are two
    different beliefs, so one method drafted by both is two groups; and the target accepts a node when it
    is its argmax (greedy) or with its probability of the path (sampled, at the run's temperature and
    filters), so one belief meets a different acceptance under each; and a tree temperature rescales q
    before p̂ is taken, so one drafter at two tree temperatures holds two beliefs."""
    out: dict[str, tuple[list[float], list[float]]] = {}
    for run in runs:
        ea, a = out.setdefault(group_of(run), ([], []))
        ea.extend(run["ea"])
        a.extend(run["a"])
    return out


def _r(x) -> str:
    return f"{x:.2f}" if isinstance(x, (int, float)) else "–"


def ea_density(runs: list[dict]) -> tuple[go.Figure, dict]:
    """Per method: a density heatmap of (E(A), A) over all steps of `runs`, the mean A per E(A) decile
    with its standard error, and the line A = E(A). Returns the figure and each method's calibration
    (opttree.calibration.calibrate: binned r, slope, per-step r)."""
    groups = {m: v for m, v in by_method(runs).items() if v[0]}
    stats = {m: calibrate(ea, a) for m, (ea, a) in groups.items()}
    cols = min(3, max(len(groups), 1))
    nrows = max(1, math.ceil(len(groups) / cols))
    # Titles in short lines: three panels share a row, and a phone's chart is 350 px wide.
    no_model = {group_of(r) for r in runs if r.get("draft_model") is False}
    parts = {group_of(r): (method_group(r), group_notes(r)) for r in runs}    # each note on a line of its own
    titles = [f"{style.plotly_text(parts[m][0])}: binned r "
              f"{_r(st['binned_r'])}, slope {_r(st['slope'])}<br>per-step r {_r(st['per_step_r'])} · "
              f"{st['steps']} steps"
              + "".join(f"<br>{style.plotly_text(n)}" for n in parts[m][1])
              + ("<br>no draft model: p̂ only ranks candidates, E(A) is no belief" if m in no_model else "")
              for m, st in stats.items()]
    fig = make_subplots(rows=nrows, cols=cols, subplot_titles=titles or None, horizontal_spacing=0.08,
                        vertical_spacing=0.2)
    for i, (m, (ea, a)) in enumerate(groups.items()):
        r, c = i // cols + 1, i % cols + 1
        top = max(ea + a + [1.0])
        fig.add_trace(go.Histogram2d(x=ea, y=a, ybins=dict(start=-0.5, end=max(a) + 0.5, size=1), nbinsx=20,
                                     colorscale="Blues", showscale=False, name=f"{m} steps",
                                     hovertemplate="E(A) %{x}, A = %{y}: %{z} steps<extra></extra>"), row=r, col=c)
        bins = stats[m]["bins"]
        fig.add_trace(go.Scatter(x=[b["ea"] for b in bins], y=[b["a"] for b in bins], mode="lines+markers",
                                 name=f"{m}: mean A per E(A) decile", marker=dict(symbol="diamond", color="#000"),
                                 line=dict(color="#000"), error_y=dict(type="data", array=[b["sem"] for b in bins]),
                                 hovertemplate="E(A) ≈ %{x:.2f}: mean A %{y:.2f}<extra></extra>"), row=r, col=c)
        fig.add_trace(go.Scatter(x=[0, top], y=[0, top], mode="lines", name="A = E(A)", hoverinfo="skip",
                                 line=dict(color="#999", dash="dash"), showlegend=i == 0), row=r, col=c)
        fig.update_xaxes(title_text="E(A) = Σ p̂ (expected)", row=r, col=c)
        fig.update_yaxes(title_text="A = accepted", row=r, col=c)
    n = sum(len(v[0]) for v in groups.values())
    skipped = sum(r.get("skipped", 0) for r in runs)
    left = f"; {counted(skipped, 'step')} without a tree left out" if skipped else ""
    caution = (f"<br><sup>only {n} steps: below {FEW_STEPS} the decile means and the slope are<br>noisy; "
               "run more to read the calibration</sup>") if 0 < n < FEW_STEPS else ""
    title = (f"Expected vs actual accepted length<br><sup>{n} steps that drafted a tree, per method and drafter: "
             f"their density and<br>the mean A per E(A) decile{left}</sup>{caution}")
    top = (120 + BADGE_PX + (24 if caution else 0) + (14 if no_model else 0)
           + 14 * max((len(notes) for _, notes in parts.values()), default=0))
    fig.update_layout(template="plotly_white", height=360 * nrows + 30, margin=dict(l=50, r=10, t=top, b=40),
                      showlegend=False, title=dict(text=title, x=0.01, font=dict(size=14), y=1, yref="container",
                                                   yanchor="top", pad=dict(t=BADGE_PX)))  # below the chip
    fig.update_annotations(font_size=11)
    if not groups:
        fig.add_annotation(text="No steps yet", showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5)
    return fig, stats


def speed_note(trace: dict | None, index: int | None) -> str:
    """One line under an auto-budget step's metrics: its "expected tokens/s" is the auto budget's model,
    the run's tokens/s are measured, so the two numbers differ and neither is wrong."""
    steps = (trace or {}).get("steps", [])
    if index is None or not 0 <= index < len(steps) or not isinstance(steps[index].get("auto"), dict):
        return ""
    return ("\n\n*Expected tokens/s* is what the auto budget modelled from the cost curve, (E(A) + 1) over the "
            "modelled draft and verify time, when it chose the tree; the run's tokens/s are measured as it ran, "
            "on a machine shared with other work.")
