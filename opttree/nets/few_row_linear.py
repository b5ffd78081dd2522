"""Few-row linear layers on CPU: make verifying a small tree cost about what one token costs.

Speculative decoding pays only if a forward over a handful of tree tokens costs about the same as
a forward over one token. On a GPU it does. On CPU the weights stream from memory either way, so
it should too, but measured here (AMD EPYC, torch 2.13 + MKL, fp32, 2 threads) a SmolLM2 forward
through `F.linear` over 2-8 tokens cost 1.5-2.5x its 1-token time: MKL's GEMM for a few rows is far
from bandwidth-bound. oneDNN's inner product over a weight reordered once into its own blocked
layout (the op PyTorch's compiler uses for frozen CPU linears) is: a forward over 1 to 8 tokens
then costs about the same (benchmarks/verify_cost.* shows both kernels side by side).

Which kernel wins depends on the CPU, so three are measured per layer shape and row count (nets/
kernel_choice.py, once per machine, cached): plain `F.linear`, the oneDNN kernel above, and MKL's packed
GEMM (`cblas_sgemm_compute` over a weight packed once by `cblas_sgemm_pack`, PyTorch's `mkl::_mkl_linear`).
On an AMD EPYC (AVX2) the oneDNN kernel ties `F.linear` at one row and wins above it; on an AVX-512 Xeon
MKL's `F.linear` wins at one to three rows of most layers and its packed GEMM at four to eight
(benchmarks/kernel_choice.md, benchmarks/mkl_pack.md). Each call takes the fastest kernel for its row
count, AR's one-token forwards included, so speedups are measured against the fastest AR this machine
has. Loaded drafts take their target's choice for the shapes they share; the feature head's
draft-vocabulary LM-head rows (`few_row_matmul`, a shape no target layer has) stay on the oneDNN kernel.

Costs and limits: a packed copy doubles the weights' memory (kept once per weight and kernel, only
for the kernels a layer's choice uses, redone only when the weight changes in place); training (grad
mode) and GPU or non-fp32 layers keep `F.linear`; where oneDNN's op is missing (other PyTorch builds)
everything keeps `F.linear`, and where MKL's is, the choice is between the other two.

Only the kernel changes, not the maths: the sums may round differently, as any change of kernel
or of row count already does, and exactness is judged as always against the target's own greedy
output (the exactness tests run with this on). Set OPTTREE_PLAIN_LINEAR=1 to switch it off.

Drafts on CPU can go one step further, on request (OPTTREE_DRAFT_INT8=1): int8 weights. A draft
layer streams its fp32 weights from memory as the target does; stored as int8 (one scale per output
row), with each call's activations quantized on the fly (fbgemm's dynamic int8 linear), the bundled
head drafts a step at the auto budget in about three quarters of the time (14.9 and 13.2 -> 10.2 and
11.4 ms, 2026-11-27). Only the draft's proposals can change, never the output: the target, which decides every
token, stays fp32 (`prepare` marks it, so a target drafting for itself stays fp32 too), and the
sampling verifier reads the draft probabilities the tree was built from, whatever computed them. A
model's input projections (`int8_skip`) stay fp32: their input sets the target's hidden state, whose
few huge channels fix the one activation scale a call gets, beside a token embedding that this scale
then erases. On the eval set the cheaper layers let the auto budget grow slightly deeper trees and
the head decoded 3.5-7.8 % faster; at a fixed budget the int8 LM-head rows guess worse (τ -0.11 at
n = 10) and the Learn tab's lessons no longer show what their captions say, so it stays off by
default (benchmarks/int8_drafts.md, 2026-11-27).
"""

from __future__ import annotations

import functools
import types
import warnings

import torch
import torch.nn.functional as F

from opttree import machine, paths


@functools.cache
def _have_onednn() -> bool:
    return (torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_reorder_linear_weight")
            and hasattr(torch.ops.mkldnn, "_linear_pointwise"))


@functools.cache
def _onednn_linear():
    # The overload itself, not the op packet: resolving the overload on every call cost ~6 us, and a
    # forward makes ~200 of these calls.
    return torch.ops.mkldnn._linear_pointwise.default


@functools.cache
def have_mkl() -> bool:
    """Whether this PyTorch build packs weights for MKL's GEMM (x86 builds with MKL)."""
    return (torch.backends.mkl.is_available() and hasattr(torch.ops.mkl, "_mkl_reorder_linear_weight")
            and hasattr(torch.ops.mkl, "_mkl_linear"))


@functools.cache
def _mkl_linear():
    return torch.ops.mkl._mkl_linear.default


# The CPU fp32 kernels a layer can run at a given row count; a layer's table holds indices into this.
PLAIN, ONEDNN, MKL = "plain", "onednn", "mkl"
KERNELS = (PLAIN, ONEDNN, MKL)
_PLAIN, _ONEDNN, _MKL = range(3)
# Rows MKL packs a weight for. Its packed layout serves any row count (checked against F.linear when the
# choice is measured, kernel_choice.py): packed for 2, 4 or 8 rows the bundled target's layers ran 1-8
# rows within 3 % of each other on the Xeon, packed for one row 35 % slower at four (2026-11-28).
MKL_PACK_ROWS = 8


@functools.cache
def _have_int8() -> bool:
    """Whether this PyTorch build runs dynamic int8 linears (tried once, on a tiny layer)."""
    try:
        w = torch.ones(4, 8)
        out = torch.ops.quantized.linear_dynamic(torch.ones(2, 8), _pack_int8(w, None), True)
        return tuple(out.shape) == (2, 4)
    except Exception:   # noqa: BLE001 - a build without the quantized ops keeps the fp32 kernel
        return False


@functools.cache
def _quiet_deprecation() -> None:
    # The quantized-tensor constructors warn on every call that they are deprecated; one process-wide
    # filter for that message (a `catch_warnings` block per call is not thread-safe in the app's workers).
    warnings.filterwarnings("ignore", message=r"torch\.quantize_per_tensor, torch\.quantize_per_channel")


def _pack_int8(weight: torch.Tensor, bias: torch.Tensor | None):
    """The weight as int8 with one symmetric scale per output row, packed for fbgemm's dynamic linear."""
    _quiet_deprecation()
    w = weight.detach().float()
    scale = (w.abs().amax(dim=1) / 127).clamp_min(1e-12).double()
    q = torch.quantize_per_channel(w, scale, torch.zeros(w.shape[0], dtype=torch.long), 0, torch.qint8)
    return torch.ops.quantized.linear_prepack(q, None if bias is None else bias.detach().float())


def _applies(weight: torch.Tensor) -> bool:
    return weight.is_cpu and weight.dtype is torch.float32 and not torch.is_grad_enabled() and _have_onednn()


@functools.cache
def bf16_supported() -> bool:
    """Whether this PyTorch build and CPU run oneDNN's bf16 inner product at all (natively or emulated)."""
    return _have_onednn() and bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def bf16_rows() -> bool:
    """Whether a draft head's CPU LM-head rows run on bf16 (OPTTREE_DRAFT_ROWS; `auto`: where the CPU
    multiplies bf16 natively; never under OPTTREE_PLAIN_LINEAR=1). They are the largest weight a draft
    layer reads (12,288 x 576 for the bundled head, 28 MB in fp32), and oneDNN's bf16 inner product
    reads half the bytes. Its logits come out in bf16 (about three significant digits, fp32's range) and
    are widened to fp32 for the softmax: the rows only rank a node's children, so near-ties may swap.
    The target, which decides every token, never runs on it (benchmarks/bf16_rows.md)."""
    mode = paths.draft_rows()
    if mode == "fp32" or paths.plain_linear() or not bf16_supported():
        return False
    return mode == "bf16" or machine.native_bf16()


class PackedWeight:
    """A weight's packed copies, one per kernel that uses it (`get`: oneDNN's reordered weight, the int8
    one for an int8 holder or the bf16 one for a bf16 holder; `get_mkl`: MKL's packed GEMM weight), each
    made on first use and redone only when the weight changed (in place, as an optimizer step does, or
    replaced). It lives next to the weight's owner, so a lookup is one attribute read (a global weak
    dictionary cost ~4 % of a small-tree step, measured 2026-11-28). The copies are opaque tensors that
    cannot be deep-copied: a copied model gets an empty holder instead. `table` is the kernel per row
    count (`kernel_table`; empty: oneDNN at every count)."""

    __slots__ = ("key", "packed", "int8", "bf16", "table", "mkl_key", "mkl")

    def __init__(self, int8: bool = False, bf16: bool = False):
        self.key, self.packed, self.int8, self.bf16 = None, None, bool(int8), bool(bf16) and not int8
        self.mkl_key, self.mkl = None, None
        self.table: tuple[int, ...] = ()

    def get(self, weight: torch.Tensor, bias: torch.Tensor | None = None):
        key = (version_key(weight), version_key(bias) if self.int8 else None)
        if key != self.key:
            self.packed = (_pack_int8(weight, bias) if self.int8
                           else torch.ops.mkldnn._reorder_linear_weight(weight.detach().to(torch.bfloat16), None)
                           if self.bf16 else torch.ops.mkldnn._reorder_linear_weight(weight.detach(), None))
            self.key = key
        return self.packed

    def get_mkl(self, weight: torch.Tensor):
        # MKL asks that a weight be packed with the thread count it is multiplied with
        key = (version_key(weight), torch.get_num_threads())
        if key != self.mkl_key:
            self.mkl = torch.ops.mkl._mkl_reorder_linear_weight(weight.detach(), MKL_PACK_ROWS)
            self.mkl_key = key
        return self.mkl

    def release_unused(self) -> None:
        """Drop the fp32 copies no row count of `table` runs on (after the choice timed every kernel)."""
        used = set(self.table) if self.table else {_ONEDNN}
        if _ONEDNN not in used and not (self.int8 or self.bf16):
            self.key, self.packed = None, None
        if _MKL not in used:
            self.mkl_key, self.mkl = None, None

    def __deepcopy__(self, memo):
        memo[id(self)] = twin = PackedWeight(self.int8, self.bf16)
        twin.table = self.table
        return twin

    def __repr__(self):
        return (f"PackedWeight(int8={self.int8}, bf16={self.bf16}, packed={self.packed is not None}, "
                f"mkl={self.mkl is not None})")


def version_key(t: torch.Tensor | None):
    """What identifies a tensor's current values for a cache of something derived from them: its storage and
    its version counter (an in-place change bumps it). An inference tensor keeps no counter, so an in-place
    change to one under inference mode is not seen: weights are changed outside it (training, loading)."""
    return None if t is None else (t.data_ptr(), 0 if t.is_inference() else t._version)


def run_kernel(kernel: int, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
               pack: PackedWeight) -> torch.Tensor:
    """x @ weight.T (+ bias) on one fp32 kernel (an index into KERNELS)."""
    if kernel == _PLAIN:
        return F.linear(x, weight, bias)
    x = x.contiguous()
    if kernel == _MKL:
        return _mkl_linear()(x, pack.get_mkl(weight), weight, bias, x.numel() // x.shape[-1])
    return _onednn_linear()(x, pack.get(weight), bias, "none", [], "")


def _linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, pack: PackedWeight):
    if not _applies(weight):
        return F.linear(x, weight, bias)
    if pack.int8:   # the bias is packed with the weight; reduce_range: fbgemm's AVX2 kernel needs it
        flat = x.reshape(-1, x.shape[-1]).contiguous()       # the op takes 2-D and up; nn.Linear takes 1-D too
        out = torch.ops.quantized.linear_dynamic(flat, pack.get(weight, bias), True)
        return out.reshape(*x.shape[:-1], out.shape[-1])
    if pack.bf16:   # bf16 in and out (oneDNN's op keeps the input's dtype), widened to fp32 for the caller
        out = _onednn_linear()(x.contiguous().to(torch.bfloat16), pack.get(weight), None, "none", [], "").float()
        return out if bias is None else out + bias
    table = pack.table      # the kernel this machine runs fastest at this row count (kernel_choice.py)
    kernel = table[min(x.numel() // x.shape[-1], len(table) - 1)] if table else _ONEDNN
    return run_kernel(kernel, x, weight, bias, pack)


def few_row_matmul(x: torch.Tensor, weight: torch.Tensor, pack: PackedWeight,
                   bias: torch.Tensor | None = None) -> torch.Tensor:
    """x @ weight.T (+ bias), through the reordered-weight kernel where it applies (`pack` is the
    caller's holder for this weight's reordered copy)."""
    return _linear(x, weight, bias, pack)


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


def use_few_row_linear(model: torch.nn.Module, draft: bool = False) -> int:
    """Route every CPU fp32 nn.Linear of `model` through `few_row_linear`; returns how many. `draft`:
    `model` only proposes tokens (a draft network, never the target), so with OPTTREE_DRAFT_INT8=1 it
    runs on int8 weights, all but the submodules its `int8_skip` names; `kernel_of(model)` then says
    "int8"."""
    if paths.plain_linear() or not _have_onednn():
        return 0
    # A target drafting for itself is still the target: it never goes on int8 (`prepare` marks it).
    int8 = draft and paths.draft_int8() and _have_int8() and not is_target(model)
    skip = {id(m) for sub in int8_skipped(model).values() for m in sub.modules()}
    layers = [m for m in model.modules() if _eligible(m)]
    for m in layers:
        m.forward = types.MethodType(few_row_linear, m)
        # one holder per kernel, kept: switching kernels back and forth must not pack every weight again
        packs = m.__dict__.get("_few_row_packs") or {}
        want = int8 and id(m) not in skip
        m._few_row_packs = packs
        m._few_row_pack = packs.setdefault(want, PackedWeight(want))
    model.few_row_int8 = int8 and bool(layers)
    if getattr(model, "_few_row_choice", None) is not None:
        apply_choice(model, model._few_row_choice)   # holders made just now (int8 -> fp32) take the choice too
    return len(layers)


def int8_skipped(model: torch.nn.Module) -> dict[str, torch.nn.Module]:
    """{name: submodule} for the names `model.int8_skip` gives (dotted paths; a name the model lacks, or
    sets to None, such as a plain head's `fuse` or an exit head's `fc`, names nothing)."""
    out = {}
    for name in getattr(model, "int8_skip", ()):
        try:
            out[name] = model.get_submodule(name)
        except AttributeError:
            continue
    return out


def mark_target(model: torch.nn.Module) -> None:
    model.opttree_target = True


def is_target(model: torch.nn.Module) -> bool:
    return bool(getattr(model, "opttree_target", False))


def int8_weights(model: torch.nn.Module) -> bool:
    """Whether `use_few_row_linear(model, draft=True)` put `model` on int8 weights: what a module that
    multiplies by a weight of its own outside nn.Linear (the feature head's LM-head rows) follows too."""
    return bool(getattr(model, "few_row_int8", False))


def kernel_of(model: torch.nn.Module) -> str:
    """Which CPU kernel `model`'s linears run on: "int8", "few-row" or "default"."""
    return "int8" if int8_weights(model) else "few-row" if uses_few_row_linear(model) else "default"


def use_plain_linear(model: torch.nn.Module) -> None:
    """Undo `use_few_row_linear` (side-by-side timing in the verify-cost curve)."""
    for m in model.modules():
        if _ours(m):
            del m.forward  # the holder stays: switching back must not redo every reorder
    model.few_row_int8 = False


# Row counts the kernel choice times (kernel_choice.py); any other count takes the nearest one below it.
# 64 stands for every larger forward (a prompt's prefill, a fixed budget's big tree): on the Xeon MKL's
# packed GEMM is the fastest at 4-16 rows of some layers and 30-40 % slower than either other kernel at
# 128-512 (benchmarks/mkl_pack.md, 2026-11-28), so counts past 16 are measured, not taken from 16's choice.
PROBE_ROWS = (1, 2, 3, 4, 6, 8, 12, 16, 64)


def fp32_layers(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The layers on the fp32 kernels (int8 ones keep theirs), in the model's order."""
    return [m for m in model.modules() if _ours(m) and not m._few_row_pack.int8]


def layer_shape(m: torch.nn.Module) -> str:
    return "x".join(map(str, m.weight.shape))


def kernel_table(rows_by_kernel: dict[str, list[int]]) -> tuple[int, ...]:
    """`PackedWeight.table` for one shape's choice ({kernel: probed row counts}; counts not named run the
    oneDNN kernel): entry r is the kernel for r rows; each count takes the choice of the nearest probed
    count at or below it, and the last entry serves every count past the largest probe."""
    at = {rows: KERNELS.index(k) for k, rows_list in rows_by_kernel.items() for rows in rows_list}
    table, kernel = [], _ONEDNN
    for rows in range(1, PROBE_ROWS[-1] + 1):
        if rows in PROBE_ROWS:
            kernel = at.get(rows, _ONEDNN)
        table.append(kernel)
    return (table[0], *table) if any(k != _ONEDNN for k in table) else ()   # an empty input: as one row


def apply_choice(model: torch.nn.Module, choice: dict[str, dict[str, list[int]]]) -> None:
    """Give each fp32 layer of `model` its shape's kernels ({shape: {kernel: row counts}}, as
    kernel_choice.choose_kernels measures it; other shapes and counts run the oneDNN kernel);
    `choice_of(model)` then says what `model` runs. The choice is kept whole on the model, so layers
    that come back to fp32 later (an int8 draft switched back) take it again. A model with no layer on
    these kernels is left as it is."""
    if not isinstance(model, torch.nn.Module) or not uses_few_row_linear(model):
        return
    model._few_row_choice = {s: {k: list(r) for k, r in sorted(by.items()) if r}
                             for s, by in sorted(choice.items()) if any(by.values())}
    for m in fp32_layers(model):
        m._few_row_pack.table = kernel_table(model._few_row_choice.get(layer_shape(m), {}))


def choice_of(model) -> dict[str, dict[str, list[int]]] | None:
    """The kernel choice `model` runs, for the shapes of its fp32 layers ({shape: {kernel: row counts}};
    {}: oneDNN everywhere; None: no layer of it is on these kernels, or its kernels were never chosen)."""
    if not isinstance(model, torch.nn.Module) or not uses_few_row_linear(model):
        return None
    choice = getattr(model, "_few_row_choice", None)
    if choice is None:
        return None
    shapes = {layer_shape(m) for m in fp32_layers(model)}
    return {s: by for s, by in choice.items() if s in shapes}


def release_unused_copies(model: torch.nn.Module) -> None:
    """Drop every fp32 layer's packed copies that its choice does not run (after timing every kernel)."""
    for m in fp32_layers(model):
        m._few_row_pack.release_unused()
