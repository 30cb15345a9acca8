/*
 * test_workload_modern.c -- the workload keys of "train models the way they
 * are trained today": their defaults (Megatron-LM's), their ranges, and the
 * default of data_parallel_sharding_strategy, which follows
 * use_distributed_optimizer (docs/workload-format.md).
 */
#include <string.h>

#include "testutil.h"
#include "workload.h"

static void test_modern_keys_default_to_megatron(void)
{
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with("workloads/small_gpt.json", NULL, 0, &w, &err), 0);
    CU_ASSERT_FALSE(w.training.use_flash_attn);
    CU_ASSERT_EQUAL(w.model.attention_dropout, 0.1);
    CU_ASSERT_EQUAL(w.model.hidden_dropout, 0.1);
    CU_ASSERT_TRUE(w.training.scatter_gather_tensors_in_pipeline);
    CU_ASSERT_EQUAL(w.parallel.context_parallel_size, 1);
    CU_ASSERT_EQUAL(w.parallel.decoder_first_pipeline_num_layers, 0);
    CU_ASSERT_EQUAL(w.parallel.decoder_last_pipeline_num_layers, 0);
    CU_ASSERT_FALSE(w.parallel.account_for_embedding_in_pipeline_split);
    CU_ASSERT_FALSE(w.parallel.account_for_loss_in_pipeline_split);
    /* small_gpt.json has no distributed optimizer. */
    CU_ASSERT_FALSE(w.training.use_distributed_optimizer);
    CU_ASSERT_EQUAL(w.training.data_parallel_sharding_strategy, WL_SHARD_NO_SHARD);
    wl_free(&w);
}

static void test_sharding_defaults_to_optim_with_the_distributed_optimizer(void)
{
    const char *const set[] = {"use_distributed_optimizer=true"};
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with("workloads/small_gpt.json", set, 1, &w, &err), 0);
    CU_ASSERT_EQUAL(w.training.data_parallel_sharding_strategy, WL_SHARD_OPTIM);
    CU_ASSERT_STRING_EQUAL(wl_sharding_name(w.training.data_parallel_sharding_strategy), "optim");
    wl_free(&w);
}

static void test_modern_keys_are_read(void)
{
    const char *const set[] = {"use_flash_attn=true",
                               "attention_dropout=0",
                               "hidden_dropout=0.25",
                               "scatter_gather_tensors_in_pipeline=false",
                               "context_parallel_size=2",
                               "decoder_first_pipeline_num_layers=1",
                               "decoder_last_pipeline_num_layers=3",
                               "data_parallel_sharding_strategy=optim_grads_params"};
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with("workloads/small_gpt.json", set, 8, &w, &err), 0);
    CU_ASSERT_TRUE(w.training.use_flash_attn);
    CU_ASSERT_EQUAL(w.model.attention_dropout, 0.0);
    CU_ASSERT_EQUAL(w.model.hidden_dropout, 0.25);
    CU_ASSERT_FALSE(w.training.scatter_gather_tensors_in_pipeline);
    CU_ASSERT_EQUAL(w.parallel.context_parallel_size, 2);
    CU_ASSERT_EQUAL(w.parallel.decoder_first_pipeline_num_layers, 1);
    CU_ASSERT_EQUAL(w.parallel.decoder_last_pipeline_num_layers, 3);
    CU_ASSERT_EQUAL(w.training.data_parallel_sharding_strategy, WL_SHARD_OPTIM_GRADS_PARAMS);
    wl_free(&w);
    /* Megatron refuses the uneven first / last stage together with the
     * embedding or loss counted as a layer, so these are read on their own:
     * 8 layers + 2 = 10 is not a multiple of PP 4, hence PP 2. */
    const char *const account[] = {"account_for_embedding_in_pipeline_split=true",
                                   "account_for_loss_in_pipeline_split=true",
                                   "pipeline_model_parallel_size=2"};
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with("workloads/small_gpt.json", account, 3, &w, &err), 0);
    CU_ASSERT_TRUE(w.parallel.account_for_embedding_in_pipeline_split);
    CU_ASSERT_TRUE(w.parallel.account_for_loss_in_pipeline_split);
    wl_free(&w);
}

static void test_dropout_is_a_probability_below_one(void)
{
    test_expect_override_error("workloads/small_gpt.json", "attention_dropout=1",
                               "model.attention_dropout", "a number in [0, 1)");
    test_expect_override_error("workloads/small_gpt.json", "hidden_dropout=-0.1",
                               "model.hidden_dropout", "a number in [0, 1)");
    test_expect_override_error("workloads/small_gpt.json", "hidden_dropout=true",
                               "model.hidden_dropout", "a number in [0, 1)");
}

static void test_parallel_keys_have_ranges(void)
{
    test_expect_override_error("workloads/small_gpt.json", "context_parallel_size=0",
                               "parallel.context_parallel_size", "a positive integer");
    test_expect_override_error("workloads/small_gpt.json", "decoder_first_pipeline_num_layers=-1",
                               "parallel.decoder_first_pipeline_num_layers",
                               "a non-negative integer");
    test_expect_override_error("workloads/small_gpt.json", "decoder_last_pipeline_num_layers=10001",
                               "parallel.decoder_last_pipeline_num_layers",
                               "no larger than 10000 layers");
    test_expect_override_error("workloads/small_gpt.json", "data_parallel_sharding_strategy=zero3",
                               "training.data_parallel_sharding_strategy",
                               "\"no_shard\", \"optim\", \"optim_grads\", \"optim_grads_params\"");
}

void register_workload_modern_tests(void)
{
    TEST_SUITE("workload_modern",
               {"modern keys default to Megatron", test_modern_keys_default_to_megatron},
               {"sharding defaults to optim with the distributed optimizer",
                test_sharding_defaults_to_optim_with_the_distributed_optimizer},
               {"modern keys are read", test_modern_keys_are_read},
               {"dropout is a probability below one", test_dropout_is_a_probability_below_one},
               {"parallel keys have ranges", test_parallel_keys_have_ranges});
}
