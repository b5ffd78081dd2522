#!/usr/bin/env bash
# When should the app fuse retrieval into the head's tree? The feature head at the auto budget with and
# without retrieval fusion, beside AR, on a frozen split of the project's own prompts (SET=eval: the
# design set, 48 chat prompts of 36-92 tokens; SET=final: the held-out set, read after a decision); T = 0,
# 128 new tokens, every method on every prompt, interleaved and rotated. Writes $OUT.{json,log}
# (default benchmarks/fusion_rule_$SET); benchmarks/fusion_rule.md reads them.
#   SET=eval THREADS=2 LIMIT=48 TOKENS=128
set -euo pipefail
cd "$(dirname "$0")/.."
SET="${SET:-eval}"
OUT="${OUT:-benchmarks/fusion_rule_$SET}"
PYTHONPATH=. ${PY:-.venv/bin/python} -m opttree bench --device cpu --threads "${THREADS:-2}" \
  --prompts "opttree/assets/prompts/$SET.jsonl" --limit "${LIMIT:-48}" \
  --methods ar,opt-tree@auto,opt-tree@auto+retrieval \
  --drafter eagle --max-depth 10 --threshold 0.5 --temperature 0 --max-new-tokens "${TOKENS:-128}" --warmup 1 \
  --out "$OUT.json" 2>&1 | tee "$OUT.log"
