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
# BUILD_DIR (default build) must hold moetrace and simrun: checked first,
# one line and exit 1 when one is missing.  Every output is made in a
# scratch folder and moved over the one in results/moe only when all of them
# are complete, so a run that fails (a simrun error, a missing tool,
# interrupted) leaves results/moe as it was.
set -eu
BUILD=${1:-build}
cd "$(dirname "$0")/.."
for tool in moetrace simrun; do
    if [ ! -f "$BUILD/$tool" ] || [ ! -x "$BUILD/$tool" ]; then
        echo "moe_experiment.sh: $BUILD/$tool: not found or not executable; build first (cmake --build $BUILD -j2) or give the build folder as the argument" >&2
        exit 1
    fi
done
OUT=results/moe
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir "$TMP/out"

"$BUILD/moetrace" -o "$TMP/skew.trace" --workload workloads/moe_21b_32npu.json \
    --top2-share 0.7 --drift 0.05 --steps 5 --seed 2026
"$BUILD/moetrace" --stats "$TMP/skew.trace" >"$TMP/out/trace_stats.csv"

CSV=$TMP/out/policies.csv
for step in 1 2 3 4; do
    "$BUILD/simrun" --quiet --csv "$TMP/step$step.csv" --moe-trace "$TMP/skew.trace" \
        --moe-trace-step "$step" --moe-policy all platforms/moe_32npu.xml \
        workloads/moe_21b_32npu.json
    if [ ! -f "$CSV" ]; then
        head -1 "$TMP/step$step.csv" | sed 's/$/,trace_step/' >"$CSV"
    fi
    tail -n +2 "$TMP/step$step.csv" | sed "s/\$/,$step/" >>"$CSV"
done
/usr/bin/python3 analysis/plot_moe_policies.py "$CSV" "$TMP/out/policies.png"

OV=$TMP/out/overlap.csv
for policy in none switch efficientmoe; do
    for step in 1 2 3 4; do
        rm -f "$TMP/ov.csv"
        "$BUILD/simrun" --quiet --csv "$TMP/ov.csv" --moe-trace "$TMP/skew.trace" \
            --moe-trace-step "$step" --moe-policy "$policy" \
            --set overlap_moe_expert_parallel_comm=true platforms/moe_32npu.xml \
            workloads/moe_21b_32npu.json
        if [ ! -f "$OV" ]; then
            head -1 "$TMP/ov.csv" | sed 's/$/,trace_step/' >"$OV"
        fi
        tail -n +2 "$TMP/ov.csv" | sed "s/\$/,$step/" >>"$OV"
    done
done

# Every output is complete: each goes over the shipped one by a rename in
# results/moe (a copy beside it first, as the scratch folder may be on another
# file system), so no file there is ever half written.
mkdir -p "$OUT"
for name in trace_stats.csv policies.csv policies.png overlap.csv; do
    if ! cp "$TMP/out/$name" "$OUT/.$name.part" || ! mv -f "$OUT/.$name.part" "$OUT/$name"; then
        rm -f "$OUT/.$name.part"
        echo "moe_experiment.sh: cannot write $OUT/$name" >&2
        exit 1
    fi
done
