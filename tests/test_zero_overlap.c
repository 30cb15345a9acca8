/*
 * test_zero_overlap.c -- ZeRO-2/3's per-pass collectives overlapped with
 * compute (--dp-overlap with data_parallel_sharding_strategy optim_grads or
 * optim_grads_params; sim/engine/engine_overlap.c) against closed forms, the
 * memory the overlap holds, and the planners' prediction.
 *
 * One stage (p = 1), 1F1B, m micro-batches, 4 data-parallel replicas on the
 * flat platform (test_flat_4.xml: every route α = 10 µs, B = 1e9 B/s), one
 * layer with F, B, R bytes of gradients reduce-scattered after every
 * backward and (ZeRO-3) G bytes of parameters gathered before every forward
 * and backward.  A ring reduce-scatter or all-gather of x bytes over N = 4
 * takes (N−1)(α + x/(N·B)) (test_collectives.c); r and g below.  With S =
 * F + B per micro-batch:
 *   - blocking (no overlap): T = m(S + r) (+ 2g per micro-batch for ZeRO-3),
 *     all of the collectives exposed;
 *   - ZeRO-2 overlapped: the worker hands reduce-scatter k over after B_k
 *     and, before handing over k + 1, waits for k (at most one in flight), so
 *     the handovers are max(S, r) apart and the last one is waited for
 *     before the optimizer step: T = S + (m−1)·max(S, r) + r, exposed DP time
 *     (m−1)·max(0, r − S) + r;
 *   - ZeRO-3 overlapped, S ≫ g, r: the first gather has nothing before it,
 *     every later one is prefetched during the op before it:
 *     T = g + m·S + r.
 * ZeRO-2's all-gather of the updated parameters (2P bytes of bf16, a =
 * 3(α + 2P/(4B))) follows the optimizer step when blocking.  Overlapped it
 * is the distributed optimizer's (Megatron's overlap_param_gather): the
 * previous step's gather at the iteration's start, in b = ⌈4P/bucket⌉
 * buckets (a bucket of --dp-bucket-bytes holds a quarter as many
 * parameters) of g_b = 3(α + 2P/(b·4B)) each, gathered back to back while
 * the first forward runs in b pieces of F/b, piece k after bucket k: the
 * forward ends at max_k ((k+1)·g_b + (b−k)·F/b), so the gather exposes
 *   g_b                  when g_b ≤ F/b (k = 0),
 *   b·g_b − (b−1)·F/b    when not (k = b − 1).
 * With one bucket (the default holds 40M parameters) it exposes a, at the
 * start instead of the end: on one stage the iteration is as long.
 */
#include <string.h>

#include "engine.h"
#include "memory.h"
#include "predict.h"
#include "testutil.h"

#define ALPHA_S 10e-6
#define B_BPS 1e9
#define N_DP 4
#define PARAMS 5e6 /* ZeRO-2's end-of-iteration gather: 10 MB of bf16 */

static double ring_half_s(double bytes) { return (N_DP - 1) * (ALPHA_S + bytes / (N_DP * B_BPS)); }

typedef struct zcase {
    int zero3;
    double forward_s, backward_s, reduce_bytes, gather_bytes;
    int m;
} zcase;

static void zero_model(const zcase *z, bool overlap, cm_model *cm, plan *pl)
{
    test_uniform_model(cm, 1);
    cm->sharding = z->zero3 ? WL_SHARD_OPTIM_GRADS_PARAMS : WL_SHARD_OPTIM_GRADS;
    cm->data_parallel = N_DP;
    cm->zero_overlap = overlap;
    cm->weight_bytes_per_param = 2;
    cm_layer *ly = &cm->layers[0];
    ly->forward_s = z->forward_s;
    ly->backward_s = z->backward_s;
    ly->output_bytes = 0;
    ly->params = PARAMS;
    ly->zero_reduce_bytes = z->reduce_bytes;
    ly->zero_gather_bytes = z->zero3 ? z->gather_bytes : 0;
    /* the closed forms cm_sharding_layer() gives them on this fabric */
    double g = z->zero3 ? ring_half_s(z->gather_bytes) : 0;
    ly->zero_forward_s = g;
    ly->zero_backward_s = g + ring_half_s(z->reduce_bytes);
    test_uniform_plan(pl, 1, z->m, 1, SCHED_1F1B);
    pl->data_parallel = N_DP;
}

static void run_bucketed(const zcase *z, bool overlap, double bucket_bytes, test_sim_result *r)
{
    cm_model cm;
    plan pl;
    zero_model(z, overlap, &cm, &pl);
    engine_options o;
    engine_init_options(&o);
    o.dp_overlap = overlap;
    o.dp_bucket_bytes = bucket_bytes;
    CU_ASSERT_EQUAL(test_simulate_plan("platforms/test_flat_4.xml", &cm, &pl, &o, r), 0);
    CU_ASSERT_EQUAL(r->rc, 0);
    plan_free(&pl);
    cm_free(&cm);
}

static void run_case(const zcase *z, bool overlap, test_sim_result *r)
{
    run_bucketed(z, overlap, 0, r);
}

/* The planners' prediction of the same case, on a cluster view of the flat
 * platform (every pair of NPUs on the scale-out figures), with simrun's
 * --dp-bucket-bytes (0: the default). */
static double predicted_bucketed_s(const zcase *z, bool overlap, double bucket_bytes)
{
    cm_model cm;
    plan pl;
    zero_model(z, overlap, &cm, &pl);
    cm.dp_bucket_bytes = bucket_bytes;
    cl_cluster c;
    memset(&c, 0, sizeof c);
    c.num_npus = N_DP;
    c.npus_per_node = 1;
    c.scaleout_latency_s = ALPHA_S;
    c.scaleout_bandwidth_Bps = B_BPS;
    c.scaleup_latency_s = ALPHA_S;
    c.scaleup_bandwidth_Bps = B_BPS;
    double t = predict_1f1b_iteration_s(&cm, &c, &pl, PREDICT_SENDS_RANK_ORDER);
    plan_free(&pl);
    cm_free(&cm);
    return t;
}

static double predicted_s(const zcase *z, bool overlap)
{
    return predicted_bucketed_s(z, overlap, 0);
}

/* a: the gather of the update, after the step (blocking) or, in one default
 * bucket, before the first forward (overlapped) */
static const double end_gather_s = 3 * (ALPHA_S + 2 * PARAMS / (N_DP * B_BPS));

/* ZeRO-2, compute (300 ms a micro-batch) longer than a reduce-scatter of
 * 40 MB (r = 30.03 ms): only the last one is exposed. */
static void test_zero2_hides_all_but_the_last_reduce_scatter(void)
{
    const zcase z = {0, 100e-3, 200e-3, 40e6, 0, 3};
    double S = 0.3, r = ring_half_s(40e6);
    test_sim_result blocking, overlapped;
    run_case(&z, false, &blocking);
    run_case(&z, true, &overlapped);
    ASSERT_REL(blocking.iteration_s, z.m * (S + r) + end_gather_s, 1e-9);
    ASSERT_REL(blocking.stage_dp_comm_s[0], z.m * r + end_gather_s, 1e-9);
    ASSERT_REL(overlapped.iteration_s, z.m * S + r + end_gather_s, 1e-9);
    ASSERT_REL(overlapped.stage_dp_comm_s[0], r + end_gather_s, 1e-9);
    ASSERT_REL(predicted_s(&z, true), overlapped.iteration_s, 1e-9);
    ASSERT_REL(predicted_s(&z, false), blocking.iteration_s, 1e-9);
}

/* ZeRO-2, compute (3 ms) shorter than r: the reduce-scatters run back to
 * back, the worker waits r − S before every handover after the first. */
static void test_zero2_reduce_scatters_serialise_when_compute_is_short(void)
{
    const zcase z = {0, 1e-3, 2e-3, 40e6, 0, 4};
    double S = 3e-3, r = ring_half_s(40e6);
    test_sim_result overlapped;
    run_case(&z, true, &overlapped);
    ASSERT_REL(overlapped.iteration_s, S + (z.m - 1) * r + r + end_gather_s, 1e-9);
    ASSERT_REL(overlapped.stage_dp_comm_s[0], (z.m - 1) * (r - S) + r + end_gather_s, 1e-9);
    ASSERT_REL(predicted_s(&z, true), overlapped.iteration_s, 1e-9);
}

/* ZeRO-2's gather of the update in b = 4 buckets (--dp-bucket-bytes 4P/4:
 * 2.5 MB of parameters each, g_b = 1.905 ms), forward F = 100 ms: every
 * bucket but the first arrives while the forward's earlier pieces run. */
static void test_zero2_gathers_the_update_during_the_first_forward(void)
{
    const zcase z = {0, 100e-3, 200e-3, 40e6, 0, 3};
    int b = 4;
    double S = 0.3, r = ring_half_s(40e6), g = ring_half_s(2 * PARAMS / b);
    CU_ASSERT(g <= z.forward_s / b);
    test_sim_result overlapped;
    run_bucketed(&z, true, 4 * PARAMS / b, &overlapped);
    ASSERT_REL(overlapped.iteration_s, g + z.m * S + r, 1e-9);
    ASSERT_REL(overlapped.stage_dp_comm_s[0], g + r, 1e-9);
    /* the prediction: the first bucket at the start, no gather in the tail */
    double predicted = predicted_bucketed_s(&z, true, 4 * PARAMS / b);
    ASSERT_REL(predicted, g + z.m * S + r, 1e-9);
    ASSERT_REL(predicted, overlapped.iteration_s, 1e-6);
}

/* The same with a forward of F = 4 ms (F/b = 1 ms < g_b): the pieces wait
 * for their buckets, the forward ends at b·g_b + F/b; then the
 * reduce-scatters (r > S = 12 ms) serialise: T = b·g_b + F/b + B + m·r. */
static void test_zero2_gather_of_the_update_exposes_what_the_pieces_cannot_hide(void)
{
    const zcase z = {0, 4e-3, 8e-3, 40e6, 0, 2};
    int b = 4;
    double S = 12e-3, r = ring_half_s(40e6), g = ring_half_s(2 * PARAMS / b);
    double F = z.forward_s, B = z.backward_s;
    CU_ASSERT(g > F / b && r > S);
    test_sim_result overlapped;
    run_bucketed(&z, true, 4 * PARAMS / b, &overlapped);
    ASSERT_REL(overlapped.iteration_s, b * g + F / b + B + z.m * r, 1e-9);
    ASSERT_REL(overlapped.stage_dp_comm_s[0], b * g - (b - 1) * F / b + (r - S) + r, 1e-9);
    /* the prediction: S + (b·g − (b−1)·F/b) + (m−1)·max(S, r) + r */
    double predicted = predicted_bucketed_s(&z, true, 4 * PARAMS / b);
    ASSERT_REL(predicted, S + (b * g - (b - 1) * F / b) + (z.m - 1) * r + r, 1e-9);
    ASSERT_REL(predicted, overlapped.iteration_s, 1e-6);
}

/* Two stages (p = 2 on test_flat_8.xml, 4 replicas each), one layer each,
 * F = 100 ms, B = 200 ms, reduce-scatters r of 4 MB (3.03 ms, hidden but the
 * last), and ZeRO-2's gather of the update in one bucket per stage: stage
 * 0's of P_0 = 1M parameters (g_0 = 1.53 ms), stage 1's of P_1 = 100M
 * (g_1 = 150.03 ms).  Stage 1's first forward would start at F (the send is
 * empty): it ends g_1 − F later than without the gather, stage 0's g_0
 * later, and the pipeline waits for the later: T = (g_1 − F) + (m + 1)·S + r
 * (1F1B on two equal stages: (m + p − 1)·S). */
static void test_zero2_gather_of_the_update_hides_behind_the_fill(void)
{
    const double F = 100e-3, B = 200e-3, P0 = 1e6, P1 = 100e6, R = 4e6;
    const int m = 3;
    cm_model cm;
    plan pl;
    test_uniform_model(&cm, 2);
    cm.sharding = WL_SHARD_OPTIM_GRADS;
    cm.data_parallel = N_DP;
    cm.zero_overlap = true;
    cm.weight_bytes_per_param = 2;
    cm.dp_bucket_bytes = 4 * P1; /* one bucket per stage */
    for (int l = 0; l < 2; l++) {
        cm_layer *ly = &cm.layers[l];
        ly->forward_s = F;
        ly->backward_s = B;
        ly->output_bytes = 0;
        ly->params = l == 0 ? P0 : P1;
        ly->zero_reduce_bytes = R;
        ly->zero_backward_s = ring_half_s(R);
    }
    test_uniform_plan(&pl, 2, m, 1, SCHED_1F1B);
    pl.data_parallel = N_DP;
    double S = F + B, r = ring_half_s(R), g0 = ring_half_s(2 * P0), g1 = ring_half_s(2 * P1);
    CU_ASSERT(g1 - F > g0 && r < S);
    double expected = (g1 - F) + (m + 1) * S + r;
    engine_options o;
    engine_init_options(&o);
    o.dp_overlap = true;
    o.dp_bucket_bytes = cm.dp_bucket_bytes;
    test_sim_result sim;
    CU_ASSERT_EQUAL(test_simulate_plan("platforms/test_flat_8.xml", &cm, &pl, &o, &sim), 0);
    CU_ASSERT_EQUAL(sim.rc, 0);
    ASSERT_REL(sim.iteration_s, expected, 1e-9);
    cl_cluster c;
    memset(&c, 0, sizeof c);
    c.num_npus = 2 * N_DP;
    c.npus_per_node = 1;
    c.scaleout_latency_s = c.scaleup_latency_s = ALPHA_S;
    c.scaleout_bandwidth_Bps = c.scaleup_bandwidth_Bps = B_BPS;
    double predicted = predict_1f1b_iteration_s(&cm, &c, &pl, PREDICT_SENDS_RANK_ORDER);
    ASSERT_REL(predicted, expected, 1e-9);
    ASSERT_REL(predicted, sim.iteration_s, 1e-6);
    plan_free(&pl);
    cm_free(&cm);
}

/* ZeRO-3, compute long: the first gather is exposed, every later one is
 * prefetched during the op before it, and the last reduce-scatter is
 * exposed; no end-of-iteration sync. */
static void test_zero3_prefetches_every_gather_but_the_first(void)
{
    const zcase z = {1, 100e-3, 200e-3, 40e6, 20e6, 3};
    double S = 0.3, r = ring_half_s(40e6), g = ring_half_s(20e6);
    test_sim_result blocking, overlapped;
    run_case(&z, false, &blocking);
    run_case(&z, true, &overlapped);
    ASSERT_REL(blocking.iteration_s, z.m * (S + 2 * g + r), 1e-9);
    ASSERT_REL(overlapped.iteration_s, g + z.m * S + r, 1e-9);
    ASSERT_REL(overlapped.stage_dp_comm_s[0], g + r, 1e-9);
    ASSERT_REL(predicted_s(&z, true), overlapped.iteration_s, 1e-9);
}

/* What the overlap holds in flight is reserved by the memory model and the
 * tracker alike: one chunk's unsharded gradients (R bytes) for the
 * reduce-scatter in flight, ZeRO-3 one chunk's gathered parameters (G)
 * prefetched. */
static void test_the_overlap_reserves_its_buffers_in_both_models(void)
{
    for (int zero3 = 0; zero3 <= 1; zero3++) {
        const zcase z = {zero3, 100e-3, 200e-3, 40e6, 20e6, 3};
        test_sim_result blocking, overlapped;
        run_case(&z, false, &blocking);
        run_case(&z, true, &overlapped);
        double extra = 40e6 + (zero3 ? 20e6 : 0);
        ASSERT_REL(overlapped.stage_peak_bytes[0] - blocking.stage_peak_bytes[0], extra, 1e-12);
        cm_model cm;
        plan pl;
        zero_model(&z, true, &cm, &pl);
        mem_stage st;
        mem_stage_bytes(&cm, &pl, 0, &st);
        ASSERT_REL(st.total_bytes, overlapped.stage_peak_bytes[0], 1e-12);
        plan_free(&pl);
        cm_free(&cm);
    }
}

void register_zero_overlap_tests(void)
{
    TEST_SUITE("zero_overlap",
               {"ZeRO-2 hides all but the last reduce-scatter",
                test_zero2_hides_all_but_the_last_reduce_scatter},
               {"ZeRO-2 reduce-scatters serialise when compute is short",
                test_zero2_reduce_scatters_serialise_when_compute_is_short},
               {"ZeRO-2 gathers the update during the first forward",
                test_zero2_gathers_the_update_during_the_first_forward},
               {"ZeRO-2's gather of the update exposes what the pieces cannot hide",
                test_zero2_gather_of_the_update_exposes_what_the_pieces_cannot_hide},
               {"ZeRO-2's gather of the update hides behind the pipeline's fill",
                test_zero2_gather_of_the_update_hides_behind_the_fill},
               {"ZeRO-3 prefetches every gather but the first",
                test_zero3_prefetches_every_gather_but_the_first},
               {"the overlap reserves its buffers in both models",
                test_the_overlap_reserves_its_buffers_in_both_models});
}
