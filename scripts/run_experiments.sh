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
"$SIMRUN" --quiet --frontier "$OUT/frontier_llama.csv" --fold-dp 1 "$P" workloads/llama.json
/usr/bin/python3 analysis/plot_frontier.py "$OUT/frontier_llama.csv" --group devices \
    -o "$OUT/frontier_llama.png"
echo "wrote $CSV, $OUT/planners.png, $OUT/frontier_llama.csv, $OUT/frontier_llama.png"
