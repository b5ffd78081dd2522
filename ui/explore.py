"""Explore: run one prompt live, then scrub its steps (tree, text, metrics, why this shape)."""

from __future__ import annotations

import time

import gradio as gr

from opttree.serve.service import RunError
from ui.common import (
    HISTORY_RUNS,
    PRIVATE,
    TOKEN_CLICK_JS,
    Page,
    bind,
    clamp,
    history_views,
    md_safe,
    run_views,
    session_of,
    slider_update,
    step_views,
    steps_of,
)
from ui.controls import FIXED, NODES_MODE, mode_for, settings_controls, settings_from
from viz import lessons
from viz.metrics import step_metrics
from viz.step_charts import accept_bars, ea_points, why_shape
from viz.style import COLOUR_MODES
from viz.text_view import text_html
from viz.tree_figure import tree_figure


def build(page: Page, registry) -> dict:
    """The Explore tab's components; fills the shared ones into `page`."""
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            page.prompt = gr.Textbox(label="Prompt", value=lessons.PRESETS[1]["prompt"], lines=3, max_lines=8,
                                     elem_id="prompt")
            page.model = gr.Dropdown(registry.choices(), value=registry.default, label="Model pair", elem_id="model")
            page.settings = settings_controls()
            with gr.Row():
                run_btn = gr.Button("Run", variant="primary", elem_id="run")
                stop_btn = gr.Button("Stop", variant="stop", elem_id="stop")
                link_btn = gr.Button("🔗 Copy link", size="sm", elem_id="copy-link")
            link_box = gr.Textbox(label="Link to this prompt, these settings and this step (for a slide)",
                                  visible=False, buttons=["copy"], elem_id="link")
            page.status = gr.Markdown("Ready.", elem_id="status")
            gr.Markdown("**One-click lessons** (details in the Learn tab):")
            presets = [gr.Button(p["name"], size="sm", elem_id=f"preset-{i}") for i, p in enumerate(lessons.PRESETS)]
        with gr.Column(scale=3):
            tree_plot = gr.Plot(tree_figure(None), label="Draft tree of the selected step", elem_id="tree-plot")
            page.colour = gr.Radio([(label, key) for key, label in COLOUR_MODES.items()], value="log_p_hat",
                                   label="Colour nodes by", elem_id="colour", container=False)
            with gr.Row(equal_height=True):
                prev_btn = gr.Button("◀ Prev", size="sm", scale=0, min_width=80, elem_id="prev")
                page.step = gr.Slider(1, 2, value=1, step=1, label="Step", interactive=False, elem_id="step", scale=4)
                next_btn = gr.Button("Next ▶", size="sm", scale=0, min_width=80, elem_id="next")
                play_btn = gr.Button("▶ Play", size="sm", scale=0, min_width=80, elem_id="play")
                pause_btn = gr.Button("❚❚ Pause", size="sm", scale=0, min_width=80, elem_id="pause")
            gr.Markdown("Keys: **←** / **→** step · **Space** play / pause (when no text box has the focus).",
                        elem_id="keys-help")
            text_out = gr.HTML(text_html(None), js_on_load=TOKEN_CLICK_JS, elem_id="gen-text")
            with gr.Row():
                with gr.Column(scale=1):
                    metrics = gr.Markdown(step_metrics(None, None), elem_id="metrics")
                with gr.Column(scale=1):
                    page.bars = gr.Plot(accept_bars(None), label="Accepted length per step", elem_id="bars")
            why_plot = gr.Plot(why_shape(None, None), label="Why this shape", elem_id="why")
    page.views = [tree_plot, text_out, metrics, why_plot]
    return dict(run=run_btn, stop=stop_btn, link=link_btn, link_box=link_box, presets=presets, prev=prev_btn,
                next=next_btn, play=play_btn,
                pause=pause_btn, text=text_out, timer=gr.Timer(0.8, active=False))


# ---------------------------------------------------------------- model work (through the service's lane)

# A live run redraws the page at most this often. Each redraw sends three figures, and a browser
# draws them slower than a small model takes steps: unthrottled, the page fell seconds behind the
# run, so it showed "Running" for a run that had already finished and Stop came too late.
LIVE_REDRAW_S = 0.3

def run_inputs(page: Page) -> list:
    return [page.model, page.prompt, *page.settings.values(), page.history, page.colour, page.link]


def run_outputs(page: Page) -> list:
    return [page.trace, page.step, *page.run_views, page.status, page.history, page.ea_plot, page.ea_text,
            page.learn_status, page.link]


def run_explore(page: Page, service, request: gr.Request, model, prompt, *values):
    """Stream one run into the Explore views (and the Learn mirror, and the session's E(A)-vs-A plot).

    `request` comes first: Gradio passes it only to positional parameters, and the settings are variadic."""
    *values, history, colour, link = values
    settings = settings_from(dict(zip(page.settings, values)))
    drawn = 0.0
    try:
        for up in service.stream(model, prompt, settings, session=session_of(request)):
            if up.state == "queued":
                msg = f"⏳ Waiting for the model: position **{up.position}** in the queue…"
                yield {page.status: msg, page.learn_status: msg}
                continue
            if up.state == "running" and time.monotonic() - drawn < LIVE_REDRAW_S:
                continue     # the next redraw shows this step too (the trace grows in place)
            trace = up.trace
            i = steps_of(trace) - 1
            note = f"⚠️ {md_safe(up.notice)}\n\n" if up.notice else ""
            s = trace["summary"]
            verb = "Done" if up.state == "done" else "Running"
            msg = (f"{note}{verb}: step {i + 1}, {s['new_tokens']}/{settings['max_new_tokens']} "
                   f"tokens, τ = {s['tau']:.2f}")
            out = {page.trace: trace, page.step: slider_update(trace, i), page.status: msg, page.learn_status: msg,
                   **dict(zip(page.run_views, run_views(trace, i, colour)))}
            if up.state == "done":
                if (link or {}).get("step"):     # a deep link's step, once (ui/links.py)
                    i = clamp(trace, link["step"])
                    out.update({page.step: slider_update(trace, i), page.link: {},
                                **dict(zip(page.run_views, run_views(trace, i, colour)))})
                history = ((history or []) + [ea_points(trace)])[-HISTORY_RUNS:]
                fig, r_text = history_views(history)
                out.update({page.history: history, page.ea_plot: fig, page.ea_text: r_text})
            yield out
            drawn = time.monotonic()
    except RunError as exc:
        msg = f"⚠️ {md_safe(exc.message)}"
        out = {page.status: msg, page.learn_status: msg}
        if exc.trace and exc.trace.get("steps"):
            i = steps_of(exc.trace) - 1
            out.update({page.trace: exc.trace, page.step: slider_update(exc.trace, i),
                        **dict(zip(page.run_views, run_views(exc.trace, i, colour)))})
        yield out


def stop(service, request: gr.Request = None):
    # When a run was signalled, the run itself writes "Stopped." at its next step boundary;
    # writing "Stopping…" here too would race it (a late reply overwrote the final status).
    n = service.cancel_session(session_of(request))
    return gr.skip() if n else "Nothing is running."


def apply_preset(page: Page, index: int):
    """A lesson's prompt, model pair and settings (each preset names the settings it sets); its node
    budget also sets the auto/fixed switch (a fixed n moves the slider, auto leaves the slider's n alone)."""
    preset = lessons.PRESETS[index]
    values = [preset["prompt"], preset_model(page, preset)]
    for name in preset_settings(page):
        values.append(gr.skip() if name == "nodes" and not preset["nodes"] else preset[name])
    return [*values, mode_for(preset["nodes"])]


def preset_model(page: Page, preset: dict):
    """The lesson's pair (None: the allow-list's default); left as it is when this server does not offer it."""
    offered = {value for _, value in page.model.choices}
    wanted = preset.get("model") or page.model.value
    return wanted if wanted in offered else gr.skip()


def preset_settings(page: Page) -> list[str]:
    return [name for name in page.settings if name in lessons.PRESETS[0]]


def fixed_mode():
    """Moving the node slider means a fixed n."""
    return FIXED


# ---------------------------------------------------------------- pure view updates (no queue)

def show(trace, step, colour="log_p_hat"):
    i = clamp(trace, step)
    return (gr.Slider(value=i + 1), *step_views(trace, i, colour))


def prev_step(trace, step, colour):
    return show(trace, clamp(trace, step), colour)          # 1-based value → previous 0-based index + 1


def next_step(trace, step, colour):
    return show(trace, clamp(trace, step) + 2, colour)


def jump(trace, colour, evt: gr.EventData):
    data = getattr(evt, "_data", None) or {}
    return show(trace, (data.get("step", 0) if isinstance(data, dict) else 0) + 1, colour)


def play(trace, step, colour):
    start = 1 if clamp(trace, step) >= steps_of(trace) - 1 else step
    return (gr.Timer(active=steps_of(trace) > 1), *show(trace, start, colour))


def tick(trace, step, colour):
    i = clamp(trace, step)
    if i >= steps_of(trace) - 1:
        return (gr.Timer(active=False), *show(trace, i + 1, colour))
    return (gr.Timer(active=True), *show(trace, i + 2, colour))


def wire(page: Page, parts: dict, service, lane: dict) -> None:
    inputs, outputs = run_inputs(page), run_outputs(page)
    runner = bind(run_explore, page, service)
    parts["run"].click(runner, inputs, outputs, api_name="run", **lane)
    parts["stop"].click(bind(stop, service), None, page.status, queue=False, api_name="stop")
    scrub = [page.step, *page.views]
    at = [page.trace, page.step, page.colour]
    page.step.input(show, at, scrub, trigger_mode="always_last", **PRIVATE)
    page.colour.input(show, at, scrub, **PRIVATE)
    parts["prev"].click(prev_step, at, scrub, **PRIVATE)
    parts["next"].click(next_step, at, scrub, **PRIVATE)
    parts["text"].click(jump, [page.trace, page.colour], scrub, **PRIVATE)
    timer = parts["timer"]
    parts["play"].click(play, at, [timer, *scrub], **PRIVATE)
    parts["pause"].click(lambda: gr.Timer(active=False), None, timer, **PRIVATE)
    timer.tick(tick, at, [timer, *scrub], **PRIVATE)
    page.settings["nodes"].input(fixed_mode, None, page.settings[NODES_MODE], **PRIVATE)


def wire_presets(page: Page, buttons: list, service, lane: dict) -> None:
    """Each lesson button (Explore's and Learn's) sets the prompt and its settings, then runs."""
    targets = [page.prompt, page.model, *(page.settings[name] for name in preset_settings(page)),
               page.settings[NODES_MODE]]
    runner = bind(run_explore, page, service)
    for i, btn in enumerate(buttons):
        k = i % len(lessons.PRESETS)
        btn.click(bind(apply_preset, page, k), None, targets, **PRIVATE).then(
            runner, run_inputs(page), run_outputs(page), api_visibility="private", **lane)
