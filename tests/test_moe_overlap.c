/*
 * test_moe_overlap.c -- combined 1F1B (model.overlap_moe_expert_parallel_comm,
 * sim/engine/engine_moe_overlap.c) on the 21B MoE of platforms/moe_32npu.xml,
 * balanced routing.
 *
 * What the model predicts, independently of how the engine runs it:
 *  - a merged pair runs each all-to-all beside a compute and takes
 *    max(compute, all-to-all) per phase, so the iteration shortens by
 *    Σ min(compute, all-to-all) = (all-to-all time) − (exposed time): every
 *    exchange still happens (the all-to-all total is unchanged);
 *  - without pipeline stages (PP 1) the op list F0 B0 F1 B1 … F(m−1) B(m−1)
 *    pairs B(k) with F(k+1): only F0 and B(m−1) run alone.  Under balanced
 *    routing every one of the m·L·4 exchanges of a worker takes the same
 *    time, and on this platform every compute beside one is longer (the
 *    experts of one NPU and a layer's attention against a 32-way exchange of
 *    a micro-batch's tokens), so the exposed part is the 2·L·2 exchanges of
 *    the two lone ops: a fraction 1/m of the whole, and the run's exposed
 *    communication loses the rest;
 *  - with stages, interleaved 1F1B pairs every steady-state forward
 *    (Megatron's warm-up plus one): the warm-up forwards and cool-down
 *    backwards run alone (plain 1F1B with stages is refused, as Megatron
 *    does).
 */
#include <stdio.h>
#include <string.h>

#include "moe_policy.h"
#include "moe_testutil.h"
#include "testutil.h"

typedef struct overlap_outcome {
    moe_run_head head;
    double iteration_s, alltoall_s, exposed_s, comm_s;
    bool overlap;
} overlap_outcome;

static void collect(const engine_result *r, void *ctx)
{
    overlap_outcome *out = ctx;
    out->iteration_s = r->iteration_s;
    out->alltoall_s = r->moe_alltoall_s;
    out->exposed_s = r->moe_alltoall_exposed_s;
    out->comm_s = r->exposed_comm_s;
    out->overlap = r->moe_overlap;
}

/* c, run twice: without (serial) and with the overlap key as its last set. */
static void simulate_both(const moe_run_case *c, overlap_outcome *serial, overlap_outcome *merged)
{
    moe_run_case run = *c;
    run.collect = collect;
    run.out_size = sizeof(overlap_outcome);
    moe_test_simulate(&run, serial);
    run.sets[run.num_sets++] = "model.overlap_moe_expert_parallel_comm=true";
    moe_test_simulate(&run, merged);
    CU_ASSERT(!serial->overlap);
    CU_ASSERT(merged->overlap);
}

static void test_without_stages_only_the_first_forward_and_last_backward_are_exposed(void)
{
    /* global batch 128 over DP 32: m = 4 micro-batches per replica */
    moe_run_case c = {.sets = {"training.global_batch_size=128"}, .num_sets = 1};
    overlap_outcome s, o;
    simulate_both(&c, &s, &o);
    CU_ASSERT(s.alltoall_s > 0);
    CU_ASSERT_DOUBLE_EQUAL(s.exposed_s, s.alltoall_s, 1e-9 * s.alltoall_s);
    CU_ASSERT_DOUBLE_EQUAL(o.alltoall_s, s.alltoall_s, 1e-6 * s.alltoall_s);
    CU_ASSERT_DOUBLE_EQUAL(o.exposed_s, s.alltoall_s / 4, 1e-4 * s.alltoall_s);
    CU_ASSERT_DOUBLE_EQUAL(s.iteration_s - o.iteration_s, o.alltoall_s - o.exposed_s,
                           1e-6 * s.iteration_s);
    /* the run's exposed communication (TP 1, one stage: the all-to-alls and
     * the data-parallel sync, which the overlap leaves alone) loses what
     * the overlap hides of the all-to-alls */
    CU_ASSERT(s.comm_s >= s.exposed_s);
    CU_ASSERT_DOUBLE_EQUAL(s.comm_s - o.comm_s, s.exposed_s - o.exposed_s, 1e-6 * s.comm_s);
}

/* Interleaved 1F1B on the 32 NPUs: PP pp × DP 32/pp with EP = DP, v
 * chunks per stage, global batch gbs; run serial (*s) and combined (*o). */
static void simulate_interleaved(int gbs, int pp, int v, overlap_outcome *s, overlap_outcome *o)
{
    static char text[4][64];
    snprintf(text[0], sizeof text[0], "training.global_batch_size=%d", gbs);
    snprintf(text[1], sizeof text[1], "parallel.pipeline_model_parallel_size=%d", pp);
    snprintf(text[2], sizeof text[2], "parallel.data_parallel_size=%d", 32 / pp);
    snprintf(text[3], sizeof text[3], "parallel.expert_model_parallel_size=%d", 32 / pp);
    static char vpp[64];
    snprintf(vpp, sizeof vpp, "parallel.virtual_pipeline_model_parallel_size=%d", v);
    moe_run_case c = {.sets = {text[0], text[1], text[2], text[3], "schedule=interleaved", vpp},
                      .num_sets = 6};
    simulate_both(&c, s, o);
    CU_ASSERT_DOUBLE_EQUAL(o->alltoall_s, s->alltoall_s, 1e-2 * s->alltoall_s);
}

/* Interleaved 1F1B, PP 2 × DP 16 (EP 16: two servers per all-to-all), v = 2,
 * m = 4: 6 layers per chunk, 3 of them MoE, so every chunk-op holds the same
 * exchanges.  Megatron's warm-up with combined 1F1B is 2(p − s − 1) + (v −
 * 1)·p + 1 chunk-forwards, 5 on stage 0 and 3 on stage 1, each with as many
 * lone cool-down backwards; the other m·v − w forwards pair.  Stage 0 then
 * leaves 2·5 of its 2·m·v = 16 chunk-ops exposed: 5/8 of its all-to-all
 * time, stage 1 3/8. */
static void test_interleaved_exposes_the_warm_up_and_cool_down(void)
{
    overlap_outcome s, o;
    simulate_interleaved(64, 2, 2, &s, &o);
    /* the slowest worker's all-to-all (stage 1's) is within 1% of stage 0's */
    CU_ASSERT_DOUBLE_EQUAL(o.exposed_s, 5.0 / 8.0 * o.alltoall_s, 1e-2 * o.alltoall_s);
    CU_ASSERT(o.iteration_s < s.iteration_s);
}

/* PP 4, two chunks of 3 layers per stage: chunks with 2 and 1 MoE layers,
 * so some pairs run their extra MoE layer alone; m = 8.  No deadlock, every
 * exchange still happens. */
static void test_interleaved_unequal_chunks_run_through(void)
{
    overlap_outcome s, o;
    simulate_interleaved(64, 4, 2, &s, &o);
    CU_ASSERT(o.exposed_s < s.exposed_s);
}

/* PP 8, v = 3 (one layer per chunk), m = 8: stages 0 to 3 warm up with
 * 2(p − s − 1) + (v − 1)·p + 1 = 31 − 2s ≥ m·v = 24 forwards, all of them:
 * their last forward sits next to their first backward, and merging those
 * made every stage wait for both neighbours (a deadlock before the rule
 * that a stage without a steady state pairs nothing).  The MoE layers (the
 * even ones) sit on the even stages, 3 each, the same exchanges; stages 0
 * and 2 pair nothing, so the most exposed worker exposes a whole
 * all-to-all time. */
static void test_warm_up_only_stages_pair_nothing(void)
{
    overlap_outcome s, o;
    simulate_interleaved(32, 8, 3, &s, &o);
    CU_ASSERT_DOUBLE_EQUAL(o.exposed_s, o.alltoall_s, 1e-2 * o.alltoall_s);
}

static void expect_refusal(const char *const *sets, int num_sets, int policy, const char *why)
{
    moe_run_case c = {.num_sets = num_sets,
                      .policy = policy,
                      .collect = collect,
                      .out_size = sizeof(overlap_outcome)};
    for (int i = 0; i < num_sets; i++)
        c.sets[i] = sets[i];
    overlap_outcome o;
    moe_test_try(&c, &o);
    CU_ASSERT_NOT_EQUAL(o.head.rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(o.head.error, "overlap_moe_expert_parallel_comm"));
    if (!strstr(o.head.error, why))
        fprintf(stderr, "\n  expected '%s' in: %s\n", why, o.head.error);
    CU_ASSERT_PTR_NOT_NULL(strstr(o.head.error, why));
}

static void test_refused_where_it_is_not_modelled(void)
{
    const char *gpipe[] = {"training.global_batch_size=64",
                           "model.overlap_moe_expert_parallel_comm=true", "schedule=gpipe"};
    expect_refusal(gpipe, 3, 0, "gpipe");
    const char *stages[] = {
        "training.global_batch_size=64", "model.overlap_moe_expert_parallel_comm=true",
        "parallel.pipeline_model_parallel_size=2", "parallel.data_parallel_size=16",
        "parallel.expert_model_parallel_size=16"};
    expect_refusal(stages, 5, 0, "interleaved");
    const char *plain[] = {"training.global_batch_size=64",
                           "model.overlap_moe_expert_parallel_comm=true"};
    expect_refusal(plain, 2, MOE_POLICY_FASTERMOE, "FasterMoE");
}

void register_moe_overlap_tests(void)
{
    TEST_SUITE(
        "moe_overlap",
        {"without stages only the first forward and last backward are exposed",
         test_without_stages_only_the_first_forward_and_last_backward_are_exposed},
        {"interleaved exposes the warm-up and cool-down",
         test_interleaved_exposes_the_warm_up_and_cool_down},
        {"interleaved unequal chunks run through", test_interleaved_unequal_chunks_run_through},
        {"warm-up-only stages pair nothing", test_warm_up_only_stages_pair_nothing},
        {"refused where it is not modelled", test_refused_where_it_is_not_modelled});
}
