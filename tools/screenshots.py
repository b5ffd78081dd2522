"""Regenerate the screenshots in docs/screenshots/ from the current app (`make screenshots`).

Launches the real app on a free loopback port (tests/app_server.py, the launcher the browser tests
use), drives it in headless Chromium like a visitor (a lesson preset, a Compare run, each tab) and
writes one PNG per view. Needs Chromium (`make browser`) and takes a few minutes on a CPU.
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

OUT = ROOT / "docs" / "screenshots"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
STATUS = ("(sel) => (document.querySelector(sel + ' [data-testid=\"markdown\"]') "
          "|| document.querySelector(sel)).innerText")
RUN_MS = 600_000


def wait_status(pg, sel: str, pattern: str) -> None:
    pg.wait_for_function(f"() => /{pattern}/.test(({STATUS})('{sel}'))", timeout=RUN_MS)


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, launched_app(Path(tmp), default="smollm2-eagle") as (url, _):
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            pg = browser.new_page(viewport={"width": 1400, "height": 1000})
            pg.set_default_timeout(120_000)
            pg.goto(url)
            pg.wait_for_selector("#tree-plot .js-plotly-plot")
            pg.click("#preset-1")                       # the open-ended poem: a wide tree
            wait_status(pg, "#status", "Done")
            pg.locator("#step input[type=number]").fill("3")
            pg.locator("#step input[type=number]").press("Enter")
            pg.wait_for_timeout(1500)
            pg.screenshot(path=str(OUT / "explore.png"), full_page=True)
            # Compare at the page's own settings (the lesson above set a fixed n = 60): a fresh page.
            pg.goto(url)
            pg.wait_for_selector("#tree-plot .js-plotly-plot")
            pg.get_by_role("tab", name="Compare").click()
            pg.click("#compare-run")
            wait_status(pg, "#compare-status", "Done")
            pg.wait_for_timeout(1500)
            pg.screenshot(path=str(OUT / "compare.png"), full_page=True)
            for tab, name in (("E(A) vs A", "ea-vs-a.png"), ("Theory", "theory.png"), ("Learn", "learn.png")):
                tab_button = pg.get_by_role("tab", name=tab)
                if tab_button.count() == 0:
                    continue
                tab_button.click()
                pg.wait_for_timeout(2000)
                pg.screenshot(path=str(OUT / name), full_page=True)
            # Dark mode (Gradio's ?__theme=dark), a short run of the page's defaults.
            dark = browser.new_page(viewport={"width": 1400, "height": 1000})
            dark.set_default_timeout(120_000)
            dark.goto(url + "?__theme=dark")
            dark.wait_for_selector("#tree-plot .js-plotly-plot")
            dark.click("#run")
            wait_status(dark, "#status", "Done")
            dark.locator("#step input[type=number]").fill("3")
            dark.locator("#step input[type=number]").press("Enter")
            dark.wait_for_timeout(1500)
            dark.screenshot(path=str(OUT / "explore-dark.png"), full_page=True)
            browser.close()
    print(f"wrote {', '.join(sorted(f.name for f in OUT.glob('*.png')))} in {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
