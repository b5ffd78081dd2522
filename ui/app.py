"""OPT-Tree Explorer's page: the tabs composed, the events that cross tabs, the `/generate` API, launch.

Model work goes through `opttree.serve.service.RunService` (allow-listed models, one bounded lane, limits,
cancellation, clean errors); figures come from `viz/` (never a model). View updates (scrubbing,
playing, clicking a token, importing a trace) run with `queue=False`: they never wait behind a run.
The page's stylesheet and script are files in the top-level `assets/` folder
(`opttree.paths.PAGE_ASSETS`), read when the page starts: `viz.style.PAGE_CSS` and `page_js` (with the keys,
assets/keys.js, and the tree figures' label fitting, assets/fit_labels.js, which the HTML export runs too).
"""

from __future__ import annotations

import inspect
import logging
import os
import threading
from contextlib import closing

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402 (the analytics switch must be set before gradio is imported)

from opttree import paths  # noqa: E402
from opttree.config import SETTING_NAMES, SETTINGS, python_type  # noqa: E402
from opttree.errors import OptTreeError  # noqa: E402
from opttree.serve.service import RunError, RunService  # noqa: E402
from opttree.serve.settings import ServerSettings  # noqa: E402
from ui import compare, ea_vs_a, explore, files, learn, links, serving, theory  # noqa: E402
from ui.common import PRIVATE, SCRUB, Page, bind  # noqa: E402
from viz.style import PAGE_CSS, keys_script, md_text  # noqa: E402
from viz.tree_figure import label_script  # noqa: E402

log = logging.getLogger("opttree.app")


def page_js() -> str:
    """The page's script, one function Gradio calls when the page loads: the keys and the step buttons' names
    (`viz.style.keys_script`: ← / → step and Space play / pause in Explore, the text strip and the charts'
    toolbars one Tab stop each, the text strip's live region), the tree figures' label fitting
    (`viz.tree_figure.label_script`), both of which the HTML export runs too, and assets/app.js (a run brings
    its tree into view, the charts' names)."""
    app = (paths.PAGE_ASSETS / "app.js").read_text(encoding="utf-8")
    parts = (keys_script(), label_script(), app)
    return "() => {\n" + "".join(f"({part.strip()})();\n" for part in parts) + "}"


def build_app(service: RunService, waiting_runs: int = ServerSettings.max_waiting) -> gr.Blocks:
    registry = service.registry
    try:
        _, startup_notice = registry.resolve(registry.default)
    except OptTreeError as exc:
        startup_notice = str(exc)
    # Runs waiting for the model lane wait inside the service (which reports their position and lets
    # Stop / closing the tab cancel them); Gradio's own queue holds anything beyond this.
    lane = dict(concurrency_id="model", concurrency_limit=service.lane_slots + waiting_runs,
                show_progress="minimal")   # "minimal": the tree keeps updating in view while a run streams
    page = Page()

    with gr.Blocks(title="OPT-Tree Explorer") as demo:
        page.trace, page.history, page.ran = gr.State(None), gr.State([]), gr.State({})
        gr.Markdown("# OPT-Tree Explorer\nWatch a small draft model guess a **tree** of next tokens and a "
                    "target model check them all in one pass. Press **Run**, then scrub through the steps.",
                    elem_id="page-head")
        gr.Markdown(f"⚠️ {md_text(startup_notice)}" if startup_notice else "", elem_classes=["notice"],
                    visible=bool(startup_notice), elem_id="startup-notice")
        page.link = gr.State({})
        # Tabs that do not fit a narrow screen wrap onto a second line (never behind an overflow menu).
        with gr.Tabs(elem_id="tabs", overflow_behavior="wrap") as tabs:
            with gr.Tab("Explore", id="explore"):
                explore_parts = explore.build(page, registry)
            with gr.Tab("Compare", id="compare"):
                compare_parts = compare.build()
            with gr.Tab("E(A) vs A", id="ea"):
                ea_parts = ea_vs_a.build(page)
            with gr.Tab("Theory", id="theory") as theory_tab:
                theory_parts = theory.build(page)
            with gr.Tab("Serving", id="serving") as serving_tab:
                serving_parts = serving.build()
            with gr.Tab("Learn", id="learn") as learn_tab:
                learn_parts = learn.build(page)
            with gr.Tab("Export / Import", id="files") as files_tab:
                file_parts = files.build()

        explore.wire(page, explore_parts, service, lane)
        explore.wire_presets(page, explore_parts["presets"] + learn_parts["presets"], service, lane)
        compare.wire(page, compare_parts, service, bind(explore.stop, service, compare.SCOPE), lane)
        ea_vs_a.wire(page, ea_parts)
        theory.wire(page, theory_parts, theory_tab)
        serving.wire(page, serving_parts, serving_tab, service, lane)
        wire_links(demo, page, explore_parts, tabs)
        learn.wire(page, learn_tab)
        files.wire(page, file_parts, registry, files_tab)
        # A closed tab cancels its runs (so the lane is free for the next visitor) and drops its tables.
        demo.unload(bind(on_unload, service))
        gr.api(bind(generate, service), api_name="generate", concurrency_id=lane["concurrency_id"],
               concurrency_limit=lane["concurrency_limit"])
    no_maths(demo)
    return demo


def no_maths(demo: gr.Blocks) -> None:
    """Every Markdown block renders no LaTeX. Gradio's default draws `$$…$$` with KaTeX, so a model's name
    or a trace's text holding it would show as maths; the page writes no maths of its own, so the one
    setting for all its blocks is none: the page's config reads the attribute, and a session's copy of a block
    that an event updates is built from the constructor's arguments."""
    for block in demo.blocks.values():
        if isinstance(block, gr.Markdown):
            block.latex_delimiters = block.constructor_args["latex_delimiters"] = []


def wire_links(demo, page: Page, parts: dict, tabs) -> None:
    """Deep links (ui/links.py): read on load, then run and show the step they name; Copy link."""
    settings = list(page.settings.values())
    run_flag = gr.Checkbox(False, visible=False, elem_id="link-run")
    targets = [page.link, run_flag, tabs, page.prompt, page.model, page.colour, page.present, page.caption,
               *settings]
    demo.load(bind(links.apply_link, page, tabs, page.link, run_flag), None, targets, **PRIVATE).then(
        None, run_flag, None, js=links.RUN_IF_LINKED_JS)
    parts["link"].click(bind(links.copy_link, page),
                        [page.ran, page.prompt, page.model, page.colour, page.step, page.present, *settings],
                        page.link_box, **SCRUB).then(
        lambda: gr.Textbox(visible=True), None, page.link_box, **PRIVATE).then(
        None, page.link_box, None,   # a refused link ("") leaves the clipboard as it was
        js="(link) => { if (link) navigator.clipboard?.writeText(link).catch(() => {}); }")


def on_unload(service, request: gr.Request = None):
    service.end_session(getattr(request, "session_hash", None))


def generate(service, model: str, prompt: str, *args, **kwargs) -> dict:
    """Decode `prompt` with an allow-listed model pair; the last message is the step trace (JSON).

    One parameter per decode setting (declared in opttree/config.py), in that order, each with its
    default; `seed` picks the random draw when temperature > 0 (same seed, same output) and
    `tree_temperature` rescales draft probabilities (0 = the draft's fitted value at T = 0 and a
    fixed budget, 1 under the auto budget and when sampling).
    While the run waits or decodes it streams small progress messages ({"state": "queued",
    "position"} / {"state": "running", "steps", "new_tokens"}); `client.predict` returns the final
    trace. A client that disconnects or cancels stops the run at its next step and frees its place.
    A failure is an error whose title is its kind (bad_input, model, oom, cancelled, timeout,
    internal) and whose message says what to change."""
    bound = GENERATE_SIGNATURE.bind(model, prompt, *args, **kwargs)
    bound.apply_defaults()
    settings = {name: bound.arguments[name] for name in SETTING_NAMES}
    try:
        # A generator, so that Gradio regains control after every step: when the client is gone it
        # stops iterating and closes this generator, which closes the run and frees its lane slot.
        with closing(service.stream(bound.arguments["model"], bound.arguments["prompt"], settings)) as updates:
            for update in updates:
                if update.state == "queued":
                    yield {"state": "queued", "position": update.position}
                elif update.state == "running":
                    summary = update.trace["summary"]
                    yield {"state": "running", "steps": summary["steps"], "new_tokens": summary["new_tokens"]}
                else:
                    yield update.trace
    except RunError as exc:
        raise gr.Error(exc.message, title=exc.kind, print_exception=False) from None


def _generate_signature() -> inspect.Signature:
    """(model, prompt, then every decode setting with its type and library default)."""
    P = inspect.Parameter
    params = [P("model", P.POSITIONAL_OR_KEYWORD, annotation=str),
              P("prompt", P.POSITIONAL_OR_KEYWORD, annotation=str)]
    for name in SETTING_NAMES:
        kind = python_type(name)
        params.append(P(name, P.POSITIONAL_OR_KEYWORD, default=SETTINGS[name].default,
                        annotation=float if kind is int else kind))   # JSON clients send numbers as floats
    return inspect.Signature(params, return_annotation=dict)


GENERATE_SIGNATURE = _generate_signature()
generate.__signature__ = inspect.Signature([inspect.Parameter("service", inspect.Parameter.POSITIONAL_OR_KEYWORD),
                                            *GENERATE_SIGNATURE.parameters.values()], return_annotation=dict)
generate.__annotations__ = {**{p.name: p.annotation for p in GENERATE_SIGNATURE.parameters.values()}, "return": dict}


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        settings = ServerSettings.from_env()
        service = RunService(lane_slots=settings.lane_slots, time_limit_s=settings.run_time_limit_s,
                             device=settings.device)
    except OptTreeError as exc:   # a broken model list or setting: say which and why, not a traceback
        raise SystemExit(f"error: {exc}") from None
    demo = build_app(service, settings.max_waiting)
    # Load the default pair in the background so the page is up at once and the first run is quick.
    threading.Thread(target=_preload, args=(service,), daemon=True).start()
    demo.queue(max_size=settings.queue_size)
    demo.launch(server_name=settings.server_name, server_port=settings.server_port, share=False,
                show_error=False, css=PAGE_CSS, js=page_js(), theme=gr.themes.Soft(),
                max_file_size=settings.max_upload_bytes, footer_links=["api"])


def _preload(service: RunService) -> None:
    try:
        service.preload()
    except Exception:  # noqa: BLE001 (a failed preload is retried, and reported, by the first run)
        log.exception("preloading the default model failed")

