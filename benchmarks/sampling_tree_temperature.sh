#!/usr/bin/env bash
# Which tree temperature should a sampled run draft at? The feature head at n = 60 and at the auto budget, T = 0.4
# and 0.7, each drafting at tree temperature 1 (the default when sampling) and at the run's own temperature (the
# sharper q a draft distilled at T = 1 would give if it were right), on the eval set's prompts (the design set),
# 128 new tokens, the same seed: every run commits AR's tokens, so only the trees differ. Writes
# benchmarks/sampling_tree_temperature/T<T>_tt<tree temperature>.{json,log} and prints the paired table that
# benchmarks/sampling_tree_temperature.md quotes.   THREADS=2 LIMIT=16 TOKENS=128 TEMPS="0.4 0.7"
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}; OUT=benchmarks/sampling_tree_temperature; mkdir -p "$OUT"
for T in ${TEMPS:-0.4 0.7}; do
  for TT in 1 "$T"; do
    [ -f "$OUT/T${T}_tt${TT}.json" ] && [ -z "${AGAIN:-}" ] && continue
    PYTHONPATH=. $PY -m opttree bench --device cpu --threads "${THREADS:-2}" --prompts opttree/assets/prompts/eval.jsonl \
      --limit "${LIMIT:-16}" --methods ar,opt-tree@60,opt-tree@auto --drafter eagle --max-depth 10 --threshold 0.5 \
      --temperature "$T" --tree-temperature "$TT" --seed 0 --max-new-tokens "${TOKENS:-128}" --warmup 1 \
      --out "$OUT/T${T}_tt${TT}.json" > "$OUT/T${T}_tt${TT}.log" 2>&1
  done
done
# Speed at the auto budget, T = 0.7, on a quiet machine (2 threads): each tree temperature beside AR in its own run.
for TT in 1 0.7; do
  [ -f "$OUT/speed_tt${TT}.json" ] && [ -z "${AGAIN:-}" ] && continue
  PYTHONPATH=. $PY -m opttree bench --device cpu --threads 2 --prompts opttree/assets/prompts/eval.jsonl \
    --limit "${LIMIT:-16}" --methods ar,opt-tree@auto --drafter eagle --max-depth 10 --threshold 0.5 \
    --temperature 0.7 --tree-temperature "$TT" --seed 0 --max-new-tokens "${TOKENS:-128}" --warmup 1 \
    --out "$OUT/speed_tt${TT}.json" > "$OUT/speed_tt${TT}.log" 2>&1
done
PYTHONPATH=. $PY - "$OUT" ${TEMPS:-0.4 0.7} <<'PYEOF'
import json, sys
from pathlib import Path
from opttree.bench.verdict import mean_se
out, temps = Path(sys.argv[1]), sys.argv[2:]
print("| T | method | τ at tree temperature 1 (mean over prompts) | τ at the run's T (mean over prompts) | paired Δτ (± SE) | E(A) : accepted at 1 | E(A) : accepted at T | same output |")
print("|---|---|---|---|---|---|---|---|")
for t in temps:
    runs = {tt: {(r["prompt_id"], r["method"]): r for r in json.loads((out / f"T{t}_tt{tt}.json").read_text())["runs"]}
            for tt in ("1", t)}
    for method in ("opt-tree@60", "opt-tree@auto"):
        keys = sorted(k for k in runs["1"] if k[1] == method)
        one, own = [runs["1"][k] for k in keys], [runs[t][k] for k in keys]
        d, se = mean_se([b["tau"] - a["tau"] for a, b in zip(one, own)])
        tau1, _ = mean_se([a["tau"] for a in one]); taut, _ = mean_se([b["tau"] for b in own])
        ea = [f'{mean_se([r["mean_expected_accept"] for r in rs])[0]:.2f} : {mean_se([r["mean_accepted_draft_tokens"] for r in rs])[0]:.2f}'
              for rs in (one, own)]
        same = sum(a["output_ids"] == b["output_ids"] for a, b in zip(one, own))
        print(f"| {t} | {method} | {tau1:.3f} | {taut:.3f} | {d:+.3f} ± {se:.3f} | {ea[0]} | {ea[1]} | {same}/{len(keys)} |")
print()
print("| T = 0.7, auto budget | τ (pooled) | nodes a step | speedup over AR (pooled) | per prompt (mean ± SE) |")
print("|---|---|---|---|---|")
for tt in ("1", "0.7"):
    m = json.loads((out / f"speed_tt{tt}.json").read_text())
    auto = m["methods"]["opt-tree@auto"]
    ar = {r["prompt_id"]: r["tokens_per_s"] for r in m["runs"] if r["method"] == "ar"}
    mean, se = mean_se([r["tokens_per_s"] / ar[r["prompt_id"]] for r in m["runs"] if r["method"] == "opt-tree@auto"])
    print(f"| tree temperature {tt} | {auto['tau']:.3f} | {auto['mean_nodes']:.1f} | {auto['speedup']:.2f}× | "
          f"{mean:.2f}× ± {se:.2f} |")
PYEOF
