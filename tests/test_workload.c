/*
 * test_workload.c -- the workload loader as a specification.
 *
 * Three groups of tests:
 *   - every shipped workload loads and carries its published figures (the
 *     expected values are copied from the papers cited in each file's
 *     "description", and the derived ones are worked out by hand in comments);
 *   - every loader error on a single key (syntax, unknown keys, types,
 *     ranges, missing keys, layers), one file of tests/bad_input/ per error:
 *     the error is NP_EXIT_INPUT and names the dotted key that is wrong;
 *   - defaults and the name tables.
 * Overrides (--set) are test_workload_override.c's.
 * Small well-formed inputs that only these tests need are written to
 * temporary files.  The rules between keys (divisibility, schedule
 * constraints, derived defaults) and the cluster check are
 * test_workload_checks.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "workload.h"

/* ------------------------------------------------------------- helpers */

static long total_npus(const wl_workload *w)
{
    return (long)w->parallel.tensor_model_parallel_size * w->parallel.pipeline_model_parallel_size *
           w->parallel.data_parallel_size;
}

/* Loading tests/bad_input/FILE fails with NP_EXIT_INPUT, err.key equal to key
 * and err.text containing text. */
/* -------------------------------------------------- shipped workloads */

static void test_llama_has_llama3_405b_figures(void)
{
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load("workloads/llama.json", &w, &err), 0);
    /* Llama 3 paper, Table 3. */
    CU_ASSERT_EQUAL(w.model.num_layers, 126);
    CU_ASSERT_EQUAL(w.model.hidden_size, 16384);
    CU_ASSERT_EQUAL(w.model.ffn_hidden_size, 53248);
    CU_ASSERT_EQUAL(w.model.num_attention_heads, 128);
    CU_ASSERT_EQUAL(w.model.num_query_groups, 8);
    CU_ASSERT_EQUAL(w.model.seq_length, 8192);
    CU_ASSERT_EQUAL(w.model.vocab_size, 128256);
    CU_ASSERT_TRUE(w.model.swiglu);
    CU_ASSERT_TRUE(w.model.untie_embeddings_and_output_weights);
    CU_ASSERT_EQUAL(w.model.num_experts, 0);
    /* Table 4: TP 8 x PP 16 x DP 128 = 16,384 GPUs. */
    CU_ASSERT_EQUAL(w.parallel.tensor_model_parallel_size, 8);
    CU_ASSERT_EQUAL(w.parallel.pipeline_model_parallel_size, 16);
    CU_ASSERT_EQUAL(w.parallel.data_parallel_size, 128);
    CU_ASSERT_EQUAL(total_npus(&w), 16384);
    /* 16M tokens per batch / 8,192 tokens = 2,048 sequences;
     * m = 2048 / (1 x 128) = 16 micro-batches per pipeline. */
    CU_ASSERT_EQUAL(w.training.global_batch_size, 2048);
    CU_ASSERT_EQUAL(wl_num_micro_batches(&w), 16);
    CU_ASSERT_EQUAL(w.training.params_dtype, WL_BF16);
    CU_ASSERT_TRUE(w.training.use_distributed_optimizer);
    CU_ASSERT_TRUE(w.training.sequence_parallel);
    CU_ASSERT_EQUAL(w.training.recompute_granularity, RECOMPUTE_FULL);
    /* Section 3.3.2: interleaved, one layer fewer on the end stages. */
    CU_ASSERT_EQUAL(w.schedule, SCHED_INTERLEAVED);
    CU_ASSERT_EQUAL(w.parallel.virtual_pipeline_model_parallel_size, 2);
    CU_ASSERT_TRUE(w.parallel.account_for_embedding_in_pipeline_split);
    CU_ASSERT_TRUE(w.parallel.account_for_loss_in_pipeline_split);
    CU_ASSERT_STRING_EQUAL(w.planner, "megatron");
    CU_ASSERT_STRING_EQUAL(w.name, "llama3-405b");
    CU_ASSERT_EQUAL(wl_check_cluster(&w, 16384, &err), 0);
    wl_free(&w);
}

static void test_gpt3_175b_has_published_figures(void)
{
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load("workloads/gpt3_175b.json", &w, &err), 0);
    /* GPT-3 paper, Table 2.1; vocabulary 50,257 padded to 51,200. */
    CU_ASSERT_EQUAL(w.model.num_layers, 96);
    CU_ASSERT_EQUAL(w.model.hidden_size, 12288);
    CU_ASSERT_EQUAL(w.model.num_attention_heads, 96);
    CU_ASSERT_EQUAL(w.model.seq_length, 2048);
    CU_ASSERT_EQUAL(w.model.vocab_size, 51200);
    /* Defaults: ffn = 4 x 12288 = 49152; MHA, so groups = heads = 96. */
    CU_ASSERT_EQUAL(w.model.ffn_hidden_size, 49152);
    CU_ASSERT_EQUAL(w.model.num_query_groups, 96);
    CU_ASSERT_FALSE(w.model.swiglu);
    /* TP 8 x PP 8 x DP 16 = 1,024; m = 1536 / (1 x 16) = 96. */
    CU_ASSERT_EQUAL(total_npus(&w), 1024);
    CU_ASSERT_EQUAL(wl_num_micro_batches(&w), 96);
    CU_ASSERT_TRUE(w.training.sequence_parallel);
    CU_ASSERT_TRUE(w.training.use_distributed_optimizer);
    CU_ASSERT_EQUAL(w.training.recompute_granularity, RECOMPUTE_SELECTIVE);
    CU_ASSERT_EQUAL(wl_check_cluster(&w, 1024, &err), 0);
    wl_free(&w);
}

static void test_gpt3_175b_128_is_the_128_npu_case(void)
{
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load("workloads/gpt3_175b_128.json", &w, &err), 0);
    CU_ASSERT_EQUAL(w.model.num_layers, 96);
    CU_ASSERT_EQUAL(w.model.hidden_size, 12288);
    CU_ASSERT_EQUAL(w.parallel.tensor_model_parallel_size, 8);
    CU_ASSERT_EQUAL(w.parallel.pipeline_model_parallel_size, 8);
    CU_ASSERT_EQUAL(w.parallel.data_parallel_size, 2);
    /* 8 x 8 x 2 = 128 NPUs; m = 64 / (1 x 2) = 32. */
    CU_ASSERT_EQUAL(total_npus(&w), 128);
    CU_ASSERT_EQUAL(wl_num_micro_batches(&w), 32);
    CU_ASSERT_EQUAL(wl_check_cluster(&w, 128, &err), 0);
    wl_free(&w);
}

static void test_llama2_70b_has_published_figures(void)
{
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load("workloads/llama2_70b.json", &w, &err), 0);
    CU_ASSERT_EQUAL(w.model.num_layers, 80);
    CU_ASSERT_EQUAL(w.model.hidden_size, 8192);
    CU_ASSERT_EQUAL(w.model.ffn_hidden_size, 28672);
    CU_ASSERT_EQUAL(w.model.num_attention_heads, 64);
    CU_ASSERT_EQUAL(w.model.num_query_groups, 8);
    CU_ASSERT_EQUAL(w.model.seq_length, 4096);
    CU_ASSERT_EQUAL(w.model.vocab_size, 32000);
    CU_ASSERT_TRUE(w.model.swiglu);
    /* 4M tokens / 4096 = 1024 sequences; TP8 x PP4 x DP32 = 1024 NPUs;
     * m = 1024 / (1 x 32) = 32. */
    CU_ASSERT_EQUAL(w.training.global_batch_size, 1024);
    CU_ASSERT_EQUAL(total_npus(&w), 1024);
    CU_ASSERT_EQUAL(wl_num_micro_batches(&w), 32);
    CU_ASSERT_EQUAL(w.training.recompute_granularity, RECOMPUTE_SELECTIVE);
    CU_ASSERT_EQUAL(wl_check_cluster(&w, 1024, &err), 0);
    wl_free(&w);
}

static void test_codegeex_13b_has_published_figures(void)
{
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load("workloads/codegeex_13b.json", &w, &err), 0);
    /* CodeGeeX paper: 39 layers, hidden 5120, 40 heads, FFN 20480, seq 2048. */
    CU_ASSERT_EQUAL(w.model.num_layers, 39);
    CU_ASSERT_EQUAL(w.model.hidden_size, 5120);
    CU_ASSERT_EQUAL(w.model.num_attention_heads, 40);
    CU_ASSERT_EQUAL(w.model.ffn_hidden_size, 20480);
    CU_ASSERT_EQUAL(w.model.seq_length, 2048);
    CU_ASSERT_EQUAL(w.model.vocab_size, 52224);
    /* 1,536 Ascend 910 = 8-way model parallel x 192-way data parallel;
     * global 3072 = 192 x 16, so one micro-batch of 16 per replica. */
    CU_ASSERT_EQUAL(total_npus(&w), 1536);
    CU_ASSERT_EQUAL(w.parallel.tensor_model_parallel_size, 8);
    CU_ASSERT_EQUAL(w.parallel.data_parallel_size, 192);
    CU_ASSERT_EQUAL(w.training.micro_batch_size, 16);
    CU_ASSERT_EQUAL(w.training.global_batch_size, 3072);
    CU_ASSERT_EQUAL(wl_num_micro_batches(&w), 1);
    CU_ASSERT_EQUAL(w.training.params_dtype, WL_FP16);
    CU_ASSERT_EQUAL(wl_check_cluster(&w, 1536, &err), 0);
    wl_free(&w);
}

static void test_small_gpt_fits_8_npus(void)
{
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load("workloads/small_gpt.json", &w, &err), 0);
    /* TP1 x PP4 x DP2 = 8; m = 16 / (1 x 2) = 8. */
    CU_ASSERT_EQUAL(total_npus(&w), 8);
    CU_ASSERT_EQUAL(wl_num_micro_batches(&w), 8);
    CU_ASSERT_EQUAL(w.model.num_layers, 8);
    CU_ASSERT_EQUAL(wl_check_cluster(&w, 8, &err), 0);
    wl_free(&w);
}

static void test_small_llama_fits_16_npus_with_gqa(void)
{
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load("workloads/small_llama.json", &w, &err), 0);
    /* TP2 x PP4 x DP2 = 16; m = 32 / (1 x 2) = 16. */
    CU_ASSERT_EQUAL(total_npus(&w), 16);
    CU_ASSERT_EQUAL(wl_num_micro_batches(&w), 16);
    CU_ASSERT_TRUE(w.model.swiglu);
    CU_ASSERT_TRUE(w.model.num_query_groups < w.model.num_attention_heads);
    CU_ASSERT_TRUE(w.training.sequence_parallel); /* kept: tp = 2 */
    CU_ASSERT_EQUAL(wl_check_cluster(&w, 16, &err), 0);
    wl_free(&w);
}

static void test_vgg16_layers_sum_to_published_totals(void)
{
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load("workloads/vgg16.json", &w, &err), 0);
    /* 13 convolutions + 3 fully connected layers. */
    CU_ASSERT_EQUAL(w.model.num_layer_specs, 16);
    CU_ASSERT_EQUAL(w.model.num_layers, 16);
    double params = 0, flops = 0;
    for (int i = 0; i < w.model.num_layer_specs; i++) {
        params += w.model.layer_specs[i].params;
        flops += w.model.layer_specs[i].forward_flops;
    }
    /* Simonyan & Zisserman 2015: 138,357,544 parameters; ~15.47 G
     * multiply-adds per 224x224 image, i.e. ~30.9 GFLOPs. */
    CU_ASSERT_EQUAL(params, 138357544.0);
    ASSERT_REL(flops, 30.94e9, 1e-3);
    CU_ASSERT_STRING_EQUAL(w.model.layer_specs[0].name, "conv1_1");
    CU_ASSERT_STRING_EQUAL(w.model.layer_specs[15].name, "fc8");
    /* conv1_1: 3x3x3x64 weights + 64 biases = 1792. */
    CU_ASSERT_EQUAL(w.model.layer_specs[0].params, 1792.0);
    CU_ASSERT_EQUAL(w.model.layer_specs[0].num_time_points, 0);
    CU_ASSERT_EQUAL(w.model.hidden_size, 0);      /* not a Transformer */
    CU_ASSERT_EQUAL(w.model.seq_length, 1);       /* a sample is one token */
    CU_ASSERT_EQUAL(wl_num_micro_batches(&w), 4); /* 256 / (32 x 2) */
    CU_ASSERT_EQUAL(wl_check_cluster(&w, 8, &err), 0);
    wl_free(&w);
}

static void test_every_shipped_workload_loads_and_fits_its_npu_count(void)
{
    static const char *const files[] = {
        "workloads/llama.json",      "workloads/llama3_405b_1f1b.json",
        "workloads/gpt3_175b.json",  "workloads/gpt3_175b_128.json",
        "workloads/llama2_70b.json", "workloads/codegeex_13b.json",
        "workloads/small_gpt.json",  "workloads/small_llama.json",
        "workloads/vgg16.json",
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        wl_workload w;
        np_error err;
        int rc = test_wl_load(files[i], &w, &err);
        CU_ASSERT_EQUAL(rc, 0);
        if (rc) {
            char buf[1200];
            fprintf(stderr, "\n  %s\n", np_error_format(&err, buf, sizeof buf));
            continue;
        }
        CU_ASSERT_EQUAL(wl_check_cluster(&w, (int)total_npus(&w), &err), 0);
        wl_free(&w);
    }
}

/* ------------------------------------------------------ loader errors */

static void test_malformed_json_reports_its_line(void)
{
    /* The comma at the end of line 3 is missing; jansson stops on line 4. */
    test_expect_bad_input("syntax_missing_comma.json", "", "column");
    wl_workload w;
    np_error err;
    test_wl_load("tests/bad_input/syntax_missing_comma.json", &w, &err);
    CU_ASSERT_EQUAL(err.line, 4);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "syntax error"));
}

/* small_gpt.json behind a UTF-8 byte-order mark: named as such, not as a
 * syntax error at an invisible character. */
static void test_byte_order_mark_is_named(void)
{
    test_expect_bad_input("byte_order_mark.json", "", "UTF-8 byte-order mark");
}

static void test_duplicate_key_is_rejected_with_its_line(void)
{
    test_expect_bad_input("duplicate_key.json", "", "duplicate");
    wl_workload w;
    np_error err;
    test_wl_load("tests/bad_input/duplicate_key.json", &w, &err);
    CU_ASSERT_EQUAL(err.line, 5); /* the second "hidden_size" */
}

static void test_missing_file_is_an_input_error(void)
{
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL(test_wl_load("tests/bad_input/no_such_file.json", &w, &err), NP_EXIT_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "cannot open workload: No such file"));
}

static void test_top_level_array_is_rejected(void)
{
    test_expect_bad_input("top_level_array.json", "", "JSON object");
}

static void test_unknown_key_names_the_dotted_key(void)
{
    test_expect_bad_input("unknown_key.json", "model.hiden_size", "unknown key");
}

/* "hiden_size" is one edit from hidden_size: the error names it. */
static void test_unknown_key_names_the_nearest_known_key(void)
{
    test_expect_bad_input("unknown_key.json", "model.hiden_size",
                          "unknown key; did you mean \"hidden_size\"?");
}

static void test_unknown_top_level_key_is_rejected(void)
{
    test_expect_bad_input("unknown_top_level_key.json", "schedul", "unknown key");
}

static void test_string_for_integer_names_expected_type(void)
{
    test_expect_bad_input("wrong_type_string_for_integer.json",
                          "parallel.tensor_model_parallel_size",
                          "expected a positive integer, got \"eight\"");
}

static void test_real_for_integer_is_a_wrong_type(void)
{
    test_expect_bad_input("wrong_type_real_for_integer.json", "parallel.data_parallel_size",
                          "expected a positive integer, got 2.5");
}

static void test_string_for_bool_is_a_wrong_type(void)
{
    test_expect_bad_input("wrong_type_bool.json", "model.swiglu", "expected true or false");
}

static void test_scalar_for_section_is_a_wrong_type(void)
{
    test_expect_bad_input("wrong_type_section.json", "training", "expected an object");
}

static void test_unknown_dtype_name_lists_the_choices(void)
{
    test_expect_bad_input("bad_dtype_name.json", "training.params_dtype",
                          "one of \"bf16\", \"fp16\", \"fp32\", got \"int8\"");
}

static void test_unknown_schedule_name_is_rejected(void)
{
    test_expect_bad_input("bad_schedule_name.json", "schedule", "\"pipedream-2bw\", got \"1f2b\"");
}

static void test_unknown_recompute_name_is_rejected(void)
{
    test_expect_bad_input("bad_recompute_name.json", "training.recompute_granularity",
                          "\"selective\"");
}

static void test_missing_required_key_is_named(void)
{
    test_expect_bad_input("missing_required_key.json", "training.global_batch_size",
                          "missing required key");
}

static void test_missing_section_is_named(void)
{
    test_expect_bad_input("missing_section.json", "parallel", "missing required key");
}

static void test_missing_name_is_named(void)
{
    test_expect_bad_input("missing_name.json", "name", "missing required key");
}

static void test_empty_name_is_rejected(void)
{
    test_expect_bad_input("empty_name.json", "name", "non-empty string");
}

static void test_zero_parallel_size_is_out_of_range(void)
{
    test_expect_bad_input("out_of_range_zero.json", "parallel.data_parallel_size",
                          "positive integer, got 0");
}

static void test_negative_expert_count_is_out_of_range(void)
{
    test_expect_bad_input("out_of_range_negative.json", "model.num_experts",
                          "non-negative integer, got -1");
}

static void test_integer_above_int_range_is_out_of_range(void)
{
    /* 3,000,000,000 layers: above int and above the documented 10,000. */
    test_expect_bad_input("out_of_range_above_int.json", "model.num_layers",
                          "no larger than 10000");
}

static void test_empty_layer_list_is_rejected(void)
{
    test_expect_bad_input("layers_empty.json", "model.layers", "non-empty array");
}

static void test_unknown_layer_key_names_the_layer(void)
{
    test_expect_bad_input("layers_unknown_key.json", "model.layers[1].flops", "unknown key");
}

static void test_missing_layer_key_names_the_layer(void)
{
    test_expect_bad_input("layers_missing_key.json", "model.layers[1].output_bytes",
                          "missing required key");
}

static void test_time_table_columns_must_have_equal_length(void)
{
    test_expect_bad_input("layers_time_table_length_mismatch.json",
                          "model.layers[1].time_table.backward_s", "expected 3 values");
}

static void test_time_table_batch_must_increase(void)
{
    test_expect_bad_input("layers_time_table_batch_not_increasing.json",
                          "model.layers[1].time_table.batch", "strictly increasing");
}

static void test_null_error_pointer_is_allowed(void)
{
    wl_workload w;
    CU_ASSERT_EQUAL(wl_load(test_path("tests/bad_input/unknown_key.json"), NULL, 0, &w, NULL),
                    NP_EXIT_INPUT);
    CU_ASSERT_EQUAL(wl_load(test_path("workloads/small_gpt.json"), NULL, 0, &w, NULL), 0);
    wl_free(&w);
}

/* ---------------------------------------------------------- defaults */

static const char *const minimal_gpt =
    "{\"name\": \"t\",\n"
    " \"model\": {\"num_layers\": 4, \"hidden_size\": 1024, \"num_attention_heads\": 16,\n"
    "           \"seq_length\": 512, \"vocab_size\": 1000},\n"
    " \"training\": {\"global_batch_size\": 8},\n"
    " \"parallel\": {\"tensor_model_parallel_size\": 1, \"pipeline_model_parallel_size\": 2,\n"
    "              \"data_parallel_size\": 2}}\n";

static void test_optional_keys_take_documented_defaults(void)
{
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load_text(minimal_gpt, NULL, 0, &w, &err), 0);
    CU_ASSERT_EQUAL(w.model.ffn_hidden_size, 4 * 1024);
    CU_ASSERT_EQUAL(w.model.num_query_groups, 16);
    CU_ASSERT_FALSE(w.model.swiglu);
    CU_ASSERT_FALSE(w.model.untie_embeddings_and_output_weights);
    CU_ASSERT_EQUAL(w.model.num_experts, 0);
    CU_ASSERT_EQUAL(w.model.moe_expert_capacity_factor, 0.0);
    CU_ASSERT_STRING_EQUAL(w.model.moe_token_trace, "");
    CU_ASSERT_EQUAL(w.model.num_layer_specs, 0);
    CU_ASSERT_EQUAL(w.training.micro_batch_size, 1);
    CU_ASSERT_EQUAL(w.training.params_dtype, WL_BF16);
    CU_ASSERT_FALSE(w.training.use_distributed_optimizer);
    CU_ASSERT_FALSE(w.training.sequence_parallel);
    CU_ASSERT_EQUAL(w.training.recompute_granularity, RECOMPUTE_NONE);
    CU_ASSERT_EQUAL(w.parallel.virtual_pipeline_model_parallel_size, 1);
    CU_ASSERT_EQUAL(w.parallel.expert_model_parallel_size, 1);
    CU_ASSERT_EQUAL(w.schedule, SCHED_1F1B);
    CU_ASSERT_STRING_EQUAL(w.planner, "megatron");
    wl_free(&w);
}

static void test_layer_time_table_is_read(void)
{
    const char *text =
        "{\"name\": \"cnn\",\n"
        " \"model\": {\"layers\": [\n"
        "   {\"name\": \"conv\", \"forward_flops\": 1e9, \"params\": 1792,\n"
        "    \"activation_bytes\": 4096, \"output_bytes\": 2048,\n"
        "    \"time_table\": {\"batch\": [1, 2, 4], \"forward_s\": [0.1, 0.15, 0.25],\n"
        "                   \"backward_s\": [0.2, 0.3, 0.5]}},\n"
        "   {\"name\": \"fc\", \"forward_flops\": 2e6, \"params\": 1001000,\n"
        "    \"activation_bytes\": 0, \"output_bytes\": 2000}]},\n"
        " \"training\": {\"global_batch_size\": 8, \"micro_batch_size\": 4},\n"
        " \"parallel\": {\"tensor_model_parallel_size\": 1, \"pipeline_model_parallel_size\": 2,\n"
        "              \"data_parallel_size\": 1}}\n";
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load_text(text, NULL, 0, &w, &err), 0);
    CU_ASSERT_EQUAL(w.model.num_layer_specs, 2);
    CU_ASSERT_EQUAL(w.model.num_layers, 2);
    const wl_layer_spec *conv = &w.model.layer_specs[0];
    CU_ASSERT_STRING_EQUAL(conv->name, "conv");
    CU_ASSERT_EQUAL(conv->forward_flops, 1e9);
    CU_ASSERT_EQUAL(conv->num_time_points, 3);
    CU_ASSERT_EQUAL(conv->time_batch[2], 4.0);
    CU_ASSERT_EQUAL(conv->time_forward_s[1], 0.15);
    CU_ASSERT_EQUAL(conv->time_backward_s[0], 0.2);
    CU_ASSERT_EQUAL(w.model.layer_specs[1].num_time_points, 0);
    CU_ASSERT_PTR_NULL(w.model.layer_specs[1].time_batch);
    CU_ASSERT_EQUAL(wl_num_micro_batches(&w), 2); /* 8 / (4 x 1) */
    wl_free(&w);
    CU_ASSERT_PTR_NULL(w.model.layer_specs);
    wl_free(&w); /* a second free is harmless */
}

/* ------------------------------------------------------------- names */

static void test_schedule_names_round_trip(void)
{
    static const char *const published[SCHED_COUNT] = {
        "gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "pipedream", "pipedream-2bw",
    };
    for (int s = 0; s < SCHED_COUNT; s++) {
        CU_ASSERT_STRING_EQUAL(wl_schedule_name((schedule_kind)s), published[s]);
        CU_ASSERT_EQUAL(wl_schedule_by_name(published[s]), s);
    }
    CU_ASSERT_EQUAL(wl_schedule_by_name("1F1B-typo"), -1);
    CU_ASSERT_EQUAL(wl_schedule_by_name(NULL), -1);
    CU_ASSERT_STRING_EQUAL(wl_schedule_name(SCHED_COUNT), "unknown");
}

static void test_recompute_names_round_trip(void)
{
    static const char *const published[RECOMPUTE_COUNT] = {"none", "selective", "full"};
    for (int r = 0; r < RECOMPUTE_COUNT; r++) {
        CU_ASSERT_STRING_EQUAL(wl_recompute_name((recompute_kind)r), published[r]);
        CU_ASSERT_EQUAL(wl_recompute_by_name(published[r]), r);
    }
    CU_ASSERT_EQUAL(wl_recompute_by_name("partial"), -1);
    CU_ASSERT_EQUAL(wl_recompute_by_name(NULL), -1);
}

static void test_dtype_sizes_are_bytes_per_element(void)
{
    CU_ASSERT_EQUAL(wl_dtype_bytes(WL_BF16), 2.0);
    CU_ASSERT_EQUAL(wl_dtype_bytes(WL_FP16), 2.0);
    CU_ASSERT_EQUAL(wl_dtype_bytes(WL_FP32), 4.0);
    CU_ASSERT_STRING_EQUAL(wl_dtype_name(WL_FP16), "fp16");
}

void register_workload_tests(void)
{
    TEST_SUITE(
        "workload", {"llama has Llama 3 405B figures", test_llama_has_llama3_405b_figures},
        {"gpt3_175b has published figures", test_gpt3_175b_has_published_figures},
        {"gpt3_175b_128 is the 128-NPU case", test_gpt3_175b_128_is_the_128_npu_case},
        {"llama2_70b has published figures", test_llama2_70b_has_published_figures},
        {"codegeex_13b has published figures", test_codegeex_13b_has_published_figures},
        {"small_gpt fits 8 NPUs", test_small_gpt_fits_8_npus},
        {"small_llama fits 16 NPUs with GQA", test_small_llama_fits_16_npus_with_gqa},
        {"vgg16 layers sum to published totals", test_vgg16_layers_sum_to_published_totals},
        {"every shipped workload loads and fits its NPU count",
         test_every_shipped_workload_loads_and_fits_its_npu_count},
        {"malformed JSON reports its line", test_malformed_json_reports_its_line},
        {"byte-order mark is named", test_byte_order_mark_is_named},
        {"duplicate key is rejected with its line", test_duplicate_key_is_rejected_with_its_line},
        {"missing file is an input error", test_missing_file_is_an_input_error},
        {"top-level array is rejected", test_top_level_array_is_rejected},
        {"unknown key names the dotted key", test_unknown_key_names_the_dotted_key},
        {"unknown key names the nearest known key", test_unknown_key_names_the_nearest_known_key},
        {"unknown top-level key is rejected", test_unknown_top_level_key_is_rejected},
        {"string for integer names expected type", test_string_for_integer_names_expected_type},
        {"real for integer is a wrong type", test_real_for_integer_is_a_wrong_type},
        {"string for bool is a wrong type", test_string_for_bool_is_a_wrong_type},
        {"scalar for section is a wrong type", test_scalar_for_section_is_a_wrong_type},
        {"unknown dtype name lists the choices", test_unknown_dtype_name_lists_the_choices},
        {"unknown schedule name is rejected", test_unknown_schedule_name_is_rejected},
        {"unknown recompute name is rejected", test_unknown_recompute_name_is_rejected},
        {"missing required key is named", test_missing_required_key_is_named},
        {"missing section is named", test_missing_section_is_named},
        {"missing name is named", test_missing_name_is_named},
        {"empty name is rejected", test_empty_name_is_rejected},
        {"zero parallel size is out of range", test_zero_parallel_size_is_out_of_range},
        {"negative expert count is out of range", test_negative_expert_count_is_out_of_range},
        {"integer above int range is out of range", test_integer_above_int_range_is_out_of_range},
        {"empty layer list is rejected", test_empty_layer_list_is_rejected},
        {"unknown layer key names the layer", test_unknown_layer_key_names_the_layer},
        {"missing layer key names the layer", test_missing_layer_key_names_the_layer},
        {"time table columns must have equal length",
         test_time_table_columns_must_have_equal_length},
        {"time table batch must increase", test_time_table_batch_must_increase},
        {"null error pointer is allowed", test_null_error_pointer_is_allowed},
        {"optional keys take documented defaults", test_optional_keys_take_documented_defaults},
        {"layer time table is read", test_layer_time_table_is_read},
        {"schedule names round trip", test_schedule_names_round_trip},
        {"recompute names round trip", test_recompute_names_round_trip},
        {"dtype sizes are bytes per element", test_dtype_sizes_are_bytes_per_element});
}
