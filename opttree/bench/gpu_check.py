"""`make gpu-check`: what a CUDA machine says about the engine, in one dated report.

1. the test suite with CUDA available (pytest in a subprocess; its last line is recorded);
2. the machine's cost curve for the bundled pair (measured again, not read from a cache);
3. for fp32 and each half precision (bf16, fp16): AR, OPT-Tree at n = 60 and at the auto budget on
   the same prompts, interleaved (the bench harness): τ, tokens/s, speedup over AR, the greedy
   exact-match rate, and where a step's time goes (draft, build, verify ms). In half precision the
   tree forward and the AR forward round differently, so a near-tie can flip a token: the rate is
   measured, not assumed, and each run that left AR's output is judged at its first divergence against
   an fp32 copy of the target: a near-tie, within rounding (to confirm from the run's own rows), or a clear
   margin that would be a bug (bench/divergence.py); an fp32 run's divergences are listed too, judged
   against the fp32 target itself (each one is beyond fp32's own spacing: a bug).
   fp32, the exactness reference, runs first, and each dtype has its own time budget
   (`--minutes-per-dtype`), so a slow dtype cannot starve the others.

Writes `benchmarks/gpu/<date>-<device>.md` and `.json` (the device named in both). Nothing else in
the project depends on it; on a machine without CUDA it says so and stops.

    python -m opttree.bench.gpu_check [--limit 16] [--max-new-tokens 128] [--minutes-per-dtype 3] [--no-tests]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import subprocess
import sys
from pathlib import Path

import torch

from opttree import paths
from opttree.bench.divergence import VERDICTS, divergences, format_divergences
from opttree.bench.harness import run_bench
from opttree.bench.prompts import read_prompts
from opttree.bench.report import fmt, pct
from opttree.config import BUNDLED_ID, DecodeConfig
from opttree.drafters.registry import load_pair
from opttree.engine import cost
from opttree.errors import BadInput, guarded
from opttree.models.loading import load_causal_lm

DTYPES = ("fp32", "bf16", "fp16")
METHODS = ("ar", "opt-tree@60", "opt-tree@auto")
KEPT = ("tau", "tokens_per_s", "speedup", "exact_match", "mean_nodes", "mean_depth", "mean_draft_ms",
        "mean_build_ms", "mean_verify_ms", "prompts")
TESTS_TIMEOUT_S = 3600


def run_tests() -> str:
    """The suite's summary line ('812 passed, 3 skipped in …'), run where CUDA is available."""
    try:
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "tests"], cwd=paths.checkout(),
                              capture_output=True, text=True, timeout=TESTS_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"stopped after {TESTS_TIMEOUT_S} s (the suite did not finish)"
    lines = [ln for ln in proc.stdout.strip().splitlines() if re.search(r"\d+ (passed|failed)", ln)]
    return (lines[-1] if lines else proc.stdout.strip().splitlines()[-1:] or ["no output"])[0].strip("= ")


def check_dtype(pair, prompts, cfg: DecodeConfig, log=None, max_minutes: float | None = None,
                reference=None) -> dict:
    """One dtype's reading: {"methods": {method: KEPT fields}, "cost": compact cost curve}, for a pair
    loaded in that dtype; `max_minutes` caps the bench (every method still runs on each prompt it
    reaches). With `reference` (the target in fp32), also "divergences": each run's first departure
    from AR's output with the target's logit gap there and whether it is a near-tie (bench/divergence.py)."""
    curve = cost.load_or_measure(pair, refresh=True, log=log)
    result = run_bench(pair, prompts, list(METHODS), cfg, chat=True, log=log or (lambda m: None),
                       max_minutes=max_minutes)
    out = {"cost": cost.compact(curve),
           "methods": {m: {k: a.get(k) for k in KEPT} for m, a in result["methods"].items()}}
    if reference is not None:
        out["divergences"] = divergences(pair, reference, prompts, result)
    return out


def report(device: str, date: str, tests: str | None, results: dict, cfg: DecodeConfig, n_prompts: int) -> str:
    lines = [f"# GPU check: {device}", "", f"Run {date} with `make gpu-check` (opttree/bench/gpu_check.py). "
             f"Bundled pair, up to {n_prompts} prompts of the eval set, {cfg.max_new_tokens} new tokens, T = 0, "
             "methods interleaved per prompt.", "",
             f"**Tests with CUDA available:** {tests if tests is not None else 'not run (--no-tests)'}", "",
             "| dtype | method | prompts | τ | tokens/s | speedup vs AR | exact match with AR | mean nodes | "
             "draft / build / verify ms a step |",
             "|---|---|---|---|---|---|---|---|---|"]
    for dtype, r in results.items():
        for m, a in r["methods"].items():
            phases = " / ".join(fmt(a.get(k), ".1f") for k in ("mean_draft_ms", "mean_build_ms", "mean_verify_ms"))
            lines.append(f"| {dtype} | {m} | {a.get('prompts', '')} | {fmt(a['tau'])} | "
                         f"{fmt(a['tokens_per_s'], '.1f')} | {fmt(a['speedup'])}× | {pct(a['exact_match'])} | "
                         f"{fmt(a['mean_nodes'], '.1f')} | {phases} |")
    lines += ["", "Cost curve (target forward ms by tree tokens; one draft layer's ms by its width):", ""]
    for dtype, r in results.items():
        c = r["cost"]
        lines.append(f"- {dtype}, verify: " + ", ".join(f"{t} → {ms:g} ms"
                                                       for t, ms in zip(c["tokens"], c["verify_ms"])))
        if c.get("widths") and c.get("layer_ms"):
            lines.append(f"- {dtype}, draft layer: " + ", ".join(f"{w} → {ms:g} ms"
                                                                  for w, ms in zip(c["widths"], c["layer_ms"])))
    lines += ["", "In half precision the tree forward and the AR forward round differently, so a near-tie can "
              "flip a token: an exact-match rate below 100 % there is expected to come from such flips (fp32 is "
              "the exactness reference; a shortfall in fp32 would be a bug). Each run that left AR's output, "
              "at its first divergence (opttree/bench/divergence.py: the fp32 target's logit gap between AR's "
              "token and the run's, against what the dtype gets wrong there):"]
    for dtype, r in results.items():
        if "divergences" in r:
            counts = ", ".join(f"{sum(d['verdict'] == v for d in r['divergences'])} {v}" for v in VERDICTS)
            lines += ["", f"{dtype}: {len(r['divergences'])} divergences: {counts}", "", "```",
                      format_divergences(r["divergences"]), "```"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m opttree.bench.gpu_check", description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=int, default=16, help="eval prompts")
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--dtypes", default=",".join(DTYPES))
    ap.add_argument("--minutes-per-dtype", type=float, default=3.0,
                    help="each dtype's bench stops after the prompt that crosses this (0: no limit)")
    ap.add_argument("--no-tests", action="store_true", help="skip the test suite")
    ap.add_argument("--out-dir", default=str(paths.checkout() / "benchmarks" / "gpu"))
    args = ap.parse_args(argv)
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    bad = [d for d in dtypes if d not in DTYPES]
    if bad or not dtypes:
        raise BadInput(f"unknown or no dtype(s) {', '.join(bad) or repr(args.dtypes)}: "
                       f"choose from {', '.join(DTYPES)}.")
    if args.minutes_per_dtype < 0 or args.limit < 1 or args.max_new_tokens < 1:
        raise BadInput("--minutes-per-dtype must be 0 (no limit) or more; --limit and --max-new-tokens at least 1.")
    if not torch.cuda.is_available():
        print("gpu-check needs a CUDA device and none is visible here (torch.cuda.is_available() is False); "
              "nothing was run.", file=sys.stderr)
        return 2
    device = torch.cuda.get_device_name(0)
    date = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d")
    tests = None if args.no_tests else run_tests()
    cfg = DecodeConfig(method="ar", nodes=0, max_new_tokens=args.max_new_tokens, temperature=0.0)
    prompts = read_prompts(paths.EVAL_PROMPTS, args.limit)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"{date}-{re.sub(r'[^A-Za-z0-9]+', '-', device).strip('-').lower()}"
    results: dict = {}
    # The fp32 target every dtype's divergences are judged by: the fp32 pair's own (fp32 is judged against itself:
    # each divergence there is beyond its own spacing, a clear margin), else a copy loaded once.
    reference = None
    for dtype in dtypes:  # the report is rewritten after each dtype: a run cut short keeps what it measured
        pair = load_pair(device="cuda", dtype=dtype)
        if dtype == "fp32":
            reference = pair.target
        elif reference is None:
            reference = load_causal_lm(BUNDLED_ID, torch.device("cuda"), torch.float32)
        results[dtype] = check_dtype(pair, prompts, cfg, log=lambda m: print(m, file=sys.stderr, flush=True),
                                     max_minutes=args.minutes_per_dtype or None, reference=reference)
        text = report(device, date, tests, results, cfg, len(prompts))
        stem.with_suffix(".md").write_text(text, encoding="utf-8")
        stem.with_suffix(".json").write_text(json.dumps({"device": device, "date": date, "tests": tests,
                                                         "results": results}, indent=1), encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(guarded(main))
