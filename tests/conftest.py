import os
import tempfile
from pathlib import Path

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # no hub in CI: unknown ids must fail fast
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
# Cost curves measured by the tests (tiny models, this session's threads) stay out of the user's cache.
os.environ.setdefault("OPTTREE_COSTS", tempfile.mkdtemp(prefix="opttree-costs-"))
# Under pytest-xdist (make test-fast runs one worker per core) each worker keeps to one thread.
torch.set_num_threads(1 if os.environ.get("PYTEST_XDIST_WORKER") else max(1, min(2, os.cpu_count() or 1)))


@pytest.fixture(autouse=True)
def _threads_stay():
    """A command a test runs may set torch's threads (training's --threads): the next test gets its own back."""
    threads = torch.get_num_threads()
    yield
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


# Tests live in folders by what they need (pyproject.toml declares the markers): unit/ (no model),
# engine/ (tiny random models, or the bundled target: marked `model`), app/ (the page, the browser,
# load, packaging); a test file outside them counts as app. `model` marks what asks for the bundled target.
FOLDERS = ("unit", "engine", "app")


def pytest_collection_modifyitems(config, items):
    for item in items:
        folder = Path(str(item.fspath)).parent.name
        # A test file not yet in a folder counts as app: make test-fast never runs what it cannot vouch for.
        item.add_marker(folder if folder in FOLDERS else "app")
        if "smollm" in getattr(item, "fixturenames", ()):
            item.add_marker("model")


@pytest.fixture(scope="session")
def smollm():
    """The real bundled model (target only), loaded once per test session."""
    from opttree.config import BUNDLED_ID
    from opttree.drafters.registry import load_pair

    return load_pair(BUNDLED_ID, drafter="none", device="cpu")


@pytest.fixture()
def tiny_predictor(tmp_path, monkeypatch):
    """A predictor for the tiny models' 32-wide states, installed where the loop looks for it."""
    from opttree.nets import length_predictor as lp  # training code loads only where a test asks for a predictor
    from opttree.train.length_predictor import fit, save

    gen = torch.Generator().manual_seed(1)
    x = torch.randn(200, 32, generator=gen)
    model = fit(x, (x[:, 0] * 2 + 2).clamp(0, 5), epochs=50)
    path = tmp_path / "tiny-length.safetensors"
    save(model, path, {"target": "tiny-target"})
    monkeypatch.setattr(lp, "DEFAULT_PREDICTOR", path)
    lp.load_length_predictor.cache_clear()
    yield path
    lp.load_length_predictor.cache_clear()
