/*
 * test_pipeline_layout.c -- Megatron-Core's custom pipeline layout
 * (parallel.pipeline_model_parallel_layout, planner/model/pipeline_layout.c):
 * the decoder layers of every model chunk read from the string, counted by
 * hand from Megatron's grammar, and the strings this simulator refuses.
 */
#include <string.h>

#include "pipeline_split.h"
#include "testutil.h"

static void test_deepseek_layout_counts_every_chunk(void)
{
    /* 61 layers over PP 16 × VPP 2 = 32 stages: "Et*2" holds 2, the 29
     * repeats of "tt|" 2 each (stages 1 to 29), then "t" 1 and "L" 0 (the
     * LM head and loss only): 2 + 58 + 1 = 61. */
    int counts[32];
    wl_split_error e;
    CU_ASSERT_EQUAL_FATAL(wl_layout_counts("Et*2|(tt|)*29,t|L", 16, 2, 61, counts, &e), 0);
    CU_ASSERT_EQUAL(counts[0], 2);
    for (int k = 1; k <= 29; k++)
        CU_ASSERT_EQUAL(counts[k], 2);
    CU_ASSERT_EQUAL(counts[30], 1);
    CU_ASSERT_EQUAL(counts[31], 0);
}

static void test_nested_groups_and_cosmetics_expand(void)
{
    /* ((t|)*2)*2 is t|t|t|t|, then "t L": five stages of one layer */
    int counts[5];
    wl_split_error e;
    CU_ASSERT_EQUAL_FATAL(wl_layout_counts(" E ((t|)*2)*2, t L", 5, 1, 5, counts, &e), 0);
    for (int k = 0; k < 5; k++)
        CU_ASSERT_EQUAL(counts[k], 1);
    /* an embedding-only first stage: 0 decoder layers, not empty */
    CU_ASSERT_EQUAL_FATAL(wl_layout_counts("E|t*3|tL", 3, 1, 4, counts, &e), 0);
    CU_ASSERT_EQUAL(counts[0], 0);
    CU_ASSERT_EQUAL(counts[1], 3);
    CU_ASSERT_EQUAL(counts[2], 1);
}

static void expect_refused(const char *layout, int p, int v, int layers, const char *why)
{
    wl_split_error e;
    memset(&e, 0, sizeof e);
    CU_ASSERT_NOT_EQUAL(wl_layout_counts(layout, p, v, layers, NULL, &e), 0);
    CU_ASSERT_PTR_NOT_NULL(e.key);
    if (e.key)
        CU_ASSERT_STRING_EQUAL(e.key, "parallel.pipeline_model_parallel_layout");
    if (!strstr(e.text, why))
        fprintf(stderr, "\n  '%s': expected '%s' in: %s\n", layout, why, e.text);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.text, why));
}

static void test_refusals_name_the_key_and_the_reason(void)
{
    /* Megatron's own DeepSeek-V3 example holds an MTP layer */
    expect_refused("Et*3|(tt|)*29,m|L", 16, 2, 61, "'m'");
    expect_refused("Et|t|tL", 2, 1, 3, "lists 3 stages");
    expect_refused("Et|t|tL", 3, 1, 4, "places 3 decoder layers");
    expect_refused("t|EtL", 2, 1, 3, "'E'");
    expect_refused("EtL|t", 2, 1, 2, "'L'");
    expect_refused("Et||tL", 3, 1, 2, "empty");
    expect_refused("Etx|tL", 2, 1, 2, "at character 3");
    expect_refused("E(t|tL", 2, 1, 2, "without its ')'");
    expect_refused("Et)|tL", 2, 1, 2, "without its '('");
    expect_refused("Et*0|tL", 2, 1, 2, "repeat count");
    expect_refused("E(t|)*99999999tL", 2, 1, 2, "repeat count from 1 to");
    expect_refused("E((t|)*9999)*9999tL", 2, 1, 2, "more than");
}

void register_pipeline_layout_tests(void)
{
    TEST_SUITE("pipeline_layout",
               {"DeepSeek layout counts every chunk", test_deepseek_layout_counts_every_chunk},
               {"nested groups and cosmetics expand", test_nested_groups_and_cosmetics_expand},
               {"refusals name the key and the reason", test_refusals_name_the_key_and_the_reason});
}
