#!/usr/bin/env bash
# A kernel choice that probes every row count up to 16 and checks itself with whole forwards (commit NEW, default
# 63d2c2d: opttree/nets/kernel_choice.py's `refine`; not shipped, benchmarks/dense_rows.md), against the choice
# it would have replaced (BASE), through benchmarks/commit_ab.sh; results in benchmarks/dense_rows/.
#   THREADS=2 STEP=eval|eval-again|long|long-again|all [BASE=5e4c260] [NEW=63d2c2d] benchmarks/dense_rows.sh
set -euo pipefail
cd "$(dirname "$0")/.."
NEW=${NEW:-63d2c2d} BASE=${BASE:-5e4c260} NAME=dense OUT=benchmarks/dense_rows exec benchmarks/commit_ab.sh
