"""Deep links: the page's URL can carry the tab, a lesson preset, the prompt, settings and a step.

`?preset=2&step=3` opens Explore on lesson 3 (0-based index 2, or its name), runs it and shows step
3; `?tab=learn`, `?prompt=...&method=binary&nodes=25&run=1`, `?colour=q` work the same way. Unknown
keys are ignored and bad values fall back to the page's defaults (a link from a slide must never
break the page). "Copy link" writes the current prompt, settings and step into such a URL.
"""

from __future__ import annotations

from urllib.parse import urlencode

import gradio as gr

from opttree.config import SETTING_NAMES, DecodeConfig, app_defaults
from opttree.errors import BadInput
from ui.common import Page
from viz import lessons
from viz.style import COLOUR_MODES

TABS = ("explore", "compare", "ea", "theory", "learn", "files")


def preset_index(value: str) -> int | None:
    names = [p["name"].lower() for p in lessons.PRESETS]
    if value.isdigit() and int(value) < len(lessons.PRESETS):
        return int(value)
    return names.index(value.lower()) if value.lower() in names else None


def parse_link(query: dict) -> dict:
    """What a URL's query asks for, checked: {'tab', 'prompt', 'settings', 'colour', 'model', 'step', 'run'}."""
    q = {str(k): str(v) for k, v in (query or {}).items()}
    out: dict = {"settings": {}}
    if q.get("tab") in TABS:
        out["tab"] = q["tab"]
    preset = preset_index(q.get("preset", ""))
    if preset is not None:
        p = lessons.PRESETS[preset]
        out["prompt"] = p["prompt"]
        out["settings"] = {k: p[k] for k in SETTING_NAMES if k in p}
        if p.get("model"):   # a lesson on its own pair (offered only when the server lists it)
            out["model"] = p["model"]
        out["run"] = True
        out.setdefault("tab", "explore")
    if q.get("prompt", "").strip():
        out["prompt"] = q["prompt"][:4000]
    for name in SETTING_NAMES:
        if name in q:
            trial = {**app_defaults(), **out["settings"], name: q[name]}
            try:
                out["settings"][name] = getattr(DecodeConfig(**trial), name)
            except BadInput:
                continue
    if q.get("colour") in COLOUR_MODES:
        out["colour"] = q["colour"]
    if q.get("model"):
        out["model"] = q["model"]
    if q.get("step", "").isdigit():
        out["step"] = int(q["step"])
        out["run"] = True
    if q.get("run") in ("1", "true", "yes"):
        out["run"] = True
    return out


def apply_link(page: Page, tabs, link_state, run_flag, request: gr.Request):
    """On page load: set what the URL asks for; a run it asks for is started by a click on Run
    (`RUN_IF_LINKED_JS`), so a page opened without one queues nothing."""
    link = parse_link(dict(getattr(request, "query_params", {}) or {}))
    out = {link_state: link, run_flag: bool(link.get("run"))}
    if "tab" in link:
        out[tabs] = gr.Tabs(selected=link["tab"])
    if "prompt" in link:
        out[page.prompt] = link["prompt"]
    if "model" in link and link["model"] in {v for _, v in page.model.choices}:
        out[page.model] = link["model"]
    if "colour" in link:
        out[page.colour] = link["colour"]
    for name, value in link["settings"].items():
        out[page.settings[name]] = value
    return out


# After `apply_link`: press Run when the link asks for a run (a browser-side event: it never holds
# the page's plots in a pending state the way a queued no-op model event would). It reads a hidden
# checkbox, because a gr.State never reaches the browser.
RUN_IF_LINKED_JS = "(run) => { if (run) document.getElementById('run')?.click(); }"


def link_for(base: str, tab: str, prompt: str, model: str, colour: str, step, *values) -> str:
    """A URL that reopens the page with this prompt, these settings and this step (settings left at
    their defaults are left out, so links stay short)."""
    defaults = app_defaults()
    query = {"tab": tab or "explore", "model": model, "prompt": prompt}
    query.update({k: v for k, v in zip(SETTING_NAMES, values) if v is not None and v != defaults[k]})
    if colour and colour != "log_p_hat":
        query["colour"] = colour
    if step and int(float(step)) > 1:
        query["step"] = int(float(step))
    query["run"] = 1
    return f"{base.rstrip('/')}/?{urlencode(query)}"


def page_url(request) -> str:
    """The page's own address (the browser's Referer), without its query."""
    headers = getattr(request, "headers", None) or {}
    ref = str(headers.get("referer") or headers.get("origin") or "")
    return ref.split("?", 1)[0] or "http://127.0.0.1:7860/"


def copy_link(request: gr.Request, prompt, model, colour, step, *values) -> str:
    return link_for(page_url(request), "explore", prompt, model, colour, step, *values)
