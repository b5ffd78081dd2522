#!/usr/bin/env bash
# Where the early-exit drafter should exit: one exit head per N (the target's first N layers), each
# trained the same way on the same generated data (data/gen: python -m opttree.train.generate), then
# each benchmarked beside AR in its own run (8 eval prompts, 128 new tokens, T = 0, one thread).
# Writes benchmarks/early_exit/exit-N.{json,log} (bench) and card-N.json (the head's card), then the
# summary table benchmarks/early_exit/sweep.md (opttree/bench/exit_sweep.py).
# Knobs: NS=1,2,4,6 EPOCHS=12 LR=2e-3 TOKENS=250000 LIMIT=8 HEADS=tmp/early-exit (where the heads go)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}; NS=${NS:-1,2,4,6}; EPOCHS=${EPOCHS:-12}; LR=${LR:-2e-3}; TOKENS=${TOKENS:-250000}
LIMIT=${LIMIT:-8}; HEADS=${HEADS:-tmp/early-exit}; OUT=benchmarks/early_exit
export PYTHONPATH=.
mkdir -p "$OUT" "$HEADS"
for N in ${NS//,/ }; do
  if [ ! -f "$HEADS/exit-$N.json" ]; then
    "$PY" -m opttree.train --kind early-exit --exit-layer "$N" --no-generate --tokens "$TOKENS" \
      --epochs "$EPOCHS" --lr "$LR" --draft-vocab 6144 --bf16 --eval-every 100 --tau-prompts 0 --fit-temperature 0 \
      --out "$HEADS/exit-$N.safetensors" --ckpt-dir "$HEADS/ckpt" --resume 2>&1 | tr '\r' '\n' | grep --line-buffered -v "step/s\|s/step" \
      | tee "$HEADS/train-$N.log"
  fi
  cp "$HEADS/exit-$N.json" "$OUT/card-$N.json"
  if [ ! -f "$OUT/exit-$N.json" ]; then
    "$PY" -m opttree bench --prompts opttree/assets/prompts/eval.jsonl --limit "$LIMIT" --max-new-tokens 128 \
      --threads 1 --temperature 0 --threshold 0.5 --max-depth 10 --nodes 25 \
      --drafter early-exit --exit-head-path "$HEADS/exit-$N.safetensors" \
      --methods "ar,chain~thompson,opt-tree@auto,opt-tree@auto~thompson" \
      --out "$OUT/exit-$N.json" 2>&1 | tr '\r' '\n' | grep --line-buffered -v "prompt/s\|s/prompt" | tee "$OUT/exit-$N.log"
  fi
done
"$PY" -m opttree.bench.exit_sweep "$OUT" --out "$OUT/sweep.md"
