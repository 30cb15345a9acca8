#!/bin/sh
# cli_test.sh -- end-to-end tests of the simrun binary.
#   sh tests/cli_test.sh build/simrun
# Each case runs simrun and checks its exit code and what it prints: bad input
# must give ONE line on stderr naming the file (and key), a documented exit
# code, and never a crash.  Ends with "cli: N passed, N failed".
set -u
SIMRUN=${1:-build/simrun}
cd "$(dirname "$0")/.." || exit 2
. tests/harness.sh

# expect_error NAME EXIT_CODE PATTERN ARGS...: simrun must exit with EXIT_CODE
# and print exactly one line to stderr containing PATTERN.
expect_error() {
    name=$1 code=$2 pattern=$3
    shift 3
    "$SIMRUN" "$@" >"$TMP/out" 2>"$TMP/err"
    got=$?
    lines=$(wc -l <"$TMP/err")
    if [ "$got" -ne "$code" ]; then
        ko "$name: exit $got, expected $code"
    elif [ "$got" -ge 128 ]; then
        ko "$name: killed by a signal"
    elif [ "$lines" -lt 1 ] || ! head -1 "$TMP/err" | grep -q -- "$pattern"; then
        ko "$name: stderr does not mention '$pattern'"
    elif [ "$code" -ne 1 ] && [ "$lines" -ne 1 ]; then
        ko "$name: $lines lines on stderr, expected one"
    else
        ok
    fi
}

P8=platforms/test_8npu.xml
W8=workloads/small_gpt.json

# --- success paths ---------------------------------------------------------
if "$SIMRUN" "$P8" "$W8" >"$TMP/out" 2>"$TMP/err" && grep -q "iter (s)" "$TMP/out" &&
    grep -q "megatron" "$TMP/out"; then ok; else ko "small run prints the summary table"; fi

"$SIMRUN" --help >"$TMP/out" 2>&1 && grep -q -- "--csv" "$TMP/out" && grep -q "exit codes" "$TMP/out" &&
    ok || ko "--help documents options and exit codes"

rm -f "$TMP/r.csv"
"$SIMRUN" --quiet --csv "$TMP/r.csv" "$P8" "$W8" 2>"$TMP/err" &&
    "$SIMRUN" --quiet --csv "$TMP/r.csv" --set micro_batch_size=2 "$P8" "$W8" 2>>"$TMP/err"
if [ "$(wc -l <"$TMP/r.csv")" -eq 3 ] && head -1 "$TMP/r.csv" | grep -q '^platform,workload,planner' &&
    [ "$(grep -c '^platform,' "$TMP/r.csv")" -eq 1 ]; then ok; else ko "--csv appends rows under one header"; fi
if tail -1 "$TMP/r.csv" | grep -q 'micro_batch_size=2'; then ok; else ko "--csv records the overrides"; fi

# --plan-out writes a plan that --plan replays to the same iteration time
"$SIMRUN" --quiet --csv "$TMP/p.csv" --plan-out "$TMP/plan.json" "$P8" "$W8" 2>"$TMP/err" &&
    "$SIMRUN" --quiet --csv "$TMP/p.csv" --plan "$TMP/plan.json" "$P8" "$W8" 2>>"$TMP/err"
if [ "$(awk -F, 'NR>1{print $14}' "$TMP/p.csv" | sort -u | wc -l)" -eq 1 ] &&
    [ "$(wc -l <"$TMP/p.csv")" -eq 3 ]; then ok; else ko "--plan replays a --plan-out plan"; fi
expect_error "plan for another model" 2 "num_layers" --plan "$TMP/plan.json" --set num_layers=12 "$P8" "$W8"
expect_error "--schedule against a plan" 1 "is replayed with its own schedule" --plan "$TMP/plan.json" \
    --schedule zb-h1 "$P8" "$W8"
expect_error "--set of a key a plan fixes" 1 "was made with another recompute_granularity" \
    --plan "$TMP/plan.json" --set training.recompute_granularity=full "$P8" "$W8"
expect_error "--set of the split a plan fixes" 1 "another decoder_first_pipeline_num_layers" \
    --plan "$TMP/plan.json" --set parallel.decoder_first_pipeline_num_layers=1 \
    --set parallel.decoder_last_pipeline_num_layers=1 "$P8" "$W8"
expect_error "--set of the parallel sizes a plan fixes" 1 "another pipeline_model_parallel_size" \
    --plan "$TMP/plan.json" --set pipeline_model_parallel_size=2 --set data_parallel_size=4 "$P8" "$W8"
expect_error "--set of TP a plan fixes" 1 "another tensor_model_parallel_size" \
    --plan "$TMP/plan.json" --set tensor_model_parallel_size=2 --set data_parallel_size=1 "$P8" "$W8"
expect_error "--planner against a plan" 1 "--planner: bmpipe: the plan" \
    --plan "$TMP/plan.json" --planner bmpipe "$P8" "$W8"
# the command line a plan was made with replays it (the keys agree with the plan)
"$SIMRUN" --quiet --schedule interleaved --set virtual_pipeline_model_parallel_size=2 \
    --plan-out "$TMP/il.json" "$P8" "$W8" 2>"$TMP/err" &&
    "$SIMRUN" --quiet --schedule interleaved --set virtual_pipeline_model_parallel_size=2 \
        --plan "$TMP/il.json" "$P8" "$W8" 2>>"$TMP/err" &&
    "$SIMRUN" --quiet --set 'schedule="1f1b"' --set training.micro_batch_size=1 --set planner=megatron \
        --set pipeline_model_parallel_size=4 --set data_parallel_size=2 --planner Megatron \
        --plan "$TMP/plan.json" "$P8" "$W8" 2>>"$TMP/err" && ok ||
    ko "a plan replays with the keys it was made with"
expect_error "plan for another batch" 2 "global_batch_size" --plan "$TMP/plan.json" --set global_batch_size=32 \
    "$P8" "$W8"

# options that change what is simulated run and say so
"$SIMRUN" --shifted-recompute --set recompute_granularity=full "$P8" "$W8" >"$TMP/out" 2>"$TMP/err" &&
    grep -q "mixed(2/0/6)+shift" "$TMP/out" && ok ||
    ko "--shifted-recompute marks the plan (its last stage's 2 layers no longer recompute)"
"$SIMRUN" --dp-overlap --dp-algorithm halving-doubling platforms/test_64npu.xml "$W8" \
    --set data_parallel_size=16 >"$TMP/out" 2>"$TMP/err" && grep -q "megatron" "$TMP/out" &&
    ok || ko "--dp-overlap with another algorithm runs"
expect_error "fold on a tapered fabric" 1 "tapered" --fold-dp 2 tests/data/test_64npu_tapered.xml "$W8" \
    --set data_parallel_size=16
# parallel links count once (SimGrid routes one of them per destination):
# "2;8,8;1,4;1,2" is 2:1, and folding on it came out 1.1% fast
expect_error "fold on parallel links" 1 "tapered fat tree (2:1)" --fold-dp 2 \
    tests/data/test_64npu_parallel_links.xml "$W8" --set data_parallel_size=16
for fabric in dragonfly torus rail; do
    expect_error "fold on a $fabric" 1 "cannot fold on platforms/test_${fabric}_64.xml: it is" \
        --fold-dp 2 "platforms/test_${fabric}_64.xml" "$W8" --set data_parallel_size=16
done
# SimGrid's max-min update mode: the full solve, except on a torus or a
# dragonfly above 4,096 NPUs, where the full solve is many times slower and
# selective update is taken, with a note (SimGrid's selective update can miss
# the max-min solution: +3.3% on a butterfly all-reduce of a 64-NPU
# dragonfly, docs/design.md).  On the 64-NPU test torus and dragonfly the
# default run gives exactly the full solve's times, the other modes the same
# within 0.1% on this plan, and a mode given with --cfg is used
for fabric in torus dragonfly; do
    rm -f "$TMP/modes.csv"
    for mode in "" --cfg=network/maxmin-selective-update:yes --cfg=network/optim:Full \
        --cfg=network/optim:Lazy; do
        "$SIMRUN" --quiet --csv "$TMP/modes.csv" $mode "platforms/test_${fabric}_64.xml" "$W8" \
            --set data_parallel_size=16 --dp-overlap 2>>"$TMP/err"
    done
    if [ "$(awk -F, 'NR>1' "$TMP/modes.csv" | wc -l)" -eq 4 ] &&
        [ "$(awk -F, 'NR==2 || NR==4 {print $14, $22}' "$TMP/modes.csv" | sort -u | wc -l)" -eq 1 ] &&
        awk -F, 'NR==2{t=$14} NR>2{d=($14-t)/t; if (d<0) d=-d; if (d>1e-3) bad=1} END{exit bad}' \
            "$TMP/modes.csv" &&
        grep -q 'network/optim:Lazy' "$TMP/modes.csv"; then ok; else
        ko "$fabric: the full solve's times by default, the same within 0.1% in every mode"
    fi
done
# the mode SimGrid's network max-min system (its second) was built with:
# full on the 64-NPU torus; selective on an 8,192-NPU one, unless a mode is
# set, also inside a multi-setting --cfg (SimGrid splits one --cfg at commas
# and spaces).  The 8-NPU workload is refused after the platform is built.
lmm_flag() { # platform [--cfg...]: the flag of the network's max-min system
    plat=$1
    shift
    "$SIMRUN" --quiet --log=ker_lmm.thresh:debug "$@" "$plat" "$W8" 2>&1 >/dev/null |
        grep selective_update_active | sed -n 2p | grep -o '[01]$'
}
if [ "$(lmm_flag platforms/test_torus_64.xml)" = 0 ] && [ "$(lmm_flag tests/data/test_torus_8k.xml)" = 1 ] &&
    [ "$(lmm_flag tests/data/test_torus_8k.xml "--cfg=network/crosstraffic:0,network/maxmin-selective-update:no")" = 0 ]; then
    ok
else
    ko "torus: selective update above 4,096 NPUs only, off when a multi-setting --cfg says so"
fi
"$SIMRUN" tests/data/test_torus_8k.xml "$W8" --set tensor_model_parallel_size=8 --set data_parallel_size=256 \
    --set global_batch_size=256 2>"$TMP/err" >/dev/null &&
    grep -q "simrun: note: tests/data/test_torus_8k.xml: SimGrid's selective max-min update on this torus of 8192 NPUs" \
        "$TMP/err" && ok || ko "selective update on the 8,192-NPU torus, with a note"
# Megatron-Core asserts that --tp-comm-overlap comes with sequence parallelism
expect_error "tp_comm_overlap without SP" 2 "training.tp_comm_overlap: needs training.sequence_parallel" \
    "$P8" "$W8" --set training.tp_comm_overlap=true --set training.sequence_parallel=false
# radicals SimGrid accepts: 128 hosts listed one by one (longer than any
# fixed buffer), and spaces around the ranges
sed "s/radical=\"0-127\"/radical=\"$(seq -s, 0 127)\"/" platforms/dgx_a100_128.xml >"$TMP/long_radical.xml"
sed 's/radical="0-7"/radical=" 0-3 , 4-7 "/' "$P8" >"$TMP/spaced_radical.xml"
"$SIMRUN" --quiet "$TMP/long_radical.xml" workloads/gpt3_175b_128.json 2>"$TMP/err" &&
    "$SIMRUN" --quiet "$TMP/spaced_radical.xml" "$W8" 2>>"$TMP/err" && ok ||
    ko "a FAT_TREE's radical listed host by host, or with spaces, loads"
# cross_rail_pxn=0, the documented default, on a fat tree: not a rail fabric
sed 's|<prop id="npus_per_node" value="8"/>|&<prop id="cross_rail_pxn" value="0"/>|' platforms/test_64npu.xml \
    >"$TMP/pxn0.xml"
"$SIMRUN" --quiet --csv "$TMP/pxn0.csv" --fold-dp 2 "$TMP/pxn0.xml" "$W8" --set data_parallel_size=16 \
    2>"$TMP/err" && grep -q cross_rail_pxn "$TMP/pxn0.xml" && ok ||
    ko "fold on a fat tree that says cross_rail_pxn=0 (not a rail fabric)"
expect_error "fold with overlap" 1 "dp-overlap" --dp-overlap --fold-dp 2 platforms/test_64npu.xml \
    "$W8" --set data_parallel_size=16
expect_error "overlap with async PipeDream" 1 "PipeDream" --dp-overlap --schedule pipedream "$P8" "$W8"
expect_error "buckets too small to simulate" 1 "<command line>: --dp-bucket-bytes: 1-byte buckets" \
    --dp-overlap --dp-bucket-bytes 1 "$P8" "$W8"
# options that would change nothing are refused, not ignored
expect_error "--dp-radix without butterfly" 1 "dp-radix is the radix of the butterfly" --dp-radix 8 "$P8" "$W8"
expect_error "--dp-inter-algorithm without hierarchical" 1 "between-servers part" \
    --dp-inter-algorithm ring "$P8" "$W8"
expect_error "--dp-bucket-bytes without --dp-overlap" 1 "sizes the buckets of --dp-overlap" \
    --dp-bucket-bytes 1e6 "$P8" "$W8"
expect_error "--trace-replicas without --trace" 1 "add --trace FILE" --trace-replicas 2 "$P8" "$W8"
expect_error "--trace-replicas above the plan's DP" 1 "--trace-replicas: 5: the plan has 2 data-parallel replicas" \
    --trace "$TMP/tr5.json" --trace-replicas 5 "$P8" "$W8"
expect_error "infinite bucket" 1 "dp-bucket-bytes" --dp-overlap --dp-bucket-bytes inf "$P8" "$W8"

# --- bad command line ---------------------------------------------------------
expect_error "unknown option" 1 "unknown option" --frobnicate "$P8" "$W8"
expect_error "missing arguments" 1 "expected PLATFORM" "$P8"
expect_error "unknown planner" 1 "unknown planner" --planner nosuch "$P8" "$W8"
expect_error "--set without =" 1 "KEY=VALUE" --set nokey "$P8" "$W8"
expect_error "unknown all-reduce" 1 "expected one of" --dp-algorithm bruck "$P8" "$W8"
expect_error "bad bucket size" 1 "dp-bucket-bytes" --dp-bucket-bytes -3 "$P8" "$W8"
for v in 1000000.5 0x10 18446744073709551616; do
    expect_error "bucket size $v" 1 "expects a whole number of bytes from 1 to 1e15 in decimal" \
        --dp-overlap --dp-bucket-bytes "$v" "$P8" "$W8"
done
expect_error "an empty --moe-trace" 1 "option --moe-trace: expected a value, got an empty one" \
    --moe-trace "" "$P8" "$W8"
expect_error "an empty --plan" 1 "option --plan: expected a value" --plan "" "$P8" "$W8"
# a planner refusing a schedule the command line gave (--schedule, which is
# the override schedule="X", or --set) names the command line, not the
# workload (whose schedule is 1f1b): wl_key_source()
expect_error "--schedule refused by a planner" 2 "<command line>: schedule: planner ft models the 1f1b" \
    --planner ft --schedule gpipe "$P8" "$W8"
expect_error "--set schedule refused by a planner" 2 "<command line>: schedule: planner ft" \
    --planner ft --set 'schedule="gpipe"' "$P8" "$W8"
# ... and a value of the file, with other keys set, names the file
sed -e 's/"schedule": "1f1b"/"schedule": "interleaved"/' \
    -e 's/"data_parallel_size": 2/"data_parallel_size": 2, "virtual_pipeline_model_parallel_size": 2/' \
    "$W8" >"$TMP/interleaved_small.json"
expect_error "the file's schedule refused by a planner" 2 "interleaved_small.json: schedule: planner csimd" \
    --planner csimd --set training.micro_batch_size=1 "$P8" "$TMP/interleaved_small.json"
# SimGrid options whose values crash or corrupt a run (docs/design.md,
# "SimGrid options"), each refused by name before SimGrid sees it: parallel
# contexts segfaulted at 16K NPUs, a 4 KiB stack segfaulted, a bandwidth
# factor of 0 aborted, surf/precision 1 printed a 31 s iteration for 0.04 s,
# and an appender or tracing writes a file of its own
expect_error "--cfg parallel contexts" 1 "contexts/nthreads: expected 1" --cfg=contexts/nthreads:2 "$P8" "$W8"
expect_error "--cfg stack too small" 1 "contexts/stack-size: expected an integer from 64" \
    --cfg=contexts/stack-size:4 "$P8" "$W8"
expect_error "--cfg bandwidth factor 0" 1 "network/bandwidth-factor: expected a number from" \
    --cfg=network/bandwidth-factor:0 "$P8" "$W8"
expect_error "--cfg coarse precision" 1 "surf/precision: expected a number from 1e-15 to 1e-09" \
    --cfg=surf/precision:1 "$P8" "$W8"
expect_error "--cfg second setting checked" 1 "--cfg: maxmin/precision" \
    "--cfg=network/optim:Lazy maxmin/precision:1" "$P8" "$W8"
expect_error "--cfg tracing refused" 1 "tracing: not a SimGrid option npusim accepts" \
    --cfg=tracing:yes "$P8" "$W8"
expect_error "--cfg without a value" 1 '"network/model": expected NAME:VALUE' \
    --cfg=network/model "$P8" "$W8"
rm -f "$TMP/appended.log"
expect_error "--log appender refused" 1 "expected CATEGORY.thres:LEVEL" \
    "--log=root.app:file:$TMP/appended.log" "$P8" "$W8"
[ ! -e "$TMP/appended.log" ] && ok || ko "--log appender refused: it created its file"
# accepted settings run: several in one --cfg, a thread factory with a large stack
"$SIMRUN" --quiet --log=root.thres:critical \
    "--cfg=contexts/factory:thread,contexts/stack-size:256 network/optim:Lazy" "$P8" "$W8" \
    >"$TMP/out" 2>"$TMP/err" && [ ! -s "$TMP/err" ] && ok || ko "accepted SimGrid options run"
expect_error "fold not dividing dp" 1 "divide" --fold-dp 3 platforms/test_64npu.xml "$W8" \
    --set data_parallel_size=16

# --- bad input files ----------------------------------------------------------
expect_error "missing platform file" 2 "platforms/nosuch.xml" platforms/nosuch.xml "$W8"
expect_error "missing workload file" 2 "workloads/nosuch.json" "$P8" workloads/nosuch.json
for f in tests/bad_input/*.json; do
    [ -e "$f" ] || continue
    expect_error "bad workload $f" 2 "$f" "$P8" "$f"
done
for f in tests/bad_input/platform_*.xml; do
    [ -e "$f" ] || continue
    expect_error "bad platform $f" 2 "$f" "$f" "$W8"
done
expect_error "tp*pp*dp != NPUs" 2 "16" platforms/test_16npu.xml "$W8"
expect_error "unknown key override" 2 "nosuch_key" --set nosuch_key=1 "$P8" "$W8"
expect_error "wrong type override" 2 "pipeline_model_parallel_size" --set pipeline_model_parallel_size='"four"' "$P8" "$W8"
expect_error "model does not fit" 3 "does not fit" --set num_layers=400 --set hidden_size=8192 \
    --set num_attention_heads=64 "$P8" "$W8"

# --- runs over the size bound (--allow-large) -------------------------------------
# 2^30 sequences are 2^29 micro-batches per pipeline: refused from the estimate
# before any planner or op list runs, so at once; --allow-large cannot help
# (an op list holds at most 2^30 ops).  2^22 sequences are over the bound of
# 5e7 activities only.
started=$(date +%s)
expect_error "2^30 sequences refused" 2 \
    "workloads/small_gpt.json: training.global_batch_size: 1073741824 sequences give 536870912 micro-batches per pipeline: about .* SimGrid activities and .*, over the limit of 5e+07 activities" \
    --set global_batch_size=1073741824 "$P8" "$W8"
[ $(($(date +%s) - started)) -le 5 ] && ok || ko "2^30 sequences refused within 5 s"
expect_error "2^30 sequences even with --allow-large" 2 "even with --allow-large" --allow-large \
    --set global_batch_size=1073741824 "$P8" "$W8"
expect_error "2^22 sequences over the bound" 2 "(--allow-large runs it anyway)" \
    --set global_batch_size=4194304 "$P8" "$W8"
expect_error "2^30 sequences under --planner all" 2 "training.global_batch_size: 1073741824" \
    --planner all --set global_batch_size=1073741824 "$P8" "$W8"
"$SIMRUN" --allow-large "$P8" "$W8" >"$TMP/out" 2>"$TMP/err" && grep -q "megatron" "$TMP/out" &&
    ok || ko "--allow-large is accepted"
"$SIMRUN" --help 2>&1 | grep -q -- "--allow-large" && ok || ko "--help documents --allow-large"
# a saved plan over the bound names the plan file and its num_micro_batches
"$SIMRUN" --quiet --plan-out "$TMP/base.json" "$P8" "$W8" 2>"$TMP/err" || ko "--plan-out for the plan cases"
sed 's/"num_micro_batches": 8,/"num_micro_batches": 4194304,/' "$TMP/base.json" >"$TMP/big.json"
expect_error "plan over the bound" 2 "$TMP/big.json: num_micro_batches: 4194304 micro-batches per pipeline" \
    --plan "$TMP/big.json" --set global_batch_size=8388608 "$P8" "$W8"

# --- a saved plan's own sizes are the plan file's fault --------------------------------
sed 's/"tensor_parallel": 1,/"tensor_parallel": 3,/' "$TMP/base.json" >"$TMP/tp3.json"
sed 's/"planner": "megatron"/"planner": "nonsense"/' "$TMP/base.json" >"$TMP/nonsense.json"
expect_error "plan by an unknown planner" 2 "$TMP/nonsense.json: planner: \"nonsense\" is not a planner" \
    --plan "$TMP/nonsense.json" "$P8" "$W8"
sed 's/"planner": "megatron"/"planner": "MegaTron"/' "$TMP/base.json" >"$TMP/case.json"
"$SIMRUN" --quiet --csv "$TMP/case.csv" --plan "$TMP/case.json" "$P8" "$W8" 2>"$TMP/err" &&
    [ "$(tail -1 "$TMP/case.csv" | cut -d, -f3)" = megatron ] && ok ||
    ko "a plan's planner name in another case is reported in simrun's"
expect_error "--set planner=unknown names the command line" 2 "<command line>: planner: unknown planner 'foo'" \
    --set planner=foo "$P8" "$W8"
expect_error "plan with tensor_parallel 3" 2 "$TMP/tp3.json: tensor_parallel: 3" --plan "$TMP/tp3.json" "$P8" "$W8"
grep -q "workloads/small_gpt.json: model.num_attention_heads" "$TMP/err" && ok ||
    ko "the plan's tensor_parallel error gives the workload's reason"

# --- the fuzzing findings: each exits 2 (1 for the command line) with one line
# naming the file and the key; none aborts (134) or prints a SimGrid banner ---
B=tests/bad_input
expect_error "platform without hosts" 2 "$B/platform_no_hosts.xml: the platform has 0 hosts" \
    "$B/platform_no_hosts.xml" "$W8"
expect_error "platform cut after its header comment" 2 "$B/platform_truncated.xml: no <platform> element" \
    "$B/platform_truncated.xml" "$W8"
expect_error "platform without version" 2 "$B/platform_no_version.xml:4: version:" \
    "$B/platform_no_version.xml" "$W8"
grep -q "BIG FAT WARNING" "$TMP/err" && ko "no SimGrid banner for a platform without version" || ok
expect_error "scale-up latency 1e308" 2 "$B/platform_scaleup_latency_huge.xml:11: scaleup_latency_s:" \
    "$B/platform_scaleup_latency_huge.xml" "$W8"
expect_error "kernel launch 1e308" 2 "$B/platform_kernel_launch_huge.xml:13: kernel_launch_s:" \
    "$B/platform_kernel_launch_huge.xml" "$W8"
expect_error "link latency inf" 2 "$B/platform_link_latency_inf.xml: lat: link" \
    "$B/platform_link_latency_inf.xml" "$W8"
expect_error "link bandwidth 1e-300" 2 "$B/platform_link_bandwidth_tiny.xml: bw: link" \
    "$B/platform_link_bandwidth_tiny.xml" "$W8"
started=$(date +%s)
expect_error "fat tree of eight million links" 2 "$B/platform_fat_tree_too_large.xml:5: topo_parameters:" \
    "$B/platform_fat_tree_too_large.xml" "$W8"
[ $(($(date +%s) - started)) -le 5 ] && ok || ko "the oversized fat tree is refused before SimGrid builds it"
expect_error "layer output_bytes 1e308" 2 "<command line>: model.layers\[3\].output_bytes: expected a number no larger than 1e+12" \
    --set 'model.layers[3].output_bytes=1e308' "$P8" workloads/vgg16.json
expect_error "layer forward_flops 1e306" 2 "<command line>: model.layers\[0\].forward_flops:" \
    --set 'model.layers[0].forward_flops=1e306' "$P8" workloads/vgg16.json
expect_error "num_layers INT_MAX" 2 "<command line>: model.num_layers: expected an integer no larger than 10000" \
    --set num_layers=2147483647 "$P8" "$W8"
expect_error "num_layers 1e7" 2 "model.num_layers" --set num_layers=10000000 "$P8" "$W8"
expect_error "num_layers beyond 64 bits" 2 "<command line>: num_layers: value is not valid JSON: too big integer" \
    --set num_layers=18446744073709551616 "$P8" "$W8"
expect_error "override with a duplicate key" 2 "<command line>: parallel: value is not valid JSON: duplicate object key" \
    --set 'parallel={"data_parallel_size":2,"data_parallel_size":2}' "$P8" "$W8"
expect_error "global batch 2^31" 2 "training.global_batch_size: expected an integer no larger than 1073741824" \
    --set global_batch_size=2147483648 "$P8" "$W8"
expect_error "directory as workload" 2 "/tmp: cannot read workload: not a regular file" "$P8" /tmp
expect_error "/dev/zero as workload" 2 "/dev/zero: cannot read workload: not a regular file" "$P8" /dev/zero
mkfifo "$TMP/fifo.json"
started=$(date +%s)
expect_error "FIFO as workload" 2 "fifo.json: cannot read workload: not a regular file" "$P8" "$TMP/fifo.json"
[ $(($(date +%s) - started)) -le 5 ] && ok || ko "a FIFO workload does not block"
# the plan (--plan) is read the same way: a FIFO blocked simrun for ever, a directory or
# /dev/zero read as a syntax error
started=$(date +%s)
expect_error "FIFO as plan" 2 "fifo.json: cannot read plan: not a regular file" --plan "$TMP/fifo.json" "$P8" "$W8"
[ $(($(date +%s) - started)) -le 5 ] && ok || ko "a FIFO plan does not block"
expect_error "directory as plan" 2 "/tmp: cannot read plan: not a regular file" --plan /tmp "$P8" "$W8"
expect_error "/dev/zero as plan" 2 "/dev/zero: cannot read plan: not a regular file" --plan /dev/zero "$P8" "$W8"
expect_error "files swapped" 2 "$P8: this looks like a platform XML file, not a workload JSON: the platform comes first" "$W8" "$P8"
expect_error "control characters escaped" 2 'num_lay\\ners: unknown key' --set "$(printf 'num_lay\ners=2')" "$P8" "$W8"
expect_error "control characters in a path escaped" 2 'no\\tfile\\x01.json' "$P8" "$(printf '/tmp/no\tfile\001.json')"
# Megatron's fixed split, context parallelism, sharding
"$SIMRUN" --quiet --set decoder_first_pipeline_num_layers=1 --set decoder_last_pipeline_num_layers=3 \
    "$P8" "$W8" 2>"$TMP/err" && ok || ko "an uneven first and last stage runs"
expect_error "middle stages not divisible" 2 "decoder_first_pipeline_num_layers" \
    --set decoder_first_pipeline_num_layers=3 "$P8" "$W8"
expect_error "first stage not divisible by vpp" 2 "decoder_first_pipeline_num_layers" --schedule interleaved \
    --set virtual_pipeline_model_parallel_size=2 --set decoder_first_pipeline_num_layers=1 \
    --set decoder_last_pipeline_num_layers=3 "$P8" "$W8"
"$SIMRUN" --planner pipedream --set account_for_loss_in_pipeline_split=true --set num_layers=7 \
    "$P8" "$W8" >"$TMP/out" 2>"$TMP/err" &&
    grep -q "note: pipedream chose its own cut points, not Megatron's split (parallel.account_for_loss_in_pipeline_split)" \
        "$TMP/out" && ok || ko "pipedream plans its own split and notes the key"
"$SIMRUN" --quiet --set context_parallel_size=2 --set data_parallel_size=1 --set global_batch_size=8 \
    "$P8" "$W8" 2>"$TMP/err" && ok || ko "context parallelism runs"
expect_error "tp*cp*dp*pp != NPUs" 2 "context_parallel_size" --set context_parallel_size=2 "$P8" "$W8"
"$SIMRUN" --quiet --set data_parallel_sharding_strategy=optim_grads_params "$P8" "$W8" 2>"$TMP/err" &&
    ok || ko "ZeRO-3 runs"
expect_error "fold with ZeRO-3" 1 "optim_grads_params" --fold-dp 1 \
    --set data_parallel_sharding_strategy=optim_grads_params "$P8" "$W8"

# --- the rough edges a newcomer hits ------------------------------------------------
# csv_col FILE NAME: column NAME of FILE's last row (a CSV reader: BMPipe's
# solver_status holds a comma).
csv_col() { /usr/bin/python3 -c 'import csv, sys; print(list(csv.DictReader(open(sys.argv[1])))[-1][sys.argv[2]])' "$1" "$2"; }
# a saved plan edited after it was priced keeps no prediction (the replay
# printed the old 0.040 s beside a simulated 0.072 s), and says why; a
# prediction over 1e9 s is refused
"$SIMRUN" --quiet --plan-out "$TMP/priced.json" "$P8" "$W8" 2>/dev/null
/usr/bin/python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); p["chunk_start"][1:-1]=[1,2,3]
json.dump(p,open(sys.argv[2],"w")); p=json.load(open(sys.argv[1])); p["predicted_iteration_s"]=1e308
json.dump(p,open(sys.argv[3],"w"))' "$TMP/priced.json" "$TMP/edited.json" "$TMP/huge.json"
"$SIMRUN" --csv "$TMP/edited.csv" --plan "$TMP/edited.json" "$P8" "$W8" >"$TMP/out" 2>"$TMP/err" &&
    grep -q "its decisions were edited after it was priced" "$TMP/out" &&
    [ "$(csv_col "$TMP/edited.csv" predicted_iteration_s)" = 0 ] && ok ||
    ko "an edited plan's prediction is dropped and the note says why"
"$SIMRUN" --quiet --csv "$TMP/priced.csv" --plan "$TMP/priced.json" "$P8" "$W8" 2>/dev/null &&
    [ "$(csv_col "$TMP/priced.csv" predicted_iteration_s)" != 0 ] && ok ||
    ko "an unedited plan keeps its prediction"
expect_error "a prediction of 1e308 s" 2 "predicted_iteration_s: expected a number of seconds from 0" \
    --plan "$TMP/huge.json" "$P8" "$W8"

A1K=platforms/dgx_a100_1024.xml
L70=workloads/llama2_70b.json
# honest recompute labels: Merak recomputes 1 of Llama-2 70B's 80 decoder layers
rm -f "$TMP/rc.csv"
"$SIMRUN" --quiet --fold-dp 1 --planner merak --csv "$TMP/rc.csv" "$A1K" "$L70" 2>"$TMP/err" &&
    [ "$(csv_col "$TMP/rc.csv" recompute)" = "mixed(79/0/1)" ] && ok ||
    ko "1 full layer among 79 without recompute is mixed(79/0/1), got $(csv_col "$TMP/rc.csv" recompute)"
"$SIMRUN" --quiet --fold-dp 1 --planner adapipe --csv "$TMP/rc.csv" "$A1K" "$L70" 2>"$TMP/err" &&
    [ "$(csv_col "$TMP/rc.csv" recompute)" = "units(20/80)" ] && ok ||
    ko "AdaPipe's units(k/L) counts the 80 decoder layers, got $(csv_col "$TMP/rc.csv" recompute)"
"$SIMRUN" --fold-dp 1 --planner merak "$A1K" "$L70" >"$TMP/out" 2>"$TMP/err" &&
    grep -q "^merak .* mixed(79/0/1) " "$TMP/out" && ok || ko "the table prints the CSV's label"
"$SIMRUN" --quiet --set recompute_granularity=full --csv "$TMP/rc.csv" "$P8" "$W8" 2>"$TMP/err" &&
    [ "$(csv_col "$TMP/rc.csv" recompute)" = "full" ] && ok ||
    ko "Megatron's full recompute is 'full' (the embedding and head do not count)"

# --planner all --plan-out all.json writes all.NAME.json, as --help says
"$SIMRUN" --quiet --planner all --plan-out "$TMP/all.json" "$P8" "$W8" 2>"$TMP/err" &&
    [ -s "$TMP/all.megatron.json" ] && [ -s "$TMP/all.adapipe.json" ] && [ ! -e "$TMP/all.json" ] &&
    ok || ko "--planner all --plan-out all.json writes all.megatron.json, all.adapipe.json"
"$SIMRUN" --help >"$TMP/help" 2>&1
grep -q "all.adapipe.json" "$TMP/help" && ok || ko "--help names the files --plan-out writes under --planner all"
grep -q "platform's own count" "$TMP/help" && grep -q '"devices" column' "$TMP/help" && ok ||
    ko "--help says which device counts --frontier covers"
grep -q -- "--progress" "$TMP/help" && grep -q -- "--log=" "$TMP/help" && ok ||
    ko "--help lists --progress and --log"
"$SIMRUN" --frontier "$TMP/f.csv" --quiet "$P8" "$W8" 2>"$TMP/err" &&
    [ "$(awk -F, 'NR>1{print $1}' "$TMP/f.csv" | sort -un | tr '\n' ' ')" = "1 2 4 8 " ] && ok ||
    ko "--frontier covers 1, 2, 4 and 8 devices on 8 NPUs"

# names: any case, and an unknown one lists the valid ones
rm -f "$TMP/n.csv"
"$SIMRUN" --quiet --planner BMPipe --schedule 1F1B --dp-algorithm Ring --csv "$TMP/n.csv" "$P8" "$W8" \
    2>"$TMP/err" && [ "$(csv_col "$TMP/n.csv" planner)" = bmpipe ] &&
    [ "$(csv_col "$TMP/n.csv" schedule)" = 1f1b ] && [ "$(csv_col "$TMP/n.csv" dp_algorithm)" = ring ] &&
    ok || ko "--planner BMPipe --schedule 1F1B --dp-algorithm Ring run as bmpipe, 1f1b, ring"
"$SIMRUN" --quiet --placement dp-tp-cp-pp --csv "$TMP/n.csv" "$P8" "$W8" 2>"$TMP/err" &&
    [ "$(csv_col "$TMP/n.csv" placement)" = dp-tp-cp-pp ] && [ "$(csv_col "$TMP/n.csv" moe_trace)" = "" ] &&
    [ "$(csv_col "$TMP/n.csv" moe_trace_step)" = 0 ] && [ "$(csv_col "$TMP/n.csv" moe_sample_mb)" = 0 ] && ok ||
    ko "--placement dp-tp-cp-pp is in the CSV row's placement column"
# a placement that splits TP groups over servers runs, its TP collectives priced on the
# scale-out route (the prediction, which knows nothing else of the placement, grows)
rm -f "$TMP/tpx.csv"
for order in tp-cp-dp-pp dp-tp-cp-pp; do
    "$SIMRUN" --quiet --placement $order --csv "$TMP/tpx.csv" --set tensor_model_parallel_size=2 \
        --set data_parallel_size=8 --set pipeline_model_parallel_size=1 platforms/test_16npu.xml \
        "$W8" 2>"$TMP/err" || break
done
[ "$(wc -l <"$TMP/tpx.csv")" -eq 3 ] &&
    awk -F, 'NR == 2 { a = $24 } NR == 3 { b = $24 } END { exit !(b > a) }' "$TMP/tpx.csv" &&
    ok || ko "a placement that splits TP groups over servers runs, TP priced on the scale-out route"
# the planners' prediction of the data-parallel sync follows the engine's ring
# (docs/design.md, "Channels when replicas share a server"): 4 replicas per
# server run ring-flow's 4 channels, the step ring one ring; a rank order with
# 2 replicas per server 2 channels; and an MoE's expert gradients reduce over
# the expert-data-parallel replicas (EP 4 of TP 1: 2 per server).  Within 3%
# of the simulation each (one ring or 4 channels everywhere were 45-75% off)
rm -f "$TMP/dpr.csv"
for alg in ring ring-flow; do
    "$SIMRUN" --quiet --csv "$TMP/dpr.csv" --dp-algorithm $alg --set tensor_model_parallel_size=1 \
        --set pipeline_model_parallel_size=1 --set data_parallel_size=16 --set global_batch_size=16 \
        platforms/test_flat_16_4pn.xml "$W8" 2>>"$TMP/err"
done
"$SIMRUN" --quiet --csv "$TMP/dpr.csv" --placement tp-pp-dp-cp --set tensor_model_parallel_size=1 \
    --set pipeline_model_parallel_size=2 --set data_parallel_size=8 platforms/test_flat_16_4pn.xml \
    "$W8" 2>>"$TMP/err"
"$SIMRUN" --quiet --csv "$TMP/dpr.csv" --set expert_model_parallel_size=4 platforms/moe_32npu.xml \
    workloads/moe_21b_32npu.json 2>>"$TMP/err"
[ "$(awk -F, 'NR>1' "$TMP/dpr.csv" | wc -l)" -eq 4 ] &&
    awk -F, 'NR>1 { d = ($24 - $14) / $14; if (d < 0) d = -d; if (d > 0.03) bad = 1 } END { exit bad }' \
        "$TMP/dpr.csv" && ok ||
    ko "the prediction of the data-parallel sync follows the engine's ring (channels, step ring, placement, experts)"
# training.overlap_p2p_comm (Megatron's --overlap-p2p-communication): the
# interleaved steady state's sends no longer hold their stage, so the
# iteration is shorter, and the predictions follow (Megatron's within 3%
# either way, falling with the key, as BMPipe's does); other schedules
# keep blocking sends, as Megatron does, and simrun says so
rm -f "$TMP/p2p.csv"
for o in false true; do
    "$SIMRUN" --quiet --csv "$TMP/p2p.csv" --set schedule=interleaved \
        --set virtual_pipeline_model_parallel_size=2 --set training.overlap_p2p_comm=$o "$P8" "$W8" \
        2>>"$TMP/err"
done
for o in false true; do # BMPipe's ILP prices the same key
    "$SIMRUN" --quiet --csv "$TMP/p2p.csv" --planner bmpipe --set schedule=interleaved \
        --set virtual_pipeline_model_parallel_size=2 --set training.overlap_p2p_comm=$o "$P8" "$W8" \
        2>>"$TMP/err"
done
[ "$(awk -F, 'NR>1' "$TMP/p2p.csv" | wc -l)" -eq 4 ] &&
    awk -F, 'NR > 1 { t[NR] = $14; q[NR] = $24 }
        NR == 2 || NR == 3 { d = ($24 - $14) / $14; if (d < 0) d = -d; if (d > 0.03) bad = 1 }
        END { exit bad || !(t[3] < t[2]) || !(q[3] < q[2]) || !(t[5] < t[4]) || !(q[5] < q[4]) }' \
        "$TMP/p2p.csv" && ok ||
    ko "overlap_p2p_comm: interleaved sends overlap compute, simulated and predicted (Megatron, BMPipe)"
"$SIMRUN" --set training.overlap_p2p_comm=true "$P8" "$W8" >/dev/null 2>"$TMP/err" &&
    grep -q "overlap_p2p_comm applies to the interleaved schedule only" "$TMP/err" && ok ||
    ko "overlap_p2p_comm on 1F1B: a note that Megatron applies it to the interleaved schedule only"
expect_error "with experts, a placement that splits TP groups over servers is refused" 1 \
    "--placement: puts the TP group of stage 0, replica 0 across servers" \
    --quiet --placement dp-tp-cp-pp --set tensor_model_parallel_size=2 --set sequence_parallel=true \
    --set data_parallel_size=16 --set expert_model_parallel_size=16 platforms/moe_32npu.xml \
    workloads/moe_21b_32npu.json
"$SIMRUN" --quiet --set planner=AdaPipe --set schedule=GPipe --csv "$TMP/n.csv" "$P8" "$W8" 2>"$TMP/err" &&
    [ "$(csv_col "$TMP/n.csv" planner)" = adapipe ] && [ "$(csv_col "$TMP/n.csv" schedule)" = gpipe ] &&
    ok || ko "the workload's planner and schedule keys in any case"
"$SIMRUN" --quiet --planner ALL "$P8" "$W8" 2>"$TMP/err" && ok || ko "--planner ALL is --planner all"
expect_error "unknown planner lists the planners" 1 "expected one of: megatron, .*mbpp-e, all" \
    --planner nosuch "$P8" "$W8"
expect_error "unknown workload planner lists the planners" 2 "planner: unknown planner 'nosuch', expected one of: megatron" \
    --set planner=nosuch "$P8" "$W8"
expect_error "unknown schedule lists the schedules" 1 "expected one of: gpipe, 1f1b, .*pipedream-2bw" \
    --schedule 1f2b "$P8" "$W8"
expect_error "unknown recompute lists the options" 2 'expected one of "none", "selective", "full"' \
    --set recompute_granularity=some "$P8" "$W8"
expect_error "unknown all-reduce lists the algorithms" 1 "expected one of: ring-flow, ring, hierarchical" \
    --dp-algorithm rings "$P8" "$W8"

# --quiet prints nothing but errors, even the planners --planner all skips
"$SIMRUN" --quiet --planner all "$P8" "$W8" >"$TMP/out" 2>"$TMP/err" && [ ! -s "$TMP/out" ] &&
    [ ! -s "$TMP/err" ] && ok || ko "--quiet --planner all prints nothing (skipped planners included)"
"$SIMRUN" --planner all "$P8" "$W8" >"$TMP/out" 2>"$TMP/err" && grep -q "^simrun: planner csimd: " "$TMP/err" &&
    ! grep -q "…" "$TMP/err" && ok || ko "without --quiet the skipped planners are named, no progress off a terminal"
# progress: planner lines under --progress; the line itself once a simulation runs 2 s
"$SIMRUN" --progress --planner all "$P8" "$W8" >"$TMP/out" 2>"$TMP/err" &&
    grep -q "^simrun: planner megatron…$" "$TMP/err" && grep -q "^simrun: planner bmpipe…$" "$TMP/err" &&
    grep -q "^megatron " "$TMP/out" && ok || ko "--progress names each planner of --planner all on stderr"
"$SIMRUN" --progress --quiet --planner all "$P8" "$W8" >"$TMP/out" 2>"$TMP/err" && [ ! -s "$TMP/err" ] &&
    ok || ko "--quiet wins over --progress"
rm -f "$TMP/pr.csv"
# (per-rank flows: the folded run ends before the line's first 2 s)
"$SIMRUN" --progress --per-rank-flows --csv "$TMP/pr.csv" --run-id with platforms/16k_npu.xml \
    workloads/llama3_405b_1f1b.json >"$TMP/out" 2>"$TMP/err"
# the estimate it counts against is the planner's prediction (the table's pred column)
pred=$(awk '$1 == "megatron" { printf "%.1f", $7 }' "$TMP/out")
if [ -n "$pred" ] &&
    grep -Eq "^simrun: simulating… [0-9]+% \(simulated [0-9.]+ s of ~$pred s\), [0-9.]+ s elapsed\$" "$TMP/err"; then
    ok
else ko "--progress shows the simulated clock of a 16K run against the prediction (~$pred s)"; fi
"$SIMRUN" --quiet --per-rank-flows --csv "$TMP/pr.csv" --run-id without platforms/16k_npu.xml \
    workloads/llama3_405b_1f1b.json 2>"$TMP/err"
[ "$(cut -d, -f1-24,27 "$TMP/pr.csv" | tail -2 | sort -u | wc -l)" -eq 1 ] && ok ||
    ko "the progress actor changes no result"
# the exact TP fold (the default): the same results from 1/8 of the flows
"$SIMRUN" --quiet --csv "$TMP/pr.csv" --run-id folded platforms/16k_npu.xml workloads/llama3_405b_1f1b.json \
    2>"$TMP/err"
[ "$(cut -d, -f1-24 "$TMP/pr.csv" | tail -2 | sort -u | wc -l)" -eq 1 ] &&
    [ "$(/usr/bin/python3 -c 'import csv, sys
print(" ".join(r["tp_fold"] for r in list(csv.DictReader(open(sys.argv[1])))[-2:]))' "$TMP/pr.csv")" = "1 8" ] &&
    [ "$(tail -1 "$TMP/pr.csv" | cut -d, -f27)" -lt "$(tail -2 "$TMP/pr.csv" | head -1 | cut -d, -f27)" ] &&
    ok || ko "the TP fold: the same results as --per-rank-flows, tp_fold 8 against 1, fewer activities"

# the 1,536-NPU Ascend 910 platform of CodeGeeX
"$SIMRUN" platforms/codegeex_1536_910.xml workloads/codegeex_13b.json >"$TMP/out" 2>"$TMP/err" &&
    grep -q "1536 NPUs" "$TMP/out" && grep -q "/  32.0" "$TMP/out" && ok ||
    ko "codegeex_13b runs on codegeex_1536_910.xml (32 GB per NPU)"
"$SIMRUN" --log=root.thresh:critical --quiet "$P8" "$W8" 2>"$TMP/err" && ok || ko "--log= is passed to SimGrid"

# --- --memory: the per-stage memory table, and the CSV's mem_* columns ------------------------
# small_gpt is PP 4 under 1F1B: a caption, a head, 4 stage rows of 14 columns with p - s
# micro-batches in flight; the simulated peak beside the predicted one.
rm -f "$TMP/mem.csv"
"$SIMRUN" --memory --csv "$TMP/mem.csv" "$P8" "$W8" >"$TMP/out" 2>"$TMP/err" &&
    /usr/bin/python3 - "$TMP/out" "$TMP/mem.csv" <<'EOF2'
import csv, sys
lines = open(sys.argv[1]).read().splitlines()
cap = [i for i, l in enumerate(lines) if l.startswith("memory per NPU by stage")]
assert len(cap) == 1, "one caption"
head = lines[cap[0] + 1].split()
assert head == ["stage", "chunk", "layers", "weights", "grads", "optimizer", "activations",
                "in-flight", "transient", "workspace", "predicted", "capacity", "headroom",
                "simulated"], head
rows = [l.split() for l in lines[cap[0] + 2:] if l.strip()]
assert len(rows) == 4 and all(len(r) == 14 for r in rows), rows
for s, r in enumerate(rows):
    v = dict(zip(head, r))
    assert int(v["stage"]) == s and v["chunk"] == "-"
    assert int(v["in-flight"]) == 4 - s, "1F1B holds p - s"
    parts = sum(float(v[k]) for k in ("weights", "grads", "optimizer", "activations",
                                      "transient", "workspace"))
    assert abs(parts - float(v["predicted"])) <= 0.03, "the parts sum to the total"
    assert abs(float(v["capacity"]) - float(v["predicted"]) - float(v["headroom"])) <= 0.011
    assert v["simulated"] == v["predicted"], "uniform micro-batches: simulated = predicted"
# the CSV's mem_* columns: the fullest stage's row of the table, in bytes
row = list(csv.DictReader(open(sys.argv[2], newline="")))[-1]
assert None not in row and None not in row.values(), "as many fields as the header"
worst = max(range(4), key=lambda s: float(rows[s][10]))
assert int(row["mem_stage"]) == worst, (row["mem_stage"], worst)
v = dict(zip(head, rows[worst]))
for col, name in (("mem_weights_bytes", "weights"), ("mem_grads_bytes", "grads"),
                  ("mem_optimizer_bytes", "optimizer"), ("mem_activations_bytes", "activations"),
                  ("mem_transient_bytes", "transient"), ("mem_workspace_bytes", "workspace"),
                  ("mem_predicted_bytes", "predicted"), ("mem_simulated_bytes", "simulated")):
    assert "%.2f" % (float(row[col]) / 1e9) == v[name], (col, row[col], v[name])
assert int(row["mem_inflight"]) == int(v["in-flight"])
assert float(row["mem_stashed_weights_bytes"]) == 0
assert float(row["mem_simulated_bytes"]) == float(row["peak_bytes"]), "the fullest stage peaks"
EOF2
[ $? -eq 0 ] && ok || ko "--memory: one row per stage, parts summing to the total, CSV as the table"
"$SIMRUN" --memory --schedule interleaved --set virtual_pipeline_model_parallel_size=2 "$P8" "$W8" \
    >"$TMP/out" 2>"$TMP/err" && [ "$(grep -Ec '^ +[0-9]+ +all ' "$TMP/out")" -eq 4 ] &&
    [ "$(grep -Ec '^ +[0-9]+ +[01] ' "$TMP/out")" -eq 8 ] && ok ||
    ko "--memory under interleaved: a row per stage and one per chunk"
"$SIMRUN" --memory --schedule pipedream "$P8" "$W8" >"$TMP/out" 2>"$TMP/err" &&
    grep -q " stashed " "$TMP/out" && ok || ko "--memory under PipeDream shows the stashed weights"
# The gradient and optimizer dtypes: with the distributed optimizer over DP 2, bf16 gradients
# are half of fp32's and NeMo's bf16 optimizer state (2 + 2 + 2 bytes: remainders, moments)
# half of the fp32 12, so per parameter of 2-byte weights: gradients = weights, optimizer =
# weights x 6 / 2 / 2.  The caption names the bytes.
rm -f "$TMP/p32.csv" "$TMP/p16.csv"
"$SIMRUN" --quiet --csv "$TMP/p32.csv" --set training.use_distributed_optimizer=true "$P8" "$W8" &&
    "$SIMRUN" --memory --csv "$TMP/p16.csv" --set training.use_distributed_optimizer=true \
        --set training.grad_reduce_in_bf16=true --set training.use_precision_aware_optimizer=true \
        --set training.exp_avg_dtype=bf16 --set training.exp_avg_sq_dtype=bf16 "$P8" "$W8" \
        >"$TMP/out" 2>"$TMP/err" &&
    grep -q "per parameter: weight 2 B, gradient 2 B, optimizer 6 B (master 2 as remainders, moments 2 + 2)" "$TMP/out" &&
    /usr/bin/python3 - "$TMP/p32.csv" "$TMP/p16.csv" <<'EOF2'
import csv, sys
a, b = (list(csv.DictReader(open(f, newline="")))[-1] for f in sys.argv[1:3])
f = lambda r, k: float(r[k])
w = f(b, "mem_weights_bytes")
assert f(a, "mem_weights_bytes") == w
assert abs(f(b, "mem_grads_bytes") - w) <= 1e-9 * w and abs(f(a, "mem_grads_bytes") - 2 * w) <= 1e-9 * w
assert abs(f(b, "mem_optimizer_bytes") - w * 6 / 2 / 2) <= 1e-9 * w
assert abs(f(a, "mem_optimizer_bytes") - w * 12 / 2 / 2) <= 1e-9 * w
assert f(a, "mem_activations_bytes") == f(b, "mem_activations_bytes")
EOF2
[ $? -eq 0 ] && ok || ko "--memory: bf16 gradients and NeMo's bf16 optimizer state, in the caption and the CSV"
expect_error "--memory with --quiet" 1 "--memory prints a table and --quiet prints nothing" \
    --memory --quiet "$P8" "$W8"
expect_error "--stages with --quiet" 1 "--stages prints a table and --quiet prints nothing" \
    --stages --quiet "$P8" "$W8"
expect_error "does not fit gives the breakdown" 3 \
    "stage 0 needs .* GB (weights .* + gradients .* + optimizer .* + activations .* (4 in flight) + recompute .* + workspace .*) but has 64.00 GB" \
    --set num_layers=400 --set hidden_size=8192 --set num_attention_heads=64 "$P8" "$W8"
# --ignore-memory: a plan over the device is simulated as given, with one warning line;
# micro-batch 8 of 8,192 tokens needs 93.84 GB on stage 0 without recompute (64 GB NPUs)
BIG="--set micro_batch_size=8 --set seq_length=8192"
"$SIMRUN" --ignore-memory $BIG --csv "$TMP/ig.csv" --plan-out "$TMP/ig.json" "$P8" "$W8" \
    >"$TMP/out" 2>"$TMP/err" && [ "$(wc -l <"$TMP/err")" -eq 1 ] &&
    grep -q "^simrun: warning: megatron: stage 0 needs 93.84 GB .* but has 64.00 GB: does not fit.*; simulated anyway (--ignore-memory)$" "$TMP/err" &&
    [ "$(csv_col "$TMP/ig.csv" ignore_memory)" = 1 ] && [ "$(csv_col "$TMP/ig.csv" recompute)" = none ] &&
    /usr/bin/python3 -c 'import csv, sys
r = list(csv.DictReader(open(sys.argv[1])))[-1]
peak, cap, frac = float(r["peak_bytes"]), float(r["capacity_bytes"]), float(r["peak_fraction"])
pred, sim = float(r["mem_predicted_bytes"]), float(r["mem_simulated_bytes"])
sys.exit(not (peak > cap and abs(frac - peak / cap) < 1e-5 and abs(sim - pred) <= 1e-9 * pred))' "$TMP/ig.csv" &&
    ok || ko "--ignore-memory simulates the plan that does not fit: one warning, ignore_memory 1, recompute none, the simulated peak over the capacity and equal to the memory model's"
expect_error "its plan replayed without --ignore-memory" 3 "stage 0 needs 93.84 GB" \
    --plan "$TMP/ig.json" $BIG "$P8" "$W8"
"$SIMRUN" --ignore-memory --quiet --plan "$TMP/ig.json" $BIG "$P8" "$W8" >"$TMP/out" 2>"$TMP/err" &&
    [ ! -s "$TMP/err" ] && ok || ko "its plan replayed with --ignore-memory --quiet: simulated, nothing on stderr"
"$SIMRUN" --ignore-memory --planner all $BIG --csv "$TMP/ig-all.csv" "$P8" "$W8" >"$TMP/out" 2>"$TMP/err" &&
    grep -q "^simrun: planner merak: .*does not fit" "$TMP/err" && ! grep -q "warning" "$TMP/err" &&
    [ "$(/usr/bin/python3 -c 'import csv, sys
print(" ".join(r["recompute"] + ":" + r["ignore_memory"] + ":" + str(float(r["peak_fraction"]) <= 1)
               for r in csv.DictReader(open(sys.argv[1])) if r["planner"] == "megatron"))' "$TMP/ig-all.csv")" = "selective:1:True" ] &&
    ok || ko "--ignore-memory --planner all: the baseline still takes the fastest recompute that fits (selective), Merak still does not fit, no warning"
expect_error "--ignore-memory leaves a planner's own choice to the device (Merak)" 3 "does not fit" \
    --ignore-memory --planner merak $BIG "$P8" "$W8"
# The error names the workload; where the workload's recompute was used, also
# its key and the way to simulate the plan anyway; a planner's own choice, neither.
expect_error "does not fit names the workload, the recompute key and --ignore-memory" 3 \
    "^simrun: $W8: training.recompute_granularity: megatron's plan: stage 0 needs 93.84 GB .*does not fit.* (--ignore-memory simulates it anyway)$" \
    $BIG "$P8" "$W8"
expect_error "Merak's does not fit names the workload and no key" 3 \
    "^simrun: $W8: merak: its last stage never recomputes: stage 3 needs" --planner merak $BIG "$P8" "$W8"
! grep -q "ignore-memory simulates" "$TMP/err" && ok || ko "Merak's does not fit offers no --ignore-memory"
"$SIMRUN" --ignore-memory --shifted-recompute $BIG "$P8" "$W8" >"$TMP/out" 2>"$TMP/err" &&
    [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "^simrun: warning: .*stage 0 needs .*simulated anyway" "$TMP/err" &&
    ok || ko "--ignore-memory --shifted-recompute: one warning, for the shifted plan"
rm -f "$TMP/ig0.csv"
"$SIMRUN" --csv "$TMP/ig0.csv" "$P8" "$W8" >"$TMP/out" 2>"$TMP/err" &&
    [ "$(csv_col "$TMP/ig0.csv" ignore_memory)" = 0 ] &&
    "$SIMRUN" --ignore-memory --csv "$TMP/ig0.csv" "$P8" "$W8" >"$TMP/out" 2>"$TMP/err" && [ ! -s "$TMP/err" ] &&
    [ "$(csv_col "$TMP/ig0.csv" ignore_memory)" = 1 ] &&
    ok || ko "a plan that fits: ignore_memory 0 without the option, 1 with it and no warning"
# a CSV of an older simrun (the header up to "error", before the mem_* columns) is refused
# before anything is simulated; simsweep refuses it too (tests/sweep_test.sh)
"$SIMRUN" --csv-header | sed 's/,error,.*/,error/' >"$TMP/old.csv"
cp "$TMP/old.csv" "$TMP/old.before"
expect_error "--csv onto an older simrun's file" 4 \
    "old.csv:1: --csv: written by an older simrun: its 46 columns are the first 46 of this simrun's" \
    --csv "$TMP/old.csv" "$P8" "$W8"
cmp -s "$TMP/old.csv" "$TMP/old.before" && ok || ko "the older file is left as it was"

# --- MoE policies (docs/moe.md, "Policies") ----------------------------------
PM=platforms/moe_32npu.xml
WM=workloads/moe_21b_32npu.json
expect_error "--moe-policy unknown" 1 "unknown policy 'gshard', expected one of: none, switch" \
    --moe-policy gshard "$PM" "$WM"
expect_error "--moe-policy all with --trace" 1 "cannot be combined with --trace" \
    --moe-policy all --trace "$TMP/t.json" "$PM" "$WM"
expect_error "--moe-policy without the MoE replay" 1 "needs the MoE replay" \
    --moe-policy switch "$P8" "$W8"
expect_error "--moe-trace a directory" 2 "/tmp: a directory, expected a trace file" --moe-trace /tmp "$PM" "$WM"
# --ep-alltoall-algorithm reaches the replay: bruck has no per-pair form and is refused there;
# the default, concurrent (NCCL's grouped send/recv, HCCL's FullMesh), is recorded and is shorter
# on the 21B EP 32 exchange than pairwise steps, which members out of step lengthen (docs/moe.md)
expect_error "bruck for the MoE replay" 1 "--ep-alltoall-algorithm: bruck has no form with a volume per pair" \
    --ep-alltoall-algorithm bruck "$PM" "$WM"
rm -f "$TMP/a2a.csv"
if "$SIMRUN" --quiet --csv "$TMP/a2a.csv" --ep-alltoall-algorithm pairwise "$PM" "$WM" 2>"$TMP/err" &&
    "$SIMRUN" --quiet --csv "$TMP/a2a.csv" "$PM" "$WM" 2>>"$TMP/err"; then
    /usr/bin/python3 -c 'import csv,sys
p, c = list(csv.DictReader(open(sys.argv[1])))
assert (p["ep_alltoall_algorithm"], c["ep_alltoall_algorithm"]) == ("pairwise", "concurrent"), (p, c)
assert float(c["moe_alltoall_s"]) < float(p["moe_alltoall_s"]), (c["moe_alltoall_s"], p["moe_alltoall_s"])
assert float(c["iteration_s"]) < float(p["iteration_s"])' "$TMP/a2a.csv" 2>>"$TMP/err" && ok ||
        ko "the replay runs the chosen all-to-all: $(tail -n 2 "$TMP/err")"
else
    ko "pairwise and concurrent replays: $(tail -n 2 "$TMP/err")"
fi
# model.moe_token_trace: the workload's trace, relative to its folder, replayed
# as --moe-trace replays it (which wins when both are given)
mkdir -p "$TMP/mw"
cp "$WM" "$TMP/mw/moe.json"
if "$(dirname "$SIMRUN")/moetrace" -o "$TMP/mw/t.trace" --workload "$WM" --steps 1 --top2-share 0.2 \
    --seed 3 2>"$TMP/err" &&
    "$SIMRUN" --quiet --csv "$TMP/mt.csv" --set 'model.moe_token_trace="t.trace"' "$PM" \
        "$TMP/mw/moe.json" 2>>"$TMP/err" &&
    "$SIMRUN" --quiet --csv "$TMP/mt.csv" --moe-trace "$TMP/mw/t.trace" "$PM" "$TMP/mw/moe.json" \
        2>>"$TMP/err" && "$SIMRUN" --quiet --csv "$TMP/mt.csv" "$PM" "$TMP/mw/moe.json" 2>>"$TMP/err"; then
    /usr/bin/python3 -c 'import csv,sys
r = list(csv.DictReader(open(sys.argv[1])))
assert r[0]["iteration_s"] == r[1]["iteration_s"] != r[2]["iteration_s"], r
assert r[0]["moe_trace"] == r[1]["moe_trace"] == sys.argv[2] and r[0]["moe_trace_sha256"], r
assert r[2]["moe_trace"] == ""' "$TMP/mt.csv" "$TMP/mw/t.trace" 2>>"$TMP/err" && ok ||
        ko "model.moe_token_trace replays the trace as --moe-trace does"
    # a skewed trace: the table says its extra expert activations are not in
    # peak mem; balanced routing says nothing
    "$SIMRUN" --moe-trace "$TMP/mw/t.trace" "$PM" "$TMP/mw/moe.json" >"$TMP/out" 2>>"$TMP/err" &&
        grep -q "moe: peak mem prices each rank's expert activations at balanced rows" "$TMP/out" &&
        "$SIMRUN" "$PM" "$TMP/mw/moe.json" >"$TMP/out" 2>>"$TMP/err" &&
        ! grep -q "peak mem prices" "$TMP/out" && ok ||
        ko "a skewed replay says its extra expert activations are not in peak mem"
else
    ko "model.moe_token_trace: the runs"
fi
expect_error "model.moe_token_trace that is not there" 2 "$TMP/mw/none.trace: cannot open" \
    --set 'model.moe_token_trace="none.trace"' "$PM" "$TMP/mw/moe.json"
# a trace of 2^40 draws is refused at once (it ran for hours), naming the draws
started=$(date +%s)
if "$(dirname "$SIMRUN")/moetrace" -o "$TMP/big.trace" --experts 4 --sources 1 --layers 1 --topk 1 \
    --tokens 1099511627776 --zipf 3 >/dev/null 2>"$TMP/err"; then
    ko "moetrace of 2^40 tokens: exit 0"
elif grep -q "draws, over the limit of 2e+09" "$TMP/err" && [ ! -e "$TMP/big.trace" ] &&
    [ $(($(date +%s) - started)) -le 5 ]; then
    ok
else
    ko "moetrace of 2^40 tokens: $(head -1 "$TMP/err")"
fi
# moetrace -o onto its own --workload file is refused and the workload kept
cp "$WM" "$TMP/mw/self.json"
if "$(dirname "$SIMRUN")/moetrace" -o "$TMP/mw/self.json" --workload "$TMP/mw/self.json" --steps 1 \
    >/dev/null 2>"$TMP/err"; then
    ko "moetrace -o its own --workload: exit 0"
elif grep -q "is also the --workload file" "$TMP/err" && cmp -s "$WM" "$TMP/mw/self.json"; then
    ok
else
    ko "moetrace -o its own --workload: $(head -1 "$TMP/err")"
fi
# --moe-policy all checks every policy before it writes a row: all or nothing
expect_error "--moe-policy all without the MoE replay" 1 "policy 'switch' cannot run here, so no policy was run" \
    --moe-policy all --csv "$TMP/moe_none.csv" "$P8" "$W8"
[ ! -e "$TMP/moe_none.csv" ] && ok || ko "--moe-policy all that cannot run writes no row"
"$SIMRUN" --quiet --moe-policy all --csv "$TMP/moe_ov.csv" \
    --set overlap_moe_expert_parallel_comm=true "$PM" "$WM" >"$TMP/out" 2>"$TMP/err"
[ $? -ne 0 ] && grep -q "policy 'fastermoe' cannot run here" "$TMP/err" &&
    [ ! -e "$TMP/moe_ov.csv" ] && ok ||
    ko "--moe-policy all with one policy that cannot run: no row, the policy named"
rm -f "$TMP/moe.csv"
"$SIMRUN" --moe-policy all --csv "$TMP/moe.csv" --set global_batch_size=32 "$PM" "$WM" \
    >"$TMP/out" 2>"$TMP/err" && [ "$(grep -c 'moe\[' "$TMP/out")" -eq 4 ] &&
    [ "$(awk -F, 'NR==1{for(i=1;i<=NF;i++) if($i=="moe_policy") c=i} NR>1{print $c}' "$TMP/moe.csv" |
        tr '\n' ' ')" = "none switch fastermoe efficientmoe " ] &&
    ok || ko "--moe-policy all: a row per policy, its moe_policy column"
# combined 1F1B (docs/moe.md, "Overlapping the all-to-alls"): the workload's checks
expect_error "overlap on a dense model" 2 "model.overlap_moe_expert_parallel_comm" \
    --set overlap_moe_expert_parallel_comm=true "$P8" "$W8"
expect_error "overlap without expert parallelism" 2 "expert_model_parallel_size > 1" \
    --set overlap_moe_expert_parallel_comm=true --set expert_model_parallel_size=1 "$PM" "$WM"
expect_error "overlap with the allgather dispatcher" 2 "alltoall" \
    --set overlap_moe_expert_parallel_comm=true --set moe_token_dispatcher_type=allgather "$PM" "$WM"
# --moe-sample-mb N is in the row's moe_sample_mb column (issue 9), 0 without: global batch 64 is
# 2 micro-batches (DP 32, micro-batch 1), so N = 1 samples the second one (the table says so)
rm -f "$TMP/sample.csv"
"$SIMRUN" --moe-sample-mb 1 --csv "$TMP/sample.csv" --set global_batch_size=64 "$PM" "$WM" \
    >"$TMP/out" 2>"$TMP/err" && grep -q "moe: sampled (--moe-sample-mb 1)" "$TMP/out" &&
    [ "$(csv_col "$TMP/sample.csv" num_micro_batches)" = 2 ] &&
    [ "$(csv_col "$TMP/sample.csv" moe_sample_mb)" = 1 ] &&
    "$SIMRUN" --quiet --csv "$TMP/sample.csv" --set global_batch_size=64 "$PM" "$WM" 2>>"$TMP/err" &&
    [ "$(csv_col "$TMP/sample.csv" moe_sample_mb)" = 0 ] &&
    ok || ko "--moe-sample-mb 1 writes 1 in the moe_sample_mb column, a run without 0"
# moe_alltoall_exposed_s: all of the all-to-all time without the overlap; with it, at PP 1 and
# m = 2, only F0 and B1 run alone, half the exchanges (docs/moe.md, "Overlapping the all-to-alls")
rm -f "$TMP/exposed.csv"
"$SIMRUN" --quiet --csv "$TMP/exposed.csv" --set global_batch_size=64 "$PM" "$WM" 2>"$TMP/err" &&
    [ "$(csv_col "$TMP/exposed.csv" moe_alltoall_exposed_s)" = "$(csv_col "$TMP/exposed.csv" moe_alltoall_s)" ] &&
    "$SIMRUN" --quiet --csv "$TMP/exposed.csv" --set global_batch_size=64 \
        --set overlap_moe_expert_parallel_comm=true "$PM" "$WM" 2>>"$TMP/err" &&
    /usr/bin/python3 -c 'import csv, sys
r = list(csv.DictReader(open(sys.argv[1])))[-1]
a, e = float(r["moe_alltoall_s"]), float(r["moe_alltoall_exposed_s"])
sys.exit(0 if abs(e - a / 2) < 1e-3 * a and "overlap_moe_expert_parallel_comm=true" in r["overrides"] else 1)' \
        "$TMP/exposed.csv" &&
    ok || ko "moe_alltoall_exposed_s: all of moe_alltoall_s without the overlap, half with it at m = 2"
# Megatron-Core's custom pipeline layout (docs/workload-format.md): with the other split keys refused
expect_error "layout with the uneven-stage keys" 2 "cannot be combined with parallel.decoder_first" \
    --set 'pipeline_model_parallel_layout="Et*2|(tt|)*29,t|L"' --schedule interleaved \
    --set virtual_pipeline_model_parallel_size=2 --set global_batch_size=16384 \
    platforms/16k_npu.xml workloads/deepseek_v3_class.json
# MFU (docs/csv-format.md, column 17) in closed form on a model that lists its layers, whose
# forward FLOPs per sample are the workload's own sum (VGG-16, 30.94 GFLOP as two per MAC): 3 x
# that x global batch / (iteration_s x NPUs x peak).  Such layers are not split by TP, so at TP 2
# the second copy of every layer is not model FLOPs: MFU halves against the same time per sample.
rm -f "$TMP/mfu.csv"
"$SIMRUN" --quiet --csv "$TMP/mfu.csv" "$P8" workloads/vgg16.json 2>"$TMP/err" &&
    "$SIMRUN" --quiet --csv "$TMP/mfu.csv" --set tensor_model_parallel_size=2 --set data_parallel_size=1 \
        "$P8" workloads/vgg16.json 2>>"$TMP/err" &&
    /usr/bin/python3 -c 'import csv, json, re, sys
w = json.load(open(sys.argv[2]))
flops = sum(l["forward_flops"] for l in w["model"]["layers"])
peak = float(re.search(r"speed=\"([0-9.e]+)f\"", open(sys.argv[3]).read()).group(1))
rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows:
    want = 3 * flops * w["training"]["global_batch_size"] / (float(r["iteration_s"]) * int(r["npus"]) * peak)
    if abs(float(r["mfu"]) - want) > 1e-4 * want:
        sys.exit("tp %s: mfu %s, expected %.6g" % (r["tp"], r["mfu"], want))
sys.exit(0 if [r["tp"] for r in rows] == ["1", "2"] else "rows")' "$TMP/mfu.csv" workloads/vgg16.json "$P8" \
        2>>"$TMP/err" && ok || ko "mfu = 3 x forward FLOPs x batch / (time x NPUs x peak), TP copies of listed layers not counted"
# A saved plan keeps the fingerprint of the cost model it was priced with (cost_model_sha256):
# replayed on the same inputs it shows its prediction; against another model (here the
# sequence halved) the replay simulates the new one and shows no prediction (0), saying why.
rm -f "$TMP/fp.csv"
"$SIMRUN" --quiet --csv "$TMP/fp.csv" --plan-out "$TMP/fp.json" "$P8" "$W8" 2>"$TMP/err" &&
    grep -q '"cost_model_sha256": "[0-9a-f]\{64\}"' "$TMP/fp.json" &&
    "$SIMRUN" --csv "$TMP/fp.csv" --plan "$TMP/fp.json" "$P8" "$W8" >"$TMP/out" 2>>"$TMP/err" &&
    [ ! -s "$TMP/err" ] &&
    /usr/bin/python3 -c 'import csv, sys
a, b = list(csv.DictReader(open(sys.argv[1])))
sys.exit(0 if float(a["predicted_iteration_s"]) > 0 and a["predicted_iteration_s"] == b["predicted_iteration_s"] else 1)' \
        "$TMP/fp.csv" && ok || ko "a plan replayed on its own inputs keeps its prediction, no note"
"$SIMRUN" --csv "$TMP/fp.csv" --plan "$TMP/fp.json" --set seq_length=512 "$P8" "$W8" >"$TMP/out" 2>"$TMP/err" &&
    grep -q "fp.json: priced for another cost model" "$TMP/err" && [ "$(wc -l <"$TMP/err")" -eq 1 ] &&
    [ "$(csv_col "$TMP/fp.csv" predicted_iteration_s)" = 0 ] && ok ||
    ko "a plan replayed against another model shows no prediction and says why"
sed 's/"cost_model_sha256": "[0-9a-f]*"/"cost_model_sha256": "XYZ"/' "$TMP/fp.json" >"$TMP/fp_bad.json"
expect_error "a malformed cost_model_sha256" 2 "cost_model_sha256: expected 64 lower-case hex digits" \
    --plan "$TMP/fp_bad.json" "$P8" "$W8"
# two spellings of one key that disagree: refused whichever comes first, not left to the
# loader's order (spellings that agree replay a plan above)
expect_error "--schedule and --set schedule" 1 "--schedule 1f1b and --set schedule=gpipe disagree on the workload's \"schedule\"" \
    --set schedule=gpipe --schedule 1f1b "$P8" "$W8"
expect_error "--set training.planner and --planner" 1 "--planner megatron and --set planner=ft disagree on the workload's \"planner\"" \
    --planner megatron --set training.planner=ft "$P8" "$W8"
# --trace-replicas beyond --fold-dp's replicas is refused, not clamped
expect_error "--trace-replicas above --fold-dp" 1 "2: --fold-dp 1 simulates 1 data-parallel replica" \
    --fold-dp 1 --trace-replicas 2 --trace "$TMP/tf.json" "$P8" "$W8"
# Megatron's granularity on a layer-listed model: full checkpoints every listed layer (less
# memory, some recompute time); selective recomputes an attention core these layers do not
# have, so it is none's plan
VGG=workloads/vgg19.json
rm -f "$TMP/vgg.csv"
for r in none selective full; do
    "$SIMRUN" --quiet --planner megatron --set recompute_granularity=$r --csv "$TMP/vgg.csv" \
        "$P8" "$VGG" 2>>"$TMP/err" || ko "vgg19 with recompute $r"
done
/usr/bin/python3 -c 'import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
none, sel, full = rows
assert [r["recompute"] for r in rows] == ["none", "none", "full"], [r["recompute"] for r in rows]
assert sel["iteration_s"] == none["iteration_s"] and sel["peak_bytes"] == none["peak_bytes"]
assert float(full["recompute_s"]) > 0 == float(none["recompute_s"])
assert float(full["peak_bytes"]) < float(none["peak_bytes"])
assert float(full["iteration_s"]) > float(none["iteration_s"])' "$TMP/vgg.csv" && ok ||
    ko "Megatron recomputes a layer-listed model's layers under full, none under selective"
# --planner all without Megatron's row names the row speed-ups are relative to
"$SIMRUN" --planner all --set global_batch_size=8192 "$P8" "$VGG" >"$TMP/out" 2>"$TMP/err"
grep -q "planner megatron: .*does not fit" "$TMP/err" &&
    grep -q "^simrun: note: megatron has no row; speed-up is relative to pipedream's$" "$TMP/err" &&
    grep -q "^pipedream .* 1.00x " "$TMP/out" && ok ||
    ko "without Megatron's row the note names the baseline row"
# a property given twice on one cluster (SimGrid keeps the first) and a malformed radical
sed 's|<prop id="hbm_bytes" value="64e9"/>|&<prop id="hbm_bytes" value="1e9"/>|' "$P8" >"$TMP/dup.xml"
expect_error "a duplicated <prop>" 2 "dup.xml:26: hbm_bytes: given twice on the same <cluster>" \
    "$TMP/dup.xml" "$W8"
for bad in 0-x 1.5 0x10 1e3 -3 "0,,2"; do
    sed "s|radical=\"0-7\"|radical=\"$bad\"|" "$P8" >"$TMP/rad.xml"
    expect_error "radical \"$bad\"" 2 "rad.xml:22: radical: expected host numbers or ranges" \
        "$TMP/rad.xml" "$W8"
done
sed 's|radical="0-7"|radical="0-3,4-7"|' "$P8" >"$TMP/rad.xml"
"$SIMRUN" --quiet "$TMP/rad.xml" "$W8" 2>"$TMP/err" && ok || ko "radical 0-3,4-7 is the same 8 hosts"
# the parallel sizes tp, pp, dp leave out: npus = tp*cp*pp*dp on every row, CP in the table
rm -f "$TMP/par.csv"
"$SIMRUN" --set context_parallel_size=2 --set data_parallel_size=1 --csv "$TMP/par.csv" \
    platforms/test_16npu.xml workloads/small_llama.json >"$TMP/out" 2>"$TMP/err" &&
    "$SIMRUN" --quiet --csv "$TMP/par.csv" platforms/moe_32npu.xml workloads/moe_21b_32npu.json 2>>"$TMP/err" &&
    grep -q "workload: TP 2  CP 2  PP 4  DP 1 " "$TMP/out" && grep -q "^megatron .* 2x2x4x1 32 " "$TMP/out" &&
    /usr/bin/python3 -c 'import csv, sys
cp, moe = csv.DictReader(open(sys.argv[1]))
for r in (cp, moe):
    assert int(r["npus"]) == int(r["tp"]) * int(r["cp"]) * int(r["pp"]) * int(r["dp"]), r
assert (cp["cp"], cp["ep"], cp["etp"]) == ("2", "1", cp["tp"]), cp
assert (moe["cp"], moe["ep"], moe["etp"]) == ("1", "32", "1"), moe  # the file: EP 32, ETP = TP 1' "$TMP/par.csv" &&
    ok || ko "cp, ep, etp columns and CP in the table"
# a number below the smallest double reads as 0 in jansson: refused, in the file and in --set
sed 's/"seq_length": *\([0-9]*\)/"seq_length": \1, "attention_dropout": 1e-400/' "$W8" >"$TMP/under.json"
expect_error "1e-400 in the file" 2 "under.json:[0-9]*: the number 1e-400 is below the smallest double" \
    "$P8" "$TMP/under.json"
expect_error "1e-400 in --set" 2 "hidden_dropout: the number 1e-400 is below the smallest double" \
    --set hidden_dropout=1e-400 --set attention_dropout=0 "$P8" "$W8"
# a plan the engine refuses leaves no --plan-out file (all or nothing)
rm -f "$TMP/pd.json"
expect_error "PipeDream with m < p" 2 "schedule pipedream needs at least one micro-batch per stage" \
    --schedule pipedream --set global_batch_size=4 --plan-out "$TMP/pd.json" "$P8" "$W8"
[ ! -e "$TMP/pd.json" ] && ok || ko "a refused plan leaves no --plan-out file"
# a CSV saved with a byte-order mark is refused by name, not as "another header"
rm -f "$TMP/bom0.csv"
"$SIMRUN" --quiet --csv "$TMP/bom0.csv" "$P8" "$W8" 2>"$TMP/err" || ko "a row for the byte-order mark test"
{ printf '\357\273\277'; cat "$TMP/bom0.csv"; } >"$TMP/bom.csv"
cp "$TMP/bom.csv" "$TMP/bom_before.csv"
expect_error "a CSV with a byte-order mark" 4 "bom.csv:1: --csv: the file starts with a UTF-8 byte-order mark" \
    --csv "$TMP/bom.csv" "$P8" "$W8"
cmp -s "$TMP/bom.csv" "$TMP/bom_before.csv" && ok || ko "the byte-order-mark CSV is left as it was"
# SIGINT (Ctrl-C, or simsweep stopping a sweep) ends simrun by the signal, at once, with no
# row: SimGrid's own handler exited 1 (a "failed" point for simsweep) and could hang in exit
/usr/bin/python3 - "$SIMRUN" "$TMP/int.csv" <<'PYEOF' 2>"$TMP/err" && ok || ko "SIGINT ends simrun by the signal, no row"
import signal, subprocess, sys, time
for delay in (0.3, 1.5):
    p = subprocess.Popen([sys.argv[1], "--quiet", "--csv", sys.argv[2], "platforms/16k_npu.xml",
                          "workloads/llama.json"], stderr=subprocess.DEVNULL)
    time.sleep(delay)
    p.send_signal(signal.SIGINT)
    try:
        rc = p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        sys.exit("simrun still running 10 s after SIGINT (at %.1f s)" % delay)
    if rc != -signal.SIGINT:
        sys.exit("SIGINT at %.1f s: returncode %d, expected death by SIGINT" % (delay, rc))
try:
    open(sys.argv[2]).close()
    sys.exit("a row was written")
except FileNotFoundError:
    pass
PYEOF
harness_done cli
