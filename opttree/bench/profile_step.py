"""Where a speculative step's time goes, by phase and by op: `python -m opttree.bench.profile_step`.

For each dtype, OPT-Tree at a fixed budget decodes one prompt after a warm-up run and reports ms a
step by phase (draft, build, verify) and the mean tree depth; one draft layer's ms by its width, timed
as the auto budget's cost curve times it (`engine/cost.py`, `time_draft`); then the decode again
under torch.profiler, with the ops that took the most self CPU time (and, on CUDA, self CUDA time).
A bench says *that* a dtype or device is slow; this says *where*.

`--random-target` swaps the target for a random-weight model of the same architecture (its config
only). The draft rarely agrees with such a target, so τ means nothing there, but a draft layer and a
verify forward cost what they cost with the real weights: set beside the real target, it tells a
cost of the weights' loading path from a cost of the engine.

    python -m opttree.bench.profile_step [--device cuda] [--dtypes fp32,bf16] [--nodes 60] [--tokens 48]
        [--threshold 0.5] [--tree-temperature 0] [--random-target] [--ops 15]
"""

from __future__ import annotations

import argparse

import torch
from torch.profiler import ProfilerActivity, profile

from opttree import paths
from opttree.bench.prompts import read_prompts
from opttree.config import BUNDLED_ID, DecodeConfig
from opttree.drafters.registry import load_pair, with_drafter
from opttree.engine import cost, speculative
from opttree.errors import BadInput, ModelLoadError, guarded
from opttree.models.loading import (
    ModelPair,
    input_device,
    load_tokenizer,
    model_folder,
    prepare,
    resolve_device,
    resolve_dtype,
)


def random_target_pair(target: str, device: str, dtype: str, drafter: str = "eagle"):
    """The pair `load_pair(target, drafter)` would give, with the target's weights drawn at random."""
    from transformers import AutoConfig, AutoModelForCausalLM  # transformers is heavy: imported when a model is built

    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev, target)
    tokenizer = load_tokenizer(target)            # first: a bad target fails before a model is built
    try:
        config = AutoConfig.from_pretrained(model_folder(target))
    except Exception as exc:
        raise ModelLoadError(f"could not read the config of {target!r}: {str(exc).strip()[:300]}") from exc
    torch.manual_seed(0)
    model = prepare(AutoModelForCausalLM.from_config(config, dtype=dt, attn_implementation=paths.attention_impl()),
                    dev)                      # as the loader does: the same kernels as the real target
    base = ModelPair(model, tokenizer, f"{target} (random weights)", device=input_device(model),
                     dtype=dt, target_spec=target)
    return with_drafter(base, drafter)


def profile_dtype(pair, prompt: str, cfg: DecodeConfig, ops: int = 15, widths: tuple[int, ...] = (1, 8, 32),
                  prompt_ids: list[int] | None = None) -> dict:
    """Time one run (after a warm-up) and one draft layer per width, then profile another run: the
    run's trace summary (tokens, steps, mean draft / build / verify ms, mean depth), the draft-layer
    times and the op tables."""
    def run():
        return speculative.run(pair, prompt, cfg, prompt_ids=prompt_ids, record_target=False)["summary"]

    run()                                                     # warm-up: kernels, caches, allocator
    summary = run()
    summary["wall_ms_per_step"] = summary["wall_s"] * 1e3 / max(summary["steps"], 1)
    if pair.drafter_kind != "none" and widths:
        base, layer = cost.time_draft(pair, widths)
        summary["draft_base_ms"] = min(base)                    # begin_step: the root's children
        summary["draft_layer_ms"] = {w: min(ts) for w, ts in layer.items()}   # fastest of the repetitions
    cuda = pair.device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        run()
    table = prof.key_averages()
    summary["cpu_ops"] = table.table(sort_by="self_cpu_time_total", row_limit=ops, max_name_column_width=60)
    if cuda:
        summary["cuda_ops"] = table.table(sort_by="self_cuda_time_total", row_limit=ops, max_name_column_width=60)
    return summary


def format_summary(name: str, s: dict) -> str:
    line = (f"== {name}: {s['steps']} steps, {s['new_tokens']} tokens, {s['wall_ms_per_step']:.1f} ms a step "
            f"(draft {s['mean_draft_ms']:.1f}, build {s['mean_build_ms']:.1f}, verify {s['mean_verify_ms']:.1f}), "
            f"mean depth {s['mean_depth']:.2f}")
    if "draft_layer_ms" in s:
        line += ("; draft layer by width: " + ", ".join(f"{w} → {ms:.2f} ms" for w, ms in s["draft_layer_ms"].items())
                 + f" (begin_step {s['draft_base_ms']:.2f} ms)")
    return line


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m opttree.bench.profile_step", description=__doc__.split("\n")[0])
    ap.add_argument("--target", default=BUNDLED_ID)
    ap.add_argument("--drafter", default="eagle")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--dtypes", default="auto", help="comma-separated: auto, fp32, bf16, fp16")
    ap.add_argument("--nodes", type=int, default=60)
    ap.add_argument("--max-depth", type=int, default=10)
    ap.add_argument("--threshold", type=float, default=0.5, help="δ (0: every tree grows to --max-depth)")
    ap.add_argument("--tree-temperature", type=float, default=0.0, help="0: the draft's fitted value")
    ap.add_argument("--tokens", type=int, default=48, help="new tokens a run")
    ap.add_argument("--prompt-index", type=int, default=0, help="which eval-set prompt")
    ap.add_argument("--random-target", action="store_true", help="the target's architecture, random weights")
    ap.add_argument("--ops", type=int, default=15, help="rows of each op table")
    args = ap.parse_args(argv)
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    if args.nodes < 1 or args.tokens < 1 or args.ops < 1 or not 1 <= args.max_depth <= 20 or not dtypes:
        raise BadInput("--nodes, --tokens and --ops must be at least 1, --max-depth 1..20, and --dtypes "
                       "must name at least one dtype.")
    prompts = read_prompts(paths.EVAL_PROMPTS)
    if not 0 <= args.prompt_index < len(prompts):
        raise BadInput(f"--prompt-index must be 0..{len(prompts) - 1}.")
    cfg = DecodeConfig(method="opt-tree", nodes=args.nodes, max_depth=args.max_depth, threshold=args.threshold,
                       tree_temperature=args.tree_temperature, max_new_tokens=args.tokens, temperature=0.0,
                       retrieval="off")
    for dtype in dtypes:
        pair = (random_target_pair(args.target, args.device, dtype, args.drafter) if args.random_target
                else load_pair(args.target, drafter=args.drafter, device=args.device, dtype=dtype))
        s = profile_dtype(pair, prompts[args.prompt_index].prompt, cfg, args.ops)
        name = f"{pair.target_name} on {pair.device}, {str(pair.dtype).removeprefix('torch.')}"
        print(format_summary(name, s), s["cpu_ops"], s.get("cuda_ops", ""), sep="\n", flush=True)
        del pair
    return 0


if __name__ == "__main__":
    raise SystemExit(guarded(main))
