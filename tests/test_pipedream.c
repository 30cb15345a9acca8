/*
 * test_pipedream.c -- PipeDream's partitioning DP (SOSP'19 §3.1) against an
 * exhaustive search of the same objective, hand-computed cases of its
 * recursion (replication, weight sync, cut cost), and the planner's plans.
 *
 * The reference search below is written from the paper's definition, not
 * from the DP: it visits every sequence of contiguous stages, each with a
 * replica count, using exactly p workers, and takes the smallest
 *   max over stages of max( T(stage, replicas), 2·C(cut before it) ),
 * T(i→j, n) = max(Σ(f+b), 4(n−1)·Σ|w|/(n·B)) / n, a stage allowed only when
 * it fits memory at its first worker's position with the published in-flight
 * counts (GPipe m, 1F1B and PipeDream min(p−s, m)) and stashed weight
 * versions (PipeDream k−1, 2BW one).  Without replication the plans are
 * checked by memory.c's own mem_check_fits().
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memory.h"
#include "planner.h"
#include "testutil.h"

#define MAX_LAYERS 10

/* A heterogeneous model: an embedding-like first layer (never recomputed)
 * and decoder layers with random times, bytes and gradients; selective
 * recompute keeps half a decoder's bytes for a fifth of its forward, full a
 * tenth for all of it.  Memory between "everything fits easily" and "hardly
 * anything". */
static const test_random_spec pipedream_spec = {
    .stream = 1,
    .lm_head = false,
    .edge_activation_bytes = {20, 60},
    .decoder_activation_bytes = {20, 60},
    .selective_kept = 0.5,
    .selective_cost = 0.2,
    .full_kept = 0.1,
    .full_cost = 1.0,
    .state_bytes = {50, 150},
    .grad_bytes = {10, 100},
    .output_bytes = {1, 20},
    .workspace_bytes = 10,
    .memory_slack = {0.3, 2.0},
};

/* With weights: a tenth of the state bytes in 2-byte parameters. */
static void random_model(cm_model *cm, int L, uint64_t seed)
{
    test_random_model(cm, L, seed, &pipedream_spec);
    cm->weight_bytes_per_param = 2;
    for (int l = 0; l < L; l++)
        cm->layers[l].params = cm->layers[l].state_bytes / 10;
}

static cl_cluster test_cluster(void)
{
    cl_cluster c = test_scaleout_cluster(50, 0.05);
    c.scaleup_bandwidth_Bps = 500;
    return c;
}

/* ---- the reference search ------------------------------------------------- */

typedef struct reference {
    const cm_model *cm;
    const cl_cluster *c;
    schedule_kind sched;
    int p, m, max_replicas;
    recompute_kind r;
    double best;
} reference;

static recompute_kind option_of(const cm_layer *ly, recompute_kind r)
{
    return ly->kind == CM_DECODER ? r : RECOMPUTE_NONE;
}

static bool reference_fits(const reference *ref, int first, int last, int position)
{
    int in_flight = ref->sched == SCHED_GPIPE    ? ref->m
                    : ref->p - position < ref->m ? ref->p - position
                                                 : ref->m;
    double stashes = ref->sched == SCHED_PIPEDREAM       ? in_flight - 1
                     : ref->sched == SCHED_PIPEDREAM_2BW ? 1
                                                         : 0;
    double bytes = ref->cm->workspace_bytes, working_set = 0;
    for (int l = first; l < last; l++) {
        const cm_layer *ly = &ref->cm->layers[l];
        recompute_kind r = option_of(ly, ref->r);
        bytes += ly->state_bytes + stashes * ly->params * ref->cm->weight_bytes_per_param +
                 in_flight * ly->activation_bytes[r];
        working_set =
            fmax(working_set, ly->activation_bytes[RECOMPUTE_NONE] - ly->activation_bytes[r]);
    }
    return bytes + working_set <= ref->cm->hbm_bytes;
}

static double reference_stage_time(const reference *ref, int first, int last, int replicas)
{
    double work = 0, grads = 0;
    for (int l = first; l < last; l++) {
        const cm_layer *ly = &ref->cm->layers[l];
        recompute_kind r = option_of(ly, ref->r);
        work += ly->forward_s + ly->backward_s + ly->weight_grad_s + ly->recompute_s[r];
        grads += ly->grad_bytes;
    }
    double sync = 4.0 * (replicas - 1) * grads / (replicas * ref->c->scaleout_bandwidth_Bps);
    return fmax(work, sync) / replicas;
}

static void reference_visit(reference *ref, int first, int workers, double worst)
{
    int L = ref->cm->num_layers;
    if (first == L) {
        if (workers == ref->p && worst < ref->best)
            ref->best = worst;
        return;
    }
    double cut = 0;
    if (first > 0)
        cut = 2.0 * (ref->c->scaleout_latency_s +
                     ref->cm->layers[first - 1].output_bytes / ref->c->scaleout_bandwidth_Bps);
    for (int last = first + 1; last <= L; last++) {
        for (int n = 1; n <= ref->max_replicas && n <= last - first && workers + n <= ref->p; n++) {
            if (!reference_fits(ref, first, last, workers))
                continue;
            double t = fmax(cut, reference_stage_time(ref, first, last, n));
            reference_visit(ref, last, workers + n, fmax(worst, t));
        }
    }
}

static double reference_best(const cm_model *cm, const cl_cluster *c, schedule_kind sched, int p,
                             int m, recompute_kind r, int max_replicas)
{
    reference ref = {cm, c, sched, p, m, max_replicas, r, INFINITY};
    reference_visit(&ref, 0, 0, 0.0);
    return ref.best;
}

/* ---- the DP against the reference ------------------------------------------ */

static const schedule_kind schedules[] = {SCHED_1F1B, SCHED_GPIPE, SCHED_PIPEDREAM,
                                          SCHED_PIPEDREAM_2BW};

static void check_dp_against_reference(int max_replicas)
{
    cl_cluster c = test_cluster();
    int compared = 0, finite = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        int L = 3 + (int)(seed % 8);       /* 3..10 layers */
        int p = 1 + (int)((seed / 3) % 4); /* 1..4 stages */
        int m = 1 + (int)((seed * 7) % 8); /* 1..8 micro-batches */
        if (p > L)
            p = L;
        schedule_kind sched = schedules[seed % 4];
        cm_model cm;
        random_model(&cm, L, seed);
        for (int r = 0; r < RECOMPUTE_COUNT; r++) {
            pipedream_stage stages[4];
            int count;
            double dp;
            CU_ASSERT_EQUAL_FATAL(planner_pipedream_dp(&cm, &c, sched, p, m, (recompute_kind)r,
                                                       max_replicas, stages, &count, &dp),
                                  0);
            double ref = reference_best(&cm, &c, sched, p, m, (recompute_kind)r, max_replicas);
            if (ref == INFINITY) {
                CU_ASSERT(dp == INFINITY);
            } else {
                ASSERT_REL(dp, ref, 1e-12);
                finite++;
            }
            compared++;
        }
        cm_free(&cm);
    }
    CU_ASSERT_EQUAL(compared, 120);
    /* The memory bound must bind sometimes and not always. */
    CU_ASSERT(finite > 20 && finite < 120);
}

static void test_dp_with_replication_equals_exhaustive_search(void)
{
    check_dp_against_reference(4);
}

static void test_dp_without_replication_equals_exhaustive_search(void)
{
    check_dp_against_reference(1);
}

/* The DP's stages are what it claims: contiguous, covering, their replica
 * counts summing to p, the bottleneck the largest stage or cut time. */
static void test_dp_stages_cover_the_model_and_reach_the_bottleneck(void)
{
    cl_cluster c = test_cluster();
    for (uint64_t seed = 1; seed <= 20; seed++) {
        cm_model cm;
        int L = 10, p = 4, m = 6;
        random_model(&cm, L, seed);
        cm.hbm_bytes = 1e9; /* memory does not bind */
        pipedream_stage st[4];
        int count;
        double dp;
        planner_pipedream_dp(&cm, &c, SCHED_1F1B, p, m, RECOMPUTE_NONE, p, st, &count, &dp);
        reference ref = {&cm, &c, SCHED_1F1B, p, m, p, RECOMPUTE_NONE, INFINITY};
        int workers = 0;
        double worst = 0;
        CU_ASSERT_EQUAL(st[0].first, 0);
        CU_ASSERT_EQUAL(st[count - 1].last, L);
        for (int k = 0; k < count; k++) {
            if (k > 0)
                CU_ASSERT_EQUAL(st[k].first, st[k - 1].last);
            CU_ASSERT(st[k].replicas >= 1 && st[k].replicas <= st[k].last - st[k].first);
            workers += st[k].replicas;
            worst =
                fmax(worst, reference_stage_time(&ref, st[k].first, st[k].last, st[k].replicas));
            if (k > 0)
                worst = fmax(worst,
                             2.0 * (c.scaleout_latency_s + cm.layers[st[k].first - 1].output_bytes /
                                                               c.scaleout_bandwidth_Bps));
        }
        CU_ASSERT_EQUAL(workers, p);
        ASSERT_REL(worst, dp, 1e-12);
        cm_free(&cm);
    }
}

/* ---- hand-computed cases of the recursion ------------------------------------ */

/* Layers with the given work (forward only), grads and outputs, no memory
 * limit, free recompute. */
static void hand_model(cm_model *cm, int L, const double *work, const double *grads,
                       const double *outputs)
{
    memset(cm, 0, sizeof *cm);
    cm->num_layers = L;
    cm->layers = calloc((size_t)L, sizeof *cm->layers);
    cm->micro_batch_size = 1;
    cm->hbm_bytes = 1e12;
    for (int l = 0; l < L; l++) {
        cm->layers[l].kind = CM_DECODER;
        cm->layers[l].forward_s = work[l];
        cm->layers[l].grad_bytes = grads ? grads[l] : 0;
        cm->layers[l].output_bytes = outputs ? outputs[l] : 0;
    }
}

/* The DP's bottleneck for cm on 2 workers (1F1B, m = 4, no recompute,
 * bytes sent at 1 byte/s) with at most max_replicas per stage; st and count
 * get its stages. */
static double two_worker_bottleneck(const cm_model *cm, int max_replicas, pipedream_stage st[2],
                                    int *count)
{
    cl_cluster c = test_scaleout_cluster(1, 0);
    double bottleneck;
    planner_pipedream_dp(cm, &c, SCHED_1F1B, 2, 4, RECOMPUTE_NONE, max_replicas, st, count,
                         &bottleneck);
    return bottleneck;
}

/* Work 1, 1, 10 on 2 workers: without replication the best split is
 * {1,1 | 10} = 10; one stage of all three replicated twice runs 12/2 = 6. */
static void test_replicating_a_heavy_pipeline_halves_its_time(void)
{
    const double work[] = {1, 1, 10};
    cm_model cm;
    hand_model(&cm, 3, work, NULL, NULL);
    pipedream_stage st[2];
    int count;
    ASSERT_REL(two_worker_bottleneck(&cm, 2, st, &count), 6.0, 1e-15);
    CU_ASSERT_EQUAL(count, 1);
    CU_ASSERT_EQUAL(st[0].replicas, 2);
    ASSERT_REL(two_worker_bottleneck(&cm, 1, st, &count), 10.0, 1e-15);
    cm_free(&cm);
}

/* Work 1, 19, gradients 6 + 6 bytes at B = 1 byte/s: replicated twice the
 * stage syncs 4·(2−1)·12/(2·1) = 24 s > 20 s of work, so T = 24/2 = 12,
 * better than the 19 of the split {1 | 19}. */
static void test_replicated_stage_time_is_larger_of_work_and_sync_over_n(void)
{
    const double work[] = {1, 19}, grads[] = {6, 6};
    cm_model cm;
    hand_model(&cm, 2, work, grads, NULL);
    pipedream_stage st[2];
    int count;
    ASSERT_REL(two_worker_bottleneck(&cm, 2, st, &count), 12.0, 1e-15);
    cm_free(&cm);
}

/* Work 1, 1 with a 10-byte activation between them at 1 byte/s: the cut
 * costs 2·C = 20, so splitting gives max(1, 20, 1) = 20; replicating both
 * layers (no gradients) gives 2/2 = 1. */
static void test_cut_transfer_bounds_the_split(void)
{
    const double work[] = {1, 1}, outputs[] = {10, 0};
    cm_model cm;
    hand_model(&cm, 2, work, NULL, outputs);
    pipedream_stage st[2];
    int count;
    ASSERT_REL(two_worker_bottleneck(&cm, 1, st, &count), 20.0, 1e-15);
    ASSERT_REL(two_worker_bottleneck(&cm, 2, st, &count), 1.0, 1e-15);
    cm_free(&cm);
}

/* ---- the planner ------------------------------------------------------------- */

/* Every plan passes planner_run()'s plan_check() and mem_check_fits(), has p
 * stages, and its bottleneck is the reference optimum without replication
 * under the recompute option it chose, while every lighter option has no
 * partition that fits. */
static void test_planner_plans_fit_and_are_optimal_for_their_recompute(void)
{
    cl_cluster c = test_cluster();
    int planned = 0;
    for (uint64_t seed = 1; seed <= 30; seed++) {
        int L = 4 + (int)(seed % 7), p = 1 + (int)(seed % 4), m = 2 + (int)(seed % 5);
        cm_model cm;
        random_model(&cm, L, seed + 100);
        wl_workload w;
        test_pipeline_workload(&w, p, m, SCHED_1F1B);
        plan pl;
        int rc = test_run_planner("pipedream", &cm, &c, &w, &pl, NULL);
        double full = reference_best(&cm, &c, SCHED_1F1B, p, m, RECOMPUTE_FULL, 1);
        if (rc != 0) {
            CU_ASSERT_EQUAL(rc, NP_EXIT_NOFIT);
            CU_ASSERT(full == INFINITY);
            cm_free(&cm);
            continue;
        }
        planned++;
        CU_ASSERT_EQUAL(pl.num_stages, p);
        CU_ASSERT_EQUAL(mem_check_fits(&cm, &pl, NULL), 0);
        recompute_kind r = pl.recompute[L - 1];
        CU_ASSERT_EQUAL(pl.recompute[0], RECOMPUTE_NONE); /* the embedding */
        for (int lighter = 0; lighter < (int)r; lighter++)
            CU_ASSERT(reference_best(&cm, &c, SCHED_1F1B, p, m, (recompute_kind)lighter, 1) ==
                      INFINITY);
        reference ref = {&cm, &c, SCHED_1F1B, p, m, 1, r, INFINITY};
        double worst = 0;
        for (int s = 0; s < p; s++) {
            worst = fmax(worst,
                         reference_stage_time(&ref, pl.chunk_start[s], pl.chunk_start[s + 1], 1));
            if (s > 0)
                worst = fmax(worst, 2.0 * (c.scaleout_latency_s +
                                           cm.layers[pl.chunk_start[s] - 1].output_bytes /
                                               c.scaleout_bandwidth_Bps));
        }
        ASSERT_REL(worst, reference_best(&cm, &c, SCHED_1F1B, p, m, r, 1), 1e-12);
        plan_free(&pl);
        cm_free(&cm);
    }
    CU_ASSERT(planned >= 15);
}

/* Identical layers f = 1, b = 2 on p = 2 stages, m = 4, free communication:
 * 1F1B takes (m + p − 1)·t = 5 · 6 = 30 s with t = 2 layers · 3 s. */
static void test_planner_predicts_the_1f1b_critical_path(void)
{
    cm_model cm;
    test_uniform_model(&cm, 4);
    for (int l = 0; l < 4; l++)
        cm.layers[l].kind = CM_DECODER;
    wl_workload w;
    test_pipeline_workload(&w, 2, 4, SCHED_1F1B);
    plan pl;
    CU_ASSERT_EQUAL_FATAL(test_run_planner("pipedream", &cm, NULL, &w, &pl, NULL), 0);
    CU_ASSERT_EQUAL(pl.chunk_start[1], 2);
    ASSERT_REL(pl.predicted_iteration_s, 30.0, 1e-15);
    plan_free(&pl);
    cm_free(&cm);
}

/* Two identical layers of 100 bytes of state and 10 / 4 / 1 bytes of
 * activations (none / selective / full), p = 2, m = 4, 1F1B: stage 0 holds
 * 2 micro-batches.  With 125 bytes of memory: none needs 100 + 2·10 = 120
 * on stage 0, fits; with 115: none fails, selective needs 100 + 2·4 + (10−4)
 * = 114, fits: the planner picks selective. */
static void test_planner_takes_the_lightest_recompute_that_fits(void)
{
    cm_model cm;
    test_uniform_model(&cm, 2);
    for (int l = 0; l < 2; l++) {
        cm.layers[l].kind = CM_DECODER;
        cm.layers[l].activation_bytes[RECOMPUTE_SELECTIVE] = 4;
        cm.layers[l].activation_bytes[RECOMPUTE_FULL] = 1;
    }
    wl_workload w;
    test_pipeline_workload(&w, 2, 4, SCHED_1F1B);
    plan pl;
    cm.hbm_bytes = 125;
    CU_ASSERT_EQUAL_FATAL(test_run_planner("pipedream", &cm, NULL, &w, &pl, NULL), 0);
    CU_ASSERT_EQUAL(pl.recompute[0], RECOMPUTE_NONE);
    plan_free(&pl);
    cm.hbm_bytes = 115;
    CU_ASSERT_EQUAL_FATAL(test_run_planner("pipedream", &cm, NULL, &w, &pl, NULL), 0);
    CU_ASSERT_EQUAL(pl.recompute[0], RECOMPUTE_SELECTIVE);
    CU_ASSERT_EQUAL(pl.recompute[1], RECOMPUTE_SELECTIVE);
    plan_free(&pl);
    cm.hbm_bytes = 100; /* not even the state fits */
    CU_ASSERT_EQUAL(test_run_planner("pipedream", &cm, NULL, &w, &pl, NULL), NP_EXIT_NOFIT);
    cm_free(&cm);
}

void register_pipedream_tests(void)
{
    TEST_SUITE(
        "pipedream",
        {"dp_with_replication_equals_exhaustive_search",
         test_dp_with_replication_equals_exhaustive_search},
        {"dp_without_replication_equals_exhaustive_search",
         test_dp_without_replication_equals_exhaustive_search},
        {"dp_stages_cover_the_model_and_reach_the_bottleneck",
         test_dp_stages_cover_the_model_and_reach_the_bottleneck},
        {"replicating_a_heavy_pipeline_halves_its_time",
         test_replicating_a_heavy_pipeline_halves_its_time},
        {"replicated_stage_time_is_larger_of_work_and_sync_over_n",
         test_replicated_stage_time_is_larger_of_work_and_sync_over_n},
        {"cut_transfer_bounds_the_split", test_cut_transfer_bounds_the_split},
        {"planner_plans_fit_and_are_optimal_for_their_recompute",
         test_planner_plans_fit_and_are_optimal_for_their_recompute},
        {"planner_predicts_the_1f1b_critical_path", test_planner_predicts_the_1f1b_critical_path},
        {"planner_takes_the_lightest_recompute_that_fits",
         test_planner_takes_the_lightest_recompute_that_fits});
}
