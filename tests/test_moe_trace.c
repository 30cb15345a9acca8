/*
 * test_moe_trace.c -- MoE token traces: the reader on hand-written files
 * (values and every kind of error, with its line), the writer's round trip,
 * and the seeded generator's statistics against its parameters (top-2
 * share, Zipf's hottest share, drift, the per-source cap, row sums).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "moe.h"
#include "moe_testutil.h"
#include "moe_trace.h"
#include "testutil.h"

/* Writes text to a fresh temporary file; its path in path[64]. */
static void temp_file(char *path, const char *text)
{
    snprintf(path, 64, "/tmp/npusim_moe_trace_XXXXXX");
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    size_t n = strlen(text);
    CU_ASSERT_FATAL(write(fd, text, n) == (ssize_t)n);
    close(fd);
}

#define HEADER "npusim-moe-trace 1\nexperts 4\nsources 2\nlayers 1\nsteps 2\ntopk 2\ntokens 8\n"

static void test_reader_reads_a_hand_made_trace(void)
{
    char path[64];
    temp_file(path, "# a comment\n" HEADER "0 0 0 4 2 1 1\n"
                    "0 0 1 0 4 4 0   # trailing comment\n"
                    "\n1 0 1 2 2 2 2\n1 0 0 3 3 1 1\n");
    moe_trace t;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(moe_trace_read(path, &t, &err), 0);
    CU_ASSERT_EQUAL(t.experts, 4);
    CU_ASSERT_EQUAL(t.sources, 2);
    CU_ASSERT_EQUAL(t.steps, 2);
    CU_ASSERT_EQUAL(t.tokens, 8);
    CU_ASSERT_EQUAL(*moe_trace_at(&t, 0, 0, 1, 2), 4u);
    CU_ASSERT_EQUAL(*moe_trace_at(&t, 1, 0, 0, 0), 3u);
    moe_trace_stats st;
    moe_trace_stats_of(&t, 0, 0, &st); /* loads 4, 6, 5, 1 of 16 */
    CU_ASSERT_DOUBLE_EQUAL(st.top2_share, 11.0 / 16, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(st.max_over_mean, 6.0 / 4, 1e-12);
    moe_trace_free(&t);
    unlink(path);
}

static void expect_error(const char *text, int line, const char *key, const char *message)
{
    char path[64];
    temp_file(path, text);
    moe_trace t;
    np_error err;
    CU_ASSERT_EQUAL(moe_trace_read(path, &t, &err), NP_EXIT_INPUT);
    CU_ASSERT_EQUAL(err.line, line);
    CU_ASSERT_STRING_EQUAL(err.key, key);
    CU_ASSERT_STRING_EQUAL(err.source, path);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, message));
    if (err.line != line || strcmp(err.key, key) || !strstr(err.text, message))
        fprintf(stderr, "\n  got line %d key \"%s\": %s\n", err.line, err.key, err.text);
    CU_ASSERT_PTR_NULL(t.counts);
    unlink(path);
}

static void test_reader_errors_name_line_and_key(void)
{
    expect_error("moe-trace 1\n", 1, "", "expected \"npusim-moe-trace 1\"");
    expect_error("npusim-moe-trace 1\nexperts 4\nsources 2\nlayers 1\nsteps 1\ntopk 2\n0 0 0 8\n",
                 7, "tokens", "missing");
    expect_error("npusim-moe-trace 1\nexperts 0\n", 2, "experts", "expected an integer in [1,");
    expect_error("npusim-moe-trace 1\nexpert 4\n", 2, "expert", "unknown header key");
    expect_error(HEADER "0 0 0 4 2 1 0\n", 8, "tokens", "sums to 7, expected tokens = 8");
    expect_error(HEADER "0 0 0 5 1 1 1\n", 8, "", "expert 0: 5 tokens");
    expect_error(HEADER "0 0 0 4 2 1 1\n0 0 0 4 2 1 1\n", 9, "", "given twice");
    expect_error(HEADER "0 0 2 4 2 1 1\n", 8, "source", "2 is out of range: expected 0 to 1");
    expect_error(HEADER "0 0 0 4 2 1 1.5\n", 8, "", "expert 3: expected a non-negative integer");
    expect_error(HEADER "0 0 0 4 2 1 1 0\n", 8, "", "more than 4 counts");
    expect_error(HEADER "0 0 0 4 2 1 1\n0 0 1 4 2 1 1\n1 0 0 4 2 1 1\n", 0, "",
                 "row step 1 layer 0 source 1 is missing");
    expect_error(HEADER "0 0 0 4 2 1 1\nsteps 3\n", 9, "", "header key after the rows");
}

static void test_writer_round_trip(void)
{
    moe_trace_params p = {.experts = 6,
                          .sources = 3,
                          .layers = 2,
                          .steps = 2,
                          .topk = 2,
                          .tokens = 40,
                          .zipf_s = 1.2,
                          .drift = 0.5,
                          .seed = 3};
    moe_trace t, back;
    char path[64];
    np_error err;
    moe_test_generate(&p, &t);
    temp_file(path, "");
    CU_ASSERT_EQUAL_FATAL(moe_trace_write(path, "-o", &t, &err), 0);
    CU_ASSERT_EQUAL_FATAL(moe_trace_read(path, &back, &err), 0);
    CU_ASSERT_EQUAL(memcmp(t.counts, back.counts, 6 * 3 * 2 * 2 * sizeof *t.counts), 0);
    moe_trace_free(&t);
    moe_trace_free(&back);
    unlink(path);
}

/* ---- generator ---------------------------------------------------------- */

static void check_rows(const moe_trace *t)
{
    long limit = t->tokens / t->topk;
    for (int s = 0; s < t->steps; s++)
        for (int l = 0; l < t->layers; l++)
            for (int r = 0; r < t->sources; r++) {
                long sum = 0, top = 0;
                for (int e = 0; e < t->experts; e++) {
                    long c = *moe_trace_at(t, s, l, r, e);
                    sum += c;
                    top = c > top ? c : top;
                }
                CU_ASSERT_EQUAL(sum, t->tokens);
                CU_ASSERT(top <= limit);
            }
}

/* The two hottest experts take the share asked for, once realised over
 * 32 sources x 4096 assignments (binomial s.d. about 0.0013). */
static void test_generator_top2_share_matches(void)
{
    int topks[] = {1, 2};
    for (int i = 0; i < 2; i++) {
        moe_trace_params p = {.experts = 32,
                              .sources = 32,
                              .layers = 4,
                              .steps = 3,
                              .topk = topks[i],
                              .tokens = 4096,
                              .top2_share = 0.7,
                              .drift = 0.2,
                              .seed = 11};
        moe_trace t;
        moe_test_generate(&p, &t);
        check_rows(&t);
        for (int s = 0; s < 3; s++)
            for (int l = 0; l < 4; l++) {
                moe_trace_stats st;
                moe_trace_stats_of(&t, s, l, &st);
                CU_ASSERT_DOUBLE_EQUAL(st.top2_share, 0.7, 0.01);
            }
        moe_trace_free(&t);
    }
}

/* Zipf s = 1 over 8 experts: the hottest holds 1/H_8 = 1/2.717857 of the
 * assignments (k = 1: no cap). */
static void test_generator_zipf_hottest_share(void)
{
    moe_trace_params p = {.experts = 8,
                          .sources = 16,
                          .layers = 2,
                          .steps = 2,
                          .topk = 1,
                          .tokens = 8192,
                          .zipf_s = 1.0,
                          .seed = 5};
    moe_trace t;
    moe_test_generate(&p, &t);
    double h8 = 1 + 1 / 2.0 + 1 / 3.0 + 1 / 4.0 + 1 / 5.0 + 1 / 6.0 + 1 / 7.0 + 1 / 8.0;
    moe_trace_stats st;
    moe_trace_stats_of(&t, 1, 1, &st);
    CU_ASSERT_DOUBLE_EQUAL(st.max_over_mean / 8.0, 1.0 / h8, 0.01);
    CU_ASSERT_DOUBLE_EQUAL(st.top2_share, 1.5 / h8, 0.01);
    moe_trace_free(&t);
    /* s = 0: uniform, the most loaded expert within 3% of the mean */
    p.zipf_s = 0.0;
    moe_test_generate(&p, &t);
    moe_trace_stats_of(&t, 0, 0, &st);
    CU_ASSERT(st.max_over_mean < 1.03);
    moe_trace_free(&t);
}

static int hottest(const moe_trace *t, int step, int layer)
{
    int best = 0;
    long load[64] = {0};
    for (int e = 0; e < t->experts; e++) {
        for (int r = 0; r < t->sources; r++)
            load[e] += *moe_trace_at(t, step, layer, r, e);
        if (load[e] > load[best])
            best = e;
    }
    return best;
}

/* drift 0 keeps each layer's hot expert; drift 1 moves it in most steps
 * (it stays with probability about 1/E plus the chance no swap touches it). */
static void test_generator_drift_moves_hot_experts(void)
{
    moe_trace_params p = {.experts = 16,
                          .sources = 4,
                          .layers = 3,
                          .steps = 20,
                          .topk = 2,
                          .tokens = 2048,
                          .top2_share = 0.6,
                          .seed = 9};
    moe_trace t;
    moe_test_generate(&p, &t);
    for (int l = 0; l < 3; l++)
        for (int s = 1; s < 20; s++)
            CU_ASSERT_EQUAL(hottest(&t, s, l), hottest(&t, 0, l));
    moe_trace_free(&t);
    p.drift = 1.0;
    moe_test_generate(&p, &t);
    int moved = 0;
    for (int l = 0; l < 3; l++)
        for (int s = 1; s < 20; s++)
            moved += hottest(&t, s, l) != hottest(&t, s - 1, l);
    CU_ASSERT(moved >= 45); /* of 57 */
    moe_trace_free(&t);
}

static void test_generator_is_seeded(void)
{
    moe_trace_params p = {.experts = 8,
                          .sources = 4,
                          .layers = 2,
                          .steps = 2,
                          .topk = 2,
                          .tokens = 256,
                          .zipf_s = 1.1,
                          .drift = 0.3,
                          .seed = 42};
    moe_trace a, b, c;
    moe_test_generate(&p, &a);
    moe_test_generate(&p, &b);
    p.seed = 43;
    moe_test_generate(&p, &c);
    size_t bytes = 8 * 4 * 2 * 2 * sizeof *a.counts;
    CU_ASSERT_EQUAL(memcmp(a.counts, b.counts, bytes), 0);
    CU_ASSERT_NOT_EQUAL(memcmp(a.counts, c.counts, bytes), 0);
    moe_trace_free(&a);
    moe_trace_free(&b);
    moe_trace_free(&c);
}

static void test_generator_refuses_impossible_shares(void)
{
    moe_trace_params p = {.experts = 256,
                          .sources = 2,
                          .layers = 1,
                          .steps = 1,
                          .topk = 8,
                          .tokens = 64,
                          .top2_share = 0.7};
    moe_trace t;
    char why[256];
    CU_ASSERT_EQUAL(moe_trace_generate(&p, &t, why, sizeof why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "2/topk = 0.25"));
    p.top2_share = 0.2;
    p.tokens = 63;
    CU_ASSERT_EQUAL(moe_trace_generate(&p, &t, why, sizeof why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "multiple of topk"));
}

/* A trace generated from a workload's shape fits it; one with another
 * expert count is refused naming the header key. */
static void test_trace_checked_against_workload(void)
{
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load("workloads/moe_21b_32npu.json", &w, &err), 0);
    CU_ASSERT_EQUAL(moe_trace_workload_tokens(&w), 2048 * 2);
    moe_trace_params p = {.experts = 32,
                          .sources = 32,
                          .layers = 12,
                          .steps = 1,
                          .topk = 2,
                          .tokens = 4096,
                          .seed = 1};
    moe_trace t;
    moe_test_generate(&p, &t);
    CU_ASSERT_EQUAL(moe_trace_check_workload(&t, &w, "t.txt", &err), 0);
    t.experts = 16;
    CU_ASSERT_EQUAL(moe_trace_check_workload(&t, &w, "t.txt", &err), NP_EXIT_INPUT);
    CU_ASSERT_STRING_EQUAL(err.key, "experts");
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "model.num_experts is 32"));
    moe_trace_free(&t);
    wl_free(&w);
}

/* ---- one layer's routing (the replay's accounting) ---------------------- */

/* 2 sources, 4 experts (2 per rank), tokens 8, topk 2:
 *   source 0: 4 2 1 1     source 1: 0 4 4 0
 * C = 3 padded: experts keep 3+0, 2+3, 1+3, 1+0 and drop 1, 1, 1, 0; each
 * computes 2·3 = 6 rows, padding 3, 1, 2, 5; rank 0 (experts 0, 1): rows
 * 12, padding 4, dropped 2; rank 1: rows 12, padding 7, dropped 1; every
 * pair sends C·2 = 6.  C = 3 unpadded: rows 8 and 5.  Dropless: rows 10 and
 * 6, sends 6 2 / 4 4, hottest expert 6 rows, mean 4. */
static void test_route_of_a_hand_made_trace(void)
{
    char path[64];
    temp_file(path, "npusim-moe-trace 1\nexperts 4\nsources 2\nlayers 1\nsteps 1\ntopk 2\n"
                    "tokens 8\n0 0 0 4 2 1 1\n0 0 1 0 4 4 0\n");
    moe_trace t;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(moe_trace_read(path, &t, &err), 0);
    unlink(path);
    moe_route r;
    CU_ASSERT_EQUAL_FATAL(moe_route_init(&r, 2), 0);
    moe_route_layer(&t, 0, 0, 3.0, true, &r);
    CU_ASSERT_DOUBLE_EQUAL(r.rows[0], 12, 0);
    CU_ASSERT_DOUBLE_EQUAL(r.rows[1], 12, 0);
    CU_ASSERT_DOUBLE_EQUAL(r.padding[0], 4, 0);
    CU_ASSERT_DOUBLE_EQUAL(r.padding[1], 7, 0);
    CU_ASSERT_DOUBLE_EQUAL(r.dropped[0], 2, 0);
    CU_ASSERT_DOUBLE_EQUAL(r.dropped[1], 1, 0);
    for (int i = 0; i < 4; i++)
        CU_ASSERT_DOUBLE_EQUAL(r.send[i], 6, 0);
    moe_route_layer(&t, 0, 0, 3.0, false, &r);
    CU_ASSERT_DOUBLE_EQUAL(r.rows[0], 8, 0);
    CU_ASSERT_DOUBLE_EQUAL(r.rows[1], 5, 0);
    CU_ASSERT_DOUBLE_EQUAL(r.padding[0] + r.padding[1], 0, 0);
    CU_ASSERT_DOUBLE_EQUAL(r.send[0], 5, 0);
    CU_ASSERT_DOUBLE_EQUAL(r.send[1], 2, 0);
    CU_ASSERT_DOUBLE_EQUAL(r.send[2], 3, 0);
    CU_ASSERT_DOUBLE_EQUAL(r.send[3], 3, 0);
    moe_route_layer(&t, 0, 0, 0.0, false, &r);
    CU_ASSERT_DOUBLE_EQUAL(r.rows[0], 10, 0);
    CU_ASSERT_DOUBLE_EQUAL(r.rows[1], 6, 0);
    CU_ASSERT_DOUBLE_EQUAL(r.dropped[0] + r.dropped[1], 0, 0);
    CU_ASSERT_DOUBLE_EQUAL(r.send[0], 6, 0);
    CU_ASSERT_DOUBLE_EQUAL(r.send[1], 2, 0);
    CU_ASSERT_DOUBLE_EQUAL(r.send[2], 4, 0);
    CU_ASSERT_DOUBLE_EQUAL(r.send[3], 4, 0);
    CU_ASSERT_DOUBLE_EQUAL(r.max_expert_rows, 6, 0);
    CU_ASSERT_DOUBLE_EQUAL(r.mean_expert_rows, 4, 0);
    moe_route_free(&r);
    moe_trace_free(&t);
}

/* On generated skewed traces, at every capacity, with and without padding:
 * computed (rows − padding) + dropped = every assignment, and what the
 * sources send equals what the ranks compute. */
static void test_every_token_is_computed_or_dropped(void)
{
    moe_trace_params p = {.experts = 16,
                          .sources = 8,
                          .layers = 3,
                          .steps = 2,
                          .topk = 2,
                          .tokens = 1024,
                          .top2_share = 0.6,
                          .drift = 0.3,
                          .seed = 21};
    moe_trace t;
    moe_test_generate(&p, &t);
    moe_route r;
    CU_ASSERT_EQUAL_FATAL(moe_route_init(&r, 8), 0);
    double caps[] = {0, 16, 64, 100, 512};
    for (int c = 0; c < 5; c++)
        for (int pad = 0; pad < 2; pad++)
            for (int s = 0; s < 2; s++)
                for (int l = 0; l < 3; l++) {
                    moe_route_layer(&t, s, l, caps[c], pad, &r);
                    double total = 0, sent = 0, rows = 0;
                    for (int j = 0; j < 8; j++) {
                        total += r.rows[j] - r.padding[j] + r.dropped[j];
                        rows += r.rows[j];
                    }
                    for (int i = 0; i < 64; i++)
                        sent += r.send[i];
                    CU_ASSERT_DOUBLE_EQUAL(total, 8.0 * 1024, 1e-9);
                    CU_ASSERT_DOUBLE_EQUAL(sent, rows, 1e-9);
                }
    moe_route_free(&r);
    moe_trace_free(&t);
}

void register_moe_trace_tests(void)
{
    TEST_SUITE("moe_trace", {"reader reads a hand-made trace", test_reader_reads_a_hand_made_trace},
               {"reader errors name line and key", test_reader_errors_name_line_and_key},
               {"writer round trip", test_writer_round_trip},
               {"generator top2 share matches", test_generator_top2_share_matches},
               {"generator zipf hottest share", test_generator_zipf_hottest_share},
               {"generator drift moves hot experts", test_generator_drift_moves_hot_experts},
               {"generator is seeded", test_generator_is_seeded},
               {"generator refuses impossible shares", test_generator_refuses_impossible_shares},
               {"trace checked against workload", test_trace_checked_against_workload},
               {"route of a hand-made trace", test_route_of_a_hand_made_trace},
               {"every token is computed or dropped", test_every_token_is_computed_or_dropped});
}
