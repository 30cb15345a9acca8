/*
 * test_overlap.c -- the data-parallel gradient sync against closed forms:
 * bucketed and overlapped with the backward pass (--dp-overlap), and the
 * distributed optimizer's reduce-scatter + all-gather; the planners'
 * prediction (predict.h) of each against the same closed form.
 *
 * One stage (p = 1), 4 data-parallel replicas on the flat platform
 * (test_flat_4.xml: every route B = 1e9 B/s, α = 10 µs), one layer with
 * F = 1 ms, B = 200 ms, S = 40 MB of gradients, m = 2 micro-batches.
 * Compute alone takes m(F + B) = 402 ms.  The flow-ring all-reduce of x
 * bytes over N = 4 takes 2(N−1)(α + x/(N·B)) (test_collectives.c).
 *   - Without overlap the all-reduce of S follows the backward:
 *       T = 402 ms + 6(α + S/(4B)) = 402 + 60.06 ms.
 *   - With 10 MB buckets the last backward releases 4 buckets, one every
 *     50 ms; each takes 6(α + 10 MB/(4B)) = 15.06 ms < 50 ms, so none waits
 *     for another and only the last one is exposed: T = 402 + 15.06 ms.
 *   - With the distributed optimizer (parameter bytes 0.5× the gradient
 *     bytes) and 10 MB buckets, the backward's buckets are reduce-scattered
 *     only, (N−1)(α + x/(N·B)) = 7.53 ms each, the last one exposed; the
 *     parameters' all-gather of the previous step's update, 4 buckets of
 *     5 MB, 3.78 ms each, runs from the start, and the first forward runs in
 *     4 equal pieces, each after its bucket: with F = 1 ms every piece waits,
 *     F ends at 4·3.78 + 0.25 ms; with F = 100 ms only the first waits.
 */
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "predict.h"
#include "testutil.h"

/* The case above: gather_ratio 0.5 is the distributed optimizer (10M
 * parameters of 2 bytes against 40 MB of gradients), 0 plain data
 * parallelism; overlap and bucket_bytes as --dp-overlap and
 * --dp-bucket-bytes, for the planners' prediction (the engine takes them
 * from its options). */
static void case_model(double forward_s, double gather_ratio, bool overlap, double bucket_bytes,
                       cm_model *cm, plan *pl)
{
    test_uniform_model(cm, 1);
    cm->layers[0].forward_s = forward_s;
    cm->layers[0].backward_s = 200e-3;
    cm->layers[0].grad_bytes = 40e6;
    cm->layers[0].params = gather_ratio > 0 ? 10e6 : 0;
    cm->weight_bytes_per_param = 2;
    cm->sharding = gather_ratio > 0 ? WL_SHARD_OPTIM : WL_SHARD_NO_SHARD;
    cm->data_parallel = 4;
    cm->zero_overlap = overlap;
    cm->dp_bucket_bytes = bucket_bytes;
    test_uniform_plan(pl, 1, 2, 1, SCHED_1F1B);
    pl->data_parallel = 4;
}

/* The iteration time of the case above (-1 when the run failed); a refusal's
 * message goes to `error` instead of stderr when error is not NULL. */
static double run_forward(bool overlap, double bucket_bytes, int fold, double gather_ratio,
                          double forward_s, char *error, size_t error_size)
{
    cm_model cm;
    plan pl;
    case_model(forward_s, gather_ratio, overlap, bucket_bytes, &cm, &pl);
    engine_options o;
    engine_init_options(&o);
    o.dp_overlap = overlap;
    o.dp_bucket_bytes = bucket_bytes;
    o.fold_dp = fold;
    o.dp_param_gather_ratio = gather_ratio;
    test_sim_result out;
    int rc = error ? test_simulate_plan_quiet("platforms/test_flat_4.xml", &cm, &pl, &o, &out)
                   : test_simulate_plan("platforms/test_flat_4.xml", &cm, &pl, &o, &out);
    if (error)
        snprintf(error, error_size, "%s", rc ? "" : out.error);
    plan_free(&pl);
    cm_free(&cm);
    return rc || out.rc ? -1 : out.iteration_s;
}

/* The planners' prediction of the same case (predict_1f1b_iteration_s()),
 * on a cluster view of the flat platform. */
static double predicted(bool overlap, double bucket_bytes, double gather_ratio, double forward_s)
{
    cm_model cm;
    plan pl;
    case_model(forward_s, gather_ratio, overlap, bucket_bytes, &cm, &pl);
    cl_cluster c = test_two_level_cluster(4, 1, 1e9, 10e-6, 1e9, 10e-6);
    double t = predict_1f1b_iteration_s(&cm, &c, &pl, PREDICT_SENDS_RANK_ORDER);
    plan_free(&pl);
    cm_free(&cm);
    return t;
}

static double run_checked(bool overlap, double bucket_bytes, int fold, double gather_ratio,
                          char *error, size_t error_size)
{
    return run_forward(overlap, bucket_bytes, fold, gather_ratio, 1e-3, error, error_size);
}

static double run_with(bool overlap, double bucket_bytes, int fold, double gather_ratio)
{
    return run_checked(overlap, bucket_bytes, fold, gather_ratio, NULL, 0);
}

static double run(bool overlap, double bucket_bytes, int fold)
{
    return run_with(overlap, bucket_bytes, fold, 0);
}

static double ring_s(double bytes) { return 6 * (10e-6 + bytes / (4 * 1e9)); }

/* Reduce-scatter or all-gather of x bytes over N = 4: (N−1)(α + x/(N·B)). */
static double ring_half_s(double bytes) { return 3 * (10e-6 + bytes / (4 * 1e9)); }

static void test_without_overlap_the_allreduce_follows_the_backward(void)
{
    ASSERT_REL(run(false, 0, 0), 0.402 + ring_s(40e6), 1e-6);
    ASSERT_REL(predicted(false, 0, 0, 1e-3), 0.402 + ring_s(40e6), 1e-12);
}

static void test_overlap_exposes_only_the_last_bucket(void)
{
    ASSERT_REL(run(true, 10e6, 0), 0.402 + ring_s(10e6), 1e-6);
    ASSERT_REL(predicted(true, 10e6, 0, 1e-3), 0.402 + ring_s(10e6), 1e-12);
}

/* One bucket as large as the gradients is ready only when the backward
 * ends: nothing to overlap, the time of the plain all-reduce. */
/* The same stage on test_flat_16_4pn.xml (4 NPUs per server; NICs α = 10 µs,
 * B = 1e9 B/s; scale-up α_u = 2 µs, B_u = 4e9 B/s), its replicas sharing
 * servers: 16 replicas of TP 1 (4 per server) and 8 of TP 2 (2 per server).
 * The all-reduce runs as L channels (test_collectives.c): 2(N−1)/N·S split
 * L ways on the NICs, the rest on the scale-up fabric (faster here), then
 * 2N−3 steps at a channel ring's mean edge latency λ = ((L−1)α_u + α)/L:
 * α + 2(N−1)/N·S/(L·B) + (2N−3)λ; one ring on one NIC per server would take
 * L times the bandwidth term.  Simulated and predicted. */
static double shared_servers_run(int tp, int dp, bool simulate)
{
    cm_model cm;
    plan pl;
    case_model(1e-3, 0, false, 0, &cm, &pl);
    cm.data_parallel = pl.data_parallel = dp;
    cm.tensor_parallel = pl.tensor_parallel = tp;
    double t = -1;
    if (simulate) {
        engine_options o;
        engine_init_options(&o);
        test_sim_result out;
        int rc = test_simulate_plan("platforms/test_flat_16_4pn.xml", &cm, &pl, &o, &out);
        t = rc || out.rc ? -1 : out.iteration_s;
    } else {
        cl_cluster c = test_two_level_cluster(16, 4, 1e9, 10e-6, 4e9, 2e-6);
        t = predict_1f1b_iteration_s(&cm, &c, &pl, PREDICT_SENDS_RANK_ORDER);
    }
    plan_free(&pl);
    cm_free(&cm);
    return t;
}

static void test_replicas_sharing_a_server_reduce_on_every_nic(void)
{
    const double s = 40e6, alpha = 10e-6, alpha_u = 2e-6, b = 1e9;
    double tp1 = 0.402 + alpha + 30.0 / 16 * s / (4 * b) + 29 * (3 * alpha_u + alpha) / 4;
    double tp2 = 0.402 + alpha + 14.0 / 8 * s / (2 * b) + 13 * (alpha_u + alpha) / 2;
    ASSERT_REL(shared_servers_run(1, 16, true), tp1, 1e-6);
    ASSERT_REL(shared_servers_run(1, 16, false), tp1, 1e-12);
    ASSERT_REL(shared_servers_run(2, 8, true), tp2, 1e-6);
    ASSERT_REL(shared_servers_run(2, 8, false), tp2, 1e-12);
}

static void test_one_bucket_hides_nothing(void)
{
    ASSERT_REL(run(true, 40e6, 0), 0.402 + ring_s(40e6), 1e-6);
    ASSERT_REL(predicted(true, 40e6, 0, 1e-3), 0.402 + ring_s(40e6), 1e-12);
}

/* Folding is refused with the overlap: the folded replicas' pipeline
 * traffic, not simulated, would share the NICs with the buckets. */
static void test_folding_is_refused_with_overlap(void)
{
    char error[512];
    CU_ASSERT_EQUAL(run_checked(true, 10e6, 1, 0, error, sizeof error), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(error, "cannot fold with --dp-overlap"));
}

/* The distributed optimizer reduce-scatters the fp32 gradients and
 * all-gathers the bf16 parameters (half the bytes) instead of all-reducing. */
static void test_distributed_optimizer_is_reduce_scatter_then_half_all_gather(void)
{
    ASSERT_REL(run_with(false, 0, 0, 0.5), 0.402 + ring_half_s(40e6) + ring_half_s(20e6), 1e-6);
    ASSERT_REL(predicted(false, 0, 0.5, 1e-3), 0.402 + ring_half_s(40e6) + ring_half_s(20e6),
               1e-12);
}

/* --dp-overlap with the distributed optimizer, F = 1 ms: every piece of the
 * first forward waits for its parameter bucket; the backward's last
 * reduce-scatter bucket is exposed. */
static void test_overlapped_param_gather_before_each_forward_piece(void)
{
    double gather = ring_half_s(5e6), forward_end = 4 * gather + 0.25e-3;
    ASSERT_REL(run_forward(true, 10e6, 0, 0.5, 1e-3, NULL, 0),
               forward_end + 0.401 + ring_half_s(10e6), 1e-6);
    /* The timeline draws the forward as its 1 ms of compute, the waits for
     * the buckets between its pieces as data-parallel time: its spans add
     * up to the busy time, m(F + B) = 402 ms (the first forward's span had
     * held the waits, 4·3.78 ms more). */
    cm_model cm;
    plan pl;
    case_model(1e-3, 0.5, true, 10e6, &cm, &pl);
    engine_options o;
    engine_init_options(&o);
    o.dp_overlap = true;
    o.dp_bucket_bytes = 10e6;
    o.dp_param_gather_ratio = 0.5;
    o.record_spans = true;
    test_sim_result out;
    CU_ASSERT_EQUAL_FATAL(test_simulate_plan("platforms/test_flat_4.xml", &cm, &pl, &o, &out), 0);
    ASSERT_REL(out.stage_busy_s[0], 0.402, 1e-9);
    ASSERT_REL(out.stage_pass_time_s[0], 0.402, 1e-9);
    plan_free(&pl);
    cm_free(&cm);
    ASSERT_REL(predicted(true, 10e6, 0.5, 1e-3), forward_end + 0.401 + ring_half_s(10e6), 1e-12);
}

/* F = 100 ms: pieces of 25 ms outlast a 3.78 ms gather, only the first
 * bucket is exposed. */
static void test_overlapped_param_gather_hides_behind_the_forward(void)
{
    ASSERT_REL(run_forward(true, 10e6, 0, 0.5, 100e-3, NULL, 0),
               ring_half_s(5e6) + 0.2 + 0.4 + ring_half_s(10e6), 1e-6);
    ASSERT_REL(predicted(true, 10e6, 0.5, 100e-3), ring_half_s(5e6) + 0.2 + 0.4 + ring_half_s(10e6),
               1e-12);
}

/* The interleaved schedule: p = 2 stages of v = 3 one-layer chunks, m = 2,
 * DP 2 (the 4 hosts of the flat platform), F = 100 ms, B = 200 ms, one bucket
 * per chunk.  Only stage 0's gather of chunk 0 delays the pipeline (its first
 * forward waits for it; chunk 1's, launched with it, chunk 2's, launched by
 * stage s's forward of virtual micro-batch p − s, two forwards before its
 * first, and stage 1's hide), and only the reduce-scatter of stage
 * 0's chunk 0, the last backward, is exposed after it.  So G = 40 MB of
 * gradients per layer (parameters 20 MB) take longer than G = 1 byte by the
 * bandwidth terms of those two collectives over N = 2:
 * (20 MB + 40 MB)/(2B) = 30 ms. */
static double run_interleaved(double grad_bytes)
{
    cm_model cm;
    plan pl;
    test_uniform_model(&cm, 6);
    for (int l = 0; l < 6; l++) {
        cm.layers[l].forward_s = 100e-3;
        cm.layers[l].backward_s = 200e-3;
        cm.layers[l].grad_bytes = grad_bytes;
    }
    cm.data_parallel = 2;
    test_chunked_plan(&pl, 2, 3, 2, 1, SCHED_INTERLEAVED);
    pl.data_parallel = 2;
    engine_options o;
    engine_init_options(&o);
    o.dp_overlap = true;
    o.dp_bucket_bytes = grad_bytes;
    o.dp_param_gather_ratio = 0.5;
    test_sim_result out;
    int rc = test_simulate_plan("platforms/test_flat_4.xml", &cm, &pl, &o, &out);
    plan_free(&pl);
    cm_free(&cm);
    return rc || out.rc ? -1 : out.iteration_s;
}

static void test_interleaved_gathers_hide_but_the_first(void)
{
    double big = run_interleaved(40e6), tiny = run_interleaved(1.0);
    CU_ASSERT(big > 0 && tiny > 0);
    ASSERT_REL(big - tiny, (20e6 + 40e6) / (2 * 1e9) - 1.5 / (2 * 1e9), 1e-6);
}

void register_overlap_tests(void)
{
    TEST_SUITE(
        "overlap",
        {"without_overlap_the_allreduce_follows_the_backward",
         test_without_overlap_the_allreduce_follows_the_backward},
        {"overlap_exposes_only_the_last_bucket", test_overlap_exposes_only_the_last_bucket},
        {"one_bucket_hides_nothing", test_one_bucket_hides_nothing},
        {"replicas_sharing_a_server_reduce_on_every_nic",
         test_replicas_sharing_a_server_reduce_on_every_nic},
        {"folding_is_refused_with_overlap", test_folding_is_refused_with_overlap},
        {"distributed_optimizer_is_reduce_scatter_then_half_all_gather",
         test_distributed_optimizer_is_reduce_scatter_then_half_all_gather},
        {"overlapped_param_gather_before_each_forward_piece",
         test_overlapped_param_gather_before_each_forward_piece},
        {"overlapped_param_gather_hides_behind_the_forward",
         test_overlapped_param_gather_hides_behind_the_forward},
        {"interleaved_gathers_hide_but_the_first", test_interleaved_gathers_hide_but_the_first});
}
