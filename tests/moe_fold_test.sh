#!/bin/sh
# moe_fold_test.sh -- the reductions that bring the 16K MoE replay under a
# minute (docs/moe.md, "At 16K"), run both ways on a case small enough to
# replay every EP group's every all-to-all pair by pair.
#   sh tests/moe_fold_test.sh build
# The DeepSeek-V3-class model cut to 6 layers (tests/data/deepseek_cut_256.json:
# PP 2, DP 128, EP 16) on a 256-NPU 910B leaf-spine Clos built like
# 16k_npu.xml (zones; 32 NPUs per leaf, so an EP group is half a leaf as at
# 16K).  For balanced routing, and for every --moe-policy on a skewed seeded
# trace, the iteration time with --fold-dp 16 (one EP group per stage), and
# with --fold-dp 16 --moe-sample-mb 1, must be within 1% of the full replay
# (2% for the sampled run on the skewed trace: later micro-batches take the
# time micro-batch 0 measured, and with the concurrent all-to-all that time
# is up to 1.5% off theirs; docs/moe.md, "At 16K").  Without a pipeline the
# sampled run must equal the folded one: the error is the pipeline
# transfers', which share the NICs with the replayed exchanges only.
# The sampled run's exchange counts are checked against hand-computed ones.
# Last, a routing trace where the replay does not apply, or made for another
# micro-batch than the plan's, is refused.
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/.." || exit 2
. tests/harness.sh
SIMRUN=$BUILD/simrun
W=tests/data/deepseek_cut_256.json
P=$TMP/clos256.xml
/usr/bin/python3 platforms/gen_platform.py --preset 910b --npus 256 --fabric clos3 \
    --leaf-hosts 32 --leaves-per-pod 8 -o "$P" >/dev/null 2>"$TMP/err" || { ko "gen_platform"; exit 1; }
"$BUILD/moetrace" -o "$TMP/skew.trace" --workload "$W" --top2-share 0.2 --drift 0.05 --steps 2 \
    --seed 2026 >/dev/null 2>"$TMP/err" || { ko "moetrace"; exit 1; }

csv_col() { /usr/bin/python3 -c 'import csv, sys; print(list(csv.DictReader(open(sys.argv[1])))[-1][sys.argv[2]])' "$1" "$2"; }

# iter ARGS...: the iteration times of a run's rows, one per --moe-policy,
# as "policy=seconds" words, or "" when it failed
iter() {
    rm -f "$TMP/r.csv"
    "$SIMRUN" --quiet --csv "$TMP/r.csv" "$@" "$P" "$W" >"$TMP/out" 2>"$TMP/err" || return 0
    /usr/bin/python3 -c 'import csv, sys
print(" ".join("%s=%s" % (r["moe_policy"], r["iteration_s"]) for r in csv.DictReader(open(sys.argv[1]))))' \
        "$TMP/r.csv"
}

# within NAME REFERENCE VALUE [TOLERANCE]: every policy's |VALUE − REFERENCE|
# < TOLERANCE (default 0.01) of REFERENCE (both "policy=seconds" words, the
# same policies in order)
within() {
    tol=${4:-0.01}
    if [ -z "$2" ] || [ -z "$3" ]; then
        ko "$1: a run failed"
        return
    fi
    if echo "$2 $3" | awk -v tol="$tol" '{ n = NF / 2; bad = 0
            for (i = 1; i <= n; i++) {
                split($i, a, "="); split($(i + n), b, "=")
                d = (b[2] - a[2]) / a[2]; if (d < 0) d = -d
                printf "    %-13s full %.4f s, reduced %.4f s, %+.3f%%\n", a[1], a[2], b[2], 100 * (b[2] - a[2]) / a[2]
                if (a[1] != b[1] || !(d < tol)) bad = 1
            }
            exit bad }'; then
        ok
    else
        ko "$1: a policy $tol or more (relative) away from the full replay"
    fi
}

full=$(iter)
echo "  balanced, --fold-dp 16:"
within "balanced, --fold-dp 16" "$full" "$(iter --fold-dp 16)"
echo "  balanced, --fold-dp 16 --moe-sample-mb 1:"
within "balanced, --fold-dp 16 --moe-sample-mb 1" "$full" "$(iter --fold-dp 16 --moe-sample-mb 1)"
SKEW="--moe-trace $TMP/skew.trace --moe-trace-step 1 --moe-policy all"
# shellcheck disable=SC2086
full=$(iter $SKEW)
echo "  skewed, every policy, --fold-dp 16:"
# shellcheck disable=SC2086
within "skewed, --fold-dp 16" "$full" "$(iter $SKEW --fold-dp 16)"
echo "  skewed, every policy, --fold-dp 16 --moe-sample-mb 1:"
# shellcheck disable=SC2086
within "skewed, --fold-dp 16 --moe-sample-mb 1" "$full" "$(iter $SKEW --fold-dp 16 --moe-sample-mb 1)" 0.02
# Where the sampling error comes from: the pipeline transfers.  Without a
# pipeline (PP 1, DP 256) every micro-batch's exchanges carry the same bytes
# and nothing else shares their NICs while they run, so the time micro-batch
# 0 measured is every later one's: the sampled run equals the folded one.
PP1="--set pipeline_model_parallel_size=1 --set data_parallel_size=256"
PP1="$PP1 --set decoder_first_pipeline_num_layers=0 --set global_batch_size=2048"
# shellcheck disable=SC2086
folded=$(iter $SKEW $PP1 --fold-dp 16)
echo "  skewed, every policy, PP 1, --fold-dp 16 against --fold-dp 16 --moe-sample-mb 1:"
# shellcheck disable=SC2086
within "skewed, PP 1, sampled against folded" "$folded" "$(iter $SKEW $PP1 --fold-dp 16 --moe-sample-mb 1)" 1e-6

# Exchanges per simulated worker (16 per stage), 6 per MoE layer and
# micro-batch (dispatch and combine in the forward, their gradients in the
# backward, and the full recompute's dispatch and combine): the witness is
# stage 0's group (2 MoE layers, all 8 micro-batches); stage 1 (3 MoE layers)
# replays micro-batch 0 and waits the other 7.
replayed=$((16 * 6 * (2 * 8 + 3 * 1))) sampled=$((16 * 6 * 3 * 7))
"$SIMRUN" --fold-dp 16 --moe-sample-mb 1 "$P" "$W" >"$TMP/out" 2>"$TMP/err" &&
    grep -q "moe: sampled (--moe-sample-mb 1): $replayed all-to-alls (counted per worker) replayed pair by pair .*stage 0's first), $sampled waited" "$TMP/out" &&
    ok || ko "the sampled run replays $replayed exchanges and waits $sampled"

# Bad input: K not a multiple of ep, a sample of no micro-batch.
"$SIMRUN" --fold-dp 8 "$P" "$W" >"$TMP/out" 2>"$TMP/err"
[ $? -eq 1 ] && grep -q "fold-dp.*must be a multiple of 16" "$TMP/err" && ok ||
    ko "--fold-dp 8 with ep 16 is refused, naming the multiple"
"$SIMRUN" --moe-sample-mb 0 "$P" "$W" >"$TMP/out" 2>"$TMP/err"
[ $? -eq 1 ] && grep -q "moe-sample-mb.*at least 1, got '0'" "$TMP/err" && ok ||
    ko "--moe-sample-mb 0 is refused"
"$SIMRUN" --moe-sample-mb 1 platforms/test_8npu.xml workloads/small_gpt.json >"$TMP/out" 2>"$TMP/err"
[ $? -eq 1 ] && grep -q "moe-sample-mb.*does not have" "$TMP/err" && ok ||
    ko "--moe-sample-mb on a run without the MoE replay is refused"

# A routing trace is replayed or refused, never ignored (docs/moe.md, "When it
# applies"), and its tokens are held against the plan simulated: the 21B MoE
# (EP 32 = DP 32) routes 2048 tokens x top-2 = 4096 assignments per NPU at
# micro-batch 1, 8192 at 2 (TensorOpt's choice at global batch 64).
PM=platforms/moe_32npu.xml
WM=workloads/moe_21b_32npu.json
"$BUILD/moetrace" -o "$TMP/t21.trace" --workload "$WM" --steps 1 --top2-share 0.5 --seed 1 \
    >/dev/null 2>"$TMP/err" || ko "moetrace writes a trace of the 21B MoE"
"$BUILD/moetrace" -o "$TMP/mx.trace" --workload workloads/mixtral_8x7b.json --steps 1 \
    --top2-share 0.8 --seed 1 >/dev/null 2>"$TMP/err" || ko "moetrace writes a Mixtral trace"
"$SIMRUN" --dp-overlap --set data_parallel_sharding_strategy=optim_grads --moe-trace "$TMP/t21.trace" \
    --csv "$TMP/none.csv" "$PM" "$WM" >"$TMP/out" 2>"$TMP/err"
[ $? -eq 1 ] && grep -q -- "--moe-trace: .*t21.trace needs the MoE replay.*(--dp-overlap with ZeRO-2/3" \
    "$TMP/err" && [ ! -e "$TMP/none.csv" ] && ok ||
    ko "--moe-trace with --dp-overlap under ZeRO-2 is refused, no row"
# --dp-overlap itself replays the trace (docs/moe.md, "Gradient sync")
"$SIMRUN" --dp-overlap --set global_batch_size=64 --moe-trace "$TMP/t21.trace" "$PM" "$WM" \
    >"$TMP/out" 2>"$TMP/err"
[ $? -eq 0 ] && grep -q "moe\[none\]: all-to-all" "$TMP/out" && ok ||
    ko "--moe-trace with --dp-overlap is replayed"
"$SIMRUN" --moe-trace "$TMP/mx.trace" platforms/16k_npu.xml workloads/mixtral_8x7b.json \
    >"$TMP/out" 2>"$TMP/err"
[ $? -eq 1 ] && grep -q "expert_tensor_parallel_size 1 is not the plan's tensor_parallel 8" "$TMP/err" &&
    ok || ko "--moe-trace on Mixtral (ETP 1, TP 8: closed form) is refused"
"$SIMRUN" --planner csimd --schedule gpipe --set recompute_granularity=full \
    --moe-trace "$TMP/t21.trace" "$PM" "$WM" >"$TMP/out" 2>"$TMP/err"
[ $? -eq 1 ] && grep -q "planner csimd's plan has micro-batches of different sizes" "$TMP/err" &&
    ok || ko "--moe-trace on CSIMD's uneven micro-batches is refused"
rm -f "$TMP/all.csv"
"$SIMRUN" --planner all --set global_batch_size=64 --moe-trace "$TMP/t21.trace" --csv "$TMP/all.csv" \
    "$PM" "$WM" >"$TMP/out" 2>"$TMP/err"
code=$?
rows=$(/usr/bin/python3 -c 'import csv, sys
print(" ".join(r["planner"] for r in csv.DictReader(open(sys.argv[1]))))' "$TMP/all.csv" 2>/dev/null)
[ $code -eq 0 ] && [ "$rows" = "megatron pipedream merak bmpipe" ] &&
    grep -q "planner ft: .*t21.trace: tokens: 4096 assignments per NPU and micro-batch in the trace, but planner ft's plan (micro_batch_size 2, tensor_parallel 1) routes 8192" "$TMP/err" &&
    ok || ko "--planner all: ft's plan (micro-batch 2) refuses the trace of micro-batch 1, the others run (rows: $rows)"
"$SIMRUN" --quiet --planner ft --set global_batch_size=64 --plan-out "$TMP/ft.json" "$PM" "$WM" \
    2>"$TMP/err" && "$SIMRUN" --plan "$TMP/ft.json" --set global_batch_size=64 \
    --moe-trace "$TMP/t21.trace" "$PM" "$WM" >"$TMP/out" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "t21.trace: tokens: 4096 .* routes 8192" "$TMP/err" && ok ||
    ko "--plan of TensorOpt's micro-batch 2 refuses the trace of micro-batch 1"
harness_done moe_fold
