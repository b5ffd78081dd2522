#!/usr/bin/env bash
# Spec-Bench's public questions, the acceptance sets nobody here wrote (opttree/train/spec_bench.py says where
# the pinned file comes from; nothing is tuned or chosen on them). Steps (STEP=all runs them in this order):
#   cards  each shipped draft's τ on MT-bench's 80 first turns at its card's settings (tau_public in its card)
#   long   long passages (the first PER_TASK summarization and rag questions): the head at the auto budget alone
#          and with retrieval fusion, beside prompt lookup, Token Recycling and AR
#   mixed  MIXED_PER_TASK questions of each of Spec-Bench's six tasks: AR, OPT-Tree with the head at the auto
#          budget (without fusion, and with it on every prompt: the app's default) and at n = 60
# Every bench method runs on every prompt, interleaved and rotated; T = 0, δ 0.5, depth ≤ 10, TOKENS new tokens.
# About 65 minutes on a 2-core CPU: the cards 44 (head 13, classic 16, early exit 14), long 8, mixed 13.
#   QUESTIONS=data/spec_bench/question.jsonl THREADS=2 PER_TASK=8 (long) MIXED_PER_TASK=4 TOKENS=128
#   KINDS="head classic early-exit" OUT=benchmarks/public DEVICE=cpu DTYPE=auto (the bench steps; DEVICE=cuda on a GPU)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}; export PYTHONPATH=.
if [ "${DEVICE:-cpu}" != cpu ] && [ -z "${OUT+x}" ]; then   # the committed CPU results stay as they are
  echo "DEVICE=$DEVICE: name OUT too (e.g. OUT=benchmarks/gpu/<date>-<device>_public)." >&2; exit 2
fi
QUESTIONS=${QUESTIONS:-data/spec_bench/question.jsonl}; THREADS=${THREADS:-2}; TOKENS=${TOKENS:-128}
PER_TASK=${PER_TASK:-8}; MIXED_PER_TASK=${MIXED_PER_TASK:-4}; OUT=${OUT:-benchmarks/public}; STEP=${STEP:-all}
DEVICE=${DEVICE:-cpu}; DTYPE=${DTYPE:-auto}
KINDS=${KINDS:-head classic early-exit}
SUBSETS=$(dirname "$QUESTIONS")   # the subsets' prompt files stay beside the question file, out of git
step() { [ "$STEP" = all ] || [ "$STEP" = "$1" ]; }
COMMON=(--device "$DEVICE" --dtype "$DTYPE" --threads "$THREADS" --drafter eagle --max-depth 10 --threshold 0.5 --temperature 0
        --max-new-tokens "$TOKENS" --warmup 1)
if step cards; then
  for kind in $KINDS; do
    "$PY" -m opttree.train.card --kind "$kind" --set public --questions "$QUESTIONS" --threads "$THREADS"
  done
fi
if step long; then
  "$PY" -m opttree.train.spec_bench --questions "$QUESTIONS" --subset long --per-task "$PER_TASK" --out "$SUBSETS/long.jsonl"
  "$PY" -m opttree bench "${COMMON[@]}" --prompts "$SUBSETS/long.jsonl" \
    --methods ar,opt-tree@auto,opt-tree@auto+retrieval,lookup,recycling --out "${OUT}_long.json" 2>&1 | tee "${OUT}_long.log"
fi
if step mixed; then
  "$PY" -m opttree.train.spec_bench --questions "$QUESTIONS" --subset mixed --per-task "$MIXED_PER_TASK" \
    --out "$SUBSETS/mixed.jsonl"
  "$PY" -m opttree bench "${COMMON[@]}" --prompts "$SUBSETS/mixed.jsonl" \
    --methods ar,opt-tree@auto,opt-tree@auto+retrieval,opt-tree@60 --out "${OUT}_mixed.json" 2>&1 | tee "${OUT}_mixed.log"
fi
