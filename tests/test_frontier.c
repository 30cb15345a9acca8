/*
 * test_frontier.c -- TensorOpt frontier tracking (planner/search/frontier.h).
 *
 * The Pareto algebra is checked on hand-made sets whose frontiers are worked
 * out in the comments; the chain DP and the job's frontier against brute
 * force: every assignment (every configuration of every operator; every
 * tuple and every per-layer recompute vector of a small model) is priced, and
 * the non-dominated points are filtered by the O(n²) definition.  Job points
 * are priced the way the frontier promises: time by frontier_plan_time_s() on
 * the plan, memory by the memory model's mem_stage_bytes() on the plan, so
 * the frontier's stage-by-stage decomposition is checked against the whole
 * plan.  The time formula itself is checked in closed form on uniform stages.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frontier.h"
#include "memory.h"
#include "planner.h"
#include "testutil.h"

#define TOL 1e-9

/* ---- brute-force Pareto filter -------------------------------------------- */

typedef struct point2 {
    double t, m;
} point2;

typedef struct point_list {
    int count, capacity;
    point2 *p;
} point_list;

static void list_add(point_list *l, double t, double m)
{
    if (l->count == l->capacity) {
        l->capacity = l->capacity ? 2 * l->capacity : 256;
        l->p = realloc(l->p, (size_t)l->capacity * sizeof *l->p);
    }
    l->p[l->count++] = (point2){t, m};
}

static bool close_to(double a, double b) { return fabs(a - b) <= TOL * fmax(fabs(a), fabs(b)); }

static bool at_most(double a, double b) { return a <= b || close_to(a, b); }

/* The definition: q dominates p when q is no worse in both coordinates and
 * not the same point. */
static bool dominated_by(point2 q, point2 p)
{
    return at_most(q.t, p.t) && at_most(q.m, p.m) && !(close_to(q.t, p.t) && close_to(q.m, p.m));
}

/* Non-dominated points of l, one per group of equal points. */
static point_list pareto_brute(const point_list *l)
{
    point_list out = {0};
    for (int i = 0; i < l->count; i++) {
        bool keep = true;
        for (int j = 0; j < l->count && keep; j++)
            keep = !dominated_by(l->p[j], l->p[i]);
        for (int k = 0; k < out.count && keep; k++)
            keep = !(close_to(out.p[k].t, l->p[i].t) && close_to(out.p[k].m, l->p[i].m));
        if (keep)
            list_add(&out, l->p[i].t, l->p[i].m);
    }
    return out;
}

/* Every point of the frontier set is one of the brute-force points and the
 * counts are equal. */
static void assert_same_points(const frontier_set *f, const point_list *brute)
{
    CU_ASSERT_EQUAL(f->count, brute->count);
    for (int i = 0; i < f->count; i++) {
        bool found = false;
        for (int k = 0; k < brute->count && !found; k++)
            found = close_to(brute->p[k].t, f->points[i].time_s) &&
                    close_to(brute->p[k].m, f->points[i].memory_bytes);
        if (!found)
            fprintf(stderr, "\n  frontier point (%.12g, %.12g) is not a brute-force point\n",
                    f->points[i].time_s, f->points[i].memory_bytes);
        CU_ASSERT(found);
    }
}

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

/* ---- 4. the job's frontier against brute force ---------------------------- */

/* file cut to num_layers, with one more override unless NULL */
static void load_small_with(const char *file, int num_layers, const char *extra, wl_workload *w)
{
    char override[64];
    snprintf(override, sizeof override, "model.num_layers=%d", num_layers);
    const char *ov[] = {override, extra};
    np_error err;
    CU_ASSERT_EQUAL_FATAL(wl_load(test_path(file), ov, extra ? 2 : 1, w, &err), 0);
}

static void load_small(const char *file, int num_layers, wl_workload *w)
{
    load_small_with(file, num_layers, NULL, w);
}

typedef struct brute_point {
    int tp, pp, dp, b;
    double t, m;
} brute_point;

typedef struct brute_set {
    int count, capacity;
    brute_point *p;
} brute_set;

/* Prices every recompute vector (decoder layers none / selective / full,
 * embedding and head none) of one tuple. */
static void brute_tuple(const wl_workload *w, const cl_cluster *c, int tp, int pp, int dp, int b,
                        brute_set *out)
{
    wl_workload wc = *w;
    wc.parallel.tensor_model_parallel_size = tp;
    wc.parallel.pipeline_model_parallel_size = pp;
    wc.parallel.data_parallel_size = dp;
    wc.training.micro_batch_size = b;
    cm_model cm;
    CU_ASSERT_EQUAL_FATAL(cm_build(&wc, c, b, &cm, NULL), 0);
    planner_options o;
    planner_init_options(&o, &wc);
    o.recompute = RECOMPUTE_NONE;
    plan pl;
    CU_ASSERT_EQUAL_FATAL(planner_megatron(&cm, c, &wc, &o, &pl, NULL), 0);
    int L = w->model.num_layers, combos = 1;
    for (int i = 0; i < L; i++)
        combos *= 3;
    for (int code = 0; code < combos; code++) {
        for (int i = 0, x = code; i < L; i++, x /= 3)
            pl.recompute[1 + i] = (recompute_kind)(x % 3);
        if (out->count == out->capacity) {
            out->capacity = out->capacity ? 2 * out->capacity : 1024;
            out->p = realloc(out->p, (size_t)out->capacity * sizeof *out->p);
        }
        out->p[out->count++] = (brute_point){
            tp, pp, dp, b, frontier_plan_time_s(&cm, c, &pl), test_largest_stage_bytes(&cm, &pl)};
    }
    plan_free(&pl);
    cm_free(&cm);
}

/* Every tuple of n devices, by the rules of the TensorOpt task: tp ≤ 8 per
 * server dividing heads, query groups and FFN width; pp ≤ layers; dp divides
 * the global batch; b a power of two dividing G/dp. */
static brute_set brute_job(const wl_workload *w, const cl_cluster *c, int n)
{
    brute_set all = {0};
    const wl_model *md = &w->model;
    long G = w->training.global_batch_size;
    for (int tp = 1; tp <= 8 && tp <= n; tp++) {
        if (n % tp || md->num_attention_heads % tp || md->num_query_groups % tp ||
            md->ffn_hidden_size % tp)
            continue;
        for (int pp = 1; pp <= md->num_layers && pp <= n / tp; pp++) {
            if ((n / tp) % pp)
                continue;
            int dp = n / tp / pp;
            if (G % dp)
                continue;
            for (int b = 1; (G / dp) % b == 0 && b <= G / dp; b *= 2)
                brute_tuple(w, c, tp, pp, dp, b, &all);
        }
    }
    return all;
}

static point_list brute_frontier(const brute_set *all)
{
    point_list pts = {0};
    for (int i = 0; i < all->count; i++)
        list_add(&pts, all->p[i].t, all->p[i].m);
    point_list front = pareto_brute(&pts);
    free(pts.p);
    return front;
}

static void assert_frontier_is_brute_force(const char *file, int num_layers, int devices,
                                           const char *extra)
{
    wl_workload w;
    load_small_with(file, num_layers, extra, &w);
    cl_cluster c = test_npu_cluster(devices, 8);
    frontier f;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(frontier_compute(&w, &c, devices, &f, &err), 0);
    brute_set all = brute_job(&w, &c, devices);
    point_list front = brute_frontier(&all);
    frontier_set got;
    frontier_set_init(&got);
    for (int i = 0; i < f.count; i++)
        frontier_set_add(&got, f.entries[i].iteration_s, f.entries[i].memory_bytes, i, 0);
    CU_ASSERT(front.count > 1); /* a real trade-off, not a single point */
    assert_same_points(&got, &front);
    frontier_set_free(&got);
    free(front.p);
    free(all.p);
    frontier_free(&f);
    wl_free(&w);
}

/* small_gpt cut to 5 layers on 8 NPUs: 35 tuples × 3^5 recompute vectors. */
static void test_small_gpt_frontier_equals_brute_force(void)
{
    assert_frontier_is_brute_force("workloads/small_gpt.json", 5, 8, NULL);
}

/* The same with ZeRO-2, blocking: its reduce-scatters are in each stage's
 * time but not on the pipeline's fill and drain (predict.h), in the sweep's
 * stage sums as in the plan's prediction. */
static void test_zero2_frontier_equals_brute_force(void)
{
    assert_frontier_is_brute_force("workloads/small_gpt.json", 5, 8,
                                   "training.data_parallel_sharding_strategy=optim_grads");
}

/* small_llama (GQA, SwiGLU, SP, distributed optimizer) cut to 4 layers on 16
 * NPUs, two servers: 36 tuples × 3^4 vectors, cross-server boundaries. */
static void test_small_llama_frontier_equals_brute_force(void)
{
    assert_frontier_is_brute_force("workloads/small_llama.json", 4, 16, NULL);
}

/* HBM halfway between the least and the most memory any configuration
 * needs: the frontier's fastest fitting entry is the brute-force optimum. */
static void test_fastest_fitting_equals_brute_force(void)
{
    wl_workload w;
    load_small("workloads/small_llama.json", 4, &w);
    cl_cluster c = test_npu_cluster(16, 8);
    brute_set all = brute_job(&w, &c, 16);
    double lo = INFINITY, hi = 0;
    for (int i = 0; i < all.count; i++) {
        lo = fmin(lo, all.p[i].m);
        hi = fmax(hi, all.p[i].m);
    }
    c.hbm_bytes = (lo + hi) / 2;
    double best = INFINITY;
    for (int i = 0; i < all.count; i++)
        if (all.p[i].m <= c.hbm_bytes)
            best = fmin(best, all.p[i].t);
    frontier f;
    CU_ASSERT_EQUAL_FATAL(frontier_compute(&w, &c, 16, &f, NULL), 0);
    int k = frontier_fastest_fitting(&f, 16);
    CU_ASSERT_FATAL(k >= 0);
    ASSERT_REL(f.entries[k].iteration_s, best, TOL);
    CU_ASSERT(f.entries[k].memory_bytes <= c.hbm_bytes);
    frontier_free(&f);
    free(all.p);
    wl_free(&w);
}

/* Every entry's plan, rebuilt on its own cost model, passes the memory check
 * exactly when the entry says it fits, and costs what the entry says. */
static void test_entry_plans_fit_when_marked_fits(void)
{
    wl_workload w;
    load_small("workloads/small_llama.json", 4, &w);
    cl_cluster c = test_npu_cluster(16, 8);
    frontier f;
    CU_ASSERT_EQUAL_FATAL(frontier_compute(&w, &c, 16, &f, NULL), 0);
    /* HBM halfway along the frontier's memory range, so that both kinds occur */
    c.hbm_bytes = (f.entries[0].memory_bytes + f.entries[f.count - 1].memory_bytes) / 2;
    frontier_free(&f);
    CU_ASSERT_EQUAL_FATAL(frontier_compute(&w, &c, 16, &f, NULL), 0);
    int fitting = 0;
    for (int i = 0; i < f.count; i++) {
        const frontier_entry *e = &f.entries[i];
        plan pl;
        wl_workload wc;
        cm_model cm;
        CU_ASSERT_EQUAL_FATAL(frontier_entry_plan(&w, &c, e, &pl, NULL), 0);
        frontier_workload_for_plan(&w, &pl, &wc);
        CU_ASSERT_EQUAL(wl_check_cluster(&wc, 16, NULL), 0);
        CU_ASSERT_EQUAL_FATAL(cm_build(&wc, &c, 0, &cm, NULL), 0);
        CU_ASSERT_EQUAL(plan_check(&pl, "test", NULL), 0);
        CU_ASSERT_EQUAL(mem_check_fits(&cm, &pl, NULL) == 0, e->fits);
        ASSERT_REL(test_largest_stage_bytes(&cm, &pl), e->memory_bytes, TOL);
        ASSERT_REL(frontier_plan_time_s(&cm, &c, &pl), e->iteration_s, TOL);
        fitting += e->fits;
        plan_free(&pl);
        cm_free(&cm);
    }
    CU_ASSERT(fitting > 0 && fitting < f.count);
    frontier_free(&f);
    wl_free(&w);
}

/* The planner "ft" is registered and returns the brute-force fastest
 * fitting plan for the workload's 8 devices. */
static void test_planner_ft_returns_fastest_fitting_plan(void)
{
    wl_workload w;
    load_small("workloads/small_gpt.json", 5, &w);
    cl_cluster c = test_npu_cluster(8, 8);
    brute_set all = brute_job(&w, &c, 8);
    double lo = INFINITY, hi = 0, best = INFINITY;
    for (int i = 0; i < all.count; i++) {
        lo = fmin(lo, all.p[i].m);
        hi = fmax(hi, all.p[i].m);
    }
    c.hbm_bytes = lo + 0.25 * (hi - lo);
    for (int i = 0; i < all.count; i++)
        if (all.p[i].m <= c.hbm_bytes)
            best = fmin(best, all.p[i].t);
    const planner_desc *d = planner_find("ft");
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    cm_model cm;
    CU_ASSERT_EQUAL_FATAL(cm_build(&w, &c, 0, &cm, NULL), 0);
    planner_options o;
    planner_init_options(&o, &w);
    plan pl;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(d->run(&cm, &c, &w, &o, &pl, &err), 0);
    ASSERT_REL(pl.predicted_iteration_s, best, TOL);
    CU_ASSERT_EQUAL(pl.tensor_parallel * pl.num_stages * pl.data_parallel, 8);
    plan_free(&pl);
    cm_free(&cm);
    free(all.p);
    wl_free(&w);
}

static void test_planner_ft_rejects_other_schedules(void)
{
    wl_workload w;
    load_small("workloads/small_gpt.json", 5, &w);
    cl_cluster c = test_npu_cluster(8, 8);
    cm_model cm;
    CU_ASSERT_EQUAL_FATAL(cm_build(&w, &c, 0, &cm, NULL), 0);
    planner_options o;
    planner_init_options(&o, &w);
    o.schedule = SCHED_GPIPE;
    plan pl;
    np_error err;
    CU_ASSERT_EQUAL(planner_frontier(&cm, &c, &w, &o, &pl, &err), NP_EXIT_INPUT);
    CU_ASSERT_STRING_EQUAL(err.key, "schedule");
    cm_free(&cm);
    wl_free(&w);
}

/* With HBM below every 1- and 2-device configuration's need but above some
 * 4-device one (brute force), the sweep starts at 4 and then lists 4 and 8. */
static void test_sweep_starts_at_smallest_fitting_device_count(void)
{
    wl_workload w;
    load_small("workloads/small_gpt.json", 5, &w);
    cl_cluster c = test_npu_cluster(8, 8);
    double least[4];
    for (int k = 0; k < 4; k++) {
        brute_set all = brute_job(&w, &c, 1 << k);
        least[k] = INFINITY;
        for (int i = 0; i < all.count; i++)
            least[k] = fmin(least[k], all.p[i].m);
        free(all.p);
    }
    CU_ASSERT_FATAL(least[2] < least[1]);
    c.hbm_bytes = (least[2] + fmin(least[0], least[1])) / 2;
    frontier f;
    CU_ASSERT_EQUAL_FATAL(frontier_sweep(&w, &c, false, &f, NULL), 0);
    CU_ASSERT_FATAL(f.count > 0);
    CU_ASSERT_EQUAL(f.entries[0].devices, 4);
    bool seen8 = false;
    for (int i = 0; i < f.count; i++) {
        CU_ASSERT(f.entries[i].devices >= 4);
        seen8 = seen8 || f.entries[i].devices == 8;
    }
    CU_ASSERT(seen8);
    frontier_free(&f);
    wl_free(&w);
}

/* simrun --frontier --dp-overlap: the sweep passes the ZeRO overlap to every
 * device count, so its entries for N = 8 are frontier_compute_with()'s for
 * 8 devices with the overlap, not those without it. */
static void test_sweep_takes_the_zero_overlap(void)
{
    wl_workload w;
    const char *ov[] = {"model.num_layers=5",
                        "training.data_parallel_sharding_strategy=optim_grads"};
    np_error err;
    CU_ASSERT_EQUAL_FATAL(wl_load(test_path("workloads/small_gpt.json"), ov, 2, &w, &err), 0);
    cl_cluster c = test_npu_cluster(8, 8);
    frontier with, without, eight;
    CU_ASSERT_EQUAL_FATAL(frontier_sweep(&w, &c, true, &with, NULL), 0);
    CU_ASSERT_EQUAL_FATAL(frontier_sweep(&w, &c, false, &without, NULL), 0);
    CU_ASSERT_EQUAL_FATAL(frontier_compute_with(&w, &c, 8, true, &eight, NULL), 0);
    CU_ASSERT(with.zero_overlap);
    int k = 0;
    for (int i = 0; i < with.count; i++) {
        if (with.entries[i].devices != 8)
            continue;
        CU_ASSERT_FATAL(k < eight.count);
        CU_ASSERT_DOUBLE_EQUAL(with.entries[i].memory_bytes, eight.entries[k].memory_bytes, 0.0);
        CU_ASSERT_DOUBLE_EQUAL(with.entries[i].iteration_s, eight.entries[k].iteration_s, 0.0);
        k++;
    }
    CU_ASSERT_EQUAL(k, eight.count);
    /* and the overlap matters here, so a sweep that dropped it would fail
     * the comparison above: the same tuples priced without it differ */
    frontier plain;
    CU_ASSERT_EQUAL_FATAL(frontier_compute_with(&w, &c, 8, false, &plain, NULL), 0);
    bool differs = plain.count != eight.count;
    for (int i = 0; !differs && i < eight.count; i++)
        differs = plain.entries[i].memory_bytes != eight.entries[i].memory_bytes;
    CU_ASSERT(differs);
    frontier_free(&plain);
    frontier_free(&with);
    frontier_free(&without);
    frontier_free(&eight);
    wl_free(&w);
}

/* The CSV has the header of analysis/README.md's "Frontier CSV" (plus
 * devices) and one row per entry. */
static void test_csv_has_header_and_one_row_per_entry(void)
{
    wl_workload w;
    load_small("workloads/small_gpt.json", 5, &w);
    cl_cluster c = test_npu_cluster(8, 8);
    frontier f;
    CU_ASSERT_EQUAL_FATAL(frontier_compute(&w, &c, 8, &f, NULL), 0);
    char path[] = "/tmp/npusim_frontier_XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    CU_ASSERT_EQUAL_FATAL(frontier_write_csv(path, &f, NULL), 0);
    FILE *in = fopen(path, "r");
    char line[512];
    CU_ASSERT_PTR_NOT_NULL_FATAL(fgets(line, sizeof line, in));
    CU_ASSERT_STRING_EQUAL(line, "devices,tp,pp,dp,micro_batch_size,recompute,iteration_s,"
                                 "memory_bytes,feasible,capacity_bytes\n");
    int rows = 0;
    while (fgets(line, sizeof line, in)) {
        int commas = 0;
        for (char *p = line; *p; p++)
            commas += *p == ',';
        CU_ASSERT_EQUAL(commas, 9);
        rows++;
    }
    fclose(in);
    remove(path);
    CU_ASSERT_EQUAL(rows, f.count);
    frontier_free(&f);
    wl_free(&w);
}

static void test_write_csv_to_missing_directory_is_an_error(void)
{
    frontier f = {0};
    np_error err;
    CU_ASSERT_EQUAL(frontier_write_csv("/nonexistent/dir/f.csv", &f, &err), NP_EXIT_INTERNAL);
    CU_ASSERT_STRING_EQUAL(err.source, "/nonexistent/dir/f.csv");
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
         test_plan_time_adds_boundary_sends_and_dp_allreduce},
        {"small_gpt_frontier_equals_brute_force", test_small_gpt_frontier_equals_brute_force},
        {"zero2_frontier_equals_brute_force", test_zero2_frontier_equals_brute_force},
        {"small_llama_frontier_equals_brute_force", test_small_llama_frontier_equals_brute_force},
        {"fastest_fitting_equals_brute_force", test_fastest_fitting_equals_brute_force},
        {"entry_plans_fit_when_marked_fits", test_entry_plans_fit_when_marked_fits},
        {"planner_ft_returns_fastest_fitting_plan", test_planner_ft_returns_fastest_fitting_plan},
        {"planner_ft_rejects_other_schedules", test_planner_ft_rejects_other_schedules},
        {"sweep_starts_at_smallest_fitting_device_count",
         test_sweep_starts_at_smallest_fitting_device_count},
        {"sweep_takes_the_zero_overlap", test_sweep_takes_the_zero_overlap},
        {"csv_has_header_and_one_row_per_entry", test_csv_has_header_and_one_row_per_entry},
        {"write_csv_to_missing_directory_is_an_error",
         test_write_csv_to_missing_directory_is_an_error});
}
