/*
 * test_pipeline_split.c -- Megatron's fixed pipeline split
 * (pipeline_split.h): decoder_first/last_pipeline_num_layers and
 * account_for_embedding/loss_in_pipeline_split, in closed form, at load time,
 * in the plans of the planners that take it and the notes of those that
 * choose their own cut points.
 *
 * Closed forms (Megatron-LM get_num_layers_to_build): with first f and last
 * l set, every middle stage holds (L − f − l)/(p − 2) layers and each chunk
 * of a stage its count / v; with the embedding and the loss counted,
 * (L + 2)/p per stage, / v per chunk, one fewer on the first and the last
 * model chunk.
 */
#include <string.h>

#include "costmodel.h"
#include "pipeline_split.h"
#include "planner.h"
#include "testutil.h"

static int sum_of(const int *a, int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += a[i];
    return s;
}

/* A workload of `layers` decoders on p stages with the keys given. */
static wl_workload split_workload(int layers, int p, int first, int last, bool emb, bool loss)
{
    wl_workload w;
    memset(&w, 0, sizeof w);
    w.model.num_layers = layers;
    w.parallel.pipeline_model_parallel_size = p;
    w.parallel.decoder_first_pipeline_num_layers = first;
    w.parallel.decoder_last_pipeline_num_layers = last;
    w.parallel.account_for_embedding_in_pipeline_split = emb;
    w.parallel.account_for_loss_in_pipeline_split = loss;
    return w;
}

static void test_uneven_stages_sum_to_the_keys_and_the_even_rest(void)
{
    /* Llama 3 405B: 126 layers, PP 16, 7 on the first and last stage. */
    wl_workload w = split_workload(126, 16, 7, 7, false, false);
    int counts[16];
    wl_split_error e;
    CU_ASSERT_EQUAL_FATAL(wl_pipeline_split(&w, 16, 1, counts, &e), 0);
    CU_ASSERT_EQUAL(counts[0], 7);
    CU_ASSERT_EQUAL(counts[15], 7);
    for (int s = 1; s < 15; s++)
        CU_ASSERT_EQUAL(counts[s], (126 - 7 - 7) / 14);
    CU_ASSERT_EQUAL(sum_of(counts, 16), 126);
    /* Only the first stage fixed: the 15 others share 126 − 6 = 120. */
    w = split_workload(126, 16, 6, 0, false, false);
    CU_ASSERT_EQUAL_FATAL(wl_pipeline_split(&w, 16, 1, counts, &e), 0);
    CU_ASSERT_EQUAL(counts[0], 6);
    for (int s = 1; s < 16; s++)
        CU_ASSERT_EQUAL(counts[s], 8);
    /* Two stages: the last one takes what the first leaves. */
    w = split_workload(10, 2, 0, 3, false, false);
    CU_ASSERT_EQUAL_FATAL(wl_pipeline_split(&w, 2, 1, counts, &e), 0);
    CU_ASSERT_EQUAL(counts[0], 7);
    CU_ASSERT_EQUAL(counts[1], 3);
}

static void test_interleaved_chunks_split_each_stage_count(void)
{
    /* v = 2: chunk k = j·p + s holds stage s's count / 2. */
    wl_workload w = split_workload(126, 16, 6, 8, false, false);
    int counts[32];
    wl_split_error e;
    CU_ASSERT_EQUAL_FATAL(wl_pipeline_split(&w, 16, 2, counts, &e), 0);
    for (int j = 0; j < 2; j++) {
        CU_ASSERT_EQUAL(counts[j * 16 + 0], 3);
        CU_ASSERT_EQUAL(counts[j * 16 + 15], 4);
        for (int s = 1; s < 15; s++)
            CU_ASSERT_EQUAL(counts[j * 16 + s], 4);
    }
    CU_ASSERT_EQUAL(sum_of(counts, 32), 126);
    /* The embedding and the loss counted: (126 + 2) / 16 = 8 per stage, 4 per
     * chunk, 3 on the first and the last model chunk. */
    w = split_workload(126, 16, 0, 0, true, true);
    CU_ASSERT_EQUAL_FATAL(wl_pipeline_split(&w, 16, 2, counts, &e), 0);
    CU_ASSERT_EQUAL(counts[0], 3);
    CU_ASSERT_EQUAL(counts[31], 3);
    for (int k = 1; k < 31; k++)
        CU_ASSERT_EQUAL(counts[k], 4);
    CU_ASSERT_EQUAL(sum_of(counts, 32), 126);
    /* v = 1: the same stages as first = last = 7. */
    CU_ASSERT_EQUAL_FATAL(wl_pipeline_split(&w, 16, 1, counts, &e), 0);
    CU_ASSERT_EQUAL(counts[0], 7);
    CU_ASSERT_EQUAL(counts[15], 7);
    CU_ASSERT_EQUAL(counts[7], 8);
    /* Only the loss: (8 + 1) / 3 = 3, the last stage 2. */
    w = split_workload(8, 3, 0, 0, false, true);
    CU_ASSERT_EQUAL_FATAL(wl_pipeline_split(&w, 3, 1, counts, &e), 0);
    CU_ASSERT_EQUAL(counts[0], 3);
    CU_ASSERT_EQUAL(counts[2], 2);
}

static void expect_split_error(const wl_workload *w, int p, int v, const char *key,
                               const char *text)
{
    wl_split_error e = {0};
    CU_ASSERT_EQUAL(wl_pipeline_split(w, p, v, NULL, &e), -1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e.key);
    CU_ASSERT_STRING_EQUAL(e.key, key);
    if (!strstr(e.text, text))
        fprintf(stderr, "\n  expected \"%s\" in \"%s\"\n", text, e.text);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.text, text));
}

static void test_impossible_splits_name_their_key(void)
{
    wl_workload w = split_workload(126, 16, 5, 7, false, false);
    expect_split_error(&w, 16, 1, WL_KEY_FIRST_STAGE, "must split evenly over the 14 middle");
    w = split_workload(126, 16, 0, 5, false, false);
    expect_split_error(&w, 16, 1, WL_KEY_LAST_STAGE, "must split evenly over the 15 middle");
    /* Megatron: a stage's count is split over its chunks. */
    w = split_workload(126, 16, 7, 7, false, false);
    expect_split_error(&w, 16, 2, WL_KEY_FIRST_STAGE, "must divide them");
    w = split_workload(126, 16, 6, 0, false, false);
    expect_split_error(&w, 16, 3, WL_KEY_FIRST_STAGE, "must divide them");
    w = split_workload(126, 16, 7, 7, true, false);
    expect_split_error(&w, 16, 1, WL_KEY_ACCOUNT_EMBEDDING, "cannot be combined");
    w = split_workload(126, 16, 0, 0, false, true);
    expect_split_error(&w, 16, 1, WL_KEY_ACCOUNT_LOSS, "must be a multiple");
    w = split_workload(16, 2, 8, 7, false, false);
    expect_split_error(&w, 2, 1, WL_KEY_FIRST_STAGE, "must equal model.num_layers");
    w = split_workload(16, 4, 8, 8, false, false);
    expect_split_error(&w, 4, 1, WL_KEY_FIRST_STAGE, "need at least one each");
    w = split_workload(16, 1, 8, 0, false, false);
    expect_split_error(&w, 1, 1, WL_KEY_FIRST_STAGE, "at least 2 pipeline stages");
    w = split_workload(16, 4, 0, 0, true, false);
    w.model.num_layer_specs = 16;
    expect_split_error(&w, 4, 1, WL_KEY_ACCOUNT_EMBEDDING, "no embedding or loss layer");
}

/* llama.json counts the embedding and the loss as layers (Meta's layout);
 * the uneven first / last stage keys exclude those, so the tests that set
 * them clear the two first. */
#define CLEAR_ACCOUNT_KEYS                                                                         \
    "account_for_embedding_in_pipeline_split=false", "account_for_loss_in_pipeline_split=false"

static void test_the_loader_checks_the_split(void)
{
    wl_workload w;
    np_error err;
    const char *const five[] = {CLEAR_ACCOUNT_KEYS, "decoder_first_pipeline_num_layers=5"};
    CU_ASSERT_NOT_EQUAL(test_wl_load_with("workloads/llama3_405b_1f1b.json", five, 3, &w, &err), 0);
    CU_ASSERT_STRING_EQUAL(err.key, WL_KEY_FIRST_STAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "must split evenly"));
    /* The two forms together are refused, naming the account key. */
    const char *const both[] = {"decoder_first_pipeline_num_layers=7"};
    CU_ASSERT_NOT_EQUAL(test_wl_load_with("workloads/llama3_405b_1f1b.json", both, 1, &w, &err), 0);
    CU_ASSERT_STRING_EQUAL(err.key, WL_KEY_ACCOUNT_EMBEDDING);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "cannot be combined"));
    /* Interleaved today needs L divisible by p·v; with the keys the split's
     * own rule applies instead. */
    const char *const set[] = {"schedule=interleaved", "virtual_pipeline_model_parallel_size=2",
                               "account_for_embedding_in_pipeline_split=true",
                               "account_for_loss_in_pipeline_split=true"};
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with("workloads/llama3_405b_1f1b.json", set, 4, &w, &err),
                          0);
    wl_free(&w);
    const char *const odd[] = {
        CLEAR_ACCOUNT_KEYS, "schedule=interleaved", "virtual_pipeline_model_parallel_size=2",
        "decoder_first_pipeline_num_layers=7", "decoder_last_pipeline_num_layers=7"};
    CU_ASSERT_NOT_EQUAL(test_wl_load_with("workloads/llama3_405b_1f1b.json", odd, 6, &w, &err), 0);
    CU_ASSERT_STRING_EQUAL(err.key, WL_KEY_FIRST_STAGE);
    CU_ASSERT_STRING_EQUAL(err.source, "<command line>");
}

/* Llama 3 405B on the 16K cluster with the account keys cleared and the
 * overrides (at most 6), planned by `planner`. */
static int plan_llama(const char *const *set, int n, const char *planner, cm_model *cm, plan *pl,
                      np_error *err)
{
    wl_workload w;
    memset(cm, 0, sizeof *cm);
    memset(pl, 0, sizeof *pl);
    const char *all[8] = {CLEAR_ACCOUNT_KEYS};
    for (int i = 0; i < n && i < 6; i++)
        all[2 + i] = set[i];
    int rc =
        test_wl_load_with("workloads/llama3_405b_1f1b.json", all, 2 + (n < 6 ? n : 6), &w, err);
    if (rc)
        return rc;
    cl_cluster c = test_npu_cluster(16384, 8);
    if (!(rc = wl_check_cluster(&w, c.num_npus, err)) && !(rc = cm_build(&w, &c, 0, cm, err)))
        rc = test_run_planner(planner, cm, &c, &w, pl, err);
    wl_free(&w);
    return rc;
}

/* Decoder layers of model chunk k of a plan on a Transformer's cost model. */
static int chunk_decoders(const cm_model *cm, const plan *pl, int k)
{
    int n = 0;
    for (int l = pl->chunk_start[k]; l < pl->chunk_start[k + 1]; l++)
        n += cm->layers[l].kind == CM_DECODER;
    return n;
}

static void test_megatron_plans_the_126_layer_llama(void)
{
    cm_model cm;
    plan pl;
    np_error err;
    const char *const set[] = {"decoder_first_pipeline_num_layers=7",
                               "decoder_last_pipeline_num_layers=7"};
    CU_ASSERT_EQUAL_FATAL(plan_llama(set, 2, "megatron", &cm, &pl, &err), 0);
    CU_ASSERT_EQUAL(cm.num_layers, 128);
    CU_ASSERT_EQUAL(chunk_decoders(&cm, &pl, 0), 7);
    CU_ASSERT_EQUAL(chunk_decoders(&cm, &pl, 15), 7);
    for (int s = 1; s < 15; s++)
        CU_ASSERT_EQUAL(chunk_decoders(&cm, &pl, s), 8);
    CU_ASSERT_EQUAL(cm.layers[pl.chunk_start[1] - 8].kind, CM_EMBEDDING);
    CU_ASSERT_EQUAL(cm.layers[pl.chunk_start[16] - 1].kind, CM_LM_HEAD);
    CU_ASSERT_EQUAL(plan_check(&pl, "test", &err), 0);
    plan_free(&pl);
    cm_free(&cm);
    /* Interleaved, v = 2: the embedding and the loss counted as layers. */
    const char *const il[] = {"schedule=interleaved", "virtual_pipeline_model_parallel_size=2",
                              "account_for_embedding_in_pipeline_split=true",
                              "account_for_loss_in_pipeline_split=true"};
    CU_ASSERT_EQUAL_FATAL(plan_llama(il, 4, "megatron", &cm, &pl, &err), 0);
    CU_ASSERT_EQUAL(pl.num_chunks, 2);
    CU_ASSERT_EQUAL(chunk_decoders(&cm, &pl, 0), 3);
    CU_ASSERT_EQUAL(chunk_decoders(&cm, &pl, 31), 3);
    for (int k = 1; k < 31; k++)
        CU_ASSERT_EQUAL(chunk_decoders(&cm, &pl, k), 4);
    CU_ASSERT_EQUAL(pl.chunk_start[1], 4); /* embedding + 3 decoders */
    CU_ASSERT_EQUAL(plan_check(&pl, "test", &err), 0);
    plan_free(&pl);
    cm_free(&cm);
    /* Interleaved, v = 2, first 6 and last 8: 3 and 4 per chunk. */
    const char *const fl[] = {"schedule=interleaved", "virtual_pipeline_model_parallel_size=2",
                              "decoder_first_pipeline_num_layers=6",
                              "decoder_last_pipeline_num_layers=8"};
    CU_ASSERT_EQUAL_FATAL(plan_llama(fl, 4, "megatron", &cm, &pl, &err), 0);
    CU_ASSERT_EQUAL(chunk_decoders(&cm, &pl, 0), 3);
    CU_ASSERT_EQUAL(chunk_decoders(&cm, &pl, 16), 3);
    CU_ASSERT_EQUAL(chunk_decoders(&cm, &pl, 15), 4);
    CU_ASSERT_EQUAL(chunk_decoders(&cm, &pl, 31), 4);
    plan_free(&pl);
    cm_free(&cm);
}

static void test_merak_takes_the_split_and_searching_planners_note_it(void)
{
    cm_model cm;
    plan pl;
    np_error err;
    const char *const set[] = {"decoder_first_pipeline_num_layers=6",
                               "decoder_last_pipeline_num_layers=6",
                               "pipeline_model_parallel_size=8", "data_parallel_size=256"};
    CU_ASSERT_EQUAL_FATAL(plan_llama(set, 4, "merak", &cm, &pl, &err), 0);
    CU_ASSERT_EQUAL(chunk_decoders(&cm, &pl, 0), 6);
    CU_ASSERT_EQUAL(chunk_decoders(&cm, &pl, 7), 6);
    for (int s = 1; s < 7; s++)
        CU_ASSERT_EQUAL(chunk_decoders(&cm, &pl, s), (126 - 12) / 6);
    plan_free(&pl);
    cm_free(&cm);
    /* The searching planners plan it with their own cut points and say so
     * (test_planner_split.c checks their splits against brute force). */
    const char *const planners[] = {"pipedream", "adapipe"};
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(plan_llama(set, 4, planners[i], &cm, &pl, &err), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(pl.note, "chose its own cut points"));
        CU_ASSERT_PTR_NOT_NULL(strstr(pl.note, WL_KEY_FIRST_STAGE));
        plan_free(&pl);
        cm_free(&cm);
    }
}

void register_pipeline_split_tests(void)
{
    TEST_SUITE("pipeline_split",
               {"uneven stages sum to the keys and the even rest",
                test_uneven_stages_sum_to_the_keys_and_the_even_rest},
               {"interleaved chunks split each stage's count",
                test_interleaved_chunks_split_each_stage_count},
               {"impossible splits name their key", test_impossible_splits_name_their_key},
               {"the loader checks the split", test_the_loader_checks_the_split},
               {"megatron plans the 126-layer Llama", test_megatron_plans_the_126_layer_llama},
               {"merak takes the split, searching planners note it",
                test_merak_takes_the_split_and_searching_planners_note_it});
}
