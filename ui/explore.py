"""Explore: run one prompt or lesson live, then scrub its steps (tree, text, metrics, why this shape).

A lesson's run shows the lesson's caption above the tree; presenter mode (a toggle, or `?present=1`)
lays the step out on one projector screen in larger type."""

from __future__ import annotations

import time

import gradio as gr

from opttree.errors import BadInput
from opttree.serve.service import RunError
from ui import links
from ui.common import (
    HISTORY_RUNS,
    PRIVATE,
    SCRUB,
    STOP_EVENT,
    TOKEN_CLICK_JS,
    Page,
    bind,
    clamp,
    history_views,
    last_tree_step,
    run_views,
    session_of,
    slider_update,
    step_views,
    steps_of,
)
from ui.controls import FIXED, NODES_MODE, checked_controls, mode_for, raw_text, settings_controls, settings_from
from viz import lessons
from viz.metrics import step_metrics
from viz.step_charts import accept_bars, ea_points, why_shape
from viz.style import COLOUR_MODES, md_text
from viz.text_view import text_html
from viz.tree_figure import TREE_NAME, step_title, tree_figure


def build(page: Page, registry) -> dict:
    """The Explore tab's components; fills the shared ones into `page`.

    Layout: the prompt, Run and the lessons (#controls-col), the step (#step-col), then the model pair and
    the settings with short hints (#settings-col): one above the other on a narrow page, so the tree follows
    Run there, and from 1024 px on the page's stylesheet sets the settings below the lessons in the left
    column, beside the step. The step's view is one row: the lesson's caption, the tree and its colour switch
    (#tree-col), then the scrubber, the text and the step's metrics (#side-col), which the page's
    stylesheet puts below the tree, or beside it in presenter mode (`body.presenter`)."""
    with gr.Row(elem_id="explore-row"):
        with gr.Column(scale=1, min_width=300, elem_id="controls-col"):
            page.prompt = gr.Textbox(label="Prompt", value=lessons.PRESETS[1]["prompt"], lines=2, max_lines=8,
                                     elem_id="prompt")
            with gr.Row(elem_id="run-row"):
                run_btn = gr.Button("Run", variant="primary", elem_id="run", min_width=70)
                stop_btn = gr.Button("Stop", variant="stop", elem_id="stop", min_width=70)
                link_btn = gr.Button("🔗 Copy link", elem_id="copy-link", min_width=110)
            page.link_box = gr.Textbox(label=links.LABEL,
                                       visible=False, buttons=["copy"], elem_id="link")
            page.status = gr.Markdown("Ready.", elem_id="status")
            gr.Markdown("**One-click lessons** (each sets the prompt and settings, then runs):",
                        elem_id="lessons-head")
            with gr.Column(elem_id="lessons"):
                presets = [gr.Button(p["name"], size="sm", elem_id=f"preset-{i}", min_width=0)
                           for i, p in enumerate(lessons.PRESETS)]
        with gr.Column(scale=3, elem_id="step-col"):
            parts = step_view(page)
        with gr.Column(scale=1, min_width=300, elem_id="settings-col"):
            page.model = gr.Dropdown(registry.choices(), value=registry.default, label="Model pair", elem_id="model")
            page.settings = settings_controls()
    return dict(run=run_btn, stop=stop_btn, link=link_btn, presets=presets, **parts,
                timer=gr.Timer(0.8, active=False))


def step_view(page: Page) -> dict:
    """The selected step: caption, tree, scrubber, text and metrics; then the run's charts."""
    with gr.Row(elem_id="step-view"):
        with gr.Column(scale=3, min_width=320, elem_id="tree-col"):
            with gr.Row(elem_id="caption-row", equal_height=True):
                page.caption = gr.Markdown("", elem_id="lesson-caption", visible=False)
                page.present = gr.Checkbox(False, label="Presenter mode", elem_id="present", container=False,
                                           scale=0, min_width=150)
            tree_plot = gr.Plot(tree_figure(None), label=TREE_NAME, elem_id="tree-plot")
            # In the page but never shown: the tree's title while the view is pinned (TITLE_JS writes it in)
            page.tree_title = gr.Textbox("", visible="hidden", elem_id="tree-title")
            page.colour = gr.Radio([(label, key) for key, label in COLOUR_MODES.items()], value="log_p_hat",
                                   label="Colour nodes by", elem_id="colour", container=False)
        with gr.Column(scale=2, min_width=300, elem_id="side-col"):
            with gr.Row(equal_height=True, elem_id="scrubber"):
                prev_btn = gr.Button("◀ Prev", size="sm", scale=0, min_width=70, elem_id="prev")
                page.step = gr.Slider(1, 2, value=1, step=1, label="Step", interactive=False, elem_id="step",
                                      scale=4, min_width=120)
                next_btn = gr.Button("Next ▶", size="sm", scale=0, min_width=70, elem_id="next")
                play_btn = gr.Button("▶ Play", size="sm", scale=0, min_width=70, elem_id="play")
                pause_btn = gr.Button("❚❚ Pause", size="sm", scale=0, min_width=70, elem_id="pause", visible=False)
            gr.Markdown("Keys: **←** / **→** step · **Space** play / pause (unless a text box, slider or menu has "
                        "the focus). In the text below, **←** / **→** move between tokens and **Enter** shows a "
                        "token's step.", elem_id="keys-help")
            text_out = gr.HTML(text_html(None), js_on_load=TOKEN_CLICK_JS, elem_id="gen-text")
            metrics = gr.Markdown(step_metrics(None, None), elem_id="metrics")
    with gr.Row():     # side by side where both fit 320 px, one above the other on a narrower page
        page.bars = gr.Plot(accept_bars(None), label="Accepted length per step", elem_id="bars", min_width=320)
        why_plot = gr.Plot(why_shape(None, None), label="Why this shape", elem_id="why", min_width=320)
    page.views = [tree_plot, text_out, metrics, why_plot]
    return dict(prev=prev_btn, next=next_btn, play=play_btn, pause=pause_btn, text=text_out)


# ---------------------------------------------------------------- model work (through the service's lane)

SCOPE = "explore"       # the runs Explore's Stop ends (Learn's lessons run here too)
# A live run redraws the page at most this often, and its live updates leave out the accepted-length
# bars (drawn once the run ends). A redraw keeps a 2-core machine's browser busy ~0.28 s (Chromium's
# long tasks over a 90-step run), so a redraw every 0.3 s saturated it: on a loaded machine the page
# fell ever further behind the run, and a click on Stop waited behind the queued redraws.
LIVE_REDRAW_S = 1.0


def run_inputs(page: Page) -> dict:
    """A run's inputs by name, in `run_explore`'s order; each name is its parameter's in the /run API."""
    return {"model": page.model, "prompt": page.prompt, **page.settings, "history": page.history,
            "colour": page.colour, "present": page.present, "link": page.link}


def run_outputs(page: Page) -> list:
    return [page.trace, page.step, *page.run_views, page.status, page.history, page.ea_plot, page.ea_text,
            page.learn_status, page.link, page.caption, page.ran, page.link_box, page.tree_title]


def caption_update(index: int | None):
    """The lesson's caption above the tree, or none (a run that is no lesson)."""
    text = lessons.caption_markdown(index)
    return gr.Markdown(text, visible=bool(text))


def run_explore(page: Page, service, request: gr.Request, model, prompt, *values):
    """Stream one run into the Explore views (and the Learn mirror, and the session's E(A)-vs-A plot).

    `request` comes first: Gradio passes it only to positional parameters, and the settings are variadic.
    The run replaces the one on screen when its first step is drawn (`now_showing`): its lesson caption,
    empty committed-token bars until it ends, what Copy link writes. A refused run changes none of them."""
    *values, history, colour, present, link = values
    prompt = raw_text(prompt)
    try:      # the controls' raw values: a value typed past a slider's end is refused here, with its name
        controls = checked_controls(dict(zip(page.settings, values)))
    except BadInput as exc:
        refused = f"⚠️ {md_text(str(exc))}"
        yield {page.status: refused, page.learn_status: refused}
        return
    settings = settings_from(controls)
    lesson = lessons.lesson_of(prompt, model, settings, service.registry.default)
    # The Learn tab's live tree says the lesson too, above the run's status.
    said = lessons.caption_markdown(lesson)
    learn = (lambda msg: f"{said}\n\n{msg}") if said else (lambda msg: msg)
    # Said at once, in Explore too: the last run's "Done" would otherwise stand until the first step (a
    # model's first load takes a minute). The pinned title is cleared: Gradio's change event fires only for
    # a new value, and a run like the last one, pinned at the same step, would send the title it left.
    yield {page.status: "Starting…", page.learn_status: learn("Starting…"), page.tree_title: ""}
    ran = links.ran_with(model, prompt, controls)       # Copy link's source once this run is on screen
    drawn, replaced = 0.0, {}       # `replaced`: once the run's first step is drawn (a link copied later stays)
    session = session_of(request)
    try:
        for up in service.stream(model, prompt, settings, session=session, scope=SCOPE):
            if up.state == "queued":
                msg = f"⏳ Waiting for the model: position **{up.position}** in the queue…"
                yield {page.status: msg, page.learn_status: learn(msg)}
                continue
            if up.state == "running" and time.monotonic() - drawn < LIVE_REDRAW_S:
                continue     # the next redraw shows this step too (the trace grows in place)
            trace = up.trace
            i = steps_of(trace) - 1
            note = f"⚠️ {md_text(up.notice)}\n\n" if up.notice else ""
            s = trace["summary"]
            verb = "Done" if up.state == "done" else "Running"
            msg = (f"{note}{verb}: step {i + 1}, {s['new_tokens']}/{settings['max_new_tokens']} "
                   f"tokens, τ = {s['tau']:.2f}")
            pinned = PINNED.get(session) if replaced else None
            if up.state == "running" and pinned is not None:     # scrubbed back: the view stays there
                # and only its title (the run's step count) changes: the figure is not sent again
                yield {page.status: msg, page.learn_status: learn(msg), page.trace: trace,
                       page.step: gr.Slider(maximum=max(steps_of(trace), 2), interactive=True),
                       page.tree_title: step_title(trace, pinned)}
                drawn = time.monotonic()
                continue
            out = {page.status: msg, page.learn_status: learn(msg),
                   **shown_run(page, trace, i, colour, present, bars=up.state == "done"),
                   **(replaced or now_showing(page, ran, lesson, up.state == "done"))}
            if not replaced and session:        # from its first drawn step on, scrubbing back pins the view
                LIVE.add(session)
                PINNED.pop(session, None)
            replaced = {page.ran: ran}
            if up.state == "done":
                if (link or {}).get("step"):     # a deep link's step, once (ui/links.py)
                    out.update({page.link: {}, **shown_run(page, trace, clamp(trace, link["step"]), colour, present)})
                elif pinned is not None:
                    out.update(shown_run(page, trace, pinned, colour, present))
                elif last_tree_step(trace) != i:
                    out.update(shown_run(page, trace, last_tree_step(trace), colour, present))
                out.update(with_history(page, history, trace))
            yield out
            drawn = time.monotonic()
    except RunError as exc:
        msg = f"⚠️ {md_text(exc.message)}"
        out = {page.status: msg, page.learn_status: learn(msg)}
        if exc.trace and exc.trace.get("steps"):
            at = PINNED.get(session, steps_of(exc.trace) - 1) if replaced else steps_of(exc.trace) - 1
            out.update({**shown_run(page, exc.trace, at, colour, present),
                        **(replaced or now_showing(page, ran, lesson, True))})
        yield out
    finally:
        LIVE.discard(session)
        PINNED.pop(session, None)


def shown_run(page: Page, trace: dict, i: int, colour: str, present, bars: bool = True) -> dict:
    """A run's views at step `i` (0-based): the trace, the scrubber and every view of it (the
    accepted-length bars only with `bars`)."""
    return {page.trace: trace, page.step: slider_update(trace, i),
            **dict(zip(page.run_views, run_views(trace, i, colour, bool(present), bars)))}


def now_showing(page: Page, ran: dict, lesson: int | None, ended: bool) -> dict:
    """A run that replaces the one on screen, at its first drawn step: Copy link writes what it ran with
    (`links.ran_with`), a link copied before (it names the other run) is hidden, the caption is this run's
    lesson's (or none), and unless the run `ended` already (its own bars come with it) the committed-token
    bars are emptied until it ends. A refused run never gets here: the page still shows, and links to,
    the run before it."""
    out = {page.ran: ran, page.link_box: gr.Textbox(value="", visible=False), page.caption: caption_update(lesson)}
    return out if ended else {**out, page.bars: accept_bars(None)}


def with_history(page: Page, history, trace: dict) -> dict:
    """A finished (or imported) run added to the session's E(A)-vs-A plot."""
    history = ((history or []) + [ea_points(trace)])[-HISTORY_RUNS:]
    fig, r_text = history_views(history)
    return {page.history: history, page.ea_plot: fig, page.ea_text: r_text}


def stop(service, scope: str, request: gr.Request = None):
    """A tab's Stop: the runs this session started from that tab (`scope`); another tab's run goes on.
    When a run was signalled, the run itself writes "Stopped." at its next step boundary; writing
    "Stopping…" here too would race it (a late reply overwrote the final status)."""
    if not service.cancel_session(session_of(request), scope):
        gr.Info("Nothing is running: Stop has nothing to stop.")
    return gr.skip()


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

# A live run follows its newest step until the visitor scrubs to an earlier one: then each redraw only
# lets the scrubber reach the new steps and the view stays where they put it, until they scrub to the
# newest step again or the run ends. Keyed by browser session; emptied when the session's run ends.
LIVE: set[str] = set()              # sessions with an Explore run going
PINNED: dict[str, int] = {}         # session -> the step (0-based) the visitor scrubbed to during it


def show(trace, step, colour="log_p_hat", present=False, request: gr.Request = None):
    i = clamp(trace, step)
    session = session_of(request)
    if session in LIVE:
        if i < steps_of(trace) - 1:
            PINNED[session] = i
        else:
            PINNED.pop(session, None)
    return (gr.Slider(value=i + 1), *step_views(trace, i, colour, bool(present)))


def prev_step(trace, step, colour, present, request: gr.Request = None):
    return show(trace, clamp(trace, step), colour, present, request)   # 1-based value → previous 0-based + 1


def next_step(trace, step, colour, present, request: gr.Request = None):
    return show(trace, clamp(trace, step) + 2, colour, present, request)


def jump(trace, colour, present, evt: gr.EventData, request: gr.Request = None):
    data = getattr(evt, "_data", None) or {}
    return show(trace, (data.get("step", 0) if isinstance(data, dict) else 0) + 1, colour, present, request)


def playing(on: bool) -> tuple:
    """The timer and the buttons that say whether steps play: Pause shows while they do, Play while not
    (the page's keys read which one shows: Space presses it)."""
    return gr.Timer(active=on), gr.Button(visible=not on), gr.Button(visible=on)


def play(trace, step, colour, present):
    # from the start when at or past where a finished run lands (ui/common.last_tree_step)
    start = 1 if clamp(trace, step) >= last_tree_step(trace) else step
    timer, play_btn, pause_btn = playing(steps_of(trace) > 1)
    return (timer, *show(trace, start, colour, present), play_btn, pause_btn)


def tick(trace, step, colour, present):
    i = clamp(trace, step)
    timer, play_btn, pause_btn = playing(i < steps_of(trace) - 1)
    return (timer, *show(trace, i + 1 if i >= steps_of(trace) - 1 else i + 2, colour, present), play_btn, pause_btn)


# The pinned tree's new title, written into the figures on the page (a title-only relayout, not a redraw):
# Explore's tree and the Learn tab's live tree, which shows the selected step too (drawn when the tab opens).
TITLE_JS = """(title) => {
  if (!title || !window.Plotly) return;
  for (const gd of document.querySelectorAll('#tree-plot .js-plotly-plot, #learn-plot .js-plotly-plot'))
    if (gd._fullLayout) window.Plotly.relayout(gd, {'title.text': title});
}"""

# Presenter mode is a class on the page's body (assets/app.css lays the step out on one screen with it).
PRESENT_JS = "(on) => { document.body.classList.toggle('presenter', !!on); }"


def wire(page: Page, parts: dict, service, lane: dict) -> None:
    inputs, outputs = run_inputs(page), run_outputs(page)
    runner = bind(run_explore, page, service, names=inputs)
    # preprocess=False: the run takes the controls' raw values and says which is out of range (`checked_controls`)
    parts["run"].click(runner, list(inputs.values()), outputs, api_name="run", preprocess=False, **lane)
    parts["stop"].click(bind(stop, service, SCOPE), None, page.status, api_name="stop", **STOP_EVENT)
    scrub = [page.step, *page.views]
    at = [page.trace, page.step, page.colour, page.present]
    page.step.input(show, at, scrub, trigger_mode="always_last", **SCRUB)
    page.colour.input(show, at, scrub, **SCRUB)
    page.present.change(None, page.present, None, js=PRESENT_JS)
    page.tree_title.change(None, page.tree_title, None, js=TITLE_JS)
    page.present.change(show, at, scrub, **SCRUB)
    parts["prev"].click(prev_step, at, scrub, **SCRUB)
    parts["next"].click(next_step, at, scrub, **SCRUB)
    parts["text"].click(jump, [page.trace, page.colour, page.present], scrub, **PRIVATE)
    timer = parts["timer"]
    buttons = [parts["play"], parts["pause"]]
    parts["play"].click(play, at, [timer, *scrub, *buttons], **SCRUB)
    parts["pause"].click(lambda: playing(False), None, [timer, *buttons], **PRIVATE)
    timer.tick(tick, at, [timer, *scrub, *buttons], **SCRUB)
    page.settings["nodes"].input(fixed_mode, None, page.settings[NODES_MODE], **PRIVATE)


def wire_presets(page: Page, buttons: list, service, lane: dict) -> None:
    """Each lesson button (Explore's and Learn's) sets the prompt and its settings, then runs."""
    targets = [page.prompt, page.model, *(page.settings[name] for name in preset_settings(page)),
               page.settings[NODES_MODE]]
    inputs = run_inputs(page)
    runner = bind(run_explore, page, service, names=inputs)
    for i, btn in enumerate(buttons):
        k = i % len(lessons.PRESETS)
        btn.click(bind(apply_preset, page, k), None, targets, **PRIVATE).then(
            runner, list(inputs.values()), run_outputs(page), api_visibility="private", preprocess=False, **lane)
