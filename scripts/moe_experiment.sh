#!/bin/sh
# moe_experiment.sh -- the MoE policies compared (docs/moe.md, "Policies";
# results/moe/README.md): the 21B MoE of workloads/moe_21b_32npu.json on
# platforms/moe_32npu.xml (4 servers x 8 NPUs, EP 32) with a skewed seeded
# routing trace (top-2 share 0.7, hot experts drifting with probability 0.05
# per popularity rank and step, seed 2026, 5 steps), every policy on steps 1
# to 4 (step 0 is the predictor's history only).
#   sh scripts/moe_experiment.sh [BUILD_DIR]
# Writes results/moe/trace_stats.csv, results/moe/policies.csv (simrun's
# columns and a trace_step column) and results/moe/policies.png; then the
# same steps again with combined 1F1B (model.overlap_moe_expert_parallel_comm,
# docs/moe.md) for every policy but FasterMoE, which it does not combine
# with: results/moe/overlap.csv.
set -eu
BUILD=${1:-build}
cd "$(dirname "$0")/.."
OUT=results/moe
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT"

"$BUILD/moetrace" -o "$TMP/skew.trace" --workload workloads/moe_21b_32npu.json \
    --top2-share 0.7 --drift 0.05 --steps 5 --seed 2026
"$BUILD/moetrace" --stats "$TMP/skew.trace" >"$OUT/trace_stats.csv"

rm -f "$OUT/policies.csv"
for step in 1 2 3 4; do
    "$BUILD/simrun" --quiet --csv "$TMP/step$step.csv" --moe-trace "$TMP/skew.trace" \
        --moe-trace-step "$step" --moe-policy all platforms/moe_32npu.xml \
        workloads/moe_21b_32npu.json
    if [ ! -f "$OUT/policies.csv" ]; then
        head -1 "$TMP/step$step.csv" | sed 's/$/,trace_step/' >"$OUT/policies.csv"
    fi
    tail -n +2 "$TMP/step$step.csv" | sed "s/\$/,$step/" >>"$OUT/policies.csv"
done
/usr/bin/python3 analysis/plot_moe_policies.py "$OUT/policies.csv" "$OUT/policies.png"

rm -f "$OUT/overlap.csv"
for policy in none switch efficientmoe; do
    for step in 1 2 3 4; do
        rm -f "$TMP/ov.csv"
        "$BUILD/simrun" --quiet --csv "$TMP/ov.csv" --moe-trace "$TMP/skew.trace" \
            --moe-trace-step "$step" --moe-policy "$policy" \
            --set overlap_moe_expert_parallel_comm=true platforms/moe_32npu.xml \
            workloads/moe_21b_32npu.json
        if [ ! -f "$OUT/overlap.csv" ]; then
            head -1 "$TMP/ov.csv" | sed 's/$/,trace_step/' >"$OUT/overlap.csv"
        fi
        tail -n +2 "$TMP/ov.csv" | sed "s/\$/,$step/" >>"$OUT/overlap.csv"
    done
done
