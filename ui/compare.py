"""Compare: the Explore prompt and settings with OPT-Tree, the chosen static trees, AR and (optionally) the
training-free drafters and retrieval fusion, side by side, with what a forward costs on this machine
below the table (the measured cost curve)."""

from __future__ import annotations

import gradio as gr

from opttree.errors import OptTreeError
from opttree.serve.service import RunError
from ui.common import HISTORY_RUNS, PRIVATE, Page, bind, clamp, history_views, md_safe, session_of, steps_of
from ui.controls import STATIC_CHOICES, settings_from
from viz.cost_chart import cost_figure
from viz.metrics import COMPARE_COLUMNS, compare_chart, compare_cost, compare_rows
from viz.step_charts import ea_points
from viz.tree_figure import step_title, tree_figure

# Extra rows: OPT-Tree with retrieval fusion (pairs the allow-list lets fuse), and the allow-list's
# training-free pairs for the same target (Token Recycling, prompt lookup), all at the same budget.
EXTRA_CHOICES = [("OPT-Tree + retrieval fusion", "opt-tree + retrieval"),
                 ("Token Recycling (no draft)", "recycling"), ("Prompt lookup (no draft)", "lookup"),
                 ("Early exit (the target's first layers)", "early-exit")]


def build() -> dict:
    gr.Markdown("Runs the Explore prompt, model and settings with **OPT-Tree**, the static trees you pick and "
                "plain autoregressive decoding (AR) as the baseline; optionally also OPT-Tree with retrieval "
                "fusion, the drafters that need no draft model and the early-exit draft (the target's own first "
                "layers; retrieval is off in the other rows). With the "
                "node budget at **auto** (the default) every method sizes its trees per step from what a forward "
                "costs on this machine (the chart below the table); with a fixed n they all use that budget. "
                "In the table, τ = tokens per step (bonus included), accepted/step = accepted draft tokens per "
                "step, acceptance = accepted / verified draft tokens.")
    with gr.Row():
        statics = gr.CheckboxGroup(STATIC_CHOICES, value=["binary", "eagle-static"],
                                   label="Static trees to compare", elem_id="statics")
        extras = gr.CheckboxGroup(EXTRA_CHOICES, value=[], label="Also compare (same budget, OPT-Tree)",
                                  elem_id="compare-extras")
        with gr.Column(scale=0, min_width=200):
            run_btn = gr.Button("Compare", variant="primary", elem_id="compare-run")
            stop_btn = gr.Button("Stop", variant="stop", elem_id="compare-stop")
    status = gr.Markdown("", elem_id="compare-status")
    # The table has the page's width (eleven columns); the τ chart and the cost curve share the row below.
    table = gr.Dataframe(headers=COMPARE_COLUMNS, value=None, interactive=False, wrap=True, elem_id="compare-table")
    with gr.Row():
        chart = gr.Plot(label="τ and speedup", elem_id="compare-chart", scale=3)
        with gr.Column(scale=2):
            cost_plot = gr.Plot(cost_figure(None), label="Cost curve (measured on this machine)",
                                elem_id="compare-cost")
            measure_btn = gr.Button("Measure this machine again", size="sm", elem_id="compare-measure")
    with gr.Row():
        step = gr.Slider(1, 2, value=1, step=1, label="Step (both panels)", elem_id="compare-step", scale=3)
        right = gr.Dropdown(STATIC_CHOICES, value="binary", label="Right panel", elem_id="compare-right", scale=1)
    with gr.Row():
        left_plot = gr.Plot(tree_figure(None), label="OPT-Tree", elem_id="compare-left")
        right_plot = gr.Plot(tree_figure(None), label="Static tree", elem_id="compare-right-plot")
    return dict(traces=gr.State({}), statics=statics, extras=extras, run=run_btn, stop=stop_btn, status=status,
                table=table, chart=chart, cost=cost_plot, measure=measure_btn, step=step, right=right,
                left_plot=left_plot, right_plot=right_plot)


def run_compare(page: Page, parts: dict, service, request: gr.Request, model, prompt, *values):
    """AR, OPT-Tree, each chosen static tree and each chosen extra row, one after another through the lane."""
    *values, chosen, extras, history = values
    # Unknown names from the API are dropped; with none left, the binary tree is the comparison.
    chosen = [m for m in (chosen or []) if m in {v for _, v in STATIC_CHOICES}] or ["binary"]
    base = {**settings_from(dict(zip(page.settings, values))), "retrieval": "off"}
    jobs = [(m, model, {**base, "method": m}) for m in ["ar", "opt-tree", *chosen]]
    extra_jobs, skipped = extra_rows(service.registry, model, base, extras)
    jobs += extra_jobs
    methods = [name for name, _, _ in jobs]
    traces: dict[str, dict] = {}
    status = parts["status"]
    for meth, pair_id, settings in jobs:
        try:
            # Timed side by side: no theory rows (they cost each node's whole draft distribution).
            for up in service.stream(pair_id, prompt, settings, session=session_of(request), record_target=False):
                if up.state == "queued":
                    yield {status: f"⏳ {meth}: waiting for the model, position **{up.position}**…"}
                elif up.state == "running":
                    yield {status: f"Running **{meth}** ({len(traces) + 1}/{len(methods)}): "
                                   f"{up.trace['summary']['new_tokens']} tokens…"}
                else:
                    traces[meth] = up.trace
        except RunError as exc:
            yield {status: f"⚠️ {meth}: {md_safe(exc.message)}"}
            return
    history = ((history or []) + [ea_points(t) for m, t in traces.items() if m != "ar"])[-HISTORY_RUNS:]
    fig, r_text = history_views(history)
    longest = max(steps_of(t) for m, t in traces.items() if m != "ar")
    right = chosen[0]
    left_fig, right_fig = panels(traces, right, 1)
    rights = [c for c in STATIC_CHOICES if c[1] in chosen] + [(m, m) for m in methods[2 + len(chosen):]]
    note = f" Not offered for this pair: {', '.join(skipped)}." if skipped else ""
    yield {parts["traces"]: traces, status: "Done. Timings share this machine with other visitors." + note,
           parts["table"]: compare_rows(traces), parts["chart"]: compare_chart(traces),
           parts["cost"]: compare_cost(traces),
           parts["step"]: gr.Slider(minimum=1, maximum=max(longest, 2), value=1, step=1),
           parts["right"]: gr.Dropdown(choices=rights, value=right),
           parts["left_plot"]: left_fig, parts["right_plot"]: right_fig,
           page.history: history, page.ea_plot: fig, page.ea_text: r_text}


def measure(service, model):
    """Measure this machine's cost curve for the pair again (through the model lane: seconds)."""
    try:
        curve = service.cost_curve(model, refresh=True)
    except RunError as exc:
        return gr.skip(), f"⚠️ {md_safe(exc.message)}"
    return cost_figure(curve), f"Measured again ({curve.get('measured_utc', '')}): new runs size their trees from this."


def extra_rows(registry, model, base: dict, extras) -> tuple[list, list[str]]:
    """(row name, pair id, settings) for each chosen extra the allow-list offers, and the ones it does not."""
    wanted = [v for _, v in EXTRA_CHOICES if v in (extras or [])]
    try:
        entry = registry.get(model)
    except OptTreeError:
        return [], wanted
    jobs, skipped = [], []
    for extra in wanted:
        if extra == "opt-tree + retrieval":
            if entry.retrieval:
                jobs.append((extra, model, {**base, "method": "opt-tree", "retrieval": "on"}))
            else:
                skipped.append(extra)
            continue
        other = registry.drafting_for(entry.target, (extra,))
        if other and other[0].id == model:
            continue             # the Explore pair drafts this way already: its OPT-Tree row is this row
        if other:
            jobs.append((f"{extra} (opt-tree)", other[0].id, {**base, "method": "opt-tree"}))
        else:
            skipped.append(extra)
    return jobs, skipped


def panels(traces: dict, right: str, step):
    """OPT-Tree on the left and one static tree on the right, both at the same step."""
    figs = []
    for meth in ("opt-tree", right):
        tr = traces.get(meth) if traces else None
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


def wire(page: Page, parts: dict, service, stop, lane: dict) -> None:
    inputs = [page.model, page.prompt, *page.settings.values(), parts["statics"], parts["extras"], page.history]
    outputs = [parts[k] for k in ("traces", "status", "table", "chart", "cost", "step", "right", "left_plot",
                                  "right_plot")]
    outputs += [page.history, page.ea_plot, page.ea_text]
    parts["run"].click(bind(run_compare, page, parts, service), inputs, outputs, api_name="compare", **lane)
    parts["stop"].click(stop, None, parts["status"], queue=False, api_visibility="private")
    parts["measure"].click(bind(measure, service), [page.model], [parts["cost"], parts["status"]],
                           api_visibility="private", **lane)
    for evt in (parts["step"].input, parts["right"].input):
        evt(panels, [parts["traces"], parts["right"], parts["step"]], [parts["left_plot"], parts["right_plot"]],
            trigger_mode="always_last", **PRIVATE)
