/*
 * test_report.c -- the recompute label of the table and the CSV
 * (report_recompute_summary): one word only when every counted layer takes
 * the same option, mixed(n/s/f) as soon as two are used, the embedding and
 * the LM head counted only when recomputed, AdaPipe's units(k/L) over the
 * layers that have units.
 */
#include <string.h>

#include "report.h"
#include "testutil.h"

/* A Transformer's layer array: an embedding, `decoders` decoder layers with
 * 3 units each, an LM head; one stage holds them all. */
static void transformer(cm_model *cm, plan *pl, int decoders)
{
    test_uniform_model(cm, decoders + 2);
    for (int l = 0; l < cm->num_layers; l++) {
        cm->layers[l].kind = CM_DECODER;
        cm->layers[l].num_units = 3;
    }
    cm->layers[0].kind = CM_EMBEDDING;
    cm->layers[0].num_units = 0;
    cm->layers[decoders + 1].kind = CM_LM_HEAD;
    cm->layers[decoders + 1].num_units = 0;
    test_uniform_plan(pl, 1, 1, decoders + 2, SCHED_1F1B);
}

static const char *label(const plan *pl, const cm_model *cm)
{
    static char buf[48];
    return report_recompute_summary(pl, cm, buf, sizeof buf);
}

/* The plan that was labelled "full": 1 of 80 decoders recomputed in full. */
static void test_one_full_layer_among_none_is_mixed(void)
{
    cm_model cm;
    plan pl;
    transformer(&cm, &pl, 80);
    pl.recompute[40] = RECOMPUTE_FULL;
    CU_ASSERT_STRING_EQUAL(label(&pl, &cm), "mixed(79/0/1)");
    CU_ASSERT_STRING_EQUAL(label(&pl, NULL), "mixed(81/0/1)"); /* every layer counts */
    pl.recompute[41] = RECOMPUTE_SELECTIVE;
    CU_ASSERT_STRING_EQUAL(label(&pl, &cm), "mixed(78/1/1)");
    plan_free(&pl);
    cm_free(&cm);
}

/* Megatron's uniform options leave the embedding and the head alone. */
static void test_uniform_decoders_are_one_word(void)
{
    cm_model cm;
    plan pl;
    transformer(&cm, &pl, 8);
    CU_ASSERT_STRING_EQUAL(label(&pl, &cm), "none");
    for (int l = 1; l <= 8; l++)
        pl.recompute[l] = RECOMPUTE_FULL;
    CU_ASSERT_STRING_EQUAL(label(&pl, &cm), "full");
    pl.merak_shifted_recompute = true;
    CU_ASSERT_STRING_EQUAL(label(&pl, &cm), "full+shift");
    pl.merak_shifted_recompute = false;
    /* a recomputed head is a decision of its own */
    pl.recompute[9] = RECOMPUTE_FULL;
    CU_ASSERT_STRING_EQUAL(label(&pl, &cm), "full");
    for (int l = 1; l <= 8; l++)
        pl.recompute[l] = RECOMPUTE_SELECTIVE;
    CU_ASSERT_STRING_EQUAL(label(&pl, &cm), "mixed(0/8/1)");
    plan_free(&pl);
    cm_free(&cm);
}

/* Layer-by-layer models: every listed layer counts. */
static void test_listed_layers_all_count(void)
{
    cm_model cm;
    plan pl;
    test_uniform_model(&cm, 4);
    for (int l = 0; l < 4; l++)
        cm.layers[l].kind = CM_CUSTOM;
    test_uniform_plan(&pl, 1, 1, 4, SCHED_GPIPE);
    pl.recompute[3] = RECOMPUTE_FULL;
    CU_ASSERT_STRING_EQUAL(label(&pl, &cm), "mixed(3/0/1)");
    plan_free(&pl);
    cm_free(&cm);
}

/* AdaPipe: L is the layers that have units, not the embedding and head. */
static void test_units_count_layers_with_units(void)
{
    cm_model cm;
    plan pl;
    transformer(&cm, &pl, 80);
    CU_ASSERT_EQUAL_FATAL(plan_use_recompute_units(&pl), 0);
    CU_ASSERT_STRING_EQUAL(label(&pl, &cm), "none");
    for (int l = 1; l <= 20; l++)
        pl.recompute_units[l] = 0x5;
    CU_ASSERT_STRING_EQUAL(label(&pl, &cm), "units(20/80)");
    CU_ASSERT_STRING_EQUAL(label(&pl, NULL), "units(20/82)");
    plan_free(&pl);
    cm_free(&cm);
}

void register_report_tests(void)
{
    TEST_SUITE("report",
               {"one_full_layer_among_none_is_mixed", test_one_full_layer_among_none_is_mixed},
               {"uniform_decoders_are_one_word", test_uniform_decoders_are_one_word},
               {"listed_layers_all_count", test_listed_layers_all_count},
               {"units_count_layers_with_units", test_units_count_layers_with_units});
}
