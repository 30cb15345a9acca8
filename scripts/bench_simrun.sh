#!/bin/sh
# bench_simrun.sh -- wall time and peak memory of simrun runs (a benchmark,
# not a test: it prints figures and the targets beside them).
#   sh scripts/bench_simrun.sh [build/simrun] [repeats]
# Prints one line per case: wall seconds (median of `repeats`, default 5, and
# the min-max spread), peak RSS (MiB), SimGrid activities, and the target.
# The machine is shared: the load average is printed before and after.
set -eu
. "$(dirname "$0")/bench_common.sh"
bench_init bench_simrun.sh REPEATS 5 "$@"

bench() { # name target_s target_mib args...
    name=$1 target_s=$2 target_mib=$3
    shift 3
    timed_runs "$name" "$@" || return 1
    acts=$(echo "$row" | awk -F, '{print $27}')
    iter=$(echo "$row" | awk -F, '{print $14}')
    printf '%-44s wall %6s s [%s-%s] (target %5s s)   peak RSS %7.1f MiB (target %5s MiB)   %9s activities   iteration %s s\n' \
        "$name" "$median" "$lo" "$hi" "$target_s" "$(awk "BEGIN{print $rss/1024}")" "$target_mib" "$acts" "$iter"
}

echo "simrun benchmark on $(nproc) cores, median of $REPEATS [min-max], $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
# Issue targets: the main job under 30 s / 2 GiB (foundation) and 5 s / 512 MiB
# (engine); folded under 1 s; GPT-3 175B on 128 NPUs under 0.5 s.
P16=platforms/16k_npu.xml
bench "16k_npu.xml llama.json (interleaved)" 5 512 $P16 workloads/llama.json
bench "16k_npu.xml llama3_405b_1f1b.json" 5 512 $P16 workloads/llama3_405b_1f1b.json
bench "16k_npu.xml llama3_405b_1f1b.json --fold-dp 1" 1 512 --fold-dp 1 $P16 \
    workloads/llama3_405b_1f1b.json
bench "dgx_a100_128.xml gpt3_175b_128.json" 0.5 512 platforms/dgx_a100_128.xml workloads/gpt3_175b_128.json
for s in gpipe zb-h1 zb-h2 pipedream-2bw; do
    bench "16k_npu.xml llama3_405b_1f1b.json --schedule $s" - - --schedule $s $P16 \
        workloads/llama3_405b_1f1b.json
done
# Asynchronous PipeDream's 15 stashed weight versions do not fit Llama-405B's
# first stage in 64 GB; Llama-2 70B (TP8 PP8 DP256) shows the schedule.
bench "16k_npu.xml llama2_70b.json --schedule pipedream" - - --schedule pipedream \
    --set pipeline_model_parallel_size=8 --set data_parallel_size=256 \
    --set global_batch_size=4096 $P16 workloads/llama2_70b.json
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
