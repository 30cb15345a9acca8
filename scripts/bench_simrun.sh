#!/bin/sh
# bench_simrun.sh -- wall time and peak memory of simrun runs (a benchmark,
# not a test: it prints figures and the targets beside them).
#   sh scripts/bench_simrun.sh [build/simrun] [repeats]
# Prints one line per case: wall seconds (best of `repeats`), peak RSS (MiB),
# SimGrid activities, and the target.
set -eu
SIMRUN=${1:-build/simrun}
REPEATS=${2:-3}
cd "$(dirname "$0")/.."
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

bench() { # name target_s target_mib args...
    name=$1 target_s=$2 target_mib=$3
    shift 3
    best="" rss=""
    i=0
    while [ $i -lt "$REPEATS" ]; do
        /usr/bin/time -f '%e %M' -o "$TMP/time" "$SIMRUN" --quiet --csv "$TMP/run.csv" "$@" 2>"$TMP/err" ||
            { echo "$name: simrun failed: $(cat "$TMP/err")"; return 1; }
        read -r wall kib <"$TMP/time"
        if [ -z "$best" ] || awk "BEGIN{exit !($wall < $best)}"; then best=$wall; fi
        rss=$kib
        i=$((i + 1))
    done
    acts=$(tail -1 "$TMP/run.csv" | awk -F, '{print $(NF-1)}')
    iter=$(tail -1 "$TMP/run.csv" | awk -F, '{print $14}')
    printf '%-44s wall %7.2f s (target %5s s)   peak RSS %7.1f MiB (target %5s MiB)   %9s activities   iteration %s s\n' \
        "$name" "$best" "$target_s" "$(awk "BEGIN{print $rss/1024}")" "$target_mib" "$acts" "$iter"
}

echo "simrun benchmark on $(nproc) cores, best of $REPEATS, $(date -u +%Y-%m-%d)"
bench "16k_npu.xml llama.json (1F1B)" 30 2048 platforms/16k_npu.xml workloads/llama.json
