"""Write `benchmarks/README.md` from a bench result and a sweep result (both JSON).

`python -m opttree.bench.report --bench B.json --sweep S.json --out benchmarks/README.md
[--notes NOTES.md] [--label TEXT] [--cost C.json] [--theory T.json]`: machine facts, the method table,
per-category τ/speedup, the sweep curves, E(A) vs A, the verify-cost curve, the best budget, a check of
the project's goals (met / not met, with the measured numbers), the decoder's cost curve (`--cost`)
and, when a `theory-table` result file is given and present, the multi-draft acceptance table.
Hand-written analysis goes in the notes file.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from opttree.bench.plots import plot_node_sweep, plot_threshold_sweep
from opttree.bench.sweep import best_budget
from opttree.bench.theory_table import markdown_table
from opttree.bench.verdict import verdict
from opttree.errors import guarded
from opttree.nets.few_row_linear import MKL, ONEDNN, PLAIN
from opttree.trace import by_depth_text, draft_weights, percent


def fmt(x, spec=".2f", dash="–"):
    """A number for a report table, or a dash when there is none."""
    return format(x, spec) if isinstance(x, (int, float)) else dash


def _r(x):
    return f"{x:.3f}" if isinstance(x, (int, float)) else "n/a (constant A or E(A))"


def pct(x):
    """A share as a whole percentage, or a dash."""
    return percent(x, " ") if isinstance(x, (int, float)) else "–"


def choice_text(choice: dict | None) -> str:
    """A kernel choice ({shape: {kernel: rows}}, nets/kernel_choice.py) in words."""
    if not choice:
        return "oneDNN at every row count"
    names = {PLAIN: "`F.linear`", MKL: "MKL packed", ONEDNN: "oneDNN"}
    parts = [f"{shape}: " + ", ".join(f"{names.get(k, k)} at {', '.join(map(str, rows))} rows"
                                      for k, rows in by.items()) for shape, by in choice.items()]
    return "; ".join(parts) + "; oneDNN elsewhere"


def _met(value: float | None, goal: float) -> str:
    """Whether a measured ratio reaches its goal; "not measured" where there is none (AR timed at 0 s)."""
    if not isinstance(value, (int, float)):
        return "not measured"
    return "yes" if value >= goal else f"no (short by {goal - value:.2f}×)"


def _times(x) -> str:
    """A ratio as '1.45×', or a dash where none was measured."""
    return f"{fmt(x)}×" if isinstance(x, (int, float)) else "–"


def machine_lines(meta: dict) -> list[str]:
    m = meta["machine"]
    return [
        f"- **Date**: {m['date_utc']}",
        f"- **Device**: `{m['device']}`" + (f" ({m['gpu']})" if m.get("gpu") else
                                          f" — CPU **{m['cpu']}**, {m['cpu_count']} cores, "
                                          f"torch threads **{m['torch_threads']}**"),
        f"- **Software**: torch {m['torch']}, transformers {m['transformers']}, Python {m['python']}",
        f"- **Load average** (1/5/15 min) at start {m.get('load_avg_at_start')}, at end {m.get('load_avg_at_end')}",
        f"- **Noise**: {m['noise']}",
    ]


def bench_section(b: dict) -> list[str]:
    meta, cfg = b["meta"], b["meta"]["config"]
    out = ["## Methods side by side (`bench`)", "",
           f"Target `{meta['target']}` ({meta['dtype']}), tree methods drafted by the **{meta['drafter']}** draft "
           f"`{Path(str(meta['draft'])).name}`; hf-assisted assistant `{Path(str(meta.get('assistant'))).name}`. "
           f"{meta['prompts']} prompts, T={cfg['temperature']}, {cfg['max_new_tokens']} new tokens max, node budget "
           f"n={cfg['nodes'] or 'auto'}, δ={cfg['threshold']}, max depth {cfg['max_depth']}; "
           f"{meta['warmup_runs']} warm-up prompt(s); {meta['order']}. Run took {meta.get('bench_wall_s')} s."
           + (f" **Stopped early**: {meta['stopped_early']}." if meta.get("stopped_early") else ""), "",
           "| method | τ | tokens/s | speedup vs AR | median per-prompt speedup | exact match with AR | "
           "draft ms/step | build ms/step | verify ms/step | draft + build share | nodes | depth | E(A) | "
           "accepted draft tokens | draft acceptance rate | acceptance by depth 1, 2, 3, … |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for m, a in b["methods"].items():
        out.append(f"| {m} | {fmt(a['tau'])} | {fmt(a['tokens_per_s'], '.1f')} | {fmt(a['speedup'])}× | "
                   f"{fmt(a['speedup_median'])}× | {pct(a['exact_match'])} | {fmt(a['mean_draft_ms'], '.1f')} | "
                   f"{fmt(a['mean_build_ms'], '.1f')} | {fmt(a['mean_verify_ms'], '.1f')} | "
                   f"{pct(a.get('draft_share'))} | "
                   f"{fmt(a['mean_nodes'], '.1f')} | {fmt(a['mean_depth'])} | {fmt(a['mean_expected_accept'])} | "
                   f"{fmt(a['mean_accepted_draft_tokens'])} | {pct(a.get('draft_acceptance_rate'))} | "
                   f"{by_depth_text(a.get('acceptance_by_depth'))} |")
    said = verdict(b) if b.get("runs") else ""
    if said:
        out += ["", f"**Verdict** (from the per-prompt spread: a difference counts beyond two standard errors of "
                f"its paired mean; `opttree/bench/verdict.py`, the same words the app's Compare tab prints): {said}"]
    out += ["", "τ = committed tokens per target forward, bonus token included (Spec-Bench/EAGLE convention, "
            "AR = 1). For hf-assisted every target forward is counted with a forward hook. Tokens/s = all "
            "of a method's new tokens over all its runs' time, each run timed whole, the prompt's prefill included "
            "(drafting shortens the steps, not the prefill); speedup = that over AR's tokens/s on the same "
            "prompts in the same run. `@auto` = the auto node budget: each step's depth and size "
            "chosen from the machine's cost curve (below). Draft + build share = the part of a step's time "
            "spent drafting and building the tree. E(A) = expected accepted draft tokens per step (from p̂); "
            "accepted draft tokens = what the target committed per step (τ − 1); draft acceptance rate = "
            "accepted / verified draft tokens (a wide tree verifies many it cannot all accept); acceptance "
            "by depth d = of the steps whose tree reached depth d, the share that accepted a token there "
            "(vLLM's per-position rate).", ""]
    hf = meta.get("hf_assisted_config")
    if hf:
        adapt = ("adapting" if hf["confidence_threshold_adapts"]
                 else "fixed: scikit-learn is not installed, so it does not adapt")
        out += [f"hf-assisted configuration (set on the assistant's `generation_config`, where transformers 5.x "
                f"reads it): `num_assistant_tokens={hf['num_assistant_tokens']}`, "
                f"`num_assistant_tokens_schedule=\"{hf['num_assistant_tokens_schedule']}\"`, "
                f"`assistant_confidence_threshold={hf['assistant_confidence_threshold']}` "
                f"({adapt}); "
                "greedy, batch 1. These are the library's defaults for an assistant"
                + ("; the assistant ran on int8 weights." if meta.get("assistant_kernel") == "int8" else "."), ""]
    out += ["![τ and speedup per method](bench.png)", "", "### Per category", "",
            "| category | " + " | ".join(f"{m} τ / speedup" for m in b["methods"] if m != "ar") + " |",
            "|---|" + "---|" * (len(b["methods"]) - 1)]
    for cat, by_m in b["by_category"].items():
        out.append(f"| {cat} | " + " | ".join(f"{fmt(a['tau'])} / {fmt(a['speedup'])}×"
                                              for m, a in by_m.items() if m != "ar") + " |")
    out.append("")
    return out


def sweep_section(s: dict) -> list[str]:
    meta, cfg = s["meta"], s["meta"]["config"]
    budgets = meta["budgets"]
    out = ["## Node-budget sweep (`sweep`)", "",
           f"{meta['prompts']} prompts × {cfg['max_new_tokens']} new tokens, δ={cfg['threshold']}, max depth "
           f"{cfg['max_depth']}, {meta['drafter']} draft; AR measured in the same run (τ 1, "
           f"{fmt(s['ar']['tokens_per_s'], '.1f')} tokens/s). Run took {meta.get('sweep_wall_s')} s. "
           "`pred.` = τ · t(1) / (t(nodes+1) + draft + build): the speedup the verify-cost curve predicts. "
           "EAGLE-25 (eagle-static) stops at 25 nodes, so larger budgets repeat its n=25 point."
           + (" Not run above a cap (too slow on this device): " + ", ".join(f"{m} > {n}" for m, n in
                                                                            meta["caps"].items()) + "."
              if meta.get("caps") else "")
           + (f" **Stopped early**: {meta['stopped_early']}." if meta.get("stopped_early") else ""), "",
           "| method | " + " | ".join(f"n={n} τ" for n in budgets) + " | " +
           " | ".join(f"n={n} speedup (pred.)" for n in budgets) + " |",
           "|---|" + "---|" * (2 * len(budgets))]
    for m, pts in s["nodes"]["curves"].items():
        at = {p["nodes"]: p for p in pts}
        out.append(f"| {m} | " + " | ".join(fmt(at[n]["tau"]) if n in at else "–" for n in budgets) + " | " +
                   " | ".join(f"{fmt(at[n]['speedup'])}× ({fmt(at[n].get('predicted_speedup'))}×)" if n in at else "–"
                              for n in budgets) + " |")
    out += ["", "![τ vs nodes](sweep_tau_vs_nodes.png) ![speedup vs nodes](sweep_speedup_vs_nodes.png)", ""]
    thr = s["threshold"]["points"]
    if thr:
        out += [f"### OPT-Tree vs δ (n={s['threshold']['nodes']})", "",
                "| δ | τ | speedup | mean depth | mean nodes | E(A) | accepted draft tokens |",
                "|---|---|---|---|---|---|---|"]
        for p in thr:
            out.append(f"| {p['threshold']:g} | {fmt(p['tau'])} | {fmt(p['speedup'])}× | {fmt(p['mean_depth'])} | "
                       f"{fmt(p['mean_nodes'], '.1f')} | {fmt(p['mean_expected_accept'])} | "
                       f"{fmt(p['mean_accepted_draft_tokens'])} |")
        out += ["", "![δ sweep](sweep_threshold.png)", ""]
    out += ea_section(s.get("ea_a_pooled") or s["ea_a_summary"])
    cost = s.get("verify_cost")
    if cost:
        pts = cost["points"]
        out += ["## Verify cost on this device", "",
                f"One target forward over a tree of k tokens (root included) after a {cost['meta']['prefix_tokens']}-"
                f"token KV prefix, median of {cost['meta']['reps']} interleaved repetitions:", "",
                *_curve_rows("tokens", pts, ".0f")]
        for key, label, short in (("plain", "plain F.linear", "plain"), ("onednn_only", "oneDNN kernel only",
                                                                          "oneDNN only"),
                                  ("mkl_only", "MKL packed GEMM only", "MKL only"),
                                  ("copy_kv", "KV heads copied", "copied")):
            if f"{key}_median_ms" in pts[0]:   # the same forwards on another kernel (verify_cost.py)
                out += [f"| {label}: ms | " + " | ".join(fmt(p[f"{key}_median_ms"], ".0f") for p in pts) + " |",
                        f"| {short}: × 1-token | " + " | ".join(fmt(p[f"{key}_relative"]) for p in pts) + " |"]
        if "plain_median_ms" in pts[0]:
            out += ["", "The first two rows use the CPU kernels the engine runs with, the fastest this machine "
                    "measured for each layer shape and row count (`opttree/nets/kernel_choice.py`: "
                    + choice_text(cost["meta"].get("kernels")) + "); the other kernel rows time the same "
                    "forwards, in the same repetitions, with one kernel at every row count: plain `F.linear` "
                    "(MKL's GEMV for one row, its GEMM for more), oneDNN's inner product over weights reordered "
                    "once, MKL's GEMM over weights packed once. Every × row is relative to the first row's "
                    "1-token forward, the one AR decodes with."]
        if "copy_kv_median_ms" in pts[0]:
            out += ["", "The copied rows time the same forwards with transformers' SDPA, which copies every layer's "
                    "KV cache once per query head of a group before a masked forward over several tokens; the "
                    "engine folds each group's query heads onto their shared KV head instead "
                    "(`opttree/nets/grouped_attention.py`)."]
        out += ["", "![verify cost](verify_cost.png)", ""]

    pred = best_budget(s["nodes"]["curves"].get("opt-tree", []), "predicted_speedup")
    meas = best_budget(s["nodes"]["curves"].get("opt-tree", []), "speedup")
    if pred:
        out += [f"**Best OPT-Tree budget on this machine (by the speedup the verify-cost curve predicts): "
                f"n = {pred['nodes']}** (predicted {fmt(pred['predicted_speedup'])}×, τ {fmt(pred['tau'])}).", ""]
    if meas:
        out += [f"By the sweep's measured speedup: n = {meas['nodes']} ({fmt(meas['speedup'])}×; see the notes "
                "on how far the sweep's own timings can be trusted).", ""]
    return out


def ea_section(ea: dict) -> list[str]:
    """E(A) vs A as the paper's Figure 4 reads: binned calibration per method, per-step r beside it."""
    out = ["## E(A) vs A", "",
           f"The tree's expected acceptance E(A) = Σ p̂ against the measured accepted length A over "
           f"**{ea['steps']} verification steps that drafted a tree** "
           f"(sources: {', '.join(ea.get('sources', ['sweep']))}). A is a "
           "small integer per step, so the per-step Pearson r is held down by that rounding; the paper's view is "
           "the density over steps, and calibration is read from the **mean A per E(A) decile**: the binned r is "
           "the Pearson r between those means, the slope their least-squares slope (1 = calibrated, below 1 = "
           f"E(A) over-predicts). Pooled: **binned r = {_r(ea.get('binned_r'))}** (the paper reads r > 0.95 over "
           f"1,000 steps), slope {_r(ea.get('slope'))}, per-step r {_r(ea['pearson_r'])}.", "",
           "| method | binned r (E(A) deciles) | slope | per-step r | steps |", "|---|---|---|---|---|"]
    for m, v in ea["by_method"].items():
        out.append(f"| {m} | {_r(v.get('binned_r'))} | {_r(v.get('slope'))} | {_r(v['pearson_r'])} | {v['steps']} |")
    return out + ["", "![E(A) vs A: density and decile means per method](ea_vs_a.png)", ""]


def _curve_rows(head: str, pts: list[dict], ms_spec: str) -> list[str]:
    """A cost curve as table rows: tokens, median ms, and × the 1-token forward."""
    return ["| " + head + " | " + " | ".join(str(p["tokens"]) for p in pts) + " |", "|---|" + "---|" * len(pts),
            "| ms | " + " | ".join(fmt(p["median_ms"], ms_spec) for p in pts) + " |",
            "| × 1-token forward | " + " | ".join(fmt(p["relative"]) for p in pts) + " |"]


def cost_section(curve: dict) -> list[str]:
    """The decoder's cost curve (engine/cost.py), the auto budget's input."""
    pts, key = curve["points"], curve["key"]
    isa = f"{key['isa']}, " if key.get("isa") else ""
    load = f" (load average {curve['load_avg'][0]})" if curve.get("load_avg") else ""
    kernel = f"{key['kernel']} kernel" + (f" ({choice_text(key['kernels'])})" if key.get("kernels") else "")
    out = ["## What a forward costs here (the auto budget's input)", "",
           f"`opttree cost` on {key['device_name']} ({isa}{key['dtype']}, {key['threads']} threads, {kernel}), "
           f"{curve['measured_utc']}{load}, {curve['reps']} interleaved repetitions after a "
           f"{curve['prefix_tokens']}-token KV prefix, {curve['seconds']} s in all:", "",
           *_curve_rows("tokens per verify forward", pts, ".1f")]
    draft = curve.get("draft")
    if draft:
        dp = draft["points"]
        out += ["", f"Drafting{draft_weights(key)}: {fmt(draft['base_ms'], '.1f')} ms per step (the head over "
                f"the newly committed tokens), then per layer:", "",
                "| nodes in the layer | " + " | ".join(str(p["width"]) for p in dp) + " |",
                "|---|" + "---|" * len(dp), "| ms | " + " | ".join(fmt(p["median_ms"], ".1f") for p in dp) + " |"]
    longer = curve.get("longer")
    if longer:
        out += ["", f"The same after a {longer['prefix_tokens']}-token prefix (a long prompt; the auto budget takes "
                f"each step's costs linear in its prefix between the two):", "",
                *_curve_rows("tokens per verify forward", longer["points"], ".1f")]
    return out + ["", "![cost curve](cost_curve.png)", ""]


def _ordering_row(vals: dict, n, source: str) -> str | None:
    """'OPT-Tree > EAGLE-25 > binary' in τ at budget n, from one source (a bench or the sweep)."""
    if any(vals.get(m) is None for m in ("opt-tree", "eagle-static", "binary")):
        return None
    ok = vals["opt-tree"] > vals["eagle-static"] > vals["binary"]
    return (f"| τ: OPT-Tree > EAGLE-25 > binary at n={n} ({source}) | {fmt(vals['opt-tree'])} / "
            f"{fmt(vals['eagle-static'])} / {fmt(vals['binary'])} | {'yes' if ok else 'no'} |")


def _bench_ordering(b: dict) -> str | None:
    ms = b["methods"]
    n_prompts = len({r["prompt_id"] for r in b.get("runs", [])}) or "?"
    return _ordering_row({m: (ms.get(m) or {}).get("tau") for m in ("opt-tree", "eagle-static", "binary")},
                         b["meta"]["config"]["nodes"], f"bench, {n_prompts} prompts")


def targets_section(b: dict | None, s: dict | None, also: list[dict] = ()) -> list[str]:
    out = ["## Goals, checked", "",
           "Read on the project's own eval prompts (written here, as the drafts' training prompts were); what the "
           "same drafts reach on public questions nobody here wrote is in [public.md](public.md).", "",
           "| goal | measured | met? |", "|---|---|---|"]
    if b:
        ms = b["methods"]
        ots = [m for m in ms if m.split("@")[0] == "opt-tree"]
        best = max(ots, key=lambda m: ms[m]["speedup"] or 0, default=None)
        ot, hf = ms.get(best) if best else None, ms.get("hf-assisted")
        auto = ms.get("opt-tree@auto") or (ms.get("opt-tree") if b["meta"]["config"].get("nodes") == 0 else None)
        if auto:
            out.append(f"| OPT-Tree auto ≥ 1.8× over AR (bench) | {_times(auto['speedup'])} | "
                       f"{_met(auto['speedup'], 1.8)} |")
            if hf and hf.get("tokens_per_s"):
                ratio = auto["tokens_per_s"] / hf["tokens_per_s"]
                out.append(f"| OPT-Tree auto ≥ 1.3× transformers assisted generation (same run) | {fmt(ratio)}× | "
                           f"{_met(ratio, 1.3)} |")
        if ot:
            n = best.split("@")[1] if "@" in best else b["meta"]["config"]["nodes"]
            said = ("not measured" if ot["speedup"] is None
                    else f"{'faster' if ot['speedup'] > 1 else 'slower'} than AR")
            out.append(f"| fastest OPT-Tree variant (`{best}`, n={n}) over AR | {_times(ot['speedup'])} | {said} |")
        for m, a in ms.items():
            if m != "ar" and a.get("draft_share") is not None:
                out.append(f"| draft + build ≤ 30 % of step time (`{m}`) | {pct(a['draft_share'])} | "
                           f"{'yes' if a['draft_share'] <= 0.30 else 'no'} |")
        tree = [m for m in ms if m not in ("ar", "hf-assisted")]
        exact = [ms[m]["exact_match"] for m in tree if ms[m]["exact_match"] is not None]
        if exact:
            out.append("| exact match with AR = 100 % for every tree method | "
                       + ", ".join(f"{m} {pct(ms[m]['exact_match'])}" for m in tree)
                       + f" | {'yes' if all(e == 1.0 for e in exact) else 'no'} |")
    out += [row for row in map(_bench_ordering, [x for x in (b, *also) if x]) if row]
    if s:
        curves = s["nodes"]["curves"]
        for n in (25, 60):
            vals = {m: next((p["tau"] for p in curves.get(m, []) if p["nodes"] == n), None)
                    for m in ("opt-tree", "eagle-static", "binary")}
            row = _ordering_row(vals, n, "sweep")
            out += [row] if row else []
        ea = s.get("ea_a_pooled") or s["ea_a_summary"]
        binned = ea.get("binned_r")
        out.append(f"| binned E(A)–A r ≥ 0.95 (E(A) deciles, ≥ 1000 steps) | r = {_r(binned)} over {ea['steps']} steps "
                   f"(per-step r {_r(ea['pearson_r'])}) | {'yes' if (binned or 0) >= 0.95 else 'no'}"
                   f"{'' if ea['steps'] >= 1000 else ' (fewer steps than asked)'} |")
    return out + [""]


def theory_section(t: dict) -> list[str]:
    meta, cfg, m = t["meta"], t["meta"]["config"], t["meta"]["machine"]
    return ["## Optimal multi-draft acceptance (`theory-table`)", "",
            f"Hu et al.'s Table 1 schemes (the paper reads k = 3) on our models: target `{meta['target']}`, "
            f"{meta['drafter']} draft `{Path(str(meta['draft'])).name}`, OPT-Tree at n = {cfg['nodes']}, "
            f"temperature {cfg['temperature']}, "
            f"{meta['prompts']} prompts × {cfg['max_new_tokens']} new tokens max ({m['date_utc']}, {m['device']}). "
            "Each cell is the mean over recorded nodes of a scheme's chance that one of k drafts is accepted; the "
            "two optima bound every verifier of drafts sampled that way.", "", markdown_table(t), ""]


def write_report(bench: dict | None, sweep: dict | None, out, notes: str = "", label: str = "",
                 command: str = "", also: list[dict] = (), cost: dict | None = None,
                 theory: dict | None = None) -> str:
    meta = (bench or sweep or theory)["meta"]
    lines = ["# Benchmarks: OPT-Tree vs AR, hf-assisted and static trees", ""]
    if label:
        lines += [f"> **{label}**", ""]
    lines += ["## Machine", ""] + machine_lines(meta) + [
        "- **GPU**: every number below is CPU. The same commands take `--device cuda` "
        "(bf16/fp16 by default there; fp32 for the bundled target).", ""]
    if command:
        lines += ["Regenerate everything in this folder with one command:", "", "```", command, "```", ""]
    if notes:
        lines += [notes.strip(), ""]
    lines += targets_section(bench, sweep, also)
    if bench:
        lines += bench_section(bench)
    if cost:
        lines += cost_section(cost)
    if sweep:
        lines += sweep_section(sweep)
    if theory:
        lines += theory_section(theory)
    lines += ["## Files", "", "- `bench.json`: every run (per prompt × method, with output ids), aggregates, "
              "per-category aggregates, per-step (E(A), A) pairs, machine and settings.",
              "- `sweep.json`: the curves, δ sweep, verify-cost points, best budget, E(A)/A pairs.",
              "- `bench_n60.json` (when present): the second bench at n = 60 (ar, OPT-Tree, EAGLE-25, binary) "
              "behind the τ-ordering check at that budget.",
              *(["- `theory_table.json` / `theory_table.md`: the multi-draft acceptance table, its rows' settings "
                 "and machine."] if theory else []),
              "- `cost_curve.json` (when present): the decoder's cost curve (`opttree cost`), the auto budget's input.",
              "- `*.png`: the charts above.", ""]
    text = "\n".join(lines)
    Path(out).write_text(text, encoding="utf-8")
    return text


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m opttree.bench.report")
    p.add_argument("--bench", default=None)
    p.add_argument("--sweep", default=None)
    p.add_argument("--out", required=True)
    p.add_argument("--notes", default=None, help="markdown file with hand-written analysis to include")
    p.add_argument("--label", default="", help="a banner line (e.g. which drafts were used)")
    p.add_argument("--command", default="", help="the regeneration command to show")
    p.add_argument("--plot-dir", default=None, help="redraw the sweep's curves here")
    p.add_argument("--cost", default=None, help="the decoder's cost curve JSON (`opttree cost --out`)")
    p.add_argument("--also-bench", action="append", default=[],
                   help="another bench JSON (e.g. at n=60) whose τ ordering is checked too")
    p.add_argument("--theory", default=None, help="a `theory-table` result JSON: its table is included when present")
    args = p.parse_args(argv)
    b = json.loads(Path(args.bench).read_text()) if args.bench else None
    s = json.loads(Path(args.sweep).read_text()) if args.sweep else None
    if s and args.plot_dir:
        plot_node_sweep(s, args.plot_dir)
        plot_threshold_sweep(s, args.plot_dir)
    notes = Path(args.notes).read_text() if args.notes and Path(args.notes).exists() else ""
    also = [json.loads(Path(f).read_text()) for f in args.also_bench if Path(f).exists()]
    c = json.loads(Path(args.cost).read_text()) if args.cost and Path(args.cost).exists() else None
    t = json.loads(Path(args.theory).read_text()) if args.theory and Path(args.theory).exists() else None
    write_report(b, s, args.out, notes, args.label, args.command, also, cost=c, theory=t)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(guarded(main))
