# Sourced by the A/B scripts (grouped_attention.sh, mkl_pack.sh): one bench run at the auto budget, head
# alone and fused with retrieval, beside AR, on a frozen prompt set, with the environment that switches the
# engine change under test. Needs PY, T (torch threads) and OUT set by the caller.
auto_ab_run() {  # $1 prompts, $2 limit, $3 name, then VAR=value settings
  local prompts=$1 limit=$2 name=$3; shift 3
  env "$@" PYTHONPATH=. $PY -m opttree bench --device cpu --threads "$T" --prompts "$prompts" --limit "$limit" \
    --methods ar,opt-tree@auto,opt-tree@auto+retrieval --drafter eagle --max-depth 10 --threshold 0.5 \
    --temperature 0 --max-new-tokens 64 --warmup 1 --out "$OUT/$name.json" 2>&1 | tee "$OUT/$name.log"
}
