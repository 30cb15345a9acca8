#!/bin/sh
# bench_scaling.sh -- simulation wall time and peak RSS against cluster size
# (a benchmark: it prints figures, it asserts nothing).
#   sh scripts/bench_scaling.sh [build/simrun] [sizes...]
# For each size N it generates an Ascend-910B fat-tree platform of N NPUs
# (platforms/gen_platform.py) and simulates one 1F1B iteration of Llama-3 405B
# with TP 8, PP 16 and DP = N/128, keeping 16 micro-batches per pipeline
# (global batch 16·DP), so every NPU does the same work at every size.  Every
# NPU is a SimGrid host and every TP rank's stage-to-stage flow runs on its
# own NIC.  The last line is the growth exponent k of wall ∝ N^k (least
# squares on log-log), with and without --fold-dp 1.
set -eu
SIMRUN=${1:-build/simrun}
[ $# -gt 0 ] && shift
SIZES=${*:-1024 2048 4096 8192 16384 65536}
cd "$(dirname "$0")/.."
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

run() { # N extra-args...; prints "wall rss_kib activities iteration_s"
    n=$1
    shift
    dp=$((n / 128))
    /usr/bin/time -f '%e %M' -o "$TMP/time" "$SIMRUN" --quiet --csv "$TMP/$n.csv" \
        --set data_parallel_size=$dp --set global_batch_size=$((16 * dp)) "$@" \
        "$TMP/p$n.xml" workloads/llama3_405b_1f1b.json
    read -r wall kib <"$TMP/time"
    row=$(tail -1 "$TMP/$n.csv")
    echo "$wall $kib $(echo "$row" | awk -F, '{print $27, $14}')"
}

printf '%8s %10s %10s %12s %14s   %10s %10s\n' NPUs "wall (s)" "RSS (MiB)" activities "iteration (s)" "fold1 (s)" "fold1 MiB"
: >"$TMP/fit"
for n in $SIZES; do
    /usr/bin/python3 platforms/gen_platform.py --preset 910b --npus "$n" -o "$TMP/p$n.xml"
    set -- $(run "$n")
    wall=$1 kib=$2 acts=$3 iter=$4
    set -- $(run "$n" --fold-dp 1)
    fwall=$1 fkib=$2
    printf '%8d %10.2f %10.1f %12d %14.4f   %10.2f %10.1f\n' "$n" "$wall" "$(awk "BEGIN{print $kib/1024}")" \
        "$acts" "$iter" "$fwall" "$(awk "BEGIN{print $fkib/1024}")"
    echo "$n $wall $fwall" >>"$TMP/fit"
    rm -f "$TMP/p$n.xml"
done
awk '{x=log($1); y=log($2); z=log($3); n++; sx+=x; sy+=y; sz+=z; sxx+=x*x; sxy+=x*y; sxz+=x*z}
     END {d=n*sxx-sx*sx; if (n>1 && d>0) printf "growth exponent of wall time in NPUs: %.2f (full), %.2f (--fold-dp 1)\n", (n*sxy-sx*sy)/d, (n*sxz-sx*sz)/d}' "$TMP/fit"
