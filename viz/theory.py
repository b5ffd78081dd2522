"""The Theory tab's views: p and q at one verified row (or toy ones), and every multi-draft scheme's
acceptance rate for k = 1..8 drafts (Hu et al., "Towards Optimal Multi-draft Speculative Decoding",
ICLR 2025), with a generated reading of the chart. Pure functions of a trace or of numbers: no model.

A trace keeps, for each recorded row, the union of the target's and the draft's top 8 tokens with
both probabilities (`topk_rows`, opttree/trace.py), not the whole vocabulary. The rates here are
computed over those tokens plus one "rest" bucket that stands for every other token.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from opttree.theory.distributions import toy_distributions, wor_beats_iid_example
from opttree.theory.rows import row_distributions, row_scheme_table
from opttree.theory.table import SCHEMES, scheme_table
from opttree.trace import TOPK, bonus_shown, node_text, row_texts

from . import style
from .drafters import sampled_at

KS = tuple(range(1, 9))
SHOWN = 16                 # bars per distribution chart (the rest are summed into one bar)
REST_LABEL = "(rest)"
BOUNDS = ("optimal_iid", "optimal_wor")
SCHEME_LABELS = {
    "optimal_iid": "best possible, drafts i.i.d. from q (bound)",
    "optimal_wor": "best possible, drafts without replacement (bound)",
    "greedy_draft": "greedy drafts: top k−1 of q fixed + 1 sampled (its optimum)",
    "rrs_iid": "recursive rejection sampling, i.i.d. drafts",
    "rrs_wor": "recursive rejection sampling, without replacement",
    "kseq": "K-SEQ (SpecTr), i.i.d. drafts",
    "topk_set": "top k of q as a fixed set + target-sample rule (this tool)",
}
TOY_DEFAULTS = dict(vocab=16, peak_p=3.0, peak_q=3.0, mismatch=0.6, seed=0)
TOY_MAX_VOCAB, TOY_MAX_PEAK, TOY_MAX_MISMATCH = 64, 6.0, 3.0   # the sliders' ranges


@dataclass
class Dists:
    """p and q over the same tokens; `rest` says the last token is the bucket for all others."""

    labels: list[str]
    p: np.ndarray
    q: np.ndarray
    rest: bool = False
    rest_p: float = 0.0
    rest_q: float = 0.0


def _md(text, token: bool = True) -> str:
    """Text for Markdown with no HTML and no Markdown syntax; a token's whitespace drawn visibly."""
    return style.md_text(style.visible(str(text)) if token else text)


def _unique(labels: list[str]) -> list[str]:
    """Plotly merges equal category labels: number repeats (two tokens can look the same)."""
    seen: dict[str, int] = {}
    out = []
    for lab in labels:
        seen[lab] = seen.get(lab, 0) + 1
        out.append(lab if seen[lab] == 1 else f"{lab} ({seen[lab]})")
    return out


def row_dists(row: dict) -> Dists:
    """A recorded row as p and q over its tokens plus the rest bucket (1 − the recorded mass)."""
    p, q, rest_p, rest_q = row_distributions(row)
    labels = [style.hover_safe(t) for t in row_texts(row)]
    return Dists(_unique(labels + [REST_LABEL]), p, q, True, rest_p, rest_q)


def toy_dists(vocab, peak_p, peak_q, mismatch, seed) -> Dists:
    """The toy sliders' p and q (`opttree.theory.distributions.toy_distributions`, softmax of a shared score)."""
    p, q = toy_distributions("peaked", int(vocab), int(seed), scale=float(peak_p), draft_scale=float(peak_q),
                             noise=float(mismatch))
    return Dists([f"tok {i}" for i in range(len(p))], p, q)


def preset_dists() -> Dists:
    p, q = wor_beats_iid_example()
    return Dists([f"tok {i}" for i in range(len(p))], p, q)


def rates(d: Dists) -> dict[str, list[float]]:
    return scheme_table(d.p, d.q, KS)


# ------------------------------------------------------------------------------------------ figures

def _layout(title: str, height: int) -> dict:
    return dict(template=style.TEMPLATE, height=height, margin=dict(l=55, r=10, t=45, b=40),
                title=dict(text=title, x=0.01, font=dict(size=14)), showlegend=True)


def dists_figure(d: Dists | None, title: str = "", children: dict[str, str] | None = None) -> go.Figure:
    """Grouped bars of p and q over the most likely tokens (by p, then q); the row's rest bucket last.

    `children` maps a label to a note: those tokens are this tree's children at the node, marked
    with a triangle above their bars."""
    layout = _layout(title or "Target p and draft q", 330)
    layout.update(barmode="group", legend=dict(orientation="h", y=1.12, x=0.3),
                  yaxis=dict(title=dict(text="probability"), rangemode="tozero"),
                  xaxis=dict(title=dict(text="next token"), type="category"))
    if d is None:
        return go.Figure(dict(data=[], layout=layout), _validate=False)
    idx = [i for i in range(len(d.labels)) if not (d.rest and i == len(d.labels) - 1)]
    idx.sort(key=lambda i: (-d.p[i], -d.q[i]))
    shown, hidden = idx[:SHOWN], idx[SHOWN:]
    labels = [d.labels[i] for i in shown]
    p = [float(d.p[i]) for i in shown]
    q = [float(d.q[i]) for i in shown]
    extra_p = sum(float(d.p[i]) for i in hidden) + (float(d.p[-1]) if d.rest else 0.0)
    extra_q = sum(float(d.q[i]) for i in hidden) + (float(d.q[-1]) if d.rest else 0.0)
    if hidden or d.rest:
        labels.append(REST_LABEL if not hidden else f"(other {len(hidden) + d.rest} …)")
        p.append(extra_p)
        q.append(extra_q)
    data = [dict(type="bar", x=labels, y=p, name="target p", marker=dict(color=style.TARGET_P),
                 hovertemplate="%{x}: p = %{y:.3f}<extra></extra>"),
            dict(type="bar", x=labels, y=q, name="draft q", marker=dict(color=style.DRAFT_Q),
                 hovertemplate="%{x}: q = %{y:.3f}<extra></extra>")]
    marks = [(lab, note) for lab, note in (children or {}).items() if lab in labels]
    if marks:
        top = {lab: max(pp, qq) for lab, pp, qq in zip(labels, p, q)}
        data.append(dict(type="scatter", mode="markers", name="child in this tree",
                         x=[lab for lab, _ in marks], y=[top[lab] + 0.03 for lab, _ in marks],
                         text=[note for _, note in marks], hovertemplate="%{x}: %{text}<extra></extra>",
                         marker=dict(symbol="triangle-down", size=11, color=style.THIS_TREE,
                                     line=dict(width=1, color="#000"))))
    return go.Figure(dict(data=data, layout=layout), _validate=False)


def rates_figure(table: dict | None, title: str = "", tree_mark: tuple[int, float, str] | None = None) -> go.Figure:
    """Every scheme's acceptance rate against k, each with its own colour and marker; the two optima dashed
    (bounds no verifier can beat for drafts sampled that way); `tree_mark` = (k, rate, note) puts this tree's
    own node on it."""
    layout = _layout(title or "Acceptance rate with k drafts", 420)
    layout.update(legend=dict(orientation="h", y=-0.2, x=0, font=dict(size=11)),
                  xaxis=dict(title=dict(text="k = number of drafts at the node"), dtick=1, range=[0.7, 8.3]),
                  yaxis=dict(title=dict(text="chance a draft is accepted"), range=[0, 1.04]))
    if table is None:
        return go.Figure(dict(data=[], layout=layout), _validate=False)
    data = []
    for i, name in enumerate(SCHEMES):
        bound = name in BOUNDS
        data.append(dict(type="scatter", mode="lines+markers", name=SCHEME_LABELS[name], x=list(table["k"]),
                         y=[float(v) for v in table[name]],
                         line=dict(color=style.SCHEME_COLORS[name], width=3 if bound else 2,
                                   dash="dash" if bound else "solid"),
                         marker=dict(size=8, symbol=style.series_mark(i)[0]),
                         hovertemplate=f"{SCHEME_LABELS[name]}<br>k = %{{x}}: %{{y:.3f}}<extra></extra>"))
    if tree_mark is not None:
        k, value, note = tree_mark
        data.append(dict(type="scatter", mode="markers", name="this tree at this node", x=[k], y=[value],
                         text=[note], hovertemplate="%{text}<extra></extra>",
                         marker=dict(symbol="star", size=16, color=style.THIS_TREE, line=dict(width=1, color="#000"))))
    return go.Figure(dict(data=data, layout=layout), _validate=False)


# ------------------------------------------------------------------------------------------ reading

BUCKET_READ = 0.1      # above this much p or q in a trace row's rest bucket, the i.i.d./WOR gap is not read


def reading(table: dict, k: int, bucket: float = 0.0) -> str:
    """Markdown reading of the chart at k drafts; `bucket`: the larger of p and q in the row's rest bucket
    (0 for toy distributions, which hold every token)."""
    i = list(table["k"]).index(k)
    v = {name: table[name][i] for name in SCHEMES}
    s = "" if k == 1 else "s"
    merged = bucket > BUCKET_READ       # then the sampled figures are rough and the optima only upper bounds
    text = (f"With **{k} draft{s}** from q, the best any verifier could do is {'at most ' if merged else ''}"
            f"**{v['optimal_iid']:.2f}** "
            f"with i.i.d. drafts and **{v['optimal_wor']:.2f}** drafting without replacement; recursive "
            f"rejection sampling reaches {v['rrs_iid']:.2f} ({v['rrs_wor']:.2f} without replacement) and "
            f"K-SEQ {v['kseq']:.2f}")
    if k > 1:
        text += f"; greedy drafts (the top {k - 1} of q fixed, one sampled) allow {v['greedy_draft']:.2f}"
    text += (f". The draft's top {k} as a fixed set, verified by the target-sample rule this tool uses, "
             f"gets p(set) = **{v['topk_set']:.2f}**.")
    if merged:
        text += (f" Every figure but p(set) is rough here: the {bucket:.2f} of the mass outside the recorded "
                 "tokens counts as one token, and the two optima only bound the real ones from above.")
    gaps = [(table["optimal_wor"][j] - table["optimal_iid"][j], table["k"][j]) for j in range(len(table["k"]))]
    gap, at = max(gaps)
    if gap > 0.05 and merged:
        # The bucket counts as one token: one draft without replacement covers all of its mass, and i.i.d.
        # draws "repeat" it where real tokens would differ; the real distributions may have no such gap.
        text += (f" Without replacement reads {gap:+.2f} at k = {at} here, but the bucket of all other tokens "
                 f"holds {bucket:.2f} of the mass and counts as one token (one draft covers all of it, i.i.d. "
                 "draws repeat it), so that gap is not read as a gain of the real distributions.")
    elif gap > 0.05:
        text += (f" Drafting without replacement clearly helps here (+{gap:.2f} at k = {at}): "
                 "i.i.d. drafts waste slots on repeats of q's favourite tokens.")
    return text


# ------------------------------------------------------------------------------------------ a trace's rows

def _rows(step: dict) -> dict[int, dict]:
    return {r["node"]: r for r in step.get("topk_rows") or []}


def node_label(step: dict, node: int) -> str:
    if node == -1:
        return "root (the last committed token)"
    tag = ", accepted" if node in step.get("accepted", []) else ""
    return f"node {node}: {style.visible(node_text(step, node))} (depth {step['depth'][node]}{tag})"


def node_choices(trace: dict | None, index: int) -> list[tuple[str, str]]:
    """(label, "step:node") for each recorded row of a step: the root, then nodes by index."""
    steps = (trace or {}).get("steps", [])
    if not steps:
        return []
    step = steps[index]
    return [(node_label(step, n), f"{index}:{n}") for n in sorted(_rows(step))]


def parse_choice(value) -> tuple[int, int] | None:
    try:
        a, b = str(value).split(":")
        return int(a), int(b)
    except (ValueError, TypeError):
        return None


def _target_pick(step: dict, node: int) -> tuple[str, bool] | None:
    """The target's own token at this node's row and whether it was a child, if the walk got there."""
    path = [-1, *step.get("accepted", [])]
    if node not in path:
        return None
    i = path.index(node)
    if i + 1 < len(path):
        return node_text(step, path[i + 1]), True
    return bonus_shown(step), False


def _children(step: dict, node: int) -> list[int]:
    return [j for j, par in enumerate(step["parents"]) if par == node]


def children_text(n: int, bold: bool = False) -> str:
    """'1 child', '3 children' (the count in bold for the reading)."""
    count = f"**{n}**" if bold else str(n)
    return f"{count} {'child' if n == 1 else 'children'}"


def step_view(trace: dict | None, index: int, node: int):
    """(p/q figure, rates figure, reading) for one recorded row of the trace."""
    steps = (trace or {}).get("steps", [])
    if not steps:
        return empty_view("No Explore run yet: run a prompt in Explore, then press **Use the Explore step** "
                          "(or try the toy distributions).")
    step = steps[index]
    rows = _rows(step)
    if not rows:
        return empty_view(f"Step {index + 1} has no recorded distributions: this trace comes from an "
                          "autoregressive run or from a version that did not record the target's side. "
                          "Try the toy distributions.")
    if node not in rows:
        node = min(rows)
    d = row_dists(rows[node])
    table = row_scheme_table(rows[node], KS)
    where = f"Step {index + 1}, {node_label(step, node)}"
    kids = _children(step, node)
    p_target = step.get("p_target")
    children = {style.hover_safe(node_text(step, j)): f"child node {j}: q = {step['q'][j]:.3f}"
                + (f", target p = {p_target[j]:.3f}" if p_target else "") for j in kids}
    mass = sum(p_target[j] for j in kids) if p_target and kids else None
    k = len(kids) if 1 <= len(kids) <= KS[-1] else 4
    mark = (len(kids), mass, f"this tree: {children_text(len(kids))} holding target p = {mass:.3f}") \
        if mass is not None and 1 <= len(kids) <= KS[-1] else None
    meta = (trace or {}).get("meta", {})
    texts = row_texts(rows[node])
    top = int(np.argmax(d.p[: len(texts)]))
    qtop = int(np.argmax(d.q[: len(texts)]))
    lines = [f"**{_md(where, token=False)}.** The target put **{d.p[top]:.2f}** on {_md(texts[top])}; the "
             f"draft's favourite was {_md(texts[qtop])} (q {d.q[qtop]:.2f}, target p {d.p[qtop]:.2f})."]
    pick = _target_pick(step, node)
    if pick is not None:
        tok, hit = pick
        lines.append(f"The target's own token here was **{_md(tok)}**: "
                     + ("a child in the tree, so it was accepted." if hit else
                        "not among the children, so it became the bonus token and the step ended."))
    elif node != -1:
        lines.append("This node is off the accepted path: the verifier never reached it.")
    if mass is not None:
        them, which = ("it", "that one") if len(kids) == 1 else ("them", "one of them")
        chance = (f"the chance its own token is {which}." if sampled_at(meta) else
                  f"the chance a sampled run's token would be {which}. This run is greedy: the target takes its "
                  "most likely token.")
        lines.append(f"This tree gave the node {children_text(len(kids), bold=True)}; the target's mass on {them} is "
                     f"**{mass:.2f}** (the star on the chart): {chance}")
    elif kids:
        lines.append(f"This tree gave the node {children_text(len(kids))}.")
    else:
        lines.append("The node has no children in this tree (the draft expanded it, the tree kept none).")
    lines.append(reading(table, k, max(d.rest_p, d.rest_q)))
    dist = _md(meta.get("target_distribution", "the target distribution"), token=False)
    lines.append(f"_p is {dist}; q is the draft's distribution the tree was built from (tree temperature "
                 f"{_md(meta.get('tree_temperature', 1.0), token=False)}). The trace keeps each side's top {TOPK} "
                 f"tokens ({len(d.labels) - 1} here); all other tokens form one bucket (p {d.rest_p:.2f}, "
                 f"q {d.rest_q:.2f} there). The sampled schemes treat the bucket as a single token, so they are "
                 "close when it is small and the two optima can only read high (merging tokens never lowers "
                 "them); p(set) of the top-k set is exact._")
    shown = style.plotly_text(where)      # a token's text in the charts' titles
    return (dists_figure(d, f"{shown}: p and q", children),
            rates_figure(table, f"Acceptance rate at this node · {shown}", mark), "\n\n".join(lines))


def toy_view(vocab=TOY_DEFAULTS["vocab"], peak_p=TOY_DEFAULTS["peak_p"], peak_q=TOY_DEFAULTS["peak_q"],
             mismatch=TOY_DEFAULTS["mismatch"], seed=TOY_DEFAULTS["seed"]):
    try:
        vocab, seed = float(vocab), float(seed)
        peak_p, peak_q, mismatch = float(peak_p), float(peak_q), float(mismatch)
    except (TypeError, ValueError, OverflowError):
        return empty_view("⚠️ The toy settings must be numbers.")
    limits = [("vocabulary size", vocab, 2, TOY_MAX_VOCAB), ("target peakedness", peak_p, 0, TOY_MAX_PEAK),
              ("draft peakedness", peak_q, 0, TOY_MAX_PEAK), ("mismatch", mismatch, 0, TOY_MAX_MISMATCH),
              ("seed", seed, 0, 2**32 - 1)]
    for name, value, lo, hi in limits:
        if not lo <= value <= hi:   # also rejects NaN
            return empty_view(f"⚠️ The {name} must be between {lo:g} and {hi:g}.")
    d = toy_dists(vocab, peak_p, peak_q, mismatch, seed)
    table = rates(d)
    text = (f"**Toy p and q** over {len(d.p)} tokens: p = softmax({float(peak_p):g}·z), q = "
            f"softmax({float(peak_q):g}·(z + {float(mismatch):g}·ε)) with z, ε standard normal (seed {int(seed)}). "
            "Raise the mismatch to make the draft disagree more; lower the draft's peakedness to make it hedge.\n\n"
            + reading(table, 4))
    return dists_figure(d, "Toy p and q"), rates_figure(table, "Acceptance rate (toy p and q)"), text


def preset_view():
    d = preset_dists()
    table = rates(d)
    text = ("**Preset: without replacement beats i.i.d.** The draft is confidently wrong: it puts 0.75 on "
            "tok 3, which the target gives only 0.1. Two i.i.d. drafts are both tok 3 more than half the time, "
            "so the second draft is often wasted; drawn without replacement, the second draft is always a "
            "different token.\n\n" + reading(table, 2))
    return dists_figure(d, "Preset: p and q"), rates_figure(table, "Acceptance rate (preset)"), text


def empty_view(message: str):
    return dists_figure(None), rates_figure(None), message
