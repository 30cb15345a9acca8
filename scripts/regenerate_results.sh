#!/bin/sh
# regenerate_results.sh -- every CSV and figure of results/, from the sweep
# files of results/sweeps/ (docs/sweeps.md), in one command:
#   sh scripts/regenerate_results.sh [--resume] [-j N]
# 1. builds simrun and simsweep in build/ when they are missing;
# 2. writes the 1K..8K scaling platforms (gen_platform.py --preset 910b) into
#    results/platforms/ (16K is platforms/16k_npu.xml, the same preset);
# 3. removes the CSVs the sweeps write (not with --resume: simsweep then runs
#    only the points without a row), and runs every results/sweeps/*.json
#    with build/simsweep -j N (default 2);
# 4. draws every PNG of results/ with analysis/ (/usr/bin/python3).
# A point that fails (a plan that does not fit) keeps a failed row, which the
# plots leave out and say so; any other simsweep failure stops the script.
# The last line gives the total wall time.  results/README.md explains each
# figure.
set -eu
RESUME=0
JOBS=2
while [ $# -gt 0 ]; do
    case $1 in
    --resume) RESUME=1 ;;
    -j) JOBS=$2; shift ;;
    *) echo "usage: sh scripts/regenerate_results.sh [--resume] [-j N]" >&2; exit 1 ;;
    esac
    shift
done
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
R=results
started=$(date +%s)

if [ ! -x build/simsweep ] || [ ! -x build/simrun ]; then
    cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build build -j2 --target simsweep
fi

mkdir -p $R/platforms
for n in 1k:1024 2k:2048 4k:4096 8k:8192; do
    $PY platforms/gen_platform.py --preset 910b --npus "${n#*:}" -o "$R/platforms/910b_${n%%:*}.xml"
done

CSVS="planners csimd pp_microbatch scaling frontier_run frontier_llama"
if [ $RESUME -eq 0 ]; then
    for c in $CSVS; do rm -f "$R/$c.csv"; done
fi

# Sweeps in order of the figures; exit 3 (some points failed) is a result.
for s in planners_llama planners_gpt3 planners_swin csimd frontier_llama pp_microbatch \
    scaling_1k scaling_2k scaling_4k scaling_8k scaling_16k; do
    echo "== results/sweeps/$s.json"
    rc=0
    build/simsweep -j "$JOBS" "$R/sweeps/$s.json" || rc=$?
    if [ $rc -ne 0 ] && [ $rc -ne 3 ]; then
        echo "regenerate_results: simsweep $R/sweeps/$s.json failed (exit $rc)" >&2
        exit $rc
    fi
done

echo "== figures"
P16="16,384 Ascend-910B-class NPUs (platforms/16k_npu.xml)"
$PY analysis/plot_planners.py $R/planners.csv --where workload=workloads/llama3_405b_1f1b.json \
    -o $R/planners_llama.png
$PY analysis/plot_planners.py $R/planners.csv -o $R/planners.png
$PY analysis/plot_planners.py $R/csimd.csv --baseline mbpp-e -o $R/csimd.png
$PY analysis/plot_frontier.py $R/frontier_llama.csv \
    --title "Llama-3 405B (workloads/llama3_405b_1f1b.json) on up to $P16: TensorOpt's frontier" \
    -o $R/frontier_llama.png
$PY analysis/plot_sweep.py $R/pp_microbatch.csv --x num_micro_batches --y bubble_ratio --group pp \
    --logx --logy --title "Pipeline bubble: (p - 1)/m, falling with micro-batches m, rising with depth p" \
    -o $R/pp_bubble.png
$PY analysis/plot_sweep.py $R/pp_microbatch.csv --x num_micro_batches --y mfu --group pp \
    --logx --ymin 0 --title "MFU: deeper pipelines need more micro-batches" -o $R/pp_mfu.png
$PY analysis/plot_sweep.py $R/scaling.csv --x npus --y mfu --where fold_dp=0 \
    --logx --ymin 0 --title "Weak scaling, the same work per NPU from 1K to 16K NPUs: MFU stays flat" \
    -o $R/scaling_mfu.png
$PY analysis/plot_sweep.py $R/scaling.csv --x npus --y sim_wall_s --group fold_dp \
    --logx --logy --title "The simulator's cost: host seconds to simulate one iteration" \
    -o $R/scaling_wall.png

elapsed=$(($(date +%s) - started))
echo "regenerate_results: every sweep and figure of $R/ in $((elapsed / 60))m$((elapsed % 60))s"
