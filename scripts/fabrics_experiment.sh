#!/bin/sh
# fabrics_experiment.sh -- the same plans on every fabric of
# platforms/fabrics.py (results/fabrics/README.md):
#   - Llama 3 405B as trained (workloads/llama.json: TP 8, PP 16,
#     DP 128, interleaved) on each 16,384-NPU fabric;
#   - GPT-3 175B (workloads/gpt3_175b.json: TP 8, PP 8, DP 16, 1F1B) on each
#     1,024-NPU fabric, and the same with TP 4 and DP 32, so that two replicas
#     share a server and the data-parallel ring runs a channel per NIC
#     (docs/design.md, "Channels when replicas share a server").
# Every platform uses the h100 preset (the devices these plans ran on).  The
# dragonflies have as many global links per group as hosts (Kim et al.'s
# balance, ISCA 2008): 1,024 hosts per group and 15 other groups at 16K, so
# 68 links between each pair of groups; 128 and 7 at 1K, so 18.
#
#   sh scripts/fabrics_experiment.sh [BUILD_DIR] [OUT_CSV] [PATTERN]
#
# PATTERN (an extended regular expression matched against the fabric name)
# runs only those fabrics and replaces their rows in an existing OUT_CSV,
# keeping the others (e.g. '^rail-2plane' after adding the dual-plane rows).
# The whole pass takes about 3 minutes, about 1 of them (65 s on a loaded machine in results/fabrics/fabrics.csv) the dragonfly at 16K.
#
# Writes one row per run: fabric,npus,workload,variant,iteration_s,
# pipeline_s,exposed_comm_s,activities,sim_wall_s (simrun's CSV columns 14,
# 15, 22, 27, 26; docs/csv-format.md).
set -eu
BUILD=${1:-build}
OUT=${2:-results/fabrics/fabrics.csv}
PATTERN=${3:-}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d /tmp/npusim_fabexp_XXXXXX)
trap 'rm -rf "$TMP"' EXIT INT TERM
GEN="/usr/bin/python3 $ROOT/platforms/gen_platform.py --preset h100"

cat > "$TMP/list" <<'LIST'
16384|fat-tree|
16384|clos3-1:1|--fabric clos3
16384|clos3-pod-4:1|--fabric clos3 --oversub 1,4
16384|rail|--fabric rail
16384|rail-pxn-scaleup|--fabric rail --pxn --scaleup-sim
16384|rail-2plane|--fabric rail --planes 2
16384|rail-2plane-hash|--fabric rail --planes 2 --plane-policy hash
16384|torus|--fabric torus --torus 16,32,32
16384|dragonfly|--fabric dragonfly --dragonfly 16,68;16,1;16,1;4
1024|fat-tree|
1024|clos3-1:1|--fabric clos3 --leaf-hosts 32 --leaves-per-pod 8
1024|clos3-pod-4:1|--fabric clos3 --leaf-hosts 32 --leaves-per-pod 8 --oversub 1,4
1024|rail|--fabric rail
1024|rail-pxn-scaleup|--fabric rail --pxn --scaleup-sim
1024|rail-2plane|--fabric rail --planes 2
1024|rail-2plane-hash|--fabric rail --planes 2 --plane-policy hash
1024|torus|--fabric torus --torus 8,8,16
1024|dragonfly|--fabric dragonfly --dragonfly 8,18;8,1;8,1;2
LIST

HEADER="fabric,npus,workload,variant,iteration_s,pipeline_s,exposed_comm_s,activities,sim_wall_s"
if [ -n "$PATTERN" ] && [ -f "$OUT" ]; then # keep the other fabrics' rows
    awk -F, -v p="$PATTERN" 'NR == 1 || $1 !~ p' "$OUT" > "$TMP/kept.csv"
    cp "$TMP/kept.csv" "$OUT"
else
    echo "$HEADER" > "$OUT"
fi
run() { # fabric npus xml workload variant [simrun args...]
    fabric=$1 npus=$2 xml=$3 wl=$4 variant=$5
    shift 5
    rm -f "$TMP/row.csv"
    if "$ROOT/$BUILD/simrun" "$xml" "$ROOT/workloads/$wl" --quiet --csv "$TMP/row.csv" "$@"; then
        tail -n 1 "$TMP/row.csv" | awk -F, -v f="$fabric" -v n="$npus" -v w="$wl" -v v="$variant" \
            '{print f "," n "," w "," v "," $14 "," $15 "," $22 "," $27 "," $26}' >> "$OUT"
    else
        echo "$fabric,$npus,$wl,$variant,failed,,,," >> "$OUT"
    fi
}
while IFS='|' read -r npus fabric args; do
    if [ -n "$PATTERN" ] && ! echo "$fabric" | grep -Eq -- "$PATTERN"; then continue; fi
    xml="$TMP/$fabric-$npus.xml"
    # shellcheck disable=SC2086
    $GEN --npus "$npus" $args -o "$xml"
    if [ "$npus" = 16384 ]; then
        run "$fabric" "$npus" "$xml" llama.json as-trained
    else
        run "$fabric" "$npus" "$xml" gpt3_175b.json tp8-dp16
        run "$fabric" "$npus" "$xml" gpt3_175b.json tp4-dp32 \
            --set parallel.tensor_model_parallel_size=4 --set parallel.data_parallel_size=32
    fi
    echo "done: $fabric $npus" >&2
    rm -f "$xml"
done < "$TMP/list"
