/*
 * test_sg_options.c -- the SimGrid options npusim accepts (sg_options.h):
 * the values that crashed or corrupted a run are refused, naming the option,
 * and SimGrid's own spellings of the valid ones pass.
 */
#include <CUnit/CUnit.h>
#include <string.h>

#include "sg_options.h"
#include "testutil.h"

static int check(const char *name, const char *value, char *why)
{
    return sg_option_check(name, value, why, 900);
}

static void test_the_crashing_values_are_refused(void)
{
    char why[900];
    /* segfault at 16K NPUs, segfault, abort, a 31 s iteration for 0.04 s */
    CU_ASSERT_EQUAL(check("contexts/nthreads", "2", why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "expected 1 ("));
    CU_ASSERT_EQUAL(check("contexts/stack-size", "4", why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "from 64 to"));
    CU_ASSERT_EQUAL(check("network/bandwidth-factor", "0", why), -1);
    CU_ASSERT_EQUAL(check("surf/precision", "1", why), -1);
    CU_ASSERT_EQUAL(check("maxmin/precision", "0.001", why), -1);
    CU_ASSERT_EQUAL(check("maxmin/precision", "1e-10", why), -1); /* crashed the solver */
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "at least 1e-9"));
    CU_ASSERT_EQUAL(check("maxmin/concurrency-limit", "1", why), -1);
    /* files of their own: tracing, and every option not on the list */
    CU_ASSERT_EQUAL(check("tracing", "yes", why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "not a SimGrid option npusim accepts"));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "network/model"));
    /* the type: a fraction of a KiB, a word for a number, a near-miss name */
    CU_ASSERT_EQUAL(check("contexts/stack-size", "64.5", why), -1);
    CU_ASSERT_EQUAL(check("network/TCP-gamma", "big", why), -1);
    CU_ASSERT_EQUAL(check("network/TCP-gamma", "inf", why), -1);
    CU_ASSERT_EQUAL(check("network/TCP-gamma", "-1", why), -1);
    CU_ASSERT_EQUAL(check("network/model", "CM0", why), -1);
    CU_ASSERT_EQUAL(check("network/model", "Constant", why), -1);
    CU_ASSERT_EQUAL(check("network/crosstraffic", "maybe", why), -1);
}

static void test_simgrids_spellings_pass(void)
{
    char why[900];
    const char *const ok[][2] = {
        {"network/model", "LV08"},          {"network/model", "CM02"},
        {"network/optim", "Lazy"},          {"network/crosstraffic", "0"},
        {"network/crosstraffic", "yes"},    {"network/maxmin-selective-update", "OFF"},
        {"network/TCP-gamma", "1e15"},      {"network/TCP-gamma", "0"},
        {"network/latency-factor", "0"},    {"network/bandwidth-factor", "0.97"},
        {"surf/precision", "1e-9"},         {"maxmin/precision", "1e-5"},
        {"maxmin/precision", "1e-9"},       {"surf/precision", "1e-15"},
        {"maxmin/concurrency-limit", "-1"}, {"contexts/stack-size", "64"},
        {"contexts/factory", "thread"},     {"contexts/nthreads", "1"},
        {"host/model", "ptask_L07"},        {"cpu/optim", "TI"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        why[0] = '\0';
        CU_ASSERT_EQUAL(check(ok[i][0], ok[i][1], why), 0);
        if (why[0])
            CU_FAIL(why);
    }
}

static void test_a_cfg_is_split_as_simgrid_splits_it(void)
{
    np_error err;
    CU_ASSERT_EQUAL(sg_options_check_cfg("network/model:LV08,network/optim:Lazy", &err), 0);
    CU_ASSERT_EQUAL(sg_options_check_cfg(" network/model:LV08 \t\n contexts/stack-size:128,", &err),
                    0);
    CU_ASSERT_EQUAL(sg_options_check_cfg("", &err), 0);
    /* the second setting of one --cfg is checked too, and named */
    CU_ASSERT_EQUAL(sg_options_check_cfg("network/model:LV08 contexts/nthreads:2", &err),
                    NP_EXIT_USAGE);
    CU_ASSERT_STRING_EQUAL(err.key, "--cfg");
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "contexts/nthreads: expected 1"));
    CU_ASSERT_EQUAL(sg_options_check_cfg("network/model", &err), NP_EXIT_USAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "expected NAME:VALUE"));
}

static void test_a_log_sets_thresholds_only(void)
{
    np_error err;
    CU_ASSERT_EQUAL(sg_log_check("root.thresh:info", &err), 0);
    CU_ASSERT_EQUAL(sg_log_check("ker_lmm.thres:debug xbt_cfg.threshold:critical", &err), 0);
    CU_ASSERT_EQUAL(sg_log_check("root.app:file:/tmp/x", &err), NP_EXIT_USAGE);
    CU_ASSERT_STRING_EQUAL(err.key, "--log");
    CU_ASSERT_EQUAL(sg_log_check("root.fmt:%m%n", &err), NP_EXIT_USAGE);
    CU_ASSERT_EQUAL(sg_log_check("root.thres:loud", &err), NP_EXIT_USAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "expected a level"));
    CU_ASSERT_EQUAL(sg_log_check("root", &err), NP_EXIT_USAGE);
}

void register_sg_options_tests(void)
{
    TEST_SUITE("sg_options",
               {"the crashing values are refused", test_the_crashing_values_are_refused},
               {"SimGrid's spellings pass", test_simgrids_spellings_pass},
               {"a --cfg is split as SimGrid splits it", test_a_cfg_is_split_as_simgrid_splits_it},
               {"a --log sets thresholds only", test_a_log_sets_thresholds_only});
}
