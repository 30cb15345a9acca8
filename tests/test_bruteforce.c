/*
 * test_bruteforce.c -- the exhaustive plan enumerator (planner/search/bruteforce.c)
 * on cases small enough to count and solve by hand.
 *
 * The enumerator is the reference the planner tests trust, so these tests
 * check that it visits every partition × recompute assignment exactly once,
 * that each candidate is a valid plan, that it returns the true minimum of
 * a cost whose minimiser is known in closed form, and that the BMPipe cost
 * it ships (bf_cost_bmpipe) gives hand-computed values.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bruteforce.h"
#include "memory.h"
#include "testutil.h"

/* A plan shape: p stages, v chunks, L layers, m micro-batches of 1. */
static void shape_init(plan *pl, int p, int v, int num_layers, int m, schedule_kind sched)
{
    plan_init(pl, p, v, num_layers);
    pl->schedule = sched;
    pl->micro_batch_size = 1;
    pl->num_micro_batches = m;
    pl->tensor_parallel = 1;
    pl->data_parallel = 1;
    strcpy(pl->planner, "test");
}

/* ---- enumeration ---------------------------------------------------------- */

/* Records every candidate as a number (cut points and options in base L+3)
 * and whether plan_check() accepts it. */
typedef struct recorder {
    long count, invalid;
    double seen[2048];
} recorder;

static double record_candidate(const plan *pl, void *ctx)
{
    recorder *rec = ctx;
    double key = 0;
    int chunks = pl->num_stages * pl->num_chunks;
    for (int k = 1; k < chunks; k++)
        key = key * (pl->num_layers + 3) + pl->chunk_start[k];
    for (int l = 0; l < pl->num_layers; l++)
        key = key * (pl->num_layers + 3) + pl->recompute[l];
    if (plan_check(pl, "<test>", NULL) != 0)
        rec->invalid++;
    if (rec->count < (long)(sizeof rec->seen / sizeof rec->seen[0]))
        rec->seen[rec->count] = key;
    rec->count++;
    return 1.0;
}

static int compare_keys(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* 5 layers in 3 chunks: C(4,2) = 6 partitions; 3 options: 3^5 = 243. */
static void test_count_is_partitions_times_options(void)
{
    CU_ASSERT_EQUAL(bf_count(5, 3, BF_ALL_OPTIONS), 6 * 243);
    CU_ASSERT_EQUAL(bf_count(5, 3, BF_OPTION(RECOMPUTE_FULL)), 6);
    CU_ASSERT_EQUAL(bf_count(4, 4, BF_ALL_OPTIONS), 81);
    CU_ASSERT_EQUAL(bf_count(3, 4, BF_ALL_OPTIONS), -1);  /* more chunks than layers */
    CU_ASSERT_EQUAL(bf_count(40, 4, BF_ALL_OPTIONS), -1); /* 3^40 is too many */
}

static void test_search_visits_every_candidate_once(void)
{
    plan shape, best;
    recorder *rec = calloc(1, sizeof *rec);
    bf_result res;
    shape_init(&shape, 3, 1, 5, 2, SCHED_1F1B);
    CU_ASSERT_EQUAL(bf_search(&shape, BF_ALL_OPTIONS, record_candidate, rec, &best, &res), 0);
    CU_ASSERT_EQUAL(res.evaluated, 6 * 243);
    CU_ASSERT_EQUAL(rec->count, 6 * 243);
    CU_ASSERT_EQUAL(rec->invalid, 0);
    qsort(rec->seen, (size_t)rec->count, sizeof rec->seen[0], compare_keys);
    int duplicates = 0;
    for (long i = 1; i < rec->count; i++)
        duplicates += rec->seen[i] == rec->seen[i - 1];
    CU_ASSERT_EQUAL(duplicates, 0);
    plan_free(&best);
    plan_free(&shape);
    free(rec);
}

/* Interleaved shapes split the layers into p·v chunks: 6 layers, 2 stages ×
 * 2 chunks, one option: C(5,3) = 10 partitions. */
static void test_search_splits_into_stages_times_chunks(void)
{
    plan shape, best;
    recorder *rec = calloc(1, sizeof *rec);
    bf_result res;
    shape_init(&shape, 2, 2, 6, 2, SCHED_INTERLEAVED);
    CU_ASSERT_EQUAL(
        bf_search(&shape, BF_OPTION(RECOMPUTE_NONE), record_candidate, rec, &best, &res), 0);
    CU_ASSERT_EQUAL(res.evaluated, 10);
    CU_ASSERT_EQUAL(rec->invalid, 0);
    plan_free(&best);
    plan_free(&shape);
    free(rec);
}

/* ---- the minimum ---------------------------------------------------------- */

/* Largest chunk, plus one per layer whose option differs from layer mod 3. */
static double largest_chunk_plus_mismatch(const plan *pl, void *ctx)
{
    (void)ctx;
    double largest = 0, mismatch = 0;
    for (int k = 0; k < pl->num_stages * pl->num_chunks; k++)
        largest = fmax(largest, pl->chunk_start[k + 1] - pl->chunk_start[k]);
    for (int l = 0; l < pl->num_layers; l++)
        mismatch += (int)pl->recompute[l] != l % 3;
    return largest + mismatch;
}

/* 7 layers in 3 chunks: the largest chunk is at least ceil(7/3) = 3; the
 * first partition in lexicographic cut order that reaches it is 1 | 3 | 3
 * (cuts (1,2) give 1,1,5 and (1,3) give 1,2,4). */
static void test_search_returns_first_minimum(void)
{
    plan shape, best;
    bf_result res;
    shape_init(&shape, 3, 1, 7, 2, SCHED_1F1B);
    CU_ASSERT_EQUAL(
        bf_search(&shape, BF_ALL_OPTIONS, largest_chunk_plus_mismatch, NULL, &best, &res), 0);
    CU_ASSERT_EQUAL(res.best_cost, 3.0);
    CU_ASSERT_EQUAL(best.chunk_start[0], 0);
    CU_ASSERT_EQUAL(best.chunk_start[1], 1);
    CU_ASSERT_EQUAL(best.chunk_start[2], 4);
    CU_ASSERT_EQUAL(best.chunk_start[3], 7);
    for (int l = 0; l < 7; l++)
        CU_ASSERT_EQUAL((int)best.recompute[l], l % 3);
    CU_ASSERT_EQUAL(best.num_micro_batches, 2); /* copied from the shape */
    plan_free(&best);
    plan_free(&shape);
}

static double reject_all(const plan *pl, void *ctx)
{
    (void)pl;
    (void)ctx;
    return INFINITY;
}

static void test_search_reports_infinity_when_all_rejected(void)
{
    plan shape, best;
    bf_result res;
    shape_init(&shape, 2, 1, 4, 2, SCHED_1F1B);
    CU_ASSERT_EQUAL(bf_search(&shape, BF_ALL_OPTIONS, reject_all, NULL, &best, &res), 0);
    CU_ASSERT(isinf(res.best_cost));
    CU_ASSERT_EQUAL(res.evaluated, 3 * 81);
    CU_ASSERT_EQUAL(plan_check(&best, "<test>", NULL), 0);
    plan_free(&best);
    plan_free(&shape);
}

static void test_search_refuses_too_large_a_space(void)
{
    plan shape, best;
    bf_result res;
    shape_init(&shape, 4, 1, 30, 2, SCHED_1F1B);
    CU_ASSERT_EQUAL(bf_search(&shape, BF_ALL_OPTIONS, reject_all, NULL, &best, &res), -1);
    CU_ASSERT_EQUAL(res.evaluated, 0);
    plan_free(&shape);
}

/* ---- the BMPipe cost -------------------------------------------------------- */

/* test_uniform_model layers: F = 1, B = 2, 10 bytes kept, 100 of state. */

/* 3 layers on 2 stages, m = 4, free communication: [1|2] and [2|1] both have
 * Σ(F+B) = 9 and bottleneck 6: T = 9 + (4 − 1)·6 = 27. */
static void test_bmpipe_cost_is_sum_plus_m_minus_1_bottlenecks(void)
{
    cm_model cm;
    plan shape, best;
    bf_result res;
    test_uniform_model(&cm, 3);
    shape_init(&shape, 2, 1, 3, 4, SCHED_1F1B);
    bf_bmpipe_ctx ctx = {&cm, NULL};
    CU_ASSERT_EQUAL(bf_search(&shape, BF_OPTION(RECOMPUTE_NONE), bf_cost_bmpipe, &ctx, &best, &res),
                    0);
    ASSERT_REL(res.best_cost, 27.0, 1e-12);
    CU_ASSERT_EQUAL(res.evaluated, 2);
    plan_free(&best);
    plan_free(&shape);
    cm_free(&cm);
}

/* Same model, capacity 230 bytes.  1F1B holds 2 micro-batches on stage 0 and
 * 1 on stage 1: [2|1] needs 200 + 2·20 = 240 on stage 0 (does not fit);
 * [1|2] needs 100 + 2·10 = 120 and 200 + 20 = 220.  With a 2 s scale-out
 * latency and free bandwidth, stage 0 also pays 2 × 2 s of sends:
 * τ = max(3 + 4, 6) = 7, T = 9 + 3·7 = 30. */
static void test_bmpipe_cost_rejects_plans_that_do_not_fit(void)
{
    cm_model cm;
    plan shape, best;
    bf_result res;
    cl_cluster cluster = {.scaleout_latency_s = 2.0, .scaleout_bandwidth_Bps = INFINITY};
    test_uniform_model(&cm, 3);
    cm.hbm_bytes = 230;
    shape_init(&shape, 2, 1, 3, 4, SCHED_1F1B);
    bf_bmpipe_ctx ctx = {&cm, &cluster};
    CU_ASSERT_EQUAL(bf_search(&shape, BF_OPTION(RECOMPUTE_NONE), bf_cost_bmpipe, &ctx, &best, &res),
                    0);
    ASSERT_REL(res.best_cost, 30.0, 1e-12);
    CU_ASSERT_EQUAL(best.chunk_start[1], 1);
    plan_free(&best);
    plan_free(&shape);
    cm_free(&cm);
}

/* Full recompute of a layer costs 1 s more in its backward (4 instead of 3)
 * and keeps 1 byte instead of 10, with a 9-byte transient while it runs.
 * Stage bytes = 100 per layer + in-flight × kept + 9 if any layer recomputes.
 * Capacity 224:
 *   [1|2], no recompute: 120 and 220, fit; T = (3 + 6) + 3·6 = 27.
 *   [2|1] fits only with both stage-0 layers full (200 + 2·2 + 9 = 213; one
 *   full needs 200 + 2·11 + 9 = 231): T = (8 + 3) + 3·8 = 35.  Minimum 27.
 * Capacity 215: [1|2] no longer fits without recompute (220) nor with one
 * stage-1 layer full (200 + 11 + 9 = 220); both full: 211, T = (3 + 8) + 3·8
 * = 35; [2|1] both full: T = 35.  Minimum 35. */
static void test_bmpipe_cost_charges_recompute_time_and_bytes(void)
{
    cm_model cm;
    plan shape, best;
    bf_result res;
    test_uniform_model(&cm, 3);
    for (int l = 0; l < 3; l++) {
        cm.layers[l].recompute_s[RECOMPUTE_FULL] = 1;
        cm.layers[l].activation_bytes[RECOMPUTE_FULL] = 1;
    }
    shape_init(&shape, 2, 1, 3, 4, SCHED_1F1B);
    bf_bmpipe_ctx ctx = {&cm, NULL};
    unsigned options = BF_OPTION(RECOMPUTE_NONE) | BF_OPTION(RECOMPUTE_FULL);
    cm.hbm_bytes = 224;
    bf_search(&shape, options, bf_cost_bmpipe, &ctx, &best, &res);
    ASSERT_REL(res.best_cost, 27.0, 1e-12);
    plan_free(&best);
    cm.hbm_bytes = 215;
    bf_search(&shape, options, bf_cost_bmpipe, &ctx, &best, &res);
    ASSERT_REL(res.best_cost, 35.0, 1e-12);
    plan_free(&best);
    plan_free(&shape);
    cm_free(&cm);
}

/* Interleaved, p = 2, v = 2, 4 layers (one per chunk), m = 2: each stage
 * does 2·3 = 6 per micro-batch; T = Σ_s 6 / v + (m − 1/v)·6 = 6 + 9 = 15,
 * Megatron's (m + (p−1)/v)·(F+B) = 2.5 · 6. */
static void test_bmpipe_cost_interleaved_matches_megatron_formula(void)
{
    cm_model cm;
    plan shape, best;
    bf_result res;
    test_uniform_model(&cm, 4);
    shape_init(&shape, 2, 2, 4, 2, SCHED_INTERLEAVED);
    bf_bmpipe_ctx ctx = {&cm, NULL};
    bf_search(&shape, BF_OPTION(RECOMPUTE_NONE), bf_cost_bmpipe, &ctx, &best, &res);
    CU_ASSERT_EQUAL(res.evaluated, 1);
    ASSERT_REL(res.best_cost, 15.0, 1e-12);
    plan_free(&best);
    plan_free(&shape);
    cm_free(&cm);
}

void register_bruteforce_tests(void)
{
    TEST_SUITE(
        "bruteforce", {"count_is_partitions_times_options", test_count_is_partitions_times_options},
        {"search_visits_every_candidate_once", test_search_visits_every_candidate_once},
        {"search_splits_into_stages_times_chunks", test_search_splits_into_stages_times_chunks},
        {"search_returns_first_minimum", test_search_returns_first_minimum},
        {"search_reports_infinity_when_all_rejected",
         test_search_reports_infinity_when_all_rejected},
        {"search_refuses_too_large_a_space", test_search_refuses_too_large_a_space},
        {"bmpipe_cost_is_sum_plus_m_minus_1_bottlenecks",
         test_bmpipe_cost_is_sum_plus_m_minus_1_bottlenecks},
        {"bmpipe_cost_rejects_plans_that_do_not_fit",
         test_bmpipe_cost_rejects_plans_that_do_not_fit},
        {"bmpipe_cost_charges_recompute_time_and_bytes",
         test_bmpipe_cost_charges_recompute_time_and_bytes},
        {"bmpipe_cost_interleaved_matches_megatron_formula",
         test_bmpipe_cost_interleaved_matches_megatron_formula});
}
