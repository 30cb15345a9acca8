/*
 * test_tp_fold.c -- the exact TP fold (sim/net/transport_symmetry.c,
 * sim/engine/engine_symmetry.c): one flow per TP group on a fabric that
 * treats the group's ranks alike, with the times of one flow per rank.
 *
 * - A closed form where the shared links decide the time: on
 *   test_clos3_64.xml (4 pods of 2 servers, the pod tier 4:1: 100e9 B/s up
 *   and down per pod, 6 links of 1 µs across pods), TP 8 × DP 4 × PP 2 puts
 *   stage 0 on pods 0-1 and stage 1 on pods 2-3 (rank r + 8(d + 4s), server
 *   d + 4s); the 4 replicas send at the same instant, 2 per pod, so 16 flows
 *   share each pod's up-link and each takes α + S·16/100e9.  Folded, 2
 *   flows share the up-link scaled to 100e9/8: the same time.
 * - The fold against per-rank flows on every kind of fabric, schedule and
 *   gradient collective: the same iteration time, the fold where the routes
 *   allow it, per-rank flows where they do not (a torus, a dragonfly, NIC
 *   planes picked by a hash, TP 1, --per-rank-flows).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "testutil.h"

typedef struct fold_case {
    const char *platform;
    int p, v, tp, dp, m;
    schedule_kind schedule;
    coll_algorithm dp_algorithm;
    double grad_bytes; /* per layer; 0: no gradient sync */
    int expect_fold;   /* tp_fold of the default run */
} fold_case;

static void model_for(const fold_case *c, cm_model *cm, plan *pl, double output_bytes)
{
    int layers = c->p * c->v;
    test_uniform_model(cm, layers);
    cm->tensor_parallel = c->tp;
    cm->data_parallel = c->dp;
    for (int l = 0; l < layers; l++) {
        cm->layers[l].output_bytes = output_bytes;
        cm->layers[l].params = c->grad_bytes / 4;
        cm->layers[l].grad_bytes = c->grad_bytes;
    }
    test_chunked_plan(pl, c->p, c->v, c->m, 1, c->schedule);
    pl->tensor_parallel = c->tp;
    pl->data_parallel = c->dp;
}

/* Runs c folded (the default) and with per-rank flows. */
static void run_both(const fold_case *c, double output_bytes, test_sim_result *folded,
                     test_sim_result *per_rank)
{
    cm_model cm;
    plan pl;
    model_for(c, &cm, &pl, output_bytes);
    engine_options o;
    engine_init_options(&o);
    o.dp_algorithm = c->dp_algorithm;
    CU_ASSERT_EQUAL_FATAL(test_simulate_plan(c->platform, &cm, &pl, &o, folded), 0);
    o.per_rank_flows = true;
    CU_ASSERT_EQUAL_FATAL(test_simulate_plan(c->platform, &cm, &pl, &o, per_rank), 0);
    plan_free(&pl);
    cm_free(&cm);
    CU_ASSERT_EQUAL_FATAL(folded->rc, 0);
    CU_ASSERT_EQUAL_FATAL(per_rank->rc, 0);
}

static void test_shared_pod_uplinks_give_the_closed_form(void)
{
    const double S = 1e9, alpha = 6e-6, pod_bw = 100e9;
    fold_case c = {"platforms/test_clos3_64.xml", 2, 1, 8, 4, 1, SCHED_1F1B, COLL_RING_FLOW, 0, 8};
    test_sim_result f, r;
    run_both(&c, S, &f, &r);
    double transfer = alpha + S * 16 / pod_bw; /* 16 flows on a pod's up-link */
    CU_ASSERT(S * 16 / pod_bw > S / 25e9);     /* the pod tier decides, not the NIC */
    /* F0, the send, F1, B1, the send back, B0 (1 s forward, 2 s backward). */
    ASSERT_REL(r.iteration_s, 1 + transfer + 1 + 2 + transfer + 2, 1e-9);
    ASSERT_REL(f.iteration_s, r.iteration_s, 1e-12);
    CU_ASSERT_EQUAL(f.tp_fold, 8);
    CU_ASSERT_EQUAL(r.tp_fold, 1);
    /* 2 sends × 4 replicas: 8 flows folded, 64 per rank; 4 executions each */
    CU_ASSERT_EQUAL(r.activities - f.activities, 2 * 4 * (8 - 1));
}

static void expect_same_times(const fold_case *cases, int n)
{
    for (int i = 0; i < n; i++) {
        const fold_case *c = &cases[i];
        test_sim_result f, r;
        run_both(c, 3e8, &f, &r);
        if (fabs(f.iteration_s - r.iteration_s) > 1e-9 * r.iteration_s ||
            f.tp_fold != c->expect_fold)
            fprintf(stderr,
                    "\n  %s p=%d v=%d tp=%d dp=%d %s %s: folded %.12g (tp_fold %d), "
                    "per rank %.12g\n",
                    c->platform, c->p, c->v, c->tp, c->dp, wl_schedule_name(c->schedule),
                    coll_algorithm_name(c->dp_algorithm), f.iteration_s, f.tp_fold, r.iteration_s);
        ASSERT_REL(f.iteration_s, r.iteration_s, 1e-9);
        ASSERT_REL(f.pipeline_s, r.pipeline_s, 1e-9);
        CU_ASSERT_EQUAL(f.tp_fold, c->expect_fold);
        CU_ASSERT_EQUAL(r.tp_fold, 1);
        if (c->expect_fold > 1) {
            CU_ASSERT(f.activities < r.activities);
        } else {
            CU_ASSERT_EQUAL(f.activities, r.activities);
        }
    }
}

static void test_fold_keeps_the_times_where_the_fabric_allows_it(void)
{
    static const fold_case cases[] = {
        /* 3-tier Clos, a 4:1 pod tier: interleaved, a ring-flow all-reduce */
        {"platforms/test_clos3_64.xml", 2, 2, 8, 4, 4, SCHED_INTERLEAVED, COLL_RING_FLOW, 4e8, 8},
        /* the butterfly's partners, checked when first used */
        {"platforms/test_clos3_64.xml", 2, 1, 8, 4, 4, SCHED_1F1B, COLL_BUTTERFLY, 4e8, 8},
        {"platforms/test_clos3_64.xml", 4, 1, 4, 4, 4, SCHED_ZB_H1, COLL_RING, 4e8, 4},
        /* two TP groups per server: hierarchical's scale-up steps */
        {"platforms/test_clos3_64.xml", 2, 1, 4, 8, 2, SCHED_GPIPE, COLL_HIERARCHICAL, 4e8, 4},
        /* rail-optimised: a rank's rail is its own */
        {"platforms/test_rail_64.xml", 2, 1, 8, 4, 4, SCHED_1F1B, COLL_RING_FLOW, 4e8, 8},
        /* dual-plane NICs, split: two legs per rank */
        {"platforms/test_rail_2plane_64.xml", 2, 1, 8, 4, 4, SCHED_1F1B, COLL_RING_FLOW, 4e8, 8},
        /* the shipped 16-NPU platform */
        {"platforms/test_16npu.xml", 2, 2, 4, 2, 4, SCHED_INTERLEAVED, COLL_RING_FLOW, 4e8, 4},
    };
    expect_same_times(cases, (int)(sizeof cases / sizeof cases[0]));
}

static void test_per_rank_flows_where_the_fabric_does_not_allow_it(void)
{
    static const fold_case cases[] = {
        /* a torus and a dragonfly route each rank through other links */
        {"platforms/test_torus_64.xml", 2, 1, 8, 4, 4, SCHED_1F1B, COLL_RING_FLOW, 4e8, 1},
        {"platforms/test_dragonfly_64.xml", 2, 1, 8, 4, 4, SCHED_1F1B, COLL_RING_FLOW, 4e8, 1},
        /* TP 1: nothing to fold */
        {"platforms/test_clos3_64.xml", 8, 1, 1, 8, 4, SCHED_1F1B, COLL_RING_FLOW, 4e8, 1},
    };
    expect_same_times(cases, (int)(sizeof cases / sizeof cases[0]));
}

void register_tp_fold_tests(void)
{
    TEST_SUITE("tp_fold",
               {"shared pod up-links: the closed form, folded and per rank",
                test_shared_pod_uplinks_give_the_closed_form},
               {"the same times where the fabric treats a TP group's ranks alike",
                test_fold_keeps_the_times_where_the_fabric_allows_it},
               {"per-rank flows on a torus, a dragonfly and at TP 1",
                test_per_rank_flows_where_the_fabric_does_not_allow_it});
}
