#!/bin/sh
# slurm_test.sh -- simsweep through a real Slurm cluster of one machine.
#   sh tests/slurm_test.sh build
# Brings Slurm up in a scratch folder (scripts/slurm-local.sh: installs
# slurm-wlm and munge when absent, so it needs root and Debian's packages),
# runs an 8-point sweep as a job array (simsweep --slurm), waits for it,
# merges the fragments (simsweep --merge) and checks the result equals the
# same sweep run locally (simsweep), run_id for run_id and number for number.
# Takes Slurm down on exit and checks no slurmctld or slurmd is left.
# Where Slurm cannot be had (not root, no packages) it prints
# "slurm: skipped: REASON" and a tally of 0 and 0.  Ends with
# "slurm: N passed, N failed".
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/.." || exit 2
. tests/harness.sh
SIMSWEEP=$BUILD/simsweep
SDIR=$TMP/slurm
# Ports of their own, so a cluster a developer keeps up on 6817/6818 is no
# obstacle; the wait for the array is bounded.
export SLURM_LOCAL_CTLD_PORT="${SLURM_TEST_CTLD_PORT:-16817}"
export SLURM_LOCAL_D_PORT="${SLURM_TEST_D_PORT:-16818}"
ARRAY_WAIT=${SLURM_TEST_WAIT:-60}

skip() {
    echo "slurm: skipped: $1"
    harness_done slurm
    exit 0
}

cleanup() {
    [ -f "$SDIR/slurm.conf" ] && sh scripts/slurm-local.sh down "$SDIR" >/dev/null 2>&1
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ -x "$SIMSWEEP" ] || { ko "no $SIMSWEEP (build first)"; harness_done slurm; exit; }
[ "$(id -u)" -eq 0 ] || skip "not root (slurm-local.sh starts slurmctld, slurmd and munged)"
command -v apt-get >/dev/null || command -v slurmctld >/dev/null || skip "no apt-get and no Slurm"

# --- bring-up ---------------------------------------------------------------
t0=$(date +%s)
sh scripts/slurm-local.sh up "$SDIR" >"$TMP/up.out" 2>"$TMP/err"
rc=$?
if [ $rc -ne 0 ]; then
    # exit 2: not root or the packages could not be installed: skip.  Exit 1:
    # installed but a daemon did not come up: a failure.
    if [ $rc -eq 2 ]; then skip "$(tail -1 "$TMP/err")"; fi
    ko "slurm-local.sh up"
    harness_done slurm
    exit
fi
echo "slurm: up in $(($(date +%s) - t0)) s"
export SLURM_CONF="$SDIR/slurm.conf"
grep -q "^export SLURM_CONF=$SDIR/slurm.conf\$" "$TMP/up.out" && ok || ko "up prints export SLURM_CONF="

# a second up finds everything running and changes nothing
pids="$(cat "$SDIR/slurmctld.pid" "$SDIR/slurmd.pid")"
sh scripts/slurm-local.sh up "$SDIR" >"$TMP/up2.out" 2>"$TMP/err" &&
    [ "$(cat "$SDIR/slurmctld.pid" "$SDIR/slurmd.pid")" = "$pids" ] && ok ||
    ko "a second up keeps the running daemons"

# --- the sweep --------------------------------------------------------------
cat >"$TMP/s.json" <<EOF
{
  "name": "slurm-test",
  "csv": "$TMP/slurm.csv",
  "platforms": ["platforms/test_8npu.xml"],
  "workloads": ["workloads/small_gpt.json"],
  "vary": {
    "--dp-algorithm": ["ring-flow", "ring", "halving-doubling", "butterfly"],
    "--schedule": ["1f1b", "gpipe"]
  }
}
EOF

# the reference: simsweep's own runner into local.csv (the sweep's "csv",
# slurm.csv, stays empty, so every point is pending for --slurm)
"$SIMSWEEP" -j 2 -o "$TMP/local.csv" "$TMP/s.json" >"$TMP/local.out" 2>"$TMP/err" && ok ||
    ko "simsweep runs the sweep locally"

t0=$(date +%s)
"$SIMSWEEP" --slurm --slurm-dir "$TMP/sd" "$TMP/s.json" >"$TMP/submit.out" 2>"$TMP/err" && ok ||
    ko "simsweep --slurm submits the array"
job=$(grep -Eo '[0-9]+' "$TMP/submit.out" | tail -1)
grep -q '^#SBATCH --array=0-7' "$TMP/sd/sweep.sbatch" 2>/dev/null && ok ||
    ko "sweep.sbatch holds an array of the 8 points"

# wait until the array has left the queue (bounded)
waited=0
while [ -n "${job:-}" ] && [ -n "$(squeue -h -j "$job" -o %i 2>/dev/null)" ] && [ $waited -lt "$ARRAY_WAIT" ]; do
    sleep 1
    waited=$((waited + 1))
done
echo "slurm: array $job done in $(($(date +%s) - t0)) s"
[ -n "${job:-}" ] && [ -z "$(squeue -h -j "$job" -o %i 2>/dev/null)" ] && ok ||
    ko "the array leaves the queue within $ARRAY_WAIT s"

# every task completed with exit code 0 (Slurm's job-completion log)
n_done=$(grep -c "ArrayJobId=${job:-none} " "$SDIR/jobcomp.log" 2>/dev/null)
n_ok=$(grep "ArrayJobId=${job:-none} " "$SDIR/jobcomp.log" 2>/dev/null | grep -c 'JobState=COMPLETED .*ExitCode=0:0')
if [ "${n_done:-0}" -eq 8 ] && [ "${n_ok:-0}" -eq 8 ]; then ok; else
    grep "ArrayJobId=$job " "$SDIR/jobcomp.log" >"$TMP/err" 2>&1
    ko "8 array tasks COMPLETED with exit 0 (log has $n_done, $n_ok ok)"
fi

set -- "$TMP"/sd/fragments/part-*.csv
[ $# -eq 8 ] && [ -s "$1" ] && ok || ko "8 fragments (found $#)"
"$SIMSWEEP" --merge "$TMP/merged.csv" "$@" >"$TMP/merge.out" 2>"$TMP/err" && ok ||
    ko "simsweep --merge joins the fragments"
[ "$(grep -c '^platform,' "$TMP/merged.csv" 2>/dev/null)" -eq 1 ] && ok || ko "the merged CSV has one header"

/usr/bin/python3 tests/sweep_csv_compare.py count "$TMP/merged.csv" 8 >"$TMP/err" 2>&1 && ok ||
    ko "the merged CSV has 8 ok rows, 8 run_ids"
if /usr/bin/python3 tests/sweep_csv_compare.py same "$TMP/local.csv" "$TMP/merged.csv" >"$TMP/err" 2>&1; then
    ok
    echo "slurm: merged vs local: $(cat "$TMP/err")"
else ko "Slurm's merged CSV equals the local run"; fi

# once merged into the sweep's CSV, a second --slurm has nothing to submit
"$SIMSWEEP" --merge "$TMP/slurm.csv" "$@" >/dev/null 2>"$TMP/err" &&
    "$SIMSWEEP" --slurm --slurm-dir "$TMP/sd2" "$TMP/s.json" >"$TMP/submit2.out" 2>"$TMP/err" &&
    grep -q 'nothing to submit' "$TMP/err" && [ ! -e "$TMP/sd2/sweep.sbatch" ] && ok ||
    ko "after the merge, --slurm submits nothing"

# merging again with the fragments repeated drops the duplicates
"$SIMSWEEP" --merge "$TMP/merged2.csv" "$@" "$@" >/dev/null 2>"$TMP/err" &&
    /usr/bin/python3 tests/sweep_csv_compare.py count "$TMP/merged2.csv" 8 >"$TMP/err" 2>&1 && ok ||
    ko "--merge drops rows of the same run_id"

# --- down -------------------------------------------------------------------
ctld=$(cat "$SDIR/slurmctld.pid" 2>/dev/null) d=$(cat "$SDIR/slurmd.pid" 2>/dev/null)
sh scripts/slurm-local.sh down "$SDIR" >"$TMP/down.out" 2>"$TMP/err" && ok || ko "slurm-local.sh down"
left=""
for p in $ctld $d; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
# nor any process of this cluster (slurmstepd, job scripts in its spool)
for p in $(pgrep -f -- "$SDIR/"); do
    kill -0 "$p" 2>/dev/null && left="$left $p"
done
[ -z "$left" ] && ok || { ps -o pid,args -p "$(echo "$left" | tr ' ' ,)" >"$TMP/err" 2>&1; ko "processes left after down:$left"; }
sh scripts/slurm-local.sh down "$SDIR" >/dev/null 2>"$TMP/err" && ok || ko "a second down succeeds"

harness_done slurm
