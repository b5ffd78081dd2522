"""Reduced precision: drafts beside a bf16 target (their weights in its dtype, their rotary frequencies fp32)."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import save_file
from tiny import tiny_llama

from opttree.config import RANDOM_HEAD
from opttree.models.draft_assets import load_bundled_classic, load_exit_head, load_feature_head


def rotary_buffers(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: buf for name, buf in model.named_buffers() if name.endswith("inv_freq")}


def fp32_frequencies(config) -> torch.Tensor:
    """RoPE's inverse frequencies as transformers computes them (default rope), in fp32."""
    dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    theta = config.rope_parameters["rope_theta"]
    return 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))


def classic_file(tmp_path, target) -> str:
    """A one-layer classic draft file as python -m opttree.train writes one (its config in the metadata)."""
    draft = tiny_llama(1, layers=1)
    path = tmp_path / "classic.safetensors"
    save_file({k: v.contiguous() for k, v in draft.state_dict().items()}, str(path),
              metadata={"config": json.dumps(draft.config.to_dict())})
    return str(path)


@pytest.mark.parametrize("kind", ["eagle", "early-exit", "classic"])
def test_a_draft_beside_a_bf16_target_keeps_its_rotary_frequencies_fp32(kind, tmp_path):
    """`Module.to(bf16)` rounds a rotary embedding's `inv_freq` to 8 bits too, which moves the draft's
    RoPE angle at position 500 by up to 0.69 rad from the fp32 one it was trained with (the SmolLM2
    head's frequencies); transformers keeps them fp32 in a model of any dtype, and so do the loaders."""
    target = tiny_llama().to(torch.bfloat16)
    if kind == "eagle":
        draft = load_feature_head(RANDOM_HEAD, target)
    elif kind == "early-exit":
        draft = load_exit_head(RANDOM_HEAD, target, 1)
    else:
        draft = load_bundled_classic(classic_file(tmp_path, target), target)
    assert {p.dtype for p in draft.parameters()} == {torch.bfloat16}
    buffers = rotary_buffers(draft)
    assert buffers, "the draft has a rotary embedding"
    want = fp32_frequencies(target.config)
    assert not torch.equal(want.to(torch.bfloat16).float(), want)   # bf16 would round them
    for name, buf in buffers.items():
        assert buf.dtype == torch.float32, name
        assert torch.equal(buf, want), name

