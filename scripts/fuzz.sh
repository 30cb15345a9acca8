#!/bin/sh
# fuzz.sh [RUNS] [TARGET...] -- builds the libFuzzer targets of tests/fuzz with
# clang (ASan + UBSan, build-fuzz/) and runs each for RUNS executions
# (default 1,000,000), seeded from the project's own files:
#   fuzz_workload  workloads/*.json and tests/bad_input/*.json
#   fuzz_plan      tests/fuzz/seeds/plan/*.json (saved plans of small_gpt)
#   fuzz_platform  platforms/*.xml and tests/bad_input/*.xml
# New inputs the fuzzer finds go to a temporary corpus; a crash, a sanitizer
# report, a leak, a time-out (10 s) or an input using over 4 GiB is saved
# under fuzz-findings/TARGET/ and makes the script exit 1.  Prints one line
# per target: executions, crashes, seconds.
#   sh scripts/fuzz.sh                 # the documented long run (~1 min a target)
#   sh scripts/fuzz.sh 20000           # CI's smoke run
set -eu
cd "$(dirname "$0")/.."
RUNS=${1:-1000000}
[ $# -gt 0 ] && shift
TARGETS=${*:-fuzz_workload fuzz_plan fuzz_platform}
BUILD=${FUZZ_BUILD:-build-fuzz}

command -v clang >/dev/null || { echo "fuzz.sh: clang is missing (make deps installs it)" >&2; exit 2; }
cmake -S . -B "$BUILD" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DNPUSIM_FUZZ=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
# shellcheck disable=SC2086
cmake --build "$BUILD" -j"${JOBS:-2}" --target $TARGETS >/dev/null

seeds() {
    case $1 in
    fuzz_workload) echo "workloads tests/bad_input" ;;
    fuzz_plan) echo "tests/fuzz/seeds/plan" ;;
    fuzz_platform) echo "platforms tests/bad_input tests/data" ;;
    esac
}

status=0
for t in $TARGETS; do
    corpus=$(mktemp -d)
    findings=fuzz-findings/$t
    mkdir -p "$findings"
    start=$(date +%s)
    # shellcheck disable=SC2046
    if "$BUILD/$t" -runs="$RUNS" -timeout=10 -rss_limit_mb=4096 -malloc_limit_mb=4096 \
        -artifact_prefix="$findings/" -print_final_stats=1 "$corpus" $(seeds "$t") \
        >"$corpus.log" 2>&1; then
        crashes=0
    else
        crashes=1
        status=1
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$corpus.log" | tail -1)
    echo "$t: ${runs:-0} executions, $crashes crashes, $(($(date +%s) - start)) s"
    if [ "$crashes" -ne 0 ]; then
        grep -E 'ERROR|runtime error|SUMMARY|Test unit written' "$corpus.log" | head -8 | sed 's/^/    /'
    else
        rmdir "$findings" 2>/dev/null || true
    fi
    rm -rf "$corpus" "$corpus.log"
done
rmdir fuzz-findings 2>/dev/null || true
exit $status
