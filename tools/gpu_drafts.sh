#!/usr/bin/env bash
# The feature head trained on a lent GPU (the device tool) within its 15 minutes of device
# time: the same commands as on the CPU (docs/drafts.md, "How they are trained"), with --device cuda,
# on data the GPU generates itself. docs/drafts.md, "A GPU run in 15 minutes of device time", says why each step is
# shaped so.
#
# Here (the CPU machine):
#   tools/gpu_drafts.sh pack      .gpu/ (git-ignored): the bundled GGUF in two xz parts (.gpu/a, .gpu/b),
#                                 recipe (b)'s ShareGPT conversations (.gpu/c), wheels for gguf and for
#                                 transformers (the machine's own is older); prints each call's size
#   tools/gpu_drafts.sh hide      take the tracked files the run never reads out of the working tree, so
#                                 that each call stays under the 64 MiB a call carries (refused while those
#                                 paths hold untracked or changed files: they would travel, or be lost)
#   tools/gpu_drafts.sh unhide    put them back (git checkout); run it before any commit
# There (the device machine), three calls in a row (a warm machine is kept 30 s between calls):
#   call 1, carry .gpu/a:  tools/gpu_drafts.sh keep
#   call 2, carry .gpu/b:  tools/gpu_drafts.sh keep
#   call 3, carry .gpu/c:  tools/gpu_drafts.sh run    the head's and the classic's weights and cards and
#                                                     the log come back in $OUT
# Budgets (seconds / minutes) and sizes are environment variables, below; `run` works on a CPU too
# (DEVICE=cpu with small budgets), which is how it is checked without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."

KIT=${KIT:-/tmp/gpu-kit}                # where the parts wait between calls (outside the repo copy)
OUT=${OUT:-$KIT/out}
DEVICE=${DEVICE:-cuda}
PY=${PY:-python3}
CONVERSATIONS=${CONVERSATIONS:-8000}    # ShareGPT conversations packed (recipe (b) answers two turns of each)
ANSWER_SECONDS=${ANSWER_SECONDS:-120}   # recipe (b): the target answers real users' turns
GEN_SECONDS=${GEN_SECONDS:-100}         # the training prompts' own answers (opttree/assets/prompts/train.jsonl)
TRAIN_MINUTES=${TRAIN_MINUTES:-3}       # the feature head
CLASSIC_MINUTES=${CLASSIC_MINUTES:-2}   # then the classic draft, if time is left (0: not trained)
DEADLINE=${DEADLINE:-540}               # seconds into `run` by which everything is back in $OUT (a call: 600)
BATCH=${BATCH:-256}                     # prompts answered together
MAX_NEW=${MAX_NEW:-256}
HIDDEN=(benchmarks docs/screenshots opttree/assets/drafts/smollm2-classic.safetensors
        opttree/assets/drafts/smollm2-early-exit.safetensors)

pack() {
    local venv=${VENV:-.venv/bin/python} gguf
    gguf=$($venv -c "from opttree.models import bundled; print(bundled.gguf_path())")
    rm -rf .gpu && mkdir -p .gpu/a .gpu/b .gpu/c
    xz -T2 -6 -c "$gguf" | split -b 46M - .gpu/part-
    [ -e .gpu/part-ab ] && [ ! -e .gpu/part-ac ] || { echo "the GGUF does not split into two parts" >&2; exit 1; }
    mv .gpu/part-aa .gpu/a/gguf.xz.a && mv .gpu/part-ab .gpu/b/gguf.xz.b
    PYTHONPATH=. $venv -m opttree.train.sharegpt --subset .gpu/c/sharegpt.json --turns 2 \
        --conversations "$CONVERSATIONS"
    xz -T2 -6 -f .gpu/c/sharegpt.json
    cp opttree/assets/drafts/smollm2-classic.safetensors .gpu/c/     # hidden from the tree, so carried
    $venv -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 -d .gpu/b \
        "gguf==$($venv -c 'from importlib.metadata import version; print(version("gguf"))')"
    $venv -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 -d .gpu/c \
        "transformers==$($venv -c 'import transformers; print(transformers.__version__)')"
    du -sh .gpu/a .gpu/b .gpu/c
    echo "the working tree after hide: $(git ls-files -z | grep -zv -e '^benchmarks/' -e '^docs/screenshots/' \
        -e 'smollm2-classic.safetensors' -e 'smollm2-early-exit.safetensors' | du -ch --files0-from=- | tail -1)"
}

keep() {      # calls 1 and 2: what this call carried waits in $KIT for the next one
    mkdir -p "$KIT"
    for f in .gpu/a/* .gpu/b/*; do [ -e "$f" ] && cp "$f" "$KIT/"; done
    ls -la "$KIT"
}

failed() {    # the log's tail, then the run ends with the failed command's status
    tail -20 "$OUT/run.log"
    exit "$1"
}

logged() {    # a command's output goes to the log; when it fails, the run ends (failed)
    local rc=0
    "$@" >> "$OUT/run.log" 2>&1 || rc=$?
    [ "$rc" = 0 ] || failed "$rc"
}

timed() {     # a generation stopped by its budget keeps its whole shards; any other failure ends the run
    # TERM at the budget, KILL 10 s later if it still runs (124: stopped by TERM, 137: by KILL)
    local rc=0
    timeout -k 10 "$@" >> "$OUT/run.log" 2>&1 || rc=$?
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        echo "$4 stopped by its budget at $((SECONDS - t0)) s" | tee -a "$OUT/run.log"
    elif [ "$rc" != 0 ]; then
        failed "$rc"
    fi
}

run() {
    local data=() left
    t0=$SECONDS
    mkdir -p "$KIT" "$OUT"
    [ -d .gpu/c ] && cp .gpu/c/* "$KIT/"
    if ls "$KIT"/*.whl >/dev/null 2>&1; then
        $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$KIT/site" "$KIT"/*.whl
        export PYTHONPATH="$KIT/site:${PYTHONPATH:-}"
    fi
    if [ -z "${OPTTREE_GGUF:-}" ]; then
        cat "$KIT/gguf.xz.a" "$KIT/gguf.xz.b" | xz -dc > "$KIT/model.gguf"
        export OPTTREE_GGUF="$KIT/model.gguf"
    fi
    [ -e "$KIT/sharegpt.json" ] || xz -dc "$KIT/sharegpt.json.xz" > "$KIT/sharegpt.json"
    export PYTHONPATH=".:${PYTHONPATH:-}" PYTHONUNBUFFERED=1
    echo "kit ready after $((SECONDS - t0)) s" | tee "$OUT/run.log"
    # Each generation stops at its budget; shards are written whole (atomically), so a stopped one keeps
    # every finished shard, and the same command continues it.
    # Two user turns a conversation: a shard of BATCH/2 conversations is about one batch of prompts.
    timed "$ANSWER_SECONDS" $PY -m opttree.train.sharegpt_answers --source "$KIT/sharegpt.json" \
        --out "$KIT/answers" --tokens 0 --shard-size $((BATCH / 2)) --batch "$BATCH" --max-new "$MAX_NEW" \
        --layer-feats --device "$DEVICE"
    timed "$GEN_SECONDS" $PY -m opttree.train.generate --out "$KIT/gen" --tokens 100000000 --batch "$BATCH" \
        --max-new "$MAX_NEW" --layer-feats --device "$DEVICE"
    for d in "$KIT/gen" "$KIT/answers"; do ls "$d"/shard_*.pt >/dev/null 2>&1 && data+=("$d"); done
    [ ${#data[@]} -gt 0 ] || { echo "no data was generated" | tee -a "$OUT/run.log"; exit 1; }
    logged $PY -m opttree.train --kind head --fused --no-generate --data "${data[@]}" --tokens 1000000000 \
        --init-from opttree/assets/drafts/smollm2-eagle-head.safetensors --init-vocab --unroll 3 --bf16 \
        --minutes "$TRAIN_MINUTES" --epochs 40 --lr 1e-4 --warmup 20 --eval-every 1000 --export-every-eval \
        --tau-prompts 0 --fit-temperature 0 --device "$DEVICE" --ckpt-dir "$KIT/ck" \
        --out "$OUT/smollm2-eagle-head.safetensors"
    echo "head done after $((SECONDS - t0)) s" | tee -a "$OUT/run.log"
    # The classic gets what is left before the deadline (a minute kept for loading, evaluating, exporting).
    left=$(( (DEADLINE - (SECONDS - t0) - 60) / 60 ))
    CLASSIC_MINUTES=$(awk -v a="$CLASSIC_MINUTES" -v b="$left" 'BEGIN { print (b < 1 ? 0 : b < a ? b : a) }')
    echo "classic: $CLASSIC_MINUTES minute(s)" | tee -a "$OUT/run.log"
    if awk -v m="$CLASSIC_MINUTES" 'BEGIN { exit !(m > 0) }'; then
        # The classic's fp16 file (~21 MB) is over the 16 MiB a returned file may hold: it comes back in
        # two parts (cat classic.part-* > smollm2-classic.safetensors).
        logged $PY -m opttree.train --kind classic --no-generate --data "${data[@]}" --tokens 1000000000 \
            --init-from "$KIT/smollm2-classic.safetensors" --draft-vocab 8192 --bf16 --minutes "$CLASSIC_MINUTES" \
            --epochs 40 --lr 3e-4 --warmup 20 --eval-every 1000 --tau-prompts 0 --fit-temperature 0 \
            --device "$DEVICE" --ckpt-dir "$KIT/ck" --out "$KIT/classic/smollm2-classic.safetensors"
        split -b 15M "$KIT/classic/smollm2-classic.safetensors" "$OUT/classic.part-"
        cp "$KIT/classic/smollm2-classic.json" "$OUT/"
    fi
    for d in "${data[@]}"; do echo "$(basename "$d"): $(cat "$d/stats.json")" >> "$OUT/run.log"; done
    echo "done after $((SECONDS - t0)) s" | tee -a "$OUT/run.log"
}

case "${1:-}" in
    pack) pack ;;
    hide)
        if [ -n "$(git status --porcelain --untracked-files=all -- "${HIDDEN[@]}")" ]; then
            git status --short --untracked-files=all -- "${HIDDEN[@]}"
            echo "commit or move these first: hide removes what git can put back, nothing else" >&2; exit 1
        fi
        # tracked files only: ignored ones (caches, local results) stay, and do not travel anyway
        git ls-files -z -- "${HIDDEN[@]}" | xargs -0 rm -f
        find "${HIDDEN[@]}" -depth -type d -empty -delete 2>/dev/null || true
        echo "hidden: ${HIDDEN[*]} (tools/gpu_drafts.sh unhide puts them back)" ;;
    unhide) git checkout -- "${HIDDEN[@]}" ;;
    keep) keep ;;
    run) run ;;
    *) sed -n 2,21p "$0"; exit 2 ;;
esac
