#!/usr/bin/env bash
# MKL's packed GEMM as a third CPU kernel (opttree/nets/kernel_choice.py), on the project's own frozen sets.
# STEP=cost: one verification forward's time against its tree size with the chosen kernels, each kernel
# alone, in the same repetitions. STEP=eval / STEP=long: the eval set (48 prompts × 64 tokens) and the
# long-input split (18 prompts × 64 tokens) at the auto budget, head alone and fused, once with the three
# kernels (the default) and once with OPTTREE_NO_MKL_PACK=1 (the choice between F.linear and oneDNN); the
# -again steps run each pair in the other order. Each run measures its own kernel choice and cost curve, so
# the auto budget sizes trees from the costs it runs with. Results in benchmarks/mkl_pack/; compare with
#   python -m opttree.bench.verdict A.json m m --against B.json
#   THREADS=2 STEP=cost|eval|eval-again|long|long-again|all benchmarks/mkl_pack.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=benchmarks/mkl_pack
PY="${PY:-.venv/bin/python}"
T="${THREADS:-2}"
STEP="${STEP:-all}"
mkdir -p "$OUT"
if [[ $STEP == cost || $STEP == all ]]; then
  PYTHONPATH=. $PY -m opttree sweep --cost-only --cost-sizes 1,2,3,4,6,8,12,16,32 --cost-reps 7 \
    --threads "$T" --out "$OUT/verify_cost.json" 2>&1 | grep -v repetition | tee "$OUT/verify_cost.log"
fi
source benchmarks/auto_ab.sh
if [[ $STEP == eval || $STEP == all ]]; then
  auto_ab_run opttree/assets/prompts/eval.jsonl 48 eval_mkl OPTTREE_NO_MKL_PACK=0
  auto_ab_run opttree/assets/prompts/eval.jsonl 48 eval_no_mkl OPTTREE_NO_MKL_PACK=1
fi
if [[ $STEP == eval-again || $STEP == all ]]; then
  auto_ab_run opttree/assets/prompts/eval.jsonl 48 eval_no_mkl_b OPTTREE_NO_MKL_PACK=1
  auto_ab_run opttree/assets/prompts/eval.jsonl 48 eval_mkl_b OPTTREE_NO_MKL_PACK=0
fi
if [[ $STEP == long || $STEP == all ]]; then
  auto_ab_run opttree/assets/prompts/long_input.jsonl 18 long_no_mkl OPTTREE_NO_MKL_PACK=1
  auto_ab_run opttree/assets/prompts/long_input.jsonl 18 long_mkl OPTTREE_NO_MKL_PACK=0
fi
if [[ $STEP == long-again || $STEP == all ]]; then
  auto_ab_run opttree/assets/prompts/long_input.jsonl 18 long_mkl_b OPTTREE_NO_MKL_PACK=0
  auto_ab_run opttree/assets/prompts/long_input.jsonl 18 long_no_mkl_b OPTTREE_NO_MKL_PACK=1
fi
