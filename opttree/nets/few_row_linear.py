"""Few-row linear layers on CPU: make verifying a small tree cost about what one token costs.

Speculative decoding pays only if a forward over a handful of tree tokens costs about the same as
a forward over one token. On a GPU it does. On CPU the weights stream from memory either way, so
it should too, but measured here (AMD EPYC, torch 2.13 + MKL, fp32, 2 threads) a SmolLM2 forward
through `F.linear` over 2-8 tokens cost 1.5-2.5x its 1-token time: MKL's GEMM for a few rows is far
from bandwidth-bound. oneDNN's inner product over a weight reordered once into its own blocked
layout (the op PyTorch's compiler uses for frozen CPU linears) is: a forward over 1 to 8 tokens
then costs about the same (benchmarks/verify_cost.* shows both kernels side by side).

Which kernel wins depends on the CPU, so it is measured per layer shape and row count (`choose_kernels`,
once per machine, cached). On an AMD EPYC (AVX2) the few-row kernel ties `F.linear` at one row and
wins above it; on an AVX-512 Xeon MKL's `F.linear` wins at one to three rows of most layers (a
one-token SmolLM2 forward in 34-39 ms against 43-48, benchmarks/kernel_choice.md). Each call takes
the faster kernel for its row count, AR's one-token forwards included, so speedups are measured
against the fastest AR this machine has. Loaded drafts take their target's choice for the shapes
they share; the feature head's draft-vocabulary LM-head rows (`few_row_matmul`, a shape no target
layer has) stay on the few-row kernel.

Costs and limits: the reordered copy doubles the weights' memory (kept once per weight, redone
only when the weight changes in place); training (grad mode) and GPU or non-fp32 layers keep
`F.linear`; where the op is missing (other PyTorch builds) everything keeps `F.linear`.

Only the kernel changes, not the maths: the sums may round differently, as any change of kernel
or of row count already does, and exactness is judged as always against the target's own greedy
output (the exactness tests run with this on). Set OPTTREE_PLAIN_LINEAR=1 to switch it off.

Drafts on CPU can go one step further, on request (OPTTREE_DRAFT_INT8=1): int8 weights. A draft
layer streams its fp32 weights from memory as the target does; stored as int8 (one scale per output
row), with each call's activations quantized on the fly (fbgemm's dynamic int8 linear), the bundled
head drafts a step at the auto budget in about three quarters of the time (14.9 and 13.2 -> 10.2 and
11.4 ms). Only the draft's proposals can change, never the output: the target, which decides every
token, stays fp32 (`prepare` marks it, so a target drafting for itself stays fp32 too), and the
sampling verifier reads the draft probabilities the tree was built from, whatever computed them. A
model's input projections (`int8_skip`) stay fp32: their input sets the target's hidden state, whose
few huge channels fix the one activation scale a call gets, beside a token embedding that this scale
then erases. On the eval set the cheaper layers let the auto budget grow slightly deeper trees and
the head decoded 3.5-7.8 % faster; at a fixed budget the int8 LM-head rows guess worse (τ -0.11 at
n = 10) and the Learn tab's lessons no longer show what their captions say, so it stays off by
default (benchmarks/int8_drafts.md).
"""

from __future__ import annotations

import functools
import os
import time
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


class PackedWeight:
    """A weight's reordered copy, made on first use and redone only when the weight changed (in
    place, as an optimizer step does, or replaced). It lives next to the weight's owner, so a lookup
    is one attribute read (a global weak dictionary cost ~4 % of a small-tree step). The copy is an
    opaque oneDNN tensor that cannot be deep-copied: a copied model gets an empty holder instead."""

    __slots__ = ("key", "packed", "int8", "plain")

    def __init__(self, int8: bool = False):
        self.key, self.packed, self.int8 = None, None, bool(int8)
        self.plain: tuple[bool, ...] = ()   # by row count (the last entry for any more): F.linear is faster

    def get(self, weight: torch.Tensor, bias: torch.Tensor | None = None):
        key = (_version_key(weight), _version_key(bias) if self.int8 else None)
        if key != self.key:
            self.packed = (_pack_int8(weight, bias) if self.int8
                           else torch.ops.mkldnn._reorder_linear_weight(weight.detach(), None))
            self.key = key
        return self.packed

    def __deepcopy__(self, memo):
        memo[id(self)] = twin = PackedWeight(self.int8)
        twin.plain = self.plain
        return twin

    def __repr__(self):
        return f"PackedWeight(int8={self.int8}, packed={self.packed is not None})"


def _version_key(t: torch.Tensor | None):
    return None if t is None else (t.data_ptr(), 0 if t.is_inference() else t._version)


def _linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, pack: PackedWeight):
    if not _applies(weight):
        return F.linear(x, weight, bias)
    if pack.int8:   # the bias is packed with the weight; reduce_range: fbgemm's AVX2 kernel needs it
        flat = x.reshape(-1, x.shape[-1]).contiguous()       # the op takes 2-D and up; nn.Linear takes 1-D too
        out = torch.ops.quantized.linear_dynamic(flat, pack.get(weight, bias), True)
        return out.reshape(*x.shape[:-1], out.shape[-1])
    plain = pack.plain
    if plain and plain[min(x.numel() // x.shape[-1], len(plain) - 1)]:
        return F.linear(x, weight, bias)      # this row count is faster on MKL here (choose_kernels)
    return _onednn_linear()(x.contiguous(), pack.get(weight), bias, "none", [], "")


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


# Row counts `choose_kernels` times; any other count takes the choice of the nearest one below it.
PROBE_ROWS = (1, 2, 3, 4, 6, 8, 12, 16)
KERNEL_CHOICE_VERSION = 1
MARGIN = 0.97     # F.linear takes a row count only when its time is below 97 % of the few-row kernel's


def _fp32_layers(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The layers on the few-row fp32 kernel (int8 ones keep theirs), in the model's order."""
    return [m for m in model.modules() if _ours(m) and not m._few_row_pack.int8]


def _shape(m: torch.nn.Module) -> str:
    return "x".join(map(str, m.weight.shape))


def choice_key(model: torch.nn.Module) -> dict:
    """What the kernel choice depends on: the machine, the torch build and threads, and the layer shapes."""
    shapes: dict[str, int] = {}
    for m in _fp32_layers(model):
        shapes[_shape(m)] = shapes.get(_shape(m), 0) + 1
    return {"version": KERNEL_CHOICE_VERSION, "cpu": machine.cpu_name(), "isa": machine.cpu_isa(),
            "cores": os.cpu_count(), "threads": torch.get_num_threads(), "torch": torch.__version__,
            "rows": list(PROBE_ROWS), "shapes": dict(sorted(shapes.items()))}


@torch.inference_mode()
def time_kernels(layers: list[torch.nn.Module], reps: int = 4) -> dict[tuple[str, int, str], float]:
    """ms per (shape, rows, kernel) for one pass over `layers` in order, the fastest of `reps` passes.

    Each pass calls every layer once, as a forward does, so the weights stream from memory as they do
    when decoding (a model's weights outlast the caches; timing one layer alone would time its cache).
    Kernels and row counts are interleaved, and their order flips every repetition."""
    inputs = {}
    for m in layers:
        for rows in PROBE_ROWS:
            inputs.setdefault((_shape(m), rows), torch.randn(1, rows, m.weight.shape[1]))
    best: dict[tuple[str, int, str], float] = {}
    for rep in range(1 + max(1, reps)):                # the first pass warms up (and packs every weight)
        order = PROBE_ROWS if rep % 2 == 0 else tuple(reversed(PROBE_ROWS))
        for rows in order:
            for kernel in (("plain", "few-row") if rep % 2 == 0 else ("few-row", "plain")):
                total: dict[str, float] = {}
                for m in layers:
                    shape = _shape(m)
                    x = inputs[(shape, rows)]
                    t0 = time.perf_counter()
                    if kernel == "plain":
                        F.linear(x, m.weight, m.bias)
                    else:
                        _onednn_linear()(x, m._few_row_pack.get(m.weight), m.bias, "none", [], "")
                    total[shape] = total.get(shape, 0.0) + time.perf_counter() - t0
                if rep:
                    for shape, t in total.items():
                        k = (shape, rows, kernel)
                        best[k] = min(best.get(k, float("inf")), t * 1e3)
    return best


def plain_rows_from(ms: dict[tuple[str, int, str], float], shapes) -> dict[str, list[int]]:
    """Per shape, the probed row counts where F.linear beats the few-row kernel by the margin."""
    return {s: [r for r in PROBE_ROWS if ms[(s, r, "plain")] < MARGIN * ms[(s, r, "few-row")]] for s in shapes}


def plain_table(plain_rows: list[int]) -> tuple[bool, ...]:
    """`PackedWeight.plain` for the probed row counts where F.linear won: entry r says whether r rows
    go to F.linear; each count takes the choice of the nearest probed count at or below it, and the
    last entry serves every count past the largest probe."""
    table, won = [False], False
    for rows in range(1, PROBE_ROWS[-1] + 1):
        if rows in PROBE_ROWS:
            won = rows in plain_rows
        table.append(won)
    return tuple(table) if any(table) else ()


def apply_choice(model: torch.nn.Module, plain: dict[str, list[int]]) -> None:
    """Give each fp32 layer of `model` its shape's row counts on F.linear ({shape: rows}; other shapes
    keep the few-row kernel at every count); `plain_rows_of(model)` then says what `model` runs. A
    model with no layer on the few-row kernel is left as it is."""
    if not isinstance(model, torch.nn.Module) or not uses_few_row_linear(model):
        return
    model._few_row_choice = {k: list(v) for k, v in sorted(plain.items()) if v}   # kept whole: an int8 draft
    layers = _fp32_layers(model)                                                   # back on fp32 takes it again
    for m in layers:
        m._few_row_pack.plain = plain_table(plain.get(_shape(m), []))
    shapes = {_shape(m) for m in layers}
    model.few_row_plain = {k: v for k, v in model._few_row_choice.items() if k in shapes}


def choose_kernels(model: torch.nn.Module, reps: int = 4, refresh: bool = False) -> dict[str, list[int]] | None:
    """Measure (or read back) which kernel each layer shape of `model` runs at each row count on this
    machine (module docstring), apply it, and return `plain_rows_of(model)`. The timings (`time_kernels`,
    about four seconds for the bundled target) are cached per machine, torch build, threads and layer
    shapes under `paths.costs_dir()`; `refresh` times them again (`opttree cost --refresh`, the app's
    button). Only the kernel changes, never the maths."""
    layers = _fp32_layers(model)
    if not layers:
        return None
    key = choice_key(model)
    path = paths.costs_dir() / f"kernels_{paths.cache_digest(key)}.json"
    cached = None if refresh else paths.read_cache_json(path, key)
    ms = None
    if cached is not None and isinstance(cached.get("ms"), dict):
        try:
            ms = {(s, int(r), k): float(v) for name, v in cached["ms"].items() for s, r, k in [name.split(" ")]}
            plain = plain_rows_from(ms, key["shapes"])
        except (ValueError, KeyError, TypeError):
            ms = None
    if ms is None:
        ms = time_kernels(layers, reps)
        plain = plain_rows_from(ms, key["shapes"])
        # "plain" is written for people reading the file; the choice is always worked out again from "ms"
        paths.write_cache_json(path, {"key": key, "plain": plain,
                                      "ms": {f"{s} {r} {k}": round(v, 4) for (s, r, k), v in sorted(ms.items())}})
    apply_choice(model, plain)
    return plain_rows_of(model)


def plain_rows_of(model) -> dict[str, list[int]] | None:
    """The row counts per layer shape that `model` runs on F.linear ({}: none; None: no layer of it is on
    the few-row kernel, or its kernels were never chosen)."""
    if not isinstance(model, torch.nn.Module) or not uses_few_row_linear(model):
        return None
    return getattr(model, "few_row_plain", None)
