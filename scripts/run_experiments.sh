#!/bin/sh
# run_experiments.sh -- the planner comparison of results/README.md.
#   sh scripts/run_experiments.sh [build/simrun] [out_dir]
# Simulates every planner's plan (simrun --planner all) on platforms/16k_npu.xml
# for three workloads and writes out_dir/planners.csv (one row per planner and
# workload), out_dir/planners.png and out_dir/frontier_llama.csv/.png.
#   1. Llama-3 405B, workloads/llama.json as shipped (TP8 PP16 DP128, 1F1B).
#   2. GPT-3 175B, TP8 PP8 DP256 (the 1,024-GPU workload widened to 16K NPUs,
#      global batch 4096 so that each pipeline still runs 16 micro-batches).
#   3. Swin-B layer by layer (a Transformer whose layers differ: the hidden
#      size doubles at each stage), PP8 DP2048, GPipe (the CSIMD setting).
# Then CSIMD against MBPP-R/E on one 8-stage GPipe pipeline (out_dir/csimd.csv).
# A planner that does not apply (CSIMD on 1F1B, 1F1B-only planners on GPipe)
# or whose plans do not fit is reported on stderr and left out of the CSV.
set -eu
SIMRUN=${1:-build/simrun}
OUT=${2:-results}
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
CSV="$OUT/planners.csv"
rm -f "$CSV"
P=platforms/16k_npu.xml

echo "== Llama-3 405B"
"$SIMRUN" --planner all --csv "$CSV" "$P" workloads/llama.json
echo "== GPT-3 175B"
"$SIMRUN" --planner all --csv "$CSV" --set data_parallel_size=256 --set global_batch_size=4096 \
    "$P" workloads/gpt3_175b.json
echo "== Swin-B (heterogeneous layers)"
"$SIMRUN" --planner all --csv "$CSV" --set pipeline_model_parallel_size=8 \
    --set data_parallel_size=2048 --set global_batch_size=262144 "$P" workloads/swin_b.json

/usr/bin/python3 analysis/plot_planners.py "$CSV" -o "$OUT/planners.png"

# CSIMD's own setting: one GPipe pipeline of 8 stages (8 NPUs, two servers),
# CSIMD against its baselines MBPP-R and MBPP-E.
CSIMD_CSV="$OUT/csimd.csv"
rm -f "$CSIMD_CSV"
for w in vgg19 resnet152 swin_b; do
    for planner in mbpp-r mbpp-e csimd; do
        "$SIMRUN" --quiet --csv "$CSIMD_CSV" --planner "$planner" \
            --set pipeline_model_parallel_size=8 --set data_parallel_size=1 \
            --set global_batch_size=128 platforms/test_8npu.xml "workloads/$w.json"
    done
done
/usr/bin/python3 analysis/plot_planners.py "$CSIMD_CSV" --baseline mbpp-e -o "$OUT/csimd.png"
"$SIMRUN" --quiet --frontier "$OUT/frontier_llama.csv" --fold-dp 1 "$P" workloads/llama.json
# The plot shows the platform's own 16,384 NPUs (the CSV has every count).
awk -F, 'NR == 1 || $1 == 16384' "$OUT/frontier_llama.csv" >"$OUT/frontier_llama_16k.csv"
/usr/bin/python3 analysis/plot_frontier.py "$OUT/frontier_llama_16k.csv" \
    --title "Llama-3 405B on 16,384 NPUs: iteration time vs peak memory per NPU" \
    -o "$OUT/frontier_llama.png"
echo "wrote $CSV, $OUT/planners.png, $CSIMD_CSV, $OUT/csimd.png, $OUT/frontier_llama.csv, $OUT/frontier_llama.png"
