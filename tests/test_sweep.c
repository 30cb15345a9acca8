/*
 * test_sweep.c -- simsweep's sweep file (sim/sweep/sweep_file.c): the
 * cartesian product of "vary" and the explicit "points" over platforms x
 * workloads, the simrun arguments of a point, every key checked (one error
 * naming the file and the key), and run ids: a documented canonical text,
 * the same id whatever the order of keys, different ids for different
 * commands, duplicates dropped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sweep.h"
#include "testutil.h"

/* The sweep text, with @P and @W standing for the test platform and
 * workload (absolute paths), written to a temporary file and loaded. */
static int load_text(const char *text, sweep *s, np_error *err)
{
    char path[] = "/tmp/npusim_sweep_XXXXXX.json";
    int fd = mkstemps(path, 5);
    CU_ASSERT_FATAL(fd >= 0);
    FILE *f = fdopen(fd, "w");
    for (const char *c = text; *c; c++) {
        if (c[0] == '@' && c[1] == 'P')
            fputs(test_path("platforms/test_8npu.xml"), f), c++;
        else if (c[0] == '@' && c[1] == 'W')
            fputs(test_path("workloads/small_gpt.json"), f), c++;
        else
            fputc(*c, f);
    }
    fclose(f);
    np_error_clear(err);
    int rc = sweep_load(path, s, err);
    unlink(path);
    return rc;
}

/* The point's arguments joined by spaces. */
static const char *joined(const sweep_point *p, char *buf, size_t size)
{
    buf[0] = '\0';
    for (int i = 0; i < p->num_args; i++)
        snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", i ? " " : "", p->args[i]);
    return buf;
}

static void test_cartesian(void)
{
    sweep s;
    np_error err;
    int rc = load_text("{\"name\": \"c\", \"csv\": \"x.csv\", \"platforms\": [\"@P\"],"
                       " \"workloads\": [\"@W\", \"@W\"],"
                       " \"vary\": {\"--schedule\": [\"gpipe\", \"1f1b\", \"zb-h1\"],"
                       "          \"training.global_batch_size\": [16, 32, 64, 128]}}",
                       &s, &err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    /* the second workload is the same file: every point a duplicate */
    CU_ASSERT_EQUAL(s.num_points, 12);
    CU_ASSERT_EQUAL(s.duplicates, 12);
    CU_ASSERT_STRING_EQUAL(s.name, "c");
    CU_ASSERT_STRING_EQUAL(s.csv, "x.csv");
    char buf[512];
    /* the last key varies fastest; options first, then --set pairs */
    CU_ASSERT_STRING_EQUAL(joined(&s.points[0], buf, sizeof buf),
                           "--schedule gpipe --set training.global_batch_size=16");
    CU_ASSERT_STRING_EQUAL(joined(&s.points[1], buf, sizeof buf),
                           "--schedule gpipe --set training.global_batch_size=32");
    CU_ASSERT_STRING_EQUAL(joined(&s.points[4], buf, sizeof buf),
                           "--schedule 1f1b --set training.global_batch_size=16");
    for (int i = 0; i < s.num_points; i++)
        CU_ASSERT_EQUAL(s.points[i].index, i);
    char **argv = sweep_point_argv(&s.points[11], "/x/simrun", "out.csv");
    CU_ASSERT_PTR_NOT_NULL_FATAL(argv);
    CU_ASSERT_STRING_EQUAL(argv[0], "/x/simrun");
    CU_ASSERT_STRING_EQUAL(argv[1], "--quiet");
    CU_ASSERT_STRING_EQUAL(argv[2], "--run-id");
    CU_ASSERT_STRING_EQUAL(argv[3], s.points[11].run_id);
    CU_ASSERT_STRING_EQUAL(argv[4], "--csv");
    CU_ASSERT_STRING_EQUAL(argv[5], "out.csv");
    CU_ASSERT_STRING_EQUAL(argv[6], "--schedule");
    CU_ASSERT_STRING_EQUAL(argv[7], "zb-h1");
    CU_ASSERT_STRING_EQUAL(argv[9], "training.global_batch_size=128");
    CU_ASSERT_STRING_EQUAL(argv[10], test_path("platforms/test_8npu.xml"));
    CU_ASSERT_PTR_NULL(argv[12]);
    free(argv);
    sweep_free(&s);
}

static void test_explicit_points(void)
{
    sweep s;
    np_error err;
    char buf[512];
    /* points alone; fixed options first; true is the bare flag, false omits */
    int rc = load_text("{\"platforms\": [\"@P\"], \"workloads\": [\"@W\"],"
                       " \"options\": [\"--fold-dp\", \"1\", \"--cfg=network/model:LV08\"],"
                       " \"points\": [{\"--schedule\": \"gpipe\", \"global_batch_size\": 32},"
                       "  {\"--dp-overlap\": true, \"--shifted-recompute\": false},"
                       "  {\"--cfg\": \"network/crosstraffic:0\", \"schedule\": \"zb-h1\","
                       "   \"name\": \"8\", \"model.swiglu\": true}, {}]}",
                       &s, &err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL(s.num_points, 4);
    CU_ASSERT_PTR_NULL(s.csv);
    CU_ASSERT_STRING_EQUAL(joined(&s.points[0], buf, sizeof buf),
                           "--fold-dp 1 --cfg=network/model:LV08 --schedule gpipe --set "
                           "global_batch_size=32");
    CU_ASSERT_EQUAL(s.points[0].first_own_arg, 3);
    CU_ASSERT_STRING_EQUAL(joined(&s.points[1], buf, sizeof buf),
                           "--fold-dp 1 --cfg=network/model:LV08 --dp-overlap");
    /* a string that JSON would read as another type is quoted, a bare word not */
    CU_ASSERT_STRING_EQUAL(joined(&s.points[2], buf, sizeof buf),
                           "--fold-dp 1 --cfg=network/model:LV08 --cfg=network/crosstraffic:0 "
                           "--set model.swiglu=true --set name=\"8\" --set schedule=zb-h1");
    CU_ASSERT_STRING_EQUAL(joined(&s.points[3], buf, sizeof buf),
                           "--fold-dp 1 --cfg=network/model:LV08");
    sweep_free(&s);

    /* vary and points together: the product, then the points */
    rc = load_text("{\"platforms\": [\"@P\"], \"workloads\": [\"@W\"],"
                   " \"vary\": {\"--dp-algorithm\": [\"ring\", \"ring-flow\"],"
                   "            \"--dp-radix\": [2, 4, 8]},"
                   " \"points\": [{\"--dp-algorithm\": \"butterfly\"}]}",
                   &s, &err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL(s.num_points, 7);
    CU_ASSERT_STRING_EQUAL(joined(&s.points[6], buf, sizeof buf), "--dp-algorithm butterfly");
    sweep_free(&s);

    /* every simrun option with a CSV column, in "options", "vary" and "points"; a
     * trace file passes as written, as --plan's */
    rc = load_text("{\"platforms\": [\"@P\"], \"workloads\": [\"@W\"],"
                   " \"options\": [\"--placement\", \"dp-tp-cp-pp\", \"--allow-large\","
                   "  \"--moe-trace\", \"traces/t.trace\"],"
                   " \"vary\": {\"--moe-policy\": [\"none\", \"switch\"],"
                   "            \"--placement\": [false, \"tp-cp-ep-dp-pp\"]},"
                   " \"points\": [{\"--moe-trace-step\": 1, \"--allow-large\": true}]}",
                   &s, &err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL(s.num_points, 5);
    CU_ASSERT_STRING_EQUAL(joined(&s.points[0], buf, sizeof buf),
                           "--placement dp-tp-cp-pp --allow-large --moe-trace traces/t.trace "
                           "--moe-policy none");
    CU_ASSERT_STRING_EQUAL(joined(&s.points[3], buf, sizeof buf),
                           "--placement dp-tp-cp-pp --allow-large --moe-trace traces/t.trace "
                           "--moe-policy switch --placement tp-cp-ep-dp-pp");
    CU_ASSERT_STRING_EQUAL(joined(&s.points[4], buf, sizeof buf),
                           "--placement dp-tp-cp-pp --allow-large --moe-trace traces/t.trace "
                           "--allow-large --moe-trace-step 1");
    sweep_free(&s);

    /* neither: one point per platform x workload */
    rc = load_text("{\"platforms\": [\"@P\"], \"workloads\": [\"@W\"]}", &s, &err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL(s.num_points, 1);
    CU_ASSERT_EQUAL(s.points[0].num_args, 0);
    sweep_free(&s);
}

/* Loading text fails with NP_EXIT_INPUT, the error's key equal to key and
 * its text containing what. */
static void expect_bad(const char *text, const char *key, const char *what)
{
    sweep s;
    np_error err;
    int rc = load_text(text, &s, &err);
    CU_ASSERT_EQUAL(rc, NP_EXIT_INPUT);
    CU_ASSERT_EQUAL(s.num_points, 0);
    if (rc != NP_EXIT_INPUT || strcmp(err.key, key) != 0 || !strstr(err.text, what))
        fprintf(stderr, "\n  %s\n  -> rc %d key '%s' text '%s'; expected key '%s' with '%s'\n",
                text, rc, err.key, err.text, key, what);
    CU_ASSERT_STRING_EQUAL(err.key, key);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, what));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.source, "npusim_sweep_"));
    if (rc == 0)
        sweep_free(&s);
}

#define PW "\"platforms\": [\"@P\"], \"workloads\": [\"@W\"]"

static void test_bad_keys(void)
{
    expect_bad("{" PW ", \"colour\": 1}", "colour", "unknown key");
    expect_bad("{" PW ", \"Vary\": {}}", "Vary", "unknown key");
    expect_bad("{\"workloads\": [\"@W\"]}", "platforms", "missing");
    expect_bad("{\"platforms\": \"@P\", \"workloads\": [\"@W\"]}", "platforms", "non-empty array");
    expect_bad("{\"platforms\": [], \"workloads\": [\"@W\"]}", "platforms", "non-empty array");
    expect_bad("{\"platforms\": [\"@P\"], \"workloads\": [3]}", "workloads[0]", "file name");
    expect_bad("{\"platforms\": [\"nowhere.xml\"], \"workloads\": [\"@W\"]}", "platforms[0]",
               "not a readable file");
    expect_bad("{" PW ", \"name\": 7}", "name", "non-empty string");
    expect_bad("{" PW ", \"csv\": \"\"}", "csv", "non-empty string");
    expect_bad("{" PW ", \"vary\": []}", "vary", "an object");
    expect_bad("{" PW ", \"vary\": {\"--schedule\": \"gpipe\"}}", "vary.--schedule",
               "non-empty array");
    expect_bad("{" PW ", \"vary\": {\"--schedule\": []}}", "vary.--schedule", "got []");
    /* a workload key the workload does not have fails the sweep file, not
     * every point when it runs; a value that breaks a rule stays a point's */
    expect_bad("{" PW ", \"vary\": {\"bogus_key\": [1, 2]}}", "bogus_key",
               "not a key of the workload");
    expect_bad("{" PW ", \"points\": [{\"model.hiden_size\": 512}]}", "model.hiden_size",
               "not a key of the workload");
    /* one workload key set twice in a point, spelt two ways */
    expect_bad("{" PW ", \"vary\": {\"training.global_batch_size\": [16], "
               "\"global_batch_size\": [32]}}",
               "",
               "sets one workload key twice, as global_batch_size and "
               "training.global_batch_size");
    expect_bad("{" PW ", \"points\": [{\"--schedule\": \"gpipe\", \"schedule\": \"zb-h1\"}]}", "",
               "as --schedule and schedule");
    /* one --trace for every point: each would replace the last's */
    expect_bad("{" PW ", \"options\": [\"--trace\", \"t.json\"], "
               "\"vary\": {\"micro_batch_size\": [1, 2]}}",
               "--trace", "points 0 and 1 would both write this file");
    expect_bad("{" PW ", \"vary\": {\"--schedule\": [[\"gpipe\"]]}}", "vary.--schedule[0]",
               "a string or a number");
    expect_bad("{" PW ", \"vary\": {\"--sched\": [\"gpipe\"]}}", "vary.--sched[0]",
               "not a simrun option");
    expect_bad("{" PW ", \"vary\": {\"--csv\": [\"a.csv\"]}}", "vary.--csv[0]", "sets --csv");
    expect_bad("{" PW ", \"vary\": {\"--run-id\": [\"a\"]}}", "vary.--run-id[0]", "itself");
    expect_bad("{" PW ", \"vary\": {\"--dp-overlap\": [\"yes\"]}}", "vary.--dp-overlap[0]",
               "true or false");
    expect_bad("{" PW ", \"vary\": {\"--fold-dp\": [true]}}", "vary.--fold-dp[0]",
               "a string or a number");
    expect_bad("{" PW ", \"vary\": {\"global_batch_size\": [16, null]}}",
               "vary.global_batch_size[1]", "a string, number or boolean");
    expect_bad("{" PW ", \"vary\": {\"a=b\": [1]}}", "vary.a=b[0]", "workload key");
    expect_bad("{" PW ", \"vary\": {\"--planner\": [\"megatron\", \"all\"]}}", "vary.--planner[1]",
               "one row per planner");
    expect_bad("{" PW ", \"points\": {}}", "points", "an array");
    expect_bad("{" PW ", \"points\": [3]}", "points[0]", "an object");
    expect_bad("{" PW ", \"points\": [{}, {\"planner\": \"all\"}]}", "points[1].planner",
               "one row per planner");
    expect_bad("{" PW ", \"points\": [{\"model.layers\": [1]}]}", "points[0].model.layers",
               "a string, number or boolean");
    expect_bad("{" PW ", \"options\": \"--fold-dp 4\"}", "options", "an array");
    expect_bad("{" PW ", \"options\": [\"--fold-dp\"]}", "options[0]", "takes a value");
    expect_bad("{" PW ", \"options\": [\"--quiet\"]}", "options[0]", "itself");
    expect_bad("{" PW ", \"options\": [\"W.json\"]}", "options[0]", "not a simrun option");
    expect_bad("{" PW ", \"options\": [\"--cfg\"]}", "options[0]", "one string");
    expect_bad("{" PW ", \"options\": [\"--planner\", \"all\"]}", "options[1]",
               "one row per planner");
    /* simrun matches planner names in any case, so "ALL" is "all" */
    expect_bad("{" PW ", \"vary\": {\"--planner\": [\"ALL\"]}}", "vary.--planner[0]",
               "one row per planner");
    expect_bad("{" PW ", \"points\": [{\"planner\": \"All\"}]}", "points[0].planner",
               "one row per planner");
    expect_bad("{" PW ", \"options\": [4]}", "options[0]", "a string");
    /* simrun's options a sweep may not give, each with its reason */
    expect_bad("{" PW ", \"vary\": {\"--memory\": [true]}}", "vary.--memory[0]", "mem_*");
    expect_bad("{" PW ", \"options\": [\"--memory\"]}", "options[0]", "--quiet");
    expect_bad("{" PW ", \"options\": [\"--progress\"]}", "options[0]", "no progress");
    expect_bad("{" PW ", \"options\": [\"--help\"]}", "options[0]", "runs nothing");
    expect_bad("{" PW ", \"points\": [{\"--version\": true}]}", "points[0].--version",
               "runs nothing");
    /* --moe-policy all is one row per policy, in any case */
    expect_bad("{" PW ", \"vary\": {\"--moe-policy\": [\"none\", \"All\"]}}",
               "vary.--moe-policy[1]", "one row per policy");
    expect_bad("{" PW ", \"options\": [\"--moe-policy\", \"all\"]}", "options[1]",
               "one row per policy");
    expect_bad("{" PW ", \"options\": [\"--moe-trace\"]}", "options[0]", "takes a value");
    expect_bad("{" PW ", \"vary\": {\"--allow-large\": [1]}}", "vary.--allow-large[0]",
               "true or false");
    /* an unknown option's error lists the ones a point can set */
    expect_bad("{" PW ", \"vary\": {\"--placment\": [\"dp-tp-cp-pp\"]}}", "vary.--placment[0]",
               "--placement, --moe-policy, --moe-trace, --moe-trace-step");
    /* the file itself: JSON syntax (with the line), duplicate keys, not an object */
    expect_bad("{" PW ",\n \"name\": }", "", "");
    expect_bad("{" PW ", \"name\": \"a\", \"name\": \"b\"}", "", "duplicate");
    expect_bad("[1]", "", "an object at the top level");
}

static void test_run_id_stable(void)
{
    /* the canonical text and its id are documented (docs/sweeps.md); run
     * from the source root so that the paths are as written */
    char cwd[4096];
    CU_ASSERT_PTR_NOT_NULL_FATAL(getcwd(cwd, sizeof cwd));
    CU_ASSERT_EQUAL_FATAL(chdir(NPUSIM_SOURCE_DIR), 0);
    sweep a, b;
    np_error err;
    int rc = load_text(
        "{\"platforms\": [\"platforms/test_8npu.xml\"],"
        " \"workloads\": [\"workloads/small_gpt.json\"], \"options\": [\"--fold-dp\", \"1\"],"
        " \"points\": [{\"--schedule\": \"gpipe\", \"training.global_batch_size\": 32,"
        "  \"--dp-overlap\": true}]}",
        &a, &err);
    int rc2 = load_text(
        "{\"options\": [\"--fold-dp\", \"1\"], \"name\": \"other\","
        " \"workloads\": [\"workloads/small_gpt.json\"],"
        " \"platforms\": [\"platforms/test_8npu.xml\"],"
        " \"vary\": {\"--dp-overlap\": [true, false], \"training.global_batch_size\": [32, \"32\"],"
        "   \"--schedule\": [\"gpipe\"]}}",
        &b, &err);
    CU_ASSERT_EQUAL(chdir(cwd), 0);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL_FATAL(rc2, 0);
    CU_ASSERT_STRING_EQUAL(a.points[0].canonical,
                           "[\"npusim-sweep-point/1\",\"platforms/test_8npu.xml\","
                           "\"workloads/small_gpt.json\",[[\"--dp-overlap\"],[\"--schedule\","
                           "\"gpipe\"]],[[\"training.global_batch_size\",\"32\"]],[\"--fold-dp\","
                           "\"1\"]]");
    CU_ASSERT_STRING_EQUAL(a.points[0].run_id, "dcf2ec74f38a9bb4"); /* Python's hashlib */
    /* the same point in another order of keys has the same id; 32 and "32"
     * are different --set values, true and false different commands */
    CU_ASSERT_EQUAL_FATAL(b.num_points, 4);
    CU_ASSERT_STRING_EQUAL(b.points[0].run_id, "dcf2ec74f38a9bb4");
    for (int i = 1; i < 4; i++)
        for (int j = 0; j < i; j++)
            CU_ASSERT_STRING_NOT_EQUAL(b.points[i].run_id, b.points[j].run_id);
    CU_ASSERT_PTR_EQUAL(sweep_find(&b, "dcf2ec74f38a9bb4"), &b.points[0]);
    CU_ASSERT_PTR_NULL(sweep_find(&b, "0000000000000000"));
    sweep_free(&a);
    sweep_free(&b);

    /* values repeated in vary give one point */
    rc = load_text("{" PW ", \"vary\": {\"--fold-dp\": [1, \"1\", 2]}}", &a, &err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL(a.num_points, 2);
    CU_ASSERT_EQUAL(a.duplicates, 1);
    CU_ASSERT_EQUAL(a.points[1].index, 1);
    sweep_free(&a);
}

static void test_option_kinds(void)
{
    CU_ASSERT_EQUAL(sweep_option_kind_of("--schedule"), SWEEP_OPT_VALUE);
    CU_ASSERT_EQUAL(sweep_option_kind_of("--dp-overlap"), SWEEP_OPT_FLAG);
    CU_ASSERT_EQUAL(sweep_option_kind_of("--cfg=a:b"), SWEEP_OPT_JOINED);
    CU_ASSERT_EQUAL(sweep_option_kind_of("--csv"), SWEEP_OPT_MANAGED);
    /* every option of simrun --help */
    const char *values[] = {"--set",
                            "--planner",
                            "--plan-out",
                            "--plan",
                            "--frontier",
                            "--schedule",
                            "--trace",
                            "--trace-replicas",
                            "--dp-algorithm",
                            "--dp-inter-algorithm",
                            "--dp-radix",
                            "--ep-alltoall-algorithm",
                            "--moe-policy",
                            "--moe-trace",
                            "--moe-trace-step",
                            "--moe-sample-mb",
                            "--placement",
                            "--dp-bucket-bytes",
                            "--fold-dp"};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
        CU_ASSERT_EQUAL(sweep_option_kind_of(values[i]), SWEEP_OPT_VALUE);
    const char *flags[] = {"--dp-overlap", "--shifted-recompute", "--per-rank-flows",
                           "--allow-large"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        CU_ASSERT_EQUAL(sweep_option_kind_of(flags[i]), SWEEP_OPT_FLAG);
    const char *managed[] = {"--csv",    "--run-id", "--csv-header", "--version", "--memory",
                             "--stages", "--quiet",  "--progress",   "--help"};
    for (size_t i = 0; i < sizeof managed / sizeof managed[0]; i++)
        CU_ASSERT_EQUAL(sweep_option_kind_of(managed[i]), SWEEP_OPT_MANAGED);
    CU_ASSERT_EQUAL(sweep_option_kind_of("--log=root.thresh:info"), SWEEP_OPT_JOINED);
    CU_ASSERT_EQUAL(sweep_option_kind_of("--schedule=gpipe"), SWEEP_OPT_UNKNOWN);
    CU_ASSERT_EQUAL(sweep_option_kind_of("--nothing"), SWEEP_OPT_UNKNOWN);
}

void register_sweep_tests(void)
{
    TEST_SUITE("sweep", {"vary: cartesian product, argument order", test_cartesian},
               {"explicit points, fixed options, flags", test_explicit_points},
               {"every bad key named", test_bad_keys},
               {"run ids: canonical text, stable, distinct", test_run_id_stable},
               {"simrun option kinds", test_option_kinds});
}
