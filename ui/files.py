"""Export / Import: save the Explore run as its trace JSON, or replay a saved trace without a model."""

from __future__ import annotations

import os
import tempfile

import gradio as gr

from opttree.errors import OptTreeError
from opttree.trace import dumps, loads
from ui.common import PRIVATE, Page, bind, md_safe, run_views, slider_update, steps_of
from viz.html_export import standalone_html

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
    import_file = gr.File(label="Import a trace (.json)", file_types=[".json"], type="binary", elem_id="import-file")
    import_status = gr.Markdown("", elem_id="import-status")
    return dict(export=export_btn, export_file=export_file, export_html=html_btn, html_file=html_file,
                import_file=import_file, import_status=import_status)


def _write(trace, suffix: str, text: str) -> str:
    os.makedirs(EXPORT_DIR, exist_ok=True)
    fd, path = tempfile.mkstemp(prefix=f"opttree-{trace['meta'].get('method', 'run')}-", suffix=suffix,
                                dir=EXPORT_DIR)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def export(trace) -> str | None:
    if not trace or not trace.get("steps"):
        return None
    return _write(trace, ".json", dumps(trace))


def export_html(trace, colour) -> str | None:
    if not trace or not trace.get("steps"):
        return None
    return _write(trace, ".html", standalone_html(trace, colour))


def do_import(page: Page, parts: dict, data, colour):
    """Validate an uploaded trace and replay it in Explore; the box is emptied for the next file."""
    box, status = parts["import_file"], parts["import_status"]
    if data is None:
        return {status: "", box: None}
    try:
        trace = loads(bytes(data))
    except OptTreeError as exc:
        return {status: f"⚠️ {md_safe(str(exc))}", box: None}
    return {box: None, page.trace: trace, page.step: slider_update(trace, 0),
            **dict(zip(page.run_views, run_views(trace, 0, colour))),
            page.status: "Replaying an imported trace (no model involved).",
            status: f"Loaded a {trace['meta'].get('method', '?')} run with {steps_of(trace)} steps: "
                    "open Explore to replay it."}


def wire(page: Page, parts: dict) -> None:
    parts["export"].click(export, page.trace, parts["export_file"], **PRIVATE)
    parts["export_html"].click(export_html, [page.trace, page.colour], parts["html_file"], **PRIVATE)
    box = parts["import_file"]
    box.upload(bind(do_import, page, parts), [box, page.colour],
               [box, page.trace, page.step, *page.run_views, page.status, parts["import_status"]], **PRIVATE)
