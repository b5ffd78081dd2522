#!/usr/bin/env bash
# Tree attention with and without the KV copy (opttree/nets/grouped_attention.py), on the project's own
# frozen sets. STEP=cost: one verification forward's time against its tree size, the fold and transformers'
# copying SDPA timed in the same repetitions, after KV prefixes of 128, 512 and 1,024 tokens. STEP=eval /
# STEP=long: the eval set (48 prompts × 64 tokens) and the long-input split (18 prompts × 64 tokens) at the
# auto budget, head alone and fused, once with the fold (the default) and once with OPTTREE_PLAIN_ATTENTION=1
# (in that order, then the reverse for the long split; each run measures its own cost curve, so the auto budget sizes trees from the costs it runs with).
# Results in benchmarks/grouped_attention/; compare with
#   python -m opttree.bench.verdict A.json m m --against B.json
#   THREADS=2 STEP=cost|eval|long|long-again|eval-again|all benchmarks/grouped_attention.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=benchmarks/grouped_attention
PY="${PY:-.venv/bin/python}"
T="${THREADS:-2}"
STEP="${STEP:-all}"
mkdir -p "$OUT"
if [[ $STEP == cost || $STEP == all ]]; then
  for P in 128 512 1024; do
    PYTHONPATH=. $PY -m opttree sweep --cost-only --cost-sizes 1,2,4,8,16,32 --cost-prefix "$P" --cost-reps 7 \
      --threads "$T" --out "$OUT/verify_cost_$P.json" 2>&1 | grep -v repetition | tee "$OUT/verify_cost_$P.log"
  done
fi
source benchmarks/auto_ab.sh
if [[ $STEP == eval || $STEP == all ]]; then
  auto_ab_run opttree/assets/prompts/eval.jsonl 48 eval_grouped OPTTREE_PLAIN_ATTENTION=0
  auto_ab_run opttree/assets/prompts/eval.jsonl 48 eval_copying OPTTREE_PLAIN_ATTENTION=1
fi
if [[ $STEP == long || $STEP == all ]]; then
  auto_ab_run opttree/assets/prompts/long_input.jsonl 18 long_copying OPTTREE_PLAIN_ATTENTION=1
  auto_ab_run opttree/assets/prompts/long_input.jsonl 18 long_grouped OPTTREE_PLAIN_ATTENTION=0
fi
if [[ $STEP == long-again || $STEP == all ]]; then   # a second pair, in the other order (the long runs are noisier)
  auto_ab_run opttree/assets/prompts/long_input.jsonl 18 long_grouped_b OPTTREE_PLAIN_ATTENTION=0
  auto_ab_run opttree/assets/prompts/long_input.jsonl 18 long_copying_b OPTTREE_PLAIN_ATTENTION=1
fi
if [[ $STEP == eval-again || $STEP == all ]]; then   # the eval pair again, in the other order
  auto_ab_run opttree/assets/prompts/eval.jsonl 48 eval_copying_b OPTTREE_PLAIN_ATTENTION=1
  auto_ab_run opttree/assets/prompts/eval.jsonl 48 eval_grouped_b OPTTREE_PLAIN_ATTENTION=0
fi
