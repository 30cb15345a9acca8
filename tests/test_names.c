/*
 * test_names.c -- names are matched without regard to case, wherever a user
 * types one: schedules, recompute options and dtypes (the workload's keys,
 * --set, --schedule), collective algorithms (--dp-algorithm ...).  The
 * canonical lower-case name is what is stored, printed and written to the
 * CSV.  (simrun's --planner is checked by tests/cli_test.sh.)
 */
#include "collective.h"
#include "testutil.h"
#include "workload.h"

static void test_schedule_and_recompute_names_in_any_case(void)
{
    CU_ASSERT_EQUAL(wl_schedule_by_name("1F1B"), SCHED_1F1B);
    CU_ASSERT_EQUAL(wl_schedule_by_name("ZB-H1"), SCHED_ZB_H1);
    CU_ASSERT_EQUAL(wl_schedule_by_name("PipeDream-2BW"), SCHED_PIPEDREAM_2BW);
    CU_ASSERT_EQUAL(wl_schedule_by_name("1F1"), -1);
    CU_ASSERT_EQUAL(wl_recompute_by_name("Full"), RECOMPUTE_FULL);
    CU_ASSERT_EQUAL(wl_recompute_by_name("NONE"), RECOMPUTE_NONE);
}

/* The workload's enum keys (and --set, which goes through the same reader). */
static void test_workload_enum_keys_in_any_case(void)
{
    const char *overrides[] = {"schedule=\"GPipe\"", "recompute_granularity=SELECTIVE",
                               "params_dtype=BF16"};
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with("workloads/small_gpt.json", overrides, 3, &w, &err), 0);
    CU_ASSERT_EQUAL(w.schedule, SCHED_GPIPE);
    CU_ASSERT_STRING_EQUAL(wl_schedule_name(w.schedule), "gpipe");
    CU_ASSERT_EQUAL(w.training.recompute_granularity, RECOMPUTE_SELECTIVE);
    CU_ASSERT_EQUAL(w.training.params_dtype, WL_BF16);
    wl_free(&w);
}

static void test_collective_algorithms_in_any_case(void)
{
    CU_ASSERT_EQUAL(coll_algorithm_by_name("Ring-Flow"), COLL_RING_FLOW);
    CU_ASSERT_EQUAL(coll_algorithm_by_name("BRUCK"), COLL_BRUCK);
    CU_ASSERT_STRING_EQUAL(coll_algorithm_name(coll_algorithm_by_name("Butterfly")), "butterfly");
}

void register_names_tests(void)
{
    TEST_SUITE(
        "names",
        {"schedule and recompute names in any case", test_schedule_and_recompute_names_in_any_case},
        {"workload enum keys in any case", test_workload_enum_keys_in_any_case},
        {"collective algorithms in any case", test_collective_algorithms_in_any_case});
}
