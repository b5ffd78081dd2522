"""The decode settings' controls, derived from their declarations in `opttree/config.py`.

Each setting gets one control with its declared label, help text, app default and UI range, so a new
setting appears in the app (and the `/generate` API, `settings_from`) without being typed again here.
"""

from __future__ import annotations

import gradio as gr

from opttree.config import METHOD_LABELS, SETTING_NAMES, SETTINGS, TREE_METHODS, app_defaults

METHOD_CHOICES = [(METHOD_LABELS[m], m) for m in TREE_METHODS]
STATIC_CHOICES = [c for c in METHOD_CHOICES if c[1] != "opt-tree"]
# Shown up front in Explore; the rest sit in a "More settings" accordion.
MAIN = ("method", "nodes", "max_depth", "threshold", "temperature", "seed", "max_new_tokens", "tree_temperature")


def elem_id(name: str) -> str:
    return name.replace("_", "-")


def control(name: str):
    """One setting's control, from its declaration."""
    meta = SETTINGS[name].metadata
    value = app_defaults()[name]
    common = dict(label=meta["label"], elem_id=elem_id(name))
    if name == "method":
        return gr.Dropdown(METHOD_CHOICES, value=value, **common)
    if meta["ui"].get("kind") == "number":
        return gr.Number(value, precision=0, minimum=meta["lo"], step=1, **common)
    ui = meta["ui"]
    return gr.Slider(ui["min"], ui["max"], value=value, step=ui["step"], info=meta["help"] + ".",
                     **common)


def settings_controls() -> dict:
    """Every setting's control, in declaration order (the main ones first, then an accordion)."""
    controls = {name: control(name) for name in MAIN}
    with gr.Accordion("More settings (sampling filters, EAGLE-2)", open=False):
        for name in SETTING_NAMES:
            if name not in controls:
                controls[name] = control(name)
    return {name: controls[name] for name in SETTING_NAMES}


def settings_from(values: dict) -> dict:
    """The settings a run sends to the service: each control's value, empty fields given their default."""
    out = {}
    for name in SETTING_NAMES:
        value = values.get(name)
        out[name] = app_defaults()[name] if value is None else value
    return out
