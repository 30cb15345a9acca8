/*
 * test_frontier_job.c -- TensorOpt frontier tracking on whole jobs
 * (planner/search/frontier.h): the job's frontier, the ft planner, the
 * device-count sweep and the frontier CSV.
 *
 * Every tuple and every per-layer recompute vector of a small model is
 * priced the way the frontier promises: time by frontier_plan_time_s() on
 * the plan, memory by the memory model's mem_stage_bytes() on the plan, and
 * the non-dominated points filtered by the O(n²) definition
 * (pareto_testutil.h), so the frontier's stage-by-stage decomposition is
 * checked against the whole plan.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frontier.h"
#include "memory.h"
#include "pareto_testutil.h"
#include "planner.h"
#include "testutil.h"

#define TOL PARETO_TOL

/* ---- the job's frontier against brute force ---------------------------- */

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

void register_frontier_job_tests(void)
{
    TEST_SUITE(
        "frontier_job",
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
