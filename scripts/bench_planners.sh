#!/bin/sh
# bench_planners.sh -- planner wall time (a benchmark: it prints, it asserts
# nothing).  Targets: BMPipe on 126 layers x 16 stages x 3 options under 10 s
# (or a reported MIP gap at the limit), every other planner under 1 s.
#   sh scripts/bench_planners.sh [build/simrun]
# Each planner runs on Llama-3 405B (TP8 PP16 DP128) and GPT-3 175B (TP8 PP8
# DP256) on platforms/16k_npu.xml; the simulation is folded (--fold-dp 1)
# since only the planner's time is measured here.  CSIMD and MBPP plan GPipe.
set -eu
SIMRUN=${1:-build/simrun}
cd "$(dirname "$0")/.."
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
P=platforms/16k_npu.xml

printf '%-10s %-34s %14s %8s  %s\n' planner workload "planner (s)" target solver
one() { # planner label args...
    planner=$1 label=$2
    shift 2
    rm -f "$TMP/r.csv"
    if "$SIMRUN" --quiet --csv "$TMP/r.csv" --fold-dp 1 --planner "$planner" "$@" 2>"$TMP/err"; then
        target=1
        [ "$planner" = bmpipe ] && target=10
        tail -1 "$TMP/r.csv" | awk -F, -v p="$planner" -v l="$label" -v t="$target" \
            '{ st = $28; gap = $29
               if (st ~ /^"/) { st = $28 "," $29; gap = $30 }   # a quoted status holds a comma
               gsub(/"/, "", st)
               printf "%-10s %-34s %14.4f %8s  %s%s\n", p, l, $25, t, st, st == "" ? "" : ", gap " gap }'
    else
        printf '%-10s %-34s %s\n' "$planner" "$label" "$(head -c 90 "$TMP/err")"
    fi
}
for planner in megatron pipedream adapipe merak ft bmpipe; do
    one "$planner" "llama 405B, 126 layers x 16 stages" "$P" workloads/llama3_405b_1f1b.json
    one "$planner" "gpt3 175B, 96 layers x 8 stages" --set data_parallel_size=256 \
        --set global_batch_size=4096 "$P" workloads/gpt3_175b.json
done
for planner in csimd mbpp-r mbpp-e; do
    one "$planner" "llama 405B, GPipe" --schedule gpipe --set recompute_granularity=full \
        "$P" workloads/llama3_405b_1f1b.json
done
