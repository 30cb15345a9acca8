#!/bin/sh
# bench_solver.sh -- wall time of SimGrid's three max-min update modes on the
# fabrics whose choice matters (a benchmark: it prints figures, it asserts
# nothing).
#   sh scripts/bench_solver.sh [build/simrun] [repeats]
# simrun picks the mode by fabric (platform_internal.h): the whole system
# solved at every event (network/optim:Full) on fat trees, Clos and rails;
# Full with network/maxmin-selective-update on a torus or a dragonfly
# (SimGrid's Lazy update is measured, not used: it can move the times).
# Each case runs under all three, forced with --cfg, and
# without --cfg (the automatic choice, marked "auto"): the median of
# `repeats` (default 5) wall times, the spread (min-max) and the simulated
# iteration time, which is the same in every mode.  The dragonfly under Full
# takes about nine minutes a run: it runs once, and only with
# DRAGONFLY_FULL=1.
set -eu
. "$(dirname "$0")/bench_common.sh"
bench_init bench_solver.sh REPEATS 5 "$@"
GEN="/usr/bin/python3 platforms/gen_platform.py"
$GEN --preset h100 --npus 16384 --fabric torus --torus 16,32,32 -o "$TMP/torus.xml"
$GEN --preset h100 --npus 16384 --fabric dragonfly --dragonfly "16,68;16,1;16,1;4" -o "$TMP/dragonfly.xml"
$GEN --preset 910b --npus 65536 -o "$TMP/64k.xml"
ALL=$REPEATS

mode() { # name auto-mode repeats args...: one line per mode
    name=$1 auto=$2 reps=$3
    shift 3
    REPEATS=$reps
    for m in Full selective Lazy auto; do
        case $m in
        Full) cfg=--cfg=network/optim:Full ;;
        selective) cfg=--cfg=network/maxmin-selective-update:yes ;;
        Lazy) cfg=--cfg=network/optim:Lazy ;;
        auto) cfg= ;;
        esac
        if [ "$name" = "16K dragonfly" ] && [ $m = Full ]; then
            if [ "${DRAGONFLY_FULL:-0}" != 1 ]; then
                printf '%-30s %-10s skipped (about 9 min a run; DRAGONFLY_FULL=1 runs it once)\n' "$name" $m
                continue
            fi
            REPEATS=1
        fi
        # shellcheck disable=SC2086
        timed_runs "$name" $cfg "$@" || return 1
        label=$m
        [ $m = auto ] && label="auto=$auto"
        printf '%-30s %-15s %7s s [%7s-%7s]  iteration %s s\n' "$name" "$label" "$median" "$lo" "$hi" \
            "$(echo "$row" | awk -F, '{print $14}')"
        REPEATS=$reps
    done
}

echo "bench_solver: $(nproc) cores, median of $ALL [min-max], $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
L=workloads/llama.json
mode "16K fat tree, per-rank flows" Full "$ALL" --per-rank-flows platforms/16k_npu.xml $L
mode "16K fat tree (TP fold)" Full "$ALL" platforms/16k_npu.xml $L
mode "16K torus 16x32x32" selective "$ALL" "$TMP/torus.xml" $L
mode "16K dragonfly" selective "$ALL" "$TMP/dragonfly.xml" $L
mode "64K fat tree, per-rank 1F1B" Full "${REPEATS64:-1}" --per-rank-flows \
    --set data_parallel_size=512 --set global_batch_size=8192 "$TMP/64k.xml" workloads/llama3_405b_1f1b.json
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
