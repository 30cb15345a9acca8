#!/bin/sh
# bench_moe.sh -- wall time and peak memory of the 16K MoE iteration with its
# all-to-alls replayed pair by pair (issue 9: under 60 s and 4 GiB on this
# 2-core machine; docs/moe.md, "At 16K").
#   sh scripts/bench_moe.sh [build/simrun] [repeats]
# Prints one line per case: wall seconds (median of `repeats`, default 3, and
# the min-max spread), peak RSS (MiB), the iteration and all-to-all times.
# The reductions: --fold-dp 64 simulates one EP group (64 replicas) per
# stage, the other 15 join the dense and expert-DP gradient syncs with their
# real flows; --moe-sample-mb 1 replays micro-batch 0's all-to-alls pair by
# pair in every simulated EP group, and all 15 micro-batches' in the witness
# group (stage 1's), the rest wait their group's measured time.  The skewed
# trace is generated here (build/moetrace, seeded) and not kept; its case
# runs the concurrent default and takes about 6.5 minutes per run (398 s on
# 6 December 2026 with the full recompute's all-to-alls replayed, 264 s
# before; 28 s under --ep-alltoall-algorithm pairwise: docs/moe.md,
# "Shipped workloads").
# The machine is shared: the load average is printed before and after.
set -eu
. "$(dirname "$0")/bench_common.sh"
bench_init bench_moe.sh REPEATS 3 "$@"
MOETRACE=$(dirname "$SIMRUN")/moetrace

col() { # the column named $1 of the CSV's header, in its last row (simrun appends)
    awk -F, -v n="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == n) c = i } END { print $c }' \
        "$TMP/run.csv"
}

bench() { # name args...
    name=$1
    shift
    timed_runs "$name" "$@" || return 1
    printf '%-46s wall %6s s [%s-%s] (target 60 s)   peak RSS %7.1f MiB (target 4096)   iteration %8.3f s   all-to-all %7.3f s\n' \
        "$name" "$median" "$lo" "$hi" "$(awk "BEGIN{print $rss/1024}")" "$(col iteration_s)" \
        "$(col moe_alltoall_s | awk '{print $1 + 0}')"
}

P=platforms/16k_npu.xml
W=workloads/deepseek_v3_class.json
"$MOETRACE" -o "$TMP/skew.trace" --workload "$W" --top2-share 0.2 --drift 0.05 --steps 2 \
    --seed 2026 >/dev/null
echo "MoE benchmark on $(nproc) cores, median of $REPEATS [min-max], $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
bench "deepseek 16K closed form (no flag)" $P $W
bench "deepseek 16K --fold-dp 64 --moe-sample-mb 1" --fold-dp 64 --moe-sample-mb 1 $P $W
bench "  the same, skewed trace (top-2 share 0.2)" --fold-dp 64 --moe-sample-mb 1 \
    --moe-trace "$TMP/skew.trace" --moe-trace-step 1 $P $W
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
