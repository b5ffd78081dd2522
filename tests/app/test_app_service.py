"""The serving layer behind the app (opttree/serve/) and the model allow-list, on tiny models."""

import json
import logging
import threading
import time

import gradio as gr
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from settings_fuzz import all_settings
from tiny import tiny_pair

import opttree.engine.speculative as speculative
from opttree.config import BUNDLED_ID, DecodeConfig
from opttree.errors import BadInput
from opttree.serve.allow_list import DRAFTERS, ModelEntry, Registry, load_registry
from opttree.serve.lane import Lane
from opttree.serve.models import ModelCache
from opttree.serve.service import RunError, RunService
from opttree.trace_file import validate_trace

SETTINGS = dict(method="opt-tree", nodes=6, max_depth=3, threshold=0.01, max_new_tokens=4)


@pytest.fixture(scope="module")
def pair():
    return tiny_pair("classic", draft_is_target=True)


@pytest.fixture()
def service(pair):
    registry = Registry([ModelEntry("tiny", "tiny pair", "t", "self"),
                         ModelEntry("needs-file", "missing draft", "t", "eagle",
                                    draft="/nonexistent/head.safetensors")],
                        default="tiny", fallback="tiny")
    return RunService(registry=registry, pair_factory=lambda entry: pair)


def test_shipped_allow_list_is_valid_and_safe():
    reg = load_registry()
    assert reg.default in reg.entries and reg.fallback in reg.entries
    assert all(e.drafter in DRAFTERS and not e.trust_remote_code for e in reg.entries.values())
    with pytest.raises(BadInput, match="unknown model"):
        reg.get("meta-llama/Llama-2-7b-hf")
    with pytest.raises(BadInput, match="unknown model"):
        reg.get(["not", "a", "string"])


def test_allow_list_from_env(tmp_path, monkeypatch):
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"default": "a", "models": [{"id": "a", "target": "x", "drafter": "none",
                                                            "trust_remote_code": "yes"}]}))
    monkeypatch.setenv("OPTTREE_MODELS", str(path))
    reg = load_registry()
    assert list(reg.entries) == ["a"] and reg.entries["a"].trust_remote_code is False  # only literal true
    path.write_text("{not json")
    with pytest.raises(BadInput, match="not valid JSON"):
        load_registry()


def test_missing_draft_falls_back_with_a_notice(service):
    entry, notice = service.registry.resolve("needs-file")
    assert entry.id == "tiny" and "not installed" in notice
    updates = list(service.stream("needs-file", "t1 t2", SETTINGS))
    assert updates[-1].state == "done" and "not installed" in updates[-1].notice


@pytest.fixture()
def free_service(pair):
    """A recycling pair (the target alone) next to a model pair that does not allow retrieval."""
    recycling = tiny_pair("recycling", vocab=48)
    registry = Registry([ModelEntry("tiny", "tiny pair", "t", "self"),
                         ModelEntry("rec", "tiny recycling", "t", "recycling")], default="tiny")
    return RunService(registry=registry, pair_factory=lambda e: recycling if e.id == "rec" else pair)


def trees(trace):
    return [s["tokens"] for s in trace["steps"]]


def test_session_recycling_tables_are_never_shared(free_service):
    settings = dict(SETTINGS, method="tr-static", nodes=20, max_new_tokens=16, recycling_scope="session")
    run_scope = free_service.run("rec", "t3 t4 t5", dict(settings, recycling_scope="run"))
    a1 = list(free_service.stream("rec", "t3 t4 t5", settings, session="visitor-a"))[-1].trace
    assert trees(a1) == trees(run_scope)                       # a new session starts empty
    a2 = list(free_service.stream("rec", "t3 t4 t5", settings, session="visitor-a"))[-1].trace
    assert trees(a2) != trees(a1) and a2["output_ids"] == a1["output_ids"]   # A's table carried over
    b1 = list(free_service.stream("rec", "t3 t4 t5", settings, session="visitor-b"))[-1].trace
    assert trees(b1) == trees(run_scope)                       # B never sees what A's runs taught A's table
    table_a = free_service.session_table("visitor-a", "tiny-target", 48)
    assert table_a is not free_service.session_table("visitor-b", "tiny-target", 48)
    assert table_a.rows_filled() > 0
    free_service.end_session("visitor-a")                      # the tab closed: its table is gone
    assert free_service.session_table("visitor-a", "tiny-target", 48).rows_filled() == 0
    # Without a session (the HTTP API) a session scope is a fresh table per run.
    assert trees(free_service.run("rec", "t3 t4 t5", settings)) == trees(run_scope)


def test_session_tables_are_bounded(free_service, monkeypatch):
    import opttree.serve.sessions as sessions_module

    monkeypatch.setattr(sessions_module, "SESSION_TABLES", 3)
    first = free_service.session_table("s0", "tiny-target", 48)
    for i in range(1, 5):
        free_service.session_table(f"s{i}", "tiny-target", 48)
    assert len(free_service.sessions.tables) == 3
    assert free_service.session_table("s0", "tiny-target", 48) is not first     # the oldest was dropped


def test_retrieval_only_where_the_allow_list_allows_it(free_service):
    with pytest.raises(RunError) as err:
        free_service.run("tiny", "t1 t2", dict(SETTINGS, retrieval="on"))
    assert err.value.kind == "bad_input" and "retrieval fusion is not offered" in err.value.message
    assert free_service.run("tiny", "t1 t2", dict(SETTINGS, method="ar", retrieval="on"))["output_ids"]
    registry = Registry([ModelEntry("fuse", "fusing pair", "t", "self", retrieval=True)], default="fuse")
    pair = free_service.pair_for("tiny")[0]
    fusing = RunService(registry=registry, pair_factory=lambda e: pair)
    trace = fusing.run("fuse", "t1 t2 t1", dict(SETTINGS, retrieval="on"))
    assert trace["meta"]["retrieval"] == "on" and "retrieval:" in trace["steps"][0]["stop_reason"]
    # "auto" (the app's default) is never refused: a pair the allow-list does not let fuse runs unfused.
    long_prompt = " ".join(f"t{i % 7}" for i in range(200))
    unfused = free_service.run("tiny", long_prompt, dict(SETTINGS, retrieval="auto", max_new_tokens=3))
    assert unfused["meta"]["retrieval"] == "off"
    fused = fusing.run("fuse", long_prompt, dict(SETTINGS, retrieval="auto", max_new_tokens=3))
    assert fused["meta"]["retrieval"] == "on" and fused["meta"]["retrieval_asked"] == "auto"


def test_allow_list_declares_training_free_pairs_and_retrieval(tmp_path):
    reg = load_registry()
    kinds = {e.drafter for e in reg.entries.values()}
    assert {"recycling", "lookup"} <= kinds
    assert reg.entries["smollm2-eagle"].retrieval and not reg.entries["smollm2-recycling"].retrieval
    assert {e.drafter for e in reg.drafting_for(BUNDLED_ID)} == {"recycling", "lookup"}
    assert [e.id for e in reg.drafting_for(BUNDLED_ID, ("early-exit",))] == ["smollm2-early-exit"]
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"models": [{"id": "a", "target": "x", "drafter": "lookup", "retrieval": True}]}))
    with pytest.raises(BadInput, match="retrieval fusion needs a draft model"):
        load_registry(path)


def test_run_matches_the_engine_and_streams_each_step(service, pair):
    updates = list(service.stream("tiny", "t1 t2 t3", SETTINGS))
    assert [u.state for u in updates][-1] == "done"
    assert sum(u.state == "running" for u in updates) == len(updates[-1].trace["steps"])
    direct = speculative.run(pair, "t1 t2 t3", DecodeConfig(**SETTINGS))
    assert updates[-1].trace["output_ids"] == direct["output_ids"]


@pytest.mark.parametrize("settings,needle", [
    (dict(SETTINGS, nodes=-1), "nodes must be between"),
    (dict(SETTINGS, max_new_tokens="many"), "must be a number"),
    (dict(SETTINGS, trust_remote_code=True), "unknown setting"),
    ("nodes=5", "settings must be an object"),
])
def test_bad_settings(service, settings, needle):
    with pytest.raises(RunError) as err:
        service.run("tiny", "t1", settings)
    assert err.value.kind == "bad_input" and needle in err.value.message


@pytest.mark.parametrize("prompt", ["", "   ", None, "x" * 100_000])
def test_bad_prompts(service, prompt):
    with pytest.raises(RunError) as err:
        service.run("tiny", prompt, SETTINGS)
    assert err.value.kind == "bad_input"


def test_cancel_mid_run_keeps_the_partial_trace_and_frees_the_lane(service):
    flag = threading.Event()
    got = []
    with pytest.raises(RunError) as err:
        for up in service.stream("tiny", "t1 t2", dict(SETTINGS, max_new_tokens=40, nodes=2, max_depth=1),
                                 cancel=flag, session="tab-1"):
            got.append(up)
            if up.state == "running":
                assert service.cancel_session("tab-1") == 1     # what closing the tab does
    assert err.value.kind == "cancelled" and err.value.trace["steps"]
    assert service.lane.active == 0 and service.lane.queued == 0
    assert service.cancel_session("tab-1") == 0


def test_time_limit(service):
    service.time_limit_s = 0.0
    with pytest.raises(RunError) as err:
        service.run("tiny", "t1", SETTINGS)
    assert err.value.kind == "timeout"


@pytest.mark.parametrize("exc,kind", [(MemoryError(), "oom"),
                                      (RuntimeError("CUDA out of memory. Tried to allocate"), "oom"),
                                      (ZeroDivisionError("boom"), "internal")])
def test_failures_are_contained(service, monkeypatch, exc, kind):
    def broken(*args, **kwargs):
        raise exc
        yield  # pragma: no cover (makes this a generator like the real one)

    monkeypatch.setattr(speculative, "stream_run", broken)
    with pytest.raises(RunError) as err:
        service.run("tiny", "t1", SETTINGS)
    assert err.value.kind == kind and "Traceback" not in err.value.message and "boom" not in err.value.message
    monkeypatch.undo()
    assert service.run("tiny", "t1", SETTINGS)["steps"]       # the next request works
    assert service.lane.active == 0


def test_lane_is_fifo_with_positions():
    lane = Lane(slots=1)
    a, b, c = lane.enter(), lane.enter(), lane.enter()
    assert lane.position(a) == 0                 # a holds the slot
    assert lane.position(b) == 1 and lane.position(c) == 2
    lane.leave(c)                    # c gave up while waiting
    lane.leave(a)
    assert lane.position(b) == 0 and lane.active == 1
    lane.leave(b)
    assert lane.active == 0 and lane.queued == 0


def test_waiting_run_reports_its_position(service):
    holder = service.lane.enter()
    assert service.lane.position(holder) == 0
    gen = service.stream("tiny", "t1", SETTINGS)
    first = next(gen)
    assert first.state == "queued" and first.position == 1
    service.lane.leave(holder)
    assert list(gen)[-1].state == "done"


def test_unloadable_model_is_reported(pair):
    from opttree.errors import ModelLoadError

    def fail(entry):
        raise ModelLoadError("weights file is corrupt")

    svc = RunService(registry=Registry([ModelEntry("tiny", "tiny", "t", "self")], default="tiny"), pair_factory=fail)
    with pytest.raises(RunError) as err:
        svc.run("tiny", "t1", SETTINGS)
    assert err.value.kind == "model" and "corrupt" in err.value.message and svc.lane.active == 0


def test_lane_reclaims_tickets_whose_readers_went_away():
    lane = Lane(slots=1, stale_s=0.0)
    a = lane.enter()
    assert lane.position(a) == 0
    lane.suspend(a)                              # a hands out an update that nobody collects
    b = lane.enter()
    assert lane.position(b) == 0                 # b gets the slot a abandoned
    assert lane.resume(a) is False               # if a is ever resumed, it must stop
    lane.leave(a)
    assert lane.active == 1
    lane.leave(b)
    assert lane.active == 0


def test_abandoned_run_does_not_block_the_next(pair):
    """A reader that stops asking for updates without closing the run (a dropped connection) loses
    the slot after `stale_s`, a service setting."""
    service = RunService(registry=Registry([ModelEntry("tiny", "tiny", "t", "self")], default="tiny"),
                         pair_factory=lambda entry: pair, stale_s=0.3)
    abandoned = service.stream("tiny", "t1 t2", dict(SETTINGS, max_new_tokens=40, nodes=2, max_depth=1))
    assert next(abandoned).state == "running"    # holds the slot, then its reader disappears
    assert service.run("tiny", "t1", SETTINGS)["steps"]
    with pytest.raises(RunError) as err:
        next(abandoned)
    assert err.value.kind == "cancelled" and service.lane.active == 0


def slow_service(pair, load_s: float, time_limit_s: float, on_load=None):
    """A service whose pair takes `load_s` seconds to load (like a first GGUF dequantization)."""
    def factory(entry):
        time.sleep(load_s)
        if on_load:
            on_load()
        return pair

    return RunService(registry=Registry([ModelEntry("tiny", "tiny", "t", "self")], default="tiny"),
                      pair_factory=factory, time_limit_s=time_limit_s)


def counting_forwards(pair):
    calls = []
    return calls, pair.target.register_forward_hook(lambda *args: calls.append(1))


def test_a_loaded_pair_is_warmed_before_its_first_run(pair, monkeypatch):
    """The cache runs a freshly loaded pair once, untimed, so a visitor's first run is not the process's
    first forwards (their one-time costs would read as the method's); a pair is warmed once."""
    loads = []
    monkeypatch.setattr(ModelCache, "_load", lambda self, entry: loads.append(entry.id) or pair)
    svc = RunService(registry=Registry([ModelEntry("tiny", "tiny", "t", "self")], default="tiny"))
    calls, hook = counting_forwards(pair)
    try:
        svc.pair_for("tiny")
        assert loads == ["tiny"] and calls, "loading the pair ran no untimed forward"
        warm = len(calls)
        svc.pair_for("tiny")
        assert len(calls) == warm and loads == ["tiny"]
    finally:
        hook.remove()


def test_time_limit_counts_loading_the_model(pair):
    """A run whose load already used up its time stops at the first check, before the prefill."""
    svc = slow_service(pair, load_s=0.5, time_limit_s=0.1)
    calls, hook = counting_forwards(pair)
    try:
        with pytest.raises(RunError) as err:
            svc.run("tiny", "t1 t2 t3", SETTINGS)
        assert err.value.kind == "timeout" and "loading the model" in err.value.message
        assert calls == [] and svc.lane.active == 0
        svc.time_limit_s = 60.0                     # loaded now: the next run has its whole limit
        assert svc.run("tiny", "t1 t2 t3", SETTINGS)["steps"] and calls
    finally:
        hook.remove()


def test_stop_pressed_while_the_model_loads_skips_the_prefill(pair):
    flag = threading.Event()
    svc = slow_service(pair, load_s=0.0, time_limit_s=60.0, on_load=flag.set)
    calls, hook = counting_forwards(pair)
    try:
        with pytest.raises(RunError) as err:
            svc.run("tiny", "t1 t2 t3", SETTINGS, cancel=flag)
        assert err.value.kind == "cancelled" and calls == []
    finally:
        hook.remove()


def test_api_run_closed_by_its_client_frees_the_lane_at_once(service, caplog):
    """/generate is a generator: when Gradio stops for a client that disconnected or cancelled, it
    closes it, which closes the run and frees the slot (no waiting for `stale_s` or the time limit)."""
    from ui.app import generate

    service.lane.stale_s = 1e9                       # only closing can free the slot here
    gen = generate(service, "tiny", "t1 t2", **dict(SETTINGS, max_new_tokens=40, nodes=2, max_depth=1))
    first = next(gen)
    assert first["state"] == "running" and service.lane.active == 1
    with caplog.at_level(logging.INFO, logger="opttree.serve.service"):
        gen.close()
    assert service.lane.active == 0 and service.lane.queued == 0
    assert "closed by its reader before it finished" in caplog.text
    finished = list(generate(service, "tiny", "t1 t2", **SETTINGS))
    assert finished[-1]["output_ids"] and all(u["state"] == "running" for u in finished[:-1])


def test_api_errors_carry_their_kind():
    import gradio as gr

    from ui.app import generate

    svc = RunService(registry=Registry([ModelEntry("tiny", "tiny", "t", "self")], default="tiny"),
                     pair_factory=lambda entry: tiny_pair("classic", draft_is_target=True))
    with pytest.raises(gr.Error) as err:
        list(generate(svc, "tiny", "t1", nodes=9999))
    assert err.value.title == "bad_input" and "nodes must be between" in err.value.message


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=all_settings(everyday=dict(nodes=[3, 8], max_depth=[2, 3], temperature=[0.7], max_new_tokens=[3])),
       extra=st.sampled_from([{}, {}, {}, {"trust_remote_code": True}, {"": 1}]))
def test_service_fuzz_every_setting_finishes_or_is_bad_input(pair, values, extra):
    """All settings at their edges, outside them and as junk (NaN, ±inf, huge numbers, bools,
    strings, lists), plus unknown keys: a finished trace or a bad_input error, never internal."""
    svc = RunService(registry=Registry([ModelEntry("tiny", "tiny", "t", "self")], default="tiny"),
                     pair_factory=lambda entry: pair)
    try:
        trace = svc.run("tiny", "t1 t2 t3", {**values, **extra})
    except RunError as exc:
        event("bad_input")
        assert exc.kind == "bad_input", (values, extra, exc.kind, exc.message)
        assert exc.message.strip() and len(exc.message) < 500
        return
    event("finished")
    validate_trace(trace)
    assert 1 <= len(trace["output_ids"]) <= trace["meta"]["max_new_tokens"] and not extra
    assert svc.lane.active == 0


def test_shipped_pairs_carry_their_cards_tree_temperature():
    """The app's own loader (not only load_pair) reads each bundled draft's fitted tree temperature:
    compared with the value in the card file itself, read here as plain JSON."""
    from pathlib import Path

    from opttree.serve.allow_list import load_registry

    registry = load_registry()
    svc = RunService(registry=registry, device="cpu")
    checked = 0
    for entry in registry.entries.values():
        if entry.drafter in ("eagle", "classic") and entry.draft not in ("", "random") and not entry.missing_files():
            card = json.loads(Path(entry.draft).with_suffix(".json").read_text())
            assert card["tree_temperature"] != 1.0       # a fitted value, distinguishable from the default
            pair = svc.pair_for(entry.id)[0]
            assert pair.tree_temperature == card["tree_temperature"], entry.id
            checked += 1
    assert checked >= 2


def test_cost_curve_through_the_lane_and_refresh(service, pair, monkeypatch):
    """The app's "what a forward costs here": measured once per pair (cached), again on demand, and never
    beside a run (it waits for the lane like one)."""
    from opttree.engine import cost

    measured = []
    real = cost.measure
    monkeypatch.setattr(cost, "measure", lambda p, **kw: measured.append(1) or real(p, **kw))
    pair.cost_curve = None
    first = service.cost_curve("tiny", refresh=True)
    assert first["tokens"][0] == 1 and len(first["verify_ms"]) == len(first["tokens"]) and len(measured) == 1
    assert service.cost_curve("tiny") == first and len(measured) == 1          # kept on the pair
    service.preload()
    assert len(measured) == 1
    ticket = service.lane.enter()            # a run holds the lane: measuring waits for it
    assert service.lane.position(ticket) == 0
    done = []
    worker = threading.Thread(target=lambda: done.append(service.cost_curve("tiny", refresh=True)))
    worker.start()
    worker.join(1.0)
    assert not done and len(measured) == 1
    service.lane.leave(ticket)
    worker.join(60)
    assert done and len(measured) == 2
    with pytest.raises(RunError, match="unknown model"):
        service.cost_curve("meta-llama/Llama-2-7b-hf")


def test_a_live_run_redraws_the_page_at_a_bounded_rate_and_always_shows_the_end(service, monkeypatch):
    import ui.explore as explore
    from opttree.config import SETTING_NAMES
    from ui.common import Page

    clock = iter(range(0, 10_000))           # each reading is one "second" later unless frozen
    frozen = {"on": True}
    monkeypatch.setattr(explore.time, "monotonic", lambda: 100.0 if frozen["on"] else float(next(clock)))
    page = Page(trace="trace", history="history", settings={k: k for k in SETTING_NAMES}, colour="colour",
                link="link", model="model", prompt="prompt", status="status", step="step",
                views=["tree", "text", "metrics", "why"], bars="bars", learn_plot="learn", learn_status="ls",
                ea_plot="ea", ea_text="ea_text", present="present", caption="caption", ran="ran")
    settings = {**DecodeConfig().__dict__, **SETTINGS, "max_new_tokens": 12}
    values = [settings[k] for k in SETTING_NAMES]

    def updates():
        # (the first update, before the model starts, says "Starting…": drawn steps come after it)
        *drawn, = explore.run_explore(page, service, None, "tiny", "t1 t2", *values, None, "p_hat", False, {})
        assert drawn[0]["status"] == "Starting…"
        return [u for u in drawn[1:] if "status" in u]

    def statuses():
        return [u["status"] for u in updates()]

    # A page that redraws slower than the run steps: only the first step and the end are drawn.
    slow = statuses()
    assert slow[0].startswith("Running: step 1,") and slow[-1].startswith("Done") and len(slow) == 2
    # Steps slower than the redraw interval: every step is drawn.
    frozen["on"] = False
    live = updates()
    every = [u["status"] for u in live]
    assert len(every) > 3 and all(s.startswith("Running") for s in every[:-1]) and every[-1].startswith("Done")
    # Live updates redraw the step's views but leave the run's accepted-length bars to the end; the first
    # drawn step empties the previous run's bars (a run refused before it leaves them).
    assert all(u["bars"] == gr.skip() and u["tree"] != gr.skip() for u in live[1:-1])
    assert live[0]["bars"].data and all(not len(t.x) for t in live[0]["bars"].data)
    assert [t.type for t in live[-1]["bars"].data] and all(len(t.x) for t in live[-1]["bars"].data)


def test_the_serving_tab_exports_a_real_run_and_measures_its_model_through_the_lane(service, monkeypatch):
    """Serving: a finished run's trees export as a vLLM config that parses back to a rank tree of the run's
    own paths; the batching model is measured through the service (once, then cached) and drawn with its
    note that it is modelled; an unknown model is a message, not a traceback."""
    import ui.serving as serving_ui
    from opttree.engine import batch_cost
    from opttree.trees.export import parse_vllm_config, rank_paths

    trace = service.run("tiny", "t1 t2 t3", dict(SETTINGS, nodes=6, max_new_tokens=8))
    slider, text = serving_ui.on_open(trace, "run")
    assert slider.value == 6
    _, paths = parse_vllm_config(text.split("```json\n")[1].split("\n```")[0])
    seen = {p for s in trace["steps"] if s["parents"] for p in rank_paths(s)}
    assert paths and set(paths) <= seen and len(paths) <= 6

    real, calls = batch_cost.load_or_measure_surface, []
    monkeypatch.setattr(batch_cost, "load_or_measure_surface", lambda p, refresh=False, log=None: calls.append(
        refresh) or real(p, (1, 2, 4), (1, 2, 4), refresh=refresh, reps=1))
    got = service.serving_model("tiny", refresh=True)
    assert len(got["surface"]["points"]) == 9 and got["acceptance_source"] == "default" and calls == [True]
    updates = list(serving_ui.measure_model(service, False, "tiny"))
    assert updates[0]["status"].startswith("⏳") and "not a measured batched run" in updates[-1]["status"]
    assert [t.name for t in updates[-1]["plot"].data][:3] == ["B = 1", "B = 2", "B = 4"]
    assert "Best size per batch" in updates[-1]["summary"]
    assert len(calls) == 2 and batch_cost.load_or_measure_surface(service.pair_for("tiny")[0]) is not None
    bad = list(serving_ui.measure_model(service, False, "meta-llama/Llama-2-7b-hf"))
    assert "unknown model" in bad[-1]["status"] and "plot" not in bad[-1]
