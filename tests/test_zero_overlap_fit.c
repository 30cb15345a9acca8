/*
 * test_zero_overlap_fit.c -- the memory ZeRO-2/3's overlapped collectives
 * hold (--dp-overlap, cm_model.zero_overlap; memory.c) in the planners' fit
 * checks, against sizes derived by hand.
 *
 * The reserve of a stage (mem_zero_overlap_bytes()): the unsharded
 * gradients of its largest chunk (Σ zero_reduce_bytes over the chunk's
 * layers) plus, under ZeRO-3, the gathered parameters of its largest chunk
 * (Σ zero_gather_bytes); with one chunk per stage that is the sum of its
 * layers' shares (mem_zero_overlap_layer_bytes()).
 *
 * The planners' case: four layers of F = 1, B = 2 time units, no
 * activations (so the schedule's in-flight counts do not matter), states
 * 100, 10, 10, 10 bytes, no workspace, 140 bytes of HBM, two stages, ZeRO-2
 * over 4 replicas, layer 1 alone with 40 bytes of gradients to
 * reduce-scatter.  Stage bytes (state + reserve) per partition:
 *               without the overlap     with it
 *   2 | 2       110 and 20              150 and 20     over 140
 *   1 | 3       100 and 30              100 and 70     fits
 *   3 | 1       120 and 10              160 and 10     over 140
 * Without the overlap every partition fits and 2 | 2 is the fastest (its
 * bottleneck is two layers); with it only 1 | 3 fits.  A planner that sees
 * the reserve returns 1 | 3 with a worst stage of 100 bytes; one that
 * checked the capacity against the workspace alone would return 2 | 2,
 * which mem_check_fits() (planner_run()) then refuses.  Megatron's uniform
 * split has no choice: it is refused.
 */
#include <string.h>

#include "memory.h"
#include "planner.h"
#include "testutil.h"

#define HBM 140.0
#define REDUCE_1 40.0 /* layer 1's gradients, reduce-scattered in flight */

static void overlap_model(cm_model *cm, bool overlap)
{
    static const double state[4] = {100, 10, 10, 10};
    test_uniform_model(cm, 4);
    cm->hbm_bytes = HBM;
    cm->workspace_bytes = 0;
    cm->sharding = WL_SHARD_OPTIM_GRADS;
    cm->data_parallel = 4;
    cm->zero_overlap = overlap;
    for (int l = 0; l < 4; l++) {
        cm_layer *ly = &cm->layers[l];
        for (int r = 0; r < RECOMPUTE_COUNT; r++)
            ly->activation_bytes[r] = 0;
        ly->state_bytes = state[l];
        ly->params = 1;
        ly->output_bytes = 0;
        ly->zero_reduce_bytes = l == 1 ? REDUCE_1 : 0;
    }
}

static void plan_two_stages(plan *pl, int first_stage_layers, schedule_kind k)
{
    test_uniform_plan(pl, 2, 2, 2, k);
    pl->chunk_start[1] = first_stage_layers;
}

/* The table above, through mem_stage_bytes(). */
static void test_stage_bytes_with_and_without_the_reserve(void)
{
    static const double want[2][3][2] = {
        {{110, 20}, {100, 30}, {120, 10}}, /* without, cuts after layer 2, 1, 3 */
        {{150, 20}, {100, 70}, {160, 10}}, /* with */
    };
    static const int cut[3] = {2, 1, 3};
    for (int overlap = 0; overlap <= 1; overlap++) {
        cm_model cm;
        overlap_model(&cm, overlap);
        for (int c = 0; c < 3; c++) {
            plan pl;
            plan_two_stages(&pl, cut[c], SCHED_1F1B);
            for (int s = 0; s < 2; s++) {
                mem_stage st;
                mem_stage_bytes(&cm, &pl, s, &st);
                ASSERT_REL(st.total_bytes, want[overlap][c][s], 1e-12);
            }
            CU_ASSERT_EQUAL(mem_check_fits(&cm, &pl, NULL) == 0, !overlap || cut[c] == 1);
            plan_free(&pl);
        }
        cm_free(&cm);
    }
}

/* One chunk per stage: the sum of the layers' shares; interleaved (p = 2,
 * v = 2, one layer a chunk: stage 0 holds layers 0 and 2, stage 1 layers 1
 * and 3): the largest chunk's gradients plus, ZeRO-3, the largest chunk's
 * parameters, which need not be the same chunk's. */
static void test_reserve_is_the_largest_chunk_of_each(void)
{
    cm_model cm;
    overlap_model(&cm, true);
    cm.sharding = WL_SHARD_OPTIM_GRADS_PARAMS;
    static const double reduce[4] = {8, 40, 24, 2}, gather[4] = {1, 3, 16, 5};
    for (int l = 0; l < 4; l++) {
        cm.layers[l].zero_reduce_bytes = reduce[l];
        cm.layers[l].zero_gather_bytes = gather[l];
        ASSERT_REL(mem_zero_overlap_layer_bytes(&cm, l), reduce[l] + gather[l], 1e-15);
    }
    plan pl;
    plan_two_stages(&pl, 1, SCHED_1F1B);
    ASSERT_REL(mem_zero_overlap_bytes(&cm, &pl, 0), 8 + 1, 1e-15);
    ASSERT_REL(mem_zero_overlap_bytes(&cm, &pl, 1), (40 + 24 + 2) + (3 + 16 + 5), 1e-15);
    plan_free(&pl);
    test_chunked_plan(&pl, 2, 2, 2, 1, SCHED_INTERLEAVED);
    ASSERT_REL(mem_zero_overlap_bytes(&cm, &pl, 0), 24 + 16, 1e-15); /* layer 2's both */
    ASSERT_REL(mem_zero_overlap_bytes(&cm, &pl, 1), 40 + 5, 1e-15);  /* layer 1's, layer 3's */
    plan_free(&pl);
    /* no reserve without the overlap, under ZeRO-1, or with one replica */
    cm.zero_overlap = false;
    CU_ASSERT_EQUAL(mem_zero_overlap_layer_bytes(&cm, 1), 0.0);
    cm.zero_overlap = true;
    cm.sharding = WL_SHARD_OPTIM;
    CU_ASSERT_EQUAL(mem_zero_overlap_layer_bytes(&cm, 1), 0.0);
    cm.sharding = WL_SHARD_OPTIM_GRADS;
    cm.data_parallel = 1;
    CU_ASSERT_EQUAL(mem_zero_overlap_layer_bytes(&cm, 1), 0.0);
    cm_free(&cm);
}

/* planner `name` on the model: its first stage's layer count, or −code. */
static int planned_cut(const char *name, bool overlap, schedule_kind sched, double *worst)
{
    cm_model cm;
    overlap_model(&cm, overlap);
    wl_workload w;
    test_pipeline_workload(&w, 2, 2, sched);
    cl_cluster c = test_scaleout_cluster(1e9, 1e-6);
    plan pl;
    np_error err;
    np_error_clear(&err);
    int rc = test_run_planner(name, &cm, &c, &w, &pl, &err);
    int cut = -rc;
    if (rc == 0) {
        cut = pl.chunk_start[1];
        mem_stage st;
        mem_worst_stage(&cm, &pl, &st);
        *worst = st.total_bytes;
        plan_free(&pl);
    } else if (rc != NP_EXIT_NOFIT) {
        fprintf(stderr, "\n  %s: %s\n", name, err.text);
    }
    cm_free(&cm);
    return cut;
}

static void test_search_planners_leave_room_for_the_reserve(void)
{
    static const struct {
        const char *name;
        schedule_kind sched;
    } planners[] = {{"adapipe", SCHED_1F1B},
                    {"pipedream", SCHED_1F1B},
                    {"bmpipe", SCHED_1F1B},
                    {"csimd", SCHED_GPIPE}};
    for (size_t i = 0; i < sizeof planners / sizeof planners[0]; i++) {
        double worst = 0;
        int without = planned_cut(planners[i].name, false, planners[i].sched, &worst);
        if (without != 2)
            fprintf(stderr, "\n  %s without the overlap: cut %d\n", planners[i].name, without);
        CU_ASSERT_EQUAL(without, 2);
        ASSERT_REL(worst, 110, 1e-12);
        int with = planned_cut(planners[i].name, true, planners[i].sched, &worst);
        if (with != 1)
            fprintf(stderr, "\n  %s with the overlap: cut %d\n", planners[i].name, with);
        CU_ASSERT_EQUAL(with, 1);
        ASSERT_REL(worst, 100, 1e-12);
    }
}

/* Megatron's uniform split is 2 | 2 whatever the memory: it fits without
 * the overlap and is refused with it (no recompute option frees state). */
static void test_uniform_split_is_refused_with_the_reserve(void)
{
    double worst = 0;
    CU_ASSERT_EQUAL(planned_cut("megatron", false, SCHED_1F1B, &worst), 2);
    ASSERT_REL(worst, 110, 1e-12);
    CU_ASSERT_EQUAL(planned_cut("megatron", true, SCHED_1F1B, &worst), -NP_EXIT_NOFIT);
}

void register_zero_overlap_fit_tests(void)
{
    TEST_SUITE(
        "zero_overlap_fit",
        {"stage bytes with and without the reserve", test_stage_bytes_with_and_without_the_reserve},
        {"reserve is the largest chunk of each", test_reserve_is_the_largest_chunk_of_each},
        {"search planners leave room for the reserve",
         test_search_planners_leave_room_for_the_reserve},
        {"uniform split is refused with the reserve",
         test_uniform_split_is_refused_with_the_reserve});
}
