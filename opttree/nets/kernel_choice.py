"""Which CPU kernel each linear layer runs, per machine, layer shape and row count.

A tree verification multiplies every weight by a handful of rows (the tree's tokens), AR by one. On
CPU the fastest kernel for that differs by row count and by machine (nets/few_row_linear.py has the
kernels and the measurements that motivated them): plain `F.linear` (MKL's GEMV for one row, its GEMM
for more), oneDNN's inner product over a weight reordered once, and MKL's GEMM over a weight packed once.
So the engine measures them on the machine it runs on, once, and every call then takes the fastest for
its row count (`few_row_linear.kernel_table`).

The measurement (`time_kernels`) calls every layer in model order, as a forward does, so the weights
stream from memory as they do when decoding; each kernel also has to give F.linear's numbers (to
rounding) for every shape, at every probed row count and at a prefill's (`CHECK_ROWS`), or it is not
chosen there. oneDNN is the starting pick, then `F.linear`, then MKL's packed GEMM, and each takes a
row count from the pick before it only when it is at least 3 % faster (`MARGIN`): within noise the
choice does not flip from one measurement to the next, and a layer keeps no packed copy it barely
needs. The timings are cached per machine, torch build, threads and layer shapes; `opttree cost
--refresh` and the app's button measure again.

Only the kernel changes, never the maths: sums may round differently, as any change of kernel or row
count already does, and exactness is judged against the target's own greedy output.
"""

from __future__ import annotations

import os
import time

import torch
import torch.nn.functional as F

from opttree import machine, paths
from opttree.nets.few_row_linear import (
    KERNELS,
    MKL,
    ONEDNN,
    PLAIN,
    PROBE_ROWS,
    apply_choice,
    choice_of,
    fp32_layers,
    have_mkl,
    layer_shape,
    release_unused_copies,
    run_kernel,
)

VERSION = 3       # 2: MKL's packed GEMM is a third kernel; 3: the margin between every pair, the prefill check
MARGIN = 0.97     # a kernel takes a row count from the pick before it only below 97 % of that pick's time
TOLERANCE = 1e-4  # a kernel's output may differ from F.linear's by this much of the output's largest value
CHECK_ROWS = 300  # rows of the prefill-sized check: counts past the largest probe take that probe's kernel


def timed_kernels() -> tuple[str, ...]:
    """The kernels this PyTorch build has (MKL's packed GEMM needs an MKL build; OPTTREE_NO_MKL_PACK=1
    leaves it out)."""
    return tuple(k for k in KERNELS if k != MKL or (have_mkl() and not paths.no_mkl_pack()))


def choice_key(model: torch.nn.Module) -> dict:
    """What the kernel choice depends on: the machine, the torch build and threads, the kernels timed
    and the layer shapes."""
    shapes: dict[str, int] = {}
    for m in fp32_layers(model):
        shapes[layer_shape(m)] = shapes.get(layer_shape(m), 0) + 1
    return {"version": VERSION, "cpu": machine.cpu_name(), "isa": machine.cpu_isa(), "cores": os.cpu_count(),
            "threads": torch.get_num_threads(), "torch": torch.__version__, "kernels": list(timed_kernels()),
            "rows": list(PROBE_ROWS), "shapes": dict(sorted(shapes.items()))}


def _wrong(out: torch.Tensor, ref: torch.Tensor) -> bool:
    """Whether `out` is not `ref` to rounding (NaN or inf anywhere counts as wrong)."""
    return not bool(((out - ref).abs() <= TOLERANCE * ref.abs().max() + 1e-6).all())


@torch.inference_mode()
def time_kernels(layers: list[torch.nn.Module], reps: int = 4) -> dict[tuple[str, int, str], float]:
    """ms per (shape, rows, kernel) for one pass over `layers` in order, the fastest of `reps` passes
    (inf for a kernel whose output differs from F.linear's at that shape).

    Each pass calls every layer once, as a forward does, so the weights stream from memory as they do
    when decoding (a model's weights outlast the caches; timing one layer alone would time its cache).
    Kernels and row counts are interleaved, and their order flips every repetition. The first pass
    warms up, packs every weight for every kernel and checks each kernel's output against F.linear's,
    there and over `CHECK_ROWS` rows."""
    kernels = timed_kernels()
    inputs = {}
    for m in layers:
        for rows in PROBE_ROWS:
            inputs.setdefault((layer_shape(m), rows), torch.randn(1, rows, m.weight.shape[1]))
    best: dict[tuple[str, int, str], float] = {}
    wrong: set[tuple[str, str]] = set()
    for rep in range(1 + max(1, reps)):
        for rows in (PROBE_ROWS if rep % 2 == 0 else tuple(reversed(PROBE_ROWS))):
            for kernel in (kernels if rep % 2 == 0 else tuple(reversed(kernels))):
                code = KERNELS.index(kernel)
                total: dict[str, float] = {}
                for m in layers:
                    shape = layer_shape(m)
                    x = inputs[(shape, rows)]
                    t0 = time.perf_counter()
                    out = run_kernel(code, x, m.weight, m.bias, m._few_row_pack)
                    total[shape] = total.get(shape, 0.0) + time.perf_counter() - t0
                    if not rep and _wrong(out, F.linear(x, m.weight, m.bias)):
                        wrong.add((shape, kernel))
                if rep:
                    for shape, t in total.items():
                        k = (shape, rows, kernel)
                        best[k] = min(best.get(k, float("inf")), t * 1e3)
    for m in layers:                     # the prefill-sized check
        x = torch.randn(CHECK_ROWS, m.weight.shape[1])
        ref = F.linear(x, m.weight, m.bias)
        for kernel in kernels:
            if _wrong(run_kernel(KERNELS.index(kernel), x, m.weight, m.bias, m._few_row_pack), ref):
                wrong.add((layer_shape(m), kernel))
    for shape, kernel in wrong:
        for rows in PROBE_ROWS:
            best[(shape, rows, kernel)] = float("inf")
    return best


def choice_from(ms: dict[tuple[str, int, str], float], shapes, kernels=KERNELS) -> dict[str, dict[str, list[int]]]:
    """Per shape, the probed row counts each kernel other than oneDNN takes ({shape: {kernel: rows}};
    KeyError where a timing is missing): starting from oneDNN, then `F.linear` (no copy of its own),
    then MKL's packed GEMM, a kernel takes a count when it beats the pick so far by the margin."""
    order = [k for k in (ONEDNN, PLAIN, MKL) if k in kernels]
    choice = {}
    for s in shapes:
        by: dict[str, list[int]] = {}
        for r in PROBE_ROWS:
            pick = order[0]
            for k in order[1:]:
                if ms[(s, r, k)] < MARGIN * ms[(s, r, pick)]:
                    pick = k
            if pick != ONEDNN:
                by.setdefault(pick, []).append(r)
        choice[s] = by
    return choice


def choose_kernels(model: torch.nn.Module, reps: int = 4, refresh: bool = False) -> dict | None:
    """Measure (or read back) which kernel each layer shape of `model` runs at each row count on this
    machine, apply it, and return `choice_of(model)`. The timings (`time_kernels`, about six seconds for
    the bundled target) are cached under `paths.costs_dir()`; `refresh` times them again."""
    layers = fp32_layers(model)
    if not layers:
        return None
    key = choice_key(model)
    path = paths.costs_dir() / f"kernels_{paths.cache_digest(key)}.json"
    cached = None if refresh else paths.read_cache_json(path, key)
    choice = None
    if cached is not None and isinstance(cached.get("ms"), dict):
        try:   # null: a kernel that failed the check there
            ms = {(s, int(r), k): float("inf" if v is None else v)
                  for name, v in cached["ms"].items() for s, r, k in [name.split(" ")]}
            choice = choice_from(ms, key["shapes"], key["kernels"])
        except (ValueError, KeyError, TypeError):
            choice = None
    if choice is None:
        ms = time_kernels(layers, reps)
        choice = choice_from(ms, key["shapes"], key["kernels"])
        # "choice" is written for people reading the file; it is always worked out again from "ms"
        paths.write_cache_json(path, {"key": key, "choice": choice, "ms": {
            f"{s} {r} {k}": None if v == float("inf") else round(v, 4) for (s, r, k), v in sorted(ms.items())}})
    apply_choice(model, choice)
    release_unused_copies(model)         # timing packed every weight for every kernel: keep what is used
    return choice_of(model)
