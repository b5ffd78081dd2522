"""Tree figures in the browser, drawn by plotly.js with the page's own script (ui.app.page_js) in bare
Chromium, without the app: a deep tree's labels fitted to a phone's 390 px (none meets another, every accepted
token shows), a bonus token's label inside a side-by-side panel, the HTML export fitting its labels as the page
does, and a pinned view's title reaching the Learn tab's live tree. Screenshots go to tmp/artifacts/ (test
artifacts); the running app's own checks are in test_classroom_browser.py."""

from __future__ import annotations

from pathlib import Path

import plotly
import pytest
from app_server import ARTIFACTS, CHROMIUM, PHONE, headless_chromium

from opttree.config import LIMITS
from ui.app import page_js
from viz.html_export import standalone_html
from viz.style import visible
from viz.tree_figure import label_script, tree_figure

pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Chromium not installed (make browser)")


@pytest.fixture(scope="module")
def chromium():
    with headless_chromium() as browser:
        yield browser

def test_a_pinned_title_reaches_the_learn_tabs_live_tree_too(chromium):
    """While a live run leaves the view pinned, the title alone (TITLE_JS) goes to Explore's tree and to
    the Learn tab's live tree, which shows the selected step too."""
    from ui.explore import TITLE_JS  # the page's own script for the pinned title (imports Gradio)

    pg = chromium.new_page(viewport={"width": 900, "height": 900})
    pg.set_content('<div id="tree-plot"><div id="a"></div></div><div id="learn-plot"><div id="b"></div></div>')
    pg.add_script_tag(path=str(Path(plotly.__file__).parent / "package_data" / "plotly.min.js"))
    fig = tree_figure(deep_step(), "opt-tree · step 3/5 · 60 nodes").to_plotly_json()
    for div in ("a", "b"):
        pg.evaluate("([d, f]) => Plotly.newPlot(d, f.data, f.layout)", [div, fig])
    pg.evaluate(f"({TITLE_JS})('opt-tree · step 3/12 · 60 nodes')")
    titles = pg.evaluate("() => ['a', 'b'].map(d => document.getElementById(d).layout.title.text)")
    assert titles == ["opt-tree · step 3/12 · 60 nodes"] * 2, titles
    pg.close()


def figure_page(browser, fig, width: int):
    """`fig` drawn by plotly.js in a page `width` px wide that runs the app's own script (page_js: assets/keys.js,
    assets/app.js and assets/fit_labels.js), as Gradio's gr.Plot draws it, without the app: the labels as the page
    fits them to that width."""
    pg = browser.new_page(viewport={"width": width, "height": 900})
    pg.set_content('<div id="tree-plot"><div id="g"></div></div>')
    pg.add_script_tag(path=str(Path(plotly.__file__).parent / "package_data" / "plotly.min.js"))
    pg.add_script_tag(content=f"({page_js()})();")
    pg.evaluate("(f) => Plotly.newPlot('g', f.data, f.layout, {responsive: true})", fig.to_plotly_json())
    pg.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")   # fitted
    return pg


LABELS = """(plot) => [...document.querySelectorAll((plot || '#g') + ' .scatterlayer .trace')].flatMap(g =>
    [...g.querySelectorAll('.textpoint text')].filter(t => t.textContent).map(t => {
        const r = t.getBoundingClientRect();
        return {trace: g.__data__[0].trace.name, text: t.textContent,
                hidden: getComputedStyle(t).visibility === 'hidden',
                moved: t.hasAttribute('transform'), left: r.left, right: r.right, top: r.top, bottom: r.bottom};
    }))"""
PLOT_RIGHT = "() => { const gd = document.getElementById('g'); const s = gd._fullLayout._size;" \
             " return gd.getBoundingClientRect().left + s.l + s.w; }"


def meet(a: dict, b: dict) -> bool:
    return min(a["right"], b["right"]) - max(a["left"], b["left"]) > 2 and min(a["bottom"], b["bottom"]) - max(
        a["top"], b["top"]) > 3


def deep_step(bonus: str = "B", texts: list[str] | None = None) -> dict:
    """A 60-node tree ten layers deep (six nodes a layer) with long tokens (or `texts`), its likeliest chain
    accepted."""
    parents = [-1] * 6 + [(i // 6 - 1) * 6 + i % 3 for i in range(6, 60)]
    depth = [i // 6 + 1 for i in range(60)]
    p_hat = [0.9 ** d * (1 - 0.1 * (i % 6)) for i, d in enumerate(depth)]
    texts = texts or [f" tapestry{i}" for i in range(60)]
    return {"tokens": list(range(60)), "texts": texts, "parents": parents,
            "depth": depth, "q": p_hat, "p_hat": p_hat, "rank": [i % 6 for i in range(60)],
            "accepted": [0, 6, 12, 18, 24, 30, 36, 42, 48, 54], "rejected": None, "bonus_token": 9,
            "bonus_text": bonus, "committed": [], "committed_text": "", "expected_accept": 0.0}


def test_a_deep_trees_labels_never_print_on_each_other_on_a_phone(chromium):
    """On a phone's 390 px a 60-node tree ten layers deep has columns ~20 px apart: the page hides each
    label that would print over another (the accepted path's first, then the likeliest nodes'); every node
    keeps its text on hover. On a desktop's width the figure stays as the server drew it."""
    fig = tree_figure(deep_step(), "opt-tree · step 1/1 · 60 nodes<br>accepted 10 · E(A) = 5.00",
                      context="the end of the prompt")
    pg = figure_page(chromium, fig, PHONE["width"])
    labels = [x for x in pg.evaluate(LABELS) if not x["hidden"]]
    assert not [(a["text"], b["text"]) for i, a in enumerate(labels) for b in labels[i + 1:] if meet(a, b)]
    assert sum(x["trace"].startswith("accepted path") for x in labels) >= 3 and len(labels) >= 8, labels
    assert pg.evaluate("() => document.getElementById('g').data.find(t => t.name === 'draft nodes')"
                       ".hovertext.length") == 60
    pg.screenshot(path=str(ARTIFACTS / "classroom-phone-deep-tree.png"))
    pg.close()
    pg = figure_page(chromium, fig, 1400)
    assert not any(x["hidden"] or x["moved"] for x in pg.evaluate(LABELS))
    pg.close()


# Ten accepted tokens of everyday length, and words as short for the draft's other guesses.
SEA = [" the", " sea", " was", " vast", " and", " endless", " under", " the", " blue", " waves"]
GUESSES = [" a", " its", " so", " deep", " wide", " calm"]


def test_a_phone_shows_every_accepted_token_of_a_deep_tree(chromium):
    """On a phone's 390 px the accepted path's columns are ~20 px apart, so everyday tokens (" endless",
    " waves") touched their neighbours and 4 of 10 were hidden: the path read as a few scattered words. An
    accepted label that would touch one already kept takes the spot below its diamond instead; all ten show,
    in order, and still no two visible labels meet."""
    texts = [SEA[i // 6] if i % 6 == 0 else GUESSES[i % 6] for i in range(60)]
    fig = tree_figure(deep_step(texts=texts), "opt-tree · step 1/1 · 60 nodes<br>accepted 10 · E(A) = 5.00")
    pg = figure_page(chromium, fig, PHONE["width"])
    labels = [x for x in pg.evaluate(LABELS) if not x["hidden"]]
    assert [x["text"] for x in labels if x["trace"].startswith("accepted path")] == [
        visible(t) for t in SEA], labels
    assert not [(a["text"], b["text"]) for i, a in enumerate(labels) for b in labels[i + 1:] if meet(a, b)]
    pg.screenshot(path=str(ARTIFACTS / "classroom-phone-accepted-labels.png"))
    pg.close()


# Each shown label's box, with its own node's centre, and every marker's box (a node's dot, an accepted diamond,
# the root's square, the bonus token's star), as the reader sees them.
ON_MARKERS = """() => {
    const gd = document.getElementById('g');
    const box = (e) => { const r = e.getBoundingClientRect();
        return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };
    const marks = [...gd.querySelectorAll('.scatterlayer .trace .points path.point')].map(box);
    return {marks, labels: [...gd.querySelectorAll('.scatterlayer .trace')].flatMap(g => {
        const own = new Map([...g.querySelectorAll('.points path.point')].map(m => [m.__data__, box(m)]));
        return [...g.querySelectorAll('.textpoint')].map(tp => ({t: tp.querySelector('text'), m: own.get(tp.__data__)}))
            .filter(({t}) => t && t.textContent && getComputedStyle(t).visibility !== 'hidden')
            .map(({t, m}) => ({trace: g.__data__[0].trace.name, text: t.textContent, moved: t.hasAttribute('transform'),
                               own: m, ...box(t)}));
    })};
}"""


def centre(r: dict) -> tuple[float, float]:
    return (r["left"] + r["right"]) / 2, (r["top"] + r["bottom"]) / 2


def on_marker(label: dict, mark: dict) -> bool:
    """A label's box over a marker's box by more than 2 px each way (boxes that touch share a pixel or so,
    the blank space around a glyph) of a node other than the label's own."""
    (x, y), (ox, oy) = centre(mark), centre(label["own"])
    if abs(x - ox) < 1 and abs(y - oy) < 1:
        return False
    return min(label["right"], mark["right"]) - max(label["left"], mark["left"]) > 2 and min(
        label["bottom"], mark["bottom"]) - max(label["top"], mark["top"]) > 2


def test_on_a_phone_an_accepted_label_below_its_diamond_stays_off_other_nodes_markers(chromium):
    """An accepted label that would touch its neighbour's moves below its diamond; there " sea" sat on the dot
    of its sibling one row down (the draft labels kept off markers, the accepted path's did not). The path's
    labels are placed together, each above or below its diamond: with nine accepted tokens an arrangement clear
    of every other node's marker exists (" sea" above, its neighbours below), and the page finds it: all nine
    show, some below, no two shown labels meet and none lies on a marker not its own."""
    texts = [SEA[i // 6] if i % 6 == 0 else GUESSES[i % 6] for i in range(60)]
    step = {**deep_step(texts=texts), "accepted": [0, 6, 12, 18, 24, 30, 36, 42, 48]}
    fig = tree_figure(step, "opt-tree · step 1/1 · 60 nodes<br>accepted 9 · E(A) = 4.50")
    pg = figure_page(chromium, fig, PHONE["width"])
    seen = pg.evaluate(ON_MARKERS)
    accepted = [x for x in seen["labels"] if x["trace"].startswith("accepted path")]
    assert [x["text"] for x in accepted] == [visible(t) for t in SEA[:9]] and any(x["moved"] for x in accepted)
    assert not [(x["text"], m) for x in seen["labels"] for m in seen["marks"] if on_marker(x, m)]
    labels = seen["labels"]
    assert not [(a["text"], b["text"]) for i, a in enumerate(labels) for b in labels[i + 1:] if meet(a, b)]
    pg.screenshot(path=str(ARTIFACTS / "classroom-phone-accepted-off-markers.png"))
    pg.close()


def test_the_html_export_fits_a_deep_trees_labels_on_a_phone(chromium, tmp_path):
    """The standalone HTML export runs the app's label fitting (assets/fit_labels.js, embedded as it is): opened
    on a phone, no two visible labels of a 60-node tree print on each other and the accepted path shows whole
    (without it every label was drawn as the server placed it, one over another)."""
    texts = [SEA[i // 6] if i % 6 == 0 else GUESSES[i % 6] for i in range(60)]
    trace = {"prompt": "Describe the sea.", "steps": [{**deep_step(texts=texts), "accept_length": 10}],
             "meta": {"method": "opt-tree", "target": "target", "draft": "draft"},
             "summary": {"new_tokens": 11, "steps": 1, "tau": 11.0, "tokens_per_s": 1.0}}
    page = standalone_html(trace)
    assert page.count(label_script().strip()) == 1
    path = tmp_path / "run.html"
    path.write_text(page, encoding="utf-8")
    pg = chromium.new_page(viewport=PHONE)
    pg.goto(path.as_uri())
    pg.wait_for_selector("#tree .textpoint text", state="attached")
    pg.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame("
                "() => requestAnimationFrame(r))))")   # watched, then fitted
    labels = [x for x in pg.evaluate(LABELS, "#tree") if not x["hidden"]]
    assert [x["text"] for x in labels if x["trace"].startswith("accepted path")] == [visible(t) for t in SEA]
    assert not [(a["text"], b["text"]) for i, a in enumerate(labels) for b in labels[i + 1:] if meet(a, b)]
    pg.screenshot(path=str(ARTIFACTS / "classroom-phone-export.png"))
    pg.close()


def test_a_bonus_label_stays_inside_a_side_by_side_panel(chromium):
    """Compare's panels are ~350 px wide: a long bonus token after a deep accepted path ran past the plot's
    right edge and was cut there. The page moves it inside, clear of the accepted path's labels."""
    fig = tree_figure(deep_step(bonus="internationalisation"), "opt-tree · step 1/1")
    pg = figure_page(chromium, fig, 352)
    labels = pg.evaluate(LABELS)
    bonus = next(x for x in labels if x["trace"].startswith("bonus"))
    assert bonus["text"] == "internation…" and not bonus["hidden"]
    assert bonus["right"] <= pg.evaluate(PLOT_RIGHT) + 1, bonus
    assert not [x["text"] for x in labels if x["trace"].startswith("accepted") and meet(x, bonus)]
    pg.screenshot(path=str(ARTIFACTS / "classroom-panel-bonus.png"))
    pg.close()



# Twelve accepted tokens of everyday length after the ten of SEA, and the draft's other guesses; PATH_WORDS goes on
# to the deepest path a run may have (config LIMITS' max_depth).
WORDS = [*SEA, " of", " autumn"]
PATH_WORDS = [*WORDS, " rolled", " gently", " toward", " distant", " shores", " where", " gulls", " cried"]


def layered_step(depth: int, width: int) -> dict:
    """A tree `depth` layers deep, `width` nodes a layer, each node's parent the first or second node of the layer
    above; the first node of each layer is accepted (a PATH_WORDS token), the others are GUESSES."""
    n = depth * width
    parents = [-1] * width + [(i // width - 1) * width + i % width % 2 for i in range(width, n)]
    layer = [i // width + 1 for i in range(n)]
    p_hat = [0.95 ** d * (1 - 0.1 * (i % width)) for i, d in enumerate(layer)]
    texts = [PATH_WORDS[i // width] if i % width == 0 else GUESSES[i % width] for i in range(n)]
    return {"tokens": list(range(n)), "texts": texts, "parents": parents, "depth": layer, "q": p_hat,
            "p_hat": p_hat, "rank": [i % width for i in range(n)], "accepted": list(range(0, n, width)),
            "rejected": None, "bonus_token": 9, "bonus_text": ",", "committed": [], "committed_text": "",
            "expected_accept": 0.0}


# The colour bar as drawn: its box, its colour strip's, its title (text and box) and tick labels, beside the plot
# area's and the legend's boxes and the figure's height and bottom edge.
COLOUR_BAR = """() => {
    const gd = document.getElementById('g'), s = gd._fullLayout._size, g = gd.getBoundingClientRect();
    const box = (e) => { const r = e.getBoundingClientRect();
        return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };
    const bar = gd.querySelector('.colorbar');
    return {bar: box(bar), strip: box(bar.querySelector('.cbfills')), legend: box(gd.querySelector('.legend')),
            title: bar.querySelector('.cbtitle').textContent, titleBox: box(bar.querySelector('.cbtitle')),
            bottom: g.top + gd._fullLayout.height,
            ticks: [...bar.querySelectorAll('.cbaxis text')].map(t => t.textContent),
            plot: {left: g.left + s.l, right: g.left + s.l + s.w, top: g.top + s.t, bottom: g.top + s.t + s.h},
            width: gd._fullLayout.width, height: gd._fullLayout.height};
}"""
SCALE = ["≤1e-4", "0.001", "0.01", "0.1", "1"]


def served_plot(browser, fig, width: int) -> dict:
    """The plot area's box of `fig` drawn by plotly.js alone (without the page's script) in a page `width` px wide."""
    pg = browser.new_page(viewport={"width": width, "height": 900})
    pg.set_content('<div id="g"></div>')
    pg.add_script_tag(path=str(Path(plotly.__file__).parent / "package_data" / "plotly.min.js"))
    pg.evaluate("(f) => Plotly.newPlot('g', f.data, f.layout)", fig.to_plotly_json())
    plot = pg.evaluate(COLOUR_BAR)["plot"]
    pg.close()
    return plot


def test_on_a_phone_the_colour_bar_lies_under_the_tree_and_the_tree_takes_the_width(chromium):
    """At the plot's right the colour bar took a quarter of a phone's 390 px, squeezing a 12-deep tree's columns
    to ~18 px apart. On a narrow figure it lies across the figure under the legend, with the same scale, ticks and
    title (nodes are coloured by log p̂: a reader still reads the scale there), and the plot takes the figure's width;
    the figure grows by the bar's band, so the tree keeps the height it has as the server drew it. On a desktop's
    width the bar stays at the right, the figure as the server drew it; a window narrowed or widened past the line
    moves it."""
    fig = tree_figure(layered_step(12, 3), "opt-tree · step 1/1 · 36 nodes<br>accepted 12 · E(A) = 5.00")
    height, served = fig.layout.height, served_plot(chromium, fig, PHONE["width"])
    pg = figure_page(chromium, fig, 1400)
    wide = pg.evaluate(COLOUR_BAR)
    assert wide["strip"]["left"] >= wide["plot"]["right"] and wide["height"] == height, wide
    phone = figure_page(chromium, fig, PHONE["width"])
    for resized in (False, True):
        if resized:        # the desktop's page narrowed to a phone's width
            pg.set_viewport_size({"width": PHONE["width"], "height": 900})
            pg.wait_for_function("() => document.getElementById('g').layout.coloraxis2")   # moved under the legend
            pg.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")   # fitted
        bar = (pg if resized else phone).evaluate(COLOUR_BAR)
        strip, plot = bar["strip"], bar["plot"]
        assert plot["right"] - plot["left"] >= 0.9 * bar["width"], bar               # the tree has the width
        assert strip["top"] >= bar["legend"]["bottom"] and strip["right"] - strip["left"] >= 0.8 * bar["width"], bar
        assert strip["bottom"] < bar["titleBox"]["top"] and bar["titleBox"]["bottom"] <= bar["bottom"], bar
        assert bar["height"] > height, bar
        assert "log scale" in bar["title"] and "belief" in bar["title"] and bar["ticks"] == SCALE, bar
        assert plot["bottom"] - plot["top"] >= served["bottom"] - served["top"] - 1, (bar, served)
    phone.screenshot(path=str(ARTIFACTS / "classroom-phone-colour-bar.png"))
    phone.close()
    pg.set_viewport_size({"width": 1400, "height": 900})
    pg.wait_for_function("() => !document.getElementById('g').layout.coloraxis2")     # moved back
    back = pg.evaluate(COLOUR_BAR)
    assert back["strip"]["left"] >= back["plot"]["right"] and back["plot"]["bottom"] < back["legend"]["top"], back
    pg.close()


def test_a_phone_shows_every_accepted_token_of_a_12_deep_path(chromium):
    """A 12-deep accepted path, three nodes a layer, at 390 px: with the colour bar at the plot's right the columns
    were ~18 px apart and " endless" and " of" were hidden. With the tree at the figure's width every accepted token
    shows, in order, no two visible labels meet, and none lies on the bonus token's star."""
    fig = tree_figure(layered_step(12, 3), "opt-tree · step 1/1 · 36 nodes<br>accepted 12 · E(A) = 5.00")
    pg = figure_page(chromium, fig, PHONE["width"])
    labels = [x for x in pg.evaluate(LABELS) if not x["hidden"]]
    assert [x["text"] for x in labels if x["trace"].startswith("accepted path")] == [visible(t) for t in WORDS]
    assert not [(a["text"], b["text"]) for i, a in enumerate(labels) for b in labels[i + 1:] if meet(a, b)]
    star = pg.evaluate(STAR)
    assert not [x["text"] for x in pg.evaluate(ON_MARKERS)["labels"] if on_marker(x, star)]
    pg.screenshot(path=str(ARTIFACTS / "classroom-phone-12-deep-path.png"))
    pg.close()


# The bonus token's star: the second point of its trace (the first is a 1 px dot on the last accepted node).
STAR = """() => {
    const g = [...document.querySelectorAll('#g .scatterlayer .trace')]
        .find(g => g.__data__[0].trace.name.startsWith('bonus'));
    const r = g.querySelectorAll('.points path.point')[1].getBoundingClientRect();
    return {left: r.left, right: r.right, top: r.top, bottom: r.bottom};
}"""


def test_on_a_phone_the_last_accepted_label_keeps_off_the_bonus_star(chromium):
    """The last accepted token's label, centred above its diamond, reaches the bonus token's star half a column
    right; the path's placement weighed the star as a draft node's dot, so at five nodes a layer " autumn" was
    drawn on the star. The star weighs as an accepted diamond does: every accepted token shows and no shown label
    lies on the star."""
    fig = tree_figure(layered_step(12, 5), "opt-tree · step 1/1 · 60 nodes<br>accepted 12 · E(A) = 5.00")
    pg = figure_page(chromium, fig, PHONE["width"])
    star, seen = pg.evaluate(STAR), pg.evaluate(ON_MARKERS)
    assert [x["text"] for x in seen["labels"] if x["trace"].startswith("accepted path")] == [
        visible(t) for t in WORDS]
    assert not [x["text"] for x in seen["labels"] if on_marker(x, star)]
    pg.screenshot(path=str(ARTIFACTS / "classroom-phone-bonus-star.png"))
    pg.close()


# The accepted path's markers: the root's square and each accepted diamond.
DIAMONDS = """() => [...[...document.querySelectorAll('#g .scatterlayer .trace')]
    .find(g => g.__data__[0].trace.name.startsWith('accepted path')).querySelectorAll('.points path.point')]
    .map(m => { const r = m.getBoundingClientRect();
        return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; })"""


@pytest.mark.parametrize("depth", [15, LIMITS["max_depth"][1]])
def test_a_phone_shows_every_accepted_token_of_a_path_as_deep_as_a_run_goes(chromium, depth):
    """A 15-deep accepted path two nodes a layer at 390 px has its columns ~20 px apart (~16 px at 20 deep): above
    and below the path alternately, one accepted word still met its neighbours and was hidden (five of twenty at
    20 deep), so the path read with gaps. Up to the deepest tree a run may grow (config LIMITS' max_depth) every
    accepted token shows, in order, between the depth axis and the legend, and so does the bonus token's label;
    no two visible labels meet and none lies on an accepted diamond or the bonus token's star."""
    fig = tree_figure(layered_step(depth, 2), f"opt-tree · step 1/1 · {2 * depth} nodes<br>accepted {depth}")
    pg = figure_page(chromium, fig, PHONE["width"])
    labels = [x for x in pg.evaluate(LABELS) if not x["hidden"]]
    assert [x["text"] for x in labels if x["trace"].startswith("accepted path")] == [
        visible(t) for t in PATH_WORDS[:depth]], labels
    assert [x["text"] for x in labels if x["trace"].startswith("bonus")] == [","], labels
    assert not [(a["text"], b["text"]) for i, a in enumerate(labels) for b in labels[i + 1:] if meet(a, b)]
    drawn = pg.evaluate(COLOUR_BAR)         # between the depth axis and the legend
    assert all(0 <= x["left"] and x["right"] <= PHONE["width"] and drawn["plot"]["top"] <= x["top"]
               and x["bottom"] <= drawn["legend"]["top"] for x in labels), (drawn, labels)
    seen, star = pg.evaluate(ON_MARKERS), pg.evaluate(STAR)
    diamonds = pg.evaluate(DIAMONDS)
    assert not [(x["text"], m) for x in seen["labels"] for m in [star, *diamonds] if on_marker(x, m)]
    pg.screenshot(path=str(ARTIFACTS / f"classroom-phone-{depth}-deep-path.png"))
    pg.close()


# Gradio 6's layout rules for its page (held to 768 px wide from 768 to 1023 px, to 1024 px from there), a
# Row and a Column (a row wraps, each child grows from zero width down to a floor; a Column writes its scale
# and min_width on itself), and Explore's columns as ui/explore.py builds them: the settings (scale 1, 300 px)
# beside the step (scale 3), whose tree sits above its side column.
