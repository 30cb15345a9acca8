/*
 * test_fold.c -- symmetry folding (--fold-dp K) against the full run.
 *
 * Folding simulates the pipelines of K data-parallel replicas and lets the
 * others join only the collectives.  Where the replicas really are symmetric
 * the folded run must agree with the full one (the issue asks 1%) on
 * iteration time, bubble and peak memory.  The case here has real contention:
 * small_gpt (PP 4, 8 micro-batches) with 16 replicas on the 64-NPU fat tree, so the
 * data-parallel ring crosses servers and shares NICs with pipeline traffic.
 * Every run of one case happens in one child process, which also checks that
 * the engine can run several simulations on one platform.
 */
#include <string.h>

#include "engine.h"
#include "planner.h"
#include "testutil.h"

#define NUM_FOLDS 4
static const int folds[NUM_FOLDS] = {0, 1, 4, 8}; /* 0 = every replica */

typedef struct fold_outcome {
    int rc;
    char error[512];
    double iteration_s[NUM_FOLDS], bubble[NUM_FOLDS], peak_bytes[NUM_FOLDS];
    long activities[NUM_FOLDS];
} fold_outcome;

typedef struct fold_case {
    const char *schedule;
} fold_case;

static int run_folds(const fold_case *fc, fold_outcome *out, np_error *err)
{
    char schedule_override[64];
    snprintf(schedule_override, sizeof schedule_override, "schedule=\"%s\"", fc->schedule);
    /* Interleaved takes v = 2 (8 layers over 4 stages x 2 chunks). */
    const char *overrides[] = {"data_parallel_size=16", "global_batch_size=128", schedule_override,
                               strcmp(fc->schedule, "interleaved") == 0
                                   ? "virtual_pipeline_model_parallel_size=2"
                                   : "virtual_pipeline_model_parallel_size=1"};
    sim_platform pf;
    test_job j;
    int rc = platform_load(test_path("platforms/test_64npu.xml"), &pf, err);
    if (!rc)
        rc = test_job_build(&j, &pf.cluster, "workloads/small_gpt.json", overrides, 4, "megatron",
                            err);
    for (int f = 0; f < NUM_FOLDS && !rc; f++) {
        engine_options o;
        engine_init_options(&o);
        o.fold_dp = folds[f];
        engine_result r;
        if ((rc = engine_run(&pf, &j.w, &j.cm, &j.pl, &j.sc, &o, &r, err)))
            break;
        out->iteration_s[f] = r.iteration_s;
        out->bubble[f] = r.bubble_ratio;
        out->peak_bytes[f] = r.peak_bytes;
        out->activities[f] = r.activities;
        engine_result_free(&r);
    }
    return rc;
}

static void child(void *ctx, int fd)
{
    fold_outcome out;
    memset(&out, 0, sizeof out);
    np_error err;
    np_error_clear(&err);
    test_simgrid_init();
    out.rc = run_folds(ctx, &out, &err);
    if (out.rc)
        np_error_format(&err, out.error, sizeof out.error);
    test_write_all(fd, &out, sizeof out);
}

static void check_schedule(const char *schedule)
{
    fold_case fc = {schedule};
    fold_outcome out;
    CU_ASSERT_EQUAL_FATAL(test_in_child(child, &fc, &out, sizeof out), 0);
    if (out.rc)
        fprintf(stderr, "\n  %s: %s\n", schedule, out.error);
    CU_ASSERT_EQUAL_FATAL(out.rc, 0);
    for (int f = 1; f < NUM_FOLDS; f++) {
        ASSERT_REL(out.iteration_s[f], out.iteration_s[0], 0.01);
        ASSERT_REL(out.bubble[f], out.bubble[0], 0.01);
        ASSERT_REL(out.peak_bytes[f], out.peak_bytes[0], 0.01);
        /* and it is cheaper: fewer simulated activities */
        CU_ASSERT(out.activities[f] < out.activities[0]);
    }
}

/* Every synchronous schedule (asynchronous PipeDream is refused). */
static void test_folded_runs_agree_with_full_run_for_every_schedule(void)
{
    const char *schedules[] = {"1f1b", "gpipe", "interleaved", "zb-h1", "zb-h2", "pipedream-2bw"};
    for (unsigned i = 0; i < sizeof schedules / sizeof schedules[0]; i++)
        check_schedule(schedules[i]);
}

static void test_fold_that_does_not_divide_dp_is_refused(void)
{
    wl_workload w;
    memset(&w, 0, sizeof w);
    plan pl;
    memset(&pl, 0, sizeof pl);
    pl.data_parallel = 16;
    np_error err;
    CU_ASSERT_EQUAL(engine_check_fold(&w, &pl, 3, &err), NP_EXIT_USAGE);
    CU_ASSERT_STRING_EQUAL(err.key, "--fold-dp");
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "divide"));
    CU_ASSERT_EQUAL(engine_check_fold(&w, &pl, 4, &err), 0);
    CU_ASSERT_EQUAL(engine_check_fold(&w, &pl, 16, &err), 0);
}

static void test_fold_with_expert_parallelism_is_refused(void)
{
    wl_workload w;
    memset(&w, 0, sizeof w);
    w.model.num_experts = 8;
    w.parallel.expert_model_parallel_size = 4;
    plan pl;
    memset(&pl, 0, sizeof pl);
    pl.data_parallel = 8;
    np_error err;
    CU_ASSERT_EQUAL(engine_check_fold(&w, &pl, 2, &err), NP_EXIT_USAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "expert"));
}

/* The taper of a fat tree from its topo_parameters: 2 up-links for 8 hosts
 * per leaf is 2/8; the shipped platforms are non-blocking. */
static void load_taper(void *ctx, int fd)
{
    sim_platform pf;
    np_error err;
    test_simgrid_init();
    double taper = platform_load(test_path(ctx), &pf, &err) ? -1 : pf.cluster.fabric_taper;
    test_write_all(fd, &taper, sizeof taper);
}

static void test_fabric_taper_is_read_from_the_fat_tree(void)
{
    double taper;
    CU_ASSERT_EQUAL_FATAL(
        test_in_child(load_taper, "tests/data/test_64npu_tapered.xml", &taper, sizeof taper), 0);
    ASSERT_REL(taper, 0.25, 1e-12);
    CU_ASSERT_EQUAL_FATAL(
        test_in_child(load_taper, "platforms/test_64npu.xml", &taper, sizeof taper), 0);
    ASSERT_REL(taper, 1.0, 1e-12);
    /* 4 spines joined by 2 parallel links each: w·p/m = 1, but SimGrid
     * routes a pair's parallel links by destination, so flows meet on one of
     * them (the ring all-reduce takes 1.95x as long): 4/8 */
    CU_ASSERT_EQUAL_FATAL(
        test_in_child(load_taper, "tests/data/test_64npu_parallel_links.xml", &taper, sizeof taper),
        0);
    ASSERT_REL(taper, 0.5, 1e-12);
}

void register_fold_tests(void)
{
    TEST_SUITE(
        "fold",
        {"folded_runs_agree_with_full_run_for_every_schedule",
         test_folded_runs_agree_with_full_run_for_every_schedule},
        {"fold_that_does_not_divide_dp_is_refused", test_fold_that_does_not_divide_dp_is_refused},
        {"fold_with_expert_parallelism_is_refused", test_fold_with_expert_parallelism_is_refused},
        {"fabric_taper_is_read_from_the_fat_tree", test_fabric_taper_is_read_from_the_fat_tree});
}
