/*
 * test_workload_bounds.c -- every number the loader accepts is finite and
 * within the documented range of its key (docs/workload-format.md), checked
 * before any arithmetic; --set values that are malformed JSON are reported
 * as such, not re-read as strings.  The cases are the failures fuzzing found.
 */
#include <string.h>

#include "testutil.h"
#include "workload.h"

static void test_size_above_its_documented_bound_is_out_of_range(void)
{
    /* docs/workload-format.md: hidden_size at most 2^20 = 1,048,576. */
    test_expect_override_error("workloads/small_gpt.json", "hidden_size=2000000000000",
                               "model.hidden_size", "no larger than 1048576");
    test_expect_override_error("workloads/small_gpt.json", "hidden_size=1048577",
                               "model.hidden_size", "no larger than 1048576");
}

static void test_int_max_layers_is_refused_before_any_arithmetic(void)
{
    /* UBSan found 2147483647 + 2 in the cost model. */
    test_expect_override_error("workloads/small_gpt.json", "num_layers=2147483647",
                               "model.num_layers", "no larger than 10000 layers");
}

static void test_layer_bytes_near_double_max_are_refused(void)
{
    /* 1e308 bytes made SimGrid abort on an infinite duration. */
    test_expect_override_error("workloads/vgg16.json", "model.layers[3].output_bytes=1e308",
                               "model.layers[3].output_bytes", "no larger than 1e+12 bytes");
    test_expect_override_error("workloads/vgg16.json", "model.layers[0].forward_flops=1e306",
                               "model.layers[0].forward_flops", "no larger than 1e+18");
}

static void test_time_table_entries_are_bounded(void)
{
    test_expect_override_error(
        "workloads/vgg16.json",
        "model.layers[0].time_table={\"batch\":[1,2],\"forward_s\":[1,1e300],\"backward_s\":[1,2]}",
        "model.layers[0].time_table.forward_s[1]", "no larger than 100000 s");
}

static void test_override_integer_beyond_64_bits_says_so(void)
{
    test_expect_override_error("workloads/small_gpt.json", "num_layers=18446744073709551616",
                               "num_layers", "too big integer");
}

static void test_override_object_with_duplicate_key_says_so(void)
{
    test_expect_override_error("workloads/small_gpt.json",
                               "parallel={\"data_parallel_size\":2,\"data_parallel_size\":2}",
                               "parallel", "duplicate object key");
}

void register_workload_bounds_tests(void)
{
    TEST_SUITE(
        "workload_bounds",
        {"size above its documented bound is out of range",
         test_size_above_its_documented_bound_is_out_of_range},
        {"int max layers is refused before any arithmetic",
         test_int_max_layers_is_refused_before_any_arithmetic},
        {"layer bytes near double max are refused", test_layer_bytes_near_double_max_are_refused},
        {"time table entries are bounded", test_time_table_entries_are_bounded},
        {"override integer beyond 64 bits says so", test_override_integer_beyond_64_bits_says_so},
        {"override object with duplicate key says so",
         test_override_object_with_duplicate_key_says_so});
}
