#!/usr/bin/env bash
# The training-free drafters' benchmark of 2026-11-22 (2-core CPU shared with other jobs: compare ratios).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHONPATH=. ${PY:-.venv/bin/python} -m opttree bench --device cpu --threads 1 \
  --prompts benchmarks/training_free_prompts.jsonl \
  --methods ar,hf-lookup,recycling,recycling:tr-static@80,lookup,opt-tree,opt-tree+retrieval \
  --drafter eagle --nodes 20 --max-depth 10 --threshold 0.3 --temperature 0 --max-new-tokens 64 \
  --recycling-scope session --warmup 1 \
  --out benchmarks/training_free_2026-11-22.json
