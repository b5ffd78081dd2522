"""`python -m opttree bench ...`, `sweep ...`, `theory-table ...` and `cost ...` (registered by opttree/cli.py)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from opttree import paths
from opttree.args import add_decode_args, add_model_args, context_from_args, decode_config, load_from_args
from opttree.bench.harness import (
    BENCH_METHODS,
    HF_METHOD,
    check_warmup,
    format_table,
    needs_draft_model,
    parse_methods,
    run_bench,
)
from opttree.bench.plots import (
    plot_bench,
    plot_cost_curve,
    plot_ea_vs_a,
    plot_node_sweep,
    plot_threshold_sweep,
    plot_verify_cost,
)
from opttree.bench.pool import pool_ea_a
from opttree.bench.prompts import read_prompts, with_given
from opttree.bench.sweep import DEFAULT_BUDGETS, DEFAULT_SWEEP_METHODS, best_budget, parse_numbers, run_sweep
from opttree.bench.theory_table import THEORY_TEMPERATURE, markdown_table, run_theory_table, theory_markdown
from opttree.bench.verdict import verdict
from opttree.bench.verify_cost import DEFAULT_SIZES, verify_cost_curve
from opttree.drafters.registry import KINDS, load_pair
from opttree.engine import cost as cost_curve
from opttree.errors import BadInput
from opttree.models.loading import load_classic_draft
from opttree.trace import draft_weights

DEFAULT_PROMPTS = str(paths.EVAL_PROMPTS)


def _common(p: argparse.ArgumentParser, limit: int | None) -> None:
    p.add_argument("--prompts", default=None,
                   help="JSONL: MT-bench form {question_id, category, turns} (first turn used) or {prompt}; "
                        f"default {DEFAULT_PROMPTS}, or none when --prompt is given")
    p.add_argument("--prompt", action="append", default=[], metavar="TEXT",
                   help="a prompt given here (repeatable), run before the file's (the app's Compare tab puts its "
                        "prompt first this way)")
    p.add_argument("--limit", type=int, default=limit, help="use N prompts, spread over categories")
    p.add_argument("--categories", default=None, help="comma-separated categories to keep")
    add_model_args(p)
    add_decode_args(p, method=False)
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--no-chat", action="store_true", help="do not apply the chat template")
    p.add_argument("--out", default=None, help="write the result JSON here")
    p.add_argument("--max-minutes", type=float, default=None,
                   help="time budget: after the prompt that crosses it, stop (all methods ran on every prompt)")


def _timed(p: argparse.ArgumentParser, limit: int | None) -> None:
    """The shared arguments and `--warmup`, for the commands that time their runs (bench, sweep); the theory
    table times nothing and does not take it."""
    _common(p, limit)
    p.add_argument("--warmup", type=int, default=1, help="warm-up prompts (short, not recorded; at least 1)")


def register(sub) -> None:
    b = sub.add_parser("bench", help="τ, speed and exact match of several methods, interleaved per prompt")
    _timed(b, None)
    b.add_argument("--methods", default=",".join(BENCH_METHODS),
                   help="comma-separated: " + ",".join(BENCH_METHODS) + " (ar is always added)")
    b.add_argument("--assistant-model-path", default=None,
                   help="hf-assisted's classic draft (default: the bundled classic draft, or the "
                        "--draft-model-path when --drafter classic)")
    b.add_argument("--hf-num-assistant-tokens", type=int, default=20)
    b.add_argument("--hf-schedule", default="constant", choices=["constant", "heuristic", "heuristic_transient"])
    b.add_argument("--hf-confidence", type=float, default=0.4, help="assistant_confidence_threshold (0 = off)")
    b.add_argument("--plot", default=None, help="write a PNG chart (τ and speedup per method)")
    b.set_defaults(func=cmd_bench)

    s = sub.add_parser("sweep", help="τ/speedup vs node budget, OPT-Tree vs δ, E(A) vs A, verify-cost curve")
    _timed(s, 3)
    s.add_argument("--methods", default=",".join(DEFAULT_SWEEP_METHODS))
    s.add_argument("--budgets", default=",".join(map(str, DEFAULT_BUDGETS)))
    s.add_argument("--thresholds", default="", help="δ values for OPT-Tree at --threshold-nodes (e.g. 0,0.1,0.5,1)")
    s.add_argument("--threshold-nodes", type=int, default=None, help="budget for the δ sweep (default --nodes)")
    s.add_argument("--no-verify-cost", action="store_true", help="skip the target forward-time curve")
    s.add_argument("--cost-sizes", default=",".join(map(str, DEFAULT_SIZES)))
    s.add_argument("--cost-reps", type=int, default=5)
    s.add_argument("--cost-prefix", type=int, default=None,
                   help="with --cost-only: the KV prefix (tokens) the verify-cost curve is timed after (default 128)")
    s.add_argument("--cost-only", action="store_true", help="measure only the verify-cost curve (no draft needed)")
    s.add_argument("--cost-from", default=None, help="reuse the verify-cost curve in this JSON instead of measuring")
    s.add_argument("--cap", default="", help="skip budgets above a cap per method, e.g. binary=150 (slow trees)")
    s.add_argument("--pool", nargs="*", default=[], help="bench result JSONs whose E(A)/A steps are pooled in")
    s.add_argument("--plot-dir", default=None, help="folder for the PNG curves")
    s.set_defaults(func=cmd_sweep)

    t = sub.add_parser("theory-table", help="mean acceptance of every multi-draft scheme over recorded nodes, "
                                            "k = 1..4 (schemes as rows, as in Hu et al.'s Table 1, which reads "
                                            "k = 3), OPT-Tree at temperature 0.7")
    _common(t, 4)
    t.add_argument("--ks", default="1,2,3,4", help="numbers of drafts k (columns), each 1..8")
    t.add_argument("--md", default=None, help="write the markdown page (machine, settings, command, table) here")
    t.set_defaults(func=cmd_theory_table, temperature=THEORY_TEMPERATURE)
    c = sub.add_parser("cost", help="this machine's cost curve (target forward vs tree tokens, draft layer vs width), "
                                    "as the auto node budget uses it: cached; --refresh measures again")
    add_model_args(c)
    c.add_argument("--threads", type=int, default=None, help="torch CPU threads (part of the cache key)")
    c.add_argument("--refresh", action="store_true", help="measure again even when a cached curve exists")
    c.add_argument("--out", default=None, help="also write the curve (JSON) here")
    c.add_argument("--plot", default=None, help="write a PNG chart of the curve")
    c.set_defaults(func=cmd_cost)


def _setup(args, need_draft: bool = True):
    import torch  # torch stays out of `--help`


    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = decode_config(args, "ar")  # validate settings before loading anything
    cats = [c.strip() for c in args.categories.split(",")] if args.categories else None
    path = args.prompts or (None if args.prompt else DEFAULT_PROMPTS)
    prompts = with_given(args.prompt, read_prompts(path, args.limit, cats) if path else [])
    pair = load_from_args(args, need_draft=need_draft)
    return cfg, prompts, pair


def load_assistant(args, pair):
    if args.assistant_model_path is None and pair.drafter_kind == "classic":
        return pair.draft_model
    spec = args.assistant_model_path or KINDS["classic"].default_draft(args.target)
    model = load_classic_draft(spec, pair.target, pair.device, pair.dtype, args.trust_remote_code)
    if not getattr(model, "name_or_path", ""):
        model.name_or_path = str(spec)
    return model


def bench_to_files(pair, prompts, methods, cfg, assistant=None, hf_knobs=None, out=None, plot=None,
                   warmup: int = 1, chat: bool = True, log=None, max_minutes=None, corpus=None) -> dict:

    result = run_bench(pair, prompts, methods, cfg, assistant, hf_knobs, warmup, chat, log, max_minutes, corpus)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    if plot:
        plot_bench(result, plot)
    print(format_table(result))
    said = verdict(result)
    if said:
        print(f"Verdict ({result['meta']['prompts']} prompts; opttree/bench/verdict.py): {said}")
    return result


def cmd_bench(args) -> int:
    check_warmup(args.warmup)   # before any model loads
    methods = parse_methods(args.methods)
    cfg, prompts, pair = _setup(args, needs_draft_model(methods))
    assistant = load_assistant(args, pair) if HF_METHOD in methods else None
    knobs = {"num_assistant_tokens": args.hf_num_assistant_tokens, "num_assistant_tokens_schedule": args.hf_schedule,
             "assistant_confidence_threshold": args.hf_confidence}
    bench_to_files(pair, prompts, methods, cfg, assistant, knobs, args.out, args.plot, args.warmup,
                   chat=not args.no_chat, max_minutes=args.max_minutes, corpus=context_from_args(args, pair).corpus)
    return 0


def sweep_to_files(pair, prompts, cfg, methods, budgets, thresholds=(), threshold_nodes=None, cost_sizes=None,
                   cost_reps: int = 5, pool=(), out=None, plot_dir=None, warmup: int = 1, chat: bool = True,
                   log=None, max_minutes=None, caps=None, cost=None) -> dict:

    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    if cost is None and cost_sizes:
        cost = verify_cost_curve(pair, tuple(cost_sizes), reps=cost_reps, log=log)
    result = run_sweep(pair, prompts, cfg, methods, budgets, thresholds, threshold_nodes, warmup, chat, cost, log,
                       max_minutes, caps)
    pooled = pool_ea_a(result, pool)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    if plot_dir:
        Path(plot_dir).mkdir(parents=True, exist_ok=True)
        plot_node_sweep(result, plot_dir)
        plot_threshold_sweep(result, plot_dir)
        plot_ea_vs_a(pooled, Path(plot_dir) / "ea_vs_a.png", result["meta"])
        if cost:
            plot_verify_cost(cost, Path(plot_dir) / "verify_cost.png")
    print(format_sweep(result))
    return result


def format_sweep(result: dict) -> str:
    lines = [f"{'method':<14}{'nodes':>6}{'τ':>7}{'speedup':>9}{'pred.':>7}{'depth':>7}{'E(A)':>7}{'acc':>6}"]
    for m, pts in result["nodes"]["curves"].items():
        for p in pts:
            sp = f"{p['speedup']:.2f}" if p["speedup"] is not None else "-"
            pr = f"{p['predicted_speedup']:.2f}" if p.get("predicted_speedup") is not None else "-"
            lines.append(f"{m:<14}{p['nodes']:>6}{p['tau']:>7.2f}{sp:>9}{pr:>7}{p['mean_depth'] or 0:>7.2f}"
                         f"{p['mean_expected_accept'] or 0:>7.2f}{p['mean_accepted_draft_tokens'] or 0:>6.2f}"
                         + (f"  (same tree as n={p['same_as']['nodes']})" if p.get("same_as") else ""))
    for p in result["threshold"]["points"]:
        lines.append(f"opt-tree δ={p['threshold']:<6g} n={result['threshold']['nodes']}: τ={p['tau']:.2f} "
                     f"speedup={p['speedup']} depth={p['mean_depth']}")
    ea = result.get("ea_a_pooled") or result["ea_a_summary"]
    lines.append(f"E(A) vs A over {ea['steps']} steps: binned r={ea.get('binned_r')}, slope={ea.get('slope')}, "
                 f"per-step r={ea['pearson_r']}")
    return "\n".join(lines + best_budget_lines(result["nodes"]["curves"].get("opt-tree", [])))


def best_budget_lines(curve: list[dict]) -> list[str]:
    """The best OPT-Tree budget on this machine by each speedup the sweep has, each named: the one the
    verify-cost curve predicts (measured τ and drafting, modelled verify; the `best_budget` a sweep with a
    cost curve records) and the one this run measured, every budget interleaved per prompt."""
    pred, meas = best_budget(curve, "predicted_speedup"), best_budget(curve, "speedup")
    lines = []
    if pred:
        lines.append(f"best OPT-Tree budget on this machine by the speedup the verify-cost curve predicts: "
                     f"n={pred['nodes']} (predicted {pred['predicted_speedup']}×, measured {pred['speedup']}×, "
                     f"τ {pred['tau']})")
    if meas:
        lines.append(f"best OPT-Tree budget on this machine by the speedup this sweep measured: n={meas['nodes']} "
                     f"({meas['speedup']}×, τ {meas['tau']}; one run, budgets interleaved per prompt)")
    return lines


def cmd_cost(args) -> int:
    import torch  # torch stays out of `--help`

    if args.threads:
        torch.set_num_threads(args.threads)
    pair = load_from_args(args)
    curve = cost_curve.load_or_measure(pair, refresh=args.refresh,
                                       log=lambda msg: print(msg, file=sys.stderr, flush=True))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(curve, indent=1), encoding="utf-8")
    if args.plot:
        plot_cost_curve(curve, args.plot)
    key, draft = curve["key"], curve.get("draft") or {}
    # The verify forwards may come from another draft's measurement of the same target (engine/cost.py).
    drafted = (f" (its draft layers {draft['measured_utc']})"
               if draft.get("measured_utc") not in (None, curve["measured_utc"]) else "")
    print(f"{key['target']} + {key['drafter']} draft{draft_weights(key)} on {key['device_name']} ({key['dtype']}, "
          f"{key['threads']} threads), measured {curve['measured_utc']}{drafted} in {curve['seconds']} s; "
          f"cached at {cost_curve.cache_path(key)}")
    for part in filter(None, (curve, curve.get("longer"))):
        print(f"after a {part['prefix_tokens']}-token KV prefix:")
        print("\n".join(f"{p['tokens']:>5} tokens: {p['median_ms']:8.1f} ms  ×{p['relative']:.2f}"
                        for p in part["points"]))
        if part.get("draft"):
            d = part["draft"]
            print(f"draft: {d['base_ms']:.1f} ms per step, then per layer: "
                  + ", ".join(f"{p['width']} nodes {p['median_ms']:.1f} ms" for p in d["points"]))
    return 0


def cmd_sweep(args) -> int:
    methods = [m for m in parse_methods(args.methods) if m != "ar"]
    if "hf-assisted" in methods or "hf-lookup" in methods:
        raise BadInput("the sweep varies tree budgets: hf-assisted and hf-lookup belong in `bench`.")
    budgets = parse_numbers(args.budgets, int, "--budgets")
    thresholds = parse_numbers(args.thresholds, float, "--thresholds") if args.thresholds.strip() else []
    sizes = None if args.no_verify_cost else parse_numbers(args.cost_sizes, int, "--cost-sizes")
    if sizes and min(sizes) < 1:
        raise BadInput("--cost-sizes must be at least 1.")
    caps = {}
    for item in filter(None, (x.strip() for x in args.cap.split(","))):
        m, _, n = item.partition("=")
        caps[m.strip()] = parse_numbers(n, int, "--cap")[0]
    cost = None
    if args.cost_from:
        try:
            cost = json.loads(Path(args.cost_from).read_text(encoding="utf-8"))
            cost = cost.get("verify_cost", cost)
            assert cost["points"]
        except (OSError, json.JSONDecodeError, KeyError, TypeError, AssertionError):
            raise BadInput(f"--cost-from {args.cost_from}: not a verify-cost JSON.") from None
    if args.cost_prefix is not None and not args.cost_only:
        raise BadInput("--cost-prefix goes with --cost-only (the sweep times its curve after 128 tokens).")
    prefix = 128 if args.cost_prefix is None else args.cost_prefix
    if prefix < 1:
        raise BadInput("--cost-prefix must be at least 1.")
    if args.cost_only:
        if not sizes:
            raise BadInput("--cost-only needs --cost-sizes.")
        if args.threads:
            import torch  # torch stays out of `--help`

            torch.set_num_threads(args.threads)

        pair = load_pair(args.target, drafter="none", device=args.device, dtype=args.dtype)
        room = getattr(pair.target.config, "max_position_embeddings", None)
        if room and prefix + max(sizes) > room:
            raise BadInput(f"--cost-prefix {prefix} leaves no room for {max(sizes)} tree tokens within the "
                           f"target's {room} positions.")
        cost = verify_cost_curve(pair, tuple(sizes), prefix_tokens=prefix, reps=args.cost_reps,
                                 log=lambda msg: print(msg, file=sys.stderr, flush=True))
        if args.out:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(json.dumps(cost, indent=1), encoding="utf-8")
        if args.plot_dir:
            Path(args.plot_dir).mkdir(parents=True, exist_ok=True)
            plot_verify_cost(cost, Path(args.plot_dir) / "verify_cost.png")
        print("\n".join(f"{p['tokens']:>5} tokens: {p['median_ms']:8.1f} ms  ×{p['relative']:.2f}"
                        for p in cost["points"]))
        return 0
    check_warmup(args.warmup)   # before any model loads
    cfg, prompts, pair = _setup(args, need_draft=True)
    sweep_to_files(pair, prompts, cfg, methods, budgets, thresholds, args.threshold_nodes, sizes, args.cost_reps,
                   args.pool, args.out, args.plot_dir, args.warmup, chat=not args.no_chat,
                   max_minutes=args.max_minutes, caps=caps, cost=cost)
    return 0


def cmd_theory_table(args) -> int:
    ks = sorted(set(parse_numbers(args.ks, int, "--ks")))
    if not ks or min(ks) < 1 or max(ks) > 8:
        raise BadInput("--ks must be numbers of drafts between 1 and 8.")
    if not args.temperature:   # checked before any model is loaded
        raise BadInput("the theory table needs --temperature > 0 (default 0.7).")
    cfg, prompts, pair = _setup(args, need_draft=True)
    result = run_theory_table(pair, prompts, cfg, ks, chat=not args.no_chat, max_minutes=args.max_minutes)
    if sys.argv[1:2] == ["theory-table"]:   # the command line as typed (python -m opttree or the opttree script)
        prog = "python -m opttree" if sys.argv[0].endswith("__main__.py") else "opttree"
        result["meta"]["command"] = f"{prog} {shlex.join(sys.argv[1:])}"
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    if args.md:
        Path(args.md).parent.mkdir(parents=True, exist_ok=True)
        Path(args.md).write_text(theory_markdown(result), encoding="utf-8")
    print(markdown_table(result))
    return 0
