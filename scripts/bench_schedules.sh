#!/bin/sh
# bench_schedules.sh -- wall time of every synchronous schedule on the 16K
# Llama-3 405B run, and of the 64K run (a benchmark: it prints figures and the
# targets beside them, it asserts nothing).
#   sh scripts/bench_schedules.sh [build/simrun] [repeats]
# For each case: the median of `repeats` (default 5) wall times, their spread
# (min-max), the peak RSS, the SimGrid activities and the simulated iteration
# time (to compare fidelity before and after a change).  The load average is
# printed before and after: the machine is shared, so wall times are only
# comparable at similar load.  Targets (issue 11): 5 s per schedule at 16K,
# 30 s at 64K.
set -eu
SIMRUN=${1:-build/simrun}
REPEATS=${2:-5}
cd "$(dirname "$0")/.."
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. scripts/bench_common.sh

bench() { # name target_s args...
    name=$1 target=$2
    shift 2
    timed_runs "$name" "$@" || return 1
    printf '%-34s %7s s  [%5s-%5s] (target %2s s)  RSS %6.0f MiB  %8s act  iteration %s s\n' \
        "$name" "$median" "$lo" "$hi" "$target" "$(awk "BEGIN{print $rss/1024}")" \
        "$(echo "$row" | awk -F, '{print $27}')" "$(echo "$row" | awk -F, '{print $14}')"
}

echo "bench_schedules: $(nproc) cores, median of $REPEATS [min-max], $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
P16=platforms/16k_npu.xml
L=workloads/llama.json
for s in gpipe 1f1b zb-h1 zb-h2 pipedream-2bw; do
    bench "16K llama.json $s" 5 --schedule "$s" $P16 $L
done
# Interleaved, v = 2: llama.json's 126 layers with the embedding and the loss
# counted as layers (Meta's split) are 128 = 16 stages x 2 chunks x 4.
bench "16K llama.json interleaved v=2" 5 --schedule interleaved \
    --set virtual_pipeline_model_parallel_size=2 $P16 $L
bench "16K llama3_405b_trained.json" 5 $P16 workloads/llama3_405b_trained.json
# 64K NPUs: the same model with DP 512 and 16 micro-batches per pipeline.
/usr/bin/python3 platforms/gen_platform.py --preset 910b --npus 65536 -o "$TMP/64k.xml"
REPEATS=${REPEATS64:-1}
bench "64K llama.json 1f1b (DP 512)" 30 --set data_parallel_size=512 \
    --set global_batch_size=8192 "$TMP/64k.xml" $L
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
