"""Optimal multi-draft acceptance on our models, schemes as rows as in Hu et al.'s Table 1 (ICLR 2025), which
reads k = 3 drafts; here k = 1..4 are the columns.

`opttree theory-table` runs OPT-Tree with a model pair on benchmark prompts at temperature 0.7 (the
paper's default) and, for every row the traces record (`topk_rows`: the root, the accepted nodes and
the likeliest other expanded nodes, at most 16 a step), computes each scheme's acceptance rate for
k = 1..4 drafts on that row's p and q (`opttree.theory.table.scheme_table`), then averages over the rows.

p is the target's sampling distribution at the run's temperature; q is the draft's own distribution
(sampling runs draft at tree temperature 1 unless a run sets another). A row holds each side's top 8 tokens with both
probabilities, so the rates use those tokens plus one bucket for all others (`opttree.theory.rows`:
the sampled schemes see the bucket as one token, the fixed-set rate p(set) is exact); the result
reports the bucket's mean mass.

Result JSON: meta (machine, models, settings, prompts, wall time, the command line), ks, rows (how many rows were
averaged), mean {scheme: [rate per k]}, mean_rest_p / mean_rest_q, tree_children (the target's mean
mass on a recorded node's own children in the tree, and their mean count), runs (per prompt: id,
category, steps, rows, τ).
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path

from opttree.bench.env import machine_info, note_load
from opttree.config import DecodeConfig
from opttree.decoding.prompts import encode_prompt
from opttree.engine.speculative import run
from opttree.errors import BadInput
from opttree.theory.rows import row_distributions, row_scheme_table
from opttree.theory.table import SCHEMES

DEFAULT_KS = (1, 2, 3, 4)
THEORY_TEMPERATURE = 0.7
SCHEME_NAMES = {
    "optimal_iid": "optimal, drafts i.i.d. (bound)",
    "optimal_wor": "optimal, drafts without replacement (bound)",
    "greedy_draft": "greedy drafts (top k−1 fixed + 1 sampled), optimal",
    "rrs_iid": "recursive rejection sampling, i.i.d.",
    "rrs_wor": "recursive rejection sampling, without replacement",
    "kseq": "K-SEQ (SpecTr)",
    "topk_set": "top-k of q as a fixed set + target-sample rule (this tool)",
}


def table_from_traces(traces: list[dict], ks=DEFAULT_KS) -> dict:
    """Mean of each scheme's rate per k over every recorded row of `traces` (pure: no model)."""
    ks = tuple(ks)
    sums = {name: [0.0] * len(ks) for name in SCHEMES}
    rows = 0
    rest_p = rest_q = 0.0
    child_mass, child_count, with_children = 0.0, 0, 0
    for trace in traces:
        for step in trace["steps"]:
            p_target = step.get("p_target")
            for row in step.get("topk_rows") or []:
                _, _, rp, rq = row_distributions(row)
                table = row_scheme_table(row, ks)
                for name in SCHEMES:
                    for i, v in enumerate(table[name]):
                        sums[name][i] += v
                rows += 1
                rest_p, rest_q = rest_p + rp, rest_q + rq
                kids = [j for j, par in enumerate(step["parents"]) if par == row["node"]]
                if kids and p_target:
                    child_mass += sum(p_target[j] for j in kids)
                    child_count += len(kids)
                    with_children += 1
    if not rows:
        raise BadInput("no recorded rows: the runs recorded no target/draft distributions (AR runs, or no steps).")
    return {"ks": list(ks), "rows": rows,
            "mean": {name: [round(v / rows, 4) for v in vals] for name, vals in sums.items()},
            "mean_rest_p": round(rest_p / rows, 4), "mean_rest_q": round(rest_q / rows, 4),
            "tree_children": {"rows": with_children,
                              "mean_target_mass": round(child_mass / with_children, 4) if with_children else None,
                              "mean_count": round(child_count / with_children, 2) if with_children else None}}


def run_theory_table(pair, prompts, base: DecodeConfig, ks=DEFAULT_KS, chat: bool = True, log=None,
                     max_minutes: float | None = None) -> dict:
    """Decode every prompt with OPT-Tree at `base`'s settings and tabulate the recorded rows."""
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    if base.greedy:
        raise BadInput("the theory table needs sampling (temperature > 0): drafts and verifiers are random there.")
    cfg = replace(base, method="opt-tree")
    meta = {"machine": machine_info(pair.device), "target": pair.target_name, "drafter": pair.drafter_kind,
            "draft": pair.draft_name, "dtype": str(pair.dtype).replace("torch.", ""),
            "config": cfg.to_dict(), "prompts": len(prompts)}
    traces, runs = [], []
    t_start = time.perf_counter()
    for i, prompt in enumerate(prompts):
        trace = run(pair, prompt.prompt, cfg, chat=chat, prompt_ids=encode_prompt(pair.tokenizer, prompt.prompt,
                                                                                  chat=chat))
        traces.append(trace)
        n_rows = sum(len(s.get("topk_rows") or []) for s in trace["steps"])
        runs.append({"prompt_id": prompt.id, "category": prompt.category, "steps": len(trace["steps"]),
                     "rows": n_rows, "tau": trace["summary"]["tau"]})
        log(f"prompt {i + 1}/{len(prompts)} [{prompt.category}] {len(trace['steps'])} steps, {n_rows} rows, "
            f"τ={trace['summary']['tau']:.2f}")
        if max_minutes and time.perf_counter() - t_start > 60 * max_minutes and i + 1 < len(prompts):
            meta["stopped_early"] = (f"time budget of {max_minutes:g} min reached after {i + 1} of "
                                     f"{len(prompts)} prompts")
            meta["prompts"] = i + 1
            log(meta["stopped_early"])
            break
    meta["decode_wall_s"] = round(time.perf_counter() - t_start, 1)
    if traces:
        meta["target_distribution"] = traces[0]["meta"].get("target_distribution")
        meta["tree_temperature"] = traces[0]["meta"].get("tree_temperature")
    result = {"meta": meta, **table_from_traces(traces, ks), "runs": runs}
    meta["wall_s"] = round(time.perf_counter() - t_start, 1)
    note_load(meta["machine"])
    return result


def markdown_table(result: dict) -> str:
    """Schemes as rows (as in the paper's Table 1), k as columns, with the rows' rest masses below."""
    ks = result["ks"]
    lines = ["| scheme | " + " | ".join(f"k = {k}" for k in ks) + " |", "|---|" + "---|" * len(ks)]
    for name in SCHEMES:
        vals = result["mean"][name]
        cell = (lambda v: f"**{v:.3f}**") if name.startswith("optimal") else (lambda v: f"{v:.3f}")
        lines.append(f"| {SCHEME_NAMES[name]} | " + " | ".join(cell(v) for v in vals) + " |")
    kids = result.get("tree_children") or {}
    notes = [f"Mean over **{result['rows']}** recorded rows. Each row keeps the target's and the draft's top 8 "
             f"tokens; the rest of the vocabulary is one bucket (mean mass p {result['mean_rest_p']:.3f}, "
             f"q {result['mean_rest_q']:.3f}) that the sampled schemes treat as a single token (the optima can "
             "only read high from that); the top-k set's p(set) is exact."]
    if kids.get("rows"):
        notes.append(f"At the {kids['rows']} recorded nodes that have children in OPT-Tree's own trees (mean "
                     f"{kids['mean_count']} children), the target's mass on those children, i.e. the chance a child "
                     f"is accepted there, is {kids['mean_target_mass']:.3f} on average.")
    return "\n".join(lines) + "\n\n" + " ".join(notes)


def theory_markdown(result: dict, command: str = "") -> str:
    """A stand-alone page for benchmarks/: machine, settings, the command (default: the one in meta), the table."""
    meta, cfg = result["meta"], result["meta"]["config"]
    command = command or meta.get("command", "")
    m = meta["machine"]
    device = f"`{m['device']}`" + (f" ({m['gpu']})" if m.get("gpu") else
                                   f" — CPU {m['cpu']}, {m['cpu_count']} cores, torch threads {m['torch_threads']}")
    out = ["# Optimal multi-draft acceptance on our models (schemes as in Hu et al.'s Table 1)", "",
           f"- **Date**: {m['date_utc']}", f"- **Device**: {device}",
           f"- **Software**: torch {m['torch']}, transformers {m['transformers']}, Python {m['python']}",
           f"- **Models**: target `{meta['target']}`, {meta['drafter']} draft `{Path(str(meta['draft'])).name}`",
           f"- **Settings**: OPT-Tree, n = {cfg['nodes']}, δ = {cfg['threshold']}, max depth {cfg['max_depth']}, "
           f"temperature {cfg['temperature']}, top-k {cfg['top_k'] or 'off'}, top-p {cfg['top_p']}, "
           f"{cfg['max_new_tokens']} new tokens max, seed {cfg['seed']}; {meta['prompts']} prompts "
           f"({', '.join(sorted({r['category'] for r in result['runs']}))})"
           + (f". **Stopped early**: {meta['stopped_early']}" if meta.get("stopped_early") else ""),
           f"- **p** is {meta.get('target_distribution')}; **q** is the draft's distribution at tree temperature "
           f"{meta.get('tree_temperature')}", f"- **Wall time**: {meta.get('wall_s')} s", ""]
    if command:
        out += ["Command:", "", "```", command, "```", ""]
    out += [markdown_table(result), "",
            "Each cell is the mean, over recorded nodes, of a scheme's chance that one of k drafts is accepted at "
            "that node (`opttree/theory/`). The two optima are bounds for drafts sampled from q (i.i.d. or "
            "without replacement): each verifier stays at or below its own. The last row is the rate of a fixed "
            "set of q's top k verified by the target-sample rule, p(set): optimal for that fixed set.", ""]
    return "\n".join(out)
