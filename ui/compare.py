"""Compare: OPT-Tree against static trees over several prompts, timed fairly, with what the spread supports.

One press runs a benchmark through the model lane (`harness.iter_bench`: a warm-up run of every
method, then every method on every prompt in an order rotated per prompt): the Explore prompt plus the
built-in set (`opttree/bench/compare.py`), OPT-Tree and each chosen static tree at fixed node budgets
and at the auto budget, AR as the reference. Two charts from the same runs (τ against the budget: which
shape accepts more; speed against the budget: what this machine rewards), a verdict computed from the
spread (`verdict.verdict`, the words `make bench` prints), a table of means ± standard errors, the
cost curve, and the Explore prompt's trees side by side at one budget.
"""

from __future__ import annotations

import time

import gradio as gr

from opttree.bench import compare as plan
from opttree.bench.harness import iter_bench, parse_methods
from opttree.config import BUNDLED_ID, checked_number
from opttree.errors import OptTreeError
from opttree.serve.service import RunError
from ui.common import (
    HISTORY_RUNS,
    SCRUB,
    STOP_EVENT,
    Page,
    bind,
    bounded,
    clamp,
    history_views,
    session_of,
    steps_of,
    whole_number,
)
from ui.controls import STATIC_CHOICES, checked_controls, raw_text, settings_from
from viz.compare_charts import speed_budget_figure, summary_cost, tau_budget_figure
from viz.compare_table import ALL, WIDTHS, budget_choices, compare_table, prompts_text, table_label, verdict_text
from viz.cost_chart import cost_figure
from viz.step_charts import ea_points
from viz.style import md_text
from viz.tree_figure import step_title, tree_figure

# Extra rows at the auto budget: OPT-Tree with retrieval fusion (pairs the allow-list lets fuse), and the
# allow-list's other drafters for the same target (Token Recycling, prompt lookup, early exit).
EXTRA_CHOICES = [("OPT-Tree + retrieval fusion", "opt-tree + retrieval"),
                 ("Token Recycling (no draft)", "recycling"), ("Prompt lookup (no draft)", "lookup"),
                 ("Early exit (the target's first layers)", "early-exit")]
PROMPT_SETS = [("The Explore prompt + 4 built-in (chat, maths, code, a given passage)", plan.ALL),
               ("The Explore prompt only", plan.ONE)]
OWN = ("statics", "extras", "prompt_set", "budgets", "tokens", "history")   # Compare's own inputs, after the settings
SCOPE = "compare"        # the runs Compare's Stop ends (explore.stop), and no other tab's
TOKEN_RANGE = (4, 64)   # the new-tokens slider's range: what a comparison runs
TOKENS_LABEL = "New tokens per run"
REDRAW_S = 0.25         # progress messages reach the page at most this often
DEADLINE = 0.9          # no prompt starts that would likely end past this share of the time limit

INTRO = (f"Runs **OPT-Tree**, the static trees you tick and plain autoregressive decoding (AR, the reference) "
         f"on the Explore prompt and four built-in ones, each tree at the fixed node budgets you tick and at "
         f"the **auto** budget, {plan.TOKENS} new tokens per run: about a minute on an idle 2-core CPU, longer "
         "on a busy one (narrow it to one prompt for a quick look). Every method runs once untimed first "
         "(warm-up), then the order of methods rotates from prompt to prompt, so no row pays another's "
         "start-up or always runs first. "
         "Two lessons, kept apart: **which shape accepts more at the same budget** (τ against n, the "
         "paper's claim) and **what is fastest on this machine** (speed against n; on a CPU a forward "
         "costs more with every token beyond a few, so the auto budget picks small trees, where shapes differ "
         "little). Figures are means over the prompts ± one "
         "standard error; the verdict calls a difference only when it is beyond two. The Explore settings "
         "(δ, max depth, temperature, seed, tree temperature) apply; the budget and new tokens are set here.")


def build() -> dict:
    gr.Markdown(INTRO, elem_id="compare-intro")
    with gr.Row():
        with gr.Column(scale=2):
            prompt_set = gr.Radio(PROMPT_SETS, value=plan.ALL, label="Prompts", elem_id="compare-prompts")
            budgets = gr.CheckboxGroup(list(plan.BUDGETS), value=list(plan.BUDGETS), elem_id="compare-budgets",
                                       label="Fixed node budgets n (the auto budget always runs)")
            tokens = gr.Slider(*TOKEN_RANGE, value=plan.TOKENS, step=1, label=TOKENS_LABEL,
                               elem_id="compare-tokens")
        with gr.Column(scale=2):
            statics = gr.CheckboxGroup(STATIC_CHOICES, value=list(plan.STATICS), label="Static trees to compare",
                                       elem_id="statics")
            extras = gr.CheckboxGroup(EXTRA_CHOICES, value=[], label="Also compare (at the auto budget)",
                                      elem_id="compare-extras")
        with gr.Column(scale=0, min_width=200):
            run_btn = gr.Button("Compare", variant="primary", elem_id="compare-run")
            stop_btn = gr.Button("Stop", variant="stop", elem_id="compare-stop")
    status = gr.Markdown("", elem_id="compare-status")
    verdict = gr.Markdown("", elem_id="compare-verdict")
    with gr.Row():
        tau_plot = gr.Plot(tau_budget_figure(None), label="τ against the node budget", elem_id="compare-tau")
        speed_plot = gr.Plot(speed_budget_figure(None), label="Speed against the node budget",
                             elem_id="compare-speed")
    budget = gr.Radio([ALL], value=ALL, label="Table and trees at the budget", elem_id="compare-budget")
    table = gr.Dataframe(compare_table(None), label=table_label(None), interactive=False, wrap=True, max_height=1300,
                         column_widths=WIDTHS, elem_id="compare-table")
    with gr.Accordion("The same comparison from the command line (same harness, same verdict)", open=False):
        command = gr.Markdown("", elem_id="compare-command")
    with gr.Row():
        with gr.Column(scale=2):
            cost_plot = gr.Plot(cost_figure(None), label="Cost curve (measured on this machine)",
                                elem_id="compare-cost")
            measure_btn = gr.Button("Measure this machine again", size="sm", elem_id="compare-measure")
        with gr.Column(scale=3):
            with gr.Row():
                step = gr.Slider(1, 2, value=1, step=1, label="Step (both panels)", elem_id="compare-step", scale=3)
                right = gr.Dropdown(STATIC_CHOICES, value="binary", label="Right panel", elem_id="compare-right",
                                    scale=1)
            with gr.Row():
                left_plot = gr.Plot(tree_figure(None), label="OPT-Tree", elem_id="compare-left")
                right_plot = gr.Plot(tree_figure(None), label="Static tree", elem_id="compare-right-plot")
    return dict(state=gr.State({}), statics=statics, extras=extras, prompt_set=prompt_set, budgets=budgets,
                tokens=tokens, run=run_btn, stop=stop_btn, status=status, verdict=verdict, tau=tau_plot,
                speed=speed_plot, budget=budget, table=table, command=command, cost=cost_plot, measure=measure_btn,
                step=step, right=right, left_plot=left_plot, right_plot=right_plot)


def progress_text(msg: dict) -> str:
    """What the status line says before each run of the comparison."""
    if msg["phase"] == "warm-up":
        return (f"Warming up (untimed): **{md_text(msg['method'])}**, run {msg['run']} of {msg['runs']}…")
    name = "the Explore prompt" if msg["prompt"] == 1 else md_text(msg["prompt_id"])
    return (f"Prompt {msg['prompt']} of {msg['prompts']} ({name}), "
            f"**{md_text(msg['method'])}**: run {msg['run']} of {msg['runs']}…")


def plan_for(page: Page, service, model, prompt, values: list):
    """(prompts, methods, settings, other pairs {drafter: id}, notes, command line) of one comparison, from
    the Explore settings and Compare's own inputs; `notes`: sentences for the status line on what runs other
    than asked. BadInput on a bad prompt or method."""
    *settings_values, chosen, extras, prompt_set, budgets, tokens = values
    prompt = raw_text(prompt)
    statics, notes = [m for m in (chosen or []) if m in {v for _, v in STATIC_CHOICES}], []
    if not statics:     # the verdict weighs OPT-Tree against a static tree: one stands in
        statics = ["binary"]
        notes.append("No static tree was ticked: the binary tree stands in.")
    fixed = [n for n in map(whole_number, budgets or []) if n]     # whole numbers above 0
    settings = {**settings_from(checked_controls(dict(zip(page.settings, settings_values)))), "retrieval": "off",
                "max_new_tokens": checked_number(TOKENS_LABEL, plan.TOKENS if tokens is None else tokens,
                                                 *TOKEN_RANGE, whole=True)}
    offered, others, skipped = extra_rows(service.registry, model, extras)
    if skipped:
        notes.append(f"Not offered for this pair: {', '.join(skipped)}.")
    scope = plan.ONE if prompt_set == plan.ONE else plan.ALL
    prompts = plan.compare_prompts(prompt, scope)
    methods = parse_methods(plan.compare_methods(statics, fixed, offered))
    try:
        entry = service.registry.get(model)
        command = plan.bench_command(prompt, scope, methods, settings, entry.drafter,
                                     None if entry.target == BUNDLED_ID else entry.public_target)
    except OptTreeError:
        command = ""
    return prompts, methods, settings, others, notes, command


def compare_job(service, prompts, methods: list[str]):
    """The job `service.stream_job` runs for one comparison: every method warmed up once, the first prompt's
    traces kept for the panels, and no prompt started that would likely end past DEADLINE of the service's
    time limit (the harness leaves it out and says so, where the service's timeout would end the whole job)."""
    keep, deadline = {prompts[0].id}, DEADLINE * service.time_limit_s

    def job(pair, cfg, stop, pairs):
        return iter_bench(pair, prompts, methods, cfg, warmup=1, log=lambda _m: None, cancel=stop, pairs=pairs,
                          keep_traces=keep, deadline_s=deadline)
    return job


def run_compare(page: Page, parts: dict, service, request: gr.Request, model, prompt, *values):
    """The comparison through the model lane, its progress on the status line, then every view of it."""
    *values, history = values
    status = parts["status"]
    try:
        prompts, methods, settings, others, notes, command = plan_for(page, service, model, prompt, list(values))
    except OptTreeError as exc:
        yield {status: f"⚠️ {md_text(str(exc))}"}
        return
    job, shown, result = compare_job(service, prompts, methods), 0.0, None
    try:
        for up in service.stream_job(model, job, settings, session=session_of(request), others=others, scope=SCOPE):
            if up.state == "queued":
                yield {status: f"⏳ Waiting for the model: position **{up.position}** in the queue…"}
            elif up.state == "running" and time.monotonic() - shown >= REDRAW_S:
                shown = time.monotonic()
                yield {status: progress_text(up.progress)}
            elif up.state == "done":
                result = up.result
    except RunError as exc:
        yield {status: f"⚠️ {md_text(exc.message)}"}
        return
    yield {status: " ".join([done_text(result), *notes]), **views(page, parts, result, methods, history, command)}


def done_text(result: dict) -> str:
    meta = result["meta"]
    load = meta["machine"].get("load_avg_at_start")
    busy = f" (load average {load[0]:.1f} on {meta['machine'].get('cpu_count')} cores)" if load else ""
    return (f"Done: {len(meta['methods'])} methods × {prompts_text(meta['prompts'])} in {meta.get('bench_wall_s')} s"
            f"{busy}, each method warmed up first. Timings share this machine with other visitors.")


def views(page: Page, parts: dict, result: dict, methods: list[str], history, command: str) -> dict:
    """Every view of a finished comparison; the state keeps its summary and the first prompt's traces."""
    summary = plan.summary(result)
    traces = next(iter(result.get("traces", {}).values()), {})
    statics = list(dict.fromkeys(plan.shape_name(m) for m in methods if plan.shape_name(m) in
                                 {v for _, v in STATIC_CHOICES}))
    state = {"summary": summary, "traces": traces}
    right = statics[0] if statics else "binary"
    history = ((history or []) + [ea_points(t) for m, t in traces.items() if m != "ar"])[-HISTORY_RUNS:]
    fig, r_text = history_views(history)
    left_fig, right_fig = panels(state, ALL, right, 1)
    return {parts["state"]: state, parts["verdict"]: verdict_text(summary),
            parts["tau"]: tau_budget_figure(summary), parts["speed"]: speed_budget_figure(summary),
            parts["budget"]: gr.Radio(choices=budget_choices(summary), value=ALL),
            parts["table"]: gr.Dataframe(compare_table(summary, ALL), label=table_label(summary)),
            parts["cost"]: summary_cost(summary),
            parts["command"]: f"```\n{command}\n```" if command else "",
            parts["step"]: gr.Slider(minimum=1, maximum=max(longest(state, ALL, right), 2), value=1, step=1),
            parts["right"]: gr.Dropdown(choices=[c for c in STATIC_CHOICES if c[1] in statics] or STATIC_CHOICES,
                                        value=right),
            parts["left_plot"]: left_fig, parts["right_plot"]: right_fig,
            page.history: history, page.ea_plot: fig, page.ea_text: r_text}


def measure(service, model):
    """Measure this machine's cost curve for the pair again (through the model lane: seconds)."""
    try:
        curve = service.cost_curve(model, refresh=True)
    except RunError as exc:
        return gr.skip(), f"⚠️ {md_text(exc.message)}"
    return cost_figure(curve), f"Measured again ({curve.get('measured_utc', '')}): new runs size their trees from this."


def extra_rows(registry, model, extras) -> tuple[list[str], dict[str, str], list[str]]:
    """The chosen extras the allow-list offers for this pair (plan.EXTRAS keys), the allow-listed pair each
    other drafter runs with ({drafter: model id}), and the extras it does not offer."""
    wanted = [v for _, v in EXTRA_CHOICES if v in (extras or [])]
    try:
        entry = registry.get(model)
    except OptTreeError:
        return [], {}, wanted
    offered, others, skipped = [], {}, []
    for extra in wanted:
        if extra == "opt-tree + retrieval":
            (offered if entry.retrieval else skipped).append(extra)
            continue
        other = registry.drafting_for(entry.target, (extra,))
        if other and other[0].id == model:
            continue             # the Explore pair drafts this way already: its OPT-Tree rows are these rows
        if other:
            offered.append(extra)
            others[extra] = other[0].id
        else:
            skipped.append(extra)
    return offered, others, skipped


def at_budget(budget: str) -> str:
    """The bench budget suffix the panels show for a table filter ('n = 25' -> '25'; all or auto -> 'auto')."""
    return budget.removeprefix("n = ") if budget.startswith("n = ") else "auto"


def longest(state: dict, budget: str, right: str) -> int:
    traces = (state or {}).get("traces") or {}
    return max((steps_of(traces.get(f"{m}@{at_budget(budget)}")) for m in ("opt-tree", right)), default=1)


def panels_at(state: dict, budget: str, right: str, step):
    """The panels at a typed or dragged step, and the box set to the step shown (a typed 99 reads the last
    step of the longer run, 0 or less step 1)."""
    shown = bounded(step, 1, max(longest(state, budget or ALL, right), 1), 1)
    return (gr.Slider(value=shown), *panels(state, budget, right, shown))


def panels(state: dict, budget: str, right: str, step):
    """OPT-Tree on the left and one static tree on the right, the Explore prompt at one budget, same step."""
    traces = (state or {}).get("traces") or {}
    figs = []
    for meth in ("opt-tree", right):
        tr = traces.get(f"{meth}@{at_budget(budget or ALL)}")
        if not tr or not tr.get("steps"):
            figs.append(tree_figure(None))
            continue
        i = clamp(tr, step)
        title = step_title(tr, i)
        try:
            asked = int(float(step))
        except (TypeError, ValueError, OverflowError):
            asked = i + 1
        if asked > steps_of(tr):
            title += " (finished earlier)"
        figs.append(tree_figure(tr["steps"][i], title, uirevision=f"compare-{meth}"))
    return tuple(figs)


def at_table_budget(state, budget, right, step):
    """The table and the panels at another budget, from the session's cached comparison (no model work)."""
    summary = (state or {}).get("summary")
    return (compare_table(summary, budget or ALL),
            gr.Slider(maximum=max(longest(state, budget or ALL, right), 2)), *panels(state, budget, right, step))


def wire(page: Page, parts: dict, service, stop, lane: dict) -> None:
    # By name, in `run_compare`'s order: each name is its parameter's in the /compare API.
    inputs = {"model": page.model, "prompt": page.prompt, **page.settings, **{k: parts[k] for k in OWN[:-1]},
              "history": page.history}
    outputs = [parts[k] for k in ("state", "status", "verdict", "tau", "speed", "budget", "table", "command", "cost",
                                  "step", "right", "left_plot", "right_plot")]
    outputs += [page.history, page.ea_plot, page.ea_text]
    # preprocess=False: raw values, which `plan_for` checks (Gradio's own check answers a bare "Error")
    parts["run"].click(bind(run_compare, page, parts, service, names=inputs), list(inputs.values()), outputs,
                       api_name="compare", preprocess=False, **lane)
    parts["stop"].click(stop, None, parts["status"], api_visibility="private", **STOP_EVENT)
    parts["measure"].click(bind(measure, service), [page.model], [parts["cost"], parts["status"]],
                           api_visibility="private", **lane)
    parts["budget"].input(at_table_budget, [parts["state"], parts["budget"], parts["right"], parts["step"]],
                          [parts["table"], parts["step"], parts["left_plot"], parts["right_plot"]], **SCRUB)
    for evt in (parts["step"].input, parts["right"].input):
        evt(panels_at, [parts["state"], parts["budget"], parts["right"], parts["step"]],
            [parts["step"], parts["left_plot"], parts["right_plot"]], trigger_mode="always_last", **SCRUB)
