#!/usr/bin/env bash
# Does a retrieval corpus of real answers help retrieval fusion? The app's default (the feature head at the auto
# budget, fused with retrieval) beside AR on the first LIMIT prompts of the eval set, once with retrieval from the
# prompt and the output only, once with a corpus too: ChatGPT's answers in ShareGPT's training-side conversations
# (`python -m opttree.train.sharegpt --corpus`, just under the 4 MiB a corpus may hold; needs
# requirements-train.txt). T = 0, 128 new tokens. Writes $OUT/{none,sharegpt}.{json,log};
# benchmarks/fusion_rule.md reads them.
#   THREADS=2 LIMIT=16 TOKENS=128 OUT=benchmarks/fusion_corpus CORPUS=data/sharegpt_corpus.txt
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}; export PYTHONPATH=.
OUT=${OUT:-benchmarks/fusion_corpus}; CORPUS=${CORPUS:-data/sharegpt_corpus.txt}
mkdir -p "$OUT" "$(dirname "$CORPUS")"
[ -s "$CORPUS" ] || "$PY" -m opttree.train.sharegpt --corpus "$CORPUS"
run() {
  "$PY" -m opttree bench --device cpu --threads "${THREADS:-2}" --prompts opttree/assets/prompts/eval.jsonl \
    --limit "${LIMIT:-16}" --methods opt-tree@auto+retrieval --drafter eagle --max-depth 10 --threshold 0.5 \
    --temperature 0 --max-new-tokens "${TOKENS:-128}" --warmup 1 --out "$OUT/$1.json" "${@:2}" 2>&1 | tee "$OUT/$1.log"
}
run none
run sharegpt --retrieval-corpus "$CORPUS"
