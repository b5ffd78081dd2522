#!/usr/bin/env bash
# Long pasted text (summarise / answer about / translate a given passage): the frozen long-input split
# (opttree/assets/prompts/long_input.jsonl, 18 prompts, reported apart from the eval set), the feature head at
# the auto budget alone and with retrieval fusion, beside the drafters that need no trained draft; T = 0, every
# method on every prompt, interleaved and rotated. Writes $OUT.{json,log} (default benchmarks/long_input).
#   THREADS=2 LIMIT=18 TOKENS=64 OUT=benchmarks/long_input METHODS=ar,opt-tree@auto,...
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-benchmarks/long_input}"
PYTHONPATH=. ${PY:-.venv/bin/python} -m opttree bench --device cpu --threads "${THREADS:-2}" \
  --prompts opttree/assets/prompts/long_input.jsonl --limit "${LIMIT:-18}" \
  --methods "${METHODS:-ar,opt-tree@auto,opt-tree@auto+retrieval,lookup,recycling}" \
  --drafter eagle --max-depth 10 --threshold 0.5 --temperature 0 --max-new-tokens "${TOKENS:-64}" --warmup 1 \
  --out "$OUT.json" 2>&1 | tee "$OUT.log"
