"""The classroom page's pieces without a browser: short hints with the full help folded, a run's
settings back into the controls, which lesson a run is, the Learn topics, an import that restores
its prompt, pair and settings and reaches E(A) vs A, presenter-sized trees and two-line titles, and
the lines that explain numbers which look contradictory, step scrubbers that take any typed step, and
Copy link following the run on screen."""

from __future__ import annotations

from dataclasses import replace

import gradio as gr
import pytest
from tiny import tiny_pair

from opttree.config import SETTING_NAMES, SETTINGS, DecodeConfig
from opttree.engine.speculative import run
from opttree.errors import BadInput
from opttree.serve.allow_list import load_registry
from opttree.trace_file import dumps, loads
from ui import ea_vs_a, explore, files, learn
from ui.common import Page
from ui.controls import MAIN, NODES_MODE, checked_settings, control_values, settings_help, short_hint
from viz import lessons, style
from viz.step_charts import speed_note
from viz.tree_figure import LABELLED, PRESENT_HEIGHT, labelled_nodes, step_title, tree_figure
from viz.tree_layout import tidy_layout


def tiny_trace(**settings) -> dict:
    cfg = DecodeConfig(**{"method": "binary", "nodes": 6, "max_depth": 3, "max_new_tokens": 6, **settings})
    trace = run(tiny_pair("classic", draft_is_target=True), "", cfg, prompt_ids=[5, 6])
    trace["prompt"] = "An imported prompt."
    return trace


def test_each_control_shows_a_short_hint_and_the_whole_help_is_one_fold_away():
    for name in MAIN:
        text = SETTINGS[name].metadata["help"]
        hint = short_hint(text)
        assert text.startswith(hint) and len(hint) <= 80, (name, hint)
    folded = settings_help()
    assert all(SETTINGS[name].metadata["help"] in folded for name in SETTING_NAMES)


def test_a_runs_settings_go_back_into_the_controls_with_the_budget_switch():
    assert control_values({"nodes": 25, "threshold": 0.5}) == {"nodes": 25, NODES_MODE: "fixed", "threshold": 0.5}
    assert control_values({"nodes": 0}) == {NODES_MODE: "auto"}          # auto leaves the slider's n alone
    meta = tiny_trace()["meta"]
    settings = checked_settings({**meta, "max_depth": 99, "method": "<b>"})
    assert settings["nodes"] == 6 and settings["max_new_tokens"] == 6 and "max_depth" not in settings
    assert "method" not in settings and "device" not in settings


def test_a_run_is_the_lesson_whose_prompt_pair_and_settings_it_has():
    default = "smollm2-eagle"
    for i, p in enumerate(lessons.PRESETS):
        settings = {k: p[k] for k in SETTING_NAMES if k in p}
        assert lessons.lesson_of(p["prompt"], p["model"] or default, settings, default) == i
        assert lessons.lesson_of(p["prompt"], p["model"] or default, {**settings, "max_depth": 3}, default) is None
        assert lessons.caption_markdown(i).startswith(f"**Lesson: {p['name']}.**")
    assert lessons.caption_markdown(None) == ""


def test_learn_is_one_section_per_topic():
    sections = lessons.learn_sections()
    titles = [t for t, _ in sections]
    assert titles[0] == "Speculative decoding in one picture" and "Reading the tree" in titles
    assert len(sections) == lessons.LEARN_TEXT.count("\n### ") + 1 and all(body for _, body in sections)
    assert "draft's belief" in dict(sections)["p̂ and E(A)"]     # the symbols: tests/unit/test_lesson_symbols.py


def built_page():
    """The Explore, E(A)-vs-A, Learn and Export / Import tabs as the app builds them (no server)."""
    registry = load_registry()
    with gr.Blocks():
        page = Page()
        page.trace, page.history, page.ran, page.link = gr.State(None), gr.State([]), gr.State({}), gr.State({})
        explore.build(page, registry)
        ea_vs_a.build(page)
        learn.build(page)
        parts = files.build()
    return page, parts, registry


def test_an_import_restores_the_prompt_and_settings_and_reaches_ea_vs_a():
    page, parts, registry = built_page()
    trace = tiny_trace(threshold=0.4)
    out = files.do_import(page, parts, registry, dumps(trace).encode(), "log_p_hat", False, [])
    assert out[page.prompt] == "An imported prompt."
    assert out[page.settings["method"]] == "binary" and out[page.settings["nodes"]] == 6
    assert out[page.settings[NODES_MODE]] == "fixed" and out[page.settings["threshold"]] == 0.4
    assert len(out[page.history]) == 1 and "of 1 run." in out[page.ea_text]
    assert out[page.ran]["prompt"] == "An imported prompt." and out[page.ran]["settings"]["nodes"] == 6
    assert page.model not in out                          # no allow-listed pair has the tiny target
    auto = tiny_trace(nodes=0)
    auto["prompt"] = ""                                    # decoded from token ids: no prompt text
    auto = files.do_import(page, parts, registry, dumps(auto).encode(), "log_p_hat", False, [])
    assert auto[page.settings[NODES_MODE]] == "auto" and page.settings["nodes"] not in auto
    assert page.prompt not in auto                         # the box keeps its own text
    ar = files.do_import(page, parts, registry, dumps(tiny_trace(method="ar")).encode(), "log_p_hat", False, [])
    assert page.settings["method"] not in ar and "Loaded an ar run" in ar[parts["import_status"]]   # menu unchanged
    bundled = {"target": "smollm2-135m-instruct"}
    assert files.model_of(page, registry, {**bundled, "drafter": "eagle", "draft": "smollm2-eagle-head.safetensors"}) \
        == "smollm2-eagle"
    assert files.model_of(page, registry, {**bundled, "drafter": "eagle", "draft": "random"}) == "smollm2-random"
    assert files.model_of(page, registry, {**bundled, "drafter": "classic", "draft": "self"}) == "smollm2-self"
    assert files.model_of(page, registry, {**bundled, "drafter": "recycling", "draft": "x"}) == "smollm2-recycling"
    assert files.model_of(page, registry, {**bundled, "drafter": "eagle", "draft": "other.safetensors"}) is None


def test_an_import_restores_the_tree_temperature_it_was_asked_with():
    """A run at tree temperature 0 (the draft's fitted value) drafts at the card's value, which meta records;
    the import puts 0 back in the control (it put the fitted value there, so a re-run lost its lesson's
    caption and Copy link wrote the fitted value)."""
    page, parts, registry = built_page()
    pair = tiny_pair("classic", draft_is_target=True)
    pair.tree_temperature = 0.7                                      # a card's fitted value
    cfg = DecodeConfig(method="binary", nodes=6, max_depth=3, max_new_tokens=6, tree_temperature=0.0)
    trace = run(pair, "", cfg, prompt_ids=[5, 6])
    assert trace["meta"]["tree_temperature"] == 0.7 and trace["meta"]["tree_temperature_asked"] == 0.0
    out = files.do_import(page, parts, registry, dumps(trace).encode(), "log_p_hat", False, [])
    assert out[page.settings["tree_temperature"]] == 0.0 and out[page.ran]["settings"]["tree_temperature"] == 0.0
    asked = run(pair, "", replace(cfg, tree_temperature=0.5), prompt_ids=[5, 6])   # asked and used alike
    assert asked["meta"]["tree_temperature"] == 0.5 and "tree_temperature_asked" not in asked["meta"]
    # An older release ignored a sampled run's setting and drafted at 1: the control gets the 1 it drafted at.
    older = {**trace, "meta": {**trace["meta"], "temperature": 0.7, "tree_temperature": 1.0,
                               "tree_temperature_asked": 0.5}}
    out = files.do_import(page, parts, registry, dumps(older).encode(), "log_p_hat", False, [])
    assert out[page.settings["tree_temperature"]] == 1.0


def test_an_import_names_the_settings_its_controls_cannot_take():
    """A command-line run may use values past the page's sliders (top-k 1000): the import names them
    instead of leaving them out in silence (Copy link then writes the controls' values, another run)."""
    page, parts, registry = built_page()
    out = files.do_import(page, parts, registry, dumps(tiny_trace(top_k=1000)).encode(), "log_p_hat", False, [])
    said = out[parts["import_status"]]
    assert "Past what the controls take, left as they were: top_k 1000." in said
    assert page.settings["top_k"] not in out
    plain = files.do_import(page, parts, registry, dumps(tiny_trace()).encode(), "log_p_hat", False, [])
    assert "Past what" not in plain[parts["import_status"]]


def test_export_with_no_run_says_so_and_a_run_exports(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "EXPORT_DIR", str(tmp_path))
    for nothing in (None, {}, {**tiny_trace(), "steps": []}):
        assert files.export(nothing) == (None, files.NOTHING) == files.export_html(nothing, "log_p_hat", 1)
    path, said = files.export(tiny_trace())
    assert said == "" and [s["tokens"] for s in loads(open(path, encoding="utf-8").read())["steps"]] == [
        s["tokens"] for s in tiny_trace()["steps"]]
    path, said = files.export_html(tiny_trace(), "log_p_hat", 1)
    assert said == "" and path.endswith(".html") and "<html" in open(path, encoding="utf-8").read().lower()


def test_a_trace_with_no_steps_is_refused_and_the_run_on_screen_stays():
    page, parts, registry = built_page()
    empty = {**tiny_trace(), "steps": []}
    out = files.do_import(page, parts, registry, dumps(empty).encode(), "log_p_hat", False, [])
    assert "no steps" in out[parts["import_status"]] and out[parts["import_file"]] is None
    assert set(out) == {parts["import_status"], parts["import_file"]}     # nothing else on the page changes


def wide_step(n: int = 60) -> dict:
    parents = [-1] * 12 + [i % 12 for i in range(n - 12)]
    p_hat = [0.5 / (1 + i) for i in range(n)]
    return {"tokens": list(range(n)), "texts": [f"t{i}" for i in range(n)], "parents": parents,
            "depth": [1] * 12 + [2] * (n - 12), "q": p_hat, "p_hat": p_hat, "rank": [0] * n, "accepted": [0],
            "rejected": 12, "bonus_token": 1, "bonus_text": "b", "expected_accept": 1.0, "accept_length": 1}


def test_presenter_trees_stay_short_and_titles_take_two_lines():
    step = wide_step()
    tall = tree_figure(step).layout.height
    short = tree_figure(step, present=True)
    assert tall > PRESENT_HEIGHT and short.layout.height == PRESENT_HEIGHT
    labels = [t for t in short.data if t.name == "draft nodes"][0].text
    assert sum(bool(x) for x in labels) < len(labelled_nodes(step)) <= LABELLED
    title = step_title({"meta": {"method": "opt-tree"}, "steps": [step]}, 0)
    assert title.count("<br>") == 1 and "60 nodes" in title.split("<br>")[0]


def test_numbers_that_look_contradictory_say_why():
    assert "belief" in style.P_HAT_TITLE and "belief" in style.coloraxis("log_p_hat")["colorbar"]["title"]["text"]
    trace = {"steps": [{"auto": {"chosen_nodes": 5}}, {}]}
    assert "modelled" in speed_note(trace, 0) and "measured" in speed_note(trace, 0)
    assert speed_note(trace, 1) == "" and speed_note(None, None) == ""


def test_labels_keep_a_label_apart_in_a_squeezed_tree_and_clear_the_roots_label():
    step = wide_step()
    fig = tree_figure(step, present=True, context="the text so far")
    nodes = [t for t in fig.data if t.name == "draft nodes"][0]
    columns: dict = {}
    for x, y, text in zip(nodes.x, nodes.y, nodes.text):
        if text:
            columns.setdefault(x, []).append(y)
    gaps = [b - a for ys in columns.values() for a, b in zip(sorted(ys), sorted(ys)[1:])]
    assert gaps and min(gaps) >= 2.0, gaps                   # 18 px labels on rows of about 8 px
    root = [t for t in fig.data if t.name == "root"][0]
    assert root.textposition == "bottom right"
    # An accepted path that leaves the root downwards takes the space below it: the root's label goes above.
    x, y, root_y, _ = tidy_layout(step["parents"], step["p_hat"])
    below = next(i for i in range(len(x)) if x[i] == 1 and y[i] > root_y)
    down = tree_figure({**step, "accepted": [below]}, context="x")
    assert [t for t in down.data if t.name == "root"][0].textposition == "top right"



def test_a_step_typed_past_either_end_shows_the_nearest_step():
    """gr.Slider refuses a typed value outside its range before any handler runs (each view then shows
    a bare "Error"): every event that reads a step scrubber takes its raw value, which `clamp` bounds."""
    import asyncio

    from gradio.state_holder import SessionState

    from opttree.serve.service import RunService
    from ui.app import build_app

    demo = build_app(RunService(registry=load_registry()))
    by_elem = {getattr(b, "elem_id", None): b for b in demo.blocks.values()}
    trace = tiny_trace()
    last = len(trace["steps"])
    for elem, scrubbing in (("step", {"show", "prev_step", "next_step", "play", "tick"}),
                            ("compare-step", {"panels_at", "at_table_budget"})):
        fns = [f for f in demo.fns.values() if by_elem[elem] in f.inputs and f.name in scrubbing]
        assert {f.name for f in fns} == scrubbing and not any(f.preprocess for f in fns), elem
    show = next(f for f in demo.fns.values() if f.name == "show" and by_elem["step"] in f.inputs)
    for typed, shown in ((99, last), (0, 1), (-4, 1), (1, 1)):
        state = SessionState(demo)
        state[show.inputs[0]._id] = trace                   # the session's run
        out = asyncio.run(demo.process_api(block_fn=show, inputs=[None, typed, "log_p_hat", False], state=state))
        assert out["data"][0]["value"] == shown, typed
    with pytest.raises(gr.Error):                   # what a plain slider does with it
        gr.Slider(minimum=1, maximum=17, step=1).preprocess(99)


class Part:
    """A stand-in for a page component: a key that is not a string, as Gradio's components are (an update
    built with `**{component: value}` fails on them, as on the page, and passes with string keys)."""

    def __init__(self, name: str):
        self.name = name


def explore_page() -> Page:
    """Explore's page with a `Part` for each component `run_explore` updates."""
    names = dict(trace="trace", history="history", colour="colour", link="link", model="model", prompt="prompt",
                 status="status", step="step", bars="bars", learn_plot="learn", learn_status="ls", ea_plot="ea",
                 ea_text="ea_text", present="present", caption="caption", ran="ran", link_box="box",
                 tree_title="tree_title")
    return Page(**{k: Part(v) for k, v in names.items()}, settings={k: Part(k) for k in SETTING_NAMES},
                views=[Part(v) for v in ("tree", "text", "metrics", "why")])


def explore_updates(prompt: str, stop_after: int | None = None, **settings) -> list[dict]:
    """The updates of one Explore run of `prompt` on a tiny pair whose draft is its target, keyed by the
    components' names; `stop_after`: press Stop once that many steps are drawn."""
    from types import SimpleNamespace

    from opttree.serve.allow_list import ModelEntry, Registry
    from opttree.serve.service import RunService

    pair = tiny_pair("classic", draft_is_target=True)
    service = RunService(registry=Registry([ModelEntry("tiny", "tiny pair", "t", "self")], default="tiny"),
                         pair_factory=lambda entry: pair)
    values = [getattr(DecodeConfig(**settings), k) for k in SETTING_NAMES]
    request = SimpleNamespace(session_hash="tab-1")
    updates = []
    for u in explore.run_explore(explore_page(), service, request, "tiny", prompt, *values, None, "p_hat", False, {}):
        updates.append({k.name: v for k, v in u.items()})
        trace = updates[-1].get("trace")
        if stop_after and trace and len(trace["steps"]) >= stop_after:
            service.cancel_session("tab-1")
    return updates


def test_a_tabs_stop_ends_that_tabs_runs_and_not_another_tabs():
    """Explore's Stop stopped a comparison of the same session, and Compare's an Explore run; a closed
    tab still stops every run of its session."""
    import threading
    from types import SimpleNamespace

    from opttree.serve.allow_list import ModelEntry, Registry
    from opttree.serve.service import RunError, RunService
    from ui import compare

    pair = tiny_pair("classic", draft_is_target=True)
    service = RunService(registry=Registry([ModelEntry("tiny", "tiny pair", "t", "self")], default="tiny"),
                         pair_factory=lambda entry: pair)
    request = SimpleNamespace(session_hash="tab-1")
    settings = dict(method="opt-tree", nodes=2, max_depth=1, threshold=0.01, max_new_tokens=40)
    run = service.stream("tiny", "t1 t2", settings, session="tab-1", scope=explore.SCOPE)
    states = []
    with pytest.raises(RunError) as err:
        for up in run:
            states.append(up.state)
            if states.count("running") == 1:
                explore.stop(service, compare.SCOPE, request)          # Compare's Stop: not this run
                assert service.cancel_session("tab-2") == 0            # nor another session's
            if states.count("running") == 3:
                explore.stop(service, explore.SCOPE, request)          # Explore's own Stop
    assert err.value.kind == "cancelled" and len(err.value.trace["steps"]) >= 3
    flags = [threading.Event(), threading.Event()]
    for flag, scope in zip(flags, (explore.SCOPE, compare.SCOPE)):
        service.sessions.register("tab-1", flag, scope)
    assert service.cancel_session("tab-1") == 2 and all(f.is_set() for f in flags)   # a closed tab


def test_copy_link_follows_the_run_on_screen_and_a_refused_run_leaves_it():
    """A run that starts drawing becomes what Copy link writes and hides the link copied before (it named
    the run before); a refused run (an empty prompt) changes neither: the page still shows the last run."""
    refused = explore_updates("   ", max_new_tokens=6)
    assert "prompt is empty" in refused[-1]["status"]
    assert not any(part in u for u in refused for part in ("ran", "box", "caption", "bars", "trace"))
    updates = explore_updates("t1 t2", max_new_tokens=6)
    assert updates[0]["status"] == "Starting…"           # at once, not the last run's "Done" until a step is drawn
    drawn = [u for u in updates if "trace" in u]
    assert drawn and all(u["ran"]["prompt"] == "t1 t2" for u in drawn)
    assert drawn[0]["box"].visible is False and not any("box" in u for u in drawn[1:])   # a link copied mid-run stays


def test_a_finished_run_lands_on_its_last_step_with_a_tree():
    """The last step of a run often has one token left, which the target picks alone (no tree): the view
    lands on the step before it, the scrubber still reaches every step."""
    # The draft is the target, so a depth-3 step commits 4 tokens: 4 + 4, then 1 left with no tree.
    final = explore_updates("t1 t2", method="chain", nodes=3, max_depth=3, max_new_tokens=9)[-1]
    steps = final["trace"]["steps"]
    assert [len(s["tokens"]) for s in steps] == [3, 3, 0] and final["status"].startswith("Done: step 3")
    assert final["step"].value == 2 and final["step"].maximum == 3
    timer, shown, *_ = explore.play(final["trace"], 2, "log_p_hat", False)   # Play from there replays the run
    assert timer.active and shown.value == 1


def test_a_finished_run_lands_on_its_last_tree_with_the_whole_depth_open():
    """The steps before the last have their depth capped by the tokens left, and a builder spends their
    budget on a fan one or two layers deep (a lesson's first view contradicted its caption): the view
    lands on the last step whose depth the tokens left did not cap."""
    from ui.common import last_tree_step

    def trace(committed, max_new=24, max_depth=10):
        steps = [{"committed": [0] * c, "tokens": [1] if i < len(committed) - 1 else []}
                 for i, c in enumerate(committed)]
        return {"meta": {"max_new_tokens": max_new, "max_depth": max_depth}, "steps": steps}

    # tokens left before each step: 24 23 18 15 12 11 10 5 2 1; the depth is capped from the 7th (9 < 10)
    assert last_tree_step(trace([1, 5, 3, 3, 1, 1, 5, 3, 1, 1])) == 5
    assert last_tree_step(trace([5, 4, 1], max_new=10, max_depth=10)) == 1   # none uncapped: the last tree
    assert last_tree_step(trace([1])) == 0 and last_tree_step({"steps": []}) == 0


def test_a_stopped_run_keeps_its_steps_on_screen():
    """Stop ends the run at its next step: the status says so and the steps it drew stay, with Copy link on
    them (a stopped run's last update once raised, and the page never left 'Running')."""
    updates = explore_updates("t1 t2", stop_after=1, method="chain", nodes=1, max_depth=1, max_new_tokens=40)
    final = updates[-1]
    assert "Stopped" in final["status"] and 1 <= len(final["trace"]["steps"]) < 40
    assert final["ran"]["prompt"] == "t1 t2"


def test_serving_clamps_a_typed_node_count():
    """Serving's n: a typed 1000 or 0 exports the nearest n the slider allows and shows it in the box,
    never Gradio's bare error (the events take the raw value)."""
    from opttree.serve.service import RunService
    from ui import serving
    from ui.app import build_app
    from viz.serving import MAX_EXPORT_NODES

    demo = build_app(RunService(registry=load_registry()))
    box = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "export-nodes")
    fns = [f for f in demo.fns.values() if box in f.inputs]
    assert fns and not any(f.preprocess for f in fns)
    trace = tiny_trace()
    for typed, n in ((1000, MAX_EXPORT_NODES), (0, 1), (-5, 1), (3.0, 3)):
        slider, text = serving.export_at(trace, "sequoia", typed)
        assert slider.value == n and text == serving.show_export(trace, "sequoia", n), typed
    assert serving.export_at(trace, "binary", "lots")[0].value == serving.default_nodes(trace)


def test_compares_step_box_shows_the_step_its_panels_show():
    from ui.compare import panels_at

    short, long = tiny_trace(max_new_tokens=4), tiny_trace(max_new_tokens=12)
    state = {"traces": {"opt-tree@6": long, "binary@6": short}}
    last = len(long["steps"])
    assert last > len(short["steps"]) >= 1
    for typed, shown in ((99, last), (0, 1), (-3, 1), ("x", 1), (2, 2)):
        box, left, right = panels_at(state, "n = 6", "binary", typed)
        assert box.value == shown, typed
        assert f" · step {shown}/{last} · " in left.layout.title.text


def test_scrubbing_back_during_a_live_run_keeps_the_view_there(monkeypatch):
    """A live run follows its newest step until the visitor scrubs back: then redraws only extend the
    scrubber, and the run ends on the visitor's step; scrubbing to the newest step follows again."""
    from types import SimpleNamespace

    from opttree.serve.allow_list import ModelEntry, Registry
    from opttree.serve.service import RunService

    monkeypatch.setattr(explore, "LIVE_REDRAW_S", 0.0)            # draw every step
    pair = tiny_pair("classic", draft_is_target=True)
    service = RunService(registry=Registry([ModelEntry("tiny", "tiny pair", "t", "self")], default="tiny"),
                         pair_factory=lambda entry: pair)
    values = [getattr(DecodeConfig(method="chain", nodes=1, max_depth=1, max_new_tokens=30), k) for k in SETTING_NAMES]
    request, page = SimpleNamespace(session_hash="tab-9"), explore_page()
    run = explore.run_explore(page, service, request, "tiny", "t1 t2", *values, None, "p_hat", False, {})
    named = ({k.name: v for k, v in u.items()} for u in run)
    update = next(u for u in named if u.get("trace") and len(u["trace"]["steps"]) >= 4)
    assert update["step"].value == 4 and "tree" in update
    shown, *_ = explore.prev_step(update["trace"], 4, "log_p_hat", False, request)   # back to step 3
    assert shown.value == 3
    rest = list(named)
    live, final = rest[:-1], rest[-1]
    assert live and all("tree" not in u and "value" not in u["step"].constructor_args for u in live)   # it stays
    # with its title alone following the run's step count (the status's "Running: step N")
    assert all(f" · step 3/{u['status'].split('step ')[1].split(',')[0]} · " in u["tree_title"] for u in live)
    assert final["status"].startswith("Done") and final["step"].value == 3 and "tree" in final
    assert final["step"].maximum == len(final["trace"]["steps"]) and not explore.LIVE and not explore.PINNED
    # During a run, the newest step unpins the view again; an earlier one pins it.
    trace, visitor = final["trace"], SimpleNamespace(session_hash="tab-8")
    explore.LIVE.add("tab-8")
    try:
        explore.show(trace, 2, "log_p_hat", False, visitor)
        assert explore.PINNED == {"tab-8": 1}
        explore.next_step(trace, len(trace["steps"]) - 1, "log_p_hat", False, visitor)
        assert explore.PINNED == {}
    finally:
        explore.LIVE.discard("tab-8")


def test_each_run_starts_with_the_pinned_title_cleared():
    """The page relayouts a pinned tree's title on the hidden title box's change event, which Gradio fires
    only for a new value: a run of the same prompt and settings pinned at the same step would send the title
    the run before left in the box, and the tree would keep the step total it was drawn with. Each run's
    first update empties the box (TITLE_JS skips an empty title), so its first pinned title is a change."""
    first = explore_updates("t1 t2", method="chain", nodes=1, max_depth=1, max_new_tokens=2)[0]
    assert first["status"] == "Starting…" and first["tree_title"] == ""


def test_pause_shows_only_while_steps_play():
    """Play shows Pause in its place and the timer runs; the last step, or Pause, stops it and shows Play
    again (the page's Space key presses whichever shows, so it follows mouse clicks and a playback's end)."""
    trace = tiny_trace()
    last = len(trace["steps"])
    timer, *_, play_btn, pause_btn = explore.play(trace, 1, "log_p_hat", False)
    assert timer.active and play_btn.visible is False and pause_btn.visible is True
    timer, *_, play_btn, pause_btn = explore.tick(trace, last - 1, "log_p_hat", False)
    assert timer.active and pause_btn.visible is True
    timer, shown, *_, play_btn, pause_btn = explore.tick(trace, last, "log_p_hat", False)
    assert not timer.active and shown.value == last and play_btn.visible is True and pause_btn.visible is False
    timer, play_btn, pause_btn = explore.playing(False)
    assert not timer.active and play_btn.visible is True and pause_btn.visible is False



def test_a_new_run_or_an_import_takes_the_exported_files_away():
    """The export boxes offer the run they were made from: when the shown run changes (a run, an import),
    both are emptied, never left linking the run before."""
    from opttree.serve.service import RunService
    from ui.app import build_app

    demo = build_app(RunService(registry=load_registry()))
    by_elem = {getattr(b, "elem_id", None): b for b in demo.blocks.values()}
    boxes = [by_elem["export-file"], by_elem["export-html-file"]]
    run = next(f for f in demo.fns.values() if f.api_name == "run")
    imported = next(f for f in demo.fns.values() if f.name == "do_import")
    on_change = [f for f in demo.fns.values() if f.outputs == boxes and f.targets[0][1] == "change"]
    assert len(on_change) == 1 and on_change[0].fn() == (None, None)
    listened = demo.blocks[on_change[0].targets[0][0]]
    assert isinstance(listened, gr.State) and listened in run.outputs and listened in imported.outputs
    # not the trace: Gradio hashes a listened state at every event that outputs it (a live run's redraws)
    assert listened is not run.outputs[0] and listened.value == {}


def test_an_import_lands_where_a_finished_run_lands():
    """An import comes back as if it had just run: on its last step with a tree, not on step 1."""
    page, parts, registry = built_page()
    trace = tiny_trace(method="chain", nodes=3, max_depth=3, max_new_tokens=9)    # steps of 3, 3, then 0 tokens
    assert [len(s["tokens"]) for s in trace["steps"]] == [3, 3, 0]
    out = files.do_import(page, parts, registry, dumps(trace).encode(), "log_p_hat", False, [])
    assert out[page.step].value == 2 and out[page.step].maximum == 3


def test_messages_print_big_bounds_whole_and_an_import_names_its_drafter():
    from ui.controls import checked_controls

    with pytest.raises(BadInput, match=r"seed must be between 0 and 9,007,199,254,740,992, got -5\."):
        DecodeConfig(seed=-5)
    with pytest.raises(BadInput, match=r"^Seed must be between 0 and 9,007,199,254,740,992, got -5\.$"):
        checked_controls({"seed": -5})
    page, parts, registry = built_page()
    trace = tiny_trace()
    trace["meta"]["drafter"] = "lookup"
    out = files.do_import(page, parts, registry, dumps(trace).encode(), "log_p_hat", False, [])
    assert out[parts["import_status"]].startswith("Loaded a binary run (drafter: lookup) with ")
