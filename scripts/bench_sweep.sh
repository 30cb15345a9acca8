#!/bin/sh
# bench_sweep.sh -- simsweep's local runner at -j 1 and -j 2 on a 200-point
# sweep of the GPT-3 175B run on 1,024 GPUs (platforms/dgx_a100_1024.xml,
# workloads/gpt3_175b.json): --dp-algorithm (5) x global batch (5) x schedule
# (2) x --fold-dp (4).  --fold-dp keeps every point between 0.1 and 2 s.
#   sh scripts/bench_sweep.sh [BUILD] [OUTDIR]
# Writes OUTDIR/sweep_j1.csv and OUTDIR/sweep_j2.csv (default: a scratch
# folder, removed), prints both wall times and their ratio, and checks each CSV
# has 200 rows, 200 distinct run_ids, all "ok", and that both hold the same
# results (tests/sweep_csv_compare.py).  Exit 1 when a check fails.
set -eu
BUILD=${1:-build}
cd "$(dirname "$0")/.."
SIMSWEEP=$BUILD/simsweep
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
OUT=${2:-$TMP}
mkdir -p "$OUT"
[ -x "$SIMSWEEP" ] || { echo "bench_sweep: no $SIMSWEEP (build first)" >&2; exit 2; }

cat >"$TMP/gpt3_200.json" <<'EOF'
{
  "name": "gpt3-1024-200",
  "platforms": ["platforms/dgx_a100_1024.xml"],
  "workloads": ["workloads/gpt3_175b.json"],
  "vary": {
    "--dp-algorithm": ["ring-flow", "ring", "hierarchical", "halving-doubling", "butterfly"],
    "training.global_batch_size": [512, 1024, 1536, 2048, 3072],
    "--schedule": ["1f1b", "zb-h1"],
    "--fold-dp": [2, 4, 8, 16]
  }
}
EOF

now() { date +%s.%N; }
echo "bench_sweep: load before: $(uptime | sed 's/.*load average/load average/')"
status=0
for j in 1 2; do
    rm -f "$OUT/sweep_j$j.csv"
    t0=$(now)
    "$SIMSWEEP" -j "$j" -o "$OUT/sweep_j$j.csv" "$TMP/gpt3_200.json" >"$TMP/out$j" 2>"$TMP/err$j" || {
        echo "bench_sweep: simsweep -j $j failed:" >&2
        tail -5 "$TMP/err$j" >&2
        status=1
    }
    t1=$(now)
    eval "wall$j=$(echo "$t1 - $t0" | awk '{printf "%.1f", $1 - $3}')"
    eval "echo \"bench_sweep: -j $j: \$wall$j s\""
    /usr/bin/python3 tests/sweep_csv_compare.py count "$OUT/sweep_j$j.csv" 200 || status=1
done
/usr/bin/python3 tests/sweep_csv_compare.py same "$OUT/sweep_j1.csv" "$OUT/sweep_j2.csv" || status=1
# shellcheck disable=SC2154
awk -v a="$wall1" -v b="$wall2" 'BEGIN { printf "bench_sweep: -j 1 / -j 2 = %.2f (%d cores)\n", a / b, '"$(nproc)"' }'
echo "bench_sweep: load after: $(uptime | sed 's/.*load average/load average/')"
exit $status
