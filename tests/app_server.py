"""Launch the real `app.py` on a free loopback port for the API and browser tests."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "opttree" / "assets" / "models.json"
PROJECTOR = {"width": 1280, "height": 720}    # the browser tests' viewports
PHONE = {"width": 390, "height": 844}
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"     # Debian's (`make browser`): Playwright cannot download
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
ARTIFACTS = ROOT / "tmp" / "artifacts"     # the browser tests' screenshots


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fast_model_id() -> str:
    """The quickest allow-listed pair that still drafts: the trained head once it is installed,
    otherwise the untrained head (cheap to run; the self-drafting stand-in is slow on a CPU)."""
    data = json.loads(MODELS.read_text())
    head = next(m for m in data["models"] if m["id"] == "smollm2-eagle")
    return "smollm2-eagle" if (MODELS.parent / head["draft"]).exists() else "smollm2-random"


def drafting_model_id() -> str:
    """A pair whose drafts get accepted (so accepted paths change from step to step): the trained
    head once installed, else the target drafting for itself (slower, so keep such runs short)."""
    return "smollm2-eagle" if fast_model_id() == "smollm2-eagle" else "smollm2-self"


def write_models_file(folder: Path, default: str) -> Path:
    """The shipped allow-list with `default` as the page's default (draft paths made absolute)."""
    data = json.loads(MODELS.read_text())
    for m in data["models"]:
        if m.get("draft") and m["draft"] != "random":
            m["draft"] = str((MODELS.parent / m["draft"]).resolve())
    data["default"] = default
    path = folder / "models.json"
    path.write_text(json.dumps(data))
    return path


@contextmanager
def launched_app(folder: Path, default: str | None = None, startup_s: float = 180.0):
    port = free_port()
    env = dict(os.environ, GRADIO_SERVER_NAME="127.0.0.1", GRADIO_SERVER_PORT=str(port),
               GRADIO_ANALYTICS_ENABLED="False", HF_HUB_OFFLINE="1",
               OPTTREE_MODELS=str(write_models_file(folder, default or fast_model_id())), PYTHONPATH=str(ROOT))
    # A page test's first run loads its model, which counts towards a run's time limit; on a fresh cache
    # with the test workers sharing 2 cores that load alone has passed the 180 s default. These tests
    # check what a run shows, the limit has its own (tests/app/test_app_service.py); a test may set one.
    env.setdefault("OPTTREE_RUN_TIME_LIMIT", "900")
    log_path = folder / "app.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, str(ROOT / "app.py")], cwd=ROOT, env=env, stdout=log,
                                stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + startup_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"app exited early:\n{log_path.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"app did not start in {startup_s:.0f} s:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.5)
        yield url, log_path
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def headless_chromium():
    """Debian's Chromium, headless, through Playwright: yields the browser."""
    from playwright import sync_api  # only the browser tests import Playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def browser_on_app(folder: Path, default: str | None = None):
    """Headless Chromium (Playwright) beside the real app launched in `folder`: yields (browser, url)."""
    with launched_app(folder, default=default) as (url, _), headless_chromium() as browser:
        yield browser, url
