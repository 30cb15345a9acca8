/*
 * test_merak.c -- Merak's stage-aware recompute ratios (TPDS'23) computed by
 * hand, and the planner's choice of r0 against a fine sweep of r0.
 *
 * r_k = 1 − (1 − r0)·(p−1)/(p−1−k) for k < p−1, the last stage none, clamped
 * to [0, 1] (docs/planners.md "Merak").  The sweep builds each candidate plan from
 * that definition (Megatron's uniform stages, full recompute on the first
 * ceil(r_k·n_k) decoder layers of stage k, with and without the shifted
 * critical path), keeps those mem_check_fits() accepts, prices them with the
 * 1F1B critical path the planner states, and takes the fastest.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memory.h"
#include "planner.h"
#include "testutil.h"

/* ---- the ratios, by hand ---------------------------------------------------- */

/* p = 4, r0 = 0.5: r1 = 1 − 0.5·3/2 = 0.25, r2 = 1 − 0.5·3/1 = −0.5 → 0,
 * r3 (last) = 0. */
static void test_ratio_p4_r0_half(void)
{
    ASSERT_REL(planner_merak_ratio(4, 0, 0.5), 0.5, 1e-15);
    ASSERT_REL(planner_merak_ratio(4, 1, 0.5), 0.25, 1e-15);
    CU_ASSERT_EQUAL(planner_merak_ratio(4, 2, 0.5), 0.0);
    CU_ASSERT_EQUAL(planner_merak_ratio(4, 3, 0.5), 0.0);
}

/* p = 4, r0 = 0.8: r1 = 1 − 0.2·3/2 = 0.7, r2 = 1 − 0.2·3/1 = 0.4, r3 = 0. */
static void test_ratio_p4_r0_0p8(void)
{
    ASSERT_REL(planner_merak_ratio(4, 0, 0.8), 0.8, 1e-15);
    ASSERT_REL(planner_merak_ratio(4, 1, 0.8), 0.7, 1e-12);
    ASSERT_REL(planner_merak_ratio(4, 2, 0.8), 0.4, 1e-12);
    CU_ASSERT_EQUAL(planner_merak_ratio(4, 3, 0.8), 0.0);
}

/* r0 = 1 makes every r_k = 1 − 0 = 1 but the last stage's, which is 0. */
static void test_ratio_r0_one_recomputes_all_stages_but_the_last(void)
{
    for (int k = 0; k < 7; k++)
        CU_ASSERT_EQUAL(planner_merak_ratio(8, k, 1.0), 1.0);
    CU_ASSERT_EQUAL(planner_merak_ratio(8, 7, 1.0), 0.0);
}

/* ---- the planner against a sweep of r0 ---------------------------------------- */

/* Embedding, decoders, LM head with random times and bytes; full recompute
 * keeps a tenth of a decoder's activations and costs its forward. */
static const test_random_spec merak_spec = {
    .stream = 11,
    .lm_head = true,
    .edge_activation_bytes = {2, 10},
    .decoder_activation_bytes = {5, 80},
    .selective_kept = 1.0,
    .selective_cost = 0.0,
    .full_kept = 0.1,
    .full_cost = 1.0,
    .state_bytes = {20, 60},
    .output_bytes = {1, 10},
    .workspace_bytes = 5,
    .memory_slack = {0.5, 3.0},
};

/* Megatron's uniform split of the decoders (the extra ones on stages 1..),
 * the embedding on the first stage, the head on the last. */
static void uniform_stages(int L, int p, int *start)
{
    int decoders = L - 2, base = decoders / p, extra = decoders % p;
    start[0] = 0;
    int next = 1;
    for (int s = 0; s < p; s++) {
        next += base + (s >= 1 && s <= extra ? 1 : 0);
        start[s + 1] = next;
    }
    start[p] = L;
}

static double sweep_ratio(int p, int k, double r0)
{
    if (k == p - 1 && p > 1)
        return 0.0;
    double r = k == 0 ? r0 : 1.0 - (1.0 - r0) * (p - 1.0) / (p - 1.0 - k);
    return r < 0 ? 0 : r > 1 ? 1 : r;
}

static double sweep_predict(const cm_model *cm, const cl_cluster *c, const plan *pl)
{
    double ends = 0, worst = 0;
    for (int s = 0; s < pl->num_stages; s++) {
        double work = 0, recompute = 0, comm = 0;
        for (int l = pl->chunk_start[s]; l < pl->chunk_start[s + 1]; l++) {
            const cm_layer *ly = &cm->layers[l];
            work += ly->forward_s + ly->backward_s + ly->weight_grad_s;
            recompute += ly->recompute_s[pl->recompute[l]];
        }
        if (s < pl->num_stages - 1)
            comm =
                2.0 * (c->scaleout_latency_s + cm->layers[pl->chunk_start[s + 1] - 1].output_bytes /
                                                   c->scaleout_bandwidth_Bps);
        ends += work + comm + (pl->merak_shifted_recompute ? 0 : recompute);
        worst = fmax(worst, work + recompute + comm);
    }
    return ends + (pl->num_micro_batches - 1) * worst;
}

/* The fastest plan over r0 = 0, 1/20000, ..., 1 and both shift settings. */
static double sweep_best(const cm_model *cm, const cl_cluster *c, int p, int m, schedule_kind sched)
{
    plan pl;
    plan_init(&pl, p, 1, cm->num_layers);
    pl.schedule = sched;
    pl.num_micro_batches = m;
    pl.micro_batch_size = pl.tensor_parallel = pl.data_parallel = 1;
    uniform_stages(cm->num_layers, p, pl.chunk_start);
    double best = INFINITY;
    for (int shift = 0; shift <= 1; shift++) {
        pl.merak_shifted_recompute = shift;
        for (int g = 0; g <= 20000; g++) {
            double r0 = g / 20000.0;
            for (int s = 0; s < p; s++) {
                int n = 0;
                for (int l = pl.chunk_start[s]; l < pl.chunk_start[s + 1]; l++)
                    n += cm->layers[l].kind == CM_DECODER;
                int todo = (int)ceil(sweep_ratio(p, s, r0) * n - 1e-9);
                for (int l = pl.chunk_start[s]; l < pl.chunk_start[s + 1]; l++) {
                    bool on = cm->layers[l].kind == CM_DECODER && todo > 0;
                    pl.recompute[l] = on ? RECOMPUTE_FULL : RECOMPUTE_NONE;
                    todo -= on;
                }
            }
            if (mem_check_fits(cm, &pl, NULL) == 0)
                best = fmin(best, sweep_predict(cm, c, &pl));
        }
    }
    plan_free(&pl);
    return best;
}

/* The planner's plan fits, and is as fast as the fastest plan of the sweep,
 * under 1F1B and GPipe (where the shift can save memory: GPipe holds all m
 * micro-batches, only the last p−s of them unrecomputed). */
static void test_planner_finds_the_fastest_r0_that_fits(void)
{
    cl_cluster c = test_scaleout_cluster(20, 0.02);
    int planned = 0, refused = 0, shifted = 0;
    for (uint64_t seed = 1; seed <= 48; seed++) {
        int p = 1 + (int)(seed % 4), L = 2 + p + (int)(seed % (9 - p)), m = 1 + (int)(seed % 7);
        schedule_kind sched = (seed / 4) % 2 ? SCHED_GPIPE : SCHED_1F1B;
        cm_model cm;
        test_random_model(&cm, L, seed, &merak_spec);
        wl_workload w;
        test_pipeline_workload(&w, p, m, sched);
        plan pl;
        int rc = test_run_planner("merak", &cm, &c, &w, &pl, NULL);
        double best = sweep_best(&cm, &c, p, m, sched);
        if (best == INFINITY) {
            CU_ASSERT_EQUAL(rc, NP_EXIT_NOFIT);
            refused++;
        } else {
            CU_ASSERT_EQUAL_FATAL(rc, 0);
            ASSERT_REL(pl.predicted_iteration_s, best, 1e-12);
            ASSERT_REL(sweep_predict(&cm, &c, &pl), best, 1e-12);
            CU_ASSERT_EQUAL(mem_check_fits(&cm, &pl, NULL), 0);
            for (int l = 0; l < L && pl.merak_shifted_recompute; l++)
                if (pl.recompute[l] != RECOMPUTE_NONE) {
                    shifted++;
                    break;
                }
            plan_free(&pl);
            planned++;
        }
        cm_free(&cm);
    }
    CU_ASSERT(planned >= 24);
    CU_ASSERT(refused >= 1);
    CU_ASSERT(shifted >= 1); /* some GPipe plan recomputes with the shift on */
}

/* Four identical layers (F = 1, B = 2, 10 B of activations, 1 B under full
 * recompute, 100 B of state) on p = 2 stages of two, m = 4.  Stage 0 holds 2
 * micro-batches: 200 + 2·20 = 240 B without recompute.  With 300 B that fits:
 * r0 = 0, nothing recomputed, and the shift is kept (it skips nothing).
 * With 235 B stage 0 must recompute one layer (200 + 2·11 + 9 = 231 B); the
 * shift would keep the last 2 micro-batches of stage 0 at full activations,
 * 240 B again, so the plan drops it. */
static void test_planner_drops_the_shift_when_recompute_is_needed(void)
{
    cm_model cm;
    test_uniform_model(&cm, 4);
    for (int l = 0; l < 4; l++) {
        cm.layers[l].kind = CM_DECODER;
        cm.layers[l].activation_bytes[RECOMPUTE_FULL] = 1;
        cm.layers[l].recompute_s[RECOMPUTE_FULL] = 1;
    }
    wl_workload w;
    test_pipeline_workload(&w, 2, 4, SCHED_1F1B);
    plan pl;
    cm.hbm_bytes = 300;
    CU_ASSERT_EQUAL_FATAL(test_run_planner("merak", &cm, NULL, &w, &pl, NULL), 0);
    CU_ASSERT(pl.merak_shifted_recompute);
    for (int l = 0; l < 4; l++)
        CU_ASSERT_EQUAL(pl.recompute[l], RECOMPUTE_NONE);
    plan_free(&pl);
    cm.hbm_bytes = 235;
    CU_ASSERT_EQUAL_FATAL(test_run_planner("merak", &cm, NULL, &w, &pl, NULL), 0);
    CU_ASSERT(!pl.merak_shifted_recompute);
    CU_ASSERT_EQUAL(pl.recompute[0], RECOMPUTE_FULL);
    CU_ASSERT_EQUAL(pl.recompute[1], RECOMPUTE_NONE);
    CU_ASSERT_EQUAL(pl.recompute[2], RECOMPUTE_NONE); /* r1 = 0 on the last stage */
    /* (m − 1)·max t + Σ t = 3·7 + (7 + 6): stage 0 runs 2·3 + 1 s */
    ASSERT_REL(pl.predicted_iteration_s, 34.0, 1e-15);
    plan_free(&pl);
    cm_free(&cm);
}

/* Six decoders (F = 1, B = 2, full recompute 1 s and 1 B kept), two per
 * stage on p = 3, m = 4, 1F1B (2 micro-batches in flight on stage 1): 10 B of
 * activations on stages 0 and 2, 100 B on stage 1, no state, 320 B of
 * memory.  Stage 1 needs one recomputed layer (2·(100 + 1) + 99 = 301 B; none:
 * 400 B), i.e. r1 = 1 − 2(1 − r0) ≥ 1/2, r0 ≥ 0.75, where stage 0 recomputes
 * ceil(0.75·2) = 2 layers.  Stage times 8, 7, 6 s; the shift does not fit
 * (stage 1 back at 400 B): 21 + 3·8 = 45 s. */
static void test_planner_recomputes_just_enough_where_a_later_stage_binds(void)
{
    cm_model cm;
    test_uniform_model(&cm, 6);
    for (int l = 0; l < 6; l++) {
        cm_layer *ly = &cm.layers[l];
        ly->kind = CM_DECODER;
        ly->state_bytes = 0;
        ly->recompute_s[RECOMPUTE_FULL] = 1;
        double none = (l == 2 || l == 3) ? 100 : 10;
        ly->activation_bytes[RECOMPUTE_NONE] = ly->activation_bytes[RECOMPUTE_SELECTIVE] = none;
        ly->activation_bytes[RECOMPUTE_FULL] = 1;
    }
    cm.hbm_bytes = 320;
    wl_workload w;
    test_pipeline_workload(&w, 3, 4, SCHED_1F1B);
    plan pl;
    CU_ASSERT_EQUAL_FATAL(test_run_planner("merak", &cm, NULL, &w, &pl, NULL), 0);
    const recompute_kind expect[6] = {RECOMPUTE_FULL, RECOMPUTE_FULL, RECOMPUTE_FULL,
                                      RECOMPUTE_NONE, RECOMPUTE_NONE, RECOMPUTE_NONE};
    for (int l = 0; l < 6; l++)
        CU_ASSERT_EQUAL(pl.recompute[l], expect[l]);
    CU_ASSERT(!pl.merak_shifted_recompute);
    ASSERT_REL(pl.predicted_iteration_s, 45.0, 1e-15);
    plan_free(&pl);
    cm_free(&cm);
}

/* [embedding, d1, d2, d3, head] on p = 3 (one decoder per stage, the
 * embedding with d1, the head with d3), m = 4, 1F1B: 3, 2 and 1 micro-batches
 * in flight.  Every layer F = 1, B = 2, 10 B of activations, no state; a
 * decoder under full recompute keeps 1 B and costs 1 s; 50 B of memory.
 * Stage 0 needs d1 recomputed (3·(10 + 10) = 60 B; with d1: 3·11 + 9 = 42 B),
 * the other stages fit as they are.  r1 = 1 − 2(1 − r0) is 0 for r0 = 1/2,
 * where stage 0 recomputes ceil(r0·1) = 1 layer: stage times 7, 3, 6 s, so
 * T = 16 + 3·7 = 37 s.  Recomputing d2 as well (r0 = 1) costs 38 s. */
static void test_planner_lets_a_later_stage_recompute_nothing(void)
{
    cm_model cm;
    test_uniform_model(&cm, 5);
    const cm_layer_kind kinds[5] = {CM_EMBEDDING, CM_DECODER, CM_DECODER, CM_DECODER, CM_LM_HEAD};
    for (int l = 0; l < 5; l++) {
        cm_layer *ly = &cm.layers[l];
        ly->kind = kinds[l];
        ly->state_bytes = 0;
        if (ly->kind == CM_DECODER) {
            ly->activation_bytes[RECOMPUTE_FULL] = 1;
            ly->recompute_s[RECOMPUTE_FULL] = 1;
        }
    }
    cm.hbm_bytes = 50;
    wl_workload w;
    test_pipeline_workload(&w, 3, 4, SCHED_1F1B);
    plan pl;
    CU_ASSERT_EQUAL_FATAL(test_run_planner("merak", &cm, NULL, &w, &pl, NULL), 0);
    const recompute_kind expect[5] = {RECOMPUTE_NONE, RECOMPUTE_FULL, RECOMPUTE_NONE,
                                      RECOMPUTE_NONE, RECOMPUTE_NONE};
    for (int l = 0; l < 5; l++)
        CU_ASSERT_EQUAL(pl.recompute[l], expect[l]);
    ASSERT_REL(pl.predicted_iteration_s, 37.0, 1e-15);
    plan_free(&pl);
    cm_free(&cm);
}

void register_merak_tests(void)
{
    TEST_SUITE(
        "merak", {"ratio_p4_r0_half", test_ratio_p4_r0_half},
        {"planner_lets_a_later_stage_recompute_nothing",
         test_planner_lets_a_later_stage_recompute_nothing},
        {"ratio_p4_r0_0p8", test_ratio_p4_r0_0p8},
        {"ratio_r0_one_recomputes_all_stages_but_the_last",
         test_ratio_r0_one_recomputes_all_stages_but_the_last},
        {"planner_finds_the_fastest_r0_that_fits", test_planner_finds_the_fastest_r0_that_fits},
        {"planner_recomputes_just_enough_where_a_later_stage_binds",
         test_planner_recomputes_just_enough_where_a_later_stage_binds},
        {"planner_drops_the_shift_when_recompute_is_needed",
         test_planner_drops_the_shift_when_recompute_is_needed});
}
