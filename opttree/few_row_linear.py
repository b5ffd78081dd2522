"""Few-row linear layers on CPU: make verifying a small tree cost about what one token costs.

Speculative decoding pays only if a forward over a handful of tree tokens costs about the same as
a forward over one token. On a GPU it does. On CPU the weights stream from memory either way, so
it should too, but measured here (AMD EPYC, torch 2.13 + MKL, fp32, 2 threads) a SmolLM2 forward
through `F.linear` over 2-8 tokens cost 1.5-2.5x its 1-token time: MKL's GEMM for a few rows is far
from bandwidth-bound. oneDNN's inner product over a weight reordered once into its own blocked
layout (the op PyTorch's compiler uses for frozen CPU linears) is: a forward over 1 to 8 tokens
then costs about the same (benchmarks/verify_cost.* shows both kernels side by side). Every row
count goes through it, the AR baseline's one-token forwards included, so speedups are measured
against the fastest AR this machine has.

Costs and limits: the reordered copy doubles the weights' memory (kept once per weight, redone
only when the weight changes in place); training (grad mode) and GPU or non-fp32 layers keep
`F.linear`; where the op is missing (other PyTorch builds) everything keeps `F.linear`.

Only the kernel changes, not the maths: the sums may round differently, as any change of kernel
or of row count already does, and exactness is judged as always against the target's own greedy
output (the exactness tests run with this on). Set OPTTREE_PLAIN_LINEAR=1 to switch it off.
"""

from __future__ import annotations

import functools
import os
import types

import torch
import torch.nn.functional as F
from torch.utils.weak import WeakIdKeyDictionary

# weight -> (data_ptr, in-place version, reordered copy): the reorder costs a copy, so it is made
# once per weight and only redone when the weight changed (a draft evaluated while it trains).
_PACKED: WeakIdKeyDictionary = WeakIdKeyDictionary()


@functools.cache
def _have_onednn() -> bool:
    return (torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_reorder_linear_weight")
            and hasattr(torch.ops.mkldnn, "_linear_pointwise"))


def _applies(weight: torch.Tensor) -> bool:
    return (weight.device.type == "cpu" and weight.dtype == torch.float32 and not torch.is_grad_enabled()
            and _have_onednn())


def _packed(weight: torch.Tensor) -> torch.Tensor:
    key = (weight.data_ptr(), 0 if weight.is_inference() else weight._version)
    hit = _PACKED.get(weight)
    if hit is None or hit[0] != key:
        hit = (key, torch.ops.mkldnn._reorder_linear_weight(weight.detach(), None))
        _PACKED[weight] = hit
    return hit[1]


def _packed_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    return torch.ops.mkldnn._linear_pointwise(x.contiguous(), _packed(weight), bias, "none", [], "")


def few_row_matmul(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """x @ weight.T for a 2D x, through the reordered-weight kernel where it applies."""
    return _packed_linear(x, weight, None) if _applies(weight) else x @ weight.T


def few_row_linear(self: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    if not _applies(self.weight):
        return F.linear(x, self.weight, self.bias)
    return _packed_linear(x, self.weight, self.bias)


def _ours(m: torch.nn.Module) -> bool:
    return getattr(m.__dict__.get("forward"), "__func__", None) is few_row_linear


def uses_few_row_linear(model: torch.nn.Module) -> bool:
    return any(_ours(m) for m in model.modules())


def _eligible(m: torch.nn.Module) -> bool:
    # GPUs have no such gap, and bf16/fp16 CPU kernels were not measured: leave those alone. A layer
    # whose forward someone else already wrapped (accelerate's offload hooks) is left alone too.
    return (type(m) is torch.nn.Linear and m.weight.device.type == "cpu" and m.weight.dtype == torch.float32
            and ("forward" not in m.__dict__ or _ours(m)))


def use_few_row_linear(model: torch.nn.Module) -> int:
    """Route every CPU fp32 nn.Linear of `model` through `few_row_linear`; returns how many."""
    if os.environ.get("OPTTREE_PLAIN_LINEAR", "") not in ("", "0") or not _have_onednn():
        return 0
    layers = [m for m in model.modules() if _eligible(m)]
    for m in layers:
        m.forward = types.MethodType(few_row_linear, m)
    return len(layers)


def use_plain_linear(model: torch.nn.Module) -> None:
    """Undo `use_few_row_linear` (side-by-side timing in the verify-cost curve)."""
    for m in model.modules():
        if _ours(m):
            del m.forward
