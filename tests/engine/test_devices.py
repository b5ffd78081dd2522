"""Token Recycling, prompt lookup, retrieval fusion, both length controllers and sampling on every device:
each DEVICES entry (CUDA where present, so `make gpu-check` runs them there) and "fake-cuda", the CPU
stand-in for a GPU (tests/fake_cuda.py) that raises wherever CUDA would refuse to mix host and device
tensors and counts the host's reads of device values (one GPU synchronisation each)."""

import contextlib

import pytest
import torch
from fake_cuda import FakeCuda, Mixed, fake_cuda, fake_pair
from reference import commits_the_ar_runs_sample, reference
from tiny import DEVICES, tiny_pair

from opttree.config import DecodeConfig
from opttree.decoding.verify import target_side
from opttree.drafters.base import odds
from opttree.drafters.context import DraftContext
from opttree.drafters.recycling import RecyclingTable
from opttree.engine.speculative import run
from opttree.trace_file import validate_trace
from opttree.trees.draft_tree import ROOT, DraftTree

FAKE = "fake-cuda"
KINDS = [*DEVICES, FAKE]
PROMPTS = [[3, 5, 7, 11, 13, 3, 5, 7], [40, 41, 42, 43, 40, 41]]   # repeats: lookup and retrieval find matches
DRAFTS = [("recycling", {}), ("lookup", {}), ("classic", {"retrieval": "on"}), ("eagle", {"retrieval": "on"}),
          ("early-exit", {"retrieval": "on"}), ("eagle", {"length_control": "thompson"}),
          ("early-exit", {"length_control": "predictor"})]
IDS = ["recycling", "lookup", "classic+retrieval", "eagle+retrieval", "early-exit+retrieval", "eagle+thompson",
       "early-exit+predictor"]


def on(kind: str):
    """Where a run on `kind` happens: inside the fake device for "fake-cuda"."""
    return fake_cuda() if kind == FAKE else contextlib.nullcontext()


def pair_on(kind: str, drafter: str, monkeypatch, **settings):
    pair = tiny_pair(drafter, device="cpu" if kind == FAKE else kind, **settings)
    return fake_pair(pair, monkeypatch) if kind == FAKE else pair


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("drafter,extra", DRAFTS, ids=IDS)
def test_greedy_runs_match_generate_on_every_device(kind, drafter, extra, monkeypatch, tiny_predictor):
    """Greedy output equals the target's own `generate` at a fixed budget and under the auto budget, with the
    trace's target side recorded; a session's recycling table carries over from run to run."""
    pair = tiny_pair(drafter, eos=9, device="cpu" if kind == FAKE else kind)
    refs = [reference(pair.target, prompt, 20) for prompt in PROMPTS]
    if kind == FAKE:
        fake_pair(pair, monkeypatch)
    context = DraftContext(table=RecyclingTable(pair.target.config.vocab_size))
    for nodes in (16, 0):
        for prompt, ref in zip(PROMPTS, refs):
            cfg = DecodeConfig(method="opt-tree", nodes=nodes, threshold=0.05, max_depth=5, max_new_tokens=20, **extra)
            with on(kind):
                trace = run(pair, "", cfg, prompt_ids=prompt, context=context)
            assert trace["output_ids"] == ref, (nodes, prompt)
            validate_trace(trace)
            assert any(s["topk_rows"] for s in trace["steps"])
    if drafter == "recycling":
        assert context.table.rows_filled() > 0


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("drafter,extra", DRAFTS, ids=IDS)
def test_sampled_runs_commit_the_ar_runs_sample_on_every_device(kind, drafter, extra, monkeypatch, tiny_predictor):
    """Sampled (temperature, top-k, top-p), the same seed commits the AR run's tokens on this device too."""
    pair = pair_on(kind, drafter, monkeypatch, vocab=32, scale=2.0, eos=7)
    with on(kind):
        commits_the_ar_runs_sample(pair, "opt-tree", [1, 2, 3, 1, 2], **extra)


def test_the_fake_device_refuses_what_cuda_refuses():
    """The stand-in's checks, so a pass under it means something: mixing a host tensor into a device op, or
    indexing a host table with device indices, raises; device tensors indexed by host indices, host scalars
    and explicit copies are fine, and each copy or value read off the device is counted."""
    with fake_cuda():
        dev = torch.arange(6.0, device="cuda")
        for mix in (lambda: dev + torch.ones(6), lambda: torch.cat([dev, torch.ones(2)]),
                    lambda: dev.index_select(0, torch.tensor([0])), lambda: torch.zeros(6)[dev.long()]):
            with pytest.raises(Mixed):
                mix()
        assert (dev[torch.tensor([1, 2])] + torch.tensor(1.0)).device.type == "cuda"
        assert FakeCuda.reads == 0
        assert dev.cpu().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0] and float(dev[2]) == 2.0
        assert FakeCuda.reads == 2


def test_retrieval_odds_read_the_device_rows_once():
    """Retrieval fusion's pruning numbers (q and rank of each retrieved token) come off the device in one
    read however many of the layer's nodes have retrieved children."""
    probs = torch.softmax(torch.randn(6, 40, generator=torch.Generator().manual_seed(0)), -1)
    asked = [[1, 5], [], [7], [0, 39, 3], [2], [9]]
    with fake_cuda():
        found = odds(FakeCuda.wrap(probs), asked)
        assert FakeCuda.reads == 1
    assert found == odds(probs, asked)
    assert found[0][0] == (pytest.approx(float(probs[0, 1])), int((probs[0] > probs[0, 1]).sum()))


def test_the_target_side_reads_the_device_a_fixed_number_of_times():
    """The trace's target side reads the device as often for 10 recorded rows as for one (not once per
    row), and records what it records on the host."""
    gen = torch.Generator().manual_seed(1)
    tree = DraftTree()
    for i in range(12):
        tree.add(ROOT if i < 3 else (i - 3) // 3, i + 2, 0.5, i % 3)
    logits = torch.randn(len(tree) + 1, 30, generator=gen)
    rows = {node: torch.softmax(torch.randn(30, generator=gen), -1) for node in [ROOT, *range(len(tree))]}
    reads = {}
    for limit in (1, 10):
        with fake_cuda():
            on_device = {node: FakeCuda.wrap(row) for node, row in rows.items()}
            got = target_side(tree, FakeCuda.wrap(logits), lambda x: torch.softmax(x, -1), on_device, [0], limit, 8)
            reads[limit] = FakeCuda.reads
        assert got == target_side(tree, logits, lambda x: torch.softmax(x, -1), rows, [0], limit, 8)
        assert len(got[1]) == limit
    assert reads[1] == reads[10]
