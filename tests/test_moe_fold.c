/*
 * test_moe_fold.c -- --fold-dp with expert parallelism (engine_fold.c):
 * whole EP groups fold, so K must be a multiple of ep (and divide dp).  The
 * iteration times folded, sampled and full are compared on a 256-NPU
 * DeepSeek-V3-class cut by tests/moe_fold_test.sh.
 */
#include <string.h>

#include "engine.h"
#include "testutil.h"

static void setup(wl_workload *w, plan *pl, int ep, int dp)
{
    memset(w, 0, sizeof *w);
    memset(pl, 0, sizeof *pl);
    w->model.num_experts = 64;
    w->parallel.expert_model_parallel_size = ep;
    pl->data_parallel = dp;
}

static void test_fold_keeps_whole_ep_groups(void)
{
    wl_workload w;
    plan pl;
    np_error err;
    setup(&w, &pl, 4, 16);
    CU_ASSERT_EQUAL(engine_check_fold(&w, &pl, 4, &err), 0);  /* one EP group */
    CU_ASSERT_EQUAL(engine_check_fold(&w, &pl, 8, &err), 0);  /* two */
    CU_ASSERT_EQUAL(engine_check_fold(&w, &pl, 16, &err), 0); /* no folding */
    CU_ASSERT_EQUAL(engine_check_fold(&w, &pl, 0, &err), 0);
    /* the deepseek_v3_class layout: dp 1024, ep 64 */
    setup(&w, &pl, 64, 1024);
    CU_ASSERT_EQUAL(engine_check_fold(&w, &pl, 64, &err), 0);
    CU_ASSERT_EQUAL(engine_check_fold(&w, &pl, 128, &err), 0);
}

static void test_fold_splitting_an_ep_group_is_refused(void)
{
    wl_workload w;
    plan pl;
    np_error err;
    setup(&w, &pl, 4, 16);
    CU_ASSERT_EQUAL(engine_check_fold(&w, &pl, 2, &err), NP_EXIT_USAGE);
    CU_ASSERT_STRING_EQUAL(err.key, "--fold-dp");
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "multiple of 4"));
    CU_ASSERT_EQUAL(engine_check_fold(&w, &pl, 1, &err), NP_EXIT_USAGE);
    /* 12 is a multiple of 4 but does not divide 16 */
    CU_ASSERT_EQUAL(engine_check_fold(&w, &pl, 12, &err), NP_EXIT_USAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "divide"));
    /* a dense model (no experts) folds to any divisor */
    w.model.num_experts = 0;
    CU_ASSERT_EQUAL(engine_check_fold(&w, &pl, 2, &err), 0);
}

void register_moe_fold_tests(void)
{
    TEST_SUITE(
        "moe_fold", {"fold_keeps_whole_ep_groups", test_fold_keeps_whole_ep_groups},
        {"fold_splitting_an_ep_group_is_refused", test_fold_splitting_an_ep_group_is_refused});
}
