"""Export / Import: save the Explore run as its trace JSON (or a standalone HTML page that opens at the
selected step), or replay a saved trace without a model. An import puts the run back on the page as if
it had just run: its prompt, pair and every setting (from the trace's meta) in the controls, its steps
in Explore and the E(A)-vs-A plot."""

from __future__ import annotations

import os
import tempfile

import gradio as gr

from opttree.config import MODEL_DRAFTERS, SELF_DRAFT, SETTING_NAMES
from opttree.errors import OptTreeError
from opttree.models.bundled import is_bundled
from opttree.trace_file import dumps, loads
from ui import explore, links
from ui.common import PRIVATE, Page, bind, clamp, last_tree_step, steps_of
from ui.controls import checked_settings, control_values
from viz import lessons
from viz.drafters import drafter_kind
from viz.html_export import standalone_html
from viz.style import md_text

EXPORT_DIR = os.path.join(tempfile.gettempdir(), "opttree-exports")


def build() -> dict:
    gr.Markdown("Save the current Explore run as its trace JSON, or load a saved trace: it replays "
                "in Explore without running any model.")
    with gr.Row():
        export_btn = gr.Button("Export current run", elem_id="export")
        export_file = gr.File(label="Trace JSON", interactive=False, elem_id="export-file")
    with gr.Row():
        html_btn = gr.Button("Export as a standalone HTML page", elem_id="export-html")
        html_file = gr.File(label="HTML (opens offline in any browser: slides, handouts)", interactive=False,
                            elem_id="export-html-file")
    export_status = gr.Markdown("", elem_id="export-status")
    import_file = gr.File(label="Import a trace (.json)", file_types=[".json"], type="binary", elem_id="import-file")
    import_status = gr.Markdown("", elem_id="import-status")
    return dict(export=export_btn, export_file=export_file, export_html=html_btn, html_file=html_file,
                export_status=export_status, import_file=import_file, import_status=import_status)


def _write(trace, suffix: str, text: str) -> str:
    os.makedirs(EXPORT_DIR, exist_ok=True)
    fd, path = tempfile.mkstemp(prefix=f"opttree-{trace['meta'].get('method', 'run')}-", suffix=suffix,
                                dir=EXPORT_DIR)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    return path


NOTHING = "⚠️ There is no run to export yet: run a prompt in Explore, or import a trace, first."


def export(trace) -> tuple[str | None, str]:
    """(the run's trace file, or None; what the status line says)."""
    return _exported(trace, ".json", lambda: dumps(trace))


def export_html(trace, colour, step) -> tuple[str | None, str]:
    """The run as one HTML page that opens at the step selected in Explore, and the status line."""
    return _exported(trace, ".html", lambda: standalone_html(trace, colour, start=clamp(trace, step)))


def _exported(trace, suffix: str, body) -> tuple[str | None, str]:
    """The file `body()` writes for a run, and an empty status; with no run, no file and NOTHING."""
    if not steps_of(trace):
        return None, NOTHING
    return _write(trace, suffix, body()), ""


def model_of(page: Page, registry, meta: dict) -> str | None:
    """The allow-listed pair an imported run was made with: the id the page recorded, else the one
    entry with the same target (the bundled one also by its hub stand-in's label, a Space's run) and drafter
    whose draft has the recorded name, each by the public name a served run records (serve/allow_list.py);
    None when none is."""
    offered = {value for _, value in page.model.choices}
    if meta.get("model") in offered:
        return meta["model"]
    draft, drafter, target = str(meta.get("draft") or ""), drafter_kind(meta), str(meta.get("target") or "")
    found = [e.id for e in registry.entries.values()
             if e.id in offered and (e.public_target == target or (is_bundled(e.target) and is_bundled(target)))
             and (e.drafter == drafter or (e.drafter == SELF_DRAFT and draft == SELF_DRAFT))
             and (e.drafter not in MODEL_DRAFTERS or e.public_draft == draft)]
    return found[0] if len(found) == 1 else None


def do_import(page: Page, parts: dict, registry, data, colour, present, history):
    """Validate an uploaded trace and replay it in Explore as if it had just run there: the controls
    take its prompt, pair and settings (so Copy link and Run point at it), E(A) vs A takes its steps.
    The box is emptied for the next file."""
    box, status = parts["import_file"], parts["import_status"]
    if data is None:
        return {status: "", box: None}
    try:
        trace = loads(bytes(data))
    except OptTreeError as exc:
        return {status: f"⚠️ {md_text(str(exc))}", box: None}
    if not trace["steps"]:     # nothing to replay: the run on screen stays
        return {status: "⚠️ This trace has no steps: nothing to replay (the run on screen is kept).", box: None}
    meta, prompt = trace["meta"], str(trace.get("prompt", ""))
    method = str(meta.get("method", "?"))
    # The tree temperature asked: 0 (the draft's fitted value) where the run asked for it, else the one used (a
    # sampled run of an older release recorded a setting it ignored, drafting at 1).
    tree_t = 0.0 if meta.get("tree_temperature_asked") == 0 else meta.get("tree_temperature")
    asked = {**meta, "retrieval": meta.get("retrieval_asked", meta.get("retrieval")), "tree_temperature": tree_t}
    settings = checked_settings(asked)
    # A command-line run may use values past the page's controls (512 new tokens): named, not silently kept out.
    past = [f"{name} {md_text(str(asked[name]))}" for name in SETTING_NAMES
            if asked.get(name) is not None and name not in settings]
    controls = control_values(settings)
    model = model_of(page, registry, meta)
    out = {box: None, **explore.shown_run(page, trace, last_tree_step(trace), colour, present),   # as a run lands
           **explore.with_history(page, history, trace),
           **{page.settings[name]: value for name, value in controls.items()},
           page.status: "Replaying an imported trace (no model involved).",
           **explore.now_showing(page, links.ran_with(model or registry.default, prompt, controls),
                                 imported_lesson(prompt, model, settings, registry.default), ended=True),
           status: f"Loaded {article(method)} {md_text(method)} run{drafted_by(meta)} with {steps_of(trace)} steps: "
                   "its prompt and "
                   "settings are in Explore's controls; open Explore to replay it."
                   + (f" Past what the controls take, left as they were: {', '.join(past)}." if past else "")}
    if prompt.strip():      # a run decoded from token ids has no prompt text: the box keeps its own
        out[page.prompt] = prompt
    if model:
        out[page.model] = model
    return out


def imported_lesson(prompt: str, model, settings: dict, default_model) -> int | None:
    """The lesson an imported run is: its meta records the tree temperature the draft used, which is
    the lesson's own or (for a lesson at 0) the draft's fitted value."""
    found = lessons.lesson_of(prompt, model, settings, default_model)
    if found is None:
        found = lessons.lesson_of(prompt, model, {**settings, "tree_temperature": 0.0}, default_model)
    return found


def import_outputs(page: Page, parts: dict) -> list:
    return [parts["import_file"], parts["import_status"], page.prompt, page.model, *page.settings.values(),
            page.trace, page.step, *page.run_views, page.status, page.history, page.ea_plot, page.ea_text,
            page.ran, page.link_box, page.caption]


def no_files() -> tuple[None, None]:
    """Both export boxes emptied (the shown run changed: what they offer is the run before)."""
    return None, None


def wire(page: Page, parts: dict, registry, tab) -> None:
    # "No run to export yet" holds until the tab is opened again (a run may exist by then).
    tab.select(lambda: "", None, parts["export_status"], **PRIVATE)
    # A file exported before names the run before: a new run or an import takes both away. They listen to
    # `page.ran` (a run's prompt, pair and settings), not to the trace: Gradio hashes a listened state at
    # every event that outputs it, and a live run outputs its trace (megabytes) at every redraw.
    page.ran.change(no_files, None, [parts["export_file"], parts["html_file"]], **PRIVATE)
    parts["export"].click(export, page.trace, [parts["export_file"], parts["export_status"]], **PRIVATE)
    # An HTML export builds every step's figure at once (an imported trace near the upload limit: tens of seconds
    # and gigabytes), so exports wait for each other, in a queue of their own (never behind a model run).
    parts["export_html"].click(export_html, [page.trace, page.colour, page.step],
                               [parts["html_file"], parts["export_status"]], api_visibility="private",
                               concurrency_id="export-html", concurrency_limit=1)
    box = parts["import_file"]
    box.upload(bind(do_import, page, parts, registry), [box, page.colour, page.present, page.history],
               import_outputs(page, parts), **PRIVATE)


def drafted_by(meta: dict) -> str:
    """" (drafter: lookup)" for a run that drafted, naming its drafter; "" for AR (no drafter)."""
    drafter = drafter_kind(meta)
    return "" if drafter in ("", "none") else f" (drafter: {md_text(drafter)})"


def article(word: str) -> str:
    """'an' before a method name read with a vowel sound (an opt-tree, an AR, an eagle-static run), else 'a'."""
    return "an" if word[:1].lower() in "aeio" else "a"
