"""The page in a real browser (Debian Chromium driven by Playwright): sliders, a preset run, the step
scrubber, token clicks, Play, and Compare. Screenshots go to tmp/artifacts/ (test artifacts).

Also measures how long one scrubber step takes to redraw a 60-node tree in the browser; the number
is printed and saved to tmp/artifacts/redraw.json for docs/app.md, never asserted (timing depends
on the machine and its load)."""

import json
import statistics
from pathlib import Path
from urllib.parse import urlencode

import pytest
from app_server import ARTIFACTS, CHROMIUM, browser_on_app, drafting_model_id

from viz.lessons import PRESETS

sync_api = pytest.importorskip("playwright.sync_api")
PlaywrightTimeout = sync_api.TimeoutError

PLOT = "#tree-plot .js-plotly-plot"
RUN_TIMEOUT_MS = 240_000

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Chromium not installed (make browser)")


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    with browser_on_app(tmp_path_factory.mktemp("browser"), default=drafting_model_id()) as (browser, url):
        pg = browser.new_page(viewport={"width": 1400, "height": 1000})
        pg.set_default_timeout(60_000)
        pg.goto(url)
        pg.wait_for_selector(PLOT)
        yield pg


def shot(pg, name):
    pg.screenshot(path=str(ARTIFACTS / name), full_page=True)


def set_slider(pg, elem_id, value):
    box = pg.locator(f"#{elem_id} input[type=number]")
    box.fill(str(value))
    box.press("Enter")
    assert float(box.input_value()) == float(value)


STATUS_TEXT = """(sel) => {
    // Only the Markdown's own text: the element also holds Gradio's progress timer while pending.
    const el = document.querySelector(sel + ' [data-testid="markdown"]') || document.querySelector(sel + ' .prose')
        || document.querySelector(sel);
    return el.innerText;
}"""


# A run that outlasts a Stop or queue check on a busy machine: an open-ended prompt the target answers past
# the slider's 256 tokens (about 100 steps). The default prompt ends after about 90 tokens, a few seconds, and
# a run that ends by itself before Stop (or before a second visitor queues) fails a test; those tests say so.
LONG_RUN = {"prompt": "Write a long story about a lighthouse keeper and a storm.", "max_new_tokens": "256"}


def open_long_run(pg):
    """Explore opened by a deep link set for LONG_RUN (not started)."""
    pg.goto(pg.url.split("?")[0] + "?" + urlencode(LONG_RUN))
    pg.wait_for_selector(PLOT)
    pg.wait_for_function("(want) => document.querySelector('#prompt textarea').value === want",
                         arg=LONG_RUN["prompt"])


def wait_stopped(pg):
    """Waits for the run's end and says whether Stop ended it or it ran out by itself first."""
    pg.wait_for_function(f"() => /Stopped|Done/.test(({STATUS_TEXT})('#status'))", timeout=RUN_TIMEOUT_MS)
    status = pg.evaluate(STATUS_TEXT, "#status")
    assert "Stopped" in status, f"the run ended before Stop reached it: {status!r}"


def start_and_wait(pg, click_selector, status="#status"):
    # Wait for a "Done" that differs from the status before the click (an earlier run's "Done"
    # names other step and token counts); the DOM itself is left alone, Svelte owns it.
    before = pg.evaluate(STATUS_TEXT, status)
    pg.click(click_selector)
    pg.wait_for_function(f"([sel, before]) => {{ const t = ({STATUS_TEXT})(sel);"
                         " return t !== before && /Done/.test(t); }", arg=[status, before],
                         timeout=RUN_TIMEOUT_MS)


def plot_state(pg, selector=PLOT):
    """Title, trace names, node points and the accepted-path trace of a Plotly plot, read from the DOM."""
    return pg.evaluate("""(sel) => {
        const gd = document.querySelector(sel);
        const acc = gd.data.find(t => (t.name || '').startsWith('accepted path'));
        const nodes = gd.data.find(t => t.name === 'draft nodes');
        return {title: gd.layout.title && gd.layout.title.text, names: gd.data.map(t => t.name),
                nodes: nodes ? nodes.x.length : 0,
                depth: nodes ? Math.max(0, ...nodes.x) : 0,
                points: gd.querySelectorAll('.scatterlayer .point').length,
                accepted: acc ? JSON.stringify([acc.x, acc.y, acc.text]) : null,
                tree: nodes ? JSON.stringify([nodes.x, nodes.y, nodes.hovertext]) : null};
    }""", selector)


def step_value(pg) -> int:
    return int(float(pg.locator("#step input[type=number]").input_value()))


def wait_title_change(pg, old):
    pg.wait_for_function("([sel, old]) => { const gd = document.querySelector(sel);"
                         " return gd && gd.layout.title && gd.layout.title.text !== old; }", arg=[PLOT, old])


def test_explore_preset_scrub_and_click(page):
    pg = page
    shot(pg, "01-loaded.png")
    start_and_wait(pg, "#preset-0")
    assert pg.locator("#prompt textarea").input_value().startswith("Count from 1")
    last = plot_state(pg)
    assert last["points"] > 0 and last["accepted"] is not None
    assert {"draft edges", "draft nodes", "bonus token (from the target)"} <= set(last["names"])
    shot(pg, "02-preset-run.png")
    n_steps = step_value(pg)
    assert n_steps >= 2, "the preset should take several steps"

    # Scrub backwards through every step: the tree and the accepted path follow the step.
    seen_trees, seen_paths = {last["tree"]}, {last["accepted"]}
    for _ in range(n_steps - 1):
        before = plot_state(pg)
        pg.click("#prev")
        wait_title_change(pg, before["title"])
        now = plot_state(pg)
        assert now["points"] > 0 and now["accepted"] is not None
        seen_trees.add(now["tree"])
        seen_paths.add(now["accepted"])
    assert step_value(pg) == 1
    assert len(seen_trees) > 1 and len(seen_paths) > 1

    # Next moves forward; the slider's own input moves too.
    before = plot_state(pg)
    pg.click("#next")
    wait_title_change(pg, before["title"])
    assert step_value(pg) == 2
    # Clicking a token of the first step's text jumps the scrubber back there.
    before = plot_state(pg)
    pg.locator("#gen-text [data-step='0']").first.click()
    wait_title_change(pg, before["title"])
    assert step_value(pg) == 1
    assert pg.locator("#gen-text .tok.current").count() >= 1
    keyboard_route_from_play(pg)

    # The sharper-draft lesson sets the tree temperature slider, and the run reports using it.
    start_and_wait(pg, f"#preset-{preset_index('Sharper draft')}")
    assert float(pg.locator("#tree-temperature input[type=number]").input_value()) == 0.3
    assert "tree temperature 0.3" in pg.locator("#metrics").inner_text()
    # The Thompson lesson switches the length control; Why this shape shows the posterior's draw.
    start_and_wait(pg, f"#preset-{preset_index('Thompson')}")
    assert pg.locator("#length-control input[value=thompson]").is_checked()
    title = pg.evaluate("() => document.querySelector('#why .js-plotly-plot').layout.title.text")
    assert "Thompson sampling" in title and "Beta(" in title

    # The retrieval-fusion lesson turns retrieval on: the server fuses, and each step says what it added.
    fusion = next(i for i, p in enumerate(PRESETS) if p["retrieval"] == "on")
    start_and_wait(pg, f"#preset-{fusion}")
    assert pg.locator("#prompt textarea").input_value().startswith("Summarize the following text")
    # The first step (the last may have one token left and no tree to fuse).
    before = plot_state(pg)
    pg.locator("#gen-text [data-step='0']").first.click()
    wait_title_change(pg, before["title"])
    assert "retrieval:" in pg.locator("#metrics").inner_text()
    shot(pg, "02b-retrieval-fusion.png")


FOCUSED = "() => { const e = document.activeElement; return [e.closest('.block')?.id, e.dataset.step ?? null," \
    " e.getAttribute('data-title')]; }"


def keyboard_route_from_play(pg):
    """At step 1, from Play: Tab reaches the selected step's token (the strip is one stop), → moves on to the next
    step's token and Enter shows that step, the focus staying put; then Tab passes each chart's toolbar once (on
    Download plot as a PNG) and leaves the step. The step buttons are named in words (test_accessibility.py
    checks these keys on a bare page)."""
    assert [pg.get_attribute(f"#{b}", "aria-label") for b in ("prev", "next", "play")] == [
        "Previous step", "Next step", "Play steps"]
    pg.focus("#play")
    pg.keyboard.press("Tab")
    assert pg.evaluate(FOCUSED)[:2] == ["gen-text", "0"]
    for _ in range(40):
        if pg.evaluate(FOCUSED)[1] != "0":
            break
        pg.keyboard.press("ArrowRight")
    before = plot_state(pg)
    pg.keyboard.press("Enter")
    wait_title_change(pg, before["title"])
    assert step_value(pg) == 2 and pg.evaluate(FOCUSED)[:2] == ["gen-text", "1"]
    stops = []
    for _ in range(3):
        pg.keyboard.press("Tab")
        stops.append(pg.evaluate(FOCUSED))
    assert stops[:2] == [["bars", None, "Download plot as a PNG"], ["why", None, "Download plot as a PNG"]], stops
    assert stops[2][0] not in ("bars", "why"), stops


def preset_index(name: str) -> int:
    return next(i for i, p in enumerate(PRESETS) if p["name"].startswith(name))


def test_sliders_run_and_redraw_time(page):
    pg = page
    set_slider(pg, "nodes", 60)
    set_slider(pg, "max-depth", 6)
    set_slider(pg, "threshold", 0.05)
    set_slider(pg, "max-new-tokens", 16)
    pg.locator("#prompt textarea").fill("Write a short poem about autumn.")
    start_and_wait(pg, "#run")
    state = plot_state(pg)
    # The view lands on the last step with a tree (a last step with one token left has none).
    assert 0 < state["nodes"] <= 60 and state["depth"] <= 6, state["title"]
    shot(pg, "03-sliders-run.png")
    n_steps = step_value(pg)

    # Redraw time of one scrubber step (click → new figure drawn), for the docs; not asserted.
    # Walk back to step 1 and forward again to get 2 × (steps − 1) samples.
    timings = []
    pg.evaluate("() => window.scrollTo(0, 0)")
    for i, button in enumerate(["#prev"] * (n_steps - 1) + ["#next"] * (n_steps - 1)):
        if i == n_steps - 1:   # at step 1: a full tree within the sliders' limits
            first = plot_state(pg)
            assert 0 < first["nodes"] <= 60 and first["depth"] <= 6
        timings.append(pg.evaluate("""([sel, button]) => new Promise(resolve => {
            const gd = document.querySelector(sel);
            const old = gd.layout.title.text;
            const t0 = performance.now();
            document.querySelector(button).click();
            const poll = () => {
                if (gd.layout.title.text !== old) {
                    // resolve on the next frame, once the new figure has been painted
                    requestAnimationFrame(() => resolve({ms: performance.now() - t0,
                                                         nodes: gd.data[1].x.length}));
                } else requestAnimationFrame(poll);
            };
            requestAnimationFrame(poll);
        })""", [PLOT, button]))
    if timings:
        ms = [t["ms"] for t in timings]
        report = {"steps_measured": len(ms), "nodes": [t["nodes"] for t in timings],
                  "median_ms": round(statistics.median(ms), 1), "max_ms": round(max(ms), 1),
                  "all_ms": [round(m, 1) for m in ms]}
        (ARTIFACTS / "redraw.json").write_text(json.dumps(report, indent=1))
        print("redraw", report)

    # Play advances the scrubber on its own; Pause stops it.
    set_to = step_value(pg)
    pg.click("#play")
    pg.wait_for_function(f"() => +document.querySelector('#step input[type=number]').value !== {set_to}",
                         timeout=20_000)
    pg.click("#pause")


def test_compare_tab(page):
    """A narrowed Compare (one prompt, one fixed budget, the binary tree, 8 tokens) fills the table, the cost
    chart and both tree panels; tests/app/test_compare_browser.py presses it at its defaults."""
    pg = page
    pg.goto(pg.url.split("?")[0])             # a fresh page: the earlier tests' lessons set a fixed n
    pg.wait_for_selector(PLOT)
    pg.get_by_role("tab", name="Compare").click()
    pg.locator("#compare-prompts label", has_text="only").click()
    for budget in ("4", "10", "60"):
        pg.locator("#compare-budgets label", has_text=budget).first.click()
    set_slider(pg, "compare-tokens", 8)
    boxes = pg.locator("#statics input[type=checkbox]")
    for i in range(boxes.count()):
        label = boxes.nth(i).evaluate("e => e.closest('label').innerText")
        if boxes.nth(i).is_checked() != ("Binary" in label):
            boxes.nth(i).click()
    start_and_wait(pg, "#compare-run", status="#compare-status")
    table = pg.locator("#compare-table").inner_text()
    assert "opt-tree" in table and "binary" in table and "n = 25" in table and "auto" in table
    assert "why slower than AR" in table
    cost = pg.evaluate("() => { const gd = document.querySelector('#compare-cost .js-plotly-plot');"
                       " return gd ? {n: gd.data.length, title: gd.layout.title.text} : null; }")
    assert cost and cost["n"] >= 1 and "What a forward costs here" in cost["title"]
    left = plot_state(pg, "#compare-left .js-plotly-plot")
    right = plot_state(pg, "#compare-right-plot .js-plotly-plot")
    assert left["points"] > 0 and right["points"] > 0
    assert left["title"].startswith("opt-tree") and right["title"].startswith("binary")
    shot(pg, "04-compare.png")
    pg.get_by_role("tab", name="E(A) vs A").click()
    pg.wait_for_selector("#ea-plot .js-plotly-plot")
    text = pg.locator("#ea-r").inner_text()
    assert "Pearson r" in text and "Binned r" in text and "per-step r" in text
    shot(pg, "05-ea-vs-a.png")
    pg.get_by_role("tab", name="Learn").click()
    shot(pg, "06-learn.png")



THEORY_PLOTS = """() => {
    const read = (sel) => {
        const gd = document.querySelector(sel + ' .js-plotly-plot');
        return gd ? {names: gd.data.map(t => t.name), ys: gd.data.map(t => (t.y || []).length),
                     points: gd.querySelectorAll('.scatterlayer .point').length,
                     bars: gd.querySelectorAll('.barlayer .point').length} : null;
    };
    return {dist: read('#theory-dist'), rates: read('#theory-rates'),
            text: document.querySelector('#theory-text').innerText};
}"""


def test_theory_tab_after_a_short_run(page):
    pg = page
    pg.get_by_role("tab", name="Explore").click()
    set_slider(pg, "nodes", 12)
    set_slider(pg, "max-new-tokens", 6)
    start_and_wait(pg, "#run")
    pg.get_by_role("tab", name="Theory").click()
    # Opening the tab loads the Explore step's recorded rows into the node menu and draws the root.
    pg.wait_for_function("() => /Step \\d+, root/.test(document.querySelector('#theory-text').innerText)")
    options = pg.locator('[data-testid="dropdown-option"]')
    for attempt in range(3):     # a click that lands while the menu redraws (a loaded machine) opens nothing
        pg.locator("#theory-node input").click()
        try:
            options.filter(has_text="node ").first.wait_for(timeout=20_000)   # rendered after the click
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
            pg.keyboard.press("Escape")
    labels = options.all_inner_texts()
    assert labels[0].strip().startswith("✓") or "root" in labels[0]
    node = next(i for i, t in enumerate(labels) if "node " in t)
    picked = labels[node].replace("✓", "").strip()
    options.nth(node).click()
    pg.wait_for_function("(label) => document.querySelector('#theory-text').innerText.includes(label.split(' (')[0])",
                         arg=picked)
    state = pg.evaluate(THEORY_PLOTS)
    assert {"target p", "draft q"} <= set(state["dist"]["names"]) and state["dist"]["bars"] >= 2 * 8
    assert len([n for n in state["rates"]["names"] if n != "this tree at this node"]) == 7
    assert state["rates"]["points"] >= 7 * 8                    # every scheme at k = 1..8
    assert "best any verifier could do" in state["text"]
    shot(pg, "09-theory-node.png")
    # The preset redraws both charts with the without-replacement example.
    pg.click("#theory-preset")
    pg.wait_for_function("() => /without replacement beats/.test(document.querySelector('#theory-text').innerText)")
    state = pg.evaluate(THEORY_PLOTS)
    assert state["dist"]["bars"] == 2 * 4 and state["rates"]["points"] == 7 * 8

def test_stop_export_and_import(page, tmp_path):
    from tiny import tiny_pair

    from opttree.config import DecodeConfig
    from opttree.engine.speculative import run
    from opttree.trace_file import dumps

    pg = page
    open_long_run(pg)
    pg.click("#run")
    pg.wait_for_function(f"() => /Running/.test(({STATUS_TEXT})('#status'))", timeout=RUN_TIMEOUT_MS)
    pg.click("#stop")
    wait_stopped(pg)
    stopped_at = step_value(pg)
    assert stopped_at >= 1 and plot_state(pg)["points"] > 0     # the partial run stays on screen

    pg.get_by_role("tab", name="Export / Import").click()
    pg.click("#export")
    pg.wait_for_selector("#export-file a")

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"meta": {}, "summary": {}, "prompt": "", "output_text": "", "output_ids": [],
                               "steps": [{"tokens": [1], "texts": ["a"], "parents": [0], "depth": [1],
                                          "q": [1], "p_hat": [1], "rank": [0], "accepted": [],
                                          "bonus_token": 1, "expected_accept": 1, "ea_by_depth": []}]}))
    pg.locator("#import-file input[type=file]").set_input_files(str(bad))
    pg.wait_for_function(f"() => /invalid trace/.test(({STATUS_TEXT})('#import-status'))")

    trace = run(tiny_pair("classic", draft_is_target=True), "", DecodeConfig(method="binary", nodes=6, max_depth=3,
                                                                             max_new_tokens=6), prompt_ids=[5, 6])
    good = tmp_path / "good.json"
    good.write_text(dumps(trace))
    pg.locator("#import-file input[type=file]").set_input_files(str(good))
    pg.wait_for_function(f"() => /Loaded a binary run/.test(({STATUS_TEXT})('#import-status'))")
    pg.get_by_role("tab", name="Explore").click()
    state = plot_state(pg)
    assert state["title"].startswith("binary") and state["points"] > 0
    shot(pg, "07-imported.png")


def test_queue_position_and_closing_a_tab_frees_the_lane(page):
    pg = page
    other = pg.context.browser.new_page()  # a second visitor (its own Gradio session)
    other.goto(pg.url)
    for p in (pg, other):
        open_long_run(p)
    other.click("#run")
    other.wait_for_function(f"() => /Running/.test(({STATUS_TEXT})('#status'))", timeout=RUN_TIMEOUT_MS)
    pg.click("#run")
    pg.wait_for_function(f"() => /position 1 in the queue|Running|Done/.test(({STATUS_TEXT})('#status'))")
    assert "position 1 in the queue" in pg.evaluate(STATUS_TEXT, "#status"), \
        f"not queued behind the other visitor, whose run reads {other.evaluate(STATUS_TEXT, '#status')!r}"
    shot(pg, "08-queued.png")
    other.close()                          # the unload event cancels the other visitor's run
    pg.wait_for_function(f"() => /Running/.test(({STATUS_TEXT})('#status'))", timeout=RUN_TIMEOUT_MS)
    pg.click("#stop")
    wait_stopped(pg)
    # The final "Stopped." must stay (a late reply from the Stop click once overwrote it), and a
    # Stop with nothing running says so in a toast, leaving the status (the last run's outcome) alone.
    pg.wait_for_timeout(1500)
    assert "Stopped" in pg.evaluate(STATUS_TEXT, "#status")
    pg.click("#stop")
    pg.wait_for_selector("[data-testid='toast-body']:has-text('Nothing is running')")
    assert "Stopped" in pg.evaluate(STATUS_TEXT, "#status")


def test_deep_link_keys_and_copy_link(page):
    pg = page
    pg.goto(pg.url.split("?")[0] + "?preset=0&step=2")
    pg.wait_for_selector("#status")
    pg.wait_for_function(f"() => /Done/.test(({STATUS_TEXT})('#status'))", timeout=RUN_TIMEOUT_MS)
    pg.wait_for_function("() => document.querySelector('#step input[type=number]').value === '2'")
    assert pg.locator("#prompt textarea").input_value() == PRESETS[0]["prompt"]
    assert "step 2/" in plot_state(pg)["title"]
    pg.locator("#tree-plot").click(position={"x": 5, "y": 5})     # focus outside any text field
    pg.keyboard.press("ArrowRight")
    pg.wait_for_function("() => document.querySelector('#step input[type=number]').value === '3'")
    pg.keyboard.press("ArrowLeft")
    pg.wait_for_function("() => document.querySelector('#step input[type=number]').value === '2'")
    # A click on a step button leaves the focus on it: the keys still step (they once did nothing).
    pg.click("#next")
    pg.wait_for_function("() => document.querySelector('#step input[type=number]').value === '3'")
    assert pg.evaluate("document.activeElement.id") == "next"
    pg.keyboard.press("ArrowLeft")
    pg.wait_for_function("() => document.querySelector('#step input[type=number]').value === '2'")
    pg.click("#copy-link")
    pg.wait_for_selector("#link textarea, #link input")
    link = pg.locator("#link textarea, #link input").first.input_value()
    assert "run=1" in link and "step=2" in link and "Count+from+1" in link
    # Play clicked with the mouse, then Space: Space pauses (it once played on); Pause shows only while playing.
    visible = "(id) => { const b = document.getElementById(id); return !!b && b.offsetParent !== null; }"
    assert pg.evaluate(visible, "play") and not pg.evaluate(visible, "pause")
    pg.click("#play")
    pg.wait_for_function(f"() => ({visible})('pause') && !({visible})('play')")
    pg.keyboard.press(" ")
    pg.wait_for_function(f"() => ({visible})('play') && !({visible})('pause')")


def test_phone_width_layout_is_usable(page):
    pg = page.context.browser.new_page(viewport={"width": 390, "height": 844})
    pg.set_default_timeout(60_000)
    pg.goto(page.url.split("?")[0])
    pg.locator("#tree-plot").scroll_into_view_if_needed()       # plots draw once they are on screen
    pg.wait_for_selector(PLOT)                                  # the tree plot draws at phone width
    wide = "() => document.documentElement.scrollWidth"
    assert pg.evaluate(wide) <= 390 + 2                         # nothing widens the page past the screen
    pg.locator("#max-new-tokens input[type=number]").fill("6")
    pg.locator("#max-new-tokens input[type=number]").press("Enter")
    pg.locator("#run").click()
    pg.wait_for_function(f"() => /Done/.test(({STATUS_TEXT})('#status'))", timeout=RUN_TIMEOUT_MS)
    pg.locator("#tree-plot").scroll_into_view_if_needed()
    pg.wait_for_function("() => document.querySelector('#tree-plot .js-plotly-plot .scatterlayer .point')")
    assert plot_state(pg)["points"] > 0 and pg.evaluate(wide) <= 390 + 2
    shot(pg, "09-phone.png")
    pg.close()


FIGURE_COLOURS = """() => {
    const gd = document.querySelector('#tree-plot .js-plotly-plot');
    const lum = (c) => {
        const [r, g, b] = c.match(/\\d+/g).map(Number);
        return (0.299 * r + 0.587 * g + 0.114 * b) / 255;
    };
    const opaque = [...gd.querySelectorAll('svg.main-svg')].map(s => getComputedStyle(s).backgroundColor)
        .filter(c => !/rgba\\(0, 0, 0, 0\\)|transparent/.test(c));
    const tok = document.querySelector('.gen-text .tok');
    return {title: lum(getComputedStyle(gd.querySelector('.xtick text')).fill), opaque: opaque.map(lum),
            dark: document.body.classList.contains('dark'),
            block: lum(getComputedStyle(document.querySelector('#tree-plot')).backgroundColor),
            token: tok ? lum(getComputedStyle(tok).color) : null};
}"""


def test_dark_theme_restyles_figures_and_text(page):
    light = page.evaluate(FIGURE_COLOURS)
    assert not light["dark"] and light["title"] < 0.5 and all(x > 0.9 for x in light["opaque"])   # dark on white
    pg = page.context.browser.new_page(viewport={"width": 1400, "height": 1000})
    pg.set_default_timeout(60_000)
    pg.goto(page.url.split("?")[0] + "?__theme=dark")
    pg.wait_for_selector(PLOT)
    set_slider(pg, "max-new-tokens", 6)
    start_and_wait(pg, "#run")
    dark = pg.evaluate(FIGURE_COLOURS)
    assert dark["dark"] and dark["block"] < 0.3      # Gradio's dark theme is on
    assert dark["title"] > 0.7 and dark["opaque"] == []   # light figure text; no white sheet behind the plot
    assert dark["token"] < 0.3                       # tokens keep dark text on their light origin colours
    shot(pg, "10-dark.png")
    pg.close()
