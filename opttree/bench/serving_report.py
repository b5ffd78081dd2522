"""`opttree serving`: the verify cost surface, the throughput model and its checks against real runs,
as one dated page (benchmarks/serving.md). The model is engine/batch_cost.py; this module runs the checks
and writes the page.

Two checks, one per axis of the model:
- batch size: real batched autoregressive decoding (B sequences of real prompt tokens, cut to a
  common length, one target forward of B × 1 tokens per step, greedy) timed per step against the
  model's verify(B, 1);
- tree size, at B = 1: real Sequoia runs of the engine at several n (the decoding loop, one
  sequence), their τ against the model's E(n) + 1 and their time per step (drafting, building and
  verifying, as the trace times them) against the model's verify(1, n + 1) + draft(n).
No batched speculative run is made (the engine decodes one sequence at a time), so the model's
product of the two axes, B sequences each with a tree, is not measured.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import replace

import torch

from opttree.bench.env import machine_info, note_load
from opttree.config import DecodeConfig
from opttree.decoding.kv_cache import new_cache
from opttree.decoding.prompts import encode_prompt
from opttree.engine import batch_cost
from opttree.engine.batch_verdict import NEAR_EVEN, where_it_pays
from opttree.engine.cost import sync
from opttree.engine.speculative import run, run_acceptance
from opttree.models.loading import last_logits_only
from opttree.trees.sequoia import expected_accepted

CHECK_NODES = (4, 8, 16, 25)
CHECK_CONFIG = DecodeConfig(method="sequoia", nodes=8, max_depth=batch_cost.MODEL_DEPTH, max_new_tokens=64,
                            temperature=0.0)


@torch.inference_mode()
def batched_ar(pair, prompt_ids: list[list[int]], batch: int, steps: int, clock=time.perf_counter) -> dict:
    """Greedy decoding of `batch` sequences at once for `steps` steps: ms per step (median, fastest)."""
    target, device = pair.target, pair.device
    length = min(len(p) for p in prompt_ids)      # one prefix length for every batch size
    rows = [prompt_ids[i % len(prompt_ids)][:length] for i in range(batch)]
    cache = new_cache(target)
    out = target(input_ids=torch.tensor(rows, device=device), past_key_values=cache, use_cache=True,
                 **last_logits_only(target))
    nxt = out.logits[:, -1].argmax(-1, keepdim=True)
    times = []
    for _ in range(steps):
        t0 = clock()
        out = target(input_ids=nxt, past_key_values=cache, use_cache=True)
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
        sync(device)
        times.append((clock() - t0) * 1e3)
    return {"batch": batch, "prefix_tokens": length, "steps": steps, "median_ms": round(statistics.median(times), 3),
            "best_ms": round(min(times), 3)}


def check_batches(pair, surface: dict, prompt_ids: list[list[int]], batches, steps: int = 24) -> list[dict]:
    """Batched AR measured per step against the model's verify(B, 1)."""
    rows = []
    for b in batches:
        m = batched_ar(pair, prompt_ids, b, steps)
        m["modelled_ms"] = round(batch_cost.verify_ms(surface, b, 1), 3)
        m["measured_over_modelled"] = round(m["median_ms"] / m["modelled_ms"], 3) if m["modelled_ms"] else None
        rows.append(m)
    return rows


def check_trees(pair, surface: dict, questions: list[dict], nodes=CHECK_NODES, cfg: DecodeConfig = CHECK_CONFIG,
                log=None) -> list[dict]:
    """Real one-sequence Sequoia runs at each n against the model's τ and step time at B = 1."""
    acceptance = run_acceptance(pair)[0]
    rows = []
    for n in nodes:
        c = replace(cfg, nodes=n)
        tokens = steps = 0
        step_ms: list[float] = []
        for q in questions:
            trace = run(pair, q["turns"][0], c, record_target=False)
            tokens += trace["summary"]["new_tokens"]
            steps += trace["summary"]["steps"]
            step_ms += [s["draft_ms"] + s["build_ms"] + s["verify_ms"] for s in trace["steps"]]
        model = batch_cost.model_point(surface, acceptance, n, 1, c.max_depth)
        rows.append({"nodes": n, "tau": round(tokens / max(1, steps), 3),
                     "modelled_tau": round(expected_accepted(acceptance, n, c.max_depth) + 1, 3),
                     "step_ms": round(statistics.median(step_ms), 3), "modelled_step_ms": model["step_ms"]})
        if log:
            log(f"check n={n}: τ {rows[-1]['tau']} (model {rows[-1]['modelled_tau']}), "
                f"{rows[-1]['step_ms']} ms/step (model {rows[-1]['modelled_step_ms']})")
    return rows


def serving_data(pair, surface: dict, questions: list[dict], tree_prompts: int = 4,
                 batches=batch_cost.SURFACE_BATCHES, chat: bool = True, log=None) -> dict:
    """Everything the page shows: machine, surface, model table, best tree per batch, both checks
    (batched AR over all `questions`, the tree check over the first `tree_prompts`)."""
    acceptance, source = run_acceptance(pair)
    info = machine_info(pair.device)
    ids = [encode_prompt(pair.tokenizer, q["turns"][0], chat=chat) for q in questions]
    table = batch_cost.model_table(surface, acceptance)
    data = {"machine": info, "target": pair.target_name, "drafter": pair.drafter_kind, "draft": str(pair.draft_name),
            "acceptance_by_rank": list(acceptance), "acceptance_source": source, "surface": surface,
            "model": table, "best_by_batch": batch_cost.best_by_batch(table),
            "check_batches": check_batches(pair, surface, ids, batches),
            "check_trees": check_trees(pair, surface, questions[:tree_prompts], log=log),
            "check_prompts": [q["question_id"] for q in questions], "tree_prompts": tree_prompts}
    note_load(info)
    return data


def _surface_table(surface: dict) -> list[str]:
    tokens = sorted({p["tokens"] for p in surface["points"]})
    lines = ["| B \\ T | " + " | ".join(str(t) for t in tokens) + " |", "|---" * (len(tokens) + 1) + "|"]
    for b in sorted({p["batch"] for p in surface["points"]}):
        ms = {p["tokens"]: p["best_ms"] for p in surface["points"] if p["batch"] == b}
        lines.append(f"| {b} | " + " | ".join(f"{ms[t]:.1f}" for t in tokens) + " |")
    return lines


def _model_table(data: dict) -> list[str]:
    table = data["model"]
    nodes = sorted({r["nodes"] for r in table})
    lines = ["| B \\ n | " + " | ".join(str(n) for n in nodes) + " | best n |", "|---" * (len(nodes) + 2) + "|"]
    for b in sorted({r["batch"] for r in table}):
        cells = {r["nodes"]: r for r in table if r["batch"] == b}
        best = data["best_by_batch"][b]
        lines.append(f"| {b} | " + " | ".join(f"×{cells[n]['speedup']:.2f}" for n in nodes)
                     + f" | {best['nodes']} ({best['tokens_per_s']:.0f} tok/s) |")
    return lines


def serving_markdown(data: dict, command: str) -> str:
    """The dated page: what was measured, the model, where speculation stops paying, the checks."""
    m, s = data["machine"], data["surface"]
    device = m.get("gpu") or f"{m.get('cpu')}, {m.get('torch_threads')} torch threads"
    best = data["best_by_batch"]
    a = ", ".join(f"{x:.3f}" for x in data["acceptance_by_rank"])
    lines = [f"# Speculation in a batch: {device}", "",
             f"{m.get('date_utc')} · {data['target']} + {data['drafter']} draft · `{command}`", "",
             "**This is a model built from measurements**, not a measured batched speculative run: the verify cost "
             "surface below is measured on this machine, the acceptance vector on held-out training prompts; their "
             "product (B sequences, each with a Sequoia tree) is modelled (opttree/engine/batch_cost.py).", "",
             f"Acceptance by rank ({data['acceptance_source']}): {a}.", "",
             f"## Verify cost surface (ms, fastest of {s['reps']}; prefix {s['prefix_tokens']} tokens per "
             "sequence)", "",
             *_surface_table(s), "",
             "## Modelled speedup over AR at the same batch size, by Sequoia tree size n", "",
             "tokens/s = B·(E(n)+1) / (verify(B, n+1) + B·draft(n)); E(n) from the Sequoia DP, draft(n) per sequence "
             "from the draft's cost curve.", "", *_model_table(data), "",
             where_it_pays(best) + f" (A tree pays at B where its best n > 0 is more than ×{NEAR_EVEN:.2f} AR.)"]
    lines += ["", "## Checks against real runs", "",
              f"Batched AR, time per step ({len(data['check_prompts'])} held-out training prompts cut to one length, "
              "greedy; the model's surface has its own prefix length):", "",
              "| B | prefix | measured ms | modelled verify(B,1) ms | measured/modelled |", "|---|---|---|---|---|"]
    lines += [f"| {r['batch']} | {r['prefix_tokens']} | {r['median_ms']:.1f} | {r['modelled_ms']:.1f} | "
              f"{r['measured_over_modelled']} |" for r in data["check_batches"]]
    lines += ["", f"Sequoia at B = 1 (the engine, {data['tree_prompts']} held-out training prompts, "
              f"{CHECK_CONFIG.max_new_tokens} new tokens each):", "",
              "| n | τ measured | τ modelled (E+1) | ms/step measured | ms/step modelled |", "|---|---|---|---|---|"]
    lines += [f"| {r['nodes']} | {r['tau']} | {r['modelled_tau']} | {r['step_ms']:.1f} | {r['modelled_step_ms']:.1f} |"
              for r in data["check_trees"]]
    lines += ["", f"Load average {m.get('load_avg_at_start')} at start, {m.get('load_avg_at_end')} at the end. "
              + str(m.get("noise", ""))]
    return "\n".join(lines) + "\n"
