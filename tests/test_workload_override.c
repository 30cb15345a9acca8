/*
 * test_workload_override.c -- `--set KEY=VALUE` overrides of a workload
 * (planner/model/workload_override.c) as a specification: dotted and bare
 * keys, JSON and plain-text values, the order they apply in, keys inside
 * layers, and every override error, blamed on the command line with the key
 * that is wrong.  The loader's other tests are test_workload.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "workload.h"

static void test_dotted_override_changes_the_value(void)
{
    const char *const set[] = {"parallel.data_parallel_size=4"};
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with("workloads/small_gpt.json", set, 1, &w, &err), 0);
    CU_ASSERT_EQUAL(w.parallel.data_parallel_size, 4);
    CU_ASSERT_EQUAL(wl_num_micro_batches(&w), 4); /* 16 / (1 x 4) */
    wl_free(&w);
}

static void test_bare_override_changes_the_value(void)
{
    const char *const set[] = {"micro_batch_size=2"};
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with("workloads/small_gpt.json", set, 1, &w, &err), 0);
    CU_ASSERT_EQUAL(w.training.micro_batch_size, 2);
    CU_ASSERT_EQUAL(wl_num_micro_batches(&w), 4); /* 16 / (2 x 2) */
    wl_free(&w);
}

static void test_override_of_non_json_text_becomes_a_string(void)
{
    /* "zb-h1" is not a JSON literal, so it is taken as the string "zb-h1". */
    const char *const set[] = {"schedule=zb-h1", "recompute_granularity=\"full\""};
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with("workloads/small_gpt.json", set, 2, &w, &err), 0);
    CU_ASSERT_EQUAL(w.schedule, SCHED_ZB_H1);
    CU_ASSERT_EQUAL(w.training.recompute_granularity, RECOMPUTE_FULL);
    wl_free(&w);
}

static void test_later_override_wins(void)
{
    const char *const set[] = {"data_parallel_size=4", "parallel.data_parallel_size=8"};
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with("workloads/small_gpt.json", set, 2, &w, &err), 0);
    CU_ASSERT_EQUAL(w.parallel.data_parallel_size, 8);
    wl_free(&w);
}

static void test_override_can_supply_a_missing_section(void)
{
    const char *const set[] = {"parallel.tensor_model_parallel_size=1",
                               "parallel.pipeline_model_parallel_size=2",
                               "parallel.data_parallel_size=4"};
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(
        test_wl_load_with("tests/bad_input/missing_section.json", set, 3, &w, &err), 0);
    CU_ASSERT_EQUAL((long)w.parallel.tensor_model_parallel_size *
                        w.parallel.pipeline_model_parallel_size * w.parallel.data_parallel_size,
                    8);
    wl_free(&w);
}

static void test_override_is_checked_before_combinations(void)
{
    /* The file has 2 layers and 4 stages; the override fixes it. */
    const char *const set[] = {"model.num_layers=8"};
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL(test_wl_load_with("tests/bad_input/pp_exceeds_layers.json", set, 1, &w, &err),
                    0);
    wl_free(&w);
}

static void test_override_into_a_layer_changes_the_value(void)
{
    const char *const set[] = {"model.layers[0].params=100", "model.layers.1.name=first_conv2"};
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with("workloads/vgg16.json", set, 2, &w, &err), 0);
    CU_ASSERT_EQUAL(w.model.layer_specs[0].params, 100.0);
    CU_ASSERT_STRING_EQUAL(w.model.layer_specs[1].name, "first_conv2");
    wl_free(&w);
}

static void test_override_of_unknown_dotted_key_is_rejected(void)
{
    test_expect_override_error("workloads/small_gpt.json", "parallel.data_parallel_sise=2",
                               "parallel.data_parallel_sise", "unknown key");
}

/* A key near no name lists every key of its section, the model's 29 whole:
 * from num_layers to layers, its last (the list was once cut at 512 bytes,
 * before attention_dropout). */
static void test_override_far_from_every_key_lists_them_all(void)
{
    test_expect_override_error("workloads/small_gpt.json", "model.zzz_qqq=1", "model.zzz_qqq",
                               "the keys of model are: num_layers, hidden_size");
    test_expect_override_error("workloads/small_gpt.json", "model.zzz_qqq=1", "model.zzz_qqq",
                               "attention_dropout, hidden_dropout, layers");
    test_expect_override_error("workloads/small_gpt.json", "parallel.data_parallel_sise=2",
                               "parallel.data_parallel_sise",
                               "did you mean \"data_parallel_size\"?");
}

static void test_override_of_unknown_section_is_rejected(void)
{
    test_expect_override_error("workloads/small_gpt.json", "optimizer.lr=0.1", "optimizer.lr",
                               "unknown key");
}

static void test_override_of_unknown_bare_key_is_rejected(void)
{
    test_expect_override_error("workloads/small_gpt.json", "dp=2", "dp", "unknown key");
}

static void test_ambiguous_bare_override_is_rejected(void)
{
    /* Every layer has "params": the bare name cannot say which. */
    test_expect_override_error("workloads/vgg16.json", "params=1", "params", "ambiguous");
}

static void test_override_with_wrong_type_is_blamed_on_the_command_line(void)
{
    test_expect_override_error("workloads/small_gpt.json", "data_parallel_size=eight",
                               "parallel.data_parallel_size",
                               "expected a positive integer, got \"eight\"");
}

static void test_override_without_equals_sign_is_rejected(void)
{
    test_expect_override_error("workloads/small_gpt.json", "data_parallel_size",
                               "data_parallel_size", "key=value");
}

static void test_override_of_layer_index_out_of_range_is_rejected(void)
{
    test_expect_override_error("workloads/vgg16.json", "model.layers[16].params=1",
                               "model.layers[16].params", "missing");
}

static void test_override_below_a_scalar_is_rejected(void)
{
    test_expect_override_error("workloads/small_gpt.json", "model.num_layers.x=1",
                               "model.num_layers.x", "has no keys");
}

/* A rule between keys that the file's own values pass and a --set breaks
 * names the command line, though the key it names (global_batch_size: 16 is
 * no multiple of 3 x 2) is the file's; the same rule broken by the file
 * alone names the file. */
static void test_rule_broken_by_an_override_is_blamed_on_the_command_line(void)
{
    const char *const set[] = {"micro_batch_size=3"};
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL(test_wl_load_with("workloads/small_gpt.json", set, 1, &w, &err), NP_EXIT_INPUT);
    CU_ASSERT_STRING_EQUAL(err.key, "training.global_batch_size");
    CU_ASSERT_STRING_EQUAL(err.source, "<command line>");
    CU_ASSERT_EQUAL(test_wl_load_with("tests/bad_input/pp_exceeds_layers.json", NULL, 0, &w, &err),
                    NP_EXIT_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.source, "pp_exceeds_layers.json"));
    /* with an unrelated override, the file's own error still names the file */
    const char *const other[] = {"micro_batch_size=1"};
    CU_ASSERT_EQUAL(test_wl_load_with("tests/bad_input/pp_exceeds_layers.json", other, 1, &w, &err),
                    NP_EXIT_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.source, "pp_exceeds_layers.json"));
    /* a file broken twice (TP 3 does not divide 16 heads; a batch of 15 no
     * multiple of DP 2), the first mended by --set: the second is still the
     * file's */
    static const char *const twice =
        "{\"name\": \"t\",\n"
        " \"model\": {\"num_layers\": 4, \"hidden_size\": 1024, \"num_attention_heads\": 16,\n"
        "           \"seq_length\": 512, \"vocab_size\": 1000},\n"
        " \"training\": {\"global_batch_size\": 15},\n"
        " \"parallel\": {\"tensor_model_parallel_size\": 3, \"pipeline_model_parallel_size\": 2,\n"
        "              \"data_parallel_size\": 2}}\n";
    const char *const mend[] = {"tensor_model_parallel_size=1"};
    CU_ASSERT_EQUAL(test_wl_load_text(twice, mend, 1, &w, &err), NP_EXIT_INPUT);
    CU_ASSERT_STRING_EQUAL(err.key, "training.global_batch_size");
    CU_ASSERT_STRING_NOT_EQUAL(err.source, "<command line>");
}

/* The same for the platform's NPU count: small_gpt is 1 x 4 x 2 = 8 NPUs;
 * with data_parallel_size=4 from --set it needs 16 of the 8 (the command
 * line), on 16 NPUs the file's own 8 are wrong (the file). */
static void test_cluster_mismatch_from_an_override_is_blamed_on_the_command_line(void)
{
    const char *const set[] = {"data_parallel_size=4"};
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with("workloads/small_gpt.json", set, 1, &w, &err), 0);
    CU_ASSERT_EQUAL(wl_check_cluster(&w, 8, &err), NP_EXIT_INPUT);
    CU_ASSERT_STRING_EQUAL(err.source, "<command line>");
    CU_ASSERT_EQUAL(wl_check_cluster(&w, 16, &err), 0);
    wl_free(&w);
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with("workloads/small_gpt.json", NULL, 0, &w, &err), 0);
    CU_ASSERT_EQUAL(wl_check_cluster(&w, 16, &err), NP_EXIT_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.source, "small_gpt.json"));
    wl_free(&w);
}

/* wl_key_source(): the keys the overrides set (by any spelling: bare,
 * dotted, a layer's with either index form) and the keys inside an object an
 * override replaced name the command line; every other key, including the
 * object holding an overridden key, names the file. */
static void test_key_source_names_what_the_overrides_set(void)
{
    const char *const set[] = {"schedule=gpipe", "micro_batch_size=1", "model.layers.1.params=5"};
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with("workloads/vgg16.json", set, 3, &w, &err), 0);
    CU_ASSERT_STRING_EQUAL(wl_key_source(&w, "schedule"), "<command line>");
    CU_ASSERT_STRING_EQUAL(wl_key_source(&w, "training.micro_batch_size"), "<command line>");
    CU_ASSERT_STRING_EQUAL(wl_key_source(&w, "model.layers[1].params"), "<command line>");
    CU_ASSERT_STRING_EQUAL(wl_key_source(&w, "training"), w.path);
    CU_ASSERT_STRING_EQUAL(wl_key_source(&w, "training.global_batch_size"), w.path);
    CU_ASSERT_STRING_EQUAL(wl_key_source(&w, "model.layers[10].params"), w.path);
    CU_ASSERT_STRING_EQUAL(wl_key_source(&w, "planner"), w.path);
    wl_free(&w);
    /* no overrides: every key is the file's */
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with("workloads/small_gpt.json", NULL, 0, &w, &err), 0);
    CU_ASSERT_STRING_EQUAL(wl_key_source(&w, "schedule"), w.path);
    wl_free(&w);
}

/* More overrides than the loader records is refused, not half-recorded. */
static void test_too_many_overrides_are_refused(void)
{
    const char *set[WL_MAX_OVERRIDES + 1];
    for (int i = 0; i <= WL_MAX_OVERRIDES; i++)
        set[i] = "micro_batch_size=1";
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL(test_wl_load_with("workloads/small_gpt.json", set, WL_MAX_OVERRIDES, &w, &err),
                    0);
    wl_free(&w);
    CU_ASSERT_EQUAL(
        test_wl_load_with("workloads/small_gpt.json", set, WL_MAX_OVERRIDES + 1, &w, &err),
        NP_EXIT_USAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "expected at most 80"));
}

void register_workload_override_tests(void)
{
    TEST_SUITE(
        "workload_override",
        {"dotted override changes the value", test_dotted_override_changes_the_value},
        {"bare override changes the value", test_bare_override_changes_the_value},
        {"override of non-JSON text becomes a string",
         test_override_of_non_json_text_becomes_a_string},
        {"later override wins", test_later_override_wins},
        {"override can supply a missing section", test_override_can_supply_a_missing_section},
        {"override is checked before combinations", test_override_is_checked_before_combinations},
        {"override into a layer changes the value", test_override_into_a_layer_changes_the_value},
        {"override of unknown dotted key is rejected",
         test_override_of_unknown_dotted_key_is_rejected},
        {"override far from every key lists them all",
         test_override_far_from_every_key_lists_them_all},
        {"override of unknown section is rejected", test_override_of_unknown_section_is_rejected},
        {"override of unknown bare key is rejected", test_override_of_unknown_bare_key_is_rejected},
        {"ambiguous bare override is rejected", test_ambiguous_bare_override_is_rejected},
        {"override with wrong type is blamed on the command line",
         test_override_with_wrong_type_is_blamed_on_the_command_line},
        {"override without equals sign is rejected", test_override_without_equals_sign_is_rejected},
        {"override of layer index out of range is rejected",
         test_override_of_layer_index_out_of_range_is_rejected},
        {"override below a scalar is rejected", test_override_below_a_scalar_is_rejected},
        {"rule broken by an override is blamed on the command line",
         test_rule_broken_by_an_override_is_blamed_on_the_command_line},
        {"cluster mismatch from an override is blamed on the command line",
         test_cluster_mismatch_from_an_override_is_blamed_on_the_command_line},
        {"key source names what the overrides set", test_key_source_names_what_the_overrides_set},
        {"too many overrides are refused", test_too_many_overrides_are_refused});
}
