/*
 * test_planner_split.c -- every planner accepts Megatron's fixed pipeline
 * split keys (decoder_first/last_pipeline_num_layers,
 * account_for_embedding/loss_in_pipeline_split): Megatron and Merak take
 * the split, the planners that search their cut points choose their own and
 * say so in the plan's note, TensorOpt applies the split at the pp it
 * chooses (planner_split.c).
 *
 * Independent references:
 *   - Megatron's split by hand (Megatron-LM get_num_layers_to_build()): 14
 *     decoders on 4 stages with the embedding and the loss counted as
 *     layers: (14 + 2) / 4 = 4 per stage, 3 decoders on the first and last;
 *     with first = last = 2: (14 − 4) / 2 = 5 on each middle stage.  The
 *     cost model's array is [embedding, 14 decoders, LM head], so the chunks
 *     start at 0, 4, 8, 12 (16 layers) and 0, 3, 8, 13.
 *   - PipeDream: every contiguous split of the cost model's layers over the
 *     p stages, visited in the test, scored by PipeDream's objective
 *     without replication (SOSP'19 §3.1): the largest of every stage's
 *     Σ (forward + backward) and twice every cut's transfer.
 *   - BMPipe: bf_search() over every split and per-layer recompute option,
 *     scored by the BMPipe objective (bruteforce.h).
 * The embedding and the LM head are layers of the array (their forward
 * time is positive), so every split the references visit prices them on
 * the first and last stage, as the planners do.
 */
#include <math.h>
#include <string.h>

#include "bruteforce.h"
#include "costmodel.h"
#include "memory.h"
#include "pipeline_split.h"
#include "planner.h"
#include "testutil.h"

#define MAX_STAGES 8

/* small_llama.json with the overrides, priced on a 16-NPU 910B-class
 * cluster (TP 2 × PP 4 × DP 2). */
static int small_llama(const char *const *set, int n, wl_workload *w, cm_model *cm, cl_cluster *c)
{
    np_error err;
    memset(cm, 0, sizeof *cm);
    *c = test_npu_cluster(16, 8);
    int rc = test_wl_load_with("workloads/small_llama.json", set, n, w, &err);
    if (!rc && (rc = cm_build(w, c, 0, cm, &err)))
        wl_free(w);
    if (rc)
        fprintf(stderr, "\n  small_llama: %s: %s\n", err.key, err.text);
    return rc;
}

static const char *const account_14[] = {"num_layers=14",
                                         "account_for_embedding_in_pipeline_split=true",
                                         "account_for_loss_in_pipeline_split=true"};
static const char *const first_last_14[] = {"num_layers=14", "decoder_first_pipeline_num_layers=2",
                                            "decoder_last_pipeline_num_layers=2"};

static void expect_starts(const plan *pl, const int *starts, int n)
{
    CU_ASSERT_EQUAL_FATAL(pl->num_stages * pl->num_chunks + 1, n);
    for (int k = 0; k < n; k++) {
        if (pl->chunk_start[k] != starts[k])
            fprintf(stderr, "\n  %s: chunk_start[%d] = %d, expected %d\n", pl->planner, k,
                    pl->chunk_start[k], starts[k]);
        CU_ASSERT_EQUAL(pl->chunk_start[k], starts[k]);
    }
}

static void test_megatron_and_merak_take_the_hand_computed_split(void)
{
    const char *const *sets[] = {account_14, first_last_14};
    const int starts[2][5] = {{0, 4, 8, 12, 16}, {0, 3, 8, 13, 16}};
    const char *const planners[] = {"megatron", "merak"};
    for (int k = 0; k < 2; k++) {
        wl_workload w;
        cm_model cm;
        cl_cluster c;
        CU_ASSERT_EQUAL_FATAL(small_llama(sets[k], 3, &w, &cm, &c), 0);
        CU_ASSERT_EQUAL(cm.num_layers, 16);
        CU_ASSERT_EQUAL(cm.layers[0].kind, CM_EMBEDDING);
        CU_ASSERT_EQUAL(cm.layers[15].kind, CM_LM_HEAD);
        for (int i = 0; i < 2; i++) {
            plan pl;
            np_error err;
            CU_ASSERT_EQUAL_FATAL(test_run_planner(planners[i], &cm, &c, &w, &pl, &err), 0);
            expect_starts(&pl, starts[k], 5);
            CU_ASSERT_STRING_EQUAL(pl.note, ""); /* they take the split: nothing to say */
            plan_free(&pl);
        }
        cm_free(&cm);
        wl_free(&w);
    }
}

/* ---- PipeDream against every split ----------------------------------------- */

typedef struct pd_reference {
    const cm_model *cm;
    const cl_cluster *c;
    int p;
    int cut[MAX_STAGES + 1]; /* the split being built */
    double best;
    int best_cut[MAX_STAGES + 1];
} pd_reference;

/* PipeDream's objective of the split in ref->cut, recompute none. */
static double pd_objective(const pd_reference *ref)
{
    double worst = 0;
    for (int s = 0; s < ref->p; s++) {
        double work = 0;
        for (int l = ref->cut[s]; l < ref->cut[s + 1]; l++)
            work += cm_forward_total_s(&ref->cm->layers[l]) +
                    cm_backward_total_s(&ref->cm->layers[l], RECOMPUTE_NONE);
        worst = fmax(worst, work);
        if (s > 0)
            worst = fmax(worst, 2.0 * cm_boundary_s(ref->c, &ref->cm->layers[ref->cut[s] - 1], 0));
    }
    return worst;
}

static void pd_visit(pd_reference *ref, int s)
{
    int L = ref->cm->num_layers;
    if (s == ref->p - 1) {
        ref->cut[ref->p] = L;
        double t = pd_objective(ref);
        if (t < ref->best) {
            ref->best = t;
            memcpy(ref->best_cut, ref->cut, sizeof ref->cut);
        }
        return;
    }
    for (int next = ref->cut[s] + 1; next <= L - (ref->p - 1 - s); next++) {
        ref->cut[s + 1] = next;
        pd_visit(ref, s + 1);
    }
}

static void test_pipedream_chooses_the_brute_force_split(void)
{
    const char *const *sets[] = {account_14, first_last_14};
    for (int k = 0; k < 2; k++) {
        wl_workload w;
        cm_model cm;
        cl_cluster c;
        CU_ASSERT_EQUAL_FATAL(small_llama(sets[k], 3, &w, &cm, &c), 0);
        CU_ASSERT(cm.layers[0].forward_s > 0);  /* the embedding is priced */
        CU_ASSERT(cm.layers[15].forward_s > 0); /* the LM head and loss too */
        pd_reference ref = {.cm = &cm, .c = &c, .p = 4, .best = INFINITY};
        pd_visit(&ref, 0);
        plan pl;
        np_error err;
        CU_ASSERT_EQUAL_FATAL(test_run_planner("pipedream", &cm, &c, &w, &pl, &err), 0);
        /* 64 GB hold this model without recompute: PipeDream's first choice. */
        CU_ASSERT_EQUAL(pl.recompute[1], RECOMPUTE_NONE);
        CU_ASSERT_EQUAL(mem_check_fits(&cm, &pl, NULL), 0);
        pd_reference mine = ref;
        memcpy(mine.cut, pl.chunk_start, 5 * sizeof *pl.chunk_start);
        ASSERT_REL(pd_objective(&mine), ref.best, 1e-12);
        /* Megatron's split under the keys is no better; with first = last =
         * 2 (5 decoders on each middle stage against the optimum's 4 or 5
         * layers per stage) it is strictly worse, so PipeDream's split is
         * its own. */
        plan meg;
        CU_ASSERT_EQUAL_FATAL(test_run_planner("megatron", &cm, &c, &w, &meg, &err), 0);
        memcpy(mine.cut, meg.chunk_start, 5 * sizeof *meg.chunk_start);
        double keys = pd_objective(&mine);
        CU_ASSERT(ref.best <= keys * (1 + 1e-12));
        if (k == 1)
            CU_ASSERT(ref.best < keys * 0.9);
        plan_free(&meg);
        CU_ASSERT_PTR_NOT_NULL(strstr(pl.note, "pipedream chose its own cut points"));
        CU_ASSERT_PTR_NOT_NULL(strstr(pl.note, wl_split_key(&w)));
        plan_free(&pl);
        cm_free(&cm);
        wl_free(&w);
    }
}

/* ---- BMPipe against every split and recompute option ----------------------- */

static void test_bmpipe_reaches_the_brute_force_optimum(void)
{
    /* 6 decoders: (6 + 2) / 4 = 2 per stage with the keys; 8 layers, 35
     * splits × 3^8 options = 229,635 plans to visit. */
    const char *const set[] = {"num_layers=6", "account_for_embedding_in_pipeline_split=true",
                               "account_for_loss_in_pipeline_split=true"};
    wl_workload w;
    cm_model cm;
    cl_cluster c;
    CU_ASSERT_EQUAL_FATAL(small_llama(set, 3, &w, &cm, &c), 0);
    CU_ASSERT_EQUAL_FATAL(cm.num_layers, 8);
    planner_options o;
    planner_init_options(&o, &w);
    plan shape, best;
    bf_result res;
    CU_ASSERT_EQUAL_FATAL(plan_init(&shape, 4, 1, cm.num_layers), 0);
    planner_plan_basics(&shape, &w, &o);
    bf_bmpipe_ctx ctx = {&cm, &c};
    CU_ASSERT_EQUAL_FATAL(bf_search(&shape, BF_ALL_OPTIONS, bf_cost_bmpipe, &ctx, &best, &res), 0);
    plan pl;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_run_planner("bmpipe", &cm, &c, &w, &pl, &err), 0);
    ASSERT_REL(pl.predicted_iteration_s, res.best_cost, 1e-9);
    ASSERT_REL(bf_cost_bmpipe(&pl, &ctx), res.best_cost, 1e-9);
    CU_ASSERT_PTR_NOT_NULL(strstr(pl.note, "bmpipe chose its own cut points"));
    plan_free(&pl);
    plan_free(&best);
    plan_free(&shape);
    cm_free(&cm);
    wl_free(&w);
}

/* ---- every planner accepts the keys ---------------------------------------- */

/* Decoder layers of stage s of a one-chunk plan. */
static int stage_decoders(const cm_model *cm, const plan *pl, int s)
{
    int n = 0;
    for (int l = pl->chunk_start[s]; l < pl->chunk_start[s + 1]; l++)
        n += cm->layers[l].kind == CM_DECODER;
    return n;
}

static void test_every_planner_plans_with_the_keys(void)
{
    const char *const gpipe[] = {"num_layers=14", "account_for_embedding_in_pipeline_split=true",
                                 "account_for_loss_in_pipeline_split=true", "schedule=gpipe"};
    const struct {
        const char *name;
        bool gpipe;
    } planners[] = {{"pipedream", false}, {"adapipe", false}, {"bmpipe", false},
                    {"csimd", true},      {"mbpp-r", true},   {"mbpp-e", true}};
    for (size_t i = 0; i < sizeof planners / sizeof planners[0]; i++) {
        wl_workload w;
        cm_model cm;
        cl_cluster c;
        CU_ASSERT_EQUAL_FATAL(small_llama(planners[i].gpipe ? gpipe : account_14,
                                          planners[i].gpipe ? 4 : 3, &w, &cm, &c),
                              0);
        plan pl;
        np_error err;
        int rc = test_run_planner(planners[i].name, &cm, &c, &w, &pl, &err);
        if (rc)
            fprintf(stderr, "\n  %s: %s\n", planners[i].name, err.text);
        CU_ASSERT_EQUAL(rc, 0);
        if (!rc) {
            CU_ASSERT_PTR_NOT_NULL(strstr(pl.note, "chose its own cut points"));
            CU_ASSERT_PTR_NOT_NULL(strstr(pl.note, WL_KEY_ACCOUNT_EMBEDDING));
            plan_free(&pl);
        }
        cm_free(&cm);
        wl_free(&w);
    }
    /* Without the keys there is nothing to note. */
    wl_workload w;
    cm_model cm;
    cl_cluster c;
    const char *const plain[] = {"num_layers=14"};
    CU_ASSERT_EQUAL_FATAL(small_llama(plain, 1, &w, &cm, &c), 0);
    plan pl;
    CU_ASSERT_EQUAL_FATAL(test_run_planner("pipedream", &cm, &c, &w, &pl, NULL), 0);
    CU_ASSERT_STRING_EQUAL(pl.note, "");
    plan_free(&pl);
    cm_free(&cm);
    wl_free(&w);
}

/* TensorOpt re-chooses pp and partitions each candidate as Megatron does:
 * its plan holds the decoders wl_pipeline_split() gives at its own pp. */
static void test_ft_applies_the_split_at_its_pp(void)
{
    const char *const *sets[] = {account_14, first_last_14};
    for (int k = 0; k < 2; k++) {
        wl_workload w;
        cm_model cm;
        cl_cluster c;
        CU_ASSERT_EQUAL_FATAL(small_llama(sets[k], 3, &w, &cm, &c), 0);
        plan pl;
        np_error err;
        int rc = test_run_planner("ft", &cm, &c, &w, &pl, &err);
        if (rc)
            fprintf(stderr, "\n  ft: %s\n", err.text);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        int p = pl.num_stages, counts[MAX_STAGES];
        wl_split_error e;
        CU_ASSERT_FATAL(p <= MAX_STAGES);
        CU_ASSERT_EQUAL_FATAL(wl_pipeline_split(&w, p, 1, counts, &e), 0);
        for (int s = 0; s < p; s++)
            CU_ASSERT_EQUAL(stage_decoders(&cm, &pl, s), counts[s]);
        CU_ASSERT_PTR_NOT_NULL(strstr(pl.note, "ft applied Megatron's split"));
        plan_free(&pl);
        cm_free(&cm);
        wl_free(&w);
    }
}

void register_planner_split_tests(void)
{
    TEST_SUITE(
        "planner_split",
        {"megatron and merak take the hand-computed split",
         test_megatron_and_merak_take_the_hand_computed_split},
        {"pipedream chooses the brute-force split", test_pipedream_chooses_the_brute_force_split},
        {"bmpipe reaches the brute-force optimum", test_bmpipe_reaches_the_brute_force_optimum},
        {"every planner plans with the keys", test_every_planner_plans_with_the_keys},
        {"ft applies the split at its pp", test_ft_applies_the_split_at_its_pp});
}
