"""The page in a classroom (issue 33), in Debian Chromium driven by Playwright: at a projector's
1280 × 720, at 150 % zoom on it (853 px: Run and the lessons above a tree that takes the page's width, the
settings below the step) and at a 390 px phone width.

Deep links keep their node budget (a number or auto, a lesson its own) and Copy link writes what ran;
an import puts its prompt and settings in the controls and its steps in E(A) vs A; a lesson's caption
sits above its tree and starting a run brings the tree into view; Run and the lessons are on the first
screen; presenter mode fits the tree, the text strip and the step's metrics on one 1280 × 720 screen;
the 60-node tree's labels do not overlap on a phone in the running app (the page hides those that would
meet or cover a node; test_tree_labels_browser.py draws the figures in a bare page); on a phone every tab
is reachable, the tree's title wraps and Compare's table scrolls sideways; the HTML export opens at the
selected step. Screenshots go to tmp/artifacts/ (test artifacts)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from app_server import ARTIFACTS, CHROMIUM, PHONE, PROJECTOR, drafting_model_id, headless_chromium, launched_app

from viz.lessons import PRESETS
from viz.style import PAGE_CSS

pytest.importorskip("playwright.sync_api")

PLOT = "#tree-plot .js-plotly-plot"
RUN_MS = 300_000

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Chromium not installed (make browser)")

STATUS = """(sel) => { const e = document.querySelector(sel + ' [data-testid="markdown"]')
    || document.querySelector(sel); return e ? e.innerText : ''; }"""
TREE = """() => { const gd = document.querySelector('#tree-plot .js-plotly-plot');
    const nodes = gd && gd.data.find(t => t.name === 'draft nodes');
    return gd ? {title: gd.layout.title && gd.layout.title.text, nodes: nodes ? nodes.x.length : 0} : null; }"""
RECT = """(sel) => { const e = document.querySelector(sel); if (!e || e.offsetParent === null) return null;
    const r = e.getBoundingClientRect(); return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; }"""


@pytest.fixture(scope="module")
def chromium():
    """Headless Chromium; the figure tests need no app (one Playwright per module: the app's tests share it)."""
    with headless_chromium() as browser:
        yield browser


@pytest.fixture(scope="module")
def app(tmp_path_factory, chromium):
    with launched_app(tmp_path_factory.mktemp("classroom"), default=drafting_model_id()) as (url, _):
        yield chromium, url


def open_page(app, query: str = "", viewport: dict = PROJECTOR):
    browser, url = app
    pg = browser.new_page(viewport=viewport)
    pg.set_default_timeout(90_000)
    pg.goto(url + query)
    pg.wait_for_selector("#tree-plot", state="attached")
    return pg


def wait_done(pg, before: str = "") -> None:
    """Until #status says Done with other text than `before` (an earlier run's Done)."""
    pg.wait_for_function(f"([before]) => {{ const t = ({STATUS})('#status'); return t !== before && /Done/.test(t); }}",
                         arg=[before], timeout=RUN_MS)
    pg.wait_for_function("() => document.querySelector('#tree-plot .js-plotly-plot .scatterlayer .point')")


def rect(pg, sel: str) -> dict | None:
    return pg.evaluate(RECT, sel)


LINK = "(document.querySelector('#link textarea, #link input') || {}).value || ''"


def copied_link(pg) -> dict:
    """The link *Copy link* writes. The box keeps the last link until the new one arrives, so a second
    copy waits for a different value (a while only: the new link may equal the old one)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout  # only where a browser test runs

    old = pg.evaluate(f"() => {LINK}")
    pg.click("#copy-link")
    pg.wait_for_selector("#link textarea, #link input")
    try:
        pg.wait_for_function(f"([old]) => {{ const v = {LINK}; return v && v !== old; }}", arg=[old],
                             timeout=20_000 if old else 90_000)
    except PlaywrightTimeout:
        if not old:
            raise
    url = pg.locator("#link textarea, #link input").first.input_value()
    return {k: v[0] for k, v in parse_qs(urlparse(url).query).items()}


def checked_mode(pg) -> str:
    return pg.evaluate("() => document.querySelector('#nodes-mode input:checked').value")


def slider(pg, elem_id: str) -> float:
    return float(pg.locator(f"#{elem_id} input[type=number]").input_value())


def test_run_and_the_lessons_are_on_the_first_screen(app):
    pg = open_page(app)
    for sel in ("#prompt", "#run", "#preset-0", "#status"):
        box = rect(pg, sel)
        assert box and 0 <= box["top"] and box["bottom"] <= PROJECTOR["height"], (sel, box)
    pg.screenshot(path=str(ARTIFACTS / "classroom-first-screen.png"))
    pg.close()


LABEL_OVERLAPS = """() => {
    const boxes = [...document.querySelectorAll('#tree-plot .scatterlayer .textpoint text')]
        .filter(t => t.textContent.trim() && getComputedStyle(t).visibility !== 'hidden')
        .map(t => t.getBoundingClientRect());
    let overlaps = 0;
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i], b = boxes[j];
        const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (w > 2 && h > 3) overlaps++;
    }
    return {labels: boxes.length, overlaps};
}"""


def test_a_lesson_link_runs_at_its_own_budget_with_its_caption_above_the_tree(app):
    pg = open_page(app, "?preset=1&step=3")
    wait_done(pg)
    pg.wait_for_function("() => document.querySelector('#step input[type=number]').value === '3'")
    tree = pg.evaluate(TREE)
    assert tree["nodes"] == PRESETS[1]["nodes"] == 60 and "step 3/" in tree["title"], tree
    assert checked_mode(pg) == "fixed" and slider(pg, "nodes") == 60
    caption, plot = rect(pg, "#lesson-caption"), rect(pg, "#tree-plot")
    assert caption and caption["bottom"] <= plot["top"] + 1
    assert PRESETS[1]["name"] in pg.locator("#lesson-caption").inner_text()
    assert -2 <= rect(pg, "#step-view")["top"] < 200          # starting the run brought the tree into view
    labels = pg.evaluate(LABEL_OVERLAPS)
    assert 5 <= labels["labels"] <= 40 and labels["overlaps"] == 0, labels
    query = copied_link(pg)
    assert query["nodes"] == "60" and query["prompt"] == PRESETS[1]["prompt"] and query["step"] == "3"
    pg.screenshot(path=str(ARTIFACTS / "classroom-lesson-link.png"))
    # A run that is no lesson hides the caption.
    pg.locator("#prompt textarea").fill("Name three colours.")
    pg.locator("#max-new-tokens input[type=number]").fill("6")
    pg.locator("#max-new-tokens input[type=number]").press("Enter")
    before = pg.evaluate(STATUS, "#status")
    pg.click("#run")
    wait_done(pg, before)
    assert rect(pg, "#lesson-caption") is None
    pg.close()


def test_a_fixed_budget_link_draws_that_budget_and_copy_link_writes_what_ran(app):
    pg = open_page(app, "?nodes=25&step=2")
    wait_done(pg)
    pg.wait_for_function("() => document.querySelector('#step input[type=number]').value === '2'")
    tree = pg.evaluate(TREE)
    assert tree["nodes"] == 25 and "step 2/" in tree["title"], tree
    assert checked_mode(pg) == "fixed" and slider(pg, "nodes") == 25
    query = copied_link(pg)
    assert query["nodes"] == "25" and query["step"] == "2"
    # The HTML export opens at the selected step.
    pg.get_by_role("tab", name="Export / Import").click()
    pg.click("#export-html")
    href = pg.locator("#export-html-file a").first.get_attribute("href")
    page = pg.request.get(href).text()
    assert 'value="2"' in page and "show(1);" in page
    # An auto run writes nodes=auto, whatever the slider's n.
    pg.get_by_role("tab", name="Explore").click()
    pg.locator("#nodes-mode input[value=auto]").check()
    pg.locator("#max-new-tokens input[type=number]").fill("8")
    pg.locator("#max-new-tokens input[type=number]").press("Enter")
    before = pg.evaluate(STATUS, "#status")
    pg.click("#run")
    wait_done(pg, before)
    assert slider(pg, "nodes") == 25 and copied_link(pg)["nodes"] == "auto"
    pg.close()
    # Compare reads the same controls: a link naming a budget sets the switch to fixed there too.
    pg = open_page(app, "?tab=compare&nodes=25")
    pg.wait_for_selector("#compare-run")
    pg.wait_for_function("() => document.querySelector('#nodes-mode input[value=fixed]').checked")
    assert slider(pg, "nodes") == 25
    pg.close()


def test_an_import_restores_its_prompt_and_settings_and_feeds_ea_vs_a(app, tmp_path):
    pg = open_page(app, "?prompt=Name+three+colours.&method=binary&nodes=12&max_new_tokens=8&run=1")
    wait_done(pg)
    pg.get_by_role("tab", name="Export / Import").click()
    pg.click("#export")
    href = pg.locator("#export-file a").first.get_attribute("href")
    saved = tmp_path / "run.json"
    saved.write_bytes(pg.request.get(href).body())
    pg.get_by_role("tab", name="Explore").click()
    pg.locator("#prompt textarea").fill("Something else entirely.")
    pg.locator("#nodes-mode input[value=auto]").check()
    pg.get_by_role("tab", name="Export / Import").click()
    pg.locator("#import-file input[type=file]").set_input_files(str(saved))
    pg.wait_for_function(f"() => /Loaded a binary run/.test(({STATUS})('#import-status'))")
    pg.get_by_role("tab", name="Explore").click()
    assert pg.locator("#prompt textarea").input_value() == "Name three colours."
    assert checked_mode(pg) == "fixed" and slider(pg, "nodes") == 12 and slider(pg, "max-new-tokens") == 8
    assert "Binary" in pg.locator("#method input").input_value()
    query = copied_link(pg)
    assert query["prompt"] == "Name three colours." and query["nodes"] == "12" and query["method"] == "binary"
    pg.get_by_role("tab", name="E(A) vs A").click()
    pg.wait_for_function("() => /of 2 runs/.test(document.querySelector('#ea-r').innerText)")
    pg.close()


def test_presenter_mode_fits_one_step_on_a_projector_screen(app):
    pg = open_page(app, "?preset=1&step=3&present=1")
    wait_done(pg)
    pg.wait_for_timeout(500)
    for sel in ("#lesson-caption", "#tree-plot", "#gen-text", "#metrics", "#scrubber"):
        box = rect(pg, sel)
        assert box and -1 <= box["top"] and box["bottom"] <= PROJECTOR["height"] and box["right"] <= 1280, (sel, box)
    assert rect(pg, "#controls-col") is None and rect(pg, "#settings-col") is None and rect(pg, "#page-head") is None
    side, tree = rect(pg, "#side-col"), rect(pg, "#tree-col")
    assert side["left"] >= tree["right"] and abs(side["right"] - side["left"] - 410) <= 2, (side, tree)
    size = pg.evaluate("() => getComputedStyle(document.querySelector('#gen-text .gen-text')).fontSize")
    assert float(size.removesuffix("px")) >= 18, size
    assert pg.evaluate(TREE)["nodes"] == 60
    labels = pg.evaluate(LABEL_OVERLAPS)                      # larger labels on a shorter tree, still apart
    assert labels["labels"] >= 5 and labels["overlaps"] == 0, labels
    pg.screenshot(path=str(ARTIFACTS / "classroom-presenter.png"))
    pg.set_viewport_size({"width": 800, "height": 720})          # too narrow for both: the text wraps, full width
    pg.wait_for_timeout(300)
    side, tree = rect(pg, "#side-col"), rect(pg, "#tree-col")
    assert side["top"] >= tree["bottom"] - 2 and side["right"] - side["left"] >= tree["right"] - tree["left"] - 2
    pg.set_viewport_size(PROJECTOR)
    pg.locator("#present input").uncheck()                    # the toggle leaves presenter mode
    pg.wait_for_function("() => !document.body.classList.contains('presenter')")
    assert rect(pg, "#controls-col") is not None and rect(pg, "#page-head") is not None
    pg.close()


TITLE_FITS = """() => {
    const gd = document.querySelector('#tree-plot .js-plotly-plot');
    const lines = [...gd.querySelectorAll('.gtitle, .gtitle tspan')].map(t => t.getBoundingClientRect());
    const box = gd.getBoundingClientRect();
    return {lines: gd.layout.title.text.split('<br>').length,
            inside: lines.every(r => r.right <= box.right + 1 && r.left >= box.left - 1)};
}"""


def test_on_a_phone_tabs_titles_and_the_compare_table_stay_reachable(app):
    pg = open_page(app, "?max_new_tokens=6&run=1", PHONE)
    for name in ("Explore", "Compare", "E(A) vs A", "Theory", "Learn", "Export / Import"):
        assert pg.get_by_role("tab", name=name).is_visible(), name      # wrapped, none behind a menu
    assert pg.locator("button[aria-label='More tabs']").count() == 0
    wait_done(pg)
    assert -2 <= rect(pg, "#step-view")["top"] < PHONE["height"]     # the run brought its tree into view
    title = pg.evaluate(TITLE_FITS)
    assert title["lines"] == 2 and title["inside"], title
    assert pg.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"] + 2
    pg.get_by_role("tab", name="Compare").click()
    pg.wait_for_selector("#compare-table th")
    reach = pg.evaluate("""() => {
        const cells = [...document.querySelectorAll('#compare-table thead th')];
        let box = cells[cells.length - 1].parentElement;
        while (box && !(box.scrollWidth > box.clientWidth + 1 && /auto|scroll/.test(getComputedStyle(box).overflowX)))
            box = box.parentElement;
        if (!box) return null;
        box.scrollLeft = box.scrollWidth;
        const last = cells[cells.length - 1].getBoundingClientRect();
        return {columns: cells.length, right: last.right, width: window.innerWidth};
    }""")
    assert reach and reach["columns"] >= 11 and reach["right"] <= reach["width"], reach
    pg.screenshot(path=str(ARTIFACTS / "classroom-phone-compare.png"))
    pg.close()


# The labels a reader sees print on each other where two shown labels' boxes overlap, or where a shown
# draft node's label covers the centre of a node's marker (the dots of the next columns on its row).
CLASHES = """() => {
    const gd = document.querySelector('#tree-plot .js-plotly-plot');
    const labels = [...gd.querySelectorAll('.scatterlayer .trace')].flatMap(g =>
        [...g.querySelectorAll('.textpoint text')].filter(t => t.textContent && getComputedStyle(t).visibility
        !== 'hidden').map(t => ({text: t.textContent, node: g.__data__[0].trace.name === 'draft nodes',
                                 r: t.getBoundingClientRect()})));
    const dots = [...gd.querySelectorAll('.scatterlayer .points path.point')].map(m => m.getBoundingClientRect())
        .map(r => ({x: (r.left + r.right) / 2, y: (r.top + r.bottom) / 2}));
    const out = [];
    labels.forEach((a, i) => labels.slice(i + 1).forEach(b => {
        if (Math.min(a.r.right, b.r.right) > Math.max(a.r.left, b.r.left)
            && Math.min(a.r.bottom, b.r.bottom) > Math.max(a.r.top, b.r.top)) out.push([a.text, b.text]);
    }));
    for (const a of labels.filter(l => l.node))
        if (dots.some(c => a.r.left < c.x && c.x < a.r.right && a.r.top < c.y && c.y < a.r.bottom))
            out.push([a.text, 'a marker']);
    return {title: gd.layout.title.text, labels: labels.length, clashes: out};
}"""
FRAMES = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"


def test_in_the_app_a_deep_trees_labels_never_print_on_each_other_on_a_phone(app):
    """The app at 390 px, a 60-node tree ten layers deep (columns ~20 px apart), at each step Gradio
    draws (a react each): no two shown labels overlap and no draft node's label covers a node's marker;
    the accepted path, bonus and root labels stay where nothing else claims their place."""
    pg = open_page(app, "?nodes=60&max_depth=10&max_new_tokens=40&run=1&prompt=Write+a+short+poem+about+the+sea.",
                   PHONE)
    wait_done(pg)
    pg.locator("#tree-plot").scroll_into_view_if_needed()
    steps = int(pg.evaluate(TREE)["title"].split(" · step ")[1].split("/")[1].split(" ")[0])
    for k in range(1, steps + 1):
        box = pg.locator("#step input[type=number]")
        box.fill(str(k))
        box.press("Enter")
        pg.wait_for_function(f"() => ({TREE})().title.includes(' · step {k}/')")
        pg.evaluate(FRAMES)
        seen = pg.evaluate(CLASHES)
        assert seen["labels"] >= 3 and not seen["clashes"], (k, seen)
        if k == steps:
            pg.locator("#tree-plot").screenshot(path=str(ARTIFACTS / "classroom-phone-app-deep-tree.png"))
    pg.close()


def test_presenter_mode_on_a_phone_keeps_the_step_controls_on_screen(app):
    """On a phone, presenter mode stacks the scrubber, text and metrics below the tree (beside it they were
    pushed off the screen's right edge) and the lesson caption takes the page's width above the toggle."""
    pg = open_page(app, "?preset=1&step=3&present=1", PHONE)
    wait_done(pg)
    pg.wait_for_timeout(500)
    for sel in ("#scrubber", "#next", "#metrics", "#gen-text", "#tree-plot"):
        box = rect(pg, sel)
        assert box and box["right"] <= PHONE["width"] + 2, (sel, box)
    assert rect(pg, "#side-col")["top"] >= rect(pg, "#tree-plot")["bottom"] - 2
    assert rect(pg, "#lesson-caption")["right"] - rect(pg, "#lesson-caption")["left"] >= 0.8 * PHONE["width"]
    pg.screenshot(path=str(ARTIFACTS / "classroom-phone-presenter.png"), full_page=True)
    pg.close()


GRADIO_LAYOUT = """.row { display: flex; flex-wrap: wrap; gap: 16px; width: 100%; }
.row > * { flex: 1; min-width: min(160px, 100%); }
.column { display: flex; flex-direction: column; }
.gradio-container { box-sizing: border-box; margin: 0 auto; padding: 0 32px; }
@media (width >= 640px) { .gradio-container { max-width: 640px; } }
@media (width >= 768px) { .gradio-container { max-width: 768px; } }
@media (width >= 1024px) { .gradio-container { max-width: 1024px; } }
@media (width >= 1280px) { .gradio-container { max-width: 1280px; } }"""
COLUMNS_PAGE = """<!doctype html><html><head><style>{css}</style></head><body>
<div class="gradio-container"><div id="explore-row" class="row">
<div id="controls-col" class="column" style="flex-grow: 1; min-width: min(300px, 100%); height: 200px">run</div>
<div id="step-col" class="column" style="flex-grow: 3; min-width: min(320px, 100%); height: 600px">
<div id="step-view" class="row"><div id="tree-col" class="column" style="flex-grow: 3; min-width: min(320px, 100%)">
tree</div><div id="side-col" class="column" style="flex-grow: 2; min-width: min(300px, 100%)">text</div></div>
</div>
<div id="settings-col" class="column" style="flex-grow: 1; min-width: min(300px, 100%); height: 900px">settings</div>
</div></div></body></html>"""


@pytest.mark.parametrize("width, stacked", [(853, True), (1024, False), (1280, False)])
def test_at_150_percent_zoom_on_a_projector_the_tree_takes_the_pages_width(chromium, width, stacked):
    """A 1280 px projector at 150 % zoom is 853 CSS px wide, where Gradio holds the page to 768 px: beside the
    settings the tree got 388 px and its colour bar a quarter of that, so there the columns stack, as on a
    phone: Run and the lessons, the tree across the page's width, then the settings. From 1024 px on, Run and
    the settings below it stay beside the tree."""
    pg = chromium.new_page(viewport={"width": width, "height": 720})
    pg.set_content(COLUMNS_PAGE.format(css=GRADIO_LAYOUT + PAGE_CSS))
    controls, tree, settings = rect(pg, "#controls-col"), rect(pg, "#tree-col"), rect(pg, "#settings-col")
    page = pg.evaluate("() => document.querySelector('#explore-row').getBoundingClientRect().width")
    if stacked:
        assert tree["right"] - tree["left"] >= page - 1 and controls["bottom"] <= tree["top"], (controls, tree)
        assert settings["top"] >= rect(pg, "#step-col")["bottom"], (settings, tree)
    else:
        assert controls["right"] <= tree["left"] and controls["top"] == tree["top"], (controls, tree)
        assert settings["left"] == controls["left"] and 0 <= settings["top"] - controls["bottom"] <= 32, settings
    pg.close()


@pytest.mark.parametrize("viewport", [{"width": 853, "height": 480}, PHONE], ids=["150-percent", "phone"])
def test_on_a_narrow_page_the_tree_follows_run_and_the_settings_follow_the_step(app, viewport):
    """Below 1024 px the columns stack. With one column for Run, the lessons, the model pair and the settings
    above the step, the tree began 2103 px down at 853 × 480 (a 1280 × 720 projector at 150 % zoom),
    over four screens below Run. Run and the lessons come first, then the step, then the settings: Run is on
    the first screen and the tree's top within the first two."""
    pg = open_page(app, viewport=viewport)
    pg.wait_for_selector(PLOT, state="attached")
    run, tree, settings = rect(pg, "#run"), rect(pg, "#tree-plot"), rect(pg, "#settings-col")
    assert 0 <= run["top"] and run["bottom"] <= viewport["height"], run
    assert tree["top"] <= 2 * viewport["height"], tree
    assert settings["top"] >= rect(pg, "#step-col")["bottom"], (settings, tree)
    pg.screenshot(path=str(ARTIFACTS / f"classroom-narrow-first-screen-{viewport['width']}.png"))
    pg.close()
