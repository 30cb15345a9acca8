/*
 * test_sweep_csv.c -- simsweep's CSV side (sim/sweep/sweep_csv.c,
 * sweep_row.c): the RFC 4180 reader on quoted fields (commas, doubled
 * quotes, line ends inside a field, CRLF), the errors it reports (a partial
 * last row, a wrong field count, a stray quote), the index of finished run
 * ids, --merge dropping duplicate run ids (an ok row over a failed one, else
 * the first), and the failed point's row, whose defaults must be the
 * engine's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "np_file.h"
#include "sweep.h"
#include "testutil.h"

static int parse(const char *text, csv_table *t, np_error *err)
{
    char *copy = strdup(text);
    np_error_clear(err);
    return csv_parse("t.csv", copy, strlen(text), t, err);
}

static void test_quoted_fields(void)
{
    csv_table t;
    np_error err;
    const char *text = "a,b,c\r\n"
                       "1,\"x,y\",\"he said \"\"hi\"\"\"\r\n"
                       "\n"
                       "\"multi\nline\",,\"\"\n"
                       "plain,\"\",last\n";
    CU_ASSERT_EQUAL_FATAL(parse(text, &t, &err), 0);
    CU_ASSERT_EQUAL(t.num_columns, 3);
    CU_ASSERT_EQUAL(t.header_len, 5);
    CU_ASSERT_EQUAL_FATAL(t.num_records, 3);
    CU_ASSERT_STRING_EQUAL(t.records[0].fields[1], "x,y");
    CU_ASSERT_STRING_EQUAL(t.records[0].fields[2], "he said \"hi\"");
    CU_ASSERT_STRING_EQUAL(t.records[1].fields[0], "multi\nline");
    CU_ASSERT_STRING_EQUAL(t.records[1].fields[1], "");
    CU_ASSERT_STRING_EQUAL(t.records[1].fields[2], "");
    CU_ASSERT_EQUAL(t.records[1].line, 4);
    CU_ASSERT_EQUAL(t.records[2].line, 6);
    CU_ASSERT_STRING_EQUAL(t.records[2].fields[2], "last");
    /* the raw bytes of a record are the file's, quotes and all */
    CU_ASSERT_EQUAL(t.records[0].raw_len, strlen("1,\"x,y\",\"he said \"\"hi\"\"\"\r\n"));
    CU_ASSERT_EQUAL(strncmp(t.records[0].raw, "1,\"x,y\"", 7), 0);
    CU_ASSERT_EQUAL(csv_column(&t, "c"), 2);
    CU_ASSERT_EQUAL(csv_column(&t, "d"), -1);
    csv_free(&t);

    /* what np_csv_field writes, the reader reads back */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fputs("h1,h2\n", f);
    np_csv_field(f, "a,\"b\"\nc");
    fputc(',', f);
    np_csv_field(f, "plain");
    fputc('\n', f);
    fclose(f);
    CU_ASSERT_EQUAL_FATAL(parse(buf, &t, &err), 0);
    CU_ASSERT_STRING_EQUAL(t.records[0].fields[0], "a,\"b\"\nc");
    CU_ASSERT_STRING_EQUAL(t.records[0].fields[1], "plain");
    csv_free(&t);
    free(buf);
}

static void expect_csv_error(const char *text, int line, const char *what)
{
    csv_table t;
    np_error err;
    CU_ASSERT_EQUAL(parse(text, &t, &err), NP_EXIT_INPUT);
    CU_ASSERT_EQUAL(err.line, line);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, what));
    CU_ASSERT_PTR_NULL(t.text);
}

static void test_bad_csv(void)
{
    expect_csv_error("a,b\n1,2\n3,4", 3, "no line end");
    expect_csv_error("a,b\n1,\"2\n", 2, "no line end");
    expect_csv_error("a,b\n1,2,3\n", 2, "3 fields, the header has 2");
    expect_csv_error("a,b\n1\n", 2, "1 fields");
    expect_csv_error("a,b\n1,x\"y\n", 2, "malformed");
    expect_csv_error("a,b\n1,\"x\"y\n", 2, "malformed");
    csv_table t;
    np_error err;
    CU_ASSERT_EQUAL(parse("", &t, &err), 0);
    CU_ASSERT_PTR_NULL(t.header);
    csv_free(&t);
}

/* A file in dir holding text; its path in path. */
static void write_file(const char *dir, const char *name, const char *text, char *path)
{
    sprintf(path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(text, f);
    fclose(f);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = calloc(1, 1 << 16);
    size_t n = fread(buf, 1, (1 << 16) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

#define HEAD "x,run_id,status,note\n"

static void test_done_and_merge(void)
{
    char dir[] = "/tmp/npusim_merge_XXXXXX", out[256], f1[256], f2[256], f3[256], old[256];
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    write_file(dir, "out.csv", HEAD "1,aaaa,failed,\"first, failed\"\n", out);
    write_file(dir, "f1.csv", HEAD "2,bbbb,ok,b1\n3,aaaa,ok,\"a ok\nsecond line\"\n", f1);
    write_file(dir, "f2.csv", HEAD "4,bbbb,ok,b2\n5,cccc,failed,c1\n6,cccc,failed,c2\n", f2);
    write_file(dir, "f3.csv", "", f3);
    write_file(dir, "old.csv", "x,y\n1,2\n", old);

    sweep_done d;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(sweep_done_read(f2, NULL, &d, &err), 0);
    CU_ASSERT_EQUAL(sweep_done_state(&d, "bbbb"), SWEEP_OK);
    CU_ASSERT_EQUAL(sweep_done_state(&d, "cccc"), SWEEP_FAILED);
    CU_ASSERT_EQUAL(sweep_done_state(&d, "aaaa"), SWEEP_NEW);
    CU_ASSERT(sweep_is_pending(SWEEP_NEW, false));
    CU_ASSERT(!sweep_is_pending(SWEEP_FAILED, false));
    CU_ASSERT(sweep_is_pending(SWEEP_FAILED, true));
    CU_ASSERT(!sweep_is_pending(SWEEP_OK, true));
    sweep_done_free(&d);
    CU_ASSERT_EQUAL(sweep_done_read(f2, "x,run_id,status", &d, &err), NP_EXIT_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "header"));
    CU_ASSERT_EQUAL(sweep_done_read(old, NULL, &d, &err), NP_EXIT_INPUT);
    CU_ASSERT_STRING_EQUAL(err.key, "run_id");
    char missing[300];
    snprintf(missing, sizeof missing, "%s/none.csv", dir);
    CU_ASSERT_EQUAL(sweep_done_read(missing, NULL, &d, &err), 0);
    CU_ASSERT_EQUAL(d.count, 0);

    /* OUT first, then the fragments: aaaa's ok row replaces its failed one
     * where aaaa first appeared, bbbb keeps its first ok row, cccc its first
     * failed one; the empty fragment is skipped */
    const char *frags[] = {f1, f2, f3};
    int kept, dropped;
    CU_ASSERT_EQUAL_FATAL(sweep_merge(out, frags, 3, &kept, &dropped, &err), 0);
    CU_ASSERT_EQUAL(kept, 3);
    CU_ASSERT_EQUAL(dropped, 3);
    char *text = slurp(out);
    CU_ASSERT_STRING_EQUAL(text, HEAD "3,aaaa,ok,\"a ok\nsecond line\"\n2,bbbb,ok,b1\n"
                                      "5,cccc,failed,c1\n");
    free(text);

    /* another header: an error, and OUT as it was */
    const char *bad[] = {old};
    CU_ASSERT_EQUAL(sweep_merge(out, bad, 1, &kept, &dropped, &err), NP_EXIT_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.source, "old.csv"));
    text = slurp(out);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "3,aaaa,ok"));
    free(text);
    /* a missing fragment is an error; a missing OUT is not */
    const char *gone[] = {missing};
    CU_ASSERT_EQUAL(sweep_merge(out, gone, 1, NULL, NULL, &err), NP_EXIT_INPUT);
    char fresh[300];
    snprintf(fresh, sizeof fresh, "%s/fresh.csv", dir);
    CU_ASSERT_EQUAL(sweep_merge(fresh, frags + 1, 1, &kept, NULL, &err), 0);
    CU_ASSERT_EQUAL(kept, 2);

    const char *names[] = {"out.csv", "f1.csv", "f2.csv", "f3.csv", "old.csv", "fresh.csv"};
    for (int i = 0; i < 6; i++) {
        char p[300];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
}

static void test_failure_row(void)
{
    sweep_point p = {0};
    char *args[] = {"--schedule",   "gpipe",
                    "--set",        "global_batch_size=3",
                    "--dp-overlap", "--cfg=network/model:LV08",
                    "--set",        "name=\"a,b\"",
                    "--dp-radix",   "8"};
    p.args = args;
    p.num_args = 10;
    p.platform = "p.xml";
    p.workload = "w.json";
    strcpy(p.run_id, "0123456789abcdef");
    const char *header = "platform,workload,planner,schedule,iteration_s,overrides,run_id,"
                         "dp_algorithm,dp_radix,dp_overlap,fold_dp,plan_file,plan_sha256,cfg,"
                         "simulator_version,status,exit_code,error";
    size_t len;
    char *row = sweep_failure_row(header, &p, "v1", 2, "simrun: w.json: bad, \"very\"", &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(row);
    CU_ASSERT_EQUAL(len, strlen(row));
    CU_ASSERT_STRING_EQUAL(row, "p.xml,w.json,,gpipe,,\"global_batch_size=3;name=\"\"a,b\"\"\","
                                "0123456789abcdef,ring-flow,8,1,0,,,network/model:LV08,v1,failed,"
                                "2,\"simrun: w.json: bad, \"\"very\"\"\"\n");
    free(row);

    /* --placement as simrun writes it: without the optional "ep"; text simrun
     * refuses as given */
    const char *orders[][2] = {{"tp-cp-ep-dp-pp", "tp-cp-dp-pp"},
                               {"pp-ep-dp-tp-cp", "pp-dp-tp-cp"},
                               {"dp-tp-cp-pp", "dp-tp-cp-pp"},
                               {"tp--cp", "tp--cp"},
                               {"tp-cp-", "tp-cp-"}};
    for (int i = 0; i < 5; i++) {
        char *placed[] = {"--placement", (char *)orders[i][0]};
        sweep_point q = p;
        q.args = placed;
        q.num_args = 2;
        row = sweep_failure_row("placement,moe_policy,status", &q, "v1", 1, "e", &len);
        char expected[64];
        snprintf(expected, sizeof expected, "%s,none,failed\n", orders[i][1]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(row);
        CU_ASSERT_STRING_EQUAL(row, expected);
        free(row);
    }

    /* the defaults simsweep writes are those simrun writes */
    engine_options eo;
    engine_init_options(&eo);
    char radix[16];
    snprintf(radix, sizeof radix, "%d", eo.dp_radix);
    CU_ASSERT_STRING_EQUAL(sweep_column_default("dp_algorithm"),
                           coll_algorithm_name(eo.dp_algorithm));
    CU_ASSERT_STRING_EQUAL(sweep_column_default("dp_inter_algorithm"),
                           coll_algorithm_name(eo.dp_inter_algorithm));
    CU_ASSERT_STRING_EQUAL(sweep_column_default("ep_alltoall_algorithm"),
                           coll_algorithm_name(eo.ep_alltoall_algorithm));
    CU_ASSERT_STRING_EQUAL(sweep_column_default("dp_radix"), radix);
    CU_ASSERT_EQUAL(eo.fold_dp, 0);
    CU_ASSERT_EQUAL(eo.dp_overlap, 0);
    CU_ASSERT_EQUAL(eo.dp_bucket_bytes, 0);
    CU_ASSERT_STRING_EQUAL(sweep_column_default("fold_dp"), "0");
    char order[64];
    placement_name(&eo.placement, order, sizeof order);
    CU_ASSERT_STRING_EQUAL(sweep_column_default("placement"), order);
    CU_ASSERT_EQUAL(eo.moe_trace_step, 0);
    CU_ASSERT_STRING_EQUAL(sweep_column_default("moe_trace_step"), "0");
    CU_ASSERT_EQUAL(eo.moe_sample_mb, 0);
    CU_ASSERT_STRING_EQUAL(sweep_column_default("moe_sample_mb"), "0");
    CU_ASSERT_PTR_NULL(sweep_column_default("iteration_s"));
}

static void test_shell_quote(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    sweep_shell_quote(f, "/a/b-c_1.csv");
    fputc(' ', f);
    sweep_shell_quote(f, "it's a $x");
    fputc(' ', f);
    sweep_shell_quote(f, "");
    fclose(f);
    CU_ASSERT_STRING_EQUAL(buf, "/a/b-c_1.csv 'it'\\''s a $x' ''");
    free(buf);
}

void register_sweep_csv_tests(void)
{
    TEST_SUITE("sweep_csv", {"RFC 4180: quoted fields, CRLF, empty lines", test_quoted_fields},
               {"partial rows, field counts, stray quotes", test_bad_csv},
               {"finished run ids and --merge", test_done_and_merge},
               {"a failed point's row; defaults are the engine's", test_failure_row},
               {"shell quoting", test_shell_quote});
}
