"""Regenerate the screenshots in docs/screenshots/ from the current app (`make screenshots`).

Launches the real app on a free loopback port (tests/app_server.py, the launcher the browser tests
use), drives it in headless Chromium like a visitor (a lesson, a Compare run, each tab, presenter
mode at a projector's 1280 × 720) and writes one PNG per view. Needs Chromium (`make browser`) and
takes a few minutes on a CPU. `python tools/screenshots.py explore presenter` shoots only those views
(names: explore, presenter, compare, ea-vs-a, theory, learn, explore-dark).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from app_server import launched_app  # noqa: E402 (the tests' launcher, found through the path above)
from playwright.sync_api import sync_playwright  # noqa: E402

from opttree.bench.verdict import disturbed_warning  # noqa: E402 (the checkout, on the path by make's PYTHONPATH=.)

OUT = ROOT / "docs" / "screenshots"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
STATUS = ("(sel) => { const e = document.querySelector(sel + ' [data-testid=\"markdown\"]') "
          "|| document.querySelector(sel); return e ? e.innerText : ''; }")
RUN_MS = 600_000
WIDE = {"width": 1400, "height": 1000}
PROJECTOR = {"width": 1280, "height": 720}
TABS = {"ea-vs-a": "E(A) vs A", "theory": "Theory", "serving": "Serving", "learn": "Learn"}
COMPARE_TRIES = 3
MORE_PROMPTS = ("Explain how a rainbow forms.", "Write a Python function that reverses a string.")


def wait_status(pg, sel: str, pattern: str) -> None:
    pg.wait_for_function(f"() => /{pattern}/.test(({STATUS})('{sel}'))", timeout=RUN_MS)


def opened(browser, url: str, viewport: dict = WIDE):
    pg = browser.new_page(viewport=viewport)
    pg.set_default_timeout(120_000)
    pg.goto(url)
    pg.wait_for_selector("#tree-plot .js-plotly-plot")
    return pg


def explore(browser, url: str, wanted=()) -> None:
    """The open-ended lesson (a wide 60-node tree) at step 3, opened by its deep link; then the wanted
    tabs after this run."""
    pg = opened(browser, url + "?preset=1&step=3")
    wait_status(pg, "#status", "Done")
    pg.wait_for_timeout(1500)
    pg.evaluate("() => window.scrollTo(0, 0)")
    pg.screenshot(path=str(OUT / "explore.png"), full_page=True)
    # E(A) vs A last: it reads every step of the session, so two longer runs come first (8 steps alone
    # would show noise, not the calibration); the other tabs read the lesson's step.
    for name, tab in sorted(TABS.items(), key=lambda kv: kv[0] == "ea-vs-a"):
        if name not in wanted:
            continue
        if name == "ea-vs-a":
            more_steps(pg)
        pg.get_by_role("tab", name=tab).click()
        pg.wait_for_timeout(2000)
        if name == "serving":       # the batching model too: measured through the lane (cached after once)
            pg.locator("#serving-measure").click()
            pg.wait_for_function("() => document.querySelector('#serving-summary').innerText.trim().length > 0",
                                 timeout=RUN_MS)
            pg.wait_for_timeout(1500)
        pg.screenshot(path=str(OUT / f"{name}.png"), full_page=True)
    pg.close()


def more_steps(pg) -> None:
    """Two more runs of 128 tokens in the page's session, at the lesson's settings."""
    pg.get_by_role("tab", name="Explore").click()
    tokens = pg.locator("#max-new-tokens input[type=number]")
    tokens.fill("128")
    tokens.press("Enter")
    for prompt in MORE_PROMPTS:
        before = pg.evaluate(STATUS, "#status")
        pg.locator("#prompt textarea").fill(prompt)
        pg.click("#run")
        pg.wait_for_function(f"(before) => {{ const t = ({STATUS})('#status'); "
                             "return t !== before && /Done/.test(t); }", arg=before, timeout=RUN_MS)


def presenter(browser, url: str, wanted=()) -> None:
    """Presenter mode at a projector's 1280 × 720: the screen as the class sees it."""
    pg = opened(browser, url + "?preset=1&step=3&present=1", PROJECTOR)
    wait_status(pg, "#status", "Done")
    pg.wait_for_timeout(2000)
    pg.screenshot(path=str(OUT / "presenter.png"))
    pg.close()


def compare(browser, url: str, wanted=()) -> None:
    """Compare at the page's own settings (the auto budget), run again while its verdict says other work on the
    machine disturbed the timing (a picture of nonsense speedups teaches the wrong lesson); after COMPARE_TRIES
    such runs compare.png is left as it was and the command fails, saying so."""
    pg = opened(browser, url)
    pg.get_by_role("tab", name="Compare").click()
    for run in range(1, COMPARE_TRIES + 1):
        pg.click("#compare-run")
        wait_status(pg, "#compare-status", "Done")
        pg.wait_for_timeout(1500)
        warning = disturbed_warning(pg.evaluate(STATUS, "#compare-verdict"))
        if not warning:
            pg.screenshot(path=str(OUT / "compare.png"), full_page=True)
            pg.close()
            return
        print(f"compare, run {run} of {COMPARE_TRIES}: {warning}", file=sys.stderr, flush=True)
    pg.close()
    raise SystemExit(f"compare.png not written: the timing was disturbed in all {COMPARE_TRIES} runs (other work on "
                     "the machine?); run `make screenshots` again on an idle machine.")


def explore_dark(browser, url: str, wanted=()) -> None:
    """Dark mode (Gradio's ?__theme=dark), a short run of the page's defaults."""
    pg = opened(browser, url + "?__theme=dark&step=3&run=1")
    wait_status(pg, "#status", "Done")
    pg.wait_for_timeout(1500)
    pg.evaluate("() => window.scrollTo(0, 0)")
    pg.screenshot(path=str(OUT / "explore-dark.png"), full_page=True)
    pg.close()


VIEWS = {"explore": explore, "presenter": presenter, "compare": compare, "explore-dark": explore_dark}


def main(names: list[str]) -> int:
    wanted = names or [*VIEWS, *TABS]
    unknown = set(wanted) - set(VIEWS) - set(TABS)
    if unknown:
        raise SystemExit(f"unknown view(s) {sorted(unknown)}: choose from {[*VIEWS, *TABS]}")
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, launched_app(Path(tmp), default="smollm2-eagle") as (url, _):
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            for name, shoot in VIEWS.items():
                # The E(A)-vs-A, Theory, Serving and Learn tabs are shot after Explore's run.
                if name in wanted or (name == "explore" and set(TABS) & set(wanted)):
                    shoot(browser, url, wanted)
            browser.close()
    print(f"wrote {', '.join(sorted(f.name for f in OUT.glob('*.png')))} in {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
