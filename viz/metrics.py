"""Numbers beside the pictures: one step's metrics, a run's summary, and the Compare table."""

from __future__ import annotations

import html

import plotly.graph_objects as go

from opttree.config import TRAINING_FREE
from opttree.trace import by_depth_text, committed_draft

from . import style
from .cost_chart import cost_figure, usable, verify_ratio


def step_metrics(trace: dict | None, index: int | None) -> str:
    """Markdown table of one step: E(A), accepted length, nodes, depth, timings, stop reason."""
    steps = (trace or {}).get("steps", [])
    if not steps or index is None:
        return "_No step yet._"
    s = steps[index]
    rows = [("E(A) = Σ p̂ (expected accepted)", f"{s['expected_accept']:.2f}"),
            ("accepted draft tokens", accepted_text(s)),
            ("nodes in the tree", str(len(s["tokens"]))),
            ("tree depth", str(max(s["depth"], default=0))),
            ("draft / build / verify ms", f"{s.get('draft_ms', 0):.0f} / {s.get('build_ms', 0):.0f} / "
                                           f"{s.get('verify_ms', 0):.0f}"),
            ("why it stopped growing", html.escape(str(s.get("stop_reason", ""))))]
    auto = s.get("auto")
    if isinstance(auto, dict) and auto.get("chosen_nodes"):
        rows.append(("auto budget: chosen for this machine",
                     f"{auto['chosen_nodes']} nodes over {auto.get('chosen_depth', '?')} layer(s), "
                     f"{auto.get('chosen_tokens_per_s', 0):.1f} expected tokens/s"))
    body = "\n".join(f"| {k} | {v} |" for k, v in rows)
    return f"**Step {index + 1} of {len(steps)}**\n\n| metric | value |\n|---|---|\n{body}\n\n" + run_summary(trace)


def accepted_text(step: dict) -> str:
    """The step's accepted draft tokens, saying when EOS or the token limit cut the step short."""
    kept, path = committed_draft(step), len(step.get("accepted") or [])
    committed = step.get("committed")
    bonus = not isinstance(committed, list) or len(committed) > kept
    text = f"{kept} (+1 bonus)" if bonus else str(kept)
    if path > kept:
        text += f" ({path} accepted; EOS or the token limit ended the run first)"
    return text


def run_summary(trace: dict | None) -> str:
    if not trace or not trace.get("steps"):
        return ""
    s, m = trace["summary"], trace["meta"]
    temp = float(m.get("tree_temperature", 1.0) or 1.0)
    calibrated = f" · draft probabilities at tree temperature {temp:g}" if temp != 1.0 else ""
    models = f"Target {html.escape(str(m.get('target', '?')))}"
    if m.get("draft"):
        models += f" · draft {html.escape(str(m['draft']))}"
    return (f"{models}\n\nRun: **{html.escape(str(m.get('method')))}**, {s['new_tokens']} tokens in "
            f"{s['steps']} steps · "
            f"τ = **{s['tau']:.2f}** tokens/step · {s['tokens_per_s']:.1f} tokens/s · "
            f"mean E(A) {s.get('mean_expected_accept', 0):.2f} vs **{s.get('mean_accepted_draft_tokens', 0):.2f}** "
            f"accepted draft tokens a step{calibrated}" + acceptance_text(s))


def acceptance_text(summary: dict) -> str:
    """The run's draft acceptance rate and per-depth rates (trace.acceptance); '' for a run without drafts."""
    if not summary.get("mean_nodes"):
        return ""
    return (f"\n\nDraft acceptance rate **{summary.get('draft_acceptance_rate', 0) * 100:.0f}%** of the draft "
            f"tokens verified · accepted at depth 1, 2, 3, …: {by_depth_text(summary.get('acceptance_by_depth'))}")


# Short headers: the table shares its row with the cost chart. τ = tokens per step (bonus included),
# accepted/step = accepted draft tokens per step, acceptance = accepted / verified draft tokens.
COMPARE_COLUMNS = ["method", "τ", "tokens/s", "speedup vs AR", "same output as AR", "nodes", "depth",
                   "accepted/step", "acceptance", "ms draft+build / verify", "why slower than AR"]


def method_label(trace: dict) -> str:
    """'opt-tree (auto)' or 'binary (n=60)': the method and its node budget; a drafter without a draft
    model, the early-exit drafter and retrieval fusion are named too ('recycling · opt-tree (auto)',
    'early-exit · chain (n=10)', 'opt-tree + retrieval (n=20)')."""
    m = trace.get("meta", {})
    if m.get("method") == "ar":
        return "ar"
    nodes = m.get("nodes")
    name = m.get("method", "?")
    if m.get("drafter") in (*TRAINING_FREE, "early-exit"):
        name = f"{m['drafter']} · {name}"
    if m.get("retrieval") == "on":
        name += " + retrieval"
    return f"{name} ({'auto' if nodes == 0 else f'n={nodes}'})"


def why_slower(trace: dict, ar: dict | None, cost: dict | None) -> str:
    """One sentence, from the measured cost curve, on why a method ran slower than AR ('' otherwise)."""
    if not ar or trace is ar or not usable(cost):
        return ""
    s, a = trace["summary"], ar["summary"]
    if not a.get("tokens_per_s") or s.get("tokens_per_s", 0) >= a["tokens_per_s"]:
        return ""
    tokens = round(s.get("mean_nodes", 0)) + 1
    ratio = verify_ratio(cost, tokens)
    tau = s.get("tau", 0)
    draft = s.get("mean_draft_ms", 0) + s.get("mean_build_ms", 0)
    ar_step = a.get("mean_verify_ms") or cost["verify_ms"][0]
    head = f"verifying {tokens} tokens costs {ratio:.1f}× one token on this machine"
    if ratio >= tau:
        return f"{head}, more than the {tau:.2f} tokens a step commits."
    return (f"{head} and drafting adds {draft:.0f} ms a step ({draft / ar_step:.1f} AR steps): together "
            f"more than the {tau:.2f} tokens a step commits.")


# The settings that decide the target's token choices: with them equal (and the same seed when
# sampling), a tree run commits the same tokens as the AR run, each with the same draw.
SAMPLING_KEYS = ("temperature", "top_k", "top_p", "seed")


def same_draws(meta: dict, ar_meta: dict) -> bool:
    """True when two runs pick tokens by the same rule: same temperature, and when sampling the
    same top-k, top-p and seed."""
    if meta.get("temperature", 0) != ar_meta.get("temperature", 0):
        return False
    return not meta.get("temperature", 0) or all(meta.get(k) == ar_meta.get(k) for k in SAMPLING_KEYS)


def compare_rows(traces: dict[str, dict]) -> list[list]:
    """One row per method; speedup is tokens/s over the AR run's tokens/s (same prompt and models).

    "same output as AR": at T = 0 the tree run must equal the AR run; at T > 0 too when both ran with
    the same seed and sampling settings (each committed token is one draw from the run's generator)."""
    ar = traces.get("ar")
    ar_speed = ar["summary"]["tokens_per_s"] if ar else 0.0
    cost = next((t["meta"].get("cost") for t in traces.values() if usable(t.get("meta", {}).get("cost"))), None)
    rows = []
    for tr in traces.values():
        s = tr["summary"]
        speedup = f"{s['tokens_per_s'] / ar_speed:.2f}×" if ar_speed else "—"
        if not ar:
            same = "—"
        elif not same_draws(tr["meta"], ar["meta"]):
            same = "n/a (other sampling settings)"
        else:
            same = "yes" if tr["output_ids"] == ar["output_ids"] else "NO"
        ms = (f"{s.get('mean_draft_ms', 0) + s.get('mean_build_ms', 0):.0f} / {s.get('mean_verify_ms', 0):.0f}")
        drafted = bool(s.get("mean_nodes"))
        rate = f"{s.get('draft_acceptance_rate', 0) * 100:.0f}%" if drafted else "—"
        rows.append([method_label(tr), f"{s['tau']:.2f}", f"{s['tokens_per_s']:.1f}", speedup, same,
                     f"{s.get('mean_nodes', 0):.1f}", f"{s.get('mean_depth', 0):.1f}",
                     f"{s.get('mean_accepted_draft_tokens', 0):.2f}" if drafted else "—", rate, ms,
                     why_slower(tr, ar, cost)])
    return rows


def compare_chart(traces: dict[str, dict]) -> go.Figure:
    labels = [method_label(t) for t in traces.values()]
    ar = traces.get("ar")
    ar_speed = ar["summary"]["tokens_per_s"] if ar else 0.0
    fig = go.Figure()
    fig.add_trace(go.Bar(x=labels, y=[t["summary"]["tau"] for t in traces.values()], name="τ (tokens per step)",
                         marker=dict(color="#4c78a8")))
    if ar_speed:
        fig.add_trace(go.Bar(x=labels, y=[t["summary"]["tokens_per_s"] / ar_speed for t in traces.values()],
                             name="speedup over AR (tokens/s ratio)", marker=dict(color="#f58518")))
    fig.update_layout(template="plotly_white", barmode="group", height=320,
                      margin=dict(l=50, r=10, t=40, b=40), legend=dict(orientation="h", y=1.12),
                      title=dict(text="Same prompt, same settings", x=0.01, font=dict(size=14)))
    fig.add_hline(y=1.0, line=dict(color=style.GUIDE, dash="dot", width=1))
    return fig


def compare_cost(traces: dict[str, dict]):
    """The cost chart beside Compare's table: the curve the runs recorded, each tree method's mean
    verified tokens marked on it."""
    cost = next((t["meta"].get("cost") for t in traces.values() if usable(t.get("meta", {}).get("cost"))), None)
    marks = {method_label(t): t["summary"].get("mean_nodes", 0) + 1 for m, t in traces.items() if m != "ar"}
    return cost_figure(cost, marks)
