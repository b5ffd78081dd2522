"""The decode settings' controls, derived from their declarations in `opttree/config.py`.

Each setting gets one control with its declared label, help text, app default and UI range, so a new
setting appears in the app (and the `/generate` API, `settings_from`) without being typed again here.
The node budget has two: a switch "auto (this machine) / fixed n" (`NODES_MODE`) and the slider for
the fixed n; the run's `nodes` is 0 (auto) or the slider's value. Each control shows a short hint (the
declared help's first clause); the whole help text sits in one folded "What each setting does".
`control_values` turns a run's settings (a link's, a lesson's, an imported trace's) back into the
controls' values, the switch included. `control_range` is the range a control takes (a slider's is
narrower than the declared one): links are checked against it, and `checked_controls` refuses a value
typed past it, or a fraction for a whole-number setting, with a one-line message from the check the config
makes (`config.checked_number`; the events that read the controls take their raw values: Gradio's own check
would answer a bare "Error").
"""

from __future__ import annotations

import gradio as gr

from opttree.config import (
    AUTO_NODES,
    METHOD_LABELS,
    SETTING_NAMES,
    SETTINGS,
    TREE_METHODS,
    DecodeConfig,
    app_defaults,
    checked_number,
    python_type,
)
from opttree.errors import BadInput

METHOD_CHOICES = [(METHOD_LABELS[m], m) for m in TREE_METHODS]
STATIC_CHOICES = [c for c in METHOD_CHOICES if c[1] != "opt-tree"]
# Shown up front in Explore; the rest sit in a "More settings" accordion.
MAIN = ("method", "nodes", "max_depth", "threshold", "length_control", "temperature", "seed", "max_new_tokens",
        "tree_temperature", "retrieval")
NODES_MODE = "nodes_mode"        # the node budget's switch: "auto" or "fixed" (its own control, after the settings)
AUTO, FIXED = "auto", "fixed"
MODE_HELP = ("auto: each step's depth and size maximise expected tokens/s from what a forward costs on this "
             "machine (measured once, about fifteen seconds); fixed n: the paper's budget rule with the slider's n")


def short_hint(text: str, least: int = 12) -> str:
    """The first clause of a setting's help (cut at the first "; ", " (", ": " or ". " past `least`
    characters): the hint under its control; the whole text is in `settings_help`."""
    cuts = [i for sep in ("; ", " (", ": ", ". ") if (i := text.find(sep, least)) > 0]
    return text[:min(cuts)] if cuts else text


def elem_id(name: str) -> str:
    return name.replace("_", "-")


def control(name: str):
    """One setting's control, from its declaration."""
    meta = SETTINGS[name].metadata
    value = app_defaults()[name]
    common = dict(label=meta["label"], elem_id=elem_id(name))
    if name == "method":
        return gr.Dropdown(METHOD_CHOICES, value=value, **common)
    if meta["choices"] is not None:           # a few named choices: radio buttons with their labels
        labels = meta["ui"].get("labels", {})
        return gr.Radio([(labels.get(c, c), c) for c in meta["choices"]], value=value,
                        info=short_hint(meta["help"]), **common)
    if meta["ui"].get("kind") == "number":
        return gr.Number(value, precision=0, minimum=meta["lo"], step=1, **common)
    ui = meta["ui"]
    info = short_hint(meta["help"])
    if name == "nodes":       # the slider holds the fixed n; the auto/fixed switch beside it says which applies
        value = value or ui["fixed"]
        info = "n when the budget is fixed"
    return gr.Slider(ui["min"], ui["max"], value=value, step=ui["step"], info=info, **common)


def nodes_mode(value: str | None = None):
    """The node budget's switch: auto (sized per step from this machine's costs) or the slider's fixed n."""
    ui = SETTINGS["nodes"].metadata["ui"]
    default = AUTO if app_defaults()["nodes"] == AUTO_NODES else FIXED
    return gr.Radio([(ui["auto_label"], AUTO), ("fixed n", FIXED)], value=value or default, label="Node budget",
                    info="auto: sized per step for this machine; fixed n: the slider's n", elem_id="nodes-mode")


def settings_controls() -> dict:
    """Every setting's control, in declaration order (the main ones first, then an accordion), then
    the node budget's auto/fixed switch (`NODES_MODE`)."""
    controls = {}
    for name in MAIN:
        if name == "nodes":
            controls[NODES_MODE] = nodes_mode()
        controls[name] = control(name)
    with gr.Accordion("More settings (sampling filters, EAGLE-2, Token Recycling)", open=False):
        for name in SETTING_NAMES:
            if name not in controls:
                controls[name] = control(name)
    with gr.Accordion("What each setting does", open=False, elem_id="settings-help"):
        gr.Markdown(settings_help())
    return {**{name: controls[name] for name in SETTING_NAMES}, NODES_MODE: controls[NODES_MODE]}


def settings_from(values: dict) -> dict:
    """The settings a run sends to the service: each control's value, empty fields given their default;
    with the node switch at auto, nodes = 0 whatever the slider shows."""
    out = {}
    for name in SETTING_NAMES:
        value = values.get(name)
        out[name] = app_defaults()[name] if value is None else value
    mode = values.get(NODES_MODE)
    if mode == AUTO:
        out["nodes"] = AUTO_NODES
    elif mode == FIXED and not out["nodes"]:
        out["nodes"] = SETTINGS["nodes"].metadata["ui"]["fixed"]
    return out


def mode_for(nodes) -> str:
    """The switch position for a budget (a lesson's preset): 0 is auto."""
    return AUTO if nodes == AUTO_NODES else FIXED


def settings_help() -> str:
    """Every setting's whole help text (its declaration's), for the folded help under the controls."""
    lines = [f"- **Node budget**: {MODE_HELP}."]
    lines += [f"- **{SETTINGS[name].metadata['label']}**: {SETTINGS[name].metadata['help']}." for name in SETTING_NAMES]
    return "\n".join(lines)


def checked_settings(raw: dict) -> dict:
    """The settings of `raw` (a link's query, an imported trace's meta: untrusted) that pass their
    declaration's checks and that their control takes (`control_range`), each converted to its type;
    unknown keys and bad values are left out."""
    out = {}
    for name in SETTING_NAMES:
        if name in raw:
            try:
                value = getattr(DecodeConfig(**{**app_defaults(), name: raw[name]}), name)
            except (BadInput, TypeError):
                continue
            span = control_range(name)
            if span is None or span[0] <= value <= span[1] or (name == "nodes" and value == AUTO_NODES):
                out[name] = value
    return out


def control_range(name: str) -> tuple | None:
    """The values a setting's control takes: its slider's range (`ui` in the declaration), else the
    declared range (a number box); None for a setting chosen from a list."""
    meta = SETTINGS[name].metadata
    if meta["choices"] is not None:
        return None
    ui = meta["ui"]
    return (ui["min"], ui["max"]) if "min" in ui else (meta["lo"], meta["hi"])


def short_label(name: str) -> str:
    """A control's label without its parenthesis ("Seed", "Max new tokens"), for messages."""
    return SETTINGS[name].metadata["label"].split(" (")[0]


def checked_controls(values: dict) -> dict:
    """The controls' raw values (as typed in a slider's box or a number box, or sent to the API) with every
    number inside its control's range and of its setting's type, or BadInput naming the first that is not.
    A blank number box stays blank (its default applies), and so does the node slider under the auto budget
    (or at 0, the auto budget's value in a run's settings)."""
    out = dict(values)
    if values.get(NODES_MODE) not in (None, AUTO, FIXED):        # a radio's raw value: one of its choices
        raise BadInput(f"{short_label('nodes')}: the budget is {AUTO!r} or {FIXED!r}, got {values[NODES_MODE]!r}.")
    for name, value in values.items():
        span = control_range(name) if name in SETTINGS else None
        if span is None or value is None or (name == "nodes" and (values.get(NODES_MODE) == AUTO or value == 0)):
            continue
        out[name] = checked_number(short_label(name), value, *span, whole=python_type(name) is int)
    return out


def raw_text(value) -> str:
    """A text box's raw value as the box's own check gives it: a string ('' for none)."""
    return "" if value is None else str(value)


def control_values(settings: dict) -> dict:
    """The controls' values that run `settings`: a budget also sets the auto/fixed switch, and the
    auto budget (nodes = 0) leaves the slider's n alone. A method the page's menu does not offer (AR, from
    a link or an imported trace) leaves the menu as it is: set, it would empty the menu and Run would refuse."""
    out = dict(settings)
    if out.get("method") not in (value for _, value in METHOD_CHOICES):
        out.pop("method", None)
    if "nodes" in out:
        out[NODES_MODE] = mode_for(out["nodes"])
        if out["nodes"] == AUTO_NODES:
            del out["nodes"]
    return out
