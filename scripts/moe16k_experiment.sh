#!/bin/sh
# moe16k_experiment.sh -- the MoE policies compared at 16K (docs/moe.md, "At
# 16K"; results/moe/README.md): the DeepSeek-V3-class model of
# workloads/deepseek_v3_class.json on platforms/16k_npu.xml (PP 16, DP 1024,
# EP 64) with a skewed seeded routing trace (top-2 share 0.2, the cap of
# top-8 routing being 0.25; hot experts drifting with probability 0.05 per
# popularity rank and step; seed 2026; 2 steps), every policy on step 1
# (step 0 is EfficientMoE's history only), replayed with --fold-dp 64
# --moe-sample-mb 1.
# The policies run with --ep-alltoall-algorithm pairwise (HCCL's Pairwise),
# not the concurrent default: with this skewed trace at EP 64 the concurrent
# exchange's flows end one by one, each end a solve of the whole exchange,
# and the comparison did not finish in 50 minutes of CPU (FasterMoE alone
# over 45; on a 256-NPU cut at EP 64 concurrent cost 14x pairwise's CPU
# without a policy, 2x with FasterMoE, 27x with EfficientMoE).  Under
# pairwise it takes about 5 minutes of CPU, most of it FasterMoE's.  The
# concurrent figures that finished are in results/moe/README.md.
#   sh scripts/moe16k_experiment.sh [BUILD_DIR]
# Writes results/moe/deepseek16k_trace_stats.csv,
# results/moe/deepseek16k_policies.csv (simrun's columns and a trace_step
# column) and results/moe/deepseek16k_policies.png.  The trace (6 MB) is
# generated in a scratch folder and not kept.
# BUILD_DIR (default build) must hold moetrace and simrun: checked first,
# one line and exit 1 when one is missing.  Every output is made in the
# scratch folder and moved over the one in results/moe only when all of them
# are complete, so a run that fails (a simrun error, a missing tool,
# interrupted) leaves results/moe as it was.
set -eu
BUILD=${1:-build}
cd "$(dirname "$0")/.."
for tool in moetrace simrun; do
    if [ ! -f "$BUILD/$tool" ] || [ ! -x "$BUILD/$tool" ]; then
        echo "moe16k_experiment.sh: $BUILD/$tool: not found or not executable; build first (cmake --build $BUILD -j2) or give the build folder as the argument" >&2
        exit 1
    fi
done
OUT=results/moe
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir "$TMP/out"
P=platforms/16k_npu.xml
W=workloads/deepseek_v3_class.json

"$BUILD/moetrace" -o "$TMP/skew.trace" --workload "$W" --top2-share 0.2 --drift 0.05 --steps 2 \
    --seed 2026
"$BUILD/moetrace" --stats "$TMP/skew.trace" >"$TMP/out/deepseek16k_trace_stats.csv"

CSV=$TMP/out/deepseek16k_policies.csv
for step in 1; do
    "$BUILD/simrun" --quiet --csv "$TMP/step$step.csv" --fold-dp 64 --moe-sample-mb 1 \
        --ep-alltoall-algorithm pairwise \
        --moe-trace "$TMP/skew.trace" --moe-trace-step "$step" --moe-policy all $P $W
    if [ ! -f "$CSV" ]; then
        head -1 "$TMP/step$step.csv" | sed 's/$/,trace_step/' >"$CSV"
    fi
    tail -n +2 "$TMP/step$step.csv" | sed "s/\$/,$step/" >>"$CSV"
done
/usr/bin/python3 analysis/plot_moe_policies.py "$CSV" "$TMP/out/deepseek16k_policies.png" \
    "skewed trace (top-2 share 0.2), pairwise all-to-all, --fold-dp 64 --moe-sample-mb 1, step 1"

# Combined 1F1B at 16K (docs/moe.md, "Overlapping the all-to-alls"): interleaved
# 1F1B with Megatron-Core's layout of the 61 layers over PP 16 x VPP 2 (the
# workload's uneven first and last stages replaced), balanced routing, with and
# without the overlap, at 16 and 32 micro-batches (global batch 16384, 32768:
# interleaving needs a multiple of PP); about 82 s of simulation (6 December 2026).  results/moe/deepseek16k_overlap.csv
OV=$TMP/out/deepseek16k_overlap.csv
for gbs in 16384 32768; do
    for overlap in false true; do
        "$BUILD/simrun" --quiet --csv "$OV" --fold-dp 64 --moe-sample-mb 1 --schedule interleaved \
            --set decoder_first_pipeline_num_layers=0 --set decoder_last_pipeline_num_layers=0 \
            --set 'pipeline_model_parallel_layout="Et*2|(tt|)*29,t|L"' \
            --set virtual_pipeline_model_parallel_size=2 --set global_batch_size=$gbs \
            --set overlap_moe_expert_parallel_comm=$overlap $P $W
    done
done

# Every output is complete: each goes over the shipped one by a rename in
# results/moe (a copy beside it first, as the scratch folder may be on another
# file system), so no file there is ever half written.
mkdir -p "$OUT"
for name in deepseek16k_trace_stats.csv deepseek16k_policies.csv deepseek16k_policies.png \
    deepseek16k_overlap.csv; do
    if ! cp "$TMP/out/$name" "$OUT/.$name.part" || ! mv -f "$OUT/.$name.part" "$OUT/$name"; then
        rm -f "$OUT/.$name.part"
        echo "moe16k_experiment.sh: cannot write $OUT/$name" >&2
        exit 1
    fi
done
