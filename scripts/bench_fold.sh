#!/bin/sh
# bench_fold.sh -- symmetry folding (--fold-dp) against the full run, for every
# synchronous schedule, on the 16K Llama and the 1,024-GPU GPT-3 cases.
#   sh scripts/bench_fold.sh [build/simrun] [K]
# Prints, per case: iteration time, bubble and peak memory of the full run,
# their relative difference with --fold-dp K (default 1), and both wall times.
set -eu
. "$(dirname "$0")/bench_common.sh"
bench_init bench_fold.sh K 1 "$@"
K=$REPEATS

# prints "wall iteration bubble peak" of one run, or nothing when it fails
run() {
    rm -f "$TMP/r.csv"
    /usr/bin/time -f '%e' -o "$TMP/time" "$SIMRUN" --quiet --csv "$TMP/r.csv" "$@" 2>"$TMP/err" ||
        return 0
    echo "$(cat "$TMP/time") $(tail -1 "$TMP/r.csv" | awk -F, '{print $14, $18, $19}')"
}

compare() { # name args...
    name=$1
    shift
    full=$(run "$@")
    if [ -z "$full" ]; then
        printf '%-34s %s\n' "$name" "$(head -c 100 "$TMP/err")..."
        return
    fi
    set -- $full $(run --fold-dp "$K" "$@")
    awk -v n="$name" -v w1="$1" -v i1="$2" -v b1="$3" -v p1="$4" -v w2="$5" -v i2="$6" -v b2="$7" -v p2="$8" \
        'function rel(a, b) { return (a > b ? a - b : b - a) / (b > 0 ? b : 1) }
         BEGIN { printf "%-34s %11.4f %8.4f %8.2f   %9.2e %9.2e %9.2e   %7.2f %7.2f\n",
                 n, i1, b1, p1 / 1e9, rel(i2, i1), rel(b2, b1), rel(p2, p1), w1, w2 }'
}

printf '%-34s %11s %8s %8s   %9s %9s %9s   %7s %7s\n' case "iter (s)" bubble "peak GB" \
    "d iter" "d bubble" "d peak" "full s" "fold s"
for s in 1f1b gpipe zb-h1 zb-h2 pipedream-2bw; do
    compare "llama 16K $s" --schedule "$s" platforms/16k_npu.xml workloads/llama3_405b_1f1b.json
done
compare "llama 16K interleaved (v=2, llama.json)" platforms/16k_npu.xml workloads/llama.json
# GPipe holds all 96 micro-batches: only full recompute fits in 80 GB.
compare "gpt3 1024 gpipe (full recompute)" --schedule gpipe --set recompute_granularity=full \
    platforms/dgx_a100_1024.xml workloads/gpt3_175b.json
for s in 1f1b zb-h1 zb-h2 pipedream-2bw; do
    compare "gpt3 1024 $s" --schedule "$s" platforms/dgx_a100_1024.xml workloads/gpt3_175b.json
done
compare "gpt3 1024 interleaved (v=2)" --schedule interleaved \
    --set virtual_pipeline_model_parallel_size=2 platforms/dgx_a100_1024.xml workloads/gpt3_175b.json
