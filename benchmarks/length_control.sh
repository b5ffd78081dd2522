#!/usr/bin/env bash
# How deep to draft: OPT-Tree's δ rule, Thompson sampling and the learned predictor, side by side with
# the feature head, and the early-exit draft (the target's own first layers, EESD) beside them in the
# same run (16 eval prompts, 128 new tokens, T = 0, interleaved per prompt).
# Writes $OUT.{json,log,png} (default benchmarks/length_control).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-benchmarks/length_control}"
PYTHONPATH=. ${PY:-.venv/bin/python} -m opttree bench --prompts opttree/assets/prompts/eval.jsonl --limit 16 \
  --max-new-tokens 128 --threads 1 --temperature 0 --threshold 0.5 --max-depth 10 --nodes 25 \
  --methods "ar,opt-tree@25,opt-tree@25~thompson,opt-tree@25~predictor,opt-tree@auto,opt-tree@auto~thompson,opt-tree@auto~predictor,early-exit:chain~thompson,early-exit:opt-tree@25,early-exit:opt-tree@25~thompson,early-exit:opt-tree@auto,early-exit:opt-tree@auto~thompson" \
  --out "$OUT.json" --plot "$OUT.png" 2>&1 | tee "$OUT.log"
