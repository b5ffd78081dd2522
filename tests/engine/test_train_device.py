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
from opttree.train.classic import build_draft, classic_losses
from opttree.train.early_exit import exit_outputs
from opttree.train.generate import generate_batch
from opttree.train.head import depth_targets, head_losses, unrolled

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
    assert D.vocab_map(torch.tensor([5, 9, 2]), 64, "meta").device.type == "meta"


def test_a_vocabulary_map_sends_each_target_token_to_its_draft_column():
    assert D.vocab_map(torch.tensor([4, 1]), 6, "cpu").tolist() == [-1, 1, -1, -1, 0, -1]


def test_the_training_maths_make_every_tensor_on_their_inputs_device():
    """Inside `torch.device("meta")` a tensor made without naming its device lands on meta and meets the
    CPU batch and draft: every loss of the three trainers must still come out on the CPU."""
    target = tiny_llama(seed=3, vocab=64)
    batch = D.collate(_data(target))
    vocab_ids = torch.arange(0, 64, 2)
    full_to_draft = D.vocab_map(vocab_ids, 64, "cpu")
    head = FeatureHead(head_config_from_target(target.config, draft_vocab=32))
    head.vocab_ids.copy_(vocab_ids)
    exit_head = ExitHead(exit_config(target.config, 1, draft_vocab=32))
    exit_head.vocab_ids.copy_(vocab_ids)
    classic, _ = build_draft(target, 1)
    W = target.lm_head.weight[vocab_ids]
    with torch.device("meta"):
        outs = unrolled(head, target.get_input_embeddings(), batch, depth=3, noise=0.1)
        head_loss, _ = head_losses(head, W, full_to_draft, outs, batch, [1.0, 0.7, 0.5], 1.0, 0.2)
        exits = [exit_outputs(exit_head, batch)]
        exit_loss, _ = head_losses(exit_head, W, full_to_draft, exits, batch, [1.0], 1.0, 0.0)
        classic_loss, _, _ = classic_losses(classic, batch, 1.0, 0.2, (vocab_ids, full_to_draft))
    for loss in (head_loss, exit_loss, classic_loss):
        assert loss.device.type == "cpu" and bool(torch.isfinite(loss))


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
