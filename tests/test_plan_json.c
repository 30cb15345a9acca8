/*
 * test_plan_json.c -- saved plans: a written plan reads back identical, and
 * every malformed plan file is an error naming the file and the key.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plan_json.h"
#include "testutil.h"

static const char *temp_file(const char *contents)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/npusim_plan_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    if (contents && write(fd, contents, strlen(contents)) < 0)
        path[0] = '\0';
    close(fd);
    return path;
}

static void test_written_plan_reads_back_identical(void)
{
    plan a, b;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(plan_init(&a, 2, 2, 9), 0);
    const int starts[] = {0, 2, 5, 7, 9};
    memcpy(a.chunk_start, starts, sizeof starts);
    for (int l = 0; l < 9; l++)
        a.recompute[l] = (recompute_kind)(l % 3);
    snprintf(a.planner, sizeof a.planner, "bmpipe");
    a.schedule = SCHED_INTERLEAVED;
    a.micro_batch_size = 2;
    a.num_micro_batches = 4;
    a.tensor_parallel = 2;
    a.data_parallel = 3;
    a.merak_shifted_recompute = true;
    a.predicted_iteration_s = 1.25;
    CU_ASSERT_EQUAL_FATAL(plan_use_recompute_units(&a), 0);
    a.recompute_units[4] = 0x15;
    const char *path = temp_file(NULL);
    CU_ASSERT_EQUAL_FATAL(plan_write_json(path, &a, "w.json", &err), 0);
    CU_ASSERT_EQUAL_FATAL(plan_read_json(path, 9, &b, &err), 0);
    CU_ASSERT_STRING_EQUAL(b.planner, "bmpipe");
    CU_ASSERT_EQUAL(b.schedule, SCHED_INTERLEAVED);
    CU_ASSERT_EQUAL(memcmp(b.chunk_start, starts, sizeof starts), 0);
    for (int l = 0; l < 9; l++)
        CU_ASSERT_EQUAL(b.recompute[l], (recompute_kind)(l % 3));
    CU_ASSERT_PTR_NOT_NULL_FATAL(b.recompute_units);
    CU_ASSERT_EQUAL(b.recompute_units[4], 0x15);
    CU_ASSERT_EQUAL(b.micro_batch_size, 2);
    CU_ASSERT_EQUAL(b.num_micro_batches, 4);
    CU_ASSERT_EQUAL(b.tensor_parallel, 2);
    CU_ASSERT_EQUAL(b.data_parallel, 3);
    CU_ASSERT_TRUE(b.merak_shifted_recompute);
    CU_ASSERT_DOUBLE_EQUAL(b.predicted_iteration_s, 1.25, 0);
    unlink(path);
    plan_free(&a);
    plan_free(&b);
}

/* Each case: file contents, the layer count it is replayed on, the key the
 * error must name. */
static void expect_error(const char *contents, int num_layers, const char *key)
{
    plan pl;
    np_error err;
    np_error_clear(&err);
    const char *path = temp_file(contents);
    int rc = plan_read_json(path, num_layers, &pl, &err);
    CU_ASSERT_EQUAL(rc, NP_EXIT_INPUT);
    CU_ASSERT_STRING_EQUAL(err.source, path);
    if (strcmp(err.key, key) != 0)
        fprintf(stderr, "\n  expected key '%s', got '%s': %s\n", key, err.key, err.text);
    CU_ASSERT_STRING_EQUAL(err.key, key);
    unlink(path);
}

#define GOOD_HEAD "\"planner\":\"x\",\"schedule\":\"1f1b\",\"num_stages\":2,\"num_chunks\":1,"
#define GOOD_TAIL                                                                                  \
    "\"micro_batch_size\":1,\"num_micro_batches\":4,\"tensor_parallel\":1,\"data_parallel\":1"

static void test_bad_plan_files_name_the_key(void)
{
    expect_error("{" GOOD_HEAD "\"num_layers\":3,\"chunk_start\":[0,1,3],"
                 "\"recompute\":[\"none\",\"none\",\"none\"]," GOOD_TAIL ",\"colour\":1}",
                 3, "colour");
    expect_error("{" GOOD_HEAD "\"num_layers\":3,\"chunk_start\":[0,1,3],"
                 "\"recompute\":[\"none\",\"none\",\"none\"]," GOOD_TAIL "}",
                 5, "num_layers");
    expect_error("{" GOOD_HEAD "\"num_layers\":3,\"chunk_start\":[0,1,3],"
                 "\"recompute\":[\"none\",\"most\",\"none\"]," GOOD_TAIL "}",
                 3, "recompute");
    expect_error("{" GOOD_HEAD "\"num_layers\":3,\"chunk_start\":[0,3],"
                 "\"recompute\":[\"none\",\"none\",\"none\"]," GOOD_TAIL "}",
                 3, "chunk_start");
    expect_error("{" GOOD_HEAD "\"num_layers\":3,\"chunk_start\":[0,2,2],"
                 "\"recompute\":[\"none\",\"none\",\"none\"]," GOOD_TAIL "}",
                 3, "chunk_start");
    expect_error("{" GOOD_HEAD "\"num_layers\":3,\"chunk_start\":[0,1,3],"
                 "\"recompute\":[\"none\",\"none\",\"none\"]}",
                 3, "micro_batch_size");
    expect_error("{" GOOD_HEAD "\"num_layers\":\"three\"}", 3, "num_layers");
    /* what the row reports: a prediction below 0, a gap that is not a
     * number, a gap without its status, uneven sizes that do not add up to
     * num_micro_batches x micro_batch_size (4 x 1 here) */
#define GOOD_PLAN                                                                                  \
    "{" GOOD_HEAD "\"num_layers\":3,\"chunk_start\":[0,1,3],"                                      \
    "\"recompute\":[\"none\",\"none\",\"none\"]," GOOD_TAIL
    expect_error(GOOD_PLAN ",\"predicted_iteration_s\":-1}", 3, "predicted_iteration_s");
    expect_error(GOOD_PLAN ",\"solver_status\":\"optimal\",\"solver_gap\":\"x\"}", 3, "solver_gap");
    expect_error(GOOD_PLAN ",\"solver_gap\":0.1}", 3, "solver_gap");
    expect_error(GOOD_PLAN ",\"solver_status\":7}", 3, "solver_status");
    expect_error(GOOD_PLAN ",\"micro_batch_sizes\":[1,1,1,2]}", 3, "micro_batch_sizes");
#undef GOOD_PLAN
}

static void test_malformed_plan_json_reports_the_line(void)
{
    plan pl;
    np_error err;
    const char *path = temp_file("{\n\"planner\": \"x\",\n\"schedule\" \"1f1b\"\n}\n");
    CU_ASSERT_EQUAL(plan_read_json(path, 3, &pl, &err), NP_EXIT_INPUT);
    CU_ASSERT_EQUAL(err.line, 3);
    unlink(path);
}

void register_plan_json_tests(void)
{
    TEST_SUITE("plan_json",
               {"written_plan_reads_back_identical", test_written_plan_reads_back_identical},
               {"bad_plan_files_name_the_key", test_bad_plan_files_name_the_key},
               {"malformed_plan_json_reports_the_line", test_malformed_plan_json_reports_the_line});
}
