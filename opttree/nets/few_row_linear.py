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
import types

import torch
import torch.nn.functional as F

from opttree import paths


@functools.cache
def _have_onednn() -> bool:
    return (torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_reorder_linear_weight")
            and hasattr(torch.ops.mkldnn, "_linear_pointwise"))


@functools.cache
def _onednn_linear():
    # The overload itself, not the op packet: resolving the overload on every call cost ~6 us, and a
    # forward makes ~200 of these calls.
    return torch.ops.mkldnn._linear_pointwise.default


def _applies(weight: torch.Tensor) -> bool:
    return weight.is_cpu and weight.dtype is torch.float32 and not torch.is_grad_enabled() and _have_onednn()


class PackedWeight:
    """A weight's reordered copy, made on first use and redone only when the weight changed (in
    place, as an optimizer step does, or replaced). It lives next to the weight's owner, so a lookup
    is one attribute read (a global weak dictionary cost ~4 % of a small-tree step). The copy is an
    opaque oneDNN tensor that cannot be deep-copied: a copied model gets an empty holder instead."""

    __slots__ = ("key", "packed")

    def __init__(self):
        self.key, self.packed = None, None

    def get(self, weight: torch.Tensor) -> torch.Tensor:
        key = (weight.data_ptr(), 0 if weight.is_inference() else weight._version)
        if key != self.key:
            self.packed = torch.ops.mkldnn._reorder_linear_weight(weight.detach(), None)
            self.key = key
        return self.packed

    def __deepcopy__(self, memo):
        return PackedWeight()


def _linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, pack: PackedWeight):
    if not _applies(weight):
        return F.linear(x, weight, bias)
    return _onednn_linear()(x.contiguous(), pack.get(weight), bias, "none", [], "")


def few_row_matmul(x: torch.Tensor, weight: torch.Tensor, pack: PackedWeight) -> torch.Tensor:
    """x @ weight.T, through the reordered-weight kernel where it applies (`pack` is the caller's
    holder for this weight's reordered copy)."""
    return _linear(x, weight, None, pack)


def few_row_linear(self: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    return _linear(x, self.weight, self.bias, self._few_row_pack)


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
    if paths.plain_linear() or not _have_onednn():
        return 0
    layers = [m for m in model.modules() if _eligible(m)]
    for m in layers:
        m.forward = types.MethodType(few_row_linear, m)
        m._few_row_pack = m.__dict__.get("_few_row_pack") or PackedWeight()
    return len(layers)


def use_plain_linear(model: torch.nn.Module) -> None:
    """Undo `use_few_row_linear` (side-by-side timing in the verify-cost curve)."""
    for m in model.modules():
        if _ours(m):
            del m.forward  # the holder stays: switching back must not redo every reorder
