"""The standalone HTML export: one file, no server, the same trees and text as the app."""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import pytest
from tiny import tiny_pair

from opttree.config import DecodeConfig
from opttree.engine.speculative import run
from viz.html_export import standalone_html
from viz.metrics import step_rows
from viz.text_view import step_summary
from viz.tree_figure import TREE_NAME, step_title, tree_figure

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def trace():
    pair = tiny_pair("classic", draft_is_target=True)
    t = run(pair, "", DecodeConfig(method="opt-tree", nodes=8, max_depth=3, max_new_tokens=12), prompt_ids=[5, 6])
    t["prompt"] = "</script><script>alert(1)</script>"    # hostile text stays text
    return t


def embedded(page: str) -> dict:
    raw = re.search(r'<script id="run-data" type="application/json">(.*?)</script>', page, re.S).group(1)
    return json.loads(raw)


def test_one_file_with_every_step_and_no_network(trace):
    page = standalone_html(trace)
    data = embedded(page)
    n = len(trace["steps"])
    assert n > 1 and len(data["figures"]) == len(data["texts"]) == len(data["metrics"]) == n
    for i, step in enumerate(trace["steps"]):
        fig = tree_figure(step, step_title(trace, i)).to_plotly_json()
        assert data["figures"][i]["layout"]["title"]["text"] == fig["layout"]["title"]["text"]
        assert len(data["figures"][i]["data"]) == len(fig["data"])
    assert "<script>alert(1)</script>" not in page and "&lt;/script&gt;" in page
    assert not re.search(r'<script[^>]+src=|<link[^>]+href=', page)    # nothing to fetch
    assert "Plotly" in page and len(page) > 1_000_000     # plotly.js itself is inside


def test_no_text_of_a_run_can_end_or_reopen_the_script_its_data_sits_in(trace):
    """The run's data is JSON inside a <script> element: a method named "<!--<script>" (an imported trace's meta
    is free text) made the HTML parser read past that element's end and take the page's own scripts into it
    (in Chromium: no tree, no steps, nothing to click). No "<" reaches the element as it is, and the data reads
    back whole."""
    hostile = {**trace, "meta": {**trace["meta"], "method": "<!--<script>"}}
    page = standalone_html(hostile)
    raw = re.search(r'<script id="run-data" type="application/json">(.*?)</script>', page, re.S).group(1)
    assert "<" not in raw
    assert embedded(page)["figures"][0]["layout"]["title"]["text"] == step_title(hostile, 0)


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Chromium not installed (make browser)")
def test_opens_offline_and_the_scrubber_and_keys_move_the_step(trace, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    path = tmp_path / "run.html"
    path.write_text(standalone_html(trace), encoding="utf-8")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        page = browser.new_context(offline=True).new_page()       # no network at all
        page.goto(path.as_uri())
        title = "() => document.querySelector('#tree .gtitle').textContent"
        page.wait_for_selector("#tree .gtitle")
        assert "step 1/" in page.evaluate(title)
        page.keyboard.press("ArrowRight")
        page.wait_for_function(f"() => ({title})().includes('step 2/')")
        page.click("#next")
        page.wait_for_function(f"() => ({title})().includes('step 3/')")
        page.locator("#text [data-step='0']").first.click()
        page.wait_for_function(f"() => ({title})().includes('step 1/')")
        assert page.locator("#metrics tr").count() == len(step_rows(trace["meta"], trace["steps"][0]))   # the app's
        browser.close()


def test_the_header_names_the_models_once_and_the_page_opens_at_the_exported_step(trace):
    meta = {**trace["meta"], "target": "target-xyz", "draft": "draft-xyz"}
    page = standalone_html({**trace, "meta": meta}, start=2)
    assert page.count("target-xyz") == 1 and page.count("draft-xyz") == 1
    assert "show(2);" in page and 'value="3"' in page
    assert "show(0);" in standalone_html(trace, start=-5)                         # clamped into the run
    last = len(trace["steps"]) - 1
    assert f"show({last});" in standalone_html(trace, start=10_000)


def test_a_run_summary_explains_why_e_a_and_accepted_tokens_differ():
    from viz.metrics import belief_note

    assert "draft's own belief" in belief_note({"mean_expected_accept": 3.29, "mean_accepted_draft_tokens": 1.40})
    assert "over-states" in belief_note({"mean_expected_accept": 3.29, "mean_accepted_draft_tokens": 1.40})
    assert belief_note({"mean_expected_accept": 1.5, "mean_accepted_draft_tokens": 1.4}) == ""


def export_page(browser, trace, tmp_path, start: int = 0):
    """The export of `trace` opened in `browser` at step `start`, its clock held (Play moves only when the test
    runs the clock), once its tree is drawn and its keys set up."""
    path = tmp_path / "run.html"
    path.write_text(standalone_html(trace, start=start), encoding="utf-8")
    pg = browser.new_page()
    pg.clock.install()
    pg.goto(path.as_uri())
    pg.wait_for_selector("#tree .gtitle")
    pg.wait_for_function("() => document.querySelector('#text .gen-text .tok[tabindex=\"0\"]')", timeout=10_000)
    return pg


TITLE = "() => document.querySelector('#tree .gtitle').textContent"
# Where the focus is: a token (its step), one of the chart's tools, or another element (its id).
FOCUS = """() => { const e = document.activeElement;
  if (e.matches('.gen-text .tok')) return 'token ' + e.dataset.step;
  if (e.closest('.modebar')) return 'tool';
  return e === document.body ? 'body' : e.id; }"""


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Chromium not installed (make browser)")
def test_the_export_takes_the_keys_and_names_of_the_page(trace, tmp_path):
    """The export's keys and names are the page's (assets/keys.js): Tab reaches the generated text once and the
    chart's toolbar once, ← / → move among the tokens (never stepping) and Enter or Space shows a token's step
    with the focus kept on it; the step keys leave a focused slider its own arrows (one step a key); the step
    buttons are named in words, and Pause shows while steps play."""
    from app_server import headless_chromium  # the browser tests' Chromium (imports Playwright)

    expect = pytest.importorskip("playwright.sync_api").expect
    with headless_chromium() as browser:
        pg = export_page(browser, trace, tmp_path)
        stops = []
        for _ in range(8):
            pg.keyboard.press("Tab")
            stops.append(pg.evaluate(FOCUS))
        assert stops[:6] == ["prev", "step", "next", "play", "tool", "token 0"], stops
        assert stops.count("tool") == 1 and stops.count("token 0") == 1, stops
        pg.focus("#play")
        pg.keyboard.press("Tab")
        pg.keyboard.press("Tab")
        first = pg.locator("#text .gen-text .tok[data-step='0']").count()
        for _ in range(first):
            pg.keyboard.press("ArrowRight")
        assert pg.evaluate(FOCUS) == "token 1" and "step 1/" in pg.evaluate(TITLE)    # the arrows never step
        pg.keyboard.press("Enter")
        pg.wait_for_function(f"() => ({TITLE})().includes('step 2/')")
        assert pg.evaluate(FOCUS) == "token 1" and pg.locator("#text .tok[tabindex='0']").count() == 1
        pg.keyboard.press("Home")
        pg.keyboard.press(" ")
        pg.wait_for_function(f"() => ({TITLE})().includes('step 1/')")
        assert pg.locator("#pause").is_hidden()                                        # Space showed, never played
        pg.focus("#step")
        pg.keyboard.press("ArrowRight")
        pg.wait_for_function(f"() => ({TITLE})().includes('step 2/')")
        assert pg.input_value("#step") == "2"                                        # one step, not two
        pg.locator("#text .gen-text .tok[data-step='0']").first.click()              # a click shows its step
        pg.wait_for_function(f"() => ({TITLE})().includes('step 1/')")
        pg.keyboard.press("ArrowRight")                                              # and leaves → to the steps
        pg.wait_for_function(f"() => ({TITLE})().includes('step 2/')")
        names = {"prev": "Previous step", "next": "Next step", "play": "Play steps", "step": "Step"}
        for id_, name in names.items():
            expect(pg.locator(f"#{id_}")).to_have_accessible_name(name)
        pg.click("#play")
        expect(pg.locator("#pause")).to_have_accessible_name("Pause")
        assert pg.locator("#play").is_hidden() and pg.inner_text("#pause") == "❚❚ Pause"
        pg.clock.run_for(800)
        pg.wait_for_function(f"() => ({TITLE})().includes('step 3/')")
        pg.click("#pause")
        assert pg.locator("#pause").is_hidden() and pg.locator("#play").is_visible()


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Chromium not installed (make browser)")
def test_the_export_says_each_new_step_and_names_its_chart(trace, tmp_path):
    """A screen reader hears each new step in the export as in the app (assets/keys.js): → puts the new step's
    sentence (viz/text_view.py step_summary) in a polite live region outside the text each step redraws, the
    drawn copy hidden from readers; the tree chart is a figure named as the app's."""
    from app_server import headless_chromium  # the browser tests' Chromium (imports Playwright)

    expect = pytest.importorskip("playwright.sync_api").expect
    said = [html.unescape(step_summary(trace, i)) for i in range(2)]
    assert said[0] != said[1]
    with headless_chromium() as browser:
        pg = export_page(browser, trace, tmp_path)
        live = "() => document.querySelector('[aria-live]')?.textContent"
        pg.wait_for_function(f"(said) => ({live})() === said", arg=said[0], timeout=10_000)
        pg.keyboard.press("ArrowRight")
        pg.wait_for_function(f"() => ({TITLE})().includes('step 2/')")
        pg.wait_for_function(f"(said) => ({live})() === said", arg=said[1], timeout=10_000)
        region = pg.locator("[aria-live]")
        assert region.count() == 1 and region.get_attribute("aria-live") == "polite"
        assert pg.evaluate("document.querySelector('[aria-live]').closest('#text')") is None   # not redrawn
        assert pg.locator("#text p.sr-only").count() == 1
        assert pg.get_attribute("#text p.sr-only", "aria-hidden") == "true"
        assert pg.text_content("#text p.sr-only") == said[1]
        assert pg.get_attribute("#tree", "role") == "figure"
        expect(pg.locator("#tree")).to_have_accessible_name(TREE_NAME)


def test_html_exports_run_one_at_a_time_never_behind_a_model_run():
    """An HTML export builds every step's figure at once: an imported trace near the upload limit takes tens of
    seconds and gigabytes (200 steps of 2,000 nodes, a 15 MB file: 9 s and 1 GB on a 2-core CPU), and unqueued,
    a few clicks at once could take a public server's memory. Exports wait for each other, in a queue of their
    own that no model run is in."""
    from opttree.serve.allow_list import load_registry
    from opttree.serve.service import RunService
    from ui.app import build_app

    demo = build_app(RunService(registry=load_registry()))
    (export,) = [f for f in demo.fns.values() if f.name == "export_html"]
    runs = {f.concurrency_id for f in demo.fns.values() if f.name in ("run_explore", "run_compare", "generate")}
    assert export.queue and export.concurrency_limit == 1 and export.concurrency_id not in runs


def test_a_traces_names_show_as_text_in_the_metrics_and_the_export(trace):
    """The metrics panel is Markdown, and an imported trace's names and stop reasons are free text: a target named
    '![x](https://…)' made every visitor who imported it fetch that image, a stop reason '[…](…)' was a link. Each
    shows as itself there, and as itself (no Markdown escapes) in the HTML export's summary."""
    from viz.metrics import step_metrics

    image, link = "![x](https://example.com/p.png)", "[click](https://example.com/)"
    steps = [{**s, "stop_reason": link} for s in trace["steps"]]
    hostile = {**trace, "meta": {**trace["meta"], "target": image, "draft": "my_draft"}, "steps": steps}
    shown = step_metrics(hostile, 0)
    assert r"Target \!\[x\]\(https://example.com/p.png\) · draft my\_draft" in shown
    assert r"| why it stopped growing | \[click\]\(https://example.com/\) |" in shown
    assert "Target ![x](https://example.com/p.png) · draft my_draft<br>" in standalone_html(hostile)


@pytest.mark.parametrize("method", ["x*", "a\\", "**x**"])
def test_a_bold_name_ending_in_an_escaped_character_shows_as_itself_in_the_export(trace, method):
    """The export's summary turns run_summary's Markdown into HTML: its bold method is '**' + the escaped name +
    '**', and a name ending in '*' ('x*', escaped 'x\\*') closed the bold at the escaped star, so the page read
    'x\\*' (a backslash and a star outside the bold). An escaped character is read before any '**'."""
    page = standalone_html({**trace, "meta": {**trace["meta"], "method": method}})
    assert f"Run: <b>{html.escape(method)}</b>" in page
