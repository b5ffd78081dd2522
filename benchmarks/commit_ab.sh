#!/usr/bin/env bash
# One engine change against the commit before it, each checked out in a worktree of its own, on the project's
# own frozen sets at the auto budget, head alone and fused with retrieval, beside AR (benchmarks/auto_ab.sh).
# STEP=eval / STEP=long: the eval set (48 prompts x 64 tokens, NEW then BASE) and the long-input split
# (18 prompts x 64 tokens, BASE then NEW); the -again steps run each pair in the other order. Each commit keeps
# its own cost cache (/tmp/opttree-costs-<commit>: kernel choice and cost curves, measured by its first run and
# read by the rest), so neither side sizes its trees from the other's curve. Results in OUT as eval_<NAME>.json,
# eval_base.json, ...; compare with
#   python -m opttree.bench.verdict A.json m m --against B.json
#   NEW=<commit> BASE=<commit> NAME=<name> OUT=<folder> THREADS=2 STEP=eval|eval-again|long|long-again|all \
#     benchmarks/commit_ab.sh
set -euo pipefail
OUT=$(realpath -m "${OUT:?OUT names the results folder}")     # relative to where it is called from
cd "$(dirname "$0")/.."
HERE=$(pwd)
NAME=${NAME:?NAME names the change in the result files}
PY="${PY:-$HERE/.venv/bin/python}"
T="${THREADS:-2}"
STEP="${STEP:-all}"
NEW=$(git rev-parse --short "${NEW:?NEW is the commit with the change}")
BASE=$(git rev-parse --short "${BASE:-$NEW~1}")
WB=/tmp/opttree-base-$BASE
WN=/tmp/opttree-new-$NEW
mkdir -p "$OUT"
git worktree prune                      # a worktree whose folder was cleaned away is registered no longer
[[ -d $WB ]] || git worktree add --detach "$WB" "$BASE" >/dev/null
[[ -d $WN ]] || git worktree add --detach "$WN" "$NEW" >/dev/null
source benchmarks/auto_ab.sh
new() { (cd "$WN" && OPTTREE_COSTS=/tmp/opttree-costs-$NEW auto_ab_run "$@"); }
base() { (cd "$WB" && OPTTREE_COSTS=/tmp/opttree-costs-$BASE auto_ab_run "$@"); }
E=opttree/assets/prompts/eval.jsonl
L=opttree/assets/prompts/long_input.jsonl
if [[ $STEP == eval || $STEP == all ]]; then new $E 48 "eval_$NAME"; base $E 48 eval_base; fi
if [[ $STEP == eval-again || $STEP == all ]]; then base $E 48 eval_base_b; new $E 48 "eval_${NAME}_b"; fi
if [[ $STEP == long || $STEP == all ]]; then base $L 18 long_base; new $L 18 "long_$NAME"; fi
if [[ $STEP == long-again || $STEP == all ]]; then new $L 18 "long_${NAME}_b"; base $L 18 long_base_b; fi
