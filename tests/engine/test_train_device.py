"""Training runs where its target runs (`--device`): data are generated and drafts learn on a GPU when
there is one, and what is stored (shards, exported weights) is the same CPU data either way.

On the CPU the meta device stands in for an accelerator: a draft and a batch moved there compute
shapes only, and any tensor made on the CPU inside the training maths meets them and fails. The
tests marked for CUDA run the same code on a GPU (`make gpu-check` runs the suite there)."""

from __future__ import annotations

import json

import pytest
import torch
from reference import needs_target
from tiny import tiny_llama

from opttree.nets.exit_head import ExitHead, exit_config
from opttree.nets.feature_head import FeatureHead, head_config_from_target
from opttree.train import data as D
from opttree.train.classic import build_draft
from opttree.train.early_exit import exit_outputs
from opttree.train.generate import generate_batch
from opttree.train.head import depth_targets, unrolled

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
PROMPTS = [[1, 2, 3], [4, 5, 6, 7, 8], [9, 10], [11, 12, 13, 14]]


def _data(model) -> list[dict]:
    return generate_batch(model, PROMPTS, max_new=6, topk=4, eos=set())


def test_a_batch_and_the_training_maths_stay_on_the_drafts_device():
    target = tiny_llama(seed=3, vocab=64)
    seqs = _data(target)
    batch = D.collate(seqs, device="meta")
    assert {v.device.type for v in batch.values()} == {"meta"}
    n = batch["ids"].shape[1] - 1
    head = FeatureHead(head_config_from_target(target.config)).to("meta")
    embed = torch.nn.Embedding(64, target.config.hidden_size).to("meta")
    outs = unrolled(head, embed, batch, depth=3, noise=0.1)       # positions and depth masks made on meta
    assert [tuple(o.shape) for o in outs] == [(4, n, target.config.hidden_size)] * 3
    assert all(o.device.type == "meta" for o in outs)
    tk_ids, tk_p = depth_targets(batch, 2, n)
    assert tk_ids.device.type == tk_p.device.type == "meta"
    exit_head = ExitHead(exit_config(target.config, 1)).to("meta")
    assert exit_outputs(exit_head, batch).device.type == "meta"
    full_to_draft, rows = D.draft_rows(target.lm_head.weight.to("meta"), torch.tensor([5, 9, 2]))
    assert full_to_draft.device.type == rows.device.type == "meta" and tuple(rows.shape) == (3, 32)


def test_draft_rows_map_the_target_vocabulary_onto_the_drafts():
    w = torch.arange(12.0).view(6, 2)
    full_to_draft, rows = D.draft_rows(w, torch.tensor([4, 1]))
    assert full_to_draft.tolist() == [-1, 1, -1, -1, 0, -1]
    assert rows.tolist() == [[8.0, 9.0], [2.0, 3.0]]


def test_the_classic_draft_can_be_built_then_moved_to_its_targets_device():
    target = tiny_llama(seed=3, vocab=64)
    model, _ = build_draft(target, 1)
    model.to("meta")
    assert {p.device.type for p in model.parameters()} == {"meta"}


@CUDA
def test_generated_data_on_cuda_are_the_cpus_and_stored_on_the_cpu():
    cpu = tiny_llama(seed=3, vocab=64)
    gpu = tiny_llama(seed=3, vocab=64).to("cuda")
    for a, b in zip(_data(cpu), _data(gpu)):
        assert b["feats"].device.type == b["topk_ids"].device.type == b["topk_p"].device.type == "cpu"
        assert a["ids"].tolist() == b["ids"].tolist()
        assert torch.allclose(a["feats"].float(), b["feats"].float(), atol=2e-2)


@CUDA
@needs_target
def test_tiny_training_run_on_cuda(tmp_path):
    """The CLI end to end on the GPU: generation, a head, a classic and an early exit; the exported
    files load on the CPU and draft losslessly there."""
    from opttree.config import BUNDLED_ID, DecodeConfig
    from opttree.drafters.registry import load_pair
    from opttree.engine.speculative import run
    from opttree.train.__main__ import main

    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"id": i, "prompt": p}) + "\n"
                               for i, p in enumerate(["Name three colours.", "What is 2 + 3?"] * 2)))
    common = ["--data", str(tmp_path / "gen"), "--prompts", str(prompts), "--tokens", "1000", "--max-new", "8",
              "--gen-batch", "2", "--steps", "2", "--eval-every", "2", "--batch-tokens", "256", "--ckpt-dir",
              str(tmp_path / "ck"), "--tau-prompts", "0", "--fit-temperature", "0", "--device", "cuda", "--bf16"]
    head = main(["--kind", "head", "--fused", "--out", str(tmp_path / "head.safetensors"), "--draft-vocab", "300",
                 "--unroll", "2"] + common)
    classic = main(["--kind", "classic", "--out", str(tmp_path / "classic.safetensors"), "--layers", "1",
                    "--no-generate"] + common)
    exit_head = main(["--kind", "early-exit", "--exit-layer", "3", "--out", str(tmp_path / "exit.safetensors"),
                      "--draft-vocab", "300", "--no-generate"] + common)
    assert head["steps"] == classic["steps"] == exit_head["steps"] == 2
    shard = torch.load(next((tmp_path / "gen").glob("shard_*.pt")), weights_only=True)[0]
    assert shard["feats"].device.type == "cpu" and shard["layer_feats"].shape[1:] == (2, 576)
    cfg = DecodeConfig(method="opt-tree", nodes=10, max_depth=3, max_new_tokens=6)
    for kind, path in (("eagle", "head"), ("classic", "classic"), ("early-exit", "exit")):
        pair = load_pair(BUNDLED_ID, drafter=kind, draft=str(tmp_path / f"{path}.safetensors"), device="cpu")
        ar = run(pair, "What is 2 + 3?", DecodeConfig(method="ar", max_new_tokens=6))["output_ids"]
        assert run(pair, "What is 2 + 3?", cfg)["output_ids"] == ar
