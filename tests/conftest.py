import os
import sys
import tempfile
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # no hub in CI: unknown ids must fail fast
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
# Cost curves measured by the tests (tiny models, this session's threads) stay out of the user's cache.
os.environ.setdefault("OPTTREE_COSTS", tempfile.mkdtemp(prefix="opttree-costs-"))
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


@pytest.fixture(scope="session")
def smollm():
    """The real bundled model (target only), loaded once per test session."""
    from opttree.models.loading import load_pair

    return load_pair("smollm2-135m-instruct", drafter="none", device="cpu")
