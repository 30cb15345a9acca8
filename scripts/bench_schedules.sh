#!/bin/sh
# bench_schedules.sh -- wall time of every synchronous schedule on the 16K
# Llama-3 405B run, and of the 64K run (a benchmark: it prints figures and the
# targets beside them, it asserts nothing).
#   sh scripts/bench_schedules.sh [build/simrun] [repeats]
# For each case, run twice: by default (the exact TP fold: one flow per TP
# group where the fabric allows it) and with --per-rank-flows (one flow per
# TP rank): the median of `repeats` (default 5) wall times, their spread
# (min-max), the peak RSS, the SimGrid activities, the ratio of the medians
# and both simulated iteration times (equal: the fold is exact).  The load average is
# printed before and after: the machine is shared, so wall times are only
# comparable at similar load.  Targets (issue 11): 5 s per schedule at 16K,
# 30 s at 64K.
set -eu
. "$(dirname "$0")/bench_common.sh"
bench_init bench_schedules.sh REPEATS 5 "$@"

bench() { # name target_s args...: the default run (the exact TP fold) and --per-rank-flows
    name=$1 target=$2
    shift 2
    timed_runs "$name" "$@" || return 1
    f_med=$median f_lo=$lo f_hi=$hi f_rss=$rss f_row=$row
    timed_runs "$name" --per-rank-flows "$@" || return 1
    printf '%-32s %6s s [%5s-%5s] %4.0f MiB %7s act | per rank %6s s [%5s-%5s] %4.0f MiB %8s act | x%-5s (target %2s s)  iteration %s / %s s\n' \
        "$name" "$f_med" "$f_lo" "$f_hi" "$(awk "BEGIN{print $f_rss/1024}")" \
        "$(echo "$f_row" | awk -F, '{print $27}')" \
        "$median" "$lo" "$hi" "$(awk "BEGIN{print $rss/1024}")" \
        "$(echo "$row" | awk -F, '{print $27}')" \
        "$(awk "BEGIN{printf \"%.2f\", $median/$f_med}")" "$target" \
        "$(echo "$f_row" | awk -F, '{print $14}')" "$(echo "$row" | awk -F, '{print $14}')"
}

echo "bench_schedules: $(nproc) cores, median of $REPEATS [min-max], $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "each case: the default run (the exact TP fold, docs/design.md) | the same with --per-rank-flows,"
echo "the ratio of their medians, and both iteration times (equal when the fold is exact)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
P16=platforms/16k_npu.xml
L=workloads/llama.json             # as trained: interleaved, v = 2
L1=workloads/llama3_405b_1f1b.json # the same run on 1F1B
for s in gpipe 1f1b zb-h1 zb-h2 pipedream-2bw; do
    bench "16K llama $s" 5 --schedule "$s" $P16 $L1
done
bench "16K llama.json (interleaved v=2)" 5 $P16 $L
# 64K NPUs: the same model with DP 512 and 16 micro-batches per pipeline.
/usr/bin/python3 platforms/gen_platform.py --preset 910b --npus 65536 -o "$TMP/64k.xml"
REPEATS=${REPEATS64:-1}
bench "64K llama 1f1b (DP 512)" 30 --set data_parallel_size=512 \
    --set global_batch_size=8192 "$TMP/64k.xml" $L1
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
