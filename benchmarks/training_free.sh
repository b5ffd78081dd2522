#!/usr/bin/env bash
# The training-free drafters' benchmark (16 prompts, 128 new tokens; 2-core CPU shared with other
# jobs: compare τ and ratios). Writes benchmarks/training_free.{json,log}.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHONPATH=. ${PY:-.venv/bin/python} -m opttree bench --device cpu --threads 1 \
  --prompts benchmarks/training_free_prompts.jsonl \
  --methods ar,hf-lookup,recycling,recycling:tr-static@80,lookup,opt-tree,opt-tree+retrieval \
  --drafter eagle --nodes 20 --max-depth 10 --threshold 0.3 --temperature 0 --max-new-tokens 128 \
  --recycling-scope session --warmup 1 \
  --out benchmarks/training_free.json 2>&1 | tee benchmarks/training_free.log
