"""The CPU stand-in for a GPU (tests/fake_cuda.py), which raises wherever CUDA would refuse to mix host and
device tensors and counts the host's reads of device values (one GPU synchronisation each): its own checks,
and the engine's reads of device values that do not grow with the nodes."""

import pytest
import torch
from fake_cuda import FakeCuda, Mixed, fake_cuda

from opttree.decoding.verify import target_side
from opttree.drafters.base import odds
from opttree.trees.draft_tree import ROOT, DraftTree


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
