/*
 * test_csimd.c -- CSIMD, MBPP-R and MBPP-E (planner_csimd.c), the cost
 * model's layer at any batch (cm_layer_at_batch) and the schedules' use of it
 * for per-micro-batch sizes (the layer-by-layer workloads written for them
 * against their published counts: test_workload_counts.c).
 *
 * Independent references: a GPipe makespan computed by hand, brute force over
 * every division of small models, the proportionate flow-shop closed form
 * (equal split optimal for linear times without communication) and the roofline
 * evaluated here from the spec.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "csimd_internal.h" /* the planner's own entry points, tested here */
#include "engine.h"
#include "memory.h"
#include "planner.h"
#include "schedule.h"
#include "testutil.h"

/* The 910B-class NPUs of platforms/test_8npu.xml: 4 per server. */
static cl_cluster npu_cluster(void) { return test_npu_cluster(8, 4); }

/* Transfers that cost nothing. */
static cl_cluster free_comm_cluster(void)
{
    cl_cluster c = npu_cluster();
    c.scaleup_bandwidth_Bps = c.scaleout_bandwidth_Bps = 1e300;
    c.scaleup_latency_s = c.scaleout_latency_s = 0.0;
    return c;
}

static uint64_t rng_state = 0x12345678abcdefULL;

static double uniform(double lo, double hi)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + (hi - lo) * (double)(rng_state >> 11) / 9007199254740992.0;
}

/* A model of L layers whose profiled tables follow t(b) = alpha*b^gamma + beta
 * (CSIMD's fitted form) at b = 1, 2, 4, ..., 64, with random alpha, gamma,
 * beta and boundary tensors: nonlinear times and communication that matters. */
static void synthetic_workload(wl_workload *w, int L, int p, int dp, long batch, int mbs)
{
    static const int points = 7;
    memset(w, 0, sizeof *w);
    snprintf(w->name, sizeof w->name, "synthetic");
    snprintf(w->path, sizeof w->path, "<synthetic>");
    w->model.num_layers = w->model.num_layer_specs = L;
    w->model.layer_specs = calloc((size_t)L, sizeof *w->model.layer_specs);
    for (int l = 0; l < L; l++) {
        wl_layer_spec *sp = &w->model.layer_specs[l];
        snprintf(sp->name, sizeof sp->name, "layer%d", l);
        sp->params = uniform(1e6, 5e7);
        sp->activation_bytes = uniform(1e5, 1e7);
        sp->output_bytes = uniform(1e4, 3e6);
        double alpha = uniform(1e-4, 1e-3), gamma = uniform(0.6, 1.2), beta = uniform(0, 1e-3);
        sp->num_time_points = points;
        sp->time_batch = malloc(points * sizeof(double));
        sp->time_forward_s = malloc(points * sizeof(double));
        sp->time_backward_s = malloc(points * sizeof(double));
        for (int i = 0; i < points; i++) {
            double b = (double)(1 << i);
            sp->time_batch[i] = b;
            sp->time_forward_s[i] = alpha * pow(b, gamma) + beta;
            sp->time_backward_s[i] = 2.0 * sp->time_forward_s[i];
        }
    }
    w->training.global_batch_size = batch;
    w->training.micro_batch_size = mbs;
    w->training.params_dtype = WL_BF16;
    w->parallel = (wl_parallel){.tensor_model_parallel_size = 1,
                                .pipeline_model_parallel_size = p,
                                .data_parallel_size = dp,
                                .virtual_pipeline_model_parallel_size = 1,
                                .expert_model_parallel_size = 1};
    w->schedule = SCHED_GPIPE;
}

static void random_sizes(int samples, int m, int *sizes)
{
    for (int j = 0; j < m; j++)
        sizes[j] = 1;
    for (int i = m; i < samples; i++)
        sizes[(int)uniform(0, m)]++;
}

static int plan_sum_sizes(const plan *pl)
{
    int sum = 0;
    for (int j = 0; j < pl->num_micro_batches; j++)
        sum += pl->micro_batch_sizes[j];
    return sum;
}

/* ---- the makespan recurrence ---------------------------------------------- */

/* Two stages, three micro-batches.  A stage may go on once its op and the
 * (blocking) send after it are done; a tensor arrives when its send ends.
 * Forward, stage 0: F ends 1, 3.5, 7 (each after the previous send: 1.5, 4,
 * 8); stage 1: max(1.5, 0) + 2 = 3.5, max(3.5 + .5, 3.5) + 1 = 5,
 * max(7 + 1, 5) + 2 = 10.  Backward, last micro-batch first (GPipe Fig. 2c):
 * stage 1: 10 + 1 = 11 (sent by 12), 12 + 1 = 13 (13.5), 13.5 + 3 = 16.5 (17);
 * stage 0 from 8: max(11 + 1, 8) + 2 = 14, max(13 + .5, 14) + 2 = 16,
 * max(16.5 + .5, 16) + 2 = 19.  T = 19; tails 0.5 and 1: max(19.5, 18). */
static void test_makespan_matches_hand_computed_two_stages_three_micro_batches(void)
{
    const double fwd[] = {1, 2, 3, /* stage 1 */ 2, 1, 2};
    const double bwd[] = {2, 2, 2, /* stage 1 */ 3, 1, 1};
    const double comm[] = {0.5, 0.5, 1.0};
    const double tail[] = {0.5, 1.0};
    ASSERT_REL(csimd_gpipe_makespan_s(2, 3, fwd, bwd, comm, NULL, NULL), 19.0, 1e-15);
    ASSERT_REL(csimd_gpipe_makespan_s(2, 3, fwd, bwd, comm, NULL, tail), 19.5, 1e-15);
}

/* ---- IMD ------------------------------------------------------------------ */

/* Smallest predicted T over every division of the layers into p stages. */
static double brute_force_cuts(csimd_ctx *x, int L, int p, const int *sizes, int *start, int k)
{
    if (k == p) {
        return csimd_predict_s(x, start, sizes);
    }
    double best = INFINITY;
    for (int c = start[k - 1] + 1; c <= L - (p - k); c++) {
        start[k] = c;
        best = fmin(best, brute_force_cuts(x, L, p, sizes, start, k + 1));
    }
    return best;
}

static void test_imd_cuts_equal_brute_force_on_small_models(void)
{
    const cl_cluster c = npu_cluster();
    int misses = 0;
    for (int trial = 0; trial < 40; trial++) {
        int L = 6 + trial % 5, p = 2 + trial % 3, m = 3 + trial % 4, samples = 4 * m + trial;
        wl_workload w;
        synthetic_workload(&w, L, p, 1, samples, 1);
        cm_model cm;
        np_error err;
        CU_ASSERT_EQUAL_FATAL(cm_build(&w, &c, 1, &cm, &err), 0);
        csimd_ctx *x;
        CU_ASSERT_EQUAL_FATAL(csimd_context_new(&cm, &c, p, 1, samples, m, RECOMPUTE_NONE, &x), 0);
        int sizes[m], start[p + 1], scratch[p + 1];
        random_sizes(samples, m, sizes);
        scratch[0] = 0;
        scratch[p] = L;
        double best = brute_force_cuts(x, L, p, sizes, scratch, 1);
        CU_ASSERT_EQUAL(csimd_imd_cuts(x, sizes, start), 0);
        double got = csimd_predict_s(x, start, sizes);
        if (test_rel_diff(got, best) > 1e-12) {
            misses++;
            fprintf(stderr, "\n  trial %d (L=%d p=%d m=%d): IMD %.9g, brute force %.9g", trial, L,
                    p, m, got, best);
        }
        csimd_context_free(x);
        cm_free(&cm);
        wl_free(&w);
    }
    CU_ASSERT_EQUAL(misses, 0);
}

/* ---- the planners --------------------------------------------------------- */

/* The planner on a GPipe workload (load_job(), synthetic_workload()). */
static int run_planner(const char *name, const cm_model *cm, const cl_cluster *c,
                       const wl_workload *w, plan *out)
{
    np_error err;
    int rc = test_run_planner(name, cm, c, w, out, &err);
    if (rc) {
        char buf[1200];
        fprintf(stderr, "\n  %s: %s", name, np_error_format(&err, buf, sizeof buf));
    }
    return rc;
}

static const char *const workload_files[] = {"workloads/vgg19.json", "workloads/resnet152.json",
                                             "workloads/swin_b.json", "workloads/vgg16.json"};
static const char *const planner_names[] = {"csimd", "mbpp-r", "mbpp-e"};
#define NUM_WORKLOADS (int)(sizeof workload_files / sizeof workload_files[0])

static int load_job(const char *file, const cl_cluster *c, wl_workload *w, cm_model *cm)
{
    np_error err;
    const char *gpipe[] = {"schedule=gpipe"};
    if (wl_load(test_path(file), gpipe, 1, w, &err))
        return -1;
    return cm_build(w, c, 0, cm, &err);
}

static void test_cross_search_never_worse_than_mbpp_e(void)
{
    const cl_cluster c = npu_cluster();
    for (int i = 0; i < NUM_WORKLOADS + 12; i++) {
        wl_workload w;
        cm_model cm;
        if (i < NUM_WORKLOADS) {
            CU_ASSERT_EQUAL_FATAL(load_job(workload_files[i], &c, &w, &cm), 0);
        } else {
            synthetic_workload(&w, 8 + i % 7, 2 + i % 4, 1 + i % 2, 96, 4 + 4 * (i % 2));
            CU_ASSERT_EQUAL_FATAL(cm_build(&w, &c, 0, &cm, NULL), 0);
        }
        plan csimd, even;
        CU_ASSERT_EQUAL_FATAL(run_planner("csimd", &cm, &c, &w, &csimd), 0);
        CU_ASSERT_EQUAL_FATAL(run_planner("mbpp-e", &cm, &c, &w, &even), 0);
        CU_ASSERT(csimd.predicted_iteration_s > 0);
        CU_ASSERT(csimd.predicted_iteration_s <= even.predicted_iteration_s);
        plan_free(&csimd);
        plan_free(&even);
        cm_free(&cm);
        wl_free(&w);
    }
}

static void test_micro_batch_sizes_sum_to_the_pipeline_batch(void)
{
    const cl_cluster c = npu_cluster();
    for (int i = 0; i < NUM_WORKLOADS; i++) {
        wl_workload w;
        cm_model cm;
        CU_ASSERT_EQUAL_FATAL(load_job(workload_files[i], &c, &w, &cm), 0);
        long samples = w.training.global_batch_size / w.parallel.data_parallel_size;
        for (int k = 0; k < 3; k++) {
            plan pl;
            CU_ASSERT_EQUAL_FATAL(run_planner(planner_names[k], &cm, &c, &w, &pl), 0);
            CU_ASSERT_PTR_NOT_NULL_FATAL(pl.micro_batch_sizes);
            CU_ASSERT_EQUAL(pl.num_micro_batches, wl_num_micro_batches(&w));
            CU_ASSERT_EQUAL(plan_sum_sizes(&pl), samples);
            CU_ASSERT_EQUAL(pl.schedule, SCHED_GPIPE);
            plan_free(&pl);
        }
        cm_free(&cm);
        wl_free(&w);
    }
}

/* Down to 8 and 6 GB per device (ResNet-152's even division then needs
 * recompute, see below) every planner's plan must pass the memory model. */
static void test_every_plan_fits_memory(void)
{
    const double capacities[] = {64e9, 8e9, 6e9};
    for (int i = 0; i < NUM_WORKLOADS; i++)
        for (unsigned k = 0; k < sizeof capacities / sizeof capacities[0]; k++) {
            cl_cluster c = npu_cluster();
            c.hbm_bytes = capacities[k];
            wl_workload w;
            cm_model cm;
            CU_ASSERT_EQUAL_FATAL(load_job(workload_files[i], &c, &w, &cm), 0);
            for (int n = 0; n < 3; n++) {
                plan pl;
                planner_options o;
                planner_init_options(&o, &w);
                o.recompute = -1; /* the planner may recompute to fit */
                np_error err;
                int rc = planner_run(planner_find(planner_names[n]), &cm, &c, &w, &o, &pl, &err);
                CU_ASSERT(rc == 0 || rc == NP_EXIT_NOFIT);
                if (rc == 0) {
                    CU_ASSERT_EQUAL(mem_check_fits(&cm, &pl, NULL), 0);
                    plan_free(&pl);
                } else if (n == 0) {
                    CU_FAIL("csimd found no plan although it may recompute everything");
                }
            }
            cm_free(&cm);
            wl_free(&w);
        }
}

/* At 8 GB, 128 samples of ResNet-152's activations do not fit on every
 * stage of the even division without recompute; CSIMD's memory-aware
 * division does, so it keeps recompute off where MBPP-E cannot. */
static void test_csimd_moves_cuts_rather_than_recompute_when_memory_is_tight(void)
{
    cl_cluster c = npu_cluster();
    c.hbm_bytes = 8e9;
    wl_workload w;
    cm_model cm;
    CU_ASSERT_EQUAL_FATAL(load_job("workloads/resnet152.json", &c, &w, &cm), 0);
    planner_options o;
    planner_init_options(&o, &w);
    o.recompute = RECOMPUTE_NONE;
    plan pl;
    np_error err;
    CU_ASSERT_EQUAL(planner_mbpp_even(&cm, &c, &w, &o, &pl, &err), NP_EXIT_NOFIT);
    o.recompute = -1;
    CU_ASSERT_EQUAL_FATAL(planner_run(planner_find("csimd"), &cm, &c, &w, &o, &pl, &err), 0);
    for (int l = 0; l < cm.num_layers; l++)
        CU_ASSERT_EQUAL(pl.recompute[l], RECOMPUTE_NONE);
    CU_ASSERT_EQUAL(mem_check_fits(&cm, &pl, NULL), 0);
    plan_free(&pl);
    cm_free(&cm);
    wl_free(&w);
}

static void test_no_division_fits_is_a_nofit_error(void)
{
    cl_cluster c = npu_cluster();
    c.hbm_bytes = 3e9; /* below the 2.3 GB workspace plus fc6's 1.85 GB of state */
    wl_workload w;
    cm_model cm;
    CU_ASSERT_EQUAL_FATAL(load_job("workloads/vgg19.json", &c, &w, &cm), 0);
    plan pl;
    np_error err;
    CU_ASSERT_EQUAL(test_run_planner("csimd", &cm, &c, &w, &pl, &err), NP_EXIT_NOFIT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "fits"));
    cm_free(&cm);
    wl_free(&w);
}

static void test_non_gpipe_schedule_is_rejected(void)
{
    const cl_cluster c = npu_cluster();
    wl_workload w;
    cm_model cm;
    CU_ASSERT_EQUAL_FATAL(load_job("workloads/vgg19.json", &c, &w, &cm), 0);
    planner_options o;
    planner_init_options(&o, &w);
    o.schedule = SCHED_1F1B;
    plan pl;
    np_error err;
    for (int n = 0; n < 3; n++) {
        CU_ASSERT_EQUAL(planner_find(planner_names[n])->run(&cm, &c, &w, &o, &pl, &err),
                        NP_EXIT_INPUT);
        CU_ASSERT_STRING_EQUAL(err.key, "schedule");
    }
    cm_free(&cm);
    wl_free(&w);
}

/* Linear times t(b) = b*t(1) and free communication: a proportionate flow
 * shop, whose makespan is sum_j t_j + (p-1) max_j t_j in each direction, so
 * T = (F + B)(samples + (p-1) ceil(samples/m)) per stage of identical layers,
 * least when the split is even.  test_uniform_model: F = 1, B = 2 per layer. */
static void check_equal_split(int samples, int m, int p, int layers_per_stage)
{
    cm_model cm;
    test_uniform_model(&cm, p * layers_per_stage);
    const cl_cluster c = free_comm_cluster();
    wl_workload w;
    memset(&w, 0, sizeof w);
    w.training.global_batch_size = samples;
    w.training.micro_batch_size = samples / m; /* m micro-batches */
    w.parallel = (wl_parallel){.tensor_model_parallel_size = 1,
                               .pipeline_model_parallel_size = p,
                               .data_parallel_size = 1,
                               .virtual_pipeline_model_parallel_size = 1,
                               .expert_model_parallel_size = 1,
                               .context_parallel_size = 1};
    plan pl;
    planner_options o;
    planner_init_options(&o, &w);
    o.schedule = SCHED_GPIPE;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(planner_csimd(&cm, &c, &w, &o, &pl, &err), 0);
    int ceil_b = (samples + m - 1) / m, largest = 0;
    for (int j = 0; j < m; j++)
        largest = pl.micro_batch_sizes[j] > largest ? pl.micro_batch_sizes[j] : largest;
    CU_ASSERT_EQUAL(largest, ceil_b);
    for (int k = 0; k <= p; k++)
        CU_ASSERT_EQUAL(pl.chunk_start[k], k * layers_per_stage);
    double expected = 3.0 * layers_per_stage * (samples + (p - 1) * ceil_b);
    ASSERT_REL(pl.predicted_iteration_s, expected, 1e-12);
    plan_free(&pl);
    cm_free(&cm);
}

static void test_equal_split_is_optimal_for_linear_times_without_communication(void)
{
    check_equal_split(12, 4, 4, 2); /* 3(2)(12 + 3*3) = 126 */
    check_equal_split(32, 8, 2, 3);
    check_equal_split(40, 5, 3, 1);
}

/* ---- cost model at any batch, and the schedules' use of it ---------------- */

static void test_layer_at_built_batch_equals_built_layer(void)
{
    const cl_cluster c = npu_cluster();
    const char *files[] = {"workloads/vgg19.json", "workloads/small_gpt.json",
                           "workloads/small_llama.json"};
    for (int i = 0; i < 3; i++) {
        wl_workload w;
        np_error err;
        CU_ASSERT_EQUAL_FATAL(wl_load(test_path(files[i]), NULL, 0, &w, &err), 0);
        cm_model cm;
        CU_ASSERT_EQUAL_FATAL(cm_build(&w, &c, 0, &cm, &err), 0);
        for (int l = 0; l < cm.num_layers; l++) {
            cm_layer at;
            CU_ASSERT_EQUAL(cm_layer_at_batch(&cm, l, cm.micro_batch_size, &at), 0);
            CU_ASSERT_EQUAL(memcmp(&at, &cm.layers[l], sizeof at), 0);
        }
        cm_free(&cm);
        wl_free(&w);
    }
}

/* Custom layer without a table (costmodel_layers.c): forward = max(b*FLOPs /
 * (peak*eff), (params*2 + b*activation bytes) / HBM bandwidth) + launch. */
static double roofline_forward_s(const cl_cluster *c, const wl_layer_spec *sp, double b)
{
    double compute = b * sp->forward_flops / (c->peak_flops * c->matmul_efficiency);
    double memory = (sp->params * 2.0 + b * sp->activation_bytes) / c->hbm_bandwidth_Bps;
    return fmax(compute, memory) + c->kernel_launch_s;
}

static void test_layer_at_batch_follows_the_roofline_not_a_line(void)
{
    const cl_cluster c = npu_cluster();
    wl_workload w;
    cm_model cm;
    CU_ASSERT_EQUAL_FATAL(load_job("workloads/vgg19.json", &c, &w, &cm), 0);
    int fc6 = 16;
    CU_ASSERT_STRING_EQUAL(w.model.layer_specs[fc6].name, "fc6");
    const double batches[] = {1, 3, 16, 100, 400};
    for (int i = 0; i < 5; i++) {
        cm_layer at;
        CU_ASSERT_EQUAL(cm_layer_at_batch(&cm, fc6, batches[i], &at), 0);
        ASSERT_REL(at.forward_s, roofline_forward_s(&c, &w.model.layer_specs[fc6], batches[i]),
                   1e-12);
        ASSERT_REL(at.output_bytes, batches[i] * 4096 * 2, 1e-12);
    }
    /* fc6 reads 206 MB of weights: 1 and 16 samples cost nearly the same */
    cm_layer one, sixteen;
    cm_layer_at_batch(&cm, fc6, 1, &one);
    cm_layer_at_batch(&cm, fc6, 16, &sixteen);
    CU_ASSERT(sixteen.forward_s < 1.1 * one.forward_s);
    cm_free(&cm);
    wl_free(&w);
}

static void test_layer_at_batch_interpolates_the_time_table(void)
{
    const cl_cluster c = npu_cluster();
    wl_workload w;
    synthetic_workload(&w, 2, 1, 1, 64, 4);
    wl_layer_spec *sp = &w.model.layer_specs[1];
    cm_model cm;
    CU_ASSERT_EQUAL_FATAL(cm_build(&w, &c, 0, &cm, NULL), 0);
    cm_layer at;
    /* b = 3 lies between the table's points 2 and 4; b = 100 beyond 64 */
    cm_layer_at_batch(&cm, 1, 3, &at);
    ASSERT_REL(at.forward_s, 0.5 * (sp->time_forward_s[1] + sp->time_forward_s[2]), 1e-12);
    ASSERT_REL(at.backward_s + at.weight_grad_s,
               0.5 * (sp->time_backward_s[1] + sp->time_backward_s[2]), 1e-12);
    cm_layer_at_batch(&cm, 1, 100, &at);
    double slope = (sp->time_forward_s[6] - sp->time_forward_s[5]) / 32.0;
    ASSERT_REL(at.forward_s, sp->time_forward_s[6] + 36.0 * slope, 1e-12);
    CU_ASSERT_EQUAL(cm_layer_at_batch(&cm, 2, 3, &at), -1);
    CU_ASSERT_EQUAL(cm_layer_at_batch(&cm, 1, 0, &at), -1);
    cm_free(&cm);
    wl_free(&w);
}

/* With per-micro-batch sizes, a forward op costs the stage's layers at b_i
 * (roofline, not b_i/b times the built micro-batch) and its activations and
 * boundary tensor scale with b_i. */
static void test_schedule_prices_each_micro_batch_at_its_size(void)
{
    const cl_cluster c = npu_cluster();
    wl_workload w;
    cm_model cm;
    CU_ASSERT_EQUAL_FATAL(load_job("workloads/vgg19.json", &c, &w, &cm), 0);
    plan pl;
    plan_init(&pl, 2, 1, cm.num_layers);
    pl.chunk_start[1] = 16;
    pl.chunk_start[2] = cm.num_layers;
    pl.schedule = SCHED_1F1B;
    pl.micro_batch_size = cm.micro_batch_size;
    pl.num_micro_batches = 3;
    pl.tensor_parallel = pl.data_parallel = 1;
    const int sizes[] = {1, 40, 7};
    pl.micro_batch_sizes = malloc(sizeof sizes);
    memcpy(pl.micro_batch_sizes, sizes, sizeof sizes);
    schedule sc = {0};
    np_error err;
    CU_ASSERT_EQUAL_FATAL(sched_build(&pl, &cm, &sc, &err), 0);
    const sched_stage *st = &sc.stages[1];
    for (int i = 0; i < st->num_ops; i++) {
        const sched_op *op = &st->ops[i];
        int b = op->micro_batch >= 0 ? sizes[op->micro_batch] : 0;
        if (op->kind == OP_FORWARD) {
            double expected = 0, kept = 0;
            for (int l = 16; l < cm.num_layers; l++) {
                expected += roofline_forward_s(&c, &w.model.layer_specs[l], b);
                kept += b * w.model.layer_specs[l].activation_bytes;
            }
            ASSERT_REL(op->compute_s, expected, 1e-12);
            ASSERT_REL(op->mem_delta_bytes, kept, 1e-12);
        }
        if (op->kind == OP_RECV_FORWARD)
            ASSERT_REL(op->bytes, b * w.model.layer_specs[15].output_bytes, 1e-12);
    }
    sched_free(&sc);
    plan_free(&pl);
    cm_free(&cm);
    wl_free(&w);
}

/* ---- the simulator replays what the planner predicts ------------------------- */

typedef struct replay_case {
    const char *platform, *workload, *planner;
} replay_case;

typedef struct replay_outcome {
    int rc;
    char error[512];
    double predicted_s, simulated_s;
} replay_outcome;

static void run_replay(void *ctx, int fd)
{
    const replay_case *rc = ctx;
    replay_outcome out = {0};
    np_error err;
    np_error_clear(&err);
    sim_platform pf;
    test_job j;
    engine_result res = {0};
    test_simgrid_init();
    const char *gpipe[] = {"schedule=gpipe"};
    out.rc = platform_load(test_path(rc->platform), &pf, &err);
    if (!out.rc)
        out.rc = test_job_build(&j, &pf.cluster, rc->workload, gpipe, 1, rc->planner, &err);
    if (!out.rc) {
        engine_options o;
        engine_init_options(&o);
        out.rc = engine_run(&pf, &j.w, &j.cm, &j.pl, &j.sc, &o, &res, &err);
    }
    if (!out.rc) {
        out.predicted_s = j.pl.predicted_iteration_s;
        out.simulated_s = res.iteration_s;
    } else {
        np_error_format(&err, out.error, sizeof out.error);
    }
    test_write_all(fd, &out, sizeof out);
}

/* The planner's recurrence (nonlinear t(b), blocking sends, GPipe order,
 * all-reduce and optimizer) against SimGrid replaying the plan's op lists:
 * exact without communication, and with HCCS and cross-server RoCE links. */
static void test_simulated_gpipe_iteration_matches_the_prediction(void)
{
    const replay_case cases[] = {
        {"platforms/test_free_comm_8.xml", "workloads/resnet152.json", "csimd"},
        {"platforms/test_free_comm_8.xml", "workloads/swin_b.json", "mbpp-r"},
        {"platforms/test_8npu.xml", "workloads/vgg19.json", "csimd"},
        {"platforms/test_8npu.xml", "workloads/swin_b.json", "mbpp-e"},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        replay_outcome out;
        CU_ASSERT_EQUAL_FATAL(test_in_child(run_replay, (void *)&cases[i], &out, sizeof out), 0);
        if (out.rc)
            fprintf(stderr, "\n  %s %s: %s", cases[i].workload, cases[i].planner, out.error);
        CU_ASSERT_EQUAL_FATAL(out.rc, 0);
        ASSERT_REL(out.simulated_s, out.predicted_s, 1e-6);
    }
}

void register_csimd_tests(void)
{
    TEST_SUITE(
        "csimd",
        {"makespan_matches_hand_computed_two_stages_three_micro_batches",
         test_makespan_matches_hand_computed_two_stages_three_micro_batches},
        {"imd_cuts_equal_brute_force_on_small_models",
         test_imd_cuts_equal_brute_force_on_small_models},
        {"cross_search_never_worse_than_mbpp_e", test_cross_search_never_worse_than_mbpp_e},
        {"micro_batch_sizes_sum_to_the_pipeline_batch",
         test_micro_batch_sizes_sum_to_the_pipeline_batch},
        {"every_plan_fits_memory", test_every_plan_fits_memory},
        {"csimd_moves_cuts_rather_than_recompute_when_memory_is_tight",
         test_csimd_moves_cuts_rather_than_recompute_when_memory_is_tight},
        {"no_division_fits_is_a_nofit_error", test_no_division_fits_is_a_nofit_error},
        {"non_gpipe_schedule_is_rejected", test_non_gpipe_schedule_is_rejected},
        {"equal_split_is_optimal_for_linear_times_without_communication",
         test_equal_split_is_optimal_for_linear_times_without_communication},
        {"layer_at_built_batch_equals_built_layer", test_layer_at_built_batch_equals_built_layer},
        {"layer_at_batch_follows_the_roofline_not_a_line",
         test_layer_at_batch_follows_the_roofline_not_a_line},
        {"layer_at_batch_interpolates_the_time_table",
         test_layer_at_batch_interpolates_the_time_table},
        {"schedule_prices_each_micro_batch_at_its_size",
         test_schedule_prices_each_micro_batch_at_its_size},
        {"simulated_gpipe_iteration_matches_the_prediction",
         test_simulated_gpipe_iteration_matches_the_prediction});
}
