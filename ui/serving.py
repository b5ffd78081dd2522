"""Serving: carry a tree to a serving engine, and see what a batch does to it.

Two panels for an engineer choosing a tree for vLLM or SGLang. **Export** turns the Explore run's
trees (their most frequent shape) or a named static shape into what each engine takes: current vLLM's
chain, vLLM ≤ 0.20's `speculative_token_tree` where that vLLM can draft it, SGLang's flags
(viz/serving.py, the same strings and notes `opttree export-tree` prints). **Batching** measures
this machine's verify cost surface through the model lane (engine/batch_cost.py, cached like the cost
curve) and draws the modelled speedup over AR by tree size and batch size, said on screen to be a
model built from measurements."""

from __future__ import annotations

import gradio as gr

from opttree.engine.batch_cost import best_by_batch, model_table
from ui.common import PRIVATE, SCRUB, Page, bind, bounded
from viz.serving import (
    EXPORT_CHOICES,
    MAX_EXPORT_NODES,
    MODEL_NOTE,
    batch_summary,
    default_nodes,
    export_markdown,
    speedup_figure,
)
from viz.style import md_text

# What each engine takes, as docs/serving.md says (vLLM's speculative_token_tree: its 0.10 series to 0.20).
HINT = ("SGLang drafts a tree of a size and width given once at start-up; vLLM ≥ 0.21 verifies a chain "
        "(0.10–0.20 took a static tree). Export the shape your Explore run used, or Sequoia's optimal static "
        "tree for your draft, and see how the best tree shrinks as a server batches more sequences.")


def build() -> dict:
    gr.Markdown(HINT, elem_classes=["hint"])
    with gr.Row(equal_height=False):
        with gr.Column(scale=5, min_width=320):
            gr.Markdown("### Export the tree")
            choice = gr.Radio(EXPORT_CHOICES, value="run", label="Which tree", elem_id="export-choice")
            nodes = gr.Slider(1, MAX_EXPORT_NODES, value=25, step=1, label="Nodes n", elem_id="export-nodes")
            text = gr.Markdown("Run a tree in Explore (or import a trace), then open this tab.",
                               elem_id="export-text")
        with gr.Column(scale=6, min_width=320):
            gr.Markdown("### What batching does")
            with gr.Row():
                measure = gr.Button("Measure this machine", variant="primary", elem_id="serving-measure")
                again = gr.Button("Measure again", size="sm", elem_id="serving-again")
            status = gr.Markdown(MODEL_NOTE, elem_id="serving-status")
            plot = gr.Plot(speedup_figure([], {}), label="Modelled speedup by batch size", elem_id="serving-plot")
            summary = gr.Markdown("", elem_id="serving-summary")
    return dict(choice=choice, nodes=nodes, text=text, measure=measure, again=again, status=status, plot=plot,
                summary=summary)


def show_export(trace, choice, nodes) -> str:
    """The export panel for the shown run (pure: no model)."""
    try:
        return export_markdown(trace, choice, int(nodes))
    except ValueError as exc:       # a shape the conversions refuse (an imported trace's odd tree)
        return f"⚠️ {md_text(str(exc))}"


def export_at(trace, choice, nodes):
    """The export at a typed or dragged n, clamped to the slider's range (a typed 1000 shows 128's tree, and
    the box says 128): the event takes the raw value, which gr.Slider would refuse with a bare error."""
    n = bounded(nodes, 1, MAX_EXPORT_NODES, default_nodes(trace))
    return gr.Slider(value=n), show_export(trace, choice, n)


def on_open(trace, choice):
    """Opening the tab sizes the export at the shown run's own budget (or its median tree under auto)."""
    n = default_nodes(trace)
    return gr.Slider(value=n), show_export(trace, choice, n)


def measure_model(service, refresh: bool, model):
    """The batching model for the Explore pair: the surface measured through the model lane (cached
    after the first time), then the modelled table, its chart and its summary."""
    yield {"status": "⏳ Measuring one target forward of B sequences × T tokens for B up to 16 and T up to 64 "
                     "(a minute or so on a CPU, once per machine and pair)…"}
    try:
        got = service.serving_model(model, refresh=refresh)
    except Exception as exc:  # noqa: BLE001 (RunError carries its message; anything else is said plainly)
        yield {"status": f"⚠️ {md_text(getattr(exc, 'message', None) or exc)}"}
        return
    surface = got["surface"]
    table = model_table(surface, tuple(got["acceptance"]))
    best = best_by_batch(table)
    key = surface.get("key", {})
    where = " · ".join(str(x) for x in (key.get("device_name") or key.get("device"), key.get("dtype"),
                                         f"measured {surface.get('measured_utc', '')}") if x)
    yield {"status": MODEL_NOTE + f" Acceptance by rank: {got['acceptance_source']}.",
           "plot": speedup_figure(table, best, where), "summary": batch_summary(best)}


def _as_outputs(parts: dict, gen):
    for update in gen:
        yield {parts[k]: v for k, v in update.items()}


def run_measure(service, parts, refresh, model):
    yield from _as_outputs(parts, measure_model(service, refresh, model))


def wire(page: Page, parts: dict, tab, service, lane: dict) -> None:
    tab.select(on_open, [page.trace, parts["choice"]], [parts["nodes"], parts["text"]], **PRIVATE)
    at = [page.trace, parts["choice"], parts["nodes"]]
    parts["choice"].change(export_at, at, [parts["nodes"], parts["text"]], **SCRUB)
    parts["nodes"].input(export_at, at, [parts["nodes"], parts["text"]], trigger_mode="always_last", **SCRUB)
    outputs = [parts["status"], parts["plot"], parts["summary"]]
    for button, refresh in ((parts["measure"], False), (parts["again"], True)):
        button.click(bind(run_measure, service, parts, refresh), [page.model], outputs, api_visibility="private",
                     **lane)
