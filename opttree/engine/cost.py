"""The machine's cost curve: what a step's forwards cost here, measured on the device in use.

Two curves, each after a realistic KV prefix (128 tokens) and again after a long one (1,024 tokens,
`longer`: attention reads the whole prefix, so a long prompt makes each tree token dearer; a step
takes its costs at its own prefix, trees/auto_size.StepCost.at_prefix): the target's verification forward over k
tree tokens (root included; a complete binary tree of that size, with tree attention, then compacted
back), and one draft layer over w tree nodes (the drafter's batched forward plus its top-k, exactly
what a tree builder's `expand` calls), plus the drafting every step pays whatever the tree
(`begin_step` over a couple of newly committed tokens). Sizes are interleaved across repetitions so
noise hits them alike. Each point keeps its median and quartiles for the reports and its fastest
repetition (`best_ms`) for the cost model: a forward's work is fixed and interference (another
process, a cold cache) only ever adds time, so the fastest of a few repetitions is the steadiest
estimate — a median is pulled off by two slow repetitions of three, and one such point (a 1-token
forward timed at 48 ms beside 2- and 4-token ones at 32 ms, 2026-11-23) made the auto budget think small trees
cost as much as large ones. A measurement takes about fifteen seconds on a 2-core CPU (2026-11-27) and is cached as JSON
under `opttree.paths.costs_dir()`, keyed by device (on a CPU also its vector instruction set and core count),
dtype, torch threads, kernel, target and draft (`cache_key`); the
target's half (the verify forwards, most of the time) is also cached under the target alone, so another
draft of the same target times only its own layers;
`load_or_measure(pair, refresh=True)` (the `opttree cost --refresh` command, the app's button)
measures again.

The decoder turns the curve into a `StepCost` for the auto node budget (trees/auto_size.py) and
records `compact(curve)` in every trace's meta; the bench's verify-cost sweep
(bench/verify_cost.py) times its forwards with the same `time_verify`.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import statistics
import time
from pathlib import Path

import torch

from opttree import paths
from opttree.config import MODEL_DRAFTERS, DecodeConfig
from opttree.decoding.kv_cache import new_cache, truncate
from opttree.decoding.verify import drafter_features, verify_tree
from opttree.drafters.registry import make_drafter
from opttree.errors import BadInput
from opttree.machine import cpu_isa, cpu_name
from opttree.models.loading import draft_position_limit, last_logits_only
from opttree.nets.few_row_linear import (
    MKL,
    PROBE_ROWS,
    apply_choice,
    choice_of,
    fp32_layers,
    int8_skipped,
    kernel_of,
    layer_shape,
    release_unused_copies,
    use_few_row_linear,
    use_plain_linear,
)
from opttree.nets.grouped_attention import attention_of, use_copying_attention, use_grouped_attention
from opttree.nets.kernel_choice import choose_kernels
from opttree.trees.auto_size import StepCost, from_numbers
from opttree.trees.draft_tree import ROOT, DraftTree

# 2: points carry best_ms, which the cost model reads; 3: `longer`; 4: SIZES; 5: three CPU kernels in the key;
# 6: the KV cache appends in place (decoding/kv_cache.py): forwards after a long prefix cost less than version 5 read
VERSION = 6
# Tokens per verification forward (AUTO_MAX_NODES + 1 lies inside): every row count where the CPU kernel
# choice may switch (nets/few_row_linear.py), so the curve is measured at each kink, not interpolated over it.
SIZES = tuple(sorted({*PROBE_ROWS, 32, 64}))
WIDTHS = (1, 2, 4, 8, 16, 32, 64)     # nodes per draft layer
PREFIX_TOKENS = 128
LONGER_PREFIX_TOKENS = 1024           # the second prefix: a pasted passage's length (trees/auto_size.at_prefix)
GROWTH = 64                           # positions a draft timing adds past its prefix and tree (its own drafted tokens)
NEW_TOKENS = 2                        # tokens a step's begin_step feeds (about τ on the bundled pair)


def load_average() -> list[float] | None:
    """The 1/5/15-minute load averages (None where the OS has none): a curve measured on a busy machine
    says so."""
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None


def device_name(device) -> str:
    dev = torch.device(device)
    if dev.type == "cuda":
        return torch.cuda.get_device_name(dev)
    return cpu_name()


def sync(device) -> None:
    """Wait for the queued work, so that a clock read after it times the work (CUDA runs ahead): for a CUDA
    device, on `device` and every other GPU this process holds memory on, since under device_map a forward
    that starts on the inputs' GPU ends on another. A GPU it holds no memory on runs none of its work, and
    waiting on one would create a CUDA context there (memory taken from whoever uses it, and the time to
    make it inside the first timed forward)."""
    device = torch.device(device)
    if device.type != "cuda" or not torch.cuda.device_count():   # a CUDA-less build has nothing to wait on
        return
    own = torch.cuda.current_device() if device.index is None else device.index
    for index in range(torch.cuda.device_count()):
        if index == own or torch.cuda.memory_reserved(index) > 0:
            torch.cuda.synchronize(index)


def synthetic_tree(n: int, vocab: int, seed: int = 0) -> DraftTree:
    """A complete binary tree of n nodes (breadth-first), random tokens, made-up q."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, vocab, (max(n, 1),), generator=g).tolist()
    tree = DraftTree()
    for i in range(n):
        parent = ROOT if i < 2 else (i - 2) // 2
        tree.add(parent, tokens[i], 0.5, i % 2)
    return tree


def _prefix(pair, prefix_tokens: int) -> list[int]:
    g = torch.Generator().manual_seed(1)
    return torch.randint(0, pair.target.config.vocab_size, (prefix_tokens,), generator=g).tolist()


@torch.inference_mode()
def time_verify(pair, sizes=SIZES, prefix_tokens: int = PREFIX_TOKENS, reps: int = 3, warmup: int = 1,
                kernels: tuple[str, ...] = ("default",), log=None) -> dict:
    """ms of one verification forward per (kernel, tokens): {(kernel, n): [ms, ...]}.

    kernels: "default" (the target as loaded), or "few-row" (as loaded: the machine's choice of CPU
    kernel per layer shape and row count), "plain" (`F.linear` everywhere), "onednn-only" and "mkl-only"
    (that kernel at every row count) in the same repetitions (nets/kernel_choice.py), and "copy-kv" to time
    transformers' SDPA, which copies the KV heads, beside nets/grouped_attention.py's."""
    target, device = pair.target, pair.device
    vocab = target.config.vocab_size
    prefix = torch.tensor([_prefix(pair, prefix_tokens)], device=device)
    cache = new_cache(target)
    target(input_ids=prefix, past_key_values=cache, use_cache=True, **last_logits_only(target))
    trees = {n: synthetic_tree(n - 1, vocab, seed=n) for n in sizes}  # n tokens = root + n-1 nodes
    times = {(k, n): [] for k in kernels for n in sizes}
    chosen = choice_of(target) or {}
    mkl_only = {layer_shape(m): {MKL: list(PROBE_ROWS)} for m in fp32_layers(target)}
    try:
        for rep in range(warmup + reps):
            for n in (sizes if rep % 2 == 0 else tuple(reversed(sizes))):
                for k in (kernels if rep % 2 == 0 else tuple(reversed(kernels))):
                    if k == "plain":
                        use_plain_linear(target)
                    elif k == "onednn-only":
                        apply_choice(target, {})
                    elif k == "mkl-only":
                        apply_choice(target, mkl_only)
                    elif k == "copy-kv":
                        use_copying_attention(target)
                    sync(device)
                    t0 = time.perf_counter()
                    verify_tree(target, cache, 0, trees[n], device)
                    sync(device)
                    ms = (time.perf_counter() - t0) * 1e3
                    if k == "plain":
                        use_few_row_linear(target)
                    elif k in ("onednn-only", "mkl-only"):
                        apply_choice(target, chosen)
                    elif k == "copy-kv":
                        use_grouped_attention(target)
                    truncate(cache, prefix_tokens)
                    if rep >= warmup:
                        times[(k, n)].append(ms)
            if log:
                log(f"verify cost after {prefix_tokens} tokens: repetition {rep + 1}/{warmup + reps}")
    finally:
        if "plain" in kernels:
            use_few_row_linear(target)
        if {"onednn-only", "mkl-only"} & set(kernels):
            apply_choice(target, chosen)
            release_unused_copies(target)   # each kernel alone packed every weight for it
        if "copy-kv" in kernels:
            use_grouped_attention(target)
    return times


@torch.inference_mode()
def time_draft(pair, widths=WIDTHS, prefix_tokens: int = PREFIX_TOKENS, reps: int = 3, warmup: int = 1,
               log=None) -> tuple[list[float], dict]:
    """ms of the drafter's per-step base (begin_step over NEW_TOKENS new tokens) and of one draft layer
    over w depth-1 nodes ({w: [ms, ...]}), through the drafter's own interface."""
    drafter = make_drafter(pair, DecodeConfig(method="opt-tree", nodes=1))
    device = pair.device
    committed = _prefix(pair, prefix_tokens)
    feats = None
    if drafter.feature_layers:
        out = pair.target(input_ids=torch.tensor([committed], device=device), output_hidden_states=True,
                          **last_logits_only(pair.target))
        layers = drafter.feature_layers
        feats = drafter_features({layer: out.hidden_states[layer][0] for layer in layers}, layers)
    drafter.begin_step(committed, feats)
    vocab = pair.target.config.vocab_size
    trees = {w: synthetic_tree(w, vocab, seed=w) for w in widths}
    for tree in trees.values():                      # w children of the root: one layer of width w
        tree.parents[:] = [ROOT] * len(tree)
        tree.depth[:] = [1] * len(tree)
    base, times = [], {w: [] for w in widths}
    for rep in range(warmup + reps):
        committed = committed + committed[-NEW_TOKENS:]
        if feats is not None:
            feats = torch.cat([feats, feats[-NEW_TOKENS:]])
        sync(device)
        t0 = time.perf_counter()
        drafter.begin_step(committed, feats)
        sync(device)
        if rep >= warmup:
            base.append((time.perf_counter() - t0) * 1e3)
        for w in (widths if rep % 2 == 0 else tuple(reversed(widths))):
            sync(device)
            t0 = time.perf_counter()
            drafter.top_children(trees[w], list(range(w)), w)
            sync(device)
            if rep >= warmup:
                times[w].append((time.perf_counter() - t0) * 1e3)
            drafter.end_step([])
        if log:
            log(f"draft cost after {prefix_tokens} tokens: repetition {rep + 1}/{warmup + reps}")
    return base, times


def _stats(ts: list[float]) -> dict:
    ts = sorted(ts)
    q = statistics.quantiles(ts, n=4) if len(ts) >= 2 else [ts[0]] * 3
    return {"median_ms": round(statistics.median(ts), 3), "p25_ms": round(q[0], 3), "p75_ms": round(q[2], 3),
            "best_ms": round(ts[0], 3)}


DRAFT_KEYS = ("drafter", "draft", "draft_bytes", "draft_kernel", "draft_fp32", "draft_kernels", "draft_attention",
              "draft_rows")


def cache_key(pair) -> dict:
    """What the curve depends on: the device (on CPU also its instruction set and core count: a VM moved
    to another host keeps its model name), dtype, threads, kernel, target and draft (and the draft
    file's size: a draft retrained into another shape, e.g. a fused head, is measured again; and the
    kernel the draft runs on, with the parts an int8 draft keeps fp32 and what its LM-head rows run on:
    each costs its own), and the attention each runs (a tree forward copies the KV cache under "sdpa",
    not under nets/grouped_attention.py's)."""
    draft = str(pair.draft_name or "") if pair.drafter_kind != "none" else ""
    cpu = torch.device(pair.device).type == "cpu"
    return {"device": str(pair.device), "device_name": device_name(pair.device),
            **({"isa": cpu_isa(), "cores": os.cpu_count()} if cpu else {}),
            "dtype": str(pair.dtype).replace("torch.", ""), "threads": torch.get_num_threads(),
            "kernel": kernel_of(pair.target), "kernels": choice_of(pair.target),
            "attention": attention_of(pair.target),
            "target": str(pair.target_name), "drafter": pair.drafter_kind, "draft": draft,
            "draft_bytes": _file_size(draft), **draft_kernel(pair.draft_model)}


def draft_kernel(model) -> dict:
    """The draft's kernel ("int8", "few-row", "default"; None without a draft network), on int8 the
    names of the parts it keeps fp32, its attention, and what a head's LM-head rows run on ("bf16",
    "fp32", "int8"; None for a draft without them)."""
    if not isinstance(model, torch.nn.Module):
        return {"draft_kernel": None, "draft_fp32": None, "draft_kernels": None, "draft_attention": None,
                "draft_rows": None}
    kernel = kernel_of(model)
    rows = getattr(model, "rows_kernel", None)
    return {"draft_kernel": kernel, "draft_fp32": sorted(int8_skipped(model)) if kernel == "int8" else None,
            "draft_kernels": choice_of(model), "draft_attention": attention_of(model),
            "draft_rows": rows() if callable(rows) else None}


def target_key(pair) -> dict:
    """What the verification forwards depend on: `cache_key` without the draft. Every draft of one
    target shares them, so a new draft times only its own layers."""
    return {k: v for k, v in cache_key(pair).items() if k not in DRAFT_KEYS}


def _file_size(path: str) -> int | None:
    try:
        return os.path.getsize(path) if path and os.path.isfile(path) else None
    except OSError:
        return None


def longer_prefix(pair, sizes=SIZES) -> int | None:
    """The longer KV prefix the curve is also measured after: LONGER_PREFIX_TOKENS, or what the
    target's positions leave room for beside the largest tree; None where that is no longer than
    PREFIX_TOKENS."""
    margin = max(sizes) + GROWTH      # the largest tree, and the draft timing's own growth
    room = getattr(pair.target.config, "max_position_embeddings", None) or LONGER_PREFIX_TOKENS + margin
    longer = min(LONGER_PREFIX_TOKENS, room - margin)
    return longer if longer > PREFIX_TOKENS else None


def _verify_at(pair, prefix_tokens: int, sizes, reps: int, warmup: int, log) -> dict:
    """The verify points after `prefix_tokens` of KV prefix."""
    times = time_verify(pair, sizes, prefix_tokens, reps=reps, warmup=warmup, log=log)
    one = statistics.median(times[("default", sizes[0])])
    points = [{"tokens": n, **_stats(times[("default", n)]),
               "relative": round(statistics.median(times[("default", n)]) / one, 3), "reps": reps} for n in sizes]
    return {"prefix_tokens": prefix_tokens, "points": points}


def _draft_at(pair, prefix_tokens: int, widths, reps: int, warmup: int, log) -> dict | None:
    """The drafting every step pays and one draft layer by width, after `prefix_tokens` of KV prefix;
    None without a draft model."""
    if pair.drafter_kind not in MODEL_DRAFTERS or pair.draft_model is None:
        return None
    # A draft layer takes milliseconds: three times the repetitions cost little and steady its median.
    base, layer = time_draft(pair, widths, prefix_tokens, reps=3 * reps, warmup=warmup, log=log)
    return {"base_ms": round(min(base), 3), "new_tokens": NEW_TOKENS, "reps": 3 * reps,
            "points": [{"width": w, **_stats(layer[w])} for w in widths]}


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def room_needed(prefix: int, tree: int) -> int:
    """Positions a timing reads: `prefix` tokens, a `tree`-token forward and the drafting's own growth (GROWTH)."""
    return prefix + tree + GROWTH


def room_to_time(room: int | None, prefix: int, tree: int) -> bool:
    """Whether a model with `room` positions (None: any) can be timed after `prefix` tokens (`room_needed`)."""
    return room is None or room >= room_needed(prefix, tree)


def check_room_to_measure(room: int | None, name: str, tree: int) -> None:
    """BadInput when a model with `room` positions has too few to be timed after PREFIX_TOKENS of prefix
    (`room_to_time`): the curve every run reads."""
    if not room_to_time(room, PREFIX_TOKENS, tree):
        need = room_needed(PREFIX_TOKENS, tree)
        raise BadInput(f"this {name} has {room} positions; measuring what its forwards cost here (the curve "
                       f"every run reads) takes {need}: a {PREFIX_TOKENS}-token prefix, a {tree}-token tree and "
                       "the drafting's own growth.")


def measure_verify(pair, sizes=SIZES, reps: int = 3, warmup: int = 1, log=None) -> dict:
    """The target's half of the curve, measured now: verification forwards after PREFIX_TOKENS of KV
    prefix and after a longer one (`longer`), keyed by `target_key`."""
    check_room_to_measure(getattr(pair.target.config, "max_position_embeddings", None), "target", max(sizes))
    t0, load = time.perf_counter(), load_average()
    near = _verify_at(pair, PREFIX_TOKENS, sizes, reps, warmup, log)
    far = longer_prefix(pair, sizes)
    return {"version": VERSION, "key": target_key(pair), "measured_utc": _now(), "load_avg": load,
            "reps": reps, **near, "longer": _verify_at(pair, far, sizes, reps, warmup, log) if far else None,
            "seconds": round(time.perf_counter() - t0, 2)}


def measure(pair, sizes=SIZES, widths=WIDTHS, reps: int = 3, warmup: int = 1, log=None,
            verify: dict | None = None) -> dict:
    """Measure the curve now (about fifteen seconds on a 2-core CPU): verification forwards and, with a
    draft, draft layers, after PREFIX_TOKENS of KV prefix and again after a longer one (`longer`).
    `verify`: the target's half measured earlier (`measure_verify`), reused instead of timed again.
    The curve's `measured_utc` and `load_avg` are the verify forwards'; its draft's are in `draft`."""
    # A draft LM is timed after the same prefixes; one with learned positions (GPT-2, OPT) that do not
    # reach the longer prefix keeps its costs after the short one there.
    room = draft_position_limit(pair)
    check_room_to_measure(room, "draft model", max(widths))
    t0 = time.perf_counter()
    verify = verify or measure_verify(pair, sizes, reps, warmup, log)

    def with_draft(part: dict, held: dict | None = None) -> dict:
        if held is not None and not room_to_time(room, part["prefix_tokens"], max(widths)):
            return {**part, "draft": held}
        load, draft = load_average(), _draft_at(pair, part["prefix_tokens"], widths, reps, warmup, log)
        return {**part, "draft": draft and {**draft, "measured_utc": _now(), "load_avg": load}}

    near, longer = with_draft(verify), verify.get("longer")
    curve = {**near, "key": cache_key(pair), "longer": with_draft(longer, near["draft"]) if longer else None}
    curve["seconds"] = round(verify["seconds"] + time.perf_counter() - t0, 2)
    return curve


def cache_path(key: dict) -> Path:
    digest = paths.cache_digest(key)
    # A pair's curve is named after its draft; the target's own measurements (target_key: the verify half,
    # and engine/batch_cost.py's surfaces) after what they hold.
    what = (Path(key["draft"]).stem or "none") if "draft" in key else ("surface" if "surface" in key else "verify")
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{Path(key['target']).name}_{what}")
    return paths.costs_dir() / f"{slug[:80]}_{key['device'].replace(':', '')}_{digest}.json"


def read_cached(path: Path, key: dict, version: int = VERSION) -> dict | None:
    """A cached measurement with this key and version and some points, else None (the bench's cost
    surfaces, engine/batch_cost.py, share the cache and this check)."""
    curve = paths.read_cache_json(path, key)
    ok = (curve is not None and curve.get("version") == version
          and isinstance(curve.get("points"), list) and curve["points"])
    return curve if ok else None


def same_verify(curve: dict, verify: dict) -> bool:
    """The curve holds this verify half (its points after both prefixes)."""
    longer, half_longer = curve.get("longer") or {}, verify.get("longer") or {}
    return curve.get("points") == verify.get("points") and longer.get("points") == half_longer.get("points")


def load_or_measure(pair, refresh: bool = False, log=None) -> dict:
    """The pair's curve on this machine: kept on the pair, else read from the cache, else measured
    (and cached), reusing the target's cached verify half where another draft of it left one.
    `refresh` measures both halves again whatever is cached; every other draft of the target then
    takes the new verify half on its next load (timing its own layers again), so the drafts of one
    target never price verification differently."""
    if refresh:   # the kernel choice is a measurement of this machine too (nets/kernel_choice.py)
        choose_kernels(pair.target, refresh=True)
    # The draft follows its target's choice, also when another pair sharing the target refreshed it.
    chosen = choice_of(pair.target) or {}
    if getattr(pair.draft_model, "_few_row_choice", None) != chosen:
        apply_choice(pair.draft_model, chosen)
    key = cache_key(pair)
    held = getattr(pair, "cost_curve", None)
    if not refresh and held is not None and held.get("key") == key:
        return held
    path, half_key = cache_path(key), target_key(pair)
    half_path = cache_path(half_key)
    curve = None if refresh else read_cached(path, key)
    verify = None if refresh else read_cached(half_path, half_key)
    if curve is not None and verify is not None and not same_verify(curve, verify):
        curve = None            # the target was measured again (another draft's refresh): so is this draft
    if curve is None:
        if verify is None:
            verify = measure_verify(pair, log=log)
            paths.write_cache_json(half_path, verify)
        curve = measure(pair, log=log, verify=verify)
        paths.write_cache_json(path, curve)
    pair.cost_curve = curve
    return curve


def cost_ms(point: dict) -> float:
    """What the cost model takes from a measured point: its fastest repetition (module docstring;
    every cached curve has it: `VERSION` 2 re-measures older ones)."""
    return point["best_ms"]


def step_cost(curve: dict) -> StepCost:
    """The plain numbers a tree builder needs, from a full or a compact curve (`auto_size.from_numbers`:
    each cost made non-decreasing, with the longer prefix's numbers where the curve has them)."""
    return from_numbers(curve if "verify_ms" in curve else _numbers(curve))


def _numbers(curve: dict, digits: int | None = None) -> dict:
    """A full curve's cost-model numbers (`cost_ms`), rounded to `digits` where given."""
    def r(x):
        return round(x, digits) if digits is not None else x

    draft = curve.get("draft") or {}
    points = draft.get("points") or []
    longer = curve.get("longer")
    return {"tokens": [p["tokens"] for p in curve["points"]],
            "verify_ms": [r(cost_ms(p)) for p in curve["points"]],
            "widths": [p["width"] for p in points], "layer_ms": [r(cost_ms(p)) for p in points],
            "base_ms": r(draft.get("base_ms", 0.0)), "prefix_tokens": curve.get("prefix_tokens"),
            "longer": _numbers(longer, digits) if longer else None}


def compact(curve: dict) -> dict:
    """The curve as a trace's meta records it: the cost model's numbers only (`cost_ms`, to 0.01 ms),
    after both prefixes (`longer`: None where only one was measured), plus where and when it was measured."""
    key = curve["key"]
    return {**_numbers(curve, 2),
            "device": key["device_name"], "dtype": key["dtype"], "threads": key["threads"],
            "kernel": key["kernel"], "kernels": key.get("kernels"), "draft_kernel": key.get("draft_kernel"),
            "draft_rows": key.get("draft_rows"),
            "isa": key.get("isa"),
            "measured_utc": curve.get("measured_utc", ""), "load_avg": curve.get("load_avg")}
