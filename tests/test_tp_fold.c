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
 *   allow it, per-rank flows where they do not (a torus, a dragonfly, TP 1).
 * - A pair that only the run meets failing the check: a platform written
 *   here (8 NPUs, 2 per server, Full routing, a private up- and down-link
 *   per NPU) whose one route from NPU 0 to NPU 4 crosses an extra link, so
 *   TP ranks 0 and 1 of groups 0 and 2 take different paths.  The pairs of
 *   the data-parallel ring (groups d, d + 1) pass the check before the run;
 *   halving-doubling also pairs groups 0 and 2, so the run stops with the
 *   error, and runs with --per-rank-flows (or with ring-flow, folded).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
        /* 4 replicas per server: ring-flow's channels (collective.h), their
         * pairs checked before the run; on rails the wrap leaves the rail */
        {"platforms/test_clos3_64.xml", 4, 1, 2, 8, 4, SCHED_1F1B, COLL_RING_FLOW, 4e8, 2},
        {"platforms/test_rail_64.xml", 4, 1, 2, 8, 4, SCHED_1F1B, COLL_RING_FLOW, 4e8, 2},
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

/* The platform above, in a temporary file (path in buf); 0 or -1. */
static int write_odd_route_platform(char *buf, size_t size)
{
    snprintf(buf, size, "/tmp/npusim_tp_fold_XXXXXX");
    int fd = mkstemp(buf);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f)
        return -1;
    fputs("<?xml version='1.0'?>\n"
          "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
          "<platform version=\"4.1\">\n"
          "  <zone id=\"world\" routing=\"Full\">\n",
          f);
    for (int i = 0; i < 8; i++) {
        fprintf(f, "    <host id=\"npu-%d\" speed=\"313e12f\">\n", i);
        fputs("      <prop id=\"hbm_bytes\" value=\"64e9\"/>\n"
              "      <prop id=\"hbm_bandwidth_Bps\" value=\"1.6e12\"/>\n"
              "      <prop id=\"npus_per_node\" value=\"2\"/>\n"
              "      <prop id=\"scaleup_bandwidth_Bps\" value=\"1e10\"/>\n"
              "      <prop id=\"scaleup_latency_s\" value=\"2e-6\"/>\n"
              "      <prop id=\"matmul_efficiency\" value=\"0.7\"/>\n"
              "      <prop id=\"kernel_launch_s\" value=\"10e-6\"/>\n"
              "    </host>\n",
              f);
    }
    for (int i = 0; i < 8; i++)
        fprintf(f,
                "    <link id=\"up%d\" bandwidth=\"1e9Bps\" latency=\"5e-6s\"/>\n"
                "    <link id=\"down%d\" bandwidth=\"1e9Bps\" latency=\"5e-6s\"/>\n",
                i, i);
    fputs("    <link id=\"odd\" bandwidth=\"1e9Bps\" latency=\"5e-6s\"/>\n", f);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++)
            if (i != j)
                fprintf(f,
                        "    <route src=\"npu-%d\" dst=\"npu-%d\" symmetrical=\"NO\">"
                        "<link_ctn id=\"up%d\"/>%s<link_ctn id=\"down%d\"/></route>\n",
                        i, j, i, i == 0 && j == 4 ? "<link_ctn id=\"odd\"/>" : "", j);
    fputs("  </zone>\n</platform>\n", f);
    return fclose(f) == 0 ? 0 : -1;
}

static void test_a_pair_failing_during_the_run_stops_it(void)
{
    char path[64];
    CU_ASSERT_EQUAL_FATAL(write_odd_route_platform(path, sizeof path), 0);
    fold_case c = {path, 1, 1, 2, 4, 1, SCHED_1F1B, COLL_HALVING_DOUBLING, 4e8, 1};
    cm_model cm;
    plan pl;
    model_for(&c, &cm, &pl, 1e6);
    engine_options o;
    engine_init_options(&o);
    o.dp_algorithm = COLL_HALVING_DOUBLING;
    test_sim_result folded, per_rank, ring;
    CU_ASSERT_EQUAL(test_simulate_plan_quiet(path, &cm, &pl, &o, &folded), 0);
    CU_ASSERT_EQUAL(folded.rc, NP_EXIT_INTERNAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(folded.error, "exact TP fold does not hold"));
    if (!strstr(folded.error, "from npu-0 to npu-4"))
        fprintf(stderr, "\n  %s\n", folded.error);
    CU_ASSERT_PTR_NOT_NULL(strstr(folded.error, "from npu-0 to npu-4")); /* the pair */
    CU_ASSERT_PTR_NOT_NULL(strstr(folded.error, "--per-rank-flows"));
    o.per_rank_flows = true;
    CU_ASSERT_EQUAL(test_simulate_plan(path, &cm, &pl, &o, &per_rank), 0);
    CU_ASSERT_EQUAL(per_rank.rc, 0);
    CU_ASSERT_EQUAL(per_rank.tp_fold, 1);
    /* ring-flow never pairs groups 0 and 2: folded, and the same time */
    o.per_rank_flows = false;
    o.dp_algorithm = COLL_RING_FLOW;
    test_sim_result ring_per_rank;
    CU_ASSERT_EQUAL(test_simulate_plan(path, &cm, &pl, &o, &ring), 0);
    o.per_rank_flows = true;
    CU_ASSERT_EQUAL(test_simulate_plan(path, &cm, &pl, &o, &ring_per_rank), 0);
    CU_ASSERT_EQUAL(ring.rc, 0);
    CU_ASSERT_EQUAL(ring.tp_fold, 2);
    ASSERT_REL(ring.iteration_s, ring_per_rank.iteration_s, 1e-9);
    plan_free(&pl);
    cm_free(&cm);
    unlink(path);
}

void register_tp_fold_tests(void)
{
    TEST_SUITE("tp_fold",
               {"shared pod up-links: the closed form, folded and per rank",
                test_shared_pod_uplinks_give_the_closed_form},
               {"the same times where the fabric treats a TP group's ranks alike",
                test_fold_keeps_the_times_where_the_fabric_allows_it},
               {"per-rank flows on a torus, a dragonfly and at TP 1",
                test_per_rank_flows_where_the_fabric_does_not_allow_it},
               {"a pair failing the check during the run stops it, naming the option",
                test_a_pair_failing_during_the_run_stops_it});
}
