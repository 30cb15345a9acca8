#!/bin/sh
# sweep_test.sh -- end-to-end tests of simsweep (docs/sweeps.md) on a cheap
# 13-point sweep (12 good points: 3 schedules x 4 global batch sizes of
# small_gpt on test_8npu, and one failing point).
#   sh tests/sweep_test.sh build
# Checks, reading every CSV with /usr/bin/python3's csv module: the rows of an
# uninterrupted sweep (one per point, the failing one with status "failed",
# its exit code and error); a sweep stopped by SIGTERM once its first rows
# are in exits 130, leaves whole rows only, and once re-run holds exactly the
# rows of the uninterrupted sweep; --emit-jobs run by sh, and by GNU parallel
# when it is installed, gives the same run ids; the Slurm job script run task
# by task, then --merge, too; --merge drops duplicate results (run id, planner,
# MoE policy: a --planner all run keeps a row per planner) keeping an ok
# row over a failed one; simrun's --placement, --moe-policy, --moe-trace and
# --moe-trace-step in a sweep land in their columns, and --memory is refused
# with its reason; simsweep --help and moetrace --stats to /dev/full exit 4,
# and moetrace -o DIR names -o; bad sweep files and foreign CSVs are refused
# with one line: one workload key in two spellings (a fixed option against a
# point's own value, or within the options; the same spelling wins), zero
# points, a --set that is not KEY=VALUE, a directory, one --trace file in two
# spellings, a workload of "planner": "all"; a point writing simsweep's own files
# (CSV.lock, the CSV, the sweep file, --slurm-dir's) or a workload, and --slurm writing
# points.txt or sweep.sbatch over the sweep file or the CSV, are refused with the file kept
# byte for byte, and points writing files of their own still run; --run-point and --emit-jobs never
# write under another header or a byte-order mark; simrun failing to write
# the CSV (read-only, a full tmpfs when root) leaves no row and exit 4, and a
# plain re-run runs the point; --merge folds a killed and retried point's
# failed row into its ok row; a second sweep on a running one's CSV refuses.
# Ends with "sweep: N passed, N failed".
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/.." || exit 2
case $BUILD in /*) ;; *) BUILD=$(pwd)/$BUILD ;; esac
SWEEP=$BUILD/simsweep
SIMRUN=$BUILD/simrun
. tests/harness.sh
PY=/usr/bin/python3

# rows.py FILE: checks that FILE is a whole CSV (ends with a line end, the
# header once, every record the header's width) and prints "RUN_ID STATUS"
# per row; exits 1 with the reason otherwise.  rows.py FILE RUN_ID COLUMN:
# prints that column of the run id's first row.
cat >"$TMP/rows.py" <<'EOF'
import csv, io, sys
data = open(sys.argv[1], newline="").read()
if not data.endswith("\n"):
    sys.exit("%s: does not end with a line end (a partial row)" % sys.argv[1])
rows = list(csv.reader(io.StringIO(data, newline="")))
header = rows[0]
for r in rows[1:]:
    if len(r) != len(header):
        sys.exit("%s: a row of %d fields, the header has %d" % (sys.argv[1], len(r), len(header)))
    if r == header:
        sys.exit("%s: the header twice" % sys.argv[1])
rid, st = header.index("run_id"), header.index("status")
if len(sys.argv) == 2:
    for r in rows[1:]:
        print(r[rid], r[st])
else:
    col = header.index(sys.argv[3])
    print([r[col] for r in rows[1:] if r[rid] == sys.argv[2]][0])
EOF
rows() { $PY "$TMP/rows.py" "$@"; }
# the sorted "RUN_ID STATUS" lines of a CSV, into FILE.ids
ids() { rows "$1" 2>"$TMP/err.ids" | sort >"$1.ids"; }

P8=platforms/test_8npu.xml
W8=workloads/small_gpt.json
# refused NAME PATTERN SWEEP.json: --dry-run refuses the file with one line on stderr holding
# PATTERN (grep -F), exit 2; so does a run, which then runs nothing (no CSV).
refused() {
    "$SWEEP" --dry-run "$3" >/dev/null 2>"$TMP/err"
    code=$?
    "$SWEEP" -o "$TMP/refused.csv" "$3" 2>"$TMP/err.run"
    code_run=$?
    if [ $code -eq 2 ] && [ $code_run -eq 2 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] &&
        grep -qF -- "$2" "$TMP/err" && cmp -s "$TMP/err" "$TMP/err.run" && [ ! -e "$TMP/refused.csv" ]; then ok
    else ko "$1 (dry run: exit $code, run: exit $code_run)"; fi
}
# sweep_file KEYS...: a sweep file of small_gpt on test_8npu with these more top-level keys
sweep_file() {
    printf '{"platforms": ["%s"], "workloads": ["%s"], %s}\n' "$P8" "$W8" "$1" >"$TMP/k.json"
}

started=$(date +%s)
cat >"$TMP/s.json" <<EOF
{
  "name": "sweep-test",
  "csv": "$TMP/default.csv",
  "platforms": ["platforms/test_8npu.xml"],
  "workloads": ["workloads/small_gpt.json"],
  "vary": {"--schedule": ["gpipe", "1f1b", "zb-h1"],
           "training.global_batch_size": [16, 32, 64, 128]},
  "points": [{"training.global_batch_size": 3}],
  "options": ["--fold-dp", "1"]
}
EOF

# --- the contract with simrun ------------------------------------------------
"$SIMRUN" --csv-header >"$TMP/header" 2>"$TMP/err" && [ "$(wc -l <"$TMP/header")" -eq 1 ] &&
    head -1 "$TMP/header" | grep -q '^platform,workload,planner,.*,overrides,run_id,.*,status,exit_code,error,mem_stage,.*,mem_simulated_bytes,moe_alltoall_s,.*,moe_padding_flops,placement,moe_trace,moe_trace_sha256,moe_trace_step,moe_policy,moe_copies,moe_copy_s,moe_copy_bytes,moe_sample_mb,moe_alltoall_exposed_s,tp_fold,ignore_memory,cp,ep,etp$' &&
    ok || ko "simrun --csv-header prints the header line"

"$SIMRUN" --version >"$TMP/out" 2>"$TMP/err" && grep -q '^simrun [^ ]' "$TMP/out" && ok || ko "simrun --version"
# the identity columns: --run-id, the options, the plan's hash, --cfg
"$SIMRUN" --quiet --csv "$TMP/id.csv" --set recompute_granularity=full --plan-out "$TMP/plan.json" \
    "$P8" "$W8" 2>"$TMP/err" &&
    "$SIMRUN" --quiet --csv "$TMP/id.csv" --run-id my.run-1 --plan "$TMP/plan.json" --dp-algorithm butterfly \
        --dp-radix 2 --dp-overlap --shifted-recompute --cfg=network/crosstraffic:0 "$P8" "$W8" 2>>"$TMP/err"
first=$($PY -c 'import csv,sys; print(list(csv.DictReader(open(sys.argv[1])))[0]["run_id"])' "$TMP/id.csv")
sum=$(sha256sum "$TMP/plan.json" | cut -d' ' -f1)
if echo "$first" | grep -q '^[0-9a-f]\{16\}$' && [ "$(rows "$TMP/id.csv" my.run-1 plan_sha256)" = "$sum" ] &&
    [ "$(rows "$TMP/id.csv" my.run-1 plan_file)" = "$TMP/plan.json" ] &&
    [ "$(rows "$TMP/id.csv" my.run-1 dp_algorithm)" = butterfly ] && [ "$(rows "$TMP/id.csv" my.run-1 dp_radix)" = 2 ] &&
    [ "$(rows "$TMP/id.csv" my.run-1 dp_overlap)" = 1 ] && [ "$(rows "$TMP/id.csv" my.run-1 shifted_recompute)" = 1 ] &&
    [ "$(rows "$TMP/id.csv" my.run-1 cfg)" = network/crosstraffic:0 ] && [ "$(rows "$TMP/id.csv" my.run-1 status)" = ok ] &&
    [ "$(rows "$TMP/id.csv" "$first" plan_sha256)" = "" ] && [ "$(rows "$TMP/id.csv" "$first" dp_radix)" = 4 ]; then ok
else ko "simrun's row says what the run was: run_id, options, plan_file and plan_sha256, cfg"; fi
"$SIMRUN" --quiet --run-id 'a b' "$P8" "$W8" 2>"$TMP/err"
[ $? -eq 1 ] && grep -q -- "--run-id expects" "$TMP/err" && ok || ko "a bad --run-id is a usage error"
"$SIMRUN" --quiet --run-id x --planner all "$P8" "$W8" 2>"$TMP/err"
[ $? -eq 1 ] && grep -q "one per planner" "$TMP/err" && ok || ko "--run-id with --planner all is refused"

# --- --dry-run -----------------------------------------------------------------
"$SWEEP" --dry-run "$TMP/s.json" >"$TMP/dry" 2>"$TMP/err"
if [ "$(wc -l <"$TMP/dry")" -eq 13 ] && [ "$(cut -d' ' -f1 "$TMP/dry" | sort -u | wc -l)" -eq 13 ] &&
    grep -q "13 points" "$TMP/err"; then ok; else ko "--dry-run lists 13 points with distinct run ids"; fi
cut -d' ' -f1 "$TMP/dry" | sort >"$TMP/dry.ids"

# --- an uninterrupted sweep ------------------------------------------------------
"$SWEEP" -j2 "$TMP/s.json" 2>"$TMP/err"
code=$?
ids "$TMP/default.csv"
if [ $code -eq 3 ] && [ "$(wc -l <"$TMP/default.csv.ids")" -eq 13 ] &&
    [ "$(grep -c ' ok$' "$TMP/default.csv.ids")" -eq 12 ] && [ "$(grep -c ' failed$' "$TMP/default.csv.ids")" -eq 1 ] &&
    [ "$(cut -d' ' -f1 "$TMP/default.csv.ids")" = "$(cat "$TMP/dry.ids")" ]; then ok
else ko "a sweep writes one row per point (exit $code, 12 ok, 1 failed)"; fi
grep -q "simsweep: 13/13 done, 1 failed, 0 running" "$TMP/err" && ok || ko "the sweep reports its progress"
bad=$(grep ' failed$' "$TMP/default.csv.ids" | cut -d' ' -f1)
if [ -n "$bad" ] && rows "$TMP/default.csv" "$bad" error | grep -q "global_batch_size" &&
    [ "$(rows "$TMP/default.csv" "$bad" exit_code)" = 2 ] &&
    [ "$(rows "$TMP/default.csv" "$bad" overrides)" = "training.global_batch_size=3" ] &&
    [ "$(rows "$TMP/default.csv" "$bad" fold_dp)" = 1 ] &&
    [ "$(rows "$TMP/default.csv" "$bad" platform)" = platforms/test_8npu.xml ] &&
    [ -z "$(rows "$TMP/default.csv" "$bad" iteration_s)" ]; then ok
else ko "a failing point's row: status failed, its exit code and error, identity filled, results empty"; fi
good=$(grep ' ok$' "$TMP/default.csv.ids" | head -1 | cut -d' ' -f1)
if [ "$(rows "$TMP/default.csv" "$good" exit_code)" = 0 ] && [ -n "$(rows "$TMP/default.csv" "$good" simulator_version)" ] &&
    [ "$(rows "$TMP/default.csv" "$good" dp_algorithm)" = ring-flow ]; then ok
else ko "simrun's rows carry exit_code 0, simulator_version and the options"; fi

# run again: nothing to do, the failed point is not retried without --retry-failed
"$SWEEP" -j2 "$TMP/s.json" 2>"$TMP/err"
code=$?
if [ $code -eq 3 ] && grep -q "13 already in" "$TMP/err" && [ "$(rows "$TMP/default.csv" | wc -l)" -eq 13 ]; then ok
else ko "a finished sweep run again runs nothing (exit $code)"; fi
"$SWEEP" -j2 --quiet --retry-failed "$TMP/s.json" 2>"$TMP/err"
code=$?
if [ $code -eq 3 ] && [ ! -s "$TMP/err" ] && [ "$(rows "$TMP/default.csv" | grep -c failed)" -eq 2 ]; then ok
else ko "--retry-failed re-runs the failed point only, --quiet prints nothing (exit $code)"; fi
# --merge of OUT alone keeps one row per run id
"$SWEEP" --merge "$TMP/default.csv" 2>"$TMP/err" && [ "$(rows "$TMP/default.csv" | wc -l)" -eq 13 ] &&
    ok || ko "--merge OUT.csv drops the repeated failed row"
ids "$TMP/default.csv"
cp "$TMP/default.csv.ids" "$TMP/expected.ids"

# --- SIGTERM mid-way, then resume ---------------------------------------------------
# a simrun that takes 1 s more, so that the sweep is still running when stopped
# (the 12 other points need 6 s more at -j2 after the first row, and a loaded
# machine may take many seconds to write that row: wait up to 30 s for it)
printf '#!/bin/sh\nsleep 1\nexec "%s" "$@"\n' "$SIMRUN" >"$TMP/slow_simrun"
chmod +x "$TMP/slow_simrun"
"$SWEEP" -j2 --simrun "$TMP/slow_simrun" -o "$TMP/part.csv" "$TMP/s.json" 2>"$TMP/err" &
pid=$!
n=0
while [ $n -lt 600 ] && [ "$(cat "$TMP/part.csv" 2>/dev/null | wc -l)" -lt 2 ]; do
    sleep 0.05
    n=$((n + 1))
done
kill -TERM $pid
wait $pid
code=$?
ids "$TMP/part.csv"
done_before=$(wc -l <"$TMP/part.csv.ids")
if [ $code -eq 130 ] && [ "$done_before" -ge 1 ] && [ "$done_before" -lt 13 ]; then ok
else ko "SIGTERM stops the sweep: exit 130 ($code), whole rows only, some but not all ($done_before)"; fi
rows "$TMP/part.csv" >/dev/null 2>"$TMP/err" && ok || ko "the stopped sweep's CSV has no partial row"
sleep 1.1 # the stopped points' sleep children end
"$SWEEP" -j2 -o "$TMP/part.csv" "$TMP/s.json" 2>"$TMP/err"
code=$?
ids "$TMP/part.csv"
if [ $code -eq 3 ] && cmp -s "$TMP/part.csv.ids" "$TMP/expected.ids" &&
    grep -q "$done_before already in" "$TMP/err"; then ok
else ko "the resumed sweep has exactly the rows of the uninterrupted one (exit $code)"; fi

# --- --emit-jobs | sh, | parallel -----------------------------------------------------
"$SWEEP" --emit-jobs -o "$TMP/emit.csv" "$TMP/s.json" >"$TMP/jobs" 2>"$TMP/err"
if [ "$(wc -l <"$TMP/jobs")" -eq 13 ] && head -1 "$TMP/jobs" | grep -q -- "--run-point [0-9a-f]\{16\} "; then ok
else ko "--emit-jobs prints one command per point"; fi
sh "$TMP/jobs" 2>"$TMP/err.sh"
ids "$TMP/emit.csv"
cmp -s "$TMP/emit.csv.ids" "$TMP/expected.ids" && ok || ko "--emit-jobs | sh gives the sweep's rows"
"$SWEEP" --emit-jobs -o "$TMP/emit.csv" "$TMP/s.json" >"$TMP/jobs2" 2>"$TMP/err"
[ ! -s "$TMP/jobs2" ] && ok || ko "--emit-jobs prints nothing once every point has a row"
if command -v parallel >/dev/null 2>&1 && parallel --version 2>/dev/null | grep -q "GNU parallel"; then
    # run from another folder: the commands carry their own
    "$SWEEP" --emit-jobs -o "$TMP/par.csv" "$TMP/s.json" 2>"$TMP/err" | (cd / && parallel -j2 2>/dev/null)
    ids "$TMP/par.csv"
    cmp -s "$TMP/par.csv.ids" "$TMP/expected.ids" && ok || ko "--emit-jobs | parallel -j2 gives the sweep's rows"
else
    echo "sweep: GNU parallel not installed, its case skipped"
fi

# --- Slurm: the job script, run task by task without Slurm, then --merge ------------------
"$SWEEP" --slurm-dry-run --slurm-dir "$TMP/slurm" -o "$TMP/slurm.csv" "$TMP/s.json" >"$TMP/out" 2>"$TMP/err"
if grep -q '^#SBATCH --array=0-12$' "$TMP/slurm/sweep.sbatch" && [ "$(grep -vc '^#' "$TMP/slurm/points.txt")" -eq 13 ] &&
    grep -q "sweep.sbatch" "$TMP/out" && [ -d "$TMP/slurm/fragments" ]; then ok
else ko "--slurm-dry-run writes the job array script and points.txt"; fi
for i in $(seq 0 12); do
    SLURM_ARRAY_TASK_ID=$i sh "$TMP/slurm/sweep.sbatch" 2>/dev/null
done
"$SWEEP" --merge "$TMP/slurm.csv" "$TMP"/slurm/fragments/part-*.csv 2>"$TMP/err"
ids "$TMP/slurm.csv"
cmp -s "$TMP/slurm.csv.ids" "$TMP/expected.ids" && ok || ko "the Slurm tasks' fragments merge into the sweep's rows"

# --- --merge: duplicates dropped, ok over failed -------------------------------------------
$PY - "$TMP/default.csv" "$TMP" <<'EOF'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
h, body = rows[0], rows[1:]
st = h.index("status")
failed = [r for r in body if r[st] == "failed"][0]
fixed = list(failed)
fixed[st] = "ok"
def write(name, rs):
    with open(sys.argv[2] + "/" + name, "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([h] + rs)
write("f1.csv", body[:8])
write("f2.csv", body[5:] + [fixed])
EOF
"$SWEEP" --merge "$TMP/merged.csv" "$TMP/f1.csv" "$TMP/f2.csv" 2>"$TMP/err"
ids "$TMP/merged.csv"
if [ "$(wc -l <"$TMP/merged.csv.ids")" -eq 13 ] && [ "$(grep -c ' ok$' "$TMP/merged.csv.ids")" -eq 13 ] &&
    grep -q "13 rows (4 duplicate rows dropped)" "$TMP/err"; then ok
else ko "--merge keeps one row per run id, an ok row over a failed one"; fi
# one run of --planner all writes a row per planner under one run id: a merge keeps them all
# (and a second copy of the file adds nothing)
"$SIMRUN" --quiet --planner all --csv "$TMP/pall.csv" platforms/test_8npu.xml \
    workloads/small_gpt.json 2>"$TMP/err"
cp "$TMP/pall.csv" "$TMP/pall2.csv"
n=$(rows "$TMP/pall.csv" | wc -l)
"$SWEEP" --merge "$TMP/pall.csv" "$TMP/pall2.csv" 2>>"$TMP/err"
if [ "$n" -ge 5 ] && [ "$(rows "$TMP/pall.csv" | wc -l)" -eq "$n" ] &&
    grep -q "$n rows ($n duplicate rows dropped)" "$TMP/err"; then ok
else ko "--merge keeps every planner's row of one --planner all run ($n rows)"; fi

# a retried point: its failed row (planner '' or as given, moe_policy 'none', from the point's
# options) gives way to its later ok row (simrun's 'megatron' and ''); points killed on the
# first run, then run again with --retry-failed
printf '#!/bin/sh\ncase "$1" in --csv-header|--version) ;; *) [ -e "%s" ] || kill -KILL $$ ;; esac\nexec "%s" "$@"\n' \
    "$TMP/flaky.ok" "$SIMRUN" >"$TMP/flaky_simrun"
chmod +x "$TMP/flaky_simrun"
sweep_file '"vary": {"global_batch_size": [16, 32]}, "points": [{"--planner": "megatron", "global_batch_size": 64}]'
"$SWEEP" -j2 --quiet --simrun "$TMP/flaky_simrun" -o "$TMP/retried.csv" "$TMP/k.json" 2>"$TMP/err"
code1=$?
touch "$TMP/flaky.ok"
"$SWEEP" -j2 --quiet --retry-failed --simrun "$TMP/flaky_simrun" -o "$TMP/retried.csv" "$TMP/k.json" 2>"$TMP/err"
code2=$?
before=$(rows "$TMP/retried.csv" | sort | tr '\n' ' ')
"$SWEEP" --merge "$TMP/retried.csv" 2>"$TMP/err"
ids "$TMP/retried.csv"
if [ $code1 -eq 3 ] && [ $code2 -eq 0 ] && [ "$(echo "$before" | grep -o ' failed' | wc -l)" -eq 3 ] &&
    [ "$(wc -l <"$TMP/retried.csv.ids")" -eq 3 ] && [ "$(grep -c ' ok$' "$TMP/retried.csv.ids")" -eq 3 ] &&
    grep -q "3 rows (3 duplicate rows dropped)" "$TMP/err"; then ok
else ko "--merge keeps a retried point's ok row over its failed one (exits $code1, $code2; before: $before)"; fi
# a failed row under the run id of a --planner all run gives way to all its planners' rows
$PY - "$TMP/pall.csv" "$TMP/pfail.csv" <<'EOF2'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
h = rows[0]
failed = ["" for _ in h]
for col in ("platform", "workload", "run_id"):
    failed[h.index(col)] = rows[1][h.index(col)]
failed[h.index("status")], failed[h.index("exit_code")], failed[h.index("error")] = "failed", "137", "killed"
failed[h.index("moe_policy")] = "none"
with open(sys.argv[2], "w", newline="") as f:
    csv.writer(f, lineterminator="\n").writerows([h, failed])
EOF2
"$SWEEP" --merge "$TMP/pmerged.csv" "$TMP/pfail.csv" "$TMP/pall.csv" 2>"$TMP/err" && cmp -s "$TMP/pmerged.csv" "$TMP/pall.csv" &&
    ok || ko "--merge: a --planner all run's rows supersede a failed row of its run id"

# --- one sweep at a time per output CSV -------------------------------------------------------
# a second runner on the output of one still running refuses at once, naming the file and the
# first's pid (the two ran every point twice); so do --run-point and --merge on that file; the
# first then writes each point's row once
# slow2: simrun 2 s later, touching slow2.started once it runs a point (its simsweep holds the lock)
printf '#!/bin/sh\ncase "$1" in --csv-header|--version) ;; *) : >"%s"; sleep 2 ;; esac\nexec "%s" "$@"\n' \
    "$TMP/slow2.started" "$SIMRUN" >"$TMP/slow2"
chmod +x "$TMP/slow2"
sweep_file '"vary": {"global_batch_size": [16, 32]}'
"$SWEEP" -j1 --quiet --simrun "$TMP/slow2" -o "$TMP/lk.csv" "$TMP/k.json" 2>"$TMP/err.first" &
first=$!
n=0
while [ $n -lt 200 ] && ! grep -qx "$first" "$TMP/lk.csv.lock" 2>/dev/null; do
    sleep 0.05
    n=$((n + 1))
done
"$SWEEP" -j1 -o "$TMP/lk.csv" "$TMP/k.json" 2>"$TMP/err"
code=$?
[ $code -eq 4 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] &&
    grep -q "lk.csv: -o: another simsweep (pid $first) is running points into this file (it holds .*lk.csv.lock)" "$TMP/err" &&
    ok || ko "a second simsweep on the output of a running one refuses, naming it, exit 4 ($code)"
"$SWEEP" --run-point "$("$SWEEP" --dry-run "$TMP/k.json" 2>/dev/null | head -1 | cut -d' ' -f1)" \
    -o "$TMP/lk.csv" "$TMP/k.json" 2>"$TMP/err"
code=$?
[ $code -eq 4 ] && grep -q "another simsweep (pid $first)" "$TMP/err" && ok ||
    ko "--run-point beside a running sweep on its output refuses, exit 4 ($code)"
"$SWEEP" --merge "$TMP/lk.csv" 2>"$TMP/err"
code=$?
[ $code -eq 4 ] && grep -q "another simsweep (pid $first)" "$TMP/err" && ok ||
    ko "--merge of a CSV a sweep is running into refuses, exit 4 ($code)"
wait $first
code=$?
ids "$TMP/lk.csv"
[ $code -eq 0 ] && [ "$(wc -l <"$TMP/lk.csv.ids")" -eq 2 ] && [ "$(grep -c ' ok$' "$TMP/lk.csv.ids")" -eq 2 ] &&
    [ ! -s "$TMP/lk.csv.lock" ] && ok ||
    ko "the first sweep writes each point once and empties its lock file (exit $code, $(wc -l <"$TMP/lk.csv.ids") rows)"
# --run-point jobs share the lock (GNU parallel runs them side by side): a runner refuses beside them
rm -f "$TMP/slow2.started"
"$SWEEP" --run-point "$("$SWEEP" --dry-run "$TMP/k.json" 2>/dev/null | head -1 | cut -d' ' -f1)" --quiet \
    --simrun "$TMP/slow2" -o "$TMP/lk2.csv" "$TMP/k.json" 2>"$TMP/err.first" &
first=$!
n=0
while [ $n -lt 200 ] && [ ! -e "$TMP/slow2.started" ]; do
    sleep 0.05
    n=$((n + 1))
done
"$SWEEP" -j1 -o "$TMP/lk2.csv" "$TMP/k.json" 2>"$TMP/err"
code=$?
cp "$TMP/err" "$TMP/err.runner"
"$SWEEP" --run-point "$("$SWEEP" --dry-run "$TMP/k.json" 2>/dev/null | sed -n 2p | cut -d' ' -f1)" --quiet \
    -o "$TMP/lk2.csv" "$TMP/k.json" 2>"$TMP/err"
code2=$?
wait $first
code1=$?
ids "$TMP/lk2.csv"
[ $code1 -eq 0 ] && [ $code2 -eq 0 ] && [ $code -eq 4 ] &&
    grep -q "lk2.csv: -o: simsweep --run-point jobs .* are running points into this file" "$TMP/err.runner" &&
    [ "$(grep -c ' ok$' "$TMP/lk2.csv.ids")" -eq 2 ] && ok ||
    ko "--run-point jobs run side by side, a runner beside them refuses (exits $code1, $code2, $code)"

# --- --moe-sample-mb as an axis lands in moe_sample_mb (issue 9) -------------------------------
# the 21B MoE on 32 NPUs (tests/cli_test.sh's MoE runs), global batch 64 (2 micro-batches): no
# option writes 0, 1 writes 1; a point that fails (global batch 3 on DP 32) still says 2
cat >"$TMP/moe.json" <<EOF
{
  "csv": "$TMP/moe.csv",
  "platforms": ["platforms/moe_32npu.xml"],
  "workloads": ["workloads/moe_21b_32npu.json"],
  "vary": {"--moe-sample-mb": [false, 1], "training.global_batch_size": [64]},
  "points": [{"--moe-sample-mb": 2, "training.global_batch_size": 3}]
}
EOF
"$SWEEP" -j2 "$TMP/moe.json" 2>"$TMP/err"
code=$?
got=$(rows "$TMP/moe.csv" >/dev/null 2>"$TMP/err.rows" && $PY -c 'import csv, sys
print(" ".join(sorted("%s:%s:%s" % (r["moe_sample_mb"], r["status"], r["global_batch_size"])
                      for r in csv.DictReader(open(sys.argv[1])))))' "$TMP/moe.csv")
[ $code -eq 3 ] && [ "$got" = "0:ok:64 1:ok:64 2:failed:" ] && ok ||
    ko "--moe-sample-mb as a sweep axis is the moe_sample_mb column, failed points' too (exit $code, got '$got')"

# --- --ignore-memory as an axis lands in ignore_memory --------------------------------------
# micro-batch 8 of 8,192 tokens does not fit the 64 GB NPUs without recompute (tests/cli_test.sh):
# without the flag the point fails (exit 3) and its row says 0; with it, it runs and says 1
cat >"$TMP/ig.json" <<EOF
{
  "csv": "$TMP/ig.csv",
  "platforms": ["$P8"],
  "workloads": ["$W8"],
  "vary": {"--ignore-memory": [false, true], "training.micro_batch_size": [8],
           "model.seq_length": [8192]}
}
EOF
"$SWEEP" -j2 "$TMP/ig.json" 2>"$TMP/err"
code=$?
got=$($PY -c 'import csv, sys
print(" ".join(sorted("%s:%s:%s" % (r["ignore_memory"], r["status"], r["exit_code"])
                      for r in csv.DictReader(open(sys.argv[1])))))' "$TMP/ig.csv")
[ $code -eq 3 ] && [ "$got" = "0:failed:3 1:ok:0" ] && ok ||
    ko "--ignore-memory as a sweep axis is the ignore_memory column, the failed point's too (exit $code, got '$got')"

# --- simrun's options with CSV columns: --placement, --moe-policy, --moe-trace, --moe-trace-step --
# the same MoE case; --placement and a seeded trace (a path, passed as written) fixed in
# "options", --moe-policy and --placement varied (a point's own --placement comes after the
# fixed one, so it wins; the column drops the optional "ep", as simrun writes it), one point on
# the trace's second step, one that fails (global batch 3) and still says its placement
"$BUILD/moetrace" -o "$TMP/moe.trace" --workload workloads/moe_21b_32npu.json --top2-share 0.3 \
    --steps 2 --seed 7 >/dev/null 2>"$TMP/err" || ko "moetrace writes a trace of the 21B MoE"
cat >"$TMP/placed.json" <<EOF
{
  "csv": "$TMP/placed.csv",
  "platforms": ["platforms/moe_32npu.xml"],
  "workloads": ["workloads/moe_21b_32npu.json"],
  "options": ["--placement", "pp-tp-cp-ep-dp", "--moe-trace", "$TMP/moe.trace",
              "--set", "training.global_batch_size=64"],
  "vary": {"--moe-policy": ["none", "switch"], "--placement": [false, "tp-cp-ep-dp-pp"]},
  "points": [{"--moe-trace-step": 1},
             {"--placement": "dp-tp-cp-pp", "training.global_batch_size": 3}]
}
EOF
"$SWEEP" -j2 "$TMP/placed.json" 2>"$TMP/err"
code=$?
got=$(rows "$TMP/placed.csv" >/dev/null 2>"$TMP/err.rows" && $PY -c 'import csv, sys
print(" ".join(sorted("%s:%s:%s:%s" % (r["placement"], r["moe_policy"], r["moe_trace_step"], r["status"])
                      for r in csv.DictReader(open(sys.argv[1])))))' "$TMP/placed.csv")
want="dp-tp-cp-pp:none:0:failed pp-tp-cp-dp:none:0:ok pp-tp-cp-dp:none:1:ok pp-tp-cp-dp:switch:0:ok"
want="$want tp-cp-dp-pp:none:0:ok tp-cp-dp-pp:switch:0:ok"
[ $code -eq 3 ] && [ "$got" = "$want" ] && ok ||
    ko "--placement in options, --moe-policy and --placement varied, --moe-trace-step: the rows' columns (exit $code, got '$got')"
sum=$(sha256sum "$TMP/moe.trace" | cut -d' ' -f1)
got=$($PY -c 'import csv, sys
print(" ".join(sorted(set("%s:%s" % (r["moe_trace"], r["moe_trace_sha256"])
                          for r in csv.DictReader(open(sys.argv[1]))))))' "$TMP/placed.csv")
[ "$got" = "$TMP/moe.trace:$sum" ] && ok || ko "every row, the failed one's too, names the trace and its hash (got '$got')"
printf '{"platforms": ["%s"], "workloads": ["%s"], "options": ["--memory"]}\n' "$P8" "$W8" >"$TMP/mem.json"
"$SWEEP" -o "$TMP/x.csv" "$TMP/mem.json" 2>"$TMP/err"
code=$?
[ $code -eq 2 ] && grep -q 'mem.json: options\[0\]: --memory prints a table .*mem_\* columns' "$TMP/err" &&
    ok || ko "--memory in options is refused with the reason, exit 2 ($code)"
printf '{"platforms": ["%s"], "workloads": ["%s"], "vary": {"--stages": [true, false]}}\n' "$P8" "$W8" >"$TMP/st.json"
"$SWEEP" --dry-run "$TMP/st.json" >/dev/null 2>"$TMP/err"
code=$?
[ $code -eq 2 ] && grep -q 'st.json: vary.--stages\[0\]: --stages prints a table' "$TMP/err" &&
    ok || ko "--stages in vary is refused before any point runs, exit 2 ($code: $(cat "$TMP/err"))"

# --- standard output and output files that cannot be written -----------------------------------
"$SWEEP" --help >/dev/full 2>"$TMP/err"
code=$?
[ $code -eq 4 ] && grep -q "simsweep: cannot write standard output" "$TMP/err" &&
    ok || ko "simsweep --help > /dev/full fails, exit 4 ($code)"
"$BUILD/moetrace" --stats "$TMP/moe.trace" >"$TMP/out" 2>"$TMP/err" &&
    [ "$(wc -l <"$TMP/out")" -eq 25 ] && head -1 "$TMP/out" | grep -q '^step,layer,top2_share,max_over_mean$' &&
    ok || ko "moetrace --stats prints a row per step and layer"
"$BUILD/moetrace" --stats "$TMP/moe.trace" >/dev/full 2>"$TMP/err"
code=$?
[ $code -eq 4 ] && grep -q "moetrace: cannot write standard output" "$TMP/err" &&
    ok || ko "moetrace --stats > /dev/full is an output failure, exit 4 ($code)"
mkdir "$TMP/dir"
"$BUILD/moetrace" -o "$TMP/dir" --experts 4 --sources 2 --layers 1 --topk 1 --tokens 8 2>"$TMP/err"
code=$?
[ $code -eq 4 ] && grep -q -- "dir: -o: is a directory" "$TMP/err" && ! grep -q -- "--moe-trace-out" "$TMP/err" &&
    ok || ko "moetrace -o DIR names -o, exit 4 ($code)"
"$BUILD/moetrace" -o "$TMP/two.trace" --experts 4 --sources 2 --layers 1 --topk 1 --tokens 8 \
    --top2-share 0.7 --zipf 1 2>"$TMP/err"
[ $? -eq 1 ] && grep -q "give one" "$TMP/err" && [ ! -e "$TMP/two.trace" ] && ok ||
    ko "moetrace refuses --top2-share with --zipf (one skew)"
"$BUILD/moetrace" --stats "$TMP/moe.trace" -o "$TMP/st.trace" >/dev/null 2>"$TMP/err"
[ $? -eq 1 ] && grep -q "takes no other option" "$TMP/err" && [ ! -e "$TMP/st.trace" ] && ok ||
    ko "moetrace --stats refuses -o (it writes no trace)"

# --- refused input --------------------------------------------------------------------------
printf '{"platforms": ["platforms/test_8npu.xml"], "workloads": ["workloads/small_gpt.json"], "varry": {}}\n' >"$TMP/bad.json"
"$SWEEP" -o "$TMP/x.csv" "$TMP/bad.json" 2>"$TMP/err"
code=$?
[ $code -eq 2 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "bad.json: varry: unknown key" "$TMP/err" &&
    ok || ko "an unknown key: one line naming the file and key, exit 2 ($code)"
printf 'platform,workload\na,b\n' >"$TMP/old.csv"
"$SWEEP" -o "$TMP/old.csv" "$TMP/s.json" 2>"$TMP/err"
code=$?
[ $code -eq 2 ] && grep -q "old.csv:1: the header is not this simrun's" "$TMP/err" &&
    ok || ko "a CSV with another header is refused, exit 2 ($code)"
printf '%s\nx' "$(cat "$TMP/header")" >"$TMP/partial.csv"
"$SWEEP" -o "$TMP/partial.csv" "$TMP/s.json" 2>"$TMP/err"
code=$?
[ $code -eq 2 ] && grep -q "partial.csv:2: the last row has no line end" "$TMP/err" &&
    ok || ko "a CSV ending in a partial row is refused, exit 2 ($code)"
# --run-point (GNU parallel's path) and --emit-jobs add no row to a CSV of another header: an
# older simrun's (this header without its last column, a row of it) or a 2-column file
id0=$(head -1 "$TMP/dry" | cut -d' ' -f1)
cut_last=$($PY -c 'import csv, sys
h = next(csv.reader(open(sys.argv[1])))
print(",".join(h[:-1]))' "$TMP/header")
printf '%s\n%s\n' "$cut_last" "$(echo "$cut_last" | tr -c ',\n' x)" >"$TMP/old75.csv"
printf 'run_id,status\n' >"$TMP/two.csv"
for f in old75 two; do
    cp "$TMP/$f.csv" "$TMP/$f.orig"
    "$SWEEP" --run-point "$id0" -o "$TMP/$f.csv" "$TMP/s.json" 2>"$TMP/err"
    code=$?
    [ $code -eq 2 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "$f.csv:1: the header is not this simrun's" "$TMP/err" &&
        cmp -s "$TMP/$f.csv" "$TMP/$f.orig" && ok ||
        ko "--run-point into a CSV of another header ($f) is refused and adds no row, exit 2 ($code)"
    "$SWEEP" --emit-jobs -o "$TMP/$f.csv" "$TMP/s.json" >"$TMP/out" 2>"$TMP/err"
    code=$?
    [ $code -eq 2 ] && [ ! -s "$TMP/out" ] && grep -q "$f.csv:1: the header is not this simrun's" "$TMP/err" &&
        cmp -s "$TMP/$f.csv" "$TMP/$f.orig" && ok ||
        ko "--emit-jobs into a CSV of another header ($f) emits nothing, exit 2 ($code)"
done

# --- an output failure of the CSV is not the point's: no row, exit 4, a plain re-run runs it ----
# simrun refuses the CSV made read-only while it runs (its exit 4 naming --csv); the point has
# no failed row, so running the sweep again (with a writable CSV) runs it
printf '#!/bin/sh\nfor a; do [ "$prev" = --csv ] && csv=$a; prev=$a; done\n[ -n "${csv:-}" ] && chmod 444 "$csv"\n"%s" "$@"\nrc=$?\n[ -n "${csv:-}" ] && chmod 644 "$csv"\nexit $rc\n' "$SIMRUN" >"$TMP/ro_simrun"
chmod +x "$TMP/ro_simrun"
sweep_file '"vary": {"global_batch_size": [16, 32]}'
cp "$TMP/header" "$TMP/ro.csv"
"$SWEEP" -j1 --simrun "$TMP/ro_simrun" -o "$TMP/ro.csv" "$TMP/k.json" 2>"$TMP/err"
code=$?
[ $code -eq 4 ] && tail -1 "$TMP/err" | grep -q "ro.csv: -o: simrun could not write point [0-9a-f]*'s row (the file is read-only.*); the point has no row" &&
    cmp -s "$TMP/ro.csv" "$TMP/header" && ok ||
    ko "simrun failing to write the CSV leaves no failed row, exit 4 ($code; $(rows "$TMP/ro.csv" | wc -l) rows)"
"$SWEEP" -j1 --quiet -o "$TMP/ro.csv" "$TMP/k.json" 2>"$TMP/err"
code=$?
[ $code -eq 0 ] && [ "$(rows "$TMP/ro.csv" | grep -c ' ok$')" -eq 2 ] && [ "$(rows "$TMP/ro.csv" | wc -l)" -eq 2 ] && ok ||
    ko "a plain re-run after an output failure runs the points (exit $code)"
cp "$TMP/header" "$TMP/ro.csv"
"$SWEEP" --emit-jobs --simrun "$TMP/ro_simrun" -o "$TMP/ro.csv" "$TMP/k.json" 2>"$TMP/err.emit" | sh 2>"$TMP/err"
code=$?
[ $code -eq 4 ] && grep -q "simrun could not write point" "$TMP/err" && cmp -s "$TMP/ro.csv" "$TMP/header" && ok ||
    ko "--run-point: simrun failing to write the CSV leaves no failed row, exit 4 ($code)"
# a full file system (a 16 KiB tmpfs, when this runs as root and may mount one)
mkdir "$TMP/full"
if [ "$(id -u)" -eq 0 ] && mount -t tmpfs -o size=16k tmpfs "$TMP/full" 2>/dev/null; then
    trap 'umount "$TMP/full" 2>/dev/null; rm -rf "$TMP"' EXIT
    cp "$TMP/header" "$TMP/full/out.csv"
    head -c 16384 /dev/zero >"$TMP/full/fill" 2>/dev/null # one page left for out.csv's rows
    printf '{"platforms": ["%s"], "workloads": ["%s"], "vary": {"global_batch_size": [16, 32, 48, 64, 80, 96, 112, 128]}}\n' \
        "$P8" "$W8" >"$TMP/k.json"
    "$SWEEP" -j2 -o "$TMP/full/out.csv" "$TMP/k.json" 2>"$TMP/err"
    code=$?
    n=$(rows "$TMP/full/out.csv" | grep -c ' ok$')
    [ $code -eq 4 ] && grep -q "out.csv: -o: simrun could not write point .*No space left on device" "$TMP/err" &&
        [ "$n" -ge 1 ] && [ "$n" -lt 8 ] && [ "$(rows "$TMP/full/out.csv" | wc -l)" -eq "$n" ] && ok ||
        ko "a full disk: no failed row, exit 4 ($code; $n ok rows)"
    rm -f "$TMP/full/fill"
    "$SWEEP" -j2 --quiet -o "$TMP/full/out.csv" "$TMP/k.json" 2>"$TMP/err"
    code=$?
    [ $code -eq 0 ] && [ "$(rows "$TMP/full/out.csv" | grep -c ' ok$')" -eq 8 ] && ok ||
        ko "once there is room, a plain re-run runs the rest (exit $code)"
    umount "$TMP/full"
else
    echo "sweep: not root or no tmpfs mount: the full-disk case skipped"
fi

# a CSV saved with a UTF-8 byte-order mark (Excel): read (--dry-run, --merge, which writes the
# merged file without the mark), never appended to (simrun's rows go under its own header line)
printf '\357\273\277' >"$TMP/bom.csv"
cat "$TMP/default.csv" >>"$TMP/bom.csv"
cp "$TMP/bom.csv" "$TMP/bom.orig"
"$SWEEP" -o "$TMP/bom.csv" "$TMP/s.json" 2>"$TMP/err"
code=$?
[ $code -eq 2 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "bom.csv:1: the file starts with a UTF-8 byte-order mark" "$TMP/err" &&
    cmp -s "$TMP/bom.csv" "$TMP/bom.orig" && ok || ko "a sweep into a CSV with a byte-order mark is refused as such, exit 2 ($code)"
"$SWEEP" --dry-run -o "$TMP/bom.csv" "$TMP/s.json" >"$TMP/out" 2>"$TMP/err"
code=$?
[ $code -eq 0 ] && [ "$(grep -c ' ok:' "$TMP/out")" -eq 12 ] && [ "$(grep -c ' failed:' "$TMP/out")" -eq 1 ] && ok ||
    ko "--dry-run reads the states from a CSV with a byte-order mark (exit $code)"
rm -f "$TMP/bommerged.csv"
"$SWEEP" --merge "$TMP/bommerged.csv" "$TMP/bom.csv" "$TMP/default.csv" 2>"$TMP/err"
code=$?
[ $code -eq 0 ] && cmp -s "$TMP/bommerged.csv" "$TMP/default.csv" && grep -q "13 rows (13 duplicate rows dropped)" "$TMP/err" && ok ||
    ko "--merge joins a CSV with a byte-order mark to one without, and writes none (exit $code)"

"$SWEEP" --run-point 0000000000000000 -o "$TMP/x.csv" "$TMP/s.json" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "no point has run id" "$TMP/err" && ok || ko "--run-point of an unknown id"
"$SWEEP" --simrun /nonexistent/simrun -o "$TMP/x.csv" "$TMP/s.json" 2>"$TMP/err"
[ $? -eq 4 ] && grep -q "/nonexistent/simrun --csv-header" "$TMP/err" && ok || ko "a missing simrun, exit 4"


# --- one workload key in two spellings: refused before anything runs -------------------------
# a fixed option and a point's own value in another spelling: simrun does not let one override
# the other (it ran the fixed gpipe for every point, or the fixed planner)
sweep_file '"options": ["--set", "schedule=gpipe"], "vary": {"--schedule": ["1f1b", "zb-h1"]}'
refused "options' --set schedule= against a point's --schedule" \
    'point 0 sets the workload key schedule as --schedule 1f1b, which "options" sets as --set schedule=gpipe' "$TMP/k.json"
sweep_file '"options": ["--planner", "megatron"], "vary": {"planner": ["pipedream", "ft"]}'
refused "options' --planner against a point's planner key" \
    'point 0 sets the workload key planner as --set planner=pipedream, which "options" sets as --planner megatron' "$TMP/k.json"
sweep_file '"options": ["--set", "training.global_batch_size=32"], "points": [{"global_batch_size": 16}]'
refused "options' dotted key against a point's bare one" \
    'sets the workload key training.global_batch_size as --set global_batch_size=16, which "options" sets as --set training.global_batch_size=32' "$TMP/k.json"
sweep_file '"options": ["--schedule", "gpipe", "--set", "schedule=1f1b"]'
refused "two spellings within options" \
    'k.json: options: sets the workload key schedule twice, in two spellings: --schedule gpipe and --set schedule=1f1b' "$TMP/k.json"
# the same spelling: the point's value comes later on simrun's command line and wins
sweep_file '"options": ["--schedule", "gpipe", "--set", "training.global_batch_size=32"],
  "points": [{"--schedule": "1f1b", "training.global_batch_size": 16}]'
"$SWEEP" -o "$TMP/same.csv" "$TMP/k.json" 2>"$TMP/err"
code=$?
got=$($PY -c 'import csv, sys
print(" ".join("%s:%s:%s" % (r["schedule"], r["global_batch_size"], r["status"])
               for r in csv.DictReader(open(sys.argv[1]))))' "$TMP/same.csv" 2>>"$TMP/err")
[ $code -eq 0 ] && [ "$got" = "1f1b:16:ok" ] && ok ||
    ko "a point's own value wins over a fixed one of the same spelling (exit $code, got '$got')"

# --- smaller refusals ------------------------------------------------------------------------
sweep_file '"points": []'
refused 'zero points ("points": [])' 'k.json: points: expected a non-empty array of objects, got []' "$TMP/k.json"
sweep_file '"options": ["--set", "nokv"]'
refused "--set without KEY=VALUE in options" "k.json: options[1]: --set takes KEY=VALUE" "$TMP/k.json"
mkdir -p "$TMP/sweepdir"
"$SWEEP" --dry-run "$TMP/sweepdir" >/dev/null 2>"$TMP/err"
code=$?
[ $code -eq 2 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "sweepdir: is a directory; expected a sweep file" "$TMP/err" &&
    ok || ko "a directory as the sweep file is said to be one, exit 2 ($code)"
# a FIFO (or /dev/zero) as the sweep file: refused at once, not read for ever
mkfifo "$TMP/sweep.fifo"
timeout 20 "$SWEEP" --dry-run "$TMP/sweep.fifo" >/dev/null 2>"$TMP/err"
code=$?
[ $code -eq 2 ] && grep -q "sweep.fifo: cannot read sweep file: not a regular file" "$TMP/err" &&
    ok || ko "a FIFO as the sweep file is refused without blocking, exit 2 ($code)"
"$SWEEP" --run-point-index abc -o "$TMP/x.csv" "$TMP/s.json" 2>"$TMP/err"
code=$?
[ $code -eq 1 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q -- "--run-point-index expects an integer >= 0, got 'abc'" "$TMP/err" &&
    ok || ko "--run-point-index abc: one line, the usage exit code 1 ($code)"
# one --trace file in two spellings (./, a linked folder): one would replace the other
ln -s "$TMP" "$TMP/link"
sweep_file "\"points\": [{\"--trace\": \"$TMP/t1.json\"}, {\"--trace\": \"$TMP/./t1.json\", \"--schedule\": \"gpipe\"}]"
refused "--trace FILE and --trace ./FILE are one file" "points 0 and 1 would both write this file" "$TMP/k.json"
sweep_file "\"points\": [{\"--trace\": \"$TMP/t1.json\"}, {\"--trace\": \"$TMP/link/t1.json\", \"--schedule\": \"gpipe\"}]"
refused "--trace through a linked folder is the same file" "points 0 and 1 would both write this file" "$TMP/k.json"
# a workload that says "planner": "all" writes a row per planner; a point is one row
sed 's/"planner": "megatron"/"planner": "all"/' "$W8" >"$TMP/wall.json"
grep -q '"planner": "all"' "$TMP/wall.json" || ko "the test's workload has planner all"
printf '{"platforms": ["%s"], "workloads": ["%s"]}\n' "$P8" "$TMP/wall.json" >"$TMP/k.json"
refused 'a workload of "planner": "all"' "wall.json says \"planner\": \"all\", which writes one row per planner" "$TMP/k.json"
printf '{"platforms": ["%s"], "workloads": ["%s"], "vary": {"--planner": ["megatron"]}}\n' "$P8" "$TMP/wall.json" >"$TMP/k.json"
"$SWEEP" --dry-run "$TMP/k.json" >/dev/null 2>"$TMP/err" && ok ||
    ko 'a workload of "planner": "all" whose points name their planner is accepted'

# --- simsweep's own files: no point writes them, and --slurm overwrites none -----------------
# intact NAME CODE PATTERN FILE CMD...: CMD exits CODE with one line on stderr holding PATTERN
# (grep -F), and FILE is byte for byte what it was
intact() {
    name=$1 want=$2 pat=$3 file=$4
    shift 4
    cp "$file" "$TMP/intact.orig"
    "$@" >"$TMP/out" 2>"$TMP/err"
    code=$?
    if [ $code -eq "$want" ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -qF -- "$pat" "$TMP/err" &&
        cmp -s "$file" "$TMP/intact.orig"; then ok; else ko "$name (exit $code)"; fi
}
# --slurm-dir holding the sweep file as points.txt or sweep.sbatch: refused, the file kept (it was
# replaced by the point list or the job script, exit 0); under another name it is taken
mkdir -p "$TMP/sd6"
sweep_file '"vary": {"global_batch_size": [16, 32]}'
for f in points.txt sweep.sbatch; do
    cp "$TMP/k.json" "$TMP/sd6/$f"
    intact "--slurm-dry-run refuses to write $f over the sweep file in --slurm-dir" 1 \
        "sd6/$f: --slurm-dir: the" "$TMP/sd6/$f" \
        "$SWEEP" --slurm-dry-run --slurm-dir "$TMP/sd6" -o "$TMP/sd6.csv" "$TMP/sd6/$f"
    grep -q "is also the sweep file" "$TMP/err" && [ ! -e "$TMP/sd6/fragments" ] && ok ||
        ko "the refusal names the sweep file and creates nothing ($f)"
    intact "--slurm refuses it too, before sbatch ($f)" 1 "is also the sweep file" "$TMP/sd6/$f" \
        "$SWEEP" --slurm --slurm-dir "$TMP/sd6" -o "$TMP/sd6.csv" "$TMP/sd6/$f"
    rm -f "$TMP/sd6/$f"
done
cp "$TMP/k.json" "$TMP/sd6/mine.json"
"$SWEEP" --slurm-dry-run --slurm-dir "$TMP/sd6" -o "$TMP/sd6.csv" "$TMP/sd6/mine.json" >"$TMP/out" 2>"$TMP/err" &&
    grep -q '^#SBATCH --array=0-1$' "$TMP/sd6/sweep.sbatch" && cmp -s "$TMP/sd6/mine.json" "$TMP/k.json" && ok ||
    ko "a sweep file in --slurm-dir under a name of its own is taken"
# the results CSV as --slurm-dir's points.txt, one point pending: its rows are kept
mkdir -p "$TMP/sd4"
sweep_file '"vary": {"global_batch_size": [16]}'
"$SWEEP" -j1 --quiet -o "$TMP/sd4/points.txt" "$TMP/k.json" 2>"$TMP/err"
sweep_file '"vary": {"global_batch_size": [16, 32]}'
intact "--slurm-dry-run refuses to write points.txt over the results CSV" 1 \
    "the point list simsweep --slurm writes (--slurm-dir's points.txt) is also the sweep's CSV" \
    "$TMP/sd4/points.txt" "$SWEEP" --slurm-dry-run -o "$TMP/sd4/points.txt" --slurm-dir "$TMP/sd4" "$TMP/k.json"
[ "$(rows "$TMP/sd4/points.txt" | grep -c ' ok$')" -eq 1 ] && ok || ko "the results CSV still holds its row"
# -o naming the sweep file: refused by every mode, the file kept
for mode in --dry-run --emit-jobs --slurm-dry-run ""; do
    intact "-o naming the sweep file (${mode:-run})" 1 "k.json: -o: the sweep's CSV is also the sweep file" \
        "$TMP/k.json" "$SWEEP" $mode -o "$TMP/k.json" "$TMP/k.json"
done

# a point's output onto the CSV's lock file: refused by every mode before anything runs (it
# replaced the lock, letting a second simsweep run into the CSV beside the first)
printf '{"csv": "%s", "platforms": ["%s"], "workloads": ["%s"], "vary": {"global_batch_size": [16, 32]},
 "points": [{"--trace": "%s"}]}\n' "$TMP/ob.csv" "$P8" "$W8" "$TMP/ob.csv.lock" >"$TMP/b6.json"
sweep_file '"vary": {"global_batch_size": [16]}'
"$SWEEP" -j1 --quiet -o "$TMP/ob.csv" "$TMP/k.json" 2>"$TMP/err" # the CSV and its (empty) lock file
cp "$TMP/ob.csv" "$TMP/ob.orig"
for mode in "" --dry-run --emit-jobs --slurm-dry-run; do
    intact "a point's --trace onto CSV.lock is refused (${mode:-run})" 2 \
        "b6.json: --trace: point 2 writes $TMP/ob.csv.lock, which is the lock file of the sweep's CSV" \
        "$TMP/ob.csv.lock" "$SWEEP" $mode "$TMP/b6.json"
    [ ! -s "$TMP/out" ] && [ ! -e "$TMP/ob.slurm" ] && cmp -s "$TMP/ob.csv" "$TMP/ob.orig" && ok ||
        ko "nothing run or written (${mode:-run})"
done
# the same from "options", through a linked folder and a ".." in a folder that does not exist
printf '{"platforms": ["%s"], "workloads": ["%s"], "options": ["--trace", "%s"]}\n' \
    "$P8" "$W8" "$TMP/link/nodir/../ob.csv.lock" >"$TMP/k2.json"
intact "--trace onto CSV.lock through a linked folder, from options" 2 \
    "which is the lock file of the sweep's CSV ($TMP/ob.csv.lock)" "$TMP/ob.csv.lock" \
    "$SWEEP" -o "$TMP/ob.csv" "$TMP/k2.json"
# a point's output onto the CSV itself, the sweep file (also through a hard link), a workload
cp "$W8" "$TMP/w8.json"
own() {
    printf '{"csv": "%s", "platforms": ["%s"], "workloads": ["%s"], "points": [{"%s": "%s"}]}\n' \
        "$TMP/ob.csv" "$P8" "$TMP/w8.json" "$1" "$2" >"$TMP/own.json"
}
own --frontier "$TMP/ob.csv"
intact "a point's --frontier onto the sweep's CSV" 2 \
    "own.json: --frontier: point 0 writes $TMP/ob.csv, which is the sweep's CSV" "$TMP/ob.csv" \
    "$SWEEP" "$TMP/own.json"
own --plan-out "$TMP/own.json"
intact "a point's --plan-out onto the sweep file" 2 "point 0 writes $TMP/own.json, which is the sweep file" \
    "$TMP/own.json" "$SWEEP" --dry-run "$TMP/own.json"
own --trace "$TMP/own.hard"
ln "$TMP/own.json" "$TMP/own.hard"
intact "a point's --trace onto a hard link of the sweep file" 2 "own.hard, which is the sweep file" \
    "$TMP/own.json" "$SWEEP" --dry-run "$TMP/own.json"
own --trace "$TMP/w8.json"
intact "a point's --trace onto a workload of the sweep" 2 "w8.json, which is a workload of the sweep" \
    "$TMP/w8.json" "$SWEEP" "$TMP/own.json"
# into --slurm-dir: its point list, a fragment, a Slurm log
for f in points.txt fragments/part-5.csv slurm-12_0.out; do
    sweep_file "\"points\": [{\"--trace\": \"$TMP/sd7/$f\"}]"
    "$SWEEP" --slurm-dry-run --slurm-dir "$TMP/sd7" -o "$TMP/sd7.csv" "$TMP/k.json" >/dev/null 2>"$TMP/err"
    code=$?
    [ $code -eq 2 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "k.json: --trace: point 0 writes $TMP/sd7/$f" "$TMP/err" &&
        [ ! -e "$TMP/sd7" ] && ok || ko "a point's --trace onto --slurm-dir's $f is refused, exit 2 ($code)"
done

# still taken: a trace per point, and a point re-saving the plan it replays (simrun's own check)
"$SIMRUN" --quiet --plan-out "$TMP/replay.json" "$P8" "$W8" 2>"$TMP/err"
sweep_file "\"vary\": {\"--trace\": [\"$TMP/tr1.json\", \"$TMP/tr2.json\"]},
  \"points\": [{\"--plan\": \"$TMP/replay.json\", \"--plan-out\": \"$TMP/replay.json\"}]"
"$SWEEP" -j2 --quiet -o "$TMP/legit.csv" "$TMP/k.json" 2>"$TMP/err"
code=$?
[ $code -eq 0 ] && [ "$(rows "$TMP/legit.csv" | grep -c ' ok$')" -eq 3 ] && [ -s "$TMP/tr1.json" ] &&
    [ -s "$TMP/tr2.json" ] && [ ! -s "$TMP/legit.csv.lock" ] && ok ||
    ko "a sweep whose points write files of their own runs (exit $code)"

echo "sweep: $(($(date +%s) - started)) s"
harness_done sweep
