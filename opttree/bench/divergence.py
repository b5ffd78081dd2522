"""Where a reduced-precision run leaves AR's greedy output, and whether the target nearly tied there:
`python -m opttree.bench.divergence`.

In fp32 a tree method's greedy output is AR's, token for token (tests/engine/test_greedy_exact.py). In
bf16 or fp16 a tree verification (the root and the tree's tokens in one forward, under a tree mask) and an
AR step (one token) sum in other orders and round differently, so where two tokens nearly tie the argmax
can differ, and every later token then differs too. Exactness in reduced precision is therefore judged at
the first position d where a run's output leaves AR's (same dtype, same prompt):

- over the tokens both share (the prompt and AR's first d tokens), one forward of the target in the run's
  dtype and one of an fp32 copy give each candidate's logit: AR's token and the other run's;
- `gap_fp32` is AR's token's fp32 logit minus the other's, `gap` the same in the run's dtype; `spacing` is
  one step of the dtype at that logit (every logit the runs compared was rounded to it);
- `tie_margin` = |gap - gap_fp32| + spacing, what this forward got wrong in the gap itself; `noise` = the two
  logits' distances from fp32, added, + spacing, a bound on the gap's error in any forward of this dtype
  (an error the two logits share cancels in the gap, so `noise` is the looser of the two).

`verdict`: a **near-tie** when |gap_fp32| <= tie_margin (the dtype cannot tell the two tokens apart there,
and which one a forward picks depends on its summation order); **within rounding** when only `noise` covers
it (the tree forward rounds differently from this one and may err by that much, but this forward got the gap
right: confirm with the run's own rows, as benchmarks/bf16_cpu/margins.py reads them, before calling it
either); a **clear margin** beyond `noise` would be a bug (mask, positions, cache), as any divergence in fp32
is. `near_tie` is the first verdict.

    python -m opttree.bench.divergence [--dtype bf16] [--device cpu] [--limit 8] [--max-new-tokens 48]
        [--methods opt-tree@60] [--threads 1]
"""

from __future__ import annotations

import argparse

import torch

from opttree import paths
from opttree.bench.prompts import read_prompts
from opttree.config import BUNDLED_ID, DecodeConfig
from opttree.decoding.prompts import encode_prompt
from opttree.errors import BadInput, guarded
from opttree.nets.placement import input_device

# The verdicts on a divergence, from the closest to a tie (module docstring).
VERDICTS = ("near-tie", "within rounding", "clear margin")


def first_divergence(a: list[int], b: list[int]) -> int | None:
    """The first position where two outputs differ (a shorter one that is a prefix of the other differs
    where it ends); None when they are equal."""
    d = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return None if len(a) == len(b) == d else d


@torch.inference_mode()
def last_logits(model, ids: list[int]) -> torch.Tensor:
    """The model's next-token logits after `ids`, in fp32 (one forward, as the model computes them)."""
    return model(input_ids=torch.tensor([ids], device=input_device(model))).logits[0, -1].float().cpu()


def divergence_at(target, reference, prompt_ids: list[int], ar_ids: list[int], other_ids: list[int]) -> dict | None:
    """The first divergence of `other_ids` from `ar_ids` (both after `prompt_ids`) with both candidates'
    logits from `target` (the run's dtype) and `reference` (fp32), and whether it is a near-tie (the
    module docstring); None where the outputs are equal or one ends where the other goes on."""
    d = first_divergence(ar_ids, other_ids)
    if d is None or d >= len(ar_ids) or d >= len(other_ids):
        return None
    a, b = ar_ids[d], other_ids[d]
    run, ref = last_logits(target, prompt_ids + ar_ids[:d]), last_logits(reference, prompt_ids + ar_ids[:d])
    dtype = next(target.parameters()).dtype
    size = torch.tensor(float(max(abs(run[a]), abs(run[b]))), dtype=dtype)
    spacing = float(torch.nextafter(size, torch.tensor(float("inf"), dtype=dtype)).float() - size.float())
    noise = float(abs(run[a] - ref[a]) + abs(run[b] - ref[b])) + spacing
    gap, gap_fp32 = float(run[a] - run[b]), float(ref[a] - ref[b])
    tie_margin = abs(gap - gap_fp32) + spacing
    verdict = VERDICTS[0] if abs(gap_fp32) <= tie_margin else VERDICTS[1] if abs(gap_fp32) <= noise else VERDICTS[2]
    return {"position": d, "ar_token": a, "other_token": b, "gap": gap, "gap_fp32": gap_fp32, "spacing": spacing,
            "tie_margin": tie_margin, "noise": noise, "fp32_rank_of_other": int((ref > ref[b]).sum()),
            "verdict": verdict, "near_tie": verdict == VERDICTS[0]}


def divergences(pair, reference, prompts, result: dict, chat: bool = True) -> list[dict]:
    """`divergence_at` for every run of a bench `result` (opttree.bench.harness) whose output left AR's,
    with its prompt id and method; `reference`: the pair's target in fp32."""
    ids = {q.id: encode_prompt(pair.tokenizer, q.prompt, chat=chat) for q in prompts}
    ar = {r["prompt_id"]: r["output_ids"] for r in result["runs"] if r["method"] == "ar"}
    out = []
    for r in result["runs"]:
        if r["method"] == "ar" or r["prompt_id"] not in ar:
            continue
        found = divergence_at(pair.target, reference, ids[r["prompt_id"]], ar[r["prompt_id"]], r["output_ids"])
        if found:
            out.append({"prompt_id": r["prompt_id"], "method": r["method"], **found})
    return out


def format_divergences(rows: list[dict]) -> str:
    if not rows:
        return "no divergence from AR's output"
    lines = ["prompt | method | position | AR / other token | gap fp32 | gap run dtype | tie margin | noise | verdict"]
    for r in rows:
        lines.append(f"{r['prompt_id']} | {r['method']} | {r['position']} | {r['ar_token']} / {r['other_token']} | "
                     f"{r['gap_fp32']:+.4f} | {r['gap']:+.4f} | {r['tie_margin']:.4f} | {r['noise']:.4f} | "
                     f"{r['verdict'] if r['near_tie'] else r['verdict'].upper()}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m opttree.bench.divergence", description=__doc__.split("\n")[0])
    ap.add_argument("--target", default=BUNDLED_ID)
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--limit", type=int, default=8, help="eval prompts")
    ap.add_argument("--max-new-tokens", type=int, default=48)
    ap.add_argument("--methods", default="opt-tree@60", help="comma-separated bench methods (AR always runs)")
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args(argv)
    if args.limit < 1 or args.max_new_tokens < 1 or (args.threads is not None and args.threads < 1):
        raise BadInput("--limit, --max-new-tokens and --threads must be at least 1.")
    if args.threads:
        torch.set_num_threads(args.threads)
    # the engine and the models load only once the arguments are sound (not for --help)
    from opttree.bench.harness import format_table, run_bench
    from opttree.drafters.registry import load_pair
    from opttree.models.loading import load_causal_lm

    pair = load_pair(args.target, device=args.device, dtype=args.dtype)
    reference = load_causal_lm(args.target, pair.device, torch.float32)
    prompts = read_prompts(paths.EVAL_PROMPTS, args.limit)
    cfg = DecodeConfig(method="ar", nodes=0, max_new_tokens=args.max_new_tokens, temperature=0.0, retrieval="off")
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    result = run_bench(pair, prompts, methods, cfg)
    print(format_table(result))
    print(format_divergences(divergences(pair, reference, prompts, result)))
    return 0


if __name__ == "__main__":
    raise SystemExit(guarded(main))
