#!/usr/bin/env bash
# Regenerate benchmarks/: the cost curves (the decoder's, which the auto node budget reads, and the
# wide verify-cost sweep with both CPU kernels), the sweep (node budgets, δ, E(A) vs A), the bench
# (all methods interleaved per prompt, OPT-Tree at n, at 60 and at auto) and the README with the
# E(A)-vs-A calibration. `make bench` runs every step; STEP=cost|sweep|bench|bench60|report runs one.
# Knobs (environment):
#   DEVICE=auto|cpu|cuda  THREADS=1 (2 on a quiet machine: the committed bench; 1 when other jobs share the cores)
#   LIMIT=8 TOKENS=128 NODES=25 EXTRA=opt-tree@60,opt-tree@auto  (bench; EXTRA = extra methods at their own budget)
#   ORDER_NODES=60 (a second bench, ar/opt-tree/eagle-static/binary only, for the τ ordering at that budget; empty: skip)
#   BENCH_MINUTES / SWEEP_MINUTES: time budgets (stop after the prompt that crosses them)
#   SWEEP_LIMIT=3 SWEEP_TOKENS=64 BUDGETS=4,10,25,60,150,300,500 THRESHOLDS=0,0.2,0.5,1,2 CAP=binary=150
#   SWEEP_NICE=0..19 (run the sweep at low priority beside other jobs: τ is unaffected, timings are noisier)
#   DRAFTER=eagle  EA=<head file>  CLASSIC=<classic draft file>  OUT=benchmarks  LABEL=<banner line>
#   THEORY_LIMIT=8 THEORY_TOKENS=64 (STEP=theory: the multi-draft acceptance table at temperature 0.7, budget NODES)
#   STEP=compare (only when asked): the app's Compare tab at its defaults for COMPARE_PROMPT (default: the page's
#     Explore prompt), the command opttree/bench/compare.py writes: same prompts, methods, harness and verdict
#   STEP=serving (only when asked; docs/serving.md): Sequoia against the static shapes and OPT-Tree at n = 25
#     (SEQUOIA_LIMIT eval prompts, SEQUOIA_TOKENS each), OPT-Tree against its static stand-in at n = 25 and 60
#     (export-tree --method opt-tree), and the batched serving model with its checks (serving.md)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
DEVICE=${DEVICE:-auto}; THREADS=${THREADS:-1}; LIMIT=${LIMIT:-8}; TOKENS=${TOKENS:-128}
NODES=${NODES:-25}; THRESHOLD=${THRESHOLD:-0.5}; DEPTH=${DEPTH:-10}; EXTRA=${EXTRA-opt-tree@60,opt-tree@auto}
ORDER_NODES=${ORDER_NODES-60}
SWEEP_LIMIT=${SWEEP_LIMIT:-3}; SWEEP_TOKENS=${SWEEP_TOKENS:-64}; CAP=${CAP-binary=150}
BUDGETS=${BUDGETS:-4,10,25,60,150,300,500}; THRESHOLDS=${THRESHOLDS:-0,0.2,0.5,1,2}
DRAFTER=${DRAFTER:-eagle}; OUT=${OUT:-benchmarks}; STEP=${STEP:-all}; SWEEP_NICE=${SWEEP_NICE:-0}
EA_ARGS=(); [ -n "${EA:-}" ] && EA_ARGS=(--ea-model-path "$EA")
CL_ARGS=(); [ -n "${CLASSIC:-}" ] && CL_ARGS=(--assistant-model-path "$CLASSIC")
mkdir -p "$OUT"
export PYTHONPATH=.
COMMON=(--device "$DEVICE" --threads "$THREADS" --drafter "$DRAFTER" "${EA_ARGS[@]}"
        --threshold "$THRESHOLD" --max-depth "$DEPTH" --temperature 0)
step() { [ "$STEP" = all ] || [ "$STEP" = "$1" ]; }

if step cost; then
  # The decoder's own curve (cached where every run on this machine finds it; the bench reuses it).
  "$PY" -m opttree cost --refresh --device "$DEVICE" --threads "$THREADS" --drafter "$DRAFTER" "${EA_ARGS[@]}" \
    --out "$OUT/cost_curve.json" --plot "$OUT/cost_curve.png" 2>&1 | tee "$OUT/cost_curve.log"
  "$PY" -m opttree sweep --cost-only --device "$DEVICE" --threads "$THREADS" --cost-reps 5 \
    --out "$OUT/verify_cost.json" --plot-dir "$OUT" 2>&1 | tee "$OUT/cost.log"
fi
if step sweep; then
  nice -n "$SWEEP_NICE" "$PY" -m opttree sweep --prompts opttree/assets/prompts/eval.jsonl --limit "$SWEEP_LIMIT" \
    --max-new-tokens "$SWEEP_TOKENS" --nodes "$NODES" "${COMMON[@]}" --budgets "$BUDGETS" \
    --methods opt-tree,eagle-dynamic,eagle-static,binary --thresholds "$THRESHOLDS" --threshold-nodes "$NODES" \
    ${CAP:+--cap "$CAP"} --cost-from "$OUT/verify_cost.json" ${SWEEP_MINUTES:+--max-minutes "$SWEEP_MINUTES"} \
    --out "$OUT/sweep.json" --plot-dir "$OUT" 2>&1 | tee "$OUT/sweep.log"
fi
if step bench; then
  "$PY" -m opttree bench --prompts opttree/assets/prompts/eval.jsonl --limit "$LIMIT" \
    --max-new-tokens "$TOKENS" --nodes "$NODES" "${COMMON[@]}" "${CL_ARGS[@]}" \
    --methods "ar,hf-assisted,chain,binary,eagle-static,eagle-dynamic,opt-tree${EXTRA:+,$EXTRA}" \
    ${BENCH_MINUTES:+--max-minutes "$BENCH_MINUTES"} \
    --out "$OUT/bench.json" --plot "$OUT/bench.png" 2>&1 | tee "$OUT/bench.log"
fi
if step bench60 && [ -n "$ORDER_NODES" ]; then
  "$PY" -m opttree bench --prompts opttree/assets/prompts/eval.jsonl --limit "$LIMIT" \
    --max-new-tokens "$TOKENS" --nodes "$ORDER_NODES" "${COMMON[@]}" --methods ar,opt-tree,eagle-static,binary \
    --out "$OUT/bench_n$ORDER_NODES.json" --plot "$OUT/bench_n$ORDER_NODES.png" 2>&1 | tee "$OUT/bench_n$ORDER_NODES.log"
fi
if step theory; then
  "$PY" -m opttree theory-table --prompts opttree/assets/prompts/eval.jsonl --limit "${THEORY_LIMIT:-8}" \
    --max-new-tokens "${THEORY_TOKENS:-64}" --nodes "$NODES" --device "$DEVICE" --threads "$THREADS" \
    --drafter "$DRAFTER" "${EA_ARGS[@]}" --out "$OUT/theory_table.json" --md "$OUT/theory_table.md" \
    2>&1 | tee "$OUT/theory_table.log"
fi
if [ "$STEP" = compare ]; then
  PROMPT=${COMPARE_PROMPT:-$("$PY" -c 'from viz.lessons import PRESETS; print(PRESETS[1]["prompt"])')}
  CMD=$("$PY" -m opttree.bench.compare "$PROMPT")
  eval "\"\$PY\" ${CMD#python }" --out "$OUT/compare.json" 2>&1 | tee "$OUT/compare.log"
fi
if [ "$STEP" = serving ]; then
  "$PY" -m opttree bench --prompts opttree/assets/prompts/eval.jsonl --limit "${SEQUOIA_LIMIT:-16}" \
    --max-new-tokens "${SEQUOIA_TOKENS:-96}" --nodes 25 "${COMMON[@]}" \
    --methods ar,sequoia,eagle-static,binary,opt-tree --out "$OUT/sequoia.json" 2>&1 | tee "$OUT/sequoia.log"
  for n in 25 60; do
    "$PY" -m opttree export-tree --format vllm --method opt-tree --nodes "$n" --threads "$THREADS" \
      --drafter "$DRAFTER" "${EA_ARGS[@]}" --threshold "$THRESHOLD" --max-depth "$DEPTH" \
      --max-new-tokens "${ADAPT_TOKENS:-64}" --report "$OUT/adaptivity_n$n.json" 2>&1 | tee "$OUT/adaptivity_n$n.log"
  done
  "$PY" -m opttree serving --threads "$THREADS" --drafter "$DRAFTER" "${EA_ARGS[@]}" \
    --out "$OUT/serving.md" --json "$OUT/serving.json" 2>&1 | tee "$OUT/serving.log"
fi
if step report; then
  # E(A) vs A: pool the bench's verification steps with the sweep's (≥ 1000 steps).
  "$PY" -m opttree.bench.pool "$OUT/sweep.json" "$OUT/bench.json" --plot-dir "$OUT"
  "$PY" -m opttree.bench.report --bench "$OUT/bench.json" --sweep "$OUT/sweep.json" --cost "$OUT/cost_curve.json" \
    --notes "$OUT/NOTES.md" --label "${LABEL:-}" --out "$OUT/README.md" --plot-dir "$OUT" \
    --theory "$OUT/theory_table.json" \
    ${ORDER_NODES:+--also-bench "$OUT/bench_n$ORDER_NODES.json"} \
    --command "make bench BENCH_MINUTES=${BENCH_MINUTES:-} SWEEP_MINUTES=${SWEEP_MINUTES:-} SWEEP_NICE=$SWEEP_NICE LIMIT=$LIMIT TOKENS=$TOKENS NODES=$NODES EXTRA=$EXTRA ORDER_NODES=$ORDER_NODES THREADS=$THREADS SWEEP_LIMIT=$SWEEP_LIMIT SWEEP_TOKENS=$SWEEP_TOKENS BUDGETS=$BUDGETS CAP=$CAP"
fi
