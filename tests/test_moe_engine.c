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
    double recompute_s;
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
    out->recompute_s = r->num_stages > 0 ? r->stages[0].recompute_s : 0.0;
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

/* Full recompute re-runs each MoE layer's forward, its dispatch and
 * combine included (Megatron's checkpointed layer holds the token
 * dispatcher): six all-to-alls per layer and micro-batch instead of four.
 * Balanced, the concurrent all-to-all takes its closed form (to 6 digits
 * on this model, docs/moe.md), so the replayed recompute takes the
 * schedule's closed-form recompute time.  On the hot trace the recompute's
 * two are as slow as the forward's: the all-to-all time grows by more than
 * a quarter (measured: by 38%, 3.36 to 4.64 s), and the recompute holds
 * them: 1.357 s against the balanced 0.150 s.  Before the recompute was
 * replayed it kept the balanced closed form on any trace: the all-to-all
 * time did not grow, and the recompute took 0.150 s. */
static void test_full_recompute_replays_the_all_to_alls(void)
{
    moe_run_case balanced = {
        .sets = {"training.global_batch_size=64", "training.recompute_granularity=full"},
        .num_sets = 2};
    moe_outcome b = simulate(&balanced);
    CU_ASSERT(b.head.closed_recompute_s > 0);
    CU_ASSERT_DOUBLE_EQUAL(b.recompute_s / b.head.closed_recompute_s, 1.0, 1e-5);
    moe_run_case none = {
        .sets = {"training.global_batch_size=64"}, .num_sets = 1, .hot_trace = true};
    moe_outcome n = simulate(&none);
    moe_run_case full = balanced;
    full.hot_trace = true;
    moe_outcome f = simulate(&full);
    /* forward and backward move the same bytes; the backward waits longer
     * for the hot experts, so the forward's all-to-alls are at least a
     * quarter of the four (measured: 38%) */
    CU_ASSERT(f.alltoall_s - n.alltoall_s > 0.25 * n.alltoall_s);
    CU_ASSERT(f.recompute_s > f.alltoall_s - n.alltoall_s);
    CU_ASSERT(f.recompute_s > 5 * b.head.closed_recompute_s);
}

/* AdaPipe's unit recompute re-runs what it drops: the dispatch with
 * expert_input, FC2 and the combine with combine_input.  Balanced, the
 * replay takes the closed form (as full recompute does); on the hot trace
 * the combine, which waits for the hot experts' FC2, costs more than the
 * dispatch, and both together more than either. */
static void test_unit_recompute_replays_what_it_drops(void)
{
    unsigned dispatch = 1u << CM_MOE_UNIT_EXPERT_INPUT, combine = 1u << CM_MOE_UNIT_COMBINE_INPUT;
    moe_run_case balanced = {
        .sets = {"training.global_batch_size=64"}, .num_sets = 1, .moe_units = dispatch | combine};
    moe_outcome b = simulate(&balanced);
    CU_ASSERT(b.head.closed_recompute_s > 0);
    CU_ASSERT_DOUBLE_EQUAL(b.recompute_s / b.head.closed_recompute_s, 1.0, 1e-5);
    moe_run_case hot = balanced;
    hot.hot_trace = true;
    hot.moe_units = dispatch;
    moe_outcome d = simulate(&hot);
    hot.moe_units = combine;
    moe_outcome c = simulate(&hot);
    hot.moe_units = dispatch | combine;
    moe_outcome dc = simulate(&hot);
    moe_run_case none = {
        .sets = {"training.global_batch_size=64"}, .num_sets = 1, .hot_trace = true};
    moe_outcome n = simulate(&none);
    CU_ASSERT(d.alltoall_s > n.alltoall_s);
    CU_ASSERT(c.alltoall_s - n.alltoall_s > d.alltoall_s - n.alltoall_s);
    CU_ASSERT(dc.alltoall_s > c.alltoall_s);
    CU_ASSERT(dc.recompute_s > c.recompute_s && c.recompute_s > d.recompute_s);
}

typedef struct w_outcome {
    moe_run_head head;
    double w_s[3]; /* the W ops' spans of replicas 0 and 2 (stage 0), summed */
    double b_s;    /* replica 0's B ops' spans, summed */
} w_outcome;

static void collect_w(const engine_result *r, void *ctx)
{
    w_outcome *out = ctx;
    for (int d = 0; d < 3 && r->spans; d += 2)
        for (int i = 0; i < r->num_spans[d]; i++) {
            double span = r->spans[d][i].end_s - r->spans[d][i].start_s;
            if (r->spans[d][i].kind == OP_WEIGHT_GRAD)
                out->w_s[d] += span;
            else if (r->spans[d][i].kind == OP_BACKWARD && d == 0)
                out->b_s += span;
        }
}

/* ZB-H1 on the 21B MoE, its B and W spans recorded. */
static w_outcome simulate_zb_h1(bool hot_trace)
{
    moe_run_case zb = {.sets = {"training.global_batch_size=64", "schedule=zb-h1"},
                       .num_sets = 2,
                       .hot_trace = hot_trace,
                       .record = true,
                       .collect = collect_w,
                       .out_size = sizeof(w_outcome)};
    w_outcome o;
    moe_test_simulate(&zb, &o);
    return o;
}

/* ZB-H1's B ops at balanced routing: replayed (all-to-alls as flows, the
 * experts' input gradient at their rows) they take exactly the schedule's
 * closed-form B time. */
static void test_split_b_replays_its_closed_form(void)
{
    w_outcome o = simulate_zb_h1(false);
    CU_ASSERT(o.head.closed_backward_s > 0);
    CU_ASSERT_DOUBLE_EQUAL(o.b_s / o.head.closed_backward_s, 1.0, 1e-5);
}

/* ZB-H1 splits each backward into B and W; W holds the experts' weight
 * gradient, at this NPU's rows.  On the hot trace NPU 0 holds expert 0,
 * which every source sends its 2048 tokens: 32·2048 = 65,536 rows, 16 times
 * the balanced 32·4096/32 = 4096; NPU 2's expert gets none.  The rest of a
 * W op is the same on every NPU, so over 2 micro-batches NPU 0's W ops
 * last 2·16·Σ (balanced expert weight gradient) longer than NPU 2's. */
static void test_split_w_runs_the_experts_at_their_rows(void)
{
    w_outcome o = simulate_zb_h1(true);
    CU_ASSERT(o.head.expert_weight_grad_s > 0);
    CU_ASSERT(o.w_s[2] > 0);
    CU_ASSERT_DOUBLE_EQUAL(o.w_s[0] - o.w_s[2], 2 * 16 * o.head.expert_weight_grad_s,
                           1e-9 * o.w_s[0]);
}

/* With one stage, ZB-H1 runs the same work as 1F1B on every NPU, its W
 * after the B's combine instead of before it: on the hot trace it is never
 * slower (a B that kept the experts' W as well would add 15 balanced
 * expert weight gradients per MoE layer and micro-batch to NPU 0). */
static void test_split_w_is_not_counted_twice(void)
{
    moe_run_case one = {
        .sets = {"training.global_batch_size=64"}, .num_sets = 1, .hot_trace = true};
    moe_outcome a = simulate(&one);
    moe_run_case zb = {.sets = {"training.global_batch_size=64", "schedule=zb-h1"},
                       .num_sets = 2,
                       .hot_trace = true};
    moe_outcome z = simulate(&zb);
    CU_ASSERT(z.iteration_s <= a.iteration_s * (1 + 1e-9));
}

void register_moe_engine_tests(void)
{
    TEST_SUITE(
        "moe_engine",
        {"hot trace drops and pads as computed by hand",
         test_hot_trace_drops_and_pads_as_computed_by_hand},
        {"dropless hot trace is slower than balanced",
         test_dropless_hot_trace_is_slower_than_balanced},
        {"full recompute replays the all-to-alls", test_full_recompute_replays_the_all_to_alls},
        {"unit recompute replays what it drops", test_unit_recompute_replays_what_it_drops},
        {"split W runs the experts at their rows", test_split_w_runs_the_experts_at_their_rows},
        {"split B replays its closed form", test_split_b_replays_its_closed_form},
        {"split W is not counted twice", test_split_w_is_not_counted_twice});
}
