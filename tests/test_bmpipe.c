/*
 * test_bmpipe.c -- the BMPipe ILP planner (planner/search/planner_bmpipe.c) against
 * the exhaustive enumerator (planner/search/bruteforce.c) and closed forms.
 *
 * Models are synthetic and small (≤ 8 layers, ≤ 4 stages, 3 recompute
 * options) so that bf_search() can visit every partition × per-layer option
 * and evaluate the BMPipe objective directly from each plan, with the memory
 * verdict of mem_check_fits().  Heterogeneous layers are drawn from a seeded
 * generator; the device capacity is set below what the unconstrained optimum
 * needs, so the memory constraint binds (each case checks that it does).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bruteforce.h"
#include "memory.h"
#include "planner.h"
#include "testutil.h"

typedef struct job {
    cm_model cm;
    cl_cluster cluster;
    wl_workload w;
    planner_options o;
} job;

static void job_init(job *j, int num_layers, int p, int v, int m, schedule_kind sched)
{
    memset(j, 0, sizeof *j);
    j->cm.num_layers = num_layers;
    j->cm.layers = calloc((size_t)num_layers, sizeof *j->cm.layers);
    j->cm.micro_batch_size = 1;
    j->cm.tensor_parallel = 1;
    j->cm.data_parallel = 1;
    j->cm.hbm_bytes = 1e30;
    j->cm.hbm_bandwidth_Bps = 1e30;
    j->cm.weight_bytes_per_param = 2;
    /* 50 ms latency, 20 B/s: boundary sends of 1–2 bytes cost 0.1–0.15 s. */
    j->cluster.scaleout_latency_s = 0.05;
    j->cluster.scaleout_bandwidth_Bps = 20;
    strcpy(j->w.path, "<test>");
    j->w.parallel.pipeline_model_parallel_size = p;
    j->w.parallel.tensor_model_parallel_size = 1;
    j->w.parallel.data_parallel_size = 1;
    j->w.parallel.virtual_pipeline_model_parallel_size = v;
    j->w.parallel.expert_model_parallel_size = 1;
    j->w.training.micro_batch_size = 1;
    j->w.training.global_batch_size = m;
    j->w.schedule = sched;
    planner_init_options(&j->o, &j->w);
}

static void job_free(job *j) { free(j->cm.layers); }

/* Uniform in [0, 1), a fixed LCG so every run draws the same models. */
static double draw(unsigned *seed)
{
    *seed = *seed * 1103515245u + 12345u;
    return ((*seed >> 8) & 0xffffu) / 65536.0;
}

/* A layer with F in [1,2), B in [1.5,2.5), W in [0.5,1); selective
 * recompute costs 10–30% of F and keeps 20–50% of the bytes, full costs F
 * and keeps 5–15%. */
static void random_layer(cm_layer *ly, unsigned *seed)
{
    memset(ly, 0, sizeof *ly);
    ly->kind = CM_CUSTOM;
    ly->forward_s = 1 + draw(seed);
    ly->backward_s = 1.5 + draw(seed);
    ly->weight_grad_s = 0.5 + 0.5 * draw(seed);
    ly->recompute_s[RECOMPUTE_SELECTIVE] = ly->forward_s * (0.1 + 0.2 * draw(seed));
    ly->recompute_s[RECOMPUTE_FULL] = ly->forward_s;
    double kept = 10 + 10 * draw(seed);
    ly->activation_bytes[RECOMPUTE_NONE] = kept;
    ly->activation_bytes[RECOMPUTE_SELECTIVE] = kept * (0.2 + 0.3 * draw(seed));
    ly->activation_bytes[RECOMPUTE_FULL] = kept * (0.05 + 0.1 * draw(seed));
    ly->state_bytes = 20 + 20 * draw(seed);
    ly->params = ly->state_bytes / 16;
    ly->output_bytes = 1 + draw(seed);
}

/* The exhaustive optimum of the BMPipe objective; best gets the plan when
 * non-NULL. */
static double brute_force(const job *j, plan *best)
{
    int v = j->w.schedule == SCHED_INTERLEAVED ? j->o.num_chunks : 1;
    plan shape, found;
    bf_result res;
    plan_init(&shape, j->w.parallel.pipeline_model_parallel_size, v, j->cm.num_layers);
    planner_plan_basics(&shape, &j->w, &j->o);
    strcpy(shape.planner, "bruteforce");
    bf_bmpipe_ctx ctx = {&j->cm, &j->cluster};
    if (bf_search(&shape, BF_ALL_OPTIONS, bf_cost_bmpipe, &ctx, &found, &res) != 0) {
        plan_free(&shape);
        return NAN;
    }
    if (best)
        *best = found;
    else
        plan_free(&found);
    plan_free(&shape);
    return res.best_cost;
}

/* Sets the capacity to 80% of what the unconstrained optimum needs (more
 * when nothing fits there) and returns that unconstrained optimum. */
static double bind_memory(job *j)
{
    plan free_best;
    j->cm.hbm_bytes = 1e30;
    double unconstrained = brute_force(j, &free_best);
    double needed = test_largest_stage_bytes(&j->cm, &free_best);
    plan_free(&free_best);
    for (double fraction = 0.8; fraction < 1.0; fraction += 0.05) {
        j->cm.hbm_bytes = fraction * needed;
        if (isfinite(brute_force(j, NULL)))
            break;
    }
    return unconstrained;
}

static int run_bmpipe(job *j, bmpipe_form form, plan *out)
{
    np_error err;
    int rc = planner_bmpipe_form(&j->cm, &j->cluster, &j->w, &j->o, form, out, &err);
    if (rc)
        fprintf(stderr, "\n  bmpipe: %s\n", err.text);
    return rc;
}

/* ---- heterogeneous layers: the ILP against brute force ---------------------- */

typedef struct random_case {
    int layers, stages, micro_batches;
    unsigned seed;
} random_case;

static const random_case random_cases[] = {
    {6, 2, 4, 1}, {7, 3, 5, 2}, {8, 3, 6, 3}, {8, 4, 8, 4}, {7, 4, 4, 5}, {5, 2, 2, 6},
};
#define NUM_RANDOM_CASES (int)(sizeof random_cases / sizeof random_cases[0])

static double random_job(job *j, const random_case *rc)
{
    unsigned seed = rc->seed;
    job_init(j, rc->layers, rc->stages, 1, rc->micro_batches, SCHED_1F1B);
    for (int l = 0; l < rc->layers; l++)
        random_layer(&j->cm.layers[l], &seed);
    return bind_memory(j);
}

static void test_binary_form_matches_bruteforce_when_memory_binds(void)
{
    for (int i = 0; i < NUM_RANDOM_CASES; i++) {
        job j;
        plan pl;
        double unconstrained = random_job(&j, &random_cases[i]);
        double optimum = brute_force(&j, NULL);
        CU_ASSERT(optimum > unconstrained * (1 + 1e-9)); /* the memory constraint binds */
        CU_ASSERT_EQUAL_FATAL(run_bmpipe(&j, BMPIPE_FORM_AUTO, &pl), 0);
        CU_ASSERT(strstr(pl.solver_status, "binary") != NULL);
        ASSERT_REL(pl.predicted_iteration_s, optimum, 1e-9);
        bf_bmpipe_ctx ctx = {&j.cm, &j.cluster};
        ASSERT_REL(bf_cost_bmpipe(&pl, &ctx), optimum, 1e-9);
        plan_free(&pl);
        job_free(&j);
    }
}

static void test_plan_fits_memory_when_memory_binds(void)
{
    for (int i = 0; i < NUM_RANDOM_CASES; i++) {
        job j;
        plan pl;
        random_job(&j, &random_cases[i]);
        CU_ASSERT_EQUAL_FATAL(run_bmpipe(&j, BMPIPE_FORM_BINARY, &pl), 0);
        CU_ASSERT_EQUAL(plan_check(&pl, "<test>", NULL), 0);
        CU_ASSERT_EQUAL(mem_check_fits(&j.cm, &pl, NULL), 0);
        plan_free(&pl);
        job_free(&j);
    }
}

/* Interleaved (p = 2, v = 2): the memory rows follow the held counts of
 * Megatron's order at every backward, which is what mem_check_fits()
 * replays, so the ILP's optimum is brute force's (an α-per-chunk row plus
 * the largest transient would exclude fitting plans and miss it). */
static const random_case interleaved_cases[] = {
    {6, 2, 4, 31}, {7, 2, 4, 32}, {6, 2, 6, 33}, {7, 2, 8, 34}, {6, 2, 2, 35},
};

#define NUM_INTERLEAVED_CASES (int)(sizeof interleaved_cases / sizeof interleaved_cases[0])

/* Interleaved case c (v = 2) with its memory bound; returns the unconstrained
 * optimum, as random_job(). */
static double interleaved_job(job *j, const random_case *c)
{
    unsigned seed = c->seed;
    job_init(j, c->layers, c->stages, 2, c->micro_batches, SCHED_INTERLEAVED);
    j->o.num_chunks = 2;
    for (int l = 0; l < c->layers; l++)
        random_layer(&j->cm.layers[l], &seed);
    return bind_memory(j);
}

static void test_interleaved_binary_form_matches_bruteforce_when_memory_binds(void)
{
    for (int i = 0; i < NUM_INTERLEAVED_CASES; i++) {
        job j;
        plan pl;
        double unconstrained = interleaved_job(&j, &interleaved_cases[i]);
        double optimum = brute_force(&j, NULL);
        CU_ASSERT(optimum > unconstrained * (1 + 1e-9)); /* the memory constraint binds */
        CU_ASSERT_EQUAL_FATAL(run_bmpipe(&j, BMPIPE_FORM_BINARY, &pl), 0);
        ASSERT_REL(pl.predicted_iteration_s, optimum, 1e-9);
        CU_ASSERT_EQUAL(mem_check_fits(&j.cm, &pl, NULL), 0);
        CU_ASSERT(strncmp(pl.solver_status, "optimal", 7) == 0);
        plan_free(&pl);
        job_free(&j);
    }
}

/* The same interleaved cases with overlap_p2p_comm: the steady state's
 * sends leave the bottleneck tau (c_l = 0, docs/planners.md), in the ILP and
 * in the brute-force objective alike, so the ILP still finds brute force's
 * optimum, and that optimum is below the blocking one (this cluster's sends
 * cost 0.05 s + bytes/20). */
static void test_interleaved_with_overlap_p2p_matches_bruteforce(void)
{
    for (int i = 0; i < NUM_INTERLEAVED_CASES; i++) {
        job j;
        plan pl;
        interleaved_job(&j, &interleaved_cases[i]);
        double blocking = brute_force(&j, NULL);
        j.cm.overlap_p2p = true;
        double optimum = brute_force(&j, NULL);
        CU_ASSERT(optimum < blocking);
        CU_ASSERT_EQUAL_FATAL(run_bmpipe(&j, BMPIPE_FORM_BINARY, &pl), 0);
        ASSERT_REL(pl.predicted_iteration_s, optimum, 1e-9);
        CU_ASSERT_EQUAL(mem_check_fits(&j.cm, &pl, NULL), 0);
        plan_free(&pl);
        job_free(&j);
    }
}

static void test_proven_optimum_reports_zero_gap(void)
{
    job j;
    plan pl;
    random_job(&j, &random_cases[1]);
    CU_ASSERT_EQUAL_FATAL(run_bmpipe(&j, BMPIPE_FORM_AUTO, &pl), 0);
    CU_ASSERT_EQUAL(pl.solver_gap, 0.0);
    CU_ASSERT(strncmp(pl.solver_status, "optimal", 7) == 0);
    plan_free(&pl);
    job_free(&j);
}

/* ---- identical layers: the count form --------------------------------------- */

/* An embedding-like first layer and a head-like last layer around n
 * identical random layers. */
static void identical_job(job *j, int num_layers, int p, int v, int m, unsigned seed)
{
    job_init(j, num_layers, p, v, m, v > 1 ? SCHED_INTERLEAVED : SCHED_1F1B);
    j->o.num_chunks = v;
    cm_layer middle;
    random_layer(&middle, &seed);
    random_layer(&j->cm.layers[0], &seed);
    random_layer(&j->cm.layers[num_layers - 1], &seed);
    j->cm.layers[0].forward_s *= 0.2; /* lighter ends, as embedding and head are */
    j->cm.layers[num_layers - 1].backward_s *= 0.5;
    for (int l = 1; l < num_layers - 1; l++)
        j->cm.layers[l] = middle;
}

typedef struct identical_case {
    int layers, stages, chunks, micro_batches;
    unsigned seed;
} identical_case;

static const identical_case identical_cases[] = {
    {8, 2, 1, 4, 11}, {8, 3, 1, 6, 12}, {8, 4, 1, 8, 13}, {7, 4, 1, 3, 14},
    {8, 2, 2, 4, 15}, {7, 2, 2, 4, 16}, {6, 2, 2, 6, 17}, {8, 2, 2, 8, 18},
};

static void test_count_form_equals_binary_form_on_identical_layers(void)
{
    for (int i = 0; i < (int)(sizeof identical_cases / sizeof identical_cases[0]); i++) {
        const identical_case *c = &identical_cases[i];
        job j;
        plan counts, binary;
        identical_job(&j, c->layers, c->stages, c->chunks, c->micro_batches, c->seed);
        double unconstrained = bind_memory(&j);
        CU_ASSERT_EQUAL_FATAL(run_bmpipe(&j, BMPIPE_FORM_COUNTS, &counts), 0);
        CU_ASSERT_EQUAL_FATAL(run_bmpipe(&j, BMPIPE_FORM_BINARY, &binary), 0);
        ASSERT_REL(counts.predicted_iteration_s, binary.predicted_iteration_s, 1e-9);
        CU_ASSERT(counts.predicted_iteration_s > unconstrained * (1 + 1e-9));
        CU_ASSERT_EQUAL(mem_check_fits(&j.cm, &counts, NULL), 0);
        /* the memory rows are exact, interleaved chunks included */
        ASSERT_REL(counts.predicted_iteration_s, brute_force(&j, NULL), 1e-9);
        plan_free(&counts);
        plan_free(&binary);
        job_free(&j);
    }
}

static void test_auto_form_uses_counts_on_identical_layers(void)
{
    job j;
    plan pl;
    identical_job(&j, 8, 3, 1, 6, 21);
    CU_ASSERT_EQUAL_FATAL(run_bmpipe(&j, BMPIPE_FORM_AUTO, &pl), 0);
    CU_ASSERT(strstr(pl.solver_status, "count") != NULL);
    plan_free(&pl);
    job_free(&j);
}

static void test_count_form_refuses_heterogeneous_layers(void)
{
    job j;
    plan pl;
    np_error err;
    random_job(&j, &random_cases[0]);
    CU_ASSERT_EQUAL(
        planner_bmpipe_form(&j.cm, &j.cluster, &j.w, &j.o, BMPIPE_FORM_COUNTS, &pl, &err),
        NP_EXIT_INPUT);
    job_free(&j);
}

/* ---- closed forms ----------------------------------------------------------- */

/* 12 layers of F = 1, B = 2 on 4 stages, m = 8, ample memory, free
 * communication: 3 layers per stage, T = (m + p − 1)(F + B)·L/p = 11·3·3 = 99. */
static void test_uniform_layers_give_uniform_partition(void)
{
    job j;
    plan pl;
    job_init(&j, 12, 4, 1, 8, SCHED_1F1B);
    free(j.cm.layers);
    test_uniform_model(&j.cm, 12);
    j.cluster.scaleout_latency_s = 0;
    j.cluster.scaleout_bandwidth_Bps = INFINITY;
    CU_ASSERT_EQUAL_FATAL(run_bmpipe(&j, BMPIPE_FORM_AUTO, &pl), 0);
    for (int s = 0; s <= 4; s++)
        CU_ASSERT_EQUAL(pl.chunk_start[s], 3 * s);
    ASSERT_REL(pl.predicted_iteration_s, (8 + 4 - 1) * 3.0 * 12 / 4, 1e-12);
    plan_free(&pl);
    job_free(&j);
}

/* Interleaved, 16 uniform layers on 4 stages × 2 chunks, m = 8: every stage
 * holds 4 layers (12 s per micro-batch) and T = (m + (p−1)/v)·12 = 114, the
 * least T can be: Σ_s (F_s+B_s) = 48 is fixed and τ ≥ 48/4. */
static void test_uniform_interleaved_gives_megatron_time(void)
{
    job j;
    plan pl;
    job_init(&j, 16, 4, 2, 8, SCHED_INTERLEAVED);
    j.o.num_chunks = 2;
    free(j.cm.layers);
    test_uniform_model(&j.cm, 16);
    j.cluster.scaleout_latency_s = 0;
    j.cluster.scaleout_bandwidth_Bps = INFINITY;
    CU_ASSERT_EQUAL_FATAL(run_bmpipe(&j, BMPIPE_FORM_AUTO, &pl), 0);
    ASSERT_REL(pl.predicted_iteration_s, (8 + 3.0 / 2) * 12, 1e-12);
    for (int s = 0; s < 4; s++) {
        int layers = 0;
        for (int c = 0; c < 2; c++)
            layers += pl.chunk_start[c * 4 + s + 1] - pl.chunk_start[c * 4 + s];
        CU_ASSERT_EQUAL(layers, 4);
    }
    plan_free(&pl);
    job_free(&j);
}

/* ---- failures and limits ---------------------------------------------------- */

static void test_no_fitting_plan_is_nofit(void)
{
    job j;
    plan pl;
    np_error err;
    random_job(&j, &random_cases[2]);
    j.cm.hbm_bytes = 30; /* less than the state of two layers */
    CU_ASSERT_EQUAL(planner_bmpipe_form(&j.cm, &j.cluster, &j.w, &j.o, BMPIPE_FORM_AUTO, &pl, &err),
                    NP_EXIT_NOFIT);
    CU_ASSERT_EQUAL(err.code, NP_EXIT_NOFIT);
    job_free(&j);
}

/* 60 heterogeneous layers on 8 stages: the binary form has 60 × 8 × 3
 * assignment variables; with a 1 s limit the planner still returns a plan
 * that fits (GLPK starts from the heuristic incumbent) and a gap ≥ 0. */
static void test_binary_form_stops_at_time_limit_with_a_fitting_plan(void)
{
    job j;
    plan pl;
    unsigned seed = 7;
    job_init(&j, 60, 8, 1, 16, SCHED_1F1B);
    for (int l = 0; l < 60; l++)
        random_layer(&j.cm.layers[l], &seed);
    j.cm.hbm_bytes = 380; /* ~12 layers of state: early stages must recompute */
    j.o.time_limit_s = 1.0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CU_ASSERT_EQUAL_FATAL(run_bmpipe(&j, BMPIPE_FORM_BINARY, &pl), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double wall = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
    CU_ASSERT(wall < 3.0);
    CU_ASSERT_EQUAL(mem_check_fits(&j.cm, &pl, NULL), 0);
    CU_ASSERT(pl.solver_gap >= 0.0);
    bf_bmpipe_ctx ctx = {&j.cm, &j.cluster};
    ASSERT_REL(bf_cost_bmpipe(&pl, &ctx), pl.predicted_iteration_s, 1e-9);
    plan_free(&pl);
    job_free(&j);
}

static void test_planner_run_accepts_bmpipe_plan(void)
{
    job j;
    plan pl;
    np_error err;
    random_job(&j, &random_cases[0]);
    const planner_desc *d = planner_find("bmpipe");
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    CU_ASSERT_EQUAL_FATAL(planner_run(d, &j.cm, &j.cluster, &j.w, &j.o, &pl, &err), 0);
    CU_ASSERT_STRING_EQUAL(pl.planner, "bmpipe");
    plan_free(&pl);
    job_free(&j);
}

void register_bmpipe_tests(void)
{
    TEST_SUITE(
        "bmpipe",
        {"binary_form_matches_bruteforce_when_memory_binds",
         test_binary_form_matches_bruteforce_when_memory_binds},
        {"plan_fits_memory_when_memory_binds", test_plan_fits_memory_when_memory_binds},
        {"interleaved_binary_form_matches_bruteforce_when_memory_binds",
         test_interleaved_binary_form_matches_bruteforce_when_memory_binds},
        {"interleaved_with_overlap_p2p_matches_bruteforce",
         test_interleaved_with_overlap_p2p_matches_bruteforce},
        {"proven_optimum_reports_zero_gap", test_proven_optimum_reports_zero_gap},
        {"count_form_equals_binary_form_on_identical_layers",
         test_count_form_equals_binary_form_on_identical_layers},
        {"auto_form_uses_counts_on_identical_layers",
         test_auto_form_uses_counts_on_identical_layers},
        {"count_form_refuses_heterogeneous_layers", test_count_form_refuses_heterogeneous_layers},
        {"uniform_layers_give_uniform_partition", test_uniform_layers_give_uniform_partition},
        {"uniform_interleaved_gives_megatron_time", test_uniform_interleaved_gives_megatron_time},
        {"no_fitting_plan_is_nofit", test_no_fitting_plan_is_nofit},
        {"binary_form_stops_at_time_limit_with_a_fitting_plan",
         test_binary_form_stops_at_time_limit_with_a_fitting_plan},
        {"planner_run_accepts_bmpipe_plan", test_planner_run_accepts_bmpipe_plan});
}
