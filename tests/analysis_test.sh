#!/bin/sh
# analysis_test.sh -- end-to-end tests of the plotting scripts in analysis/.
#   sh tests/analysis_test.sh [PYTHON]      (default /usr/bin/python3)
# Each script must turn a tiny CSV of tests/data/ into a PNG, and bad input
# (missing file or column, a non-number, a directory that does not exist...)
# must exit non-zero with one line on stderr naming the problem, never a
# Python traceback.  The Pareto frontier is checked against a brute-force
# dominance test.  Ends with "analysis: N passed, N failed".
set -u
PYTHON=${1:-/usr/bin/python3}
cd "$(dirname "$0")/.." || exit 2
. tests/harness.sh

if ! "$PYTHON" -c 'import matplotlib' 2>/dev/null; then
    echo "analysis: $PYTHON cannot import matplotlib (install python3-matplotlib)"
    echo "analysis: 0 passed, 1 failed"
    exit 1
fi

is_png() { [ -s "$1" ] && [ "$(head -c 4 "$1" | tail -c 3)" = "PNG" ]; }

# expect_png NAME OUT SCRIPT ARGS...: the script exits 0 and writes a PNG.
expect_png() {
    name=$1 out=$2 script=$3
    shift 3
    rm -f "$out"
    if ! "$PYTHON" "analysis/$script" "$@" >"$TMP/out" 2>"$TMP/err"; then
        ko "$name: exit $?"
    elif ! is_png "$out"; then
        ko "$name: $out is not a PNG"
    else
        ok
    fi
}

# expect_error NAME PATTERN SCRIPT ARGS...: non-zero exit, no PNG, one line on
# stderr containing PATTERN, no traceback.
expect_error() {
    name=$1 pattern=$2 script=$3
    shift 3
    rm -f "$TMP/bad.png"
    "$PYTHON" "analysis/$script" "$@" >"$TMP/out" 2>"$TMP/err"
    got=$?
    if [ "$got" -eq 0 ]; then
        ko "$name: exit 0, expected an error"
    elif grep -q Traceback "$TMP/err"; then
        ko "$name: Python traceback"
    elif ! grep -q -- "$pattern" "$TMP/err"; then
        ko "$name: stderr does not mention '$pattern'"
    elif [ -e "$TMP/bad.png" ]; then
        ko "$name: wrote a PNG anyway"
    else
        ok
    fi
}

D=tests/data
R=$D/results_small.csv
S=$D/sweep_small.csv
F=$D/frontier_small.csv

# ---- PNGs from good input ---------------------------------------------------
expect_png planners "$TMP/p.png" plot_planners.py "$R" -o "$TMP/p.png"
expect_png sweep_numeric "$TMP/s.png" plot_sweep.py "$S" --x num_micro_batches --y bubble_ratio \
    --group recompute -o "$TMP/s.png"
expect_png sweep_categorical_bytes "$TMP/c.png" plot_sweep.py "$R" --x recompute --y peak_bytes \
    --group workload -o "$TMP/c.png"
expect_png sweep_where_logx "$TMP/w.png" plot_sweep.py "$S" --x global_batch_size \
    --y iteration_s --where recompute=full --logx -o "$TMP/w.png"
expect_png sweep_agg "$TMP/a.png" plot_sweep.py "$S" --x num_micro_batches --y mfu --agg max \
    -o "$TMP/a.png"
expect_png frontier "$TMP/f.png" plot_frontier.py "$F" -o "$TMP/f.png"
expect_png frontier_group "$TMP/g.png" plot_frontier.py "$F" --group recompute -o "$TMP/g.png"

# ---- bad input ----------------------------------------------------------------
printf 'platform,workload\nx,y\n' >"$TMP/cols.csv"
: >"$TMP/empty.csv"
sed '2s/0.0400198038/fast/' "$R" >"$TMP/nonnum.csv"
sed '3s/,1f1b,/,1f1b,extra,/' "$R" >"$TMP/short.csv"
sed 's/,true,/,maybe,/' "$F" >"$TMP/feasible.csv"
sed 's/^8,8,16,1,full,10.0,/8,8,16,1,full,,/' "$F" >"$TMP/notime.csv"
for s in plot_planners.py plot_frontier.py; do
    expect_error "$s missing file" "$TMP/none.csv" $s "$TMP/none.csv" -o "$TMP/bad.png"
    expect_error "$s missing column" "cols.csv: missing column" $s "$TMP/cols.csv" -o "$TMP/bad.png"
    expect_error "$s empty file" "empty.csv: empty file" $s "$TMP/empty.csv" -o "$TMP/bad.png"
    expect_error "$s no output" "required" $s "$TMP/cols.csv"
done
expect_error "sweep missing file" "$TMP/none.csv" plot_sweep.py "$TMP/none.csv" --x a --y b \
    -o "$TMP/bad.png"
# a sweep CSV with status: the failed point's row (no results) is left out, and said
awk -F, 'BEGIN { OFS = "," } NR == 1 { print $0 ",status"; next } { print $0 ",ok" }
    END { print "platforms/test_8npu.xml,workloads/small_gpt.json,,,,,,,,,,,,,,,,,,,,,,,,,,,failed" }' "$S" >"$TMP/status.csv"
expect_png sweep_skips_failed "$TMP/f.png" plot_sweep.py "$TMP/status.csv" --x num_micro_batches \
    --y bubble_ratio --group recompute -o "$TMP/f.png"
grep -q "status.csv: 1 row of failed points left out" "$TMP/err" && ok || ko "a failed point's row is left out, and said"
expect_error "sweep missing column" "missing column 'num_stages'" plot_sweep.py "$S" \
    --x num_stages --y iteration_s -o "$TMP/bad.png"
expect_error "sweep non-numeric y" "column 'recompute': expected a number" plot_sweep.py "$S" \
    --x num_micro_batches --y recompute --group recompute -o "$TMP/bad.png"
expect_error "sweep duplicate points" "rows with num_micro_batches=" plot_sweep.py "$S" \
    --x num_micro_batches --y iteration_s -o "$TMP/bad.png"
expect_error "sweep where matches nothing" "no row matches" plot_sweep.py "$S" \
    --x num_micro_batches --y iteration_s --where recompute=sometimes -o "$TMP/bad.png"
expect_error "sweep logx on categories" "--logx needs numeric" plot_sweep.py "$S" \
    --x recompute --y iteration_s --logx --agg mean -o "$TMP/bad.png"
# a log axis cannot show 0: one line naming the line and column, not matplotlib's warning
awk -F, 'BEGIN { OFS = "," } NR == 1 { for (i = 1; i <= NF; i++) if ($i == "iteration_s") c = i }
    NR > 1 { $c = 0 } { print }' "$S" >"$TMP/zero.csv"
expect_error "sweep logy on zeros" "zero.csv:2: --logy needs positive values in column 'iteration_s', got '0'" \
    plot_sweep.py "$TMP/zero.csv" --x num_micro_batches --y iteration_s --group recompute --logy -o "$TMP/bad.png"
[ "$(wc -l <"$TMP/err")" -eq 1 ] && ok || ko "sweep logy on zeros: one line on stderr"
awk -F, 'BEGIN { OFS = "," } NR == 1 { for (i = 1; i <= NF; i++) if ($i == "num_micro_batches") c = i }
    NR == 3 { $c = -4 } { print }' "$S" >"$TMP/negx.csv"
expect_error "sweep logx on a negative x" "negx.csv:3: --logx needs positive values in column 'num_micro_batches', got '-4'" \
    plot_sweep.py "$TMP/negx.csv" --x num_micro_batches --y iteration_s --group recompute --logx -o "$TMP/bad.png"
# a CSV saved with a UTF-8 byte-order mark (Excel): the mark is not part of the first column's name
printf '\357\273\277' >"$TMP/bom.csv"
cat "$S" >>"$TMP/bom.csv"
expect_png sweep_bom "$TMP/bom.png" plot_sweep.py "$TMP/bom.csv" --x platform --y iteration_s --agg min \
    -o "$TMP/bom.png"
"$PYTHON" -c 'import sys; sys.path.insert(0, "analysis"); import npcsv
a, b = npcsv.read_table(sys.argv[1], ["platform"]), npcsv.read_table(sys.argv[2], ["platform"])
assert a.columns == b.columns and a.rows == b.rows, (a.columns[0], b.columns[0])' "$TMP/bom.csv" "$S" 2>"$TMP/err" &&
    ok || ko "a CSV with a byte-order mark reads as the same CSV without one"
expect_error "planners non-numeric time" "nonnum.csv:2: column 'iteration_s'" plot_planners.py \
    "$TMP/nonnum.csv" -o "$TMP/bad.png"
expect_error "planners short row" "short.csv:3:" plot_planners.py "$TMP/short.csv" -o "$TMP/bad.png"
expect_error "planners no baseline" "no row of baseline planner 'pipedream'" plot_planners.py "$R" \
    --baseline pipedream -o "$TMP/bad.png"
expect_error "planners output dir missing" "$TMP/nodir/p.png" plot_planners.py "$R" \
    -o "$TMP/nodir/p.png"
expect_error "planners binary input" "not a CSV" plot_planners.py "$TMP/p.png" -o "$TMP/bad.png"
expect_error "frontier bad feasible" "column 'feasible'" plot_frontier.py "$TMP/feasible.csv" \
    -o "$TMP/bad.png"
expect_error "frontier feasible without time" "notime.csv:2: column 'iteration_s'" \
    plot_frontier.py "$TMP/notime.csv" -o "$TMP/bad.png"

# ---- plot_moe_policies.py, and the output name ----------------------------------
# Two steps of results/moe/policies.csv (four policies each).
head -1 results/moe/policies.csv >"$TMP/moe.csv"
grep -E ',[12]$' results/moe/policies.csv >>"$TMP/moe.csv"
expect_png moe_policies "$TMP/m.png" plot_moe_policies.py "$TMP/moe.csv" "$TMP/m.png" "two steps"
grep -q "^efficientmoe " "$TMP/out" && ok || ko "plot_moe_policies prints the table of means"
# simrun's own CSV, without the experiments' appended trace_step column: the same plot
"$PYTHON" -c 'import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
k = rows[0].index("trace_step")
csv.writer(open(sys.argv[2], "w", newline=""), lineterminator="\n").writerows(r[:k] + r[k + 1:] for r in rows)' \
    "$TMP/moe.csv" "$TMP/moe_plain.csv"
expect_png moe_policies_plain "$TMP/m2.png" plot_moe_policies.py "$TMP/moe_plain.csv" "$TMP/m2.png" "two steps"
awk -F, 'BEGIN { OFS = "," } NR == 1 { for (i = 1; i <= NF; i++) if ($i == "moe_policy") c = i }
    NR == 2 { $c = "sometimes" } { print }' "$TMP/moe.csv" >"$TMP/moe_policy.csv"
expect_error "moe unknown policy" "moe_policy.csv:2: column 'moe_policy': 'sometimes'" \
    plot_moe_policies.py "$TMP/moe_policy.csv" "$TMP/bad.png"
expect_error "moe missing column" "cols.csv: missing column" plot_moe_policies.py "$TMP/cols.csv" \
    "$TMP/bad.png"
# a policy averaged over other steps than the others (a failed or missing
# point) is refused: efficientmoe's step 2 dropped
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "moe_policy") c = i }
    !(NR > 1 && $c == "efficientmoe" && $NF == 2)' "$TMP/moe.csv" >"$TMP/moe_steps.csv"
expect_error "moe policies over other steps" "policy 'efficientmoe' has trace steps 1, policy" \
    plot_moe_policies.py "$TMP/moe_steps.csv" "$TMP/bad.png"

# A name that is not a .png/.pdf/.svg file, or an existing directory, is refused
# by all four scripts before anything is drawn (matplotlib itself would stop
# with a traceback on out.csv, and write somedir.png and myplot.png).
# expect_no_figure NAME TEXT SCRIPT ARGS...: non-zero exit, one line on stderr
# containing TEXT, no traceback, nothing written in $TMP/o (only the empty
# directory somedir).
expect_no_figure() {
    name=$1 text=$2 script=$3
    shift 3
    rm -rf "$TMP/o" && mkdir -p "$TMP/o/somedir"
    "$PYTHON" "analysis/$script" "$@" >"$TMP/out" 2>"$TMP/err"
    got=$?
    files=$(cd "$TMP/o" && find . ! -name . ! -name somedir)
    if [ "$got" -eq 0 ]; then
        ko "$name: exit 0, expected an error"
    elif grep -q Traceback "$TMP/err"; then
        ko "$name: Python traceback"
    elif [ "$(wc -l <"$TMP/err")" -ne 1 ] || ! grep -q -F -- "$text" "$TMP/err"; then
        ko "$name: stderr is not one line containing '$text'"
    elif [ -n "$files" ]; then
        ko "$name: wrote $files"
    else
        ok
    fi
}
for out in "$TMP/o/out.csv" "$TMP/o/somedir" "$TMP/o/myplot"; do
    what=$(basename "$out")
    expect_no_figure "planners -o $what" "-o $out: " plot_planners.py "$R" -o "$out"
    expect_no_figure "sweep -o $what" "-o $out: " plot_sweep.py "$S" --x num_micro_batches \
        --y iteration_s --group recompute -o "$out"
    expect_no_figure "frontier -o $what" "-o $out: " plot_frontier.py "$F" -o "$out"
    expect_no_figure "moe_policies PNG $what" "$out: " plot_moe_policies.py "$TMP/moe.csv" "$out"
done
expect_no_figure "sweep -o out.csv says what is expected" \
    "-o $TMP/o/out.csv: expected a .png, .pdf or .svg file" \
    plot_sweep.py "$S" --x num_micro_batches --y iteration_s --agg min -o "$TMP/o/out.csv"
expect_no_figure "sweep -o somedir says it is a directory" "-o $TMP/o/somedir: is a directory" \
    plot_sweep.py "$S" --x num_micro_batches --y iteration_s --agg min -o "$TMP/o/somedir"
if "$PYTHON" analysis/plot_sweep.py "$S" --x num_micro_batches --y iteration_s --agg min \
    -o "$TMP/s.svg" >"$TMP/out" 2>"$TMP/err" && grep -q "<svg" "$TMP/s.svg"
then ok; else ko "sweep -o s.svg writes an SVG"; fi
for s in plot_planners.py plot_sweep.py plot_frontier.py plot_moe_policies.py; do
    if "$PYTHON" "analysis/$s" --help >"$TMP/out" 2>"$TMP/err" && grep -q "^usage:" "$TMP/out"
    then ok; else ko "$s --help: exit 0 with the usage on stdout"; fi
done
# The shared helper refuses such names itself (not only the scripts' early
# check), and a figure that fails halfway leaves no partial file, and an
# earlier figure of the same name intact.
if "$PYTHON" - "$TMP" <<'EOF' 2>"$TMP/err"
import os, sys
sys.path.insert(0, "analysis")
import npcsv
T = sys.argv[1]
fig = npcsv.pyplot().figure()
for name in ("x.csv", "x", ""):
    path = os.path.join(T, name)
    try:
        npcsv.save(fig, path)
    except npcsv.InputError as e:
        assert str(e).startswith(f"-o {path}: "), e
    else:
        raise AssertionError(f"save wrote {path}")
    assert not os.path.exists(path + ".png"), path + ".png"
os.mkdir(os.path.join(T, "half"))
old = os.path.join(T, "half", "old.png")
with open(old, "wb") as f:
    f.write(b"earlier figure")
def broken(path, **kw):
    with open(path, "wb") as f:
        f.write(b"\x89PNG half")
    raise OSError(28, "No space left on device")
fig.savefig = broken
try:
    npcsv.save(fig, old)
except npcsv.InputError as e:
    assert str(e) == f"-o {old}: cannot write: No space left on device", e
else:
    raise AssertionError("no error")
assert os.listdir(os.path.join(T, "half")) == ["old.png"], os.listdir(os.path.join(T, "half"))
assert open(old, "rb").read() == b"earlier figure"
EOF
then ok; else ko "npcsv.save refuses bad names and leaves no partial file"; fi

# ---- what the figures say: labels, titles, panels, cut, log axes ---------------
expect_png frontier_devices "$TMP/d.png" plot_frontier.py $D/frontier_devices.csv -o "$TMP/d.png"
expect_png frontier_one_count "$TMP/e.png" plot_frontier.py $D/frontier_devices.csv --devices 16 \
    -o "$TMP/e.png"
expect_error "frontier devices absent" "no row with devices = 3 (the file has 8, 16)" \
    plot_frontier.py $D/frontier_devices.csv --devices 3 -o "$TMP/bad.png"
# --devices on a file without a devices column cannot choose: refused (it
# drew every plan)
expect_error "frontier --devices without the column" "--devices 999: the file has no devices column" \
    plot_frontier.py $D/frontier_small.csv --devices 999 -o "$TMP/bad.png"
# plot_planners: the figure does not depend on the order of the rows (a
# sweep's points finish in any order), each bar's speed-up is against the
# baseline's run of the same schedule, the options that differ are in the
# labels, and exact repeats are #1, #2, #3
{
    echo "platform,workload,overrides,planner,schedule,recompute,iteration_s,bubble_ratio,peak_fraction,dp_algorithm"
    echo "p.xml,w.json,,megatron,1f1b,none,0.0401087,0.1,0.5,ring-flow"
    echo "p.xml,w.json,,megatron,zb-h1,none,0.036952,0.1,0.5,ring-flow"
    echo "p.xml,w.json,,bmpipe,1f1b,none,0.036381,0.1,0.5,ring-flow"
    echo "p.xml,w.json,,bmpipe,zb-h1,none,0.033542,0.1,0.5,ring-flow"
} >"$TMP/order.csv"
(head -1 "$TMP/order.csv"; tail -n +2 "$TMP/order.csv" | sort -r) >"$TMP/order_r.csv"
{
    echo "platform,workload,overrides,planner,schedule,recompute,iteration_s,bubble_ratio,peak_fraction,dp_algorithm"
    for a in ring-flow butterfly ring; do echo "p.xml,w.json,,megatron,1f1b,none,0.04,0.1,0.5,$a"; done
    for k in 1 2 3; do echo "p.xml,w.json,,bmpipe,1f1b,none,0.03,0.1,0.5,ring"; done
} >"$TMP/repeats.csv"
if "$PYTHON" - "$TMP" <<'EOF' 2>"$TMP/err"
import sys
sys.path.insert(0, "analysis")
import npcsv, plot_planners
T = sys.argv[1]
figs = []
npcsv.save = lambda fig, path: figs.append(fig)
def bars(name):
    t = npcsv.read_table(f"{T}/{name}", plot_planners.COLUMNS)
    plot_planners.plot(t, "megatron", "x.png")
    ax = figs[-1].axes[0]
    return ([l.get_text() for l in ax.get_yticklabels()], [x.get_text() for x in ax.texts],
            ax.get_title(loc="left"))
a, b = bars("order.csv"), bars("order_r.csv")
assert a == b, (a, b)
labels, texts, title = a
# a bar's label and its text, both in the bars' order
speedups = dict(zip(labels, [x.split()[-1] for x in texts]))
assert speedups["bmpipe (zb-h1, none)"] == "1.10x", speedups   # 36.952/33.542
assert speedups["bmpipe (1f1b, none)"] == "1.10x", speedups    # 40.1087/36.381
assert speedups["megatron (zb-h1, none)"] == "1.00x", speedups
assert "megatron with the same schedule and options" in title, title
labels, texts, title = bars("repeats.csv")
assert sorted(labels) == sorted(["megatron (1f1b, none, dp_algorithm=ring-flow)",
    "megatron (1f1b, none, dp_algorithm=butterfly)", "megatron (1f1b, none, dp_algorithm=ring)",
    "bmpipe (1f1b, none, dp_algorithm=ring) #1", "bmpipe (1f1b, none, dp_algorithm=ring) #2",
    "bmpipe (1f1b, none, dp_algorithm=ring) #3"]), labels
EOF
then ok; else ko "plot_planners: order-free, per-schedule speed-ups, options in labels, #1..#3"; cat "$TMP/err"; fi
if "$PYTHON" - "$D" <<'EOF' 2>"$TMP/err"
import sys
from types import SimpleNamespace
sys.path.insert(0, "analysis")
import npcsv, plot_sweep, plot_frontier, plot_planners
D = sys.argv[1]
figs = []
npcsv.save = lambda fig, path: figs.append(fig)   # keep the figure, write nothing

# plot_sweep: words and units, percentages, the runs named in the title
t = npcsv.read_table(f"{D}/sweep_small.csv", ["num_micro_batches", "bubble_ratio", "recompute"])
a = SimpleNamespace(x="num_micro_batches", y="bubble_ratio", group="recompute", where=None,
                    agg=None, logx=False, logy=False, linear=False, ymin=None, title=None,
                    output="x.png")
plot_sweep.plot(t, list(range(len(t.rows))), a)
ax = figs[-1].axes[0]
assert ax.get_ylabel() == "pipeline bubble (% of busy time)", ax.get_ylabel()
assert ax.get_xlabel() == "micro-batches per pipeline", ax.get_xlabel()
assert "small_gpt on test_8npu (8 NPUs)" in ax.get_title(), ax.get_title()
assert max(max(l.get_ydata()) for l in ax.lines) > 50, "bubble_ratio is drawn in percent"
assert ax.get_legend().get_title().get_text() == "recompute"
# values spanning two decades get a log axis (x 4..64 does not)
assert ax.get_xscale() == "linear"
assert plot_sweep.spans_decades([1, 10, 1000]) and not plot_sweep.spans_decades([4, 64])
a.x, a.y, a.group, a.agg = "peak_bytes", "mfu", None, "max"
plot_sweep.plot(t, list(range(len(t.rows))), a)
assert figs[-1].axes[0].get_xlabel() == "peak device memory (GB)"
assert figs[-1].axes[0].get_ylabel() == "MFU (% of peak FLOP/s), max over runs"
a.ymin = 0   # a nearly flat line is not zoomed into a cliff
plot_sweep.plot(t, list(range(len(t.rows))), a)
assert figs[-1].axes[0].get_ylim()[0] == 0
# y values spanning two decades: a log axis unless --linear
a.x, a.y, a.ymin = "num_micro_batches", "tokens_per_s", None
for r in t.rows:
    if r["num_micro_batches"] == "4":
        r["tokens_per_s"] = "1"
plot_sweep.plot(t, list(range(len(t.rows))), a)
assert figs[-1].axes[0].get_yscale() == "log", "two decades: log axis"
assert figs[-1].axes[0].get_ylabel().endswith(", log scale")
a.linear = True
plot_sweep.plot(t, list(range(len(t.rows))), a)
assert figs[-1].axes[0].get_yscale() == "linear"

# plot_frontier: one panel per device count, the infeasible 48,000 GB plan cut off
t = npcsv.read_table(f"{D}/frontier_devices.csv", plot_frontier.COLUMNS)
a = SimpleNamespace(group=None, devices=None, cut=2.0, linear=False, title="T", output="x.png")
plot_frontier.plot(t, a)
axes = [x for x in figs[-1].axes if x.get_visible()]
assert len(axes) == 2, len(axes)
assert axes[0].get_title().startswith("8 NPUs"), axes[0].get_title()
assert "fastest that fits: 20 s, 8/1/1 mbs 1 full" in axes[0].get_title(), axes[0].get_title()
assert "1 plans beyond 128 GB not shown" in axes[0].get_title(), axes[0].get_title()
assert axes[0].get_xlim()[1] < 140, axes[0].get_xlim()     # not 48,000 GB
assert axes[0].get_xlabel() == "peak device memory per NPU (GB)"
assert axes[1].get_title().startswith("16 NPUs")
a.cut = 0
plot_frontier.plot(t, a)
assert [x for x in figs[-1].axes if x.get_visible()][0].get_xlim()[1] > 48000

# plot_planners: the runs named, units in words, percentages
t = npcsv.read_table(f"{D}/results_small.csv", plot_planners.COLUMNS)
plot_planners.plot(t, "megatron", "x.png")
ax_t, ax_b, ax_m = figs[-1].axes[:3]
assert "on test_8npu" in ax_t.get_title(loc="left"), ax_t.get_title(loc="left")
assert ax_t.get_xlabel() in ("iteration time (s)", "iteration time (ms)"), ax_t.get_xlabel()
assert ax_b.get_xlabel() == "pipeline bubble (% of busy time)"
assert ax_m.get_xlabel() == "peak device memory (% of HBM capacity)"
EOF
then ok; else ko "figures carry labels in words, titles naming the runs, panels per device count"; fi

# ---- numbers the plots cannot draw, and values out of their range -------------
# setcol FILE COLUMN ROW VALUE: FILE with COLUMN of line ROW (or of every data line:
# all) set to VALUE, on stdout.
setcol() {
    awk -F, -v col="$2" -v row="$3" -v val="$4" 'BEGIN { OFS = "," }
        NR == 1 { for (i = 1; i <= NF; i++) if ($i == col) c = i }
        NR > 1 && (row == "all" || NR == row) { $c = val } { print }' "$1"
}
# nan, inf and 1e308 were read by float(): a traceback from matplotlib, or points
# silently left out of a sweep; now one line naming the file, line and column.
setcol "$R" iteration_s 2 nan >"$TMP/p_nan.csv"
expect_error "planners iteration_s nan (was a traceback)" \
    "p_nan.csv:2: column 'iteration_s': expected a finite number" plot_planners.py "$TMP/p_nan.csv" -o "$TMP/bad.png"
setcol "$R" bubble_ratio 3 1e308 >"$TMP/p_big.csv"
expect_error "planners bubble_ratio 1e308 (was a traceback)" "p_big.csv:3: column 'bubble_ratio'" \
    plot_planners.py "$TMP/p_big.csv" -o "$TMP/bad.png"
setcol "$R" peak_fraction 2 -0.5 >"$TMP/p_neg.csv"
expect_error "planners negative peak_fraction" "p_neg.csv:2: column 'peak_fraction': expected a ratio of 0 or more" \
    plot_planners.py "$TMP/p_neg.csv" -o "$TMP/bad.png"
setcol "$R" npus all nan >"$TMP/p_npus.csv"
expect_error "planners npus nan (was '(nan NPUs)' in the title)" "p_npus.csv:2: column 'npus'" \
    plot_planners.py "$TMP/p_npus.csv" -o "$TMP/bad.png"
setcol "$R" iteration_s 2 -1 >"$TMP/p_negt.csv"
expect_error "planners negative time names its line" "p_negt.csv:2: column 'iteration_s': expected a positive time" \
    plot_planners.py "$TMP/p_negt.csv" -o "$TMP/bad.png"
[ "$(wc -l <"$TMP/err")" -eq 1 ] && ok || ko "planners negative time: one line (the panel title's overrides were a second)"
setcol "$S" bubble_ratio 2 nan >"$TMP/s_nan.csv"
expect_error "sweep y nan (was left out silently)" "s_nan.csv:2: column 'bubble_ratio': expected a finite number" \
    plot_sweep.py "$TMP/s_nan.csv" --x num_micro_batches --y bubble_ratio --agg mean -o "$TMP/bad.png"
setcol "$S" bubble_ratio all inf >"$TMP/s_inf.csv"
expect_error "sweep y all inf (was a traceback)" "s_inf.csv:2: column 'bubble_ratio'" \
    plot_sweep.py "$TMP/s_inf.csv" --x num_micro_batches --y bubble_ratio --agg mean -o "$TMP/bad.png"
setcol "$S" num_micro_batches 3 inf >"$TMP/s_xinf.csv"
expect_error "sweep x inf (was drawn off the axis)" "s_xinf.csv:3: column 'num_micro_batches'" \
    plot_sweep.py "$TMP/s_xinf.csv" --x num_micro_batches --y bubble_ratio --agg mean -o "$TMP/bad.png"
expect_error "sweep --ymin nan" "argument --ymin: expected a finite number" plot_sweep.py "$S" \
    --x num_micro_batches --y bubble_ratio --agg mean --ymin nan -o "$TMP/bad.png"
[ "$(wc -l <"$TMP/err")" -eq 1 ] && ok || ko "sweep --ymin nan: one line (argparse's usage was more)"
expect_error "sweep --ymin above every value" "--ymin 1e9: the y axis would start above every value" \
    plot_sweep.py "$S" --x num_micro_batches --y bubble_ratio --agg mean --ymin 1e9 -o "$TMP/bad.png"
expect_error "sweep --ymin 0 --logy" "--ymin 0: a logarithmic y axis (--logy) cannot start at 0" \
    plot_sweep.py "$S" --x num_micro_batches --y bubble_ratio --agg mean --ymin 0 --logy -o "$TMP/bad.png"
sed '2s/^8,/nan,/' $D/frontier_devices.csv >"$TMP/f_dev.csv"
expect_error "frontier devices nan (was a traceback)" "f_dev.csv:2: column 'devices'" \
    plot_frontier.py "$TMP/f_dev.csv" -o "$TMP/bad.png"
sed '2s/^8,/0,/' $D/frontier_devices.csv >"$TMP/f_dev0.csv"
expect_error "frontier devices 0" "f_dev0.csv:2: column 'devices': expected a positive whole number of devices" \
    plot_frontier.py "$TMP/f_dev0.csv" -o "$TMP/bad.png"
for cap in 0 -1 1e-320; do
    sed "s/,80e9\$/,$cap/" "$F" >"$TMP/f_cap.csv"
    expect_error "frontier capacity $cap (was a traceback or an axis of inf %)" \
        "f_cap.csv:2: column 'capacity_bytes': expected a positive capacity" plot_frontier.py "$TMP/f_cap.csv" -o "$TMP/bad.png"
done
setcol "$F" iteration_s 2 1e308 >"$TMP/f_big.csv"
expect_error "frontier iteration_s 1e308 (was an IndexError)" "f_big.csv:2: column 'iteration_s'" \
    plot_frontier.py "$TMP/f_big.csv" -o "$TMP/bad.png"
expect_error "frontier --cut nan" "argument --cut: expected a finite number" plot_frontier.py "$F" --cut nan \
    -o "$TMP/bad.png"
expect_error "frontier --devices 8.5" "argument --devices: expected a positive whole number" plot_frontier.py \
    $D/frontier_devices.csv --devices 8.5 -o "$TMP/bad.png"
# the largest and smallest numbers accepted draw without a warning
for t in 1e29 1e-29; do
    setcol "$F" iteration_s all $t >"$TMP/f_eq.csv"
    expect_png "frontier every time $t" "$TMP/f.png" plot_frontier.py "$TMP/f_eq.csv" -o "$TMP/f.png"
    [ ! -s "$TMP/err" ] && ok || ko "frontier every time $t: said something on stderr"
done
setcol "$F" memory_bytes all 0 >"$TMP/f_mem0.csv"
expect_png "frontier every plan of 0 bytes" "$TMP/f.png" plot_frontier.py "$TMP/f_mem0.csv" -o "$TMP/f.png"
[ ! -s "$TMP/err" ] && ok || ko "frontier every plan of 0 bytes: a warning (identical x limits)"

# plot_moe_policies: rows of several runs, counts out of range, the error bars
# (three steps of results/moe/policies.csv)
head -1 results/moe/policies.csv >"$TMP/moe3.csv"
grep -E ',[123]$' results/moe/policies.csv >>"$TMP/moe3.csv"
setcol "$TMP/moe3.csv" platform 6 platforms/other.xml >"$TMP/moe_mixed.csv"
expect_error "moe rows of two platforms (were averaged together)" \
    "moe_mixed.csv:6: column 'platform': 'platforms/other.xml', but line 2 has" \
    plot_moe_policies.py "$TMP/moe_mixed.csv" "$TMP/bad.png"
awk 'NR == 2 { print } { print }' "$TMP/moe3.csv" >"$TMP/moe_dup.csv"
expect_error "moe a row twice (was averaged in)" "moe_dup.csv:3: a second row of policy" \
    plot_moe_policies.py "$TMP/moe_dup.csv" "$TMP/bad.png"
setcol "$TMP/moe3.csv" moe_dropped_tokens 2 1e20 >"$TMP/moe_drop.csv"
expect_error "moe more dropped than assignments (a share over 100%)" \
    "moe_drop.csv:2: column 'moe_dropped_tokens': '1e20' dropped of" plot_moe_policies.py "$TMP/moe_drop.csv" "$TMP/bad.png"
setcol "$TMP/moe3.csv" moe_copy_s 3 -1 >"$TMP/moe_neg.csv"
expect_error "moe negative copy time" "moe_neg.csv:3: column 'moe_copy_s': expected a time of 0 s or more" \
    plot_moe_policies.py "$TMP/moe_neg.csv" "$TMP/bad.png"
setcol "$TMP/moe3.csv" moe_padding_flops 2 nan >"$TMP/moe_nan.csv"
expect_error "moe padding nan (was a traceback)" "moe_nan.csv:2: column 'moe_padding_flops'" \
    plot_moe_policies.py "$TMP/moe_nan.csv" "$TMP/bad.png"
setcol "$TMP/moe3.csv" iteration_s 2 1e308 >"$TMP/moe_big.csv"
expect_error "moe iteration_s 1e308 (was a negative yerr traceback)" "moe_big.csv:2: column 'iteration_s'" \
    plot_moe_policies.py "$TMP/moe_big.csv" "$TMP/bad.png"
# three equal times whose mean rounds below them: the error bar was -9e-16 (a traceback)
setcol "$TMP/moe3.csv" iteration_s all 7.215400323407826 >"$TMP/moe_eq.csv"
expect_png moe_equal_steps "$TMP/m3.png" plot_moe_policies.py "$TMP/moe_eq.csv" "$TMP/m3.png" "three steps"

# A figure is never written over its input (a CSV named .svg, by any name for it).
cp "$S" "$TMP/in.svg"
ln -s in.svg "$TMP/link.svg"
ln "$TMP/in.svg" "$TMP/hard.svg"
for out in in.svg link.svg hard.svg; do
    expect_error "sweep -o $out = the input" "is the input file" plot_sweep.py "$TMP/in.svg" \
        --x num_micro_batches --y bubble_ratio --agg mean -o "$TMP/$out"
done
cp "$R" "$TMP/r.svg" && cp "$F" "$TMP/f.svg" && cp "$TMP/moe.csv" "$TMP/m.svg"
expect_error "planners -o = the input" "-o $TMP/r.svg: is the input file" plot_planners.py "$TMP/r.svg" -o "$TMP/r.svg"
expect_error "frontier -o = the input" "-o $TMP/f.svg: is the input file" plot_frontier.py "$TMP/f.svg" -o "$TMP/f.svg"
expect_error "moe_policies PNG = the input" "$TMP/m.svg: is the input file" plot_moe_policies.py "$TMP/m.svg" "$TMP/m.svg"
cmp -s "$TMP/in.svg" "$S" && cmp -s "$TMP/r.svg" "$R" && cmp -s "$TMP/f.svg" "$F" && cmp -s "$TMP/m.svg" "$TMP/moe.csv" &&
    ok || ko "an input given as the output was overwritten"
expect_error "sweep -o ''" "-o '': empty file name" plot_sweep.py "$S" --x num_micro_batches --y bubble_ratio \
    --agg mean -o ""
expect_error "planners without -o: one line" "the following arguments are required: -o" plot_planners.py "$R"
[ "$(wc -l <"$TMP/err")" -eq 1 ] && ok || ko "argparse's own error: one line"
if "$PYTHON" - <<'EOF' 2>"$TMP/err"
import sys
sys.path.insert(0, "analysis")
import npcsv, plot_moe_policies
for v in ([7.215400323407826] * 3, [1e29, 3e29, 2e29], [0.1, 0.2, 0.7]):
    m, lo, hi = plot_moe_policies.stats(v)
    assert min(v) <= m <= max(v) and lo >= 0 and hi >= 0, (v, m, lo, hi)
t = npcsv.Table("t.csv", ["a"], [{"a": x} for x in ("0", "1e-30", "-1e30", "2.5")], [2, 3, 4, 5])
assert [t.number(i, "a") for i in range(4)] == [0, 1e-30, -1e30, 2.5]
for x in ("nan", "inf", "-inf", "1e400", "1e31", "1e-31", "1e-320", "1_000", "0x10", ""):
    t.rows[0]["a"] = x
    try:
        t.number(0, "a")
    except npcsv.InputError as e:
        assert str(e).startswith("t.csv:2: column 'a': expected "), e
    else:
        raise AssertionError(f"{x} read as a number")
EOF
then ok; else ko "npcsv.Table.number refuses nan, inf, magnitudes out of 1e-30..1e30; stats' error bars >= 0"; fi

# ---- tests/validation/validate.py: the command line, before anything runs ----------
# (--only opt-175b is not simulated: instant.)  The page is the whole validation; an
# existing file that is not a page it wrote is never overwritten.
V=tests/validation/validate.py
# expect_refusal NAME PATTERN ARGS...: exit 2, one line on stderr containing PATTERN,
# no traceback.
expect_refusal() {
    name=$1 pattern=$2
    shift 2
    "$PYTHON" "$V" --build build "$@" >"$TMP/out" 2>"$TMP/err"
    got=$?
    if [ "$got" -ne 2 ]; then
        ko "validate.py $name: exit $got, expected 2"
    elif grep -q Traceback "$TMP/err"; then
        ko "validate.py $name: Python traceback"
    elif [ "$(wc -l <"$TMP/err")" -ne 1 ] || ! grep -q -F -- "$pattern" "$TMP/err"; then
        ko "validate.py $name: stderr is not one line containing '$pattern'"
    else
        ok
    fi
}
mkdir "$TMP/v"
printf 'my notes\n' >"$TMP/v/notes.md"
: >"$TMP/v/afile"
expect_refusal "--write-docs with --only (rewrote the page with one entry)" \
    "--write-docs with --only opt-175b: the page is the whole validation" --only opt-175b --write-docs "$TMP/v/page.md"
expect_refusal "--write-docs a directory (IsADirectoryError after the run)" \
    "--write-docs $TMP/v: is a directory" --only opt-175b --write-docs "$TMP/v"
expect_refusal "--write-docs in a missing folder (FileNotFoundError after the run)" \
    "folder $TMP/v/none does not exist" --only opt-175b --write-docs "$TMP/v/none/page.md"
expect_refusal "--write-docs onto a file it did not write" \
    "--write-docs $TMP/v/notes.md: exists and is not a page validate.py wrote" --only opt-175b \
    --write-docs "$TMP/v/notes.md"
expect_refusal '--write-docs ""' '--write-docs "": empty file name' --only opt-175b --write-docs ""
expect_refusal "--jobs 0 (ValueError)" "argument --jobs: expected a whole number of simrun processes, at least 1, got '0'" \
    --only opt-175b --jobs 0
expect_refusal "--jobs -3" "got '-3'" --only opt-175b --jobs -3
expect_refusal "--keep a file (FileExistsError)" "--keep $TMP/v/afile: exists and is not a directory" \
    --only opt-175b --keep "$TMP/v/afile"
[ "$(cat "$TMP/v/notes.md")" = "my notes" ] && [ "$(ls -A "$TMP/v" | tr '\n' ' ')" = "afile notes.md " ] &&
    ok || ko "validate.py refusals: a file changed or was left in the folder"
# the page is written whole, over a page it wrote only, keeping its mode
if "$PYTHON" - "$TMP/v" <<'EOF' 2>"$TMP/err"
import os, sys
sys.path.insert(0, "tests/validation")
import validate
d = sys.argv[1]
page = os.path.join(d, "page.md")
validate.write_page(page, "# V\n\n" + validate.PAGE_MARKER + " -->\nold\n")
os.chmod(page, 0o640)
validate.check_page_target(page)            # a page it wrote: may be replaced
validate.write_page(page, "# V\n\n" + validate.PAGE_MARKER + " -->\nnew\n")
assert open(page).read().endswith("new\n") and os.stat(page).st_mode & 0o777 == 0o640
assert sorted(os.listdir(d)) == ["afile", "notes.md", "page.md"], os.listdir(d)
for name in ("notes.md", "afile"):
    try:
        validate.check_page_target(os.path.join(d, name))
    except validate.UsageError:
        pass
    else:
        raise AssertionError(name)
with open("docs/validation.md") as f:   # the shipped page carries the mark
    assert any(l.startswith(validate.PAGE_MARKER) for l in f.readlines()[:10])
EOF
then ok; else ko "validate.write_page replaces a page whole, check_page_target knows its pages"; fi

# ---- scripts/moe_experiment.sh, moe16k_experiment.sh: results/moe stays whole -------
# Run on a copy of what they need in $TMP/tree, never on results/: with a build folder
# without simrun they deleted results/moe/policies.csv, and a simrun failing half way
# left it half rebuilt.  Fake moetrace and simrun replay results/moe/policies.csv.
mkdir -p "$TMP/tree/scripts" "$TMP/tree/analysis" "$TMP/tree/results/moe" "$TMP/fake" "$TMP/nosim"
cp scripts/moe_experiment.sh scripts/moe16k_experiment.sh "$TMP/tree/scripts/"
cp analysis/*.py "$TMP/tree/analysis/"
for f in trace_stats policies overlap deepseek16k_trace_stats deepseek16k_policies deepseek16k_overlap; do
    printf 'shipped %s\n' "$f" >"$TMP/tree/results/moe/$f.csv"
done
cat >"$TMP/fake/moetrace" <<'EOF'
#!/bin/sh
case $1 in -o) echo trace >"$2" ;; --stats) printf 'step,share\n0,0.7\n' ;; esac
EOF
cat >"$TMP/fake/simrun" <<'EOF'
#!/bin/sh
# the rows of $FAKE_SRC (last column: the step) of --moe-trace-step and --moe-policy,
# appended to --csv without that column; exit 1 at call $FAKE_FAIL_AT
n=$(($(cat "$FAKE_COUNT" 2>/dev/null || echo 0) + 1)); echo $n >"$FAKE_COUNT"
[ "$n" = "${FAKE_FAIL_AT:-0}" ] && { echo "simrun: failed" >&2; exit 1; }
csv= step=1 policy=all
while [ $# -gt 0 ]; do
    case $1 in --csv) csv=$2; shift ;; --moe-trace-step) step=$2; shift ;; --moe-policy) policy=$2; shift ;; esac
    shift
done
[ -f "$csv" ] || head -1 "$FAKE_SRC" | sed 's/,trace_step$//' >"$csv"
awk -F, -v s="$step" -v p="$policy" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "moe_policy") c = i; next }
    $NF == s && (p == "all" || $c == p) { sub(/,[^,]*$/, ""); print }' "$FAKE_SRC" >>"$csv"
EOF
cp "$TMP/fake/moetrace" "$TMP/nosim/moetrace"
chmod +x "$TMP/fake/moetrace" "$TMP/fake/simrun" "$TMP/nosim/moetrace"
(cd "$TMP/tree/results/moe" && cksum *.csv) >"$TMP/shipped.sum"
shipped_intact() { (cd "$TMP/tree/results/moe" && cksum *.csv) | cmp -s - "$TMP/shipped.sum" &&
    [ "$(ls -A "$TMP/tree/results/moe" | grep -c '^\.')" -eq 0 ]; }
for s in moe_experiment moe16k_experiment; do
    sh "$TMP/tree/scripts/$s.sh" "$TMP/nosim" >"$TMP/out" 2>"$TMP/err"
    got=$?
    if [ "$got" -ne 1 ] || [ "$(wc -l <"$TMP/err")" -ne 1 ] || ! grep -q "^$s.sh: $TMP/nosim/simrun: not found" "$TMP/err"; then
        ko "$s.sh without simrun: exit $got, expected 1 and one line naming simrun"
    elif shipped_intact; then ok; else ko "$s.sh without simrun: results/moe changed"; fi
    export FAKE_SRC="$PWD/results/moe/policies.csv" FAKE_COUNT="$TMP/fake/count"
    [ $s = moe16k_experiment ] && FAKE_SRC="$PWD/results/moe/deepseek16k_policies.csv"
    fails="2 6"   # among the policies' runs (4), then the overlap runs
    [ $s = moe16k_experiment ] && fails="1 3"   # its one policies run, then the overlap runs
    for at in $fails; do
        rm -f "$FAKE_COUNT"
        FAKE_FAIL_AT=$at sh "$TMP/tree/scripts/$s.sh" "$TMP/fake" >"$TMP/out" 2>"$TMP/err"
        got=$?
        if [ "$got" -eq 0 ]; then ko "$s.sh with simrun failing at run $at: exit 0"
        elif shipped_intact; then ok; else ko "$s.sh with simrun failing at run $at: results/moe changed"; fi
    done
    rm -f "$FAKE_COUNT"
    if sh "$TMP/tree/scripts/$s.sh" "$TMP/fake" >"$TMP/out" 2>"$TMP/err"; then
        p=policies && [ $s = moe16k_experiment ] && p=deepseek16k_policies
        if cmp -s "$TMP/tree/results/moe/$p.csv" "$FAKE_SRC" && is_png "$TMP/tree/results/moe/$p.png" &&
            [ "$(ls -A "$TMP/tree/results/moe" | grep -c '^\.')" -eq 0 ]; then ok; else
            ko "$s.sh: the results were not all replaced, or a temporary file was left"; fi
    else
        ko "$s.sh with a working build: exit $?"
    fi
    unset FAKE_SRC FAKE_COUNT
    (cd "$TMP/tree/results/moe" && cksum *.csv) >"$TMP/shipped.sum"
done

# ---- the frontier against brute force ---------------------------------------
if "$PYTHON" - <<'EOF' 2>"$TMP/err"
import random, sys
sys.path.insert(0, "analysis")
from plot_frontier import pareto
random.seed(7)
for trial in range(200):
    n = random.randint(1, 30)
    pts = [(random.randint(1, 12), random.randint(1, 12)) for _ in range(n)]
    def dominated(k):
        t, m = pts[k]
        return any(t2 <= t and m2 <= m and (t2, m2) != (t, m) for t2, m2 in pts)
    # non-dominated values (one representative per duplicate point)
    expected = sorted({pts[k] for k in range(n) if not dominated(k)})
    got = sorted(pts[k] for k in pareto(pts))
    assert got == expected, (pts, got, expected)
EOF
then ok; else ko "pareto matches brute force"; fi

harness_done analysis
