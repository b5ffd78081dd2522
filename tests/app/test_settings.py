"""Each decode setting is declared once (opttree/config.py) and reaches every entry point from there."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import gradio as gr
import pytest

from opttree.config import SETTING_NAMES, SETTINGS, DecodeConfig, app_defaults
from opttree.errors import BadInput

# A value inside each setting's range that differs from its default (so reaching the config is visible).
PROBE = {"method": "binary", "nodes": 7, "max_depth": 3, "threshold": 0.25, "length_control": "thompson",
         "temperature": 0.5, "max_new_tokens": 9, "seed": 11, "tree_temperature": 0.6, "top_p": 0.9, "top_k": 5,
         "eagle_top_k": 4, "retrieval": "on", "recycling_scope": "session"}


def test_probe_covers_every_setting_with_a_non_default_value():
    assert set(PROBE) == set(SETTING_NAMES)
    for name, value in PROBE.items():
        assert value != SETTINGS[name].default, name
    assert DecodeConfig(**PROBE).to_dict() == PROBE


@pytest.mark.parametrize("name", SETTING_NAMES)
def test_every_setting_reaches_the_cli(name):
    from opttree.args import decode_config
    from opttree.cli import build_parser

    flag = "--" + name.replace("_", "-")
    args = build_parser().parse_args(["generate", "--prompt", "x", "--device", "cpu", flag, str(PROBE[name])])
    cfg = decode_config(args, args.method)
    assert getattr(cfg, name) == PROBE[name]
    help_text = build_parser()._subparsers._group_actions[0].choices["generate"].format_help()
    assert flag in help_text


def test_every_setting_reaches_the_api():
    from opttree.serve.service import Update
    from ui.app import GENERATE_SIGNATURE, generate

    class Recorder:
        def stream(self, model, prompt, settings):
            self.got = (model, prompt, settings)
            yield Update("done", trace={"ok": True})

    params = list(GENERATE_SIGNATURE.parameters)
    assert params == ["model", "prompt", *SETTING_NAMES]
    rec = Recorder()
    assert list(generate(rec, "m", "p", **PROBE)) == [{"ok": True}]
    assert rec.got == ("m", "p", PROBE)
    list(generate(rec, "m", "p"))     # every parameter has the library's default
    assert rec.got[2] == {name: SETTINGS[name].default for name in SETTING_NAMES}
    assert list(inspect.signature(generate).parameters)[1:] == params


def test_every_setting_reaches_the_app_and_its_run_endpoint():
    from opttree.serve.allow_list import load_registry
    from opttree.serve.service import RunService
    from ui.app import build_app
    from ui.controls import elem_id, settings_from

    demo = build_app(RunService(registry=load_registry()))
    by_elem = {getattr(b, "elem_id", None): b for b in demo.blocks.values()}
    run = next(d for d in demo.config["dependencies"] if d.get("api_name") == "run")
    for name in SETTING_NAMES:
        control = by_elem.get(elem_id(name))
        assert control is not None, name
        assert control._id in run["inputs"], name
        if name == "nodes":   # the slider holds the fixed n; the auto/fixed switch beside it starts at auto
            assert app_defaults()["nodes"] == 0 and control.value == SETTINGS["nodes"].metadata["ui"]["fixed"]
            mode = by_elem["nodes-mode"]
            assert mode._id in run["inputs"] and mode.value == "auto"
            continue
        assert control.value == app_defaults()[name] or (name == "method" and control.value == "opt-tree")
    assert settings_from({}) == app_defaults()
    assert settings_from({"nodes": 5})["nodes"] == 5
    assert settings_from({"nodes": 5, "nodes_mode": "auto"})["nodes"] == 0          # auto: nodes = 0
    assert settings_from({"nodes": 5, "nodes_mode": "fixed"})["nodes"] == 5


def test_lesson_presets_use_declared_settings_only():
    from viz.lessons import PRESETS

    for p in PRESETS:
        extra = set(p) - {"name", "lesson", "prompt", "model"}
        assert extra <= set(SETTING_NAMES), extra - set(SETTING_NAMES)
        DecodeConfig(**{k: p[k] for k in extra})
    # Every preset sets the same settings, so clicking one never leaves another's values behind.
    assert len({frozenset(p) for p in PRESETS}) == 1
    # The paper's lessons keep a fixed n; one lesson shows the auto budget.
    assert sum(p["nodes"] == 0 for p in PRESETS) == 1 and sum(p["nodes"] > 0 for p in PRESETS) >= 5


def test_a_preset_sets_the_node_switch():
    from ui.common import Page
    from ui.explore import apply_preset, preset_settings
    from viz.lessons import PRESETS

    offered = [("head", "smollm2-eagle"), ("recycling", "smollm2-recycling")]   # this server lacks the lookup pair
    page = Page(settings={name: None for name in (*SETTING_NAMES, "nodes_mode")},
                model=SimpleNamespace(choices=offered, value="smollm2-eagle"))
    for i, p in enumerate(PRESETS):
        values = apply_preset(page, i)
        assert len(values) == 3 + len(preset_settings(page)) and values[-1] == ("auto" if p["nodes"] == 0 else "fixed")
        # prompt, then the lesson's pair (None: the default; one the server does not offer is left alone)
        model = p["model"] or "smollm2-eagle"
        assert values[1] == model if model in dict(map(reversed, offered)) else not isinstance(values[1], str)
    assert any(p["model"] == "smollm2-lookup" for p in PRESETS) and any(p["model"] for p in PRESETS)


def test_service_accepts_exactly_the_declared_settings():
    from opttree.serve.service import RunService

    assert RunService.config(dict(PROBE)).to_dict() == PROBE
    with pytest.raises(BadInput, match="unknown setting"):
        RunService.config({"nodes": 4, "bogus": 1})


def test_server_settings_are_declared_once():
    """Each server setting's variable, meaning, default and bound sit on its field; the module's table
    and `from_env` come from there, and the service and page take their defaults from it."""
    from dataclasses import fields

    from opttree.serve import settings as server
    from opttree.serve.service import RunService
    from opttree.serve.settings import ServerSettings
    from opttree.trace_file import MAX_TRACE_BYTES
    from ui.app import build_app
    from ui.app import main as app_main

    assert ServerSettings.from_env({}) == ServerSettings()
    for f in fields(ServerSettings):
        env, lo = f.metadata["env"], f.metadata["lo"]
        assert f"| {env} | {f.metadata['help']} |" in server.__doc__, f.name       # the docstring's table
        if isinstance(f.default, str):
            assert getattr(ServerSettings.from_env({env: "x"}), f.name) == "x"
            continue
        assert getattr(ServerSettings.from_env({env: str(lo + 3)}), f.name) == lo + 3
        with pytest.raises(BadInput, match=f"{env} must be at least"):
            ServerSettings.from_env({env: str(lo - 1)})
        if f.metadata["hi"] is not None:
            with pytest.raises(BadInput, match=f"{env} must be at most"):
                ServerSettings.from_env({env: str(f.metadata["hi"] + 1)})
    svc = RunService(registry=None)
    assert (svc.lane_slots, svc.time_limit_s, svc.device) == (ServerSettings.lane_slots,
                                                              ServerSettings.run_time_limit_s, ServerSettings.device)
    assert inspect.signature(build_app).parameters["waiting_runs"].default == ServerSettings.max_waiting
    # An upload is at most what the trace reader takes, and the page's limit is the setting's (no copy of it).
    assert ServerSettings().max_upload_bytes == MAX_TRACE_BYTES
    assert ServerSettings.from_env({"OPTTREE_MAX_UPLOAD_MB": "8"}).max_upload_bytes == 8 * 2**20
    assert "max_file_size=settings.max_upload_bytes" in inspect.getsource(app_main)


def test_defaults_are_not_repeated_in_the_page_or_the_service():
    """The server's address and port live in ServerSettings, the bundled target's id in config.BUNDLED_ID."""
    from pathlib import Path

    from opttree.config import BUNDLED_ID
    from opttree.serve.settings import ServerSettings

    root = Path(__file__).resolve().parents[2]
    needles = (ServerSettings.server_name, str(ServerSettings.server_port), BUNDLED_ID)
    for path in [*(root / "ui").glob("*.py"), *(root / "opttree" / "serve").glob("*.py")]:
        if path.name == "settings.py":
            continue
        text = path.read_text()
        assert not [n for n in needles if n in text], path


def test_every_api_parameter_is_named():
    """Every endpoint's parameters carry their names (a setting's, or the input's), never `param_N`."""
    import re

    from opttree.serve.allow_list import load_registry
    from opttree.serve.service import RunService
    from ui.app import build_app

    demo = build_app(RunService(registry=load_registry()))
    endpoints = demo.get_api_info(all_endpoints=True)["named_endpoints"]
    unnamed = {api: [p["parameter_name"] for p in ep["parameters"] if re.fullmatch(r"param_\d+", p["parameter_name"])]
               for api, ep in endpoints.items()}
    assert not any(unnamed.values()), unnamed
    for api in ("/run", "/compare"):
        names = [p["parameter_name"] for p in endpoints[api]["parameters"]]
        assert names[:2] == ["model", "prompt"] and names[2:2 + len(SETTING_NAMES)] == list(SETTING_NAMES), api
    assert [p["parameter_name"] for p in endpoints["/generate"]["parameters"]] == ["model", "prompt", *SETTING_NAMES]


def test_named_inputs_must_match_the_handler():
    """`bind(..., names=...)` refuses inputs whose leading names differ from the handler's own parameters."""
    from ui.common import bind

    def handler(request: gr.Request, model, prompt, *values):
        return model, prompt, values

    named = bind(handler, names=["model", "prompt", "nodes", "colour"])
    assert list(inspect.signature(named).parameters) == ["request", "model", "prompt", "nodes", "colour"]
    assert named(None, "m", "p", 5, colour="q") == ("m", "p", (5, "q"))
    with pytest.raises(ValueError, match="inputs named"):
        bind(handler, names=["prompt", "model", "nodes"])


def test_a_value_typed_past_a_controls_range_is_refused_with_its_name():
    """A slider's box takes any typed number and gr.Slider refuses one past either end before the handler runs
    (every view then showed a bare "Error"): Run, Compare, a lesson's run and Copy link take the raw values
    and the status names the control and its range, or that it takes whole numbers; values inside it still run."""
    import asyncio

    from gradio.state_holder import SessionState

    from opttree.serve.allow_list import load_registry
    from opttree.serve.service import RunService
    from ui.app import build_app
    from ui.controls import elem_id

    demo = build_app(RunService(registry=load_registry()))
    by_elem = {getattr(b, "elem_id", None): b for b in demo.blocks.values()}
    events = {"run": next(f for f in demo.fns.values() if f.api_name == "run"),
              "compare": next(f for f in demo.fns.values() if f.api_name == "compare"),
              "lesson": next(f for f in demo.fns.values() if f.name == "run_explore" and f.api_name != "run"),
              "link": next(f for f in demo.fns.values() if f.name == "copy_link")}

    def outputs(event: str, **typed) -> dict:
        fn = events[event]
        typed = {by_elem[elem_id(k)]: v for k, v in typed.items()}
        inputs = [typed.get(b, getattr(b, "value", None)) for b in fn.inputs]
        out = asyncio.run(demo.process_api(block_fn=fn, inputs=inputs, state=SessionState(demo)))
        return {b.elem_id: v for b, v in zip(fn.outputs, out["data"]) if getattr(b, "elem_id", None)}

    cases = [({"threshold": 5}, "Threshold δ must be between 0 and 1, got 5."),
             ({"max_new_tokens": 300}, "Max new tokens must be between 1 and 256, got 300."),
             ({"max_new_tokens": 0}, "Max new tokens must be between 1 and 256, got 0."),
             ({"seed": -5}, "Seed must be between 0 and "), ({"top_k": 5000}, "Top-k must be between 0 and 200"),
             # a whole-number setting refuses a fraction, as /generate does (config.checked_number), never rounds it
             ({"nodes": 60.5, "nodes_mode": "fixed"}, "Nodes must be a whole number, got 60.5."),
             ({"max_new_tokens": 12.5}, "Max new tokens must be a whole number, got 12.5.")]
    for typed, said in cases:
        for event, status in (("run", "status"), ("lesson", "status"), ("compare", "compare-status")):
            assert said in outputs(event, **typed)[status], (event, typed)
        assert said in outputs("link", **typed)["link"]["label"], typed
    said = "New tokens per run must be a whole number, got 8.5."      # Compare's own slider, by the same check
    assert said in outputs("compare", compare_tokens=8.5)["compare-status"]
    link = outputs("link", threshold=0.75, max_new_tokens=200)["link"]["value"]
    assert "threshold=0.75" in link and "max_new_tokens=200" in link
    # The other raw values the boxes' own checks gave typed: a radio's unknown choice is refused, a number
    # sent as the prompt is its text (both reach the handler unchecked now, from the API).
    for event, status in (("run", "status"), ("lesson", "status"), ("compare", "compare-status")):
        assert "the budget is 'auto' or 'fixed', got 'bogus'" in outputs(event, nodes_mode="bogus")[status], event
    assert "prompt=123" in outputs("link", prompt=123)["link"]["value"]
