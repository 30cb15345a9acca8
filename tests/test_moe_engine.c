/*
 * test_moe_engine.c -- the engine's replay of MoE layers on the 21B MoE of
 * platforms/moe_32npu.xml (EP 32 = DP 32, one expert per NPU, 12 MoE
 * layers), two micro-batches per replica (global batch 64).
 *
 * A hand-made trace: every source sends its 2048 tokens to both experts 0
 * and 1 (4096 assignments, the top-2 at 100%).  With capacity factor 1 the
 * capacity is C = ceil(2048·2/32·1) = 128 per expert and source, so each
 * source keeps 2·128 and drops 2·(2048 − 128) = 3840 assignments per layer:
 * 32·3840·12·2 = 2,949,120 dropped in the iteration's forwards.  Padded to
 * capacity every expert computes 32·128 = 4096 rows; experts 0 and 1 are
 * full, the other 30 are all padding: 30·4096·12·2 = 2,949,120 padding
 * rows.  Every assignment is computed or dropped: 32·4096·12·2 = 3,145,728
 * in all.
 */
#include "moe_testutil.h"
#include "testutil.h"

typedef struct moe_outcome {
    moe_run_head head;
    double iteration_s, alltoall_s, assignments, dropped, padding, padding_flops;
} moe_outcome;

static void collect(const engine_result *r, void *ctx)
{
    moe_outcome *out = ctx;
    out->iteration_s = r->iteration_s;
    out->alltoall_s = r->moe_alltoall_s;
    out->assignments = r->moe_assignments;
    out->dropped = r->moe_dropped_tokens;
    out->padding = r->moe_padding_tokens;
    out->padding_flops = r->moe_padding_flops;
}

static moe_outcome simulate(const moe_run_case *c)
{
    moe_run_case run = *c;
    run.collect = collect;
    run.out_size = sizeof(moe_outcome);
    moe_outcome out;
    moe_test_simulate(&run, &out);
    return out;
}

static void test_hot_trace_drops_and_pads_as_computed_by_hand(void)
{
    moe_run_case drop = {
        .sets = {"training.global_batch_size=64", "model.moe_expert_capacity_factor=1"},
        .num_sets = 2,
        .hot_trace = true};
    moe_outcome d = simulate(&drop);
    CU_ASSERT_DOUBLE_EQUAL(d.assignments, 3145728.0, 0.5);
    CU_ASSERT_DOUBLE_EQUAL(d.dropped, 2949120.0, 0.5);
    CU_ASSERT_DOUBLE_EQUAL(d.padding, 0.0, 0.0);
    moe_run_case pad = drop;
    pad.sets[2] = "model.moe_pad_expert_input_to_capacity=true";
    pad.num_sets = 3;
    moe_outcome p = simulate(&pad);
    CU_ASSERT_DOUBLE_EQUAL(p.assignments, 3145728.0, 0.5);
    CU_ASSERT_DOUBLE_EQUAL(p.dropped, 2949120.0, 0.5);
    CU_ASSERT_DOUBLE_EQUAL(p.padding, 2949120.0, 0.5);
    /* forward + backward: 3 · 2 · (2 matrices) · h · f per padding row */
    CU_ASSERT_DOUBLE_EQUAL(p.padding_flops / (3.0 * 2 * 2 * 2560 * 10240), 2949120.0, 0.5);
}

/* Dropless, the hand-made trace sends every token to two NPUs: the
 * iteration is far slower than balanced routing, whose every assignment
 * is computed. */
static void test_dropless_hot_trace_is_slower_than_balanced(void)
{
    moe_run_case balanced = {.sets = {"training.global_batch_size=64"}, .num_sets = 1};
    moe_outcome b = simulate(&balanced);
    CU_ASSERT_DOUBLE_EQUAL(b.assignments, 3145728.0, 0.5);
    CU_ASSERT_DOUBLE_EQUAL(b.dropped, 0.0, 0.0);
    moe_run_case hot = balanced;
    hot.hot_trace = true;
    moe_outcome h = simulate(&hot);
    CU_ASSERT_DOUBLE_EQUAL(h.dropped, 0.0, 0.0);
    CU_ASSERT(h.iteration_s > 3 * b.iteration_s);
    CU_ASSERT(h.alltoall_s > b.alltoall_s);
}

void register_moe_engine_tests(void)
{
    TEST_SUITE("moe_engine",
               {"hot trace drops and pads as computed by hand",
                test_hot_trace_drops_and_pads_as_computed_by_hand},
               {"dropless hot trace is slower than balanced",
                test_dropless_hot_trace_is_slower_than_balanced});
}
