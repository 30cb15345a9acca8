/*
 * test_frontier.c -- TensorOpt frontier tracking (planner/search/frontier.h):
 * the Pareto algebra, the chain DP and the plan's cost function.
 *
 * The algebra is checked on hand-made sets whose frontiers are worked out in
 * the comments, the chain DP against brute force (every configuration of
 * every operator priced, the non-dominated points filtered by the O(n²)
 * definition, pareto_testutil.h), and the time formula in closed form on
 * uniform stages.  The job's frontier, the ft planner and the sweep are in
 * test_frontier_job.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontier.h"
#include "pareto_testutil.h"
#include "planner.h"
#include "testutil.h"

#define TOL PARETO_TOL

static frontier_set make_set(const double (*pts)[2], int n)
{
    frontier_set f;
    frontier_set_init(&f);
    for (int i = 0; i < n; i++)
        frontier_set_add(&f, pts[i][0], pts[i][1], i, 0);
    return f;
}

static bool has_point(const frontier_set *f, double t, double m)
{
    for (int i = 0; i < f->count; i++)
        if (close_to(f->points[i].time_s, t) && close_to(f->points[i].memory_bytes, m))
            return true;
    return false;
}

/* ---- 1. the algebra on hand-made sets ------------------------------------ */

/* {(3,1), (1,5), (2,5), (2,3), (1,6)}: (1,6) is beaten by (1,5), (2,5) by
 * (2,3); the frontier is (1,5), (2,3), (3,1). */
static void test_prune_keeps_strictly_decreasing_memory(void)
{
    const double pts[][2] = {{3, 1}, {1, 5}, {2, 5}, {2, 3}, {1, 6}};
    frontier_set f = make_set(pts, 5);
    frontier_prune(&f);
    CU_ASSERT_EQUAL_FATAL(f.count, 3);
    const double want[][2] = {{1, 5}, {2, 3}, {3, 1}};
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_DOUBLE_EQUAL(f.points[i].time_s, want[i][0], 0);
        CU_ASSERT_DOUBLE_EQUAL(f.points[i].memory_bytes, want[i][1], 0);
    }
    CU_ASSERT_EQUAL(f.points[0].left, 1); /* provenance survives the sort */
    frontier_set_free(&f);
}

/* A point equal to another within 1e-9 is the same point; one equal in time
 * but with less memory replaces it. */
static void test_prune_treats_rounding_noise_as_equal(void)
{
    const double pts[][2] = {{1, 5}, {1 + 1e-13, 5 - 1e-12}, {1 + 1e-13, 3}};
    frontier_set f = make_set(pts, 3);
    frontier_prune(&f);
    CU_ASSERT_EQUAL(f.count, 1);
    CU_ASSERT_DOUBLE_EQUAL(f.points[0].memory_bytes, 3, 0);
    frontier_set_free(&f);
}

/* A = {(1,4), (2,1)}, B = {(1,3), (3,0)}: sums (2,7), (4,4), (3,4), (5,1);
 * (4,4) is beaten by (3,4): the Pareto-sum is (2,7), (3,4), (5,1). */
static void test_sum_is_pareto_of_pairwise_sums(void)
{
    const double a_pts[][2] = {{1, 4}, {2, 1}}, b_pts[][2] = {{1, 3}, {3, 0}};
    frontier_set a = make_set(a_pts, 2), b = make_set(b_pts, 2), out;
    frontier_set_init(&out);
    CU_ASSERT_EQUAL_FATAL(frontier_sum(&a, &b, &out), 0);
    CU_ASSERT_EQUAL_FATAL(out.count, 3);
    CU_ASSERT(has_point(&out, 2, 7));
    CU_ASSERT(has_point(&out, 3, 4));
    CU_ASSERT(has_point(&out, 5, 1));
    /* (3,4) = a[1] + b[0] */
    for (int i = 0; i < out.count; i++)
        if (out.points[i].time_s == 3) {
            CU_ASSERT_EQUAL(out.points[i].left, 1);
            CU_ASSERT_EQUAL(out.points[i].right, 0);
        }
    frontier_set_free(&a);
    frontier_set_free(&b);
    frontier_set_free(&out);
}

/* A = {(1,4), (2,1)}, B = {(1.5,2), (3,0.5), (2,2)}: (2,2) is beaten by
 * (2,1); the union is (1,4), (1.5,2), (2,1), (3,0.5). */
static void test_union_is_pareto_of_both_sets(void)
{
    const double a_pts[][2] = {{1, 4}, {2, 1}}, b_pts[][2] = {{1.5, 2}, {3, 0.5}, {2, 2}};
    frontier_set a = make_set(a_pts, 2), b = make_set(b_pts, 3);
    CU_ASSERT_EQUAL_FATAL(frontier_union(&a, &b, &a), 0); /* in place */
    CU_ASSERT_EQUAL_FATAL(a.count, 4);
    const double want[][2] = {{1, 4}, {1.5, 2}, {2, 1}, {3, 0.5}};
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_DOUBLE_EQUAL(a.points[i].time_s, want[i][0], 0);
        CU_ASSERT_DOUBLE_EQUAL(a.points[i].memory_bytes, want[i][1], 0);
    }
    frontier_set_free(&a);
    frontier_set_free(&b);
}

/* ---- 2. the chain DP against enumeration ----------------------------------- */

#define CHAIN_OPS 4
#define CHAIN_CONFIGS 3

/* Node c of operator i: one or two points; edges cost |c − c'| resharding
 * steps of (0.7 s, 2 bytes), and operator 2 forbids config 2 after config 0. */
static void chain_fixture(frontier_set nodes[CHAIN_OPS][CHAIN_CONFIGS],
                          double edge_t[CHAIN_CONFIGS * CHAIN_CONFIGS],
                          double edge_m[CHAIN_CONFIGS * CHAIN_CONFIGS],
                          double edge_t2[CHAIN_CONFIGS * CHAIN_CONFIGS])
{
    for (int i = 0; i < CHAIN_OPS; i++)
        for (int c = 0; c < CHAIN_CONFIGS; c++) {
            frontier_set_init(&nodes[i][c]);
            /* config c trades time for memory: more c, faster, more memory */
            double t = 10.0 - 3.0 * c + i, m = 1.0 + 2.5 * c + 0.5 * i;
            frontier_set_add(&nodes[i][c], t, m, 0, 0);
            if ((i + c) % 2 == 0)
                frontier_set_add(&nodes[i][c], t + 1.5, m - 0.75, 0, 0);
        }
    for (int a = 0; a < CHAIN_CONFIGS; a++)
        for (int b = 0; b < CHAIN_CONFIGS; b++) {
            int d = abs(a - b);
            edge_t[a * CHAIN_CONFIGS + b] = 0.7 * d;
            edge_m[a * CHAIN_CONFIGS + b] = 2.0 * d;
            edge_t2[a * CHAIN_CONFIGS + b] = a == 0 && b == 2 ? INFINITY : 0.7 * d;
        }
}

static void test_chain_with_resharding_edges_matches_enumeration(void)
{
    frontier_set nodes[CHAIN_OPS][CHAIN_CONFIGS];
    double et[9], em[9], et2[9];
    chain_fixture(nodes, et, em, et2);
    frontier_chain_op ops[CHAIN_OPS];
    for (int i = 0; i < CHAIN_OPS; i++)
        ops[i] = (frontier_chain_op){CHAIN_CONFIGS, nodes[i], i == 2 ? et2 : et, em};
    frontier_chain ch;
    CU_ASSERT_EQUAL_FATAL(frontier_chain_solve(ops, CHAIN_OPS, &ch), 0);

    /* enumerate 3^4 configurations × every node point */
    point_list all = {0};
    int cfg[CHAIN_OPS], pick[CHAIN_OPS];
    for (int code = 0; code < 81 * 16; code++) {
        int x = code, ok = 1;
        double t = 0, m = 0;
        for (int i = 0; i < CHAIN_OPS; i++, x /= 3)
            cfg[i] = x % 3;
        for (int i = 0; i < CHAIN_OPS; i++, x /= 2)
            pick[i] = x % 2;
        for (int i = 0; i < CHAIN_OPS && ok; i++) {
            const frontier_set *n = &nodes[i][cfg[i]];
            if (pick[i] >= n->count) {
                ok = 0;
                break;
            }
            t += n->points[pick[i]].time_s;
            m += n->points[pick[i]].memory_bytes;
            if (i > 0) {
                const double *edge_t = ops[i].edge_time_s;
                t += edge_t[cfg[i - 1] * 3 + cfg[i]];
                m += em[cfg[i - 1] * 3 + cfg[i]];
            }
        }
        if (ok && isfinite(t))
            list_add(&all, t, m);
    }
    point_list brute = pareto_brute(&all);
    assert_same_points(&ch.result, &brute);

    /* every result point unwinds to an assignment that costs exactly it */
    for (int k = 0; k < ch.result.count; k++) {
        frontier_chain_choice(&ch, k, cfg, pick);
        double t = 0, m = 0;
        for (int i = 0; i < CHAIN_OPS; i++) {
            t += nodes[i][cfg[i]].points[pick[i]].time_s;
            m += nodes[i][cfg[i]].points[pick[i]].memory_bytes;
            if (i > 0) {
                t += ops[i].edge_time_s[cfg[i - 1] * 3 + cfg[i]];
                m += em[cfg[i - 1] * 3 + cfg[i]];
            }
        }
        ASSERT_REL(t, ch.result.points[k].time_s, TOL);
        ASSERT_REL(m, ch.result.points[k].memory_bytes, TOL);
    }
    frontier_chain_free(&ch);
    for (int i = 0; i < CHAIN_OPS; i++)
        for (int c = 0; c < CHAIN_CONFIGS; c++)
            frontier_set_free(&nodes[i][c]);
    free(all.p);
    free(brute.p);
}

/* ---- 3. the cost function in closed form ----------------------------------- */

static cl_cluster free_cluster(void)
{
    cl_cluster c;
    memset(&c, 0, sizeof c);
    c.num_npus = 64;
    c.npus_per_node = 8;
    c.peak_flops = 1e15;
    c.matmul_efficiency = 1;
    c.hbm_bytes = 1e12;
    c.hbm_bandwidth_Bps = 1e30;
    c.scaleup_bandwidth_Bps = 1e30;
    c.scaleout_bandwidth_Bps = 1e30;
    return c;
}

/* Uniform stages of k layers (F = 1, B = 2), free communication: the 1F1B
 * iteration is (m + p − 1)·3k (Narayanan et al. SC'21 §2.2.1). */
static void test_plan_time_is_1f1b_critical_path_on_uniform_stages(void)
{
    cm_model cm;
    plan pl;
    cl_cluster c = free_cluster();
    test_uniform_model(&cm, 12);
    test_uniform_plan(&pl, 4, 8, 3, SCHED_1F1B);
    ASSERT_REL(frontier_plan_time_s(&cm, &c, &pl), (8 + 4 - 1) * 3.0 * 3, 1e-12);
    plan_free(&pl);
    cm_free(&cm);
}

/* p = 4 stages of k = 3 layers, m = 8, TP 1, DP 8 on 8-NPU servers, ranks in
 * Megatron's tp-dp-pp order: stage s is server s, so every boundary crosses
 * servers and each send costs c = α + bytes/B = 1e-3 + 1e6/1e9 = 2e-3 s on
 * the scale-out fabric.  Stage times S = 9 + 2c except the last (9):
 * Σ S = 36 + 6c, max S = 9 + 2c, T = 36 + 6c + 7(9 + 2c).  The 8 replicas of
 * a stage share its server: the ring all-reduce of the stage's 3e8 gradient
 * bytes runs on the scale-up fabric, 2·7·(α' + 3e8/(8·B')). */
static void test_plan_time_adds_boundary_sends_and_dp_allreduce(void)
{
    cm_model cm;
    plan pl;
    cl_cluster c = free_cluster();
    c.scaleout_bandwidth_Bps = 1e9;
    c.scaleout_latency_s = 1e-3;
    c.scaleup_bandwidth_Bps = 1e10;
    c.scaleup_latency_s = 1e-4;
    test_uniform_model(&cm, 12);
    for (int l = 0; l < 12; l++) {
        cm.layers[l].output_bytes = 1e6;
        cm.layers[l].grad_bytes = 1e8;
    }
    test_uniform_plan(&pl, 4, 8, 3, SCHED_1F1B);
    pl.data_parallel = 8;
    double send = 1e-3 + 1e6 / 1e9;
    double allreduce = 2.0 * 7 * (1e-4 + 3e8 / (8 * 1e10));
    double want = 36 + 6 * send + 7 * (9 + 2 * send) + allreduce;
    ASSERT_REL(frontier_plan_time_s(&cm, &c, &pl), want, 1e-12);
    plan_free(&pl);
    cm_free(&cm);
}

void register_frontier_tests(void)
{
    TEST_SUITE(
        "frontier",
        {"prune_keeps_strictly_decreasing_memory", test_prune_keeps_strictly_decreasing_memory},
        {"prune_treats_rounding_noise_as_equal", test_prune_treats_rounding_noise_as_equal},
        {"sum_is_pareto_of_pairwise_sums", test_sum_is_pareto_of_pairwise_sums},
        {"union_is_pareto_of_both_sets", test_union_is_pareto_of_both_sets},
        {"chain_with_resharding_edges_matches_enumeration",
         test_chain_with_resharding_edges_matches_enumeration},
        {"plan_time_is_1f1b_critical_path_on_uniform_stages",
         test_plan_time_is_1f1b_critical_path_on_uniform_stages},
        {"plan_time_adds_boundary_sends_and_dp_allreduce",
         test_plan_time_adds_boundary_sends_and_dp_allreduce});
}
