#!/bin/sh
# bench_fabrics.sh -- load time and peak RSS of every 16K fabric of
# platforms/fabrics.py (docs/platform-format.md, Fabrics), median of RUNS
# loads each (default 5), through npusim's own platform reader
# (scripts/fabric_probe.c: platform_load_with, then getrusage).  cpu_s is
# the process's CPU time (start-up and the load), less sensitive than the wall
# time to other jobs on the machine.
#
#   sh scripts/bench_fabrics.sh [BUILD_DIR] [RUNS] [PATTERN]
#
# PATTERN (an extended regular expression, default: every fabric) keeps the
# fabrics whose names match it, e.g. '^rail' for the rail-optimised ones.
# BUILD_DIR (default build) must hold libnpu_net.a and libnpu_model.a.  The
# platforms are generated into a temporary folder.  The load time includes
# the reader's checks (every host's properties, every link, a route to every
# server); the RSS is the whole process's peak.  Wall times on a shared
# machine are noisy: the load average is printed with the table.
set -eu
BUILD=${1:-build}
RUNS=${2:-5}
case $RUNS in
''|*[!0-9]*|0) echo "bench_fabrics.sh: RUNS: expected a positive integer, got '$RUNS'" >&2 && exit 2 ;;
esac
PATTERN=${3:-.}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d /tmp/npusim_fabrics_XXXXXX)
trap 'rm -rf "$TMP"' EXIT INT TERM
PY=/usr/bin/python3
GEN="$PY $ROOT/platforms/gen_platform.py"

cc -O2 -std=gnu11 -I"$ROOT/sim/net" -I"$ROOT/planner/model" $(pkg-config --cflags simgrid) \
    "$ROOT/scripts/fabric_probe.c" "$BUILD/libnpu_net.a" "$BUILD/libnpu_model.a" \
    $(pkg-config --libs simgrid jansson) -lm -o "$TMP/fabric_probe"

# name|gen_platform arguments (16K NPUs; gb200: 224 NVL72 domains = 16,128)
cat > "$TMP/list" <<'LIST'
fat-tree-2level|--preset 910b --npus 16384
fat-tree-2level+scaleup|--preset 910b --npus 16384 --scaleup-sim
simgrid-fat-tree-3level|--preset 910b --npus 16384 --topo 3;8,16,128;1,8,16;1,1,1
clos3-1:1|--preset 910b --npus 16384 --fabric clos3
clos3-1:1,3:1|--preset 910b --npus 16384 --fabric clos3 --oversub 1,3
clos3+scaleup|--preset 910b --npus 16384 --fabric clos3 --scaleup-sim
rail|--preset 910b --npus 16384 --fabric rail
rail-pxn+scaleup|--preset 910b --npus 16384 --fabric rail --pxn --scaleup-sim
rail-2plane|--preset 910b --npus 16384 --fabric rail --planes 2
rail-2plane-pxn+scaleup|--preset 910b --npus 16384 --fabric rail --planes 2 --pxn --scaleup-sim
torus-16x32x32|--preset 910b --npus 16384 --fabric torus --torus 16,32,32
dragonfly-16,16,16,4|--preset 910b --npus 16384 --fabric dragonfly --dragonfly 16,1;16,1;16,1;4
nvl72-clos3+scaleup|--preset gb200 --npus 16128 --fabric clos3 --leaf-hosts 72 --leaves-per-pod 16 --scaleup-sim
nvl72-fat-tree+scaleup|--preset gb200 --npus 16128 --scaleup-sim
nvl72-rail+scaleup|--preset gb200 --npus 16128 --fabric rail --scaleup-sim
LIST

median() { sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

printf "%-26s %7s %8s %8s %8s %7s\n" fabric xml_MB load_s cpu_s rss_MB runs
while IFS='|' read -r name args; do
    echo "$name" | grep -Eq -- "$PATTERN" || continue
    xml="$TMP/$name.xml"
    # shellcheck disable=SC2086
    $GEN $args -o "$xml"
    n=$RUNS
    case $name in simgrid-fat-tree-3level) n=$(( RUNS < 3 ? RUNS : 3 )) ;; esac
    : > "$TMP/times"
    : > "$TMP/rss"
    : > "$TMP/cpu"
    i=0
    while [ $i -lt $n ]; do
        out=$("$TMP/fabric_probe" "$xml")
        echo "$out" | sed -n 's/.*load_s=\([0-9.]*\).*/\1/p' >> "$TMP/times"
        echo "$out" | sed -n 's/.*rss_kb=\([0-9]*\).*/\1/p' >> "$TMP/rss"
        echo "$out" | sed -n 's/.*cpu_s=\([0-9.]*\).*/\1/p' >> "$TMP/cpu"
        i=$((i + 1))
    done
    size=$(du -k "$xml" | awk '{printf "%.1f", $1/1024}')
    printf "%-26s %7s %8s %8s %8s %7s\n" "$name" "$size" "$(median < "$TMP/times")" \
        "$(median < "$TMP/cpu")" "$(median < "$TMP/rss" | awk '{printf "%.0f", $1/1024}')" "$n"
    rm -f "$xml"
done < "$TMP/list"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
