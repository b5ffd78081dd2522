"""The page's script (assets/keys.js and assets/app.js) and stylesheet for keyboard and screen-reader users: the
step keys leave a button reached with Tab its own Space and a focused link its Space and arrows, each chart
carries its block's label as an accessible name, the step buttons are named in words (not their symbols), the
text strip is one Tab stop whose keys move among and press its tokens, so is each chart's toolbar (every tool
kept), a field reached with Tab shows a focus ring, and a live region announces each new step's sentence.

The tests run the script in headless Chromium on a page of its own (no app server), the page's elements
as Gradio draws them; the app's browser tests exercise the keys in place."""

from __future__ import annotations

import html
from pathlib import Path

import pytest
from app_server import CHROMIUM, headless_chromium

from ui.app import page_js
from ui.common import TOKEN_CLICK_JS
from viz import style
from viz.text_view import STRIP_NAME, step_summary, text_html

expect = pytest.importorskip("playwright.sync_api").expect

# The step buttons as the page names them; each click is logged.
KEYS_PAGE = """<!doctype html><html><body>
<textarea id="prompt"></textarea>
<button id="run">Run</button><button id="prev">◀ Prev</button><button id="next">Next ▶</button>
<button id="play">▶ Play</button><button id="pause" style="display:none">❚❚ Pause</button>
<a id="api" href="#api-doc">Use via API</a><a id="logo" href="https://plot.ly/"><svg width="9" height="9"></svg></a>
<script>window.pressed = []; window.defaulted = [];
addEventListener('keydown', (e) => window.defaulted.push(e.defaultPrevented));
for (const b of document.querySelectorAll('button'))
  b.addEventListener('click', () => window.pressed.push(b.id));</script></body></html>"""


@pytest.fixture(scope="module")
def keys_page():
    if not Path(CHROMIUM).exists():
        pytest.skip("Chromium not installed (make browser)")
    pytest.importorskip("playwright.sync_api")
    with headless_chromium() as browser:
        yield browser


def open_keys_page(browser):
    pg = browser.new_page()
    pg.set_content(KEYS_PAGE)
    pg.evaluate(f"({page_js()})()")
    return pg


def pressed(pg) -> list[str]:
    return pg.evaluate("() => window.pressed.splice(0)")


def test_space_presses_a_button_reached_with_tab_and_plays_after_a_mouse_click(keys_page):
    pg = open_keys_page(keys_page)
    pg.focus("#prompt")
    pg.keyboard.press("Tab")                # Run, from the keyboard: Space runs (it once pressed Play)
    assert pg.evaluate("document.activeElement.id") == "run"
    pg.keyboard.press(" ")
    assert pressed(pg) == ["run"]
    pg.keyboard.press("Tab")                # ◀ Prev: Space steps back
    pg.keyboard.press(" ")
    assert pressed(pg) == ["prev"]
    pg.keyboard.press("ArrowRight")         # the arrows still step from a focused step button
    assert pressed(pg) == ["next"]
    pg.click("#next")                       # a mouse click leaves the focus there: Space plays
    assert pressed(pg) == ["next"]
    pg.keyboard.press(" ")
    assert pressed(pg) == ["play"]
    pg.keyboard.press("Shift+Tab")          # ◀ Prev again, from the keyboard: Space is its own
    pg.keyboard.press(" ")
    assert pressed(pg) == ["prev"]
    pg.focus("#prompt")                     # typing in a text box never steps
    pg.keyboard.type("a b")
    pg.keyboard.press("ArrowLeft")
    assert pressed(pg) == [] and pg.input_value("#prompt") == "a b"
    pg.close()


def test_space_and_the_arrows_on_a_focused_link_are_the_links_own(keys_page):
    pg = open_keys_page(keys_page)
    for link in ("#api", "#logo"):          # the footer's "Use via API" link, Plotly's logo link
        pg.focus(link)
        pg.evaluate("window.defaulted.splice(0)")
        for key in (" ", "ArrowLeft", "ArrowRight"):
            pg.keyboard.press(key)
        assert pressed(pg) == [], link      # no play, no step
        assert pg.evaluate("window.defaulted") == [False, False, False], link   # the browser's own action runs
    pg.close()


def test_each_chart_is_named_by_its_block_label_for_screen_readers(keys_page):
    pg = open_keys_page(keys_page)
    # A chart block as Gradio draws it, added after the page's script started (as Gradio adds each one).
    pg.evaluate("""() => document.body.insertAdjacentHTML('beforeend', `<div id="tree-plot" class="block">
      <label data-testid="block-label"><span>Draft tree of the selected step</span></label>
      <div class="js-plotly-plot"><svg class="main-svg"></svg></div></div>`)""")
    pg.wait_for_function("() => document.querySelector('#tree-plot .js-plotly-plot').getAttribute('aria-label')",
                         timeout=10_000)
    chart = pg.locator("#tree-plot .js-plotly-plot")
    assert chart.get_attribute("role") == "figure"
    assert chart.get_attribute("aria-label") == "Draft tree of the selected step"
    pg.close()


# Gradio's own rules that hide the browser's focus ring, as Gradio 6 ships them (its textbox and number
# fields, its slider, its radios), and its dark-mode class and block background.
GRADIO_RULES = """
textarea.svelte-t, input.svelte-n { outline: none !important; }
input[type=range].svelte-s { outline: none; }
.gradio-container [type=radio]:focus-visible { outline: none; }
body.dark { background: #1f2937; }"""
FOCUS_PAGE = """<!doctype html><html><head><style>{css}</style></head><body class="{mode}">
<div class="gradio-container"><textarea id="text" class="svelte-t"></textarea>
<input id="number" type="number" class="svelte-n"><input id="slider" type="range" class="svelte-s">
<label><input id="radio" type="radio" name="m"> log p̂</label>
<div id="gen-text"><div class="gen-text" style="max-height: 40px; overflow-y: auto">{tokens}</div></div>
</div></body></html>"""


@pytest.mark.parametrize("mode, ring", [("", style.FOCUS), ("dark", style.FOCUS_DARK)])
def test_a_field_reached_with_tab_shows_a_focus_ring(keys_page, mode, ring):
    pg = keys_page.new_page()
    tokens = '<span class="tok">a token </span>' * 40        # a strip that scrolls (presenter mode)
    pg.set_content(FOCUS_PAGE.format(css=style.PAGE_CSS + GRADIO_RULES, mode=mode, tokens=tokens))
    for field in ("text", "number", "slider", "radio", "gen-text .gen-text"):
        pg.keyboard.press("Tab")
        focused = pg.evaluate("() => { const e = document.activeElement; const s = getComputedStyle(e);"
                              " return [e.id || e.parentElement.id, e.matches(':focus-visible'),"
                              " s.outlineStyle, parseFloat(s.outlineWidth), s.outlineColor]; }")
        assert focused[:2] == [field.split()[0], True], focused
        assert focused[2:] == ["solid", 3, style.svg_rgb(ring)], (field, focused)
    pg.close()


def a_trace() -> dict:
    """Two steps: two draft tokens and a bonus token, then one draft token and a bonus token."""
    step = {"tokens": [10, 11, 12], "texts": [" far", "-", "off"], "parents": [-1, 0, 0], "depth": [1, 2, 2],
            "q": [0.9, 0.5, 0.4], "p_hat": [0.9, 0.45, 0.36], "rank": [0, 0, 1], "accepted": [0, 1], "rejected": 2,
            "accept_length": 2, "bonus_token": 14, "bonus_text": "\n", "committed": [10, 11, 14]}
    second = {**step, "accepted": [0], "accept_length": 1, "rejected": None, "bonus_text": "The",
              "committed": [10, 14]}
    return {"prompt": "Go", "meta": {"method": "opt-tree"}, "steps": [step, second]}


def test_a_new_step_is_announced_by_a_live_region_that_stays_in_the_text_strip(keys_page):
    trace = a_trace()
    pg = open_keys_page(keys_page)
    # The text strip's block as Gradio draws it, added after the page's script started; Gradio replaces its
    # inner HTML with each step.
    pg.evaluate("""(html) => document.body.insertAdjacentHTML('beforeend',
      `<div id="gen-text" class="block"><div class="html-container">${html}</div></div>`)""", text_html(trace, 0))
    live = pg.locator("#gen-text [aria-live]")
    pg.wait_for_function("() => document.querySelector('#gen-text [aria-live]')?.textContent", timeout=10_000)
    assert live.count() == 1 and live.get_attribute("aria-live") == "polite"
    assert live.text_content() == html.unescape(step_summary(trace, 0))
    pg.evaluate("(html) => { document.querySelector('#gen-text .html-container').innerHTML = html; }",
                text_html(trace, 1))
    pg.wait_for_function("(said) => document.querySelector('#gen-text [aria-live]').textContent === said",
                         arg=html.unescape(step_summary(trace, 1)), timeout=10_000)
    # Gradio 6 patches the strip in place: the sentence's text node changes and the attributes the new HTML
    # lacks go.
    pg.evaluate("""(said) => { const p = document.querySelector('#gen-text p.sr-only');
      p.removeAttribute('aria-hidden'); p.firstChild.textContent = said; }""", html.unescape(step_summary(trace, 0)))
    pg.wait_for_function("(said) => document.querySelector('#gen-text [aria-live]').textContent === said",
                         arg=html.unescape(step_summary(trace, 0)), timeout=10_000)
    # The region is outside what each step replaces (so a screen reader hears the change), and the strip's own
    # copy of the sentence is hidden from readers, so a reader browsing the page hears it once.
    assert pg.evaluate("document.querySelector('#gen-text [aria-live]').closest('.html-container')") is None
    assert pg.get_attribute("#gen-text .html-container p.sr-only", "aria-hidden") == "true"
    pg.close()


def test_a_scrolling_strip_follows_the_selected_step_when_only_its_class_moves(keys_page):
    """Presenter mode's strip scrolls; Gradio moves the `current` class from one token to another in place
    (no node added), and the strip must still bring the selected step's tokens into view."""
    pg = open_keys_page(keys_page)
    tokens = "".join(f'<span class="tok{" current" if i == 0 else ""}">token {i} </span><br>' for i in range(80))
    pg.evaluate("""(tokens) => document.body.insertAdjacentHTML('beforeend', `<div id="gen-text" class="block">
      <div class="html-container"><div class="gen-text" style="height:120px; overflow-y:auto">${tokens}</div>
      </div></div>`)""", tokens)
    pg.wait_for_function("() => document.querySelector('#gen-text [aria-live]')", timeout=10_000)   # watched
    pg.evaluate("""() => { const toks = document.querySelectorAll('#gen-text .tok');
      toks[0].classList.remove('current'); toks[70].classList.add('current'); }""")
    pg.wait_for_function("""() => { const box = document.querySelector('#gen-text .gen-text');
      const cur = box.querySelector('.tok.current').getBoundingClientRect(), b = box.getBoundingClientRect();
      return cur.top >= b.top && cur.bottom <= b.bottom; }""", timeout=5_000)
    pg.close()


def test_the_step_buttons_are_named_in_words_and_keep_their_text(keys_page):
    """A screen reader read "◀ Prev" as "black left-pointing triangle Prev": each step button is named in words
    (the name holds the visible word, for voice control), a Pause that Gradio draws anew too."""
    pg = open_keys_page(keys_page)
    names = {"prev": ("Previous step", "◀ Prev"), "next": ("Next step", "Next ▶"), "play": ("Play steps", "▶ Play")}
    for id_, (name, text) in names.items():
        expect(pg.locator(f"#{id_}")).to_have_accessible_name(name)
        assert pg.inner_text(f"#{id_}") == text
    pg.evaluate("""() => { document.getElementById('pause').remove();
      document.body.insertAdjacentHTML('beforeend', '<button id="pause">❚❚ Pause</button>'); }""")
    expect(pg.locator("#pause")).to_have_accessible_name("Pause")
    pg.close()


def active(pg) -> dict:
    return pg.evaluate("() => { const e = document.activeElement;"
                       " return {id: e.id, step: e.dataset.step ?? null, text: e.textContent}; }")


def test_the_text_strip_is_one_tab_stop_whose_keys_press_its_tokens(keys_page):
    """The tokens a click jumps from: Tab reaches the strip once (on the selected step's first token), ← / →
    and Home / End move among its tokens, Enter and Space press one (the strip's own click listener, ui/common.py
    TOKEN_CLICK_JS, gets it) and the step keys stay out of it; the token last focused keeps the stop, also after
    Gradio patches the strip in place. A screen reader hears each token's step and what pressing it does."""
    trace = a_trace()
    pg = open_keys_page(keys_page)
    pg.evaluate("""([html, js]) => {
      document.body.insertAdjacentHTML('beforeend', `<div id="gen-text" class="block"><div class="html-container">
        ${html}</div></div><button id="after">after</button>`);
      window.jumps = [];
      new Function('element', 'trigger', js)(document.getElementById('gen-text'), (_, d) => window.jumps.push(d.step));
    }""", [text_html(trace, 1), TOKEN_CLICK_JS])
    toks = pg.locator("#gen-text .gen-text .tok")
    pg.wait_for_function("() => document.querySelector('#gen-text .tok[tabindex=\"0\"]')", timeout=10_000)
    pg.focus("#logo")
    pg.keyboard.press("Tab")
    first = active(pg)
    assert first["step"] == "1" and first["text"] == toks.nth(3).text_content()   # the selected step's first token
    expect(toks.nth(3)).to_have_role("button")
    expect(toks.nth(3)).to_have_accessible_description("step 2: accepted draft token; click or press Enter to "
                                                       "show step 2")
    expect(pg.locator("#gen-text .gen-text")).to_have_accessible_name(STRIP_NAME)
    pg.keyboard.press("Tab")
    assert active(pg)["id"] == "after"                       # one stop for the whole strip
    pg.keyboard.press("Shift+Tab")
    assert active(pg) == first
    pg.keyboard.press("Home")
    assert active(pg)["text"] == toks.nth(0).text_content()
    pg.keyboard.press("ArrowRight")
    assert active(pg)["text"] == toks.nth(1).text_content()
    pg.keyboard.press("Enter")
    pg.keyboard.press(" ")
    assert pg.evaluate("window.jumps") == [0, 0] and pressed(pg) == []     # no step key, no Play
    pg.keyboard.press("End")
    pg.keyboard.press("ArrowLeft")
    last_but_one = active(pg)
    assert last_but_one["text"] == toks.nth(toks.count() - 2).text_content() and pressed(pg) == []
    # Gradio's patch sets each token's tabindex back to the server's (-1): the focused token keeps the stop.
    pg.evaluate("() => document.querySelectorAll('#gen-text .tok').forEach((t) => t.setAttribute('tabindex', '-1'))")
    pg.wait_for_function("() => document.activeElement.getAttribute('tabindex') === '0'", timeout=10_000)
    pg.keyboard.press("Tab")
    pg.keyboard.press("Shift+Tab")
    assert active(pg) == last_but_one
    assert pg.locator("#gen-text .tok[tabindex='0']").count() == 1
    pg.keyboard.press("Shift+ArrowRight")                   # a modified arrow is neither the strip's nor a step
    assert active(pg) == last_but_one and pressed(pg) == []
    # A token clicked with the mouse hands its arrows and Space to the steps, as a clicked step button does, and
    # Enter still presses it.
    toks.nth(0).click()
    pg.keyboard.press("ArrowRight")
    pg.keyboard.press(" ")
    assert pressed(pg) == ["next", "play"] and active(pg)["text"] == toks.nth(0).text_content()
    pg.keyboard.press("Enter")
    assert pg.evaluate("window.jumps") == [0, 0, 0, 0]        # two keys, the click, then Enter
    pg.close()


# Two charts as Gradio draws them (a labelled block around Plotly's div), buttons before and after them.
CHARTS = """() => {
  document.body.insertAdjacentHTML('beforeend', `<button id="before">before</button>
    <div class="block"><div id="c1" style="width:500px;height:300px"></div></div>
    <div class="block"><div id="c2" style="width:500px;height:300px"></div></div><button id="after">after</button>`);
  return Promise.all(['c1', 'c2'].map((id) => Plotly.newPlot(id, [{x: [1, 2, 3], y: [2, 1, 3]}])));
}"""
TOOL = "() => { const e = document.activeElement; return [e.closest('.js-plotly-plot')?.id, e.dataset.title ?? null]; }"


def test_each_charts_toolbar_is_one_tab_stop_with_every_tool_kept(keys_page):
    """Plotly's toolbar would be ten Tab stops a chart (some fifty from the step buttons to the next control): each
    toolbar is one stop, on Download plot as a PNG, named as a toolbar; ← / → reach every tool, and the tool
    focused last keeps the stop."""
    from plotly.offline import get_plotlyjs  # only this test draws a chart in the bare page

    pg = open_keys_page(keys_page)
    pg.add_script_tag(content=get_plotlyjs())
    pg.evaluate(CHARTS)
    pg.wait_for_function("() => document.querySelectorAll('.modebar-btn[tabindex=\"0\"]').length === 2",
                         timeout=10_000)
    pg.focus("#before")
    stops = []
    for _ in range(3):
        pg.keyboard.press("Tab")
        stops.append(pg.evaluate(TOOL))
    assert stops == [["c1", "Download plot as a PNG"], ["c2", "Download plot as a PNG"], [None, None]]
    assert pg.evaluate("document.activeElement.id") == "after"
    expect(pg.locator("#c1 .modebar")).to_have_role("toolbar")
    expect(pg.locator("#c1 .modebar")).to_have_accessible_name("Chart tools")
    pg.focus("#before")
    pg.keyboard.press("Tab")
    tools = []
    for _ in range(12):
        tools.append(pg.evaluate(TOOL)[1])
        pg.keyboard.press("ArrowRight")
    assert {"Download plot as a PNG", "Zoom", "Pan", "Zoom in", "Zoom out", "Reset axes"} <= set(tools)
    assert pressed(pg) == []                              # the arrows moved in the toolbar, never a step
    pg.keyboard.press("Home")
    pg.keyboard.press("ArrowRight")
    second = pg.evaluate(TOOL)
    pg.keyboard.press("Tab")
    pg.keyboard.press("Shift+Tab")
    assert pg.evaluate(TOOL) == second == ["c1", tools[1]]
    pg.locator('#c2 .modebar-btn[data-title="Zoom in"]').click()   # a tool a mouse pressed keeps the arrows too
    pg.keyboard.press("ArrowRight")
    assert pg.evaluate(TOOL) == ["c2", tools[tools.index("Zoom in") + 1]] and pressed(pg) == []
    pg.close()
