/*
 * test_workload_checks.c -- what a workload means beyond its single keys, as
 * a specification: the loader's cross-key rules and the cluster check.
 *
 * Three groups of tests:
 *   - impossible combinations, one file of tests/bad_input/ per rule (heads,
 *     query groups and tensor parallelism; batch, micro-batch and data
 *     parallelism; stages, layers and the interleaved schedule; experts and
 *     expert parallelism): the error is NP_EXIT_INPUT and names the dotted key
 *     that is wrong;
 *   - defaults that depend on other keys (SwiGLU's ffn size, MoE's top-k,
 *     sequence parallelism at tp 1);
 *   - wl_check_cluster(): tp x pp x dp against the platform, and the
 *     interleaved schedule's micro-batch rule.
 * The loading of single keys, overrides and the shipped workloads are
 * test_workload.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "workload.h"

/* ------------------------------------------------------------- helpers */

/* Loading tests/bad_input/FILE fails with NP_EXIT_INPUT, err.key equal to key
 * and err.text containing text. */
/* ------------------------------------------------- impossible combinations */

static void test_heads_not_divisible_by_tp_is_rejected(void)
{
    /* 12 heads over 8 tensor-parallel ranks. */
    test_expect_bad_input("heads_not_divisible_by_tp.json", "model.num_attention_heads",
                          "tensor_model_parallel_size (8), got 12");
}

static void test_query_groups_not_divisible_by_tp_is_rejected(void)
{
    test_expect_bad_input("groups_not_divisible_by_tp.json", "model.num_query_groups",
                          "tensor_model_parallel_size (4), got 2");
}

static void test_heads_not_divisible_by_query_groups_is_rejected(void)
{
    test_expect_bad_input("heads_not_divisible_by_groups.json", "model.num_query_groups",
                          "num_attention_heads (16), got 3");
}

static void test_hidden_not_divisible_by_heads_is_rejected(void)
{
    test_expect_bad_input("hidden_not_divisible_by_heads.json", "model.hidden_size",
                          "num_attention_heads (16), got 1000");
}

static void test_batch_not_divisible_by_micro_batch_times_dp_is_rejected(void)
{
    /* 15 % (1 x 2) != 0. */
    test_expect_bad_input("batch_not_divisible.json", "training.global_batch_size",
                          "micro_batch_size x parallel.data_parallel_size = 1 x 2 = 2, got 15");
}

static void test_interleaved_without_virtual_stages_is_rejected(void)
{
    test_expect_bad_input("interleaved_without_virtual_stages.json",
                          "parallel.virtual_pipeline_model_parallel_size", "interleaved");
}

static void test_virtual_stages_without_interleaved_is_rejected(void)
{
    test_expect_bad_input("virtual_stages_without_interleaved.json",
                          "parallel.virtual_pipeline_model_parallel_size", "\"1f1b\"");
}

static void test_interleaved_layers_not_divisible_by_stages_is_rejected(void)
{
    /* 12 layers over 4 stages x 2 chunks = 8 chunks. */
    test_expect_bad_input("interleaved_layers_not_divisible.json", "model.num_layers",
                          "4 x 2 = 8, got 12");
}

static void test_interleaved_on_one_stage_is_rejected(void)
{
    test_expect_bad_input("interleaved_single_stage.json", "parallel.pipeline_model_parallel_size",
                          "at least 2 stages");
}

static void test_more_stages_than_layers_is_rejected(void)
{
    test_expect_bad_input("pp_exceeds_layers.json", "parallel.pipeline_model_parallel_size",
                          "model.num_layers (2)");
}

static void test_experts_not_divisible_by_ep_is_rejected(void)
{
    test_expect_bad_input("experts_not_divisible_by_ep.json", "model.num_experts",
                          "expert_model_parallel_size (4), got 6");
}

static void test_ep_not_dividing_dp_is_rejected(void)
{
    test_expect_bad_input("ep_not_dividing_dp.json", "parallel.expert_model_parallel_size",
                          "data_parallel_size (2), got 4");
}

static void test_expert_parallelism_on_dense_model_is_rejected(void)
{
    test_expect_bad_input("ep_on_dense_model.json", "parallel.expert_model_parallel_size",
                          "dense model");
}

static void test_topk_above_expert_count_is_rejected(void)
{
    test_expect_bad_input("topk_exceeds_experts.json", "model.moe_router_topk",
                          "num_experts (2), got 4");
}

static void test_num_layers_must_match_listed_layers(void)
{
    test_expect_bad_input("layers_num_layers_mismatch.json", "model.num_layers",
                          "model.layers (2), got 3");
}

/* ------------------------------------------------- derived defaults */

static const char *const minimal_gpt =
    "{\"name\": \"t\",\n"
    " \"model\": {\"num_layers\": 4, \"hidden_size\": 1024, \"num_attention_heads\": 16,\n"
    "           \"seq_length\": 512, \"vocab_size\": 1000},\n"
    " \"training\": {\"global_batch_size\": 8},\n"
    " \"parallel\": {\"tensor_model_parallel_size\": 1, \"pipeline_model_parallel_size\": 2,\n"
    "              \"data_parallel_size\": 2}}\n";

static void test_swiglu_ffn_default_follows_megatron(void)
{
    const char *const set[] = {"swiglu=true"};
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load_text(minimal_gpt, set, 1, &w, &err), 0);
    /* Megatron: int(4 x 1024 x 2/3 / 64) x 64 = int(2730.67 / 64) x 64
     * = 42 x 64 = 2688. */
    CU_ASSERT_EQUAL(w.model.ffn_hidden_size, 2688);
    wl_free(&w);
}

static void test_moe_defaults_apply_when_experts_are_set(void)
{
    const char *const set[] = {"num_experts=8", "ffn_hidden_size=3000"};
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load_text(minimal_gpt, set, 2, &w, &err), 0);
    CU_ASSERT_EQUAL(w.model.num_experts, 8);
    CU_ASSERT_EQUAL(w.model.moe_router_topk, 2);
    CU_ASSERT_EQUAL(w.model.moe_ffn_hidden_size, 3000);
    wl_free(&w);
}

static void test_sequence_parallel_is_dropped_at_tp_1(void)
{
    const char *const set[] = {"training.sequence_parallel=true"};
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load_text(minimal_gpt, set, 1, &w, &err), 0);
    CU_ASSERT_FALSE(w.training.sequence_parallel);
    wl_free(&w);
}

/* ----------------------------------------------------- cluster check */

static void test_cluster_size_mismatch_states_all_four_numbers(void)
{
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load("workloads/llama3_405b_1f1b.json", &w, &err), 0);
    CU_ASSERT_EQUAL(wl_check_cluster(&w, 8192, &err), NP_EXIT_INPUT);
    CU_ASSERT_EQUAL(err.code, NP_EXIT_INPUT);
    CU_ASSERT_STRING_EQUAL(err.key, "parallel");
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "8 x 16 x 128 = 16384"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "has 8192"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.source, "llama3_405b_1f1b.json"));
    wl_free(&w);
}

static void test_cluster_without_npus_is_rejected(void)
{
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load("workloads/small_gpt.json", &w, &err), 0);
    CU_ASSERT_EQUAL(wl_check_cluster(&w, 0, &err), NP_EXIT_INPUT);
    wl_free(&w);
}

static void test_interleaved_needs_micro_batches_divisible_by_stages(void)
{
    /* 8 layers over 4 stages x 2 chunks is fine for wl_load; 12 sequences
     * over DP 2 give m = 12 / (1 x 2) = 6, and 6 % 4 != 0. */
    const char *const set[] = {"schedule=interleaved", "virtual_pipeline_model_parallel_size=2",
                               "global_batch_size=12"};
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with("workloads/small_gpt.json", set, 3, &w, &err), 0);
    CU_ASSERT_EQUAL(wl_num_micro_batches(&w), 6);
    CU_ASSERT_EQUAL(wl_check_cluster(&w, 8, &err), NP_EXIT_INPUT);
    CU_ASSERT_STRING_EQUAL(err.key, "training.global_batch_size");
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "pipeline_model_parallel_size (4)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "= 6"));
    wl_free(&w);
}

static void test_interleaved_with_divisible_micro_batches_fits(void)
{
    /* m = 16 / (1 x 2) = 8, a multiple of 4 stages. */
    const char *const set[] = {"schedule=interleaved", "virtual_pipeline_model_parallel_size=2"};
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with("workloads/small_gpt.json", set, 2, &w, &err), 0);
    CU_ASSERT_EQUAL(w.schedule, SCHED_INTERLEAVED);
    CU_ASSERT_EQUAL(wl_check_cluster(&w, 8, &err), 0);
    wl_free(&w);
}

/* A stored string reaches the terminal and the CSV: an escape sequence in
 * the name (here ESC [ 3 1 m, red text) or a tab in the planner's name is
 * refused with its position (jansson already refuses a NUL). */
static void test_control_characters_in_a_name_are_rejected(void)
{
    const char *const esc[] = {"name=\"a\\u001b[31mb\""}, *const tab[] = {
                                                              "planner=\"mega\\ttron\""};
    wl_workload w;
    np_error err;
    CU_ASSERT_NOT_EQUAL(test_wl_load_with("workloads/small_gpt.json", esc, 1, &w, &err), 0);
    CU_ASSERT_STRING_EQUAL(err.key, "name");
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "control character 0x1b at position 1"));
    CU_ASSERT_NOT_EQUAL(test_wl_load_with("workloads/small_gpt.json", tab, 1, &w, &err), 0);
    CU_ASSERT_STRING_EQUAL(err.key, "planner");
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "control character 0x09 at position 4"));
}

void register_workload_checks_tests(void)
{
    TEST_SUITE(
        "workload_checks",
        {"control characters in a name are rejected",
         test_control_characters_in_a_name_are_rejected},
        {"heads not divisible by tp is rejected", test_heads_not_divisible_by_tp_is_rejected},
        {"query groups not divisible by tp is rejected",
         test_query_groups_not_divisible_by_tp_is_rejected},
        {"heads not divisible by query groups is rejected",
         test_heads_not_divisible_by_query_groups_is_rejected},
        {"hidden not divisible by heads is rejected",
         test_hidden_not_divisible_by_heads_is_rejected},
        {"batch not divisible by micro-batch x dp is rejected",
         test_batch_not_divisible_by_micro_batch_times_dp_is_rejected},
        {"interleaved without virtual stages is rejected",
         test_interleaved_without_virtual_stages_is_rejected},
        {"virtual stages without interleaved is rejected",
         test_virtual_stages_without_interleaved_is_rejected},
        {"interleaved layers not divisible by stages is rejected",
         test_interleaved_layers_not_divisible_by_stages_is_rejected},
        {"interleaved on one stage is rejected", test_interleaved_on_one_stage_is_rejected},
        {"more stages than layers is rejected", test_more_stages_than_layers_is_rejected},
        {"experts not divisible by ep is rejected", test_experts_not_divisible_by_ep_is_rejected},
        {"ep not dividing dp is rejected", test_ep_not_dividing_dp_is_rejected},
        {"expert parallelism on dense model is rejected",
         test_expert_parallelism_on_dense_model_is_rejected},
        {"topk above expert count is rejected", test_topk_above_expert_count_is_rejected},
        {"num_layers must match listed layers", test_num_layers_must_match_listed_layers},
        {"swiglu ffn default follows Megatron", test_swiglu_ffn_default_follows_megatron},
        {"MoE defaults apply when experts are set", test_moe_defaults_apply_when_experts_are_set},
        {"sequence parallel is dropped at tp 1", test_sequence_parallel_is_dropped_at_tp_1},
        {"cluster size mismatch states all four numbers",
         test_cluster_size_mismatch_states_all_four_numbers},
        {"cluster without NPUs is rejected", test_cluster_without_npus_is_rejected},
        {"interleaved needs micro-batches divisible by stages",
         test_interleaved_needs_micro_batches_divisible_by_stages},
        {"interleaved with divisible micro-batches fits",
         test_interleaved_with_divisible_micro_batches_fits});
}
