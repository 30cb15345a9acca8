#!/bin/sh
# parallel_test.sh -- simsweep --emit-jobs run by GNU parallel and by sh give
# the same CSV as simsweep's own runner, also when a halted GNU parallel run is
# resumed with parallel --resume-failed and its joblog.
#   sh tests/parallel_test.sh build
# Compares with tests/sweep_csv_compare.py (run_id set, every result column;
# wall times ignored).  Without GNU parallel (scripts/install-deps.sh installs
# it) that part is skipped and says so.  Ends with "parallel: N passed, N failed".
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/.." || exit 2
. tests/harness.sh
SIMSWEEP=$BUILD/simsweep
[ -x "$SIMSWEEP" ] || { ko "no $SIMSWEEP (build first)"; harness_done parallel; exit; }

# s.json's own "csv" is s.csv, where the emitted commands write; simsweep's
# runner writes the reference into ref.csv (-o).
cat >"$TMP/s.json" <<EOF
{
  "name": "parallel-test",
  "csv": "$TMP/s.csv",
  "platforms": ["platforms/test_8npu.xml"],
  "workloads": ["workloads/small_gpt.json"],
  "vary": {
    "--dp-algorithm": ["ring-flow", "ring", "butterfly"],
    "--schedule": ["1f1b", "gpipe"]
  }
}
EOF

"$SIMSWEEP" -j 2 -o "$TMP/ref.csv" "$TMP/s.json" >"$TMP/out" 2>"$TMP/err" &&
    /usr/bin/python3 tests/sweep_csv_compare.py count "$TMP/ref.csv" 6 >"$TMP/err" 2>&1 && ok ||
    ko "simsweep -j 2 runs the 6 points"

"$SIMSWEEP" --emit-jobs "$TMP/s.json" >"$TMP/jobs.txt" 2>"$TMP/err" && [ "$(wc -l <"$TMP/jobs.txt")" -eq 6 ] && ok ||
    ko "--emit-jobs prints one command per point"

if parallel --version 2>/dev/null | grep -q 'GNU parallel'; then
    parallel -j2 <"$TMP/jobs.txt" >"$TMP/out" 2>"$TMP/err" && ok || ko "parallel -j2 runs the emitted commands"
    /usr/bin/python3 tests/sweep_csv_compare.py same "$TMP/ref.csv" "$TMP/s.csv" >"$TMP/err" 2>&1 && ok ||
        ko "--emit-jobs | parallel -j2 gives simsweep's CSV"
    # nothing is pending once every point has a row
    "$SIMSWEEP" --emit-jobs "$TMP/s.json" >"$TMP/jobs2.txt" 2>"$TMP/err" && [ ! -s "$TMP/jobs2.txt" ] && ok ||
        ko "--emit-jobs after the run emits nothing"
    # GNU parallel's own resume (docs/sweeps.md): a run halted after 2 of the 6 jobs, then
    # --resume-failed with the same joblog runs the 4 jobs that never started
    "$SIMSWEEP" --emit-jobs -o "$TMP/r.csv" "$TMP/s.json" >"$TMP/rjobs.txt" 2>"$TMP/err"
    parallel -j1 --halt now,done=2 --joblog "$TMP/r.log" <"$TMP/rjobs.txt" >"$TMP/out" 2>"$TMP/err"
    n=$(/usr/bin/python3 -c 'import csv, sys; print(len(list(csv.DictReader(open(sys.argv[1])))))' "$TMP/r.csv")
    [ "$n" -eq 2 ] && ok || ko "parallel --halt now,done=2 stops after 2 points ($n rows)"
    parallel -j2 --resume-failed --joblog "$TMP/r.log" <"$TMP/rjobs.txt" >"$TMP/out" 2>"$TMP/err" &&
        /usr/bin/python3 tests/sweep_csv_compare.py same "$TMP/ref.csv" "$TMP/r.csv" >"$TMP/err" 2>&1 && ok ||
        ko "parallel --resume-failed --joblog runs the points the halted run left"
else
    echo "parallel: GNU parallel part skipped: no GNU parallel (apt-get install parallel)"
fi

# the same lines run by sh, one after the other
rm -f "$TMP/s.csv"
sh "$TMP/jobs.txt" >"$TMP/out" 2>"$TMP/err" &&
    /usr/bin/python3 tests/sweep_csv_compare.py same "$TMP/ref.csv" "$TMP/s.csv" >"$TMP/err" 2>&1 && ok ||
    ko "--emit-jobs | sh gives simsweep's CSV"

harness_done parallel
