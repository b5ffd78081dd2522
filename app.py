"""OPT-Tree Explorer: a Gradio page that runs tree speculative decoding live and teaches with each step.

Layout of responsibilities:
- `opttree.service.RunService` does all model work (allow-listed models, one bounded lane, limits,
  cancellation, clean errors);
- `viz.*` turns plain JSON traces into figures and HTML (never touches a model);
- this file only wires components to those two. View updates (scrubbing, playing, clicking a token,
  importing a trace) run with `queue=False`: they never wait behind a model run.

Run: `python app.py` → http://127.0.0.1:7860 (GRADIO_SERVER_NAME / GRADIO_SERVER_PORT override).
"""

from __future__ import annotations

import html
import logging
import os
import tempfile
import threading

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402 (the analytics switch must be set before gradio is imported)

from opttree.errors import OptTreeError  # noqa: E402
from opttree.service import RunError, RunService  # noqa: E402
from opttree.trace import dumps, loads  # noqa: E402
from viz import lessons  # noqa: E402
from viz.metrics import COMPARE_COLUMNS, compare_chart, compare_rows, step_metrics  # noqa: E402
from viz.step_charts import accept_bars, ea_points, ea_scatter, why_shape  # noqa: E402
from viz.text_view import text_html  # noqa: E402
from viz.tree_figure import step_title, tree_figure  # noqa: E402

log = logging.getLogger("opttree.app")

METHOD_CHOICES = [("OPT-Tree (adaptive)", "opt-tree"), ("Chain (one guess per depth)", "chain"),
                  ("Binary tree", "binary"), ("EAGLE-25 static tree", "eagle-static"),
                  ("EAGLE-2 dynamic tree", "eagle-dynamic")]
STATIC_CHOICES = METHOD_CHOICES[1:]
# Runs waiting for the model lane wait inside the service (which reports their position and lets
# Stop / closing the tab cancel them); Gradio's own queue holds anything beyond this.
WAITING_RUNS = int(os.environ.get("OPTTREE_MAX_WAITING", "32"))
HISTORY_RUNS = 200     # E(A)-vs-A points kept per browser session (oldest runs dropped first)
EXPORT_DIR = os.path.join(tempfile.gettempdir(), "opttree-exports")

CSS = """
.gen-text { font-family: ui-monospace, monospace; line-height: 1.9; white-space: pre-wrap; font-size: 15px; }
.gen-text .tok { cursor: pointer; border-radius: 3px; padding: 1px 0; }
.gen-text .tok.current { outline: 2px solid #d62728; }
.gen-legend { font-size: 12px; margin-bottom: 4px; }
.gen-legend .tok { padding: 1px 4px; border-radius: 3px; }
.gen-legend .hint { color: #666; margin-left: 8px; }
.notice { background: #fff4e5; border-left: 4px solid #ff9800; padding: 6px 10px; }
"""

# A delegated listener: the HTML is re-rendered on every update, the container element is not.
TOKEN_CLICK_JS = """
element.addEventListener('click', (e) => {
  const t = e.target.closest('[data-step]');
  if (t) trigger('click', {step: parseInt(t.dataset.step, 10)});
});
"""


def _steps(trace) -> int:
    return len((trace or {}).get("steps", []))


def _clamp(trace, step) -> int:
    """0-based step index from a 1-based slider value (any junk becomes a valid index)."""
    n = _steps(trace)
    try:
        i = int(float(step)) - 1
    except (TypeError, ValueError):
        i = n - 1
    return max(0, min(i, n - 1)) if n else 0


def step_views(trace, index: int):
    """What moves with the scrubber: tree, text, metrics and the why-curve.

    The accepted-length bars and the Learn tab's mirror are redrawn per run (and when the Learn tab
    opens), not per scrub: every extra Plotly figure adds visible latency to each step."""
    steps = (trace or {}).get("steps", [])
    step = steps[index] if steps else None
    title = step_title(trace, index) if steps else ""
    meta = (trace or {}).get("meta", {})
    return (tree_figure(step, title, uirevision="explore"), text_html(trace, index if steps else None),
            step_metrics(trace, index if steps else None), why_shape(step, meta))


def run_views(trace, index: int):
    """Scrubber views plus the per-run ones: accepted-length bars and the Learn tab's mirror tree."""
    steps = (trace or {}).get("steps", [])
    mirror = tree_figure(steps[index] if steps else None, step_title(trace, index) if steps else "",
                         uirevision="learn")
    return (*step_views(trace, index), accept_bars(trace, None), mirror)


def slider_update(trace, index: int):
    n = _steps(trace)
    # Gradio needs maximum > minimum; a one-step run shows 1..2 and the view clamps to step 1.
    return gr.Slider(minimum=1, maximum=max(n, 2), value=index + 1 if n else 1, step=1, interactive=n > 1)


def _settings(method, nodes, max_depth, threshold, temperature, max_new_tokens, seed=0,
              tree_temperature=0.0) -> dict:
    return dict(method=method, nodes=nodes, max_depth=max_depth, threshold=threshold,
                temperature=temperature, max_new_tokens=max_new_tokens, seed=0 if seed is None else seed,
                tree_temperature=0.0 if tree_temperature is None else tree_temperature)


def _md_safe(text: str) -> str:
    """Error messages can quote what a visitor sent (a model id, a setting): show it as plain text,
    never as Markdown or HTML."""
    escaped = html.escape(str(text), quote=False)
    return "".join("\\" + c if c in "\\`*_[]()#+!|~<>" else c for c in escaped)


def _session(request) -> str | None:
    return getattr(request, "session_hash", None) if request is not None else None


def _history_views(history):
    fig, r = ea_scatter(history or [])
    n = sum(len(h["ea"]) for h in history or [])
    text = (f"**Pearson r = {r:.3f}** over {n} steps of {len(history)} run(s)." if r is not None
            else f"{n} steps so far: run a few prompts (Explore or Compare) to fill this plot.")
    return fig, text


def _export(trace) -> str | None:
    if not trace or not trace.get("steps"):
        return None
    os.makedirs(EXPORT_DIR, exist_ok=True)
    fd, path = tempfile.mkstemp(prefix=f"opttree-{trace['meta'].get('method', 'run')}-", suffix=".json",
                                dir=EXPORT_DIR)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(dumps(trace))
    return path


def build_app(service: RunService) -> gr.Blocks:
    registry = service.registry
    try:
        _, startup_notice = registry.resolve(registry.default)
    except OptTreeError as exc:
        startup_notice = str(exc)

    with gr.Blocks(title="OPT-Tree Explorer") as demo:
        trace_st = gr.State(None)
        history_st = gr.State([])
        cmp_st = gr.State({})

        gr.Markdown("# OPT-Tree Explorer\nWatch a small draft model guess a **tree** of next tokens and a "
                    "target model check them all in one pass. Press **Run**, then scrub through the steps.")
        gr.Markdown(f"⚠️ {_md_safe(startup_notice)}" if startup_notice else "", elem_classes=["notice"],
                    visible=bool(startup_notice), elem_id="startup-notice")

        with gr.Tabs(elem_id="tabs"):
            # ---------------------------------------------------------------- Explore
            with gr.Tab("Explore", id="explore"):
                with gr.Row():
                    with gr.Column(scale=1, min_width=300):
                        prompt = gr.Textbox(label="Prompt", value=lessons.PRESETS[1]["prompt"], lines=3,
                                            max_lines=8, elem_id="prompt")
                        model = gr.Dropdown(registry.choices(), value=registry.default, label="Model pair",
                                            elem_id="model")
                        method = gr.Dropdown(METHOD_CHOICES, value="opt-tree", label="Tree method",
                                             elem_id="method")
                        nodes = gr.Slider(1, 500, value=60, step=1, label="Nodes (budget n)", elem_id="nodes")
                        max_depth = gr.Slider(1, 20, value=10, step=1, label="Max depth", elem_id="max-depth")
                        threshold = gr.Slider(0, 1, value=0.3, step=0.01, label="Threshold δ",
                                              elem_id="threshold")
                        temperature = gr.Slider(0, 2, value=0, step=0.05, label="Temperature (0 = greedy)",
                                                elem_id="temperature")
                        seed = gr.Number(0, precision=0, minimum=0, step=1, elem_id="seed",
                                         label="Seed (temperature > 0: same seed, same text; change it to redraw)")
                        max_new = gr.Slider(1, 256, value=32, step=1, label="Max new tokens", elem_id="max-new")
                        tree_temp = gr.Slider(0, 2, value=0, step=0.05, elem_id="tree-temperature",
                                              label="Tree temperature at T = 0 (0 = the draft's fitted value)",
                                              info="Divides draft logits before the tree is built: below 1 "
                                                   "sharpens q, so trees grow deeper and narrower. The "
                                                   "output never changes.")
                        with gr.Row():
                            run_btn = gr.Button("Run", variant="primary", elem_id="run")
                            stop_btn = gr.Button("Stop", variant="stop", elem_id="stop")
                        status = gr.Markdown("Ready.", elem_id="status")
                        gr.Markdown("**One-click lessons** (details in the Learn tab):")
                        explore_presets = [gr.Button(p["name"], size="sm", elem_id=f"preset-{i}")
                                           for i, p in enumerate(lessons.PRESETS)]
                    with gr.Column(scale=3):
                        tree_plot = gr.Plot(tree_figure(None), label="Draft tree of the selected step",
                                            elem_id="tree-plot")
                        with gr.Row(equal_height=True):
                            prev_btn = gr.Button("◀ Prev", size="sm", scale=0, min_width=80, elem_id="prev")
                            step_sl = gr.Slider(1, 2, value=1, step=1, label="Step", interactive=False,
                                                elem_id="step", scale=4)
                            next_btn = gr.Button("Next ▶", size="sm", scale=0, min_width=80, elem_id="next")
                            play_btn = gr.Button("▶ Play", size="sm", scale=0, min_width=80, elem_id="play")
                            pause_btn = gr.Button("❚❚ Pause", size="sm", scale=0, min_width=80, elem_id="pause")
                        text_out = gr.HTML(text_html(None), js_on_load=TOKEN_CLICK_JS, elem_id="gen-text")
                        with gr.Row():
                            with gr.Column(scale=1):
                                metrics = gr.Markdown(step_metrics(None, None), elem_id="metrics")
                            with gr.Column(scale=1):
                                bars = gr.Plot(accept_bars(None), label="Accepted length per step",
                                               elem_id="bars")
                        why_plot = gr.Plot(why_shape(None, None), label="Why this shape", elem_id="why")
                timer = gr.Timer(0.8, active=False)

            # ---------------------------------------------------------------- Compare
            with gr.Tab("Compare", id="compare"):
                gr.Markdown("Runs the Explore prompt, model and settings with **OPT-Tree**, the static trees "
                            "you pick (same node budget) and plain autoregressive decoding (AR) as the baseline.")
                with gr.Row():
                    statics = gr.CheckboxGroup(STATIC_CHOICES, value=["binary", "eagle-static"],
                                               label="Static trees to compare", elem_id="statics")
                    with gr.Column(scale=0, min_width=200):
                        cmp_btn = gr.Button("Compare", variant="primary", elem_id="compare-run")
                        cmp_stop = gr.Button("Stop", variant="stop", elem_id="compare-stop")
                cmp_status = gr.Markdown("", elem_id="compare-status")
                with gr.Row():
                    cmp_table = gr.Dataframe(headers=COMPARE_COLUMNS, value=None, interactive=False,
                                             elem_id="compare-table", scale=3)
                    cmp_chart = gr.Plot(label="τ and speedup", elem_id="compare-chart", scale=2)
                with gr.Row():
                    cmp_step = gr.Slider(1, 2, value=1, step=1, label="Step (both panels)", elem_id="compare-step",
                                         scale=3)
                    cmp_right = gr.Dropdown(STATIC_CHOICES, value="binary", label="Right panel",
                                            elem_id="compare-right", scale=1)
                with gr.Row():
                    cmp_left_plot = gr.Plot(tree_figure(None), label="OPT-Tree", elem_id="compare-left")
                    cmp_right_plot = gr.Plot(tree_figure(None), label="Static tree", elem_id="compare-right-plot")

            # ---------------------------------------------------------------- E(A) vs A
            with gr.Tab("E(A) vs A", id="ea"):
                gr.Markdown("Every step of every run in this tab's session: the tree's expected accepted length "
                            "E(A) = Σ p̂ (known before verifying) against what the target actually accepted. "
                            "A strong correlation is why maximising E(A) is a good way to pick the tree.")
                ea_md = gr.Markdown(_history_views([])[1], elem_id="ea-r")
                ea_plot = gr.Plot(_history_views([])[0], label="E(A) vs A", elem_id="ea-plot")
                ea_clear = gr.Button("Clear", size="sm")

            # ---------------------------------------------------------------- Learn
            with gr.Tab("Learn", id="learn") as learn_tab:
                with gr.Row():
                    with gr.Column(scale=2):
                        gr.Markdown(lessons.LEARN_TEXT)
                    with gr.Column(scale=3):
                        gr.Markdown("**Try a lesson** — each button sets the prompt and sliders and runs it:")
                        learn_presets = []
                        for i, p in enumerate(lessons.PRESETS):
                            with gr.Row(equal_height=True):
                                learn_presets.append(gr.Button(p["name"], size="sm", scale=1, min_width=170,
                                                               elem_id=f"learn-preset-{i}"))
                                gr.Markdown(p["lesson"], container=False)
                        learn_status = gr.Markdown("")
                        learn_plot = gr.Plot(tree_figure(None), label="Live tree (the step selected in Explore)",
                                             elem_id="learn-plot")

            # ---------------------------------------------------------------- Export / Import
            with gr.Tab("Export / Import", id="files"):
                gr.Markdown("Save the current Explore run as its trace JSON, or load a saved trace: it replays "
                            "in Explore without running any model.")
                with gr.Row():
                    export_btn = gr.Button("Export current run", elem_id="export")
                    export_file = gr.File(label="Trace JSON", interactive=False, elem_id="export-file")
                import_file = gr.File(label="Import a trace (.json)", file_types=[".json"], type="binary",
                                      elem_id="import-file")
                import_status = gr.Markdown("", elem_id="import-status")

        views = [tree_plot, text_out, metrics, why_plot]
        all_views = [*views, bars, learn_plot]
        run_inputs = [model, prompt, method, nodes, max_depth, threshold, temperature, max_new, seed, tree_temp]
        run_outputs = [trace_st, step_sl, *all_views, status, history_st, ea_plot, ea_md, learn_status]

        # ------------------------------------------------------------ model work (the lane)
        def run_explore(model, prompt, method, nodes, max_depth, threshold, temperature, max_new_tokens, seed,
                        tree_temperature, history, request: gr.Request = None):
            settings = _settings(method, nodes, max_depth, threshold, temperature, max_new_tokens, seed,
                                 tree_temperature)
            trace = None
            try:
                for up in service.stream(model, prompt, settings, session=_session(request)):
                    if up.state == "queued":
                        msg = f"⏳ Waiting for the model: position **{up.position}** in the queue…"
                        yield {status: msg, learn_status: msg}
                        continue
                    trace = up.trace
                    i = _steps(trace) - 1
                    note = f"⚠️ {_md_safe(up.notice)}\n\n" if up.notice else ""
                    s = trace["summary"]
                    verb = "Done" if up.state == "done" else "Running"
                    msg = (f"{note}{verb}: step {i + 1}, {s['new_tokens']}/{settings['max_new_tokens']} "
                           f"tokens, τ = {s['tau']:.2f}")
                    out = {trace_st: trace, step_sl: slider_update(trace, i), status: msg, learn_status: msg,
                           **dict(zip(all_views, run_views(trace, i)))}
                    if up.state == "done":
                        history = ((history or []) + [ea_points(trace)])[-HISTORY_RUNS:]
                        fig, r_text = _history_views(history)
                        out.update({history_st: history, ea_plot: fig, ea_md: r_text})
                    yield out
            except RunError as exc:
                msg = f"⚠️ {_md_safe(exc.message)}"
                out = {status: msg, learn_status: msg}
                if exc.trace and exc.trace.get("steps"):
                    i = _steps(exc.trace) - 1
                    out.update({trace_st: exc.trace, step_sl: slider_update(exc.trace, i),
                                **dict(zip(all_views, run_views(exc.trace, i)))})
                yield out

        def run_compare(model, prompt, nodes, max_depth, threshold, temperature, max_new_tokens, seed, chosen,
                        tree_temperature, history, request: gr.Request = None):
            # Unknown names from the API are dropped; with none left, the binary tree is the comparison.
            chosen = [m for m in (chosen or []) if m in dict((v, k) for k, v in STATIC_CHOICES)] or ["binary"]
            methods = ["ar", "opt-tree", *chosen]
            traces: dict[str, dict] = {}
            for meth in methods:
                settings = _settings(meth, nodes, max_depth, threshold, temperature, max_new_tokens, seed,
                                     tree_temperature)
                try:
                    for up in service.stream(model, prompt, settings, session=_session(request)):
                        if up.state == "queued":
                            yield {cmp_status: f"⏳ {meth}: waiting for the model, position **{up.position}**…"}
                        elif up.state == "running":
                            yield {cmp_status: f"Running **{meth}** ({len(traces) + 1}/{len(methods)}): "
                                               f"{up.trace['summary']['new_tokens']} tokens…"}
                        else:
                            traces[meth] = up.trace
                except RunError as exc:
                    yield {cmp_status: f"⚠️ {meth}: {_md_safe(exc.message)}"}
                    return
            history = ((history or []) + [ea_points(t) for m, t in traces.items() if m != "ar"])[-HISTORY_RUNS:]
            fig, r_text = _history_views(history)
            longest = max(_steps(t) for m, t in traces.items() if m != "ar")
            right = chosen[0]
            left_fig, right_fig = compare_panels(traces, right, 1)
            yield {cmp_st: traces, cmp_status: "Done. Timings share this machine with other visitors.",
                   cmp_table: compare_rows(traces), cmp_chart: compare_chart(traces),
                   cmp_step: gr.Slider(minimum=1, maximum=max(longest, 2), value=1, step=1),
                   cmp_right: gr.Dropdown(choices=[c for c in STATIC_CHOICES if c[1] in chosen], value=right),
                   cmp_left_plot: left_fig, cmp_right_plot: right_fig,
                   history_st: history, ea_plot: fig, ea_md: r_text}

        def stop(request: gr.Request = None):
            # When a run was signalled, the run itself writes "Stopped." at its next step boundary;
            # writing "Stopping…" here too would race it (a late reply overwrote the final status).
            n = service.cancel_session(_session(request))
            return gr.skip() if n else "Nothing is running."

        # "minimal" progress: the tree keeps updating in view while a run streams.
        lane = dict(concurrency_id="model", concurrency_limit=service.lane_slots + WAITING_RUNS,
                    show_progress="minimal")
        run_btn.click(run_explore, run_inputs + [history_st], run_outputs, api_name="run", **lane)
        stop_btn.click(stop, None, status, queue=False, api_name="stop")
        cmp_inputs = [model, prompt, nodes, max_depth, threshold, temperature, max_new, seed, statics, tree_temp,
                      history_st]
        cmp_outputs = [cmp_st, cmp_status, cmp_table, cmp_chart, cmp_step, cmp_right, cmp_left_plot,
                       cmp_right_plot, history_st, ea_plot, ea_md]
        cmp_btn.click(run_compare, cmp_inputs, cmp_outputs, api_name="compare", **lane)
        cmp_stop.click(stop, None, cmp_status, queue=False, api_visibility="private")

        def apply_preset(i):
            p = lessons.PRESETS[i]
            return (p["prompt"], p["method"], p["nodes"], p["max_depth"], p["threshold"], p["temperature"],
                    p["max_new_tokens"], p["tree_temperature"])

        preset_targets = [prompt, method, nodes, max_depth, threshold, temperature, max_new, tree_temp]
        for i, btn in enumerate(explore_presets + learn_presets):
            k = i % len(lessons.PRESETS)
            btn.click(lambda k=k: apply_preset(k), None, preset_targets, queue=False,
                      api_visibility="private").then(run_explore, run_inputs + [history_st], run_outputs,
                                                     api_visibility="private", **lane)

        # ------------------------------------------------------------ pure view updates (no queue)
        def show(trace, step):
            i = _clamp(trace, step)
            return (gr.Slider(value=i + 1), *step_views(trace, i))

        def prev_step(trace, step):
            return show(trace, _clamp(trace, step))          # 1-based value → previous 0-based index + 1

        def next_step(trace, step):
            return show(trace, _clamp(trace, step) + 2)

        def jump(trace, evt: gr.EventData):
            data = getattr(evt, "_data", None) or {}
            return show(trace, (data.get("step", 0) if isinstance(data, dict) else 0) + 1)

        scrub = [step_sl, *views]
        private = dict(queue=False, api_visibility="private")
        step_sl.input(show, [trace_st, step_sl], scrub, trigger_mode="always_last", **private)
        prev_btn.click(prev_step, [trace_st, step_sl], scrub, **private)
        next_btn.click(next_step, [trace_st, step_sl], scrub, **private)
        text_out.click(jump, [trace_st], scrub, **private)

        def play(trace, step):
            start = 1 if _clamp(trace, step) >= _steps(trace) - 1 else step
            return (gr.Timer(active=_steps(trace) > 1), *show(trace, start))

        def tick(trace, step):
            i = _clamp(trace, step)
            if i >= _steps(trace) - 1:
                return (gr.Timer(active=False), *show(trace, i + 1))
            return (gr.Timer(active=True), *show(trace, i + 2))

        play_btn.click(play, [trace_st, step_sl], [timer, *scrub], **private)
        pause_btn.click(lambda: gr.Timer(active=False), None, timer, **private)
        timer.tick(tick, [trace_st, step_sl], [timer, *scrub], **private)

        def compare_show(traces, right, step):
            return compare_panels(traces, right, step)

        for evt in (cmp_step.input, cmp_right.input):
            evt(compare_show, [cmp_st, cmp_right, cmp_step], [cmp_left_plot, cmp_right_plot],
                trigger_mode="always_last", **private)

        def mirror(trace, step):
            i = _clamp(trace, step)
            steps = (trace or {}).get("steps", [])
            return tree_figure(steps[i] if steps else None, step_title(trace, i) if steps else "",
                               uirevision="learn")

        learn_tab.select(mirror, [trace_st, step_sl], learn_plot, **private)

        ea_clear.click(lambda: ([], *_history_views([])), None, [history_st, ea_plot, ea_md], **private)

        export_btn.click(_export, trace_st, export_file, **private)

        def do_import(data):
            # The upload box is emptied after each attempt so the next file can be dropped right away.
            if data is None:
                return {import_status: "", import_file: None}
            try:
                trace = loads(bytes(data))
            except OptTreeError as exc:
                return {import_status: f"⚠️ {_md_safe(str(exc))}", import_file: None}
            i = 0
            return {import_file: None, trace_st: trace, step_sl: slider_update(trace, i),
                    **dict(zip(all_views, run_views(trace, i))),
                    status: "Replaying an imported trace (no model involved).",
                    import_status: f"Loaded a {trace['meta'].get('method', '?')} run with {_steps(trace)} steps: "
                                   "open Explore to replay it."}

        import_file.upload(do_import, import_file, [import_file, trace_st, step_sl, *all_views, status, import_status],
                           **private)

        # A closed tab cancels its runs so the lane is free for the next visitor.
        def on_unload(request: gr.Request = None):
            service.cancel_session(_session(request))

        demo.unload(on_unload)

        # The programmatic API (gradio_client): one call, one finished trace, or a clear error.
        def generate(model: str, prompt: str, method: str = "opt-tree", nodes: float = 60,
                     max_depth: float = 10, threshold: float = 0.5, temperature: float = 0.0,
                     max_new_tokens: float = 64, seed: float = 0, tree_temperature: float = 0.0) -> dict:
            """Decode `prompt` with an allow-listed model pair; returns the step trace (JSON).
            `seed` picks the random draw when temperature > 0 (same seed, same output);
            `tree_temperature` rescales draft probabilities at T = 0 (0 = the draft's fitted value)."""
            try:
                return service.run(model, prompt, _settings(method, nodes, max_depth, threshold, temperature,
                                                            max_new_tokens, seed, tree_temperature))
            except RunError as exc:
                raise gr.Error(exc.message, print_exception=False) from None

        gr.api(generate, api_name="generate", concurrency_id=lane["concurrency_id"],
               concurrency_limit=lane["concurrency_limit"])
    return demo


def compare_panels(traces: dict, right: str, step):
    """OPT-Tree on the left and one static tree on the right, both at the same step."""
    figs = []
    for meth in ("opt-tree", right):
        tr = traces.get(meth) if traces else None
        if not tr or not tr.get("steps"):
            figs.append(tree_figure(None))
            continue
        i = _clamp(tr, step)
        title = step_title(tr, i)
        try:
            asked = int(float(step))
        except (TypeError, ValueError):
            asked = i + 1
        if asked > _steps(tr):
            title += " (finished earlier)"
        figs.append(tree_figure(tr["steps"][i], title, uirevision=f"compare-{meth}"))
    return tuple(figs)


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        service = RunService(lane_slots=int(os.environ.get("OPTTREE_LANE_SLOTS", "1")))
    except OptTreeError as exc:   # a broken model list: say which file and why, not a traceback
        raise SystemExit(f"error: {exc}") from None
    demo = build_app(service)
    # Load the default pair in the background so the page is up at once and the first run is quick.
    threading.Thread(target=_preload, args=(service,), daemon=True).start()
    demo.queue(max_size=int(os.environ.get("OPTTREE_QUEUE_SIZE", "64")))
    demo.launch(server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                server_port=int(os.environ.get("GRADIO_SERVER_PORT", "7860")),
                share=False, show_error=False, css=CSS, theme=gr.themes.Soft(),
                max_file_size="64mb", footer_links=["api"])


def _preload(service: RunService) -> None:
    try:
        service.preload()
    except Exception:  # noqa: BLE001 (a failed preload is retried, and reported, by the first run)
        log.exception("preloading the default model failed")


if __name__ == "__main__":
    main()
