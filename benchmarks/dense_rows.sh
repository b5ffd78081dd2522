#!/usr/bin/env bash
# A kernel choice that probes every row count up to 16 and checks itself with whole forwards (commit NEW, default
# 63d2c2d: opttree/nets/kernel_choice.py's `refine`; not shipped, benchmarks/dense_rows.md), against the choice
# it would have replaced (BASE), each checked out in a worktree of its own, on the project's own
# frozen sets at the auto budget, head alone and fused with retrieval, beside AR. STEP=eval / STEP=long: the eval
# set (48 prompts x 64 tokens, dense then base) and the long-input split (18 prompts x 64 tokens, base then
# dense); the -again steps run each pair in the other order. Each run reads the kernel choice and cost curve its
# commit finds in the cost cache (OPTTREE_COSTS), measuring them where none is cached. Results in
# benchmarks/dense_rows/; compare with
#   python -m opttree.bench.verdict A.json m m --against B.json
#   THREADS=2 STEP=eval|eval-again|long|long-again|all [BASE=5e4c260] [NEW=63d2c2d] benchmarks/dense_rows.sh
set -euo pipefail
cd "$(dirname "$0")/.."
HERE=$(pwd)
OUT=$HERE/benchmarks/dense_rows
PY="${PY:-$HERE/.venv/bin/python}"
T="${THREADS:-2}"
STEP="${STEP:-all}"
BASE=$(git rev-parse --short "${BASE:-5e4c260}")
NEW=$(git rev-parse --short "${NEW:-63d2c2d}")
WB=/tmp/opttree-base-$BASE
WN=/tmp/opttree-new-$NEW
mkdir -p "$OUT"
git worktree prune                      # a worktree whose folder was cleaned away is registered no longer
[[ -d $WB ]] || git worktree add --detach "$WB" "$BASE" >/dev/null
[[ -d $WN ]] || git worktree add --detach "$WN" "$NEW" >/dev/null
source benchmarks/auto_ab.sh
new() { (cd "$WN" && auto_ab_run "$@"); }
base() { (cd "$WB" && auto_ab_run "$@"); }
E=opttree/assets/prompts/eval.jsonl
L=opttree/assets/prompts/long_input.jsonl
if [[ $STEP == eval || $STEP == all ]]; then new $E 48 eval_dense; base $E 48 eval_base; fi
if [[ $STEP == eval-again || $STEP == all ]]; then base $E 48 eval_base_b; new $E 48 eval_dense_b; fi
if [[ $STEP == long || $STEP == all ]]; then base $L 18 long_base; new $L 18 long_dense; fi
if [[ $STEP == long-again || $STEP == all ]]; then new $L 18 long_dense_b; base $L 18 long_base_b; fi
