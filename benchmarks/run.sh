#!/usr/bin/env bash
# Regenerate benchmarks/: bench (all methods, interleaved per prompt), sweep (node budgets, δ,
# verify-cost curve, E(A) vs A pooled with the bench's steps) and the README.
# Knobs (environment): DEVICE=cpu|cuda  THREADS=1  LIMIT=12  TOKENS=128  NODES=<bench budget>
#   SWEEP_LIMIT=2  SWEEP_TOKENS=64  BUDGETS=10,25,60,150,300,500  THRESHOLDS=0,0.2,0.5,1,2
#   DRAFTER=eagle  EA=<head file>  CLASSIC=<classic draft file>  OUT=benchmarks  LABEL=<banner>
#   BENCH_MINUTES / SWEEP_MINUTES: time budgets (stop after the prompt that crosses them)
#   EXTRA=opt-tree@8,...  extra bench methods at their own budgets (e.g. the best budget for this CPU)
#   PARALLEL=1 runs bench and sweep side by side (one process per core; ratios stay fair within each).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
DEVICE=${DEVICE:-auto}; THREADS=${THREADS:-1}; LIMIT=${LIMIT:-12}; TOKENS=${TOKENS:-128}
NODES=${NODES:-25}; THRESHOLD=${THRESHOLD:-0.5}; DEPTH=${DEPTH:-10}
SWEEP_LIMIT=${SWEEP_LIMIT:-2}; SWEEP_TOKENS=${SWEEP_TOKENS:-64}
BUDGETS=${BUDGETS:-10,25,60,150,300,500}; THRESHOLDS=${THRESHOLDS:-0,0.2,0.5,1,2}
DRAFTER=${DRAFTER:-eagle}; OUT=${OUT:-benchmarks}; PARALLEL=${PARALLEL:-0}
EA_ARGS=(); [ -n "${EA:-}" ] && EA_ARGS=(--ea-model-path "$EA")
CL_ARGS=(); [ -n "${CLASSIC:-}" ] && CL_ARGS=(--assistant-model-path "$CLASSIC")
mkdir -p "$OUT"
COMMON=(--device "$DEVICE" --threads "$THREADS" --drafter "$DRAFTER" "${EA_ARGS[@]}"
        --threshold "$THRESHOLD" --max-depth "$DEPTH" --temperature 0)
bench() {
  PYTHONPATH=. "$PY" -m opttree bench --prompts assets/prompts/eval.jsonl --limit "$LIMIT" \
    --max-new-tokens "$TOKENS" --nodes "$NODES" "${COMMON[@]}" "${CL_ARGS[@]}" \
    --methods "ar,hf-assisted,chain,binary,eagle-static,eagle-dynamic,opt-tree${EXTRA:+,$EXTRA}" \
    ${BENCH_MINUTES:+--max-minutes "$BENCH_MINUTES"} \
    --out "$OUT/bench.json" --plot "$OUT/bench.png" 2>&1 | tee "$OUT/bench.log"
}
sweep() {
  local pool=(); [ "$PARALLEL" = 1 ] || pool=(--pool "$OUT/bench.json")
  PYTHONPATH=. "$PY" -m opttree sweep --prompts assets/prompts/eval.jsonl --limit "$SWEEP_LIMIT" \
    --max-new-tokens "$SWEEP_TOKENS" --nodes "$NODES" "${COMMON[@]}" --budgets "$BUDGETS" \
    --methods opt-tree,eagle-dynamic,eagle-static,binary --thresholds "$THRESHOLDS" \
    ${SWEEP_MINUTES:+--max-minutes "$SWEEP_MINUTES"} \
    "${pool[@]}" --out "$OUT/sweep.json" --plot-dir "$OUT" 2>&1 | tee "$OUT/sweep.log"
}
if [ "$PARALLEL" = 1 ]; then
  bench & B=$!; sweep & S=$!; wait $B; wait $S
  PYTHONPATH=. "$PY" -m opttree.bench_pool "$OUT/sweep.json" "$OUT/bench.json" --plot-dir "$OUT"
else
  bench; sweep
fi
PYTHONPATH=. "$PY" -m opttree.bench_report --bench "$OUT/bench.json" --sweep "$OUT/sweep.json" \
  --notes "$OUT/NOTES.md" --label "${LABEL:-}" --out "$OUT/README.md" \
  --command "make bench   # = benchmarks/run.sh; knobs: LIMIT=$LIMIT TOKENS=$TOKENS NODES=$NODES EXTRA=${EXTRA:-} BUDGETS=$BUDGETS THREADS=$THREADS SWEEP_LIMIT=$SWEEP_LIMIT SWEEP_TOKENS=$SWEEP_TOKENS PARALLEL=$PARALLEL"
