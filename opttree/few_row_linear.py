"""Few-row linear layers on CPU: make verifying a small tree cost about what one token costs.

Speculative decoding pays only if a forward over a handful of tree tokens costs about the same as
a forward over one token. On a GPU it does. On CPU the weights stream from memory either way, so
it should too, but measured here (AMD EPYC, torch 2.13 + MKL, fp32) `F.linear` over 2-5 rows cost
1.5-2.2x its 1-row time: MKL's GEMM path for a few rows is far from bandwidth-bound. The same
product computed as `(W @ x^T)^T`, with the few rows as the narrow side, costs about what one row
costs, and with 2 threads even less than MKL's one-row GEMV, so one row is routed the same way
(as two identical rows) and the AR baseline gains as much as the trees do
(benchmarks/verify_cost.* shows both kernels side by side).

Only the kernel changes, not the maths: the sums may round differently, as any change of kernel
or of row count already does, and exactness is judged as always against the target's own greedy
output (the exactness tests run with this on). Set OPTTREE_PLAIN_LINEAR=1 to switch it off.
"""

from __future__ import annotations

import os
import types

import torch
import torch.nn.functional as F

# Up to this many rows the narrow-side product was faster here; at 6-8 rows both were equal and
# beyond that MKL's GEMM is the better kernel (prefill, big trees), so it is kept there.
MAX_ROWS = 6


def takes_few_rows(rows: int, weight: torch.Tensor) -> bool:
    return (1 <= rows <= MAX_ROWS and weight.device.type == "cpu" and weight.dtype == torch.float32
            and not torch.is_grad_enabled())


def _narrow_product(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    if x.shape[0] == 1:
        # One row goes through as two identical rows: with 2 threads MKL's one-row GEMV took
        # ~75 ms per SmolLM2 forward against ~54 ms for this (measured side by side; equal with
        # 1 thread). AR decodes one row per step, so the AR baseline gets the faster kernel too.
        return (weight @ torch.cat([x, x]).T)[:, :1].T.contiguous()
    return (weight @ x.T).T.contiguous()


def few_row_matmul(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """x @ weight.T for a 2D x, through the narrow-side product when x has few rows."""
    return _narrow_product(x, weight) if takes_few_rows(x.shape[0], weight) else x @ weight.T


def few_row_linear(self: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    rows = x.numel() // x.shape[-1]
    if not takes_few_rows(rows, self.weight):
        return F.linear(x, self.weight, self.bias)
    y = _narrow_product(x.reshape(rows, x.shape[-1]), self.weight)
    if self.bias is not None:
        y = y + self.bias
    return y.reshape(*x.shape[:-1], self.weight.shape[0])


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
    if os.environ.get("OPTTREE_PLAIN_LINEAR", "") not in ("", "0"):
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
