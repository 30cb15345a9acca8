#!/bin/sh
# output_test.sh -- simrun's output files under concurrency, hostile names and
# failing targets (issue "No input crashes simrun or destroys a file").
#   sh tests/output_test.sh build/simrun
# Checks that simultaneous --csv writers keep one header and whole rows (also
# rows longer than 4 KiB), that string fields are quoted as RFC 4180 asks,
# that no output option ever removes or rewrites a device or a read-only file,
# that a bad output path fails before simulating, naming the option (also an
# output that is an input or another output, and a CSV whose last row was
# cut short), and that
# a failed write on standard output is an error.  CSV files are parsed with
# /usr/bin/python3's csv module.  Ends with "output: N passed, N failed".
#   OUTPUT_TEST_ROUNDS=N   rounds of 8 concurrent writers (default 50)
set -u
SIMRUN=${1:-build/simrun}
cd "$(dirname "$0")/.." || exit 2
. tests/harness.sh

PY=/usr/bin/python3
P8=platforms/test_8npu.xml
W8=workloads/small_gpt.json
BIG_P=platforms/16k_npu.xml
BIG_W=workloads/llama.json
ROUNDS=${OUTPUT_TEST_ROUNDS:-50}
WRITERS=8
started=$(date +%s)

# A path of more than 3,000 bytes naming the same file ("./" repeated), so a
# row holding two of them is longer than 4 KiB.
long_path() { printf "%s%s" "$(printf './%.0s' $(seq 1500))" "$1"; }
LP8=$(long_path "$P8")
LW8=$(long_path "$W8")

# check_csv.py FILE... : every FILE has the header once, as its first line,
# every record has the header's column count, and the file ends with a newline.
# Options before the files: --rows N (records after the header), --long N (rows
# whose platform is the long path), --field COLUMN=VALUE (the last row's).
cat >"$TMP/check_csv.py" <<'EOF'
import csv, sys
args = sys.argv[1:]
rows_expected = long_expected = None
fields = {}
while args and args[0].startswith("--"):
    opt, val = args[0], args[1]
    args = args[2:]
    if opt == "--rows":
        rows_expected = int(val)
    elif opt == "--long":
        long_expected = int(val)
    elif opt == "--field":
        k, _, v = val.partition("=")
        fields[k] = v.encode().decode("unicode_escape")
problems = []
for path in args:
    with open(path, newline="") as f:
        text = f.read()
    records = list(csv.reader(text.splitlines(keepends=True)))
    if not records or records[0][:3] != ["platform", "workload", "planner"]:
        problems.append("%s: no header first" % path)
        continue
    header = records[0]
    body = records[1:]
    if not text.endswith("\n"):
        problems.append("%s: does not end with a newline" % path)
    if any(r == header for r in body):
        problems.append("%s: %d extra header(s)" % (path, sum(r == header for r in body)))
    bad = [i + 2 for i, r in enumerate(body) if len(r) != len(header)]
    if bad:
        problems.append("%s: records %s have the wrong column count (expected %d)"
                        % (path, bad[:5], len(header)))
    if rows_expected is not None and len(body) != rows_expected:
        problems.append("%s: %d rows, expected %d" % (path, len(body), rows_expected))
    if long_expected is not None:
        import os
        longs = [r for r in body if len(r) == len(header) and len(r[0]) > 3000]
        whole = [r for r in longs if os.path.normpath(r[0]) == "platforms/test_8npu.xml"
                 and os.path.normpath(r[1]) == "workloads/small_gpt.json"
                 and len(",".join(r)) > 4096]
        if len(whole) != long_expected:
            problems.append("%s: %d whole rows over 4 KiB, expected %d"
                            % (path, len(whole), long_expected))
    for k, v in fields.items():
        if not body or len(body[-1]) != len(header) or body[-1][header.index(k)] != v:
            got = body[-1][header.index(k)] if body and len(body[-1]) == len(header) else None
            problems.append("%s: %s is %r, expected %r" % (path, k, got, v))
for p in problems[:10]:
    print(p)
sys.exit(1 if problems else 0)
EOF
check_csv() { "$PY" "$TMP/check_csv.py" "$@" >"$TMP/err" 2>&1; }

# --- concurrent appends ------------------------------------------------------
# Each round: 8 simultaneous writers on a fresh CSV, half of them with rows
# longer than 4 KiB (long paths), the other half short rows.
r=1
while [ "$r" -le "$ROUNDS" ]; do
    w=1
    while [ "$w" -le "$WRITERS" ]; do
        if [ $((w % 2)) -eq 0 ]; then
            "$SIMRUN" --quiet --csv "$TMP/c$r.csv" "$LP8" "$LW8" 2>>"$TMP/writers.err" &
        else
            "$SIMRUN" --quiet --csv "$TMP/c$r.csv" "$P8" "$W8" 2>>"$TMP/writers.err" &
        fi
        w=$((w + 1))
    done
    wait
    r=$((r + 1))
done
files=$(r=1; while [ "$r" -le "$ROUNDS" ]; do printf '%s ' "$TMP/c$r.csv"; r=$((r + 1)); done)
headers_ok=1
for f in $files; do
    [ "$(grep -c '^platform,workload,planner' "$f")" -eq 1 ] && head -1 "$f" | grep -q '^platform,' ||
        headers_ok=0
done
[ "$headers_ok" -eq 1 ] && ok || ko "$ROUNDS rounds of $WRITERS writers: exactly one header line, first"
# shellcheck disable=SC2086
if [ ! -s "$TMP/writers.err" ] && check_csv --rows "$WRITERS" --long $((WRITERS / 2)) $files; then ok; else
    [ -s "$TMP/writers.err" ] && cat "$TMP/writers.err" >>"$TMP/err"
    ko "$ROUNDS rounds of $WRITERS writers: $WRITERS whole rows each, those over 4 KiB intact"
fi

# --- quoting (RFC 4180) -------------------------------------------------------
# A saved plan whose file name holds a comma, a quote and a newline (names
# inside the files may not: the readers refuse control characters).
evil="$TMP/$(printf 'ev,il"na\nme.json')"
"$SIMRUN" --quiet --plan-out "$TMP/plan.json" "$P8" "$W8" 2>"$TMP/err" &&
    cp "$TMP/plan.json" "$evil" &&
    "$SIMRUN" --quiet --csv "$TMP/q.csv" --plan "$evil" "$P8" "$W8" 2>>"$TMP/err" &&
    check_csv --rows 1 --field "plan_file=$TMP/ev,il\"na\\nme.json" "$TMP/q.csv" &&
    ok || ko "a plan file name with , \" and a newline is one quoted CSV field"
"$SIMRUN" --quiet --csv "$TMP/q2.csv" --set 'name="a,b"' "$P8" "$W8" 2>"$TMP/err" &&
    check_csv --rows 1 --field 'overrides=name="a,b"' "$TMP/q2.csv" &&
    ok || ko "an override with a comma and quotes is one quoted CSV field"
mkdir -p "$TMP/we,ird\"dir" && cp "$W8" "$TMP/we,ird\"dir/w.json" &&
    "$SIMRUN" --quiet --csv "$TMP/q3.csv" "$P8" "$TMP/we,ird\"dir/w.json" 2>"$TMP/err" &&
    check_csv --rows 1 --field "workload=$TMP/we,ird\"dir/w.json" "$TMP/q3.csv" &&
    ok || ko "a workload path with a comma and a quote is one quoted CSV field"

# --- devices and read-only files are never touched -----------------------------
if [ -c /dev/full ]; then
    "$SIMRUN" --trace /dev/full "$P8" "$W8" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && [ -c /dev/full ] && grep -q '/dev/full' "$TMP/err" &&
        [ ! -s "$TMP/out" ]; then ok; else ko "--trace /dev/full: exit $rc, refused before simulating, device kept"; fi
    for opt in --plan-out --frontier --csv; do
        "$SIMRUN" "$opt" /dev/full "$P8" "$W8" >"$TMP/out" 2>"$TMP/err"
        rc=$?
        if [ "$rc" -ne 0 ] && [ -c /dev/full ] && grep -q -- "$opt" "$TMP/err"; then ok; else
            ko "$opt /dev/full: exit $rc, refused naming the option, device kept"
        fi
    done
else
    echo "output: /dev/full is missing, device checks skipped"
fi
printf 'keep me\n' >"$TMP/ro.json"
cp "$TMP/ro.json" "$TMP/ro.orig"
chmod 444 "$TMP/ro.json"
for opt in --trace --plan-out --csv --frontier; do
    "$SIMRUN" "$opt" "$TMP/ro.json" "$P8" "$W8" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ "$rc" -ne 0 ] && cmp -s "$TMP/ro.json" "$TMP/ro.orig" &&
        grep -q "ro.json" "$TMP/err" && grep -q -- "$opt" "$TMP/err"; then ok; else
        ko "$opt onto a read-only file (chmod 444): exit $rc, content unchanged"
    fi
done
[ "$(stat -c %a "$TMP/ro.json")" = 444 ] && ok || ko "the read-only file keeps its mode"

# A successful trace replaces an existing file whole and leaves no temporary file.
mkdir "$TMP/tr" && printf 'old' >"$TMP/tr/t.json"
"$SIMRUN" --quiet --trace "$TMP/tr/t.json" --plan-out "$TMP/tr/p.json" "$P8" "$W8" 2>"$TMP/err" &&
    "$PY" -c 'import json,sys; json.load(open(sys.argv[1])); json.load(open(sys.argv[2]))' \
        "$TMP/tr/t.json" "$TMP/tr/p.json" 2>>"$TMP/err" &&
    [ "$(ls -A "$TMP/tr" | wc -l)" -eq 2 ] && ok || ko "--trace and --plan-out replace whole files, no temporary left"

# A failed run leaves every existing output as it was: --frontier's sweep is
# computed first but written only after the run succeeded (the plan below
# does not fit: exit 3)
for opt in --trace --plan-out --frontier; do
    printf 'precious\n' >"$TMP/keep.out"
    "$SIMRUN" "$opt" "$TMP/keep.out" --set model.seq_length=16384 "$P8" "$W8" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ "$rc" -eq 3 ] && [ "$(cat "$TMP/keep.out")" = precious ]; then ok; else
        ko "$opt after a run that does not fit: exit $rc, the existing file kept"
    fi
done

# --- an output is never an input or another output -----------------------------
# Refused before simulating (exit 1, naming both), every file left as it was:
# onto the workload, onto the platform through a symbolic link, onto a --plan
# input, two outputs on one file (also ./-spelled), and under --planner all,
# where both get the planner's name.
mkdir "$TMP/same" && cp "$W8" "$TMP/same/w.json" && cp "$P8" "$TMP/same/p.xml" &&
    ln -s p.xml "$TMP/same/plink.xml" && printf 'old\n' >"$TMP/same/keep.csv"
"$SIMRUN" --quiet --plan-out "$TMP/same/plan.json" "$TMP/same/p.xml" "$TMP/same/w.json" 2>"$TMP/err"
cp -r "$TMP/same" "$TMP/same.orig"
same_refused() { # name expected-text args...: exit 1, one line naming the text, nothing changed
    name=$1 text=$2
    shift 2
    "$SIMRUN" "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ "$rc" -eq 1 ] && [ ! -s "$TMP/out" ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] &&
        grep -qF -- "$text" "$TMP/err" && diff -r "$TMP/same" "$TMP/same.orig" >/dev/null; then ok; else
        ko "$name: exit $rc, expected exit 1 naming '$text', every file unchanged"
    fi
}
S=$TMP/same
same_refused "--trace onto the workload" "is also the workload" --trace "$S/w.json" "$S/p.xml" "$S/w.json"
same_refused "--plan-out onto the platform through a link" "is also the platform" \
    --plan-out "$S/plink.xml" "$S/p.xml" "$S/w.json"
same_refused "--frontier onto the --plan input" "is also the --plan file" \
    --plan "$S/plan.json" --frontier "$S/plan.json" "$S/p.xml" "$S/w.json"
same_refused "--trace and --csv on one file" "is also the file of --csv" \
    --csv "$S/keep.csv" --trace "$S/./keep.csv" "$S/p.xml" "$S/w.json"
same_refused "--trace and --plan-out on one new file" "is also the file of --plan-out" \
    --plan-out "$S/new.json" --trace "$S/new.json" "$S/p.xml" "$S/w.json"
same_refused "--planner all: the same name per planner" "new.megatron.json is also the file of --plan-out" \
    --planner all --plan-out "$S/new.json" --trace "$S/new.json" "$S/p.xml" "$S/w.json"
[ ! -e "$S/new.json" ] && [ ! -e "$S/new.megatron.json" ] && ok || ko "a refused run creates no file"
# the routing trace a workload names (model.moe_token_trace, relative to its folder) is an
# input too; a plan may be re-saved onto itself (read whole before it is written)
if "$(dirname "$SIMRUN")/moetrace" -o "$S/t.trace" --workload workloads/moe_21b_32npu.json --steps 1 \
    --seed 3 2>"$TMP/err" && cp workloads/moe_21b_32npu.json "$S/moe.json"; then
    rm -rf "$TMP/same.orig" && cp -r "$S" "$TMP/same.orig"
    same_refused "--trace onto the workload's moe_token_trace" "is also the workload's model.moe_token_trace" \
        --set 'model.moe_token_trace="t.trace"' --trace "$S/t.trace" platforms/moe_32npu.xml "$S/moe.json"
else
    ko "moetrace writes a trace for the moe_token_trace check"
fi
"$SIMRUN" --quiet --plan "$S/plan.json" --plan-out "$S/plan.json" "$S/p.xml" "$S/w.json" 2>"$TMP/err" &&
    grep -q '"cost_model_sha256"' "$S/plan.json" && ok || ko "--plan-out onto its own --plan re-saves the plan"

# A CSV whose last row was cut short (no line end) is refused before
# simulating, naming its last line: a new row would be glued to it.
"$SIMRUN" --quiet --csv "$TMP/cut.csv" "$P8" "$W8" 2>"$TMP/err" &&
    "$SIMRUN" --quiet --csv "$TMP/cut.csv" "$P8" "$W8" 2>>"$TMP/err" &&
    head -c -30 "$TMP/cut.csv" >"$TMP/cut2.csv" && cp "$TMP/cut2.csv" "$TMP/cut2.orig"
"$SIMRUN" --quiet --csv "$TMP/cut2.csv" "$P8" "$W8" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ "$rc" -eq 4 ] && grep -qF "cut2.csv:3: --csv: the last row has no line end" "$TMP/err" &&
    cmp -s "$TMP/cut2.csv" "$TMP/cut2.orig" && ok ||
    ko "--csv onto a cut last row: exit $rc, expected exit 4 naming line 3, file unchanged"

# --- standard output ---------------------------------------------------------
if [ -c /dev/full ]; then
    "$SIMRUN" "$P8" "$W8" >/dev/full 2>"$TMP/err"
    rc=$?
    [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && grep -q "standard output" "$TMP/err" && ok ||
        ko "simrun > /dev/full: exit $rc, expected an error"
    "$SIMRUN" --help >/dev/full 2>"$TMP/err" && ko "simrun --help > /dev/full exits 0" || ok
fi

# --- bad output paths fail before simulating ----------------------------------
# On the 16K-NPU case a simulation takes seconds; a refusal takes no time and
# prints no table.
for spec in "--csv /nonexistent/dir/x.csv" "--trace /nonexistent/dir/t.json" \
    "--plan-out /nonexistent/dir/p.json" "--frontier /nonexistent/dir/f.csv" "--trace $TMP" \
    "--csv $TMP/ro.json/x.csv"; do
    set -- $spec
    t0=$(date +%s%N)
    timeout 20 "$SIMRUN" "$1" "$2" "$BIG_P" "$BIG_W" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    if [ "$rc" -eq 4 ] && [ ! -s "$TMP/out" ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] &&
        grep -q -- "$1" "$TMP/err" && grep -qF -- "$2" "$TMP/err" && [ "$ms" -lt 1000 ]; then ok; else
        ko "$1 $2: exit $rc after $ms ms, expected exit 4 before simulating, naming $1 and the path"
    fi
done

echo "output: $ROUNDS rounds of $WRITERS concurrent writers, $(($(date +%s) - started)) s"
harness_done output
