"""Deep links: the page's URL can carry the tab, a lesson, the prompt, every setting, a step and
presenter mode.

`?preset=2&step=3` opens Explore on lesson 3 (0-based index 2, or its name) at the lesson's own
settings and node budget, runs it and shows step 3; `?tab=learn`, `?prompt=...&method=binary&nodes=25`
(a fixed budget of 25: the switch moves to fixed n), `?nodes=auto`, `?colour=q`, `?present=1`
(presenter mode) work the same way, and a step or `run=1` starts the run. Unknown keys are ignored
and bad values (a setting's included, past the range its control takes: `checked_settings`) fall back to the
page's defaults (a link from a slide must never break the page).
"Copy link" writes what the shown run ran with (its pair, prompt and settings, `nodes=auto` or the
number) and the selected step into such a URL.
"""

from __future__ import annotations

from urllib.parse import quote_plus, urlencode

import gradio as gr

from opttree.config import AUTO_NODES, SETTING_NAMES, app_defaults
from opttree.errors import BadInput
from opttree.serve.settings import ServerSettings
from ui.common import Page, whole_number
from ui.controls import checked_controls, checked_settings, control_values, raw_text, settings_from
from viz import lessons
from viz.style import COLOUR_MODES

TABS = ("explore", "compare", "ea", "theory", "serving", "learn", "files")
YES = ("1", "true", "yes", "on")


def preset_index(value: str) -> int | None:
    names = [p["name"].lower() for p in lessons.PRESETS]
    index = whole_number(value)
    if index is not None and index < len(lessons.PRESETS):
        return index
    return names.index(value.lower()) if value.lower() in names else None


def parse_link(query: dict) -> dict:
    """What a URL's query asks for, checked: {'tab', 'prompt', 'settings' (the controls' values, the
    node budget's switch included), 'colour', 'model', 'step', 'run', 'lesson', 'present'}."""
    q = {str(k): str(v) for k, v in (query or {}).items()}
    out: dict = {"settings": {}}
    if q.get("tab") in TABS:
        out["tab"] = q["tab"]
    preset = preset_index(q.get("preset", ""))
    settings = {}
    if preset is not None:
        p = lessons.PRESETS[preset]
        out.update(prompt=p["prompt"], lesson=preset, run=True)
        settings = {k: p[k] for k in SETTING_NAMES if k in p}     # the lesson's own budget too
        if p.get("model"):   # a lesson on its own pair (offered only when the server lists it)
            out["model"] = p["model"]
        out.setdefault("tab", "explore")
    if q.get("prompt", "").strip():
        out["prompt"] = q["prompt"][:PROMPT_BYTES]      # no link of ours carries more (each character >= 1 byte)
    if q.get("nodes", "").strip().lower() == "auto":
        q["nodes"] = str(AUTO_NODES)
    settings.update(checked_settings({k: v for k, v in q.items() if k in SETTING_NAMES}))
    out["settings"] = control_values(settings)
    if q.get("colour") in COLOUR_MODES:
        out["colour"] = q["colour"]
    if q.get("model"):
        out["model"] = q["model"]
    step = whole_number(q.get("step", ""))
    if step is not None:
        out["step"] = step
        out["run"] = True
    if q.get("run") in YES:
        out["run"] = True
    if q.get("present") in YES:
        out["present"] = True
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
    if link.get("present"):
        out[page.present] = True
    if "lesson" in link:
        out[page.caption] = lessons.caption_markdown(link["lesson"])
    for name, value in link["settings"].items():
        out[page.settings[name]] = value
    return out


# After `apply_link`: press Run when the link asks for a run (a browser-side event: it never holds
# the page's plots in a pending state the way a queued no-op model event would). It reads a hidden
# checkbox, because a gr.State never reaches the browser.
RUN_IF_LINKED_JS = "(run) => { if (run) document.getElementById('run')?.click(); }"


# The most prompt a link carries, URL-encoded: servers read at most so much of a request's line and
# headers (uvicorn's h11: 16 kB, and the page's URL travels again as the Referer of its API calls); one
# character takes up to 9 bytes encoded. Copy link leaves a longer prompt out and says so, rather than
# linking to a run of its first part.
PROMPT_BYTES = 6000
LABEL = "Link to this run and this step (for a slide)"


def link_for(base: str, tab: str, prompt: str, model: str, colour: str, step, settings: dict,
             present: bool = False) -> str:
    """A URL that reopens the page with this prompt, these settings (a run's: `nodes` 0 is the auto
    budget, written `nodes=auto`) and this step (None: no step). The budget is always written; other
    settings left at their defaults are left out, so links stay short. A blank prompt, or one longer than a
    link carries (`fits`), is left out, and so are the run and the step: the link opens the page with these
    settings and the page's own prompt."""
    defaults = app_defaults()
    carried = str(prompt).strip() and fits(str(prompt))
    query = {"tab": tab or "explore", "model": model, **({"prompt": prompt} if carried else {})}
    nodes = settings.get("nodes", defaults["nodes"])
    query["nodes"] = "auto" if nodes == AUTO_NODES else nodes
    query.update({k: v for k, v in settings.items()
                  if k in SETTING_NAMES and k != "nodes" and v is not None and v != defaults[k]})
    if colour and colour != "log_p_hat":
        query["colour"] = colour
    if present:
        query["present"] = 1
    if "prompt" in query:        # a step or run=1 starts a run: only with the prompt it ran
        query["run"] = 1
        if step and int(float(step)) >= 1:   # step 1 too: the page otherwise lands on the run's last tree
            query["step"] = int(float(step))
    return f"{base.rstrip('/')}/?{urlencode(query)}"


def page_url(request) -> str:
    """The page's own address (the browser's Referer), without its query."""
    headers = getattr(request, "headers", None) or {}
    ref = str(headers.get("referer") or headers.get("origin") or "")
    return ref.split("?", 1)[0] or f"http://{ServerSettings.server_name}:{ServerSettings.server_port}/"


def ran_with(model, prompt, values: dict) -> dict:
    """What a run ran with (kept in `page.ran` for Copy link): its pair, prompt and settings."""
    return {"model": model, "prompt": prompt, "settings": settings_from(values)}


def copy_link(page: Page, request: gr.Request, ran, prompt, model, colour, step, present, *values) -> gr.Textbox:
    """The link to the shown run (`ran`: what it ran with) at the selected step; before any run, to
    the controls' prompt and settings (and no step: there is none to show yet)."""
    if not ran:
        prompt = raw_text(prompt)
        try:      # the controls' raw values (the event skips Gradio's check, which answers a bare "Error")
            controls = checked_controls(dict(zip(page.settings, values)))
        except BadInput as exc:
            return gr.Textbox(value="", label=f"No link: {exc}")
        ran, step = ran_with(model, prompt, controls), None
    url = link_for(page_url(request), "explore", ran["prompt"], ran["model"], colour, step, ran["settings"],
                   bool(present))
    if fits(str(ran["prompt"])):
        return gr.Textbox(value=url, label=LABEL)
    chars = len(str(ran["prompt"]))
    return gr.Textbox(value=url, label=f"Link to these settings only: the prompt ({chars:,} characters) is longer "
                                       "than a link carries, so it opens without the prompt or the run")


def fits(prompt: str) -> bool:
    """Whether a link can carry `prompt` (PROMPT_BYTES once URL-encoded)."""
    return len(quote_plus(prompt)) <= PROMPT_BYTES
