"""Numbers beside the pictures: one step's metrics, a run's summary, and why a method ran slower than AR."""

from __future__ import annotations

from opttree.trace import by_depth_text, committed_bonus, committed_draft, counted, percent

from . import style
from .cost_chart import context_read, usable, verify_ratio
from .drafters import drafter_name, p_hat_meaning, sampled_at, tree_temperature_text


def step_metrics(trace: dict | None, index: int | None) -> str:
    """Markdown table of one step (`step_rows`), then the run's summary."""
    steps = (trace or {}).get("steps", [])
    if not steps or index is None:
        return "_No step yet._"
    body = "\n".join(f"| {k} | {style.md_text(v)} |" for k, v in step_rows(trace.get("meta"), steps[index]))
    return f"**Step {index + 1} of {len(steps)}**\n\n| metric | value |\n|---|---|\n{body}\n\n" + run_summary(trace)


def step_rows(meta: dict | None, s: dict) -> list[tuple[str, str]]:
    """One step's metrics as (name, plain-text value) rows, for the app's table and the HTML export's: E(A)
    (and, sampled, the expectation under the target's p: `target_expected_accept`), accepted length, nodes,
    depth, timings, stop reason, the auto budget's choice."""
    meaning = p_hat_meaning(meta)
    exact = target_expected_accept(s) if sampled_at(meta) else None
    what = ("no draft model: a ranking score, not a prediction" if meaning
            else "the draft's expected accepted" if exact is not None else "expected accepted")
    rows = [(f"E(A) = Σ p̂ ({what})", f"{s['expected_accept']:.2f}")]
    if exact is not None:
        rows.append(("expected accepted under the target's p (Σ Π p along each path: exact when sampling)",
                     f"{exact:.2f}"))
    rows += [("accepted draft tokens", accepted_text(s)),
             ("nodes in the tree", str(len(s["tokens"]))),
             ("tree depth", str(max(s["depth"], default=0))),
             ("draft / build / verify ms", f"{s.get('draft_ms', 0):.0f} / {s.get('build_ms', 0):.0f} / "
                                            f"{s.get('verify_ms', 0):.0f}"),
             ("why it stopped growing", str(s.get("stop_reason", "")))]
    auto = s.get("auto")
    if isinstance(auto, dict) and auto.get("chosen_nodes"):
        rows.append(("auto budget: chosen for this machine",
                     f"{counted(auto['chosen_nodes'], 'node')} over {counted(auto.get('chosen_depth', '?'), 'layer')}, "
                     f"{auto.get('chosen_tokens_per_s', 0):.1f} expected tokens/s"))
        if auto.get("fused_nodes"):
            rows.append(("with retrieval fused in", f"{counted(auto['fused_nodes'], 'node')}, "
                         f"{auto.get('fused_tokens_per_s', 0):.1f} expected tokens/s (retrieved nodes' p̂ as fused)"))
    return rows


def target_expected_accept(step: dict) -> float | None:
    """The step's expected accepted length under the target's p: the sum over nodes of the product of
    `p_target` along each node's path. Sampled, the target-sample rule accepts a node with exactly that
    probability (its own draw is the node's token at every step of the path), so this is the step's exact
    expectation for its tree, which Σ p̂ estimates from the draft's q; None without a recorded target side."""
    pt = step.get("p_target")
    if not isinstance(pt, list) or len(pt) != len(step["parents"]):
        return None
    path: list[float] = []
    for p, x in zip(step["parents"], pt):      # parents precede their children
        path.append(x * (1.0 if p == -1 else path[p]))
    return sum(path)


def accepted_text(step: dict) -> str:
    """The step's accepted draft tokens, saying when EOS or the token limit cut the step short."""
    kept, path = committed_draft(step), len(step.get("accepted") or [])
    text = f"{kept} (+1 bonus)" if committed_bonus(step) else str(kept)
    if path > kept:
        text += f" ({path} accepted; EOS or the token limit ended the run first)"
    return text


def run_summary(trace: dict | None) -> str:
    if not trace or not trace.get("steps"):
        return ""
    s, m = trace["summary"], trace["meta"]
    temp = tree_temperature_text(m)
    calibrated = f" · draft probabilities at {temp}" if temp else ""
    models = f"Target {style.md_text(m.get('target', '?'))}"
    if m.get("draft"):
        models += f" · draft {style.md_text(m['draft'])}"
    return (f"{models}\n\nRun: **{style.md_text(m.get('method'))}**{drawn_text(m)}, {s['new_tokens']} tokens in "
            f"{s['steps']} steps · "
            f"τ = **{s['tau']:.2f}** tokens/step · {speed_text(s)} · "
            f"mean E(A) {s.get('mean_expected_accept', 0):.2f} vs **{s.get('mean_accepted_draft_tokens', 0):.2f}** "
            f"accepted draft tokens a step{calibrated}" + acceptance_text(s) + belief_note(s, m))


def drawn_text(meta: dict) -> str:
    """How a sampled run drew its text, with the seed that redraws it (" (sampled at T = 0.7, top-p 0.9,
    seed 3)"); "" for a greedy run."""
    sampled = sampled_at(meta)
    if not sampled:
        return ""
    seed = meta.get("seed")
    return f" ({sampled}" + (f", seed {seed}" if isinstance(seed, int) and not isinstance(seed, bool) else "") + ")"


def speed_text(summary: dict) -> str:
    """The run's tokens/s with what it includes; a file that timed nothing (an imported trace with neither a wall
    time nor a speed) says so rather than claiming 0 tokens/s."""
    if summary["tokens_per_s"] <= 0 < summary["new_tokens"]:
        return "speed not timed"
    return f"{summary['tokens_per_s']:.1f} tokens/s{prefill_text(summary)}"


def prefill_text(summary: dict) -> str:
    """What the run's tokens/s includes: the prompt's prefill, which drafting does not shorten (older
    traces did not time it)."""
    ms = summary.get("prefill_ms")
    return f" (the whole run, the prompt's {ms:.0f} ms prefill included)" if isinstance(ms, (int, float)) else ""


def belief_note(summary: dict, meta: dict | None = None) -> str:
    """A word on what E(A) is: for a drafter without a draft model (prompt lookup, Token Recycling) what
    its p̂ are, always; for a draft model, where E(A) and the accepted tokens look contradictory, that p̂
    is the draft's belief."""
    meaning = p_hat_meaning(meta)
    if meaning:
        name = drafter_name(meta)
        return (f"\n\n{name[:1].upper() + name[1:]} has no draft model: {meaning}. E(A) sums these p̂, so "
                "here it is a ranking score, not a prediction of the accepted tokens.")
    ea, got = summary.get("mean_expected_accept") or 0.0, summary.get("mean_accepted_draft_tokens") or 0.0
    if ea <= 0 or abs(ea - got) <= 0.25 * max(ea, got):
        return ""
    side = "over" if ea > got else "under"
    return (f"\n\nE(A) sums p̂, the draft's own belief that each path is accepted; this draft {side}-states "
            "acceptance here (E(A) vs A shows its calibration over many steps). Tokens/s are measured on this "
            "machine as it runs, shared with other work; the auto budget's expected tokens/s are modelled.")


def acceptance_text(summary: dict) -> str:
    """The run's draft acceptance rate and per-depth rates (trace.acceptance); '' for a run without drafts."""
    if not summary.get("mean_nodes"):
        return ""
    return (f"\n\nDraft acceptance rate **{percent(summary.get('draft_acceptance_rate', 0))}** of the draft "
            f"tokens verified · accepted at depth 1, 2, 3, …: {by_depth_text(summary.get('acceptance_by_depth'))}")


def why_slower(trace: dict, ar: dict | None, cost: dict | None, context: float | None = None) -> str:
    """One sentence, from the measured cost curve, on why a method ran slower than AR ('' otherwise);
    the verify cost is read after `context` tokens (the runs' mean KV prefix) where the curve was
    measured after a longer prefix too. Where the curve prices a step below the tokens it commits (it
    should have beaten AR), the sentence says so and where the run's time went instead (`unexplained`)."""
    if not ar or trace is ar or not usable(cost):
        return ""
    s, a = trace["summary"], ar["summary"]
    if not a.get("tokens_per_s") or s.get("tokens_per_s", 0) >= a["tokens_per_s"]:
        return ""
    tokens = round(s.get("mean_nodes", 0)) + 1
    prefix = context_read(cost, context)
    ratio = verify_ratio(cost, tokens, prefix)
    tau = s.get("tau", 0)
    draft = s.get("mean_draft_ms", 0) + s.get("mean_build_ms", 0)
    ar_step = a.get("mean_verify_ms") or cost["verify_ms"][0]
    after = f" after a mean context of {prefix:.0f} tokens" if prefix is not None else ""
    head = f"verifying {tokens} tokens{after} costs {ratio:.1f}× one token on this machine"
    if ratio >= tau:
        return f"{head}, more than the {tau:.2f} tokens a step commits."
    if ratio + draft / ar_step < tau:
        return unexplained(s, ar_step, f"{head} and drafting adds {draft:.0f} ms a step ({draft / ar_step:.1f} "
                                       f"AR steps): {ratio + draft / ar_step:.1f} AR steps")
    return (f"{head} and drafting adds {draft:.0f} ms a step ({draft / ar_step:.1f} AR steps): together "
            f"more than the {tau:.2f} tokens a step commits.")


def unexplained(summary: dict, ar_step: float, modelled: str) -> str:
    """why_slower's sentence for a method the cost curve says should beat AR (`modelled`: the curve's price
    of a step, in AR steps, below τ): what its steps measured, and so whether they ran slower than the
    curve (a busier machine) or the time went outside the steps (the prompt's prefill)."""
    tau = summary.get("tau", 0)
    step = sum(summary.get(k, 0) or 0 for k in ("mean_draft_ms", "mean_build_ms", "mean_verify_ms"))
    head = (f"the cost curve prices a step below its {tau:.2f} tokens ({modelled}), so it should beat AR; "
            f"its steps measured {step:.0f} ms ({step / ar_step:.1f} AR steps)")
    if step / ar_step >= tau:
        return f"{head}: the machine ran them slower than when the curve was measured (it is shared)."
    return (f"{head}, faster per token than AR: the time went outside the steps' draft, build and verify "
            "(the prompt's prefill is one part).")
