/*
 * test_moe_capacity_run.c -- the expert capacity in runs of the 21B MoE on
 * platforms/moe_32npu.xml (test_moe_capacity.c has the closed forms): the
 * replayed all-to-all of a balanced run that drops without padding carries
 * only the kept tokens, the engine refuses a policy whose capacity the cost
 * model was not built with, and simrun's --moe-policy switch (alone and
 * under all) prices and checks the memory of its padding as the workload's
 * own keys do.
 *
 * Per NPU and MoE layer: n_l·k = 4096 assignments, 128 per expert and
 * source; C = ceil(128·cf); padding 32·C − 4096 rows of h 2560 (the expert
 * input and the combine's input) and f_e 10240 (FC1's output and the
 * activation's), bf16.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "costmodel.h"
#include "moe_policy.h"
#include "moe_testutil.h"
#include "testutil.h"

#define PF "platforms/moe_32npu.xml"
#define WL "workloads/moe_21b_32npu.json"

/* ---- engine runs ---------------------------------------------------------- */

typedef struct outcome {
    moe_run_head head;
    double iteration_s, alltoall_s, dropped, padding, peak_bytes;
} outcome;

static void collect(const engine_result *r, void *ctx)
{
    outcome *out = ctx;
    out->iteration_s = r->iteration_s;
    out->alltoall_s = r->moe_alltoall_s;
    out->dropped = r->moe_dropped_tokens;
    out->padding = r->moe_padding_tokens;
    out->peak_bytes = r->peak_bytes;
}

/* Balanced routing at global batch 64 (2 micro-batches) with one or two
 * more workload keys, under policy. */
static outcome run(const char *a, const char *b, int policy)
{
    moe_run_case c = {.sets = {"training.global_batch_size=64", a, b},
                      .num_sets = 1 + (a != NULL) + (b != NULL),
                      .policy = policy,
                      .collect = collect,
                      .out_size = sizeof(outcome)};
    outcome o;
    moe_test_simulate(&c, &o);
    return o;
}

/* The cost model's closed-form all-to-all of one exchange. */
static double closed_a2a_s(const char *set)
{
    const char *sets[] = {set};
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with(WL, sets, set ? 1 : 0, &w, &err), 0);
    cl_cluster c = test_npu_cluster(32, 8);
    cm_model cm;
    CU_ASSERT_EQUAL_FATAL(cm_build(&w, &c, 1, &cm, &err), 0);
    double s = cm.layers[1].moe.a2a_s;
    cm_free(&cm);
    wl_free(&w);
    return s;
}

/* Dropping without padding, the replayed exchanges carry the kept tokens:
 * at cf 0.25 every expert keeps C = 32 of its 128 from each source, the
 * padded run's E·C exactly, so both replay the same all-to-all; it falls
 * with cf and is a quarter-size exchange's (the closed form's 96 exchanges
 * of a worker: 12 layers, 4 per micro-batch, 2 micro-batches). */
static void test_unpadded_drop_replays_kept_tokens(void)
{
    outcome full = run(NULL, NULL, MOE_POLICY_NONE);
    outcome half = run("model.moe_expert_capacity_factor=0.5", NULL, MOE_POLICY_NONE);
    outcome quarter = run("model.moe_expert_capacity_factor=0.25", NULL, MOE_POLICY_NONE);
    outcome padded = run("model.moe_expert_capacity_factor=0.25",
                         "model.moe_pad_expert_input_to_capacity=true", MOE_POLICY_NONE);
    CU_ASSERT_DOUBLE_EQUAL(quarter.dropped, 0.75 * 3145728.0, 0.5);
    CU_ASSERT_DOUBLE_EQUAL(padded.padding, 0.0, 0.0);
    ASSERT_REL(quarter.alltoall_s, padded.alltoall_s, 1e-9);
    CU_ASSERT(half.alltoall_s <= full.alltoall_s);
    CU_ASSERT(quarter.alltoall_s <= half.alltoall_s);
    CU_ASSERT(quarter.alltoall_s < 0.5 * full.alltoall_s);
    ASSERT_REL(full.alltoall_s, 96 * closed_a2a_s(NULL), 0.02);
    ASSERT_REL(half.alltoall_s, 96 * closed_a2a_s("model.moe_expert_capacity_factor=0.5"), 0.02);
    ASSERT_REL(quarter.alltoall_s, 96 * closed_a2a_s("model.moe_expert_capacity_factor=0.25"),
               0.02);
}

/* A switch run on a workload without Switch's keys would leave its padding
 * out of the memory model: refused, naming the policy and the keys. */
static void test_switch_without_its_keys_is_refused(void)
{
    moe_run_case c = {.sets = {"training.global_batch_size=64"},
                      .num_sets = 1,
                      .policy = MOE_POLICY_SWITCH,
                      .collect = collect,
                      .out_size = sizeof(outcome)};
    outcome o;
    moe_test_try(&c, &o);
    CU_ASSERT_EQUAL(o.head.rc, NP_EXIT_INTERNAL);
    if (!strstr(o.head.error, "policy 'switch' routes with moe_expert_capacity_factor 1.25 "
                              "with padding"))
        fprintf(stderr, "\n  %s\n", o.head.error);
    CU_ASSERT_PTR_NOT_NULL(strstr(o.head.error, "policy 'switch' routes with "
                                                "moe_expert_capacity_factor 1.25 with padding"));
}

/* With its keys, Switch routes what they route: the same run. */
static void test_switch_with_its_keys_is_the_key_run(void)
{
    const char *cf = "model.moe_expert_capacity_factor=8";
    const char *pad = "model.moe_pad_expert_input_to_capacity=true";
    outcome s = run(cf, pad, MOE_POLICY_SWITCH);
    outcome k = run(cf, pad, MOE_POLICY_NONE);
    CU_ASSERT_DOUBLE_EQUAL(s.padding, (32.0 * 1024 - 4096) * 32 * 12 * 2, 0.5);
    CU_ASSERT_DOUBLE_EQUAL(s.padding, k.padding, 0.0);
    ASSERT_REL(s.iteration_s, k.iteration_s, 1e-12);
    ASSERT_REL(s.alltoall_s, k.alltoall_s, 1e-12);
    ASSERT_REL(s.peak_bytes, k.peak_bytes, 1e-12);
}

/* ---- simrun ------------------------------------------------------------------ */

/* Field `col` (by the header's name) of CSV row `row` (1: the first after
 * the header) of path; NAN when absent.  Fields may be quoted. */
static double csv_field(const char *path, int row, const char *col)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NAN;
    static char line[1 << 16];
    int want = -1;
    double v = NAN;
    for (int r = 0; r <= row && fgets(line, sizeof line, f); r++) {
        int i = 0;
        char *p = line;
        while (*p && *p != '\n') {
            char field[512];
            size_t n = 0;
            bool quoted = *p == '"';
            p += quoted;
            while (*p && (quoted ? !(*p == '"' && p[1] != '"') : *p != ',' && *p != '\n')) {
                p += quoted && *p == '"'; /* "" inside quotes */
                if (n + 1 < sizeof field)
                    field[n++] = *p;
                p++;
            }
            p += quoted && *p == '"';
            field[n] = '\0';
            if (r == 0 && strcmp(field, col) == 0)
                want = i;
            else if (r == row && i == want)
                v = strtod(field, NULL);
            i++;
            p += *p == ',';
        }
    }
    fclose(f);
    return v;
}

/* simrun (this build's) on the 21B MoE with args, its CSV rows to csv;
 * its exit code, stderr in err_path. */
static int simrun(const char *args, const char *csv, const char *err_path)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "rm -f %s; %s/simrun --quiet --csv %s %s %s %s >/dev/null 2>%s", csv,
             NPUSIM_BINARY_DIR, csv, args, test_path(PF), test_path(WL), err_path);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static bool file_has(const char *path, const char *text)
{
    static char buf[1 << 14];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    return strstr(buf, text) != NULL;
}

/* --moe-policy switch against the keys, at cf 8 (C = 1024) and global batch
 * 32 (one micro-batch in flight): the same memory and run, the dropless
 * run's activations plus 12 layers of padding; under all, the switch row is
 * the keys' and the none row the dropless one.  At cf 1000 neither fits:
 * exit 3, and all writes no row. */
static void test_simrun_switch_memory(void)
{
    char dir[] = "/tmp/npusim_moe_cap_XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    char sw[256], keys[256], drop[256], all[256], err[256];
    snprintf(sw, sizeof sw, "%s/switch.csv", dir);
    snprintf(keys, sizeof keys, "%s/keys.csv", dir);
    snprintf(drop, sizeof drop, "%s/dropless.csv", dir);
    snprintf(all, sizeof all, "%s/all.csv", dir);
    snprintf(err, sizeof err, "%s/err", dir);
    const char *gbs = "--set global_batch_size=32 ";
    char args[512];
    snprintf(args, sizeof args, "%s--moe-policy switch --set moe_expert_capacity_factor=8", gbs);
    CU_ASSERT_EQUAL_FATAL(simrun(args, sw, err), 0);
    snprintf(args, sizeof args,
             "%s--set moe_expert_capacity_factor=8 --set moe_pad_expert_input_to_capacity=true",
             gbs);
    CU_ASSERT_EQUAL_FATAL(simrun(args, keys, err), 0);
    CU_ASSERT_EQUAL_FATAL(simrun(gbs, drop, err), 0);
    const char *cols[] = {"peak_bytes",  "mem_activations_bytes", "mem_predicted_bytes",
                          "iteration_s", "moe_alltoall_s",        "moe_padding_tokens"};
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
        ASSERT_REL(csv_field(sw, 1, cols[i]), csv_field(keys, 1, cols[i]), 1e-9);
    double per_layer = (32.0 * 1024 - 4096) * (2 * 2560 + 2 * 10240) * 2;
    CU_ASSERT_DOUBLE_EQUAL(csv_field(sw, 1, "mem_inflight"), 1.0, 0.0);
    ASSERT_REL(csv_field(sw, 1, "mem_activations_bytes") -
                   csv_field(drop, 1, "mem_activations_bytes"),
               12 * per_layer, 1e-6);
    snprintf(args, sizeof args, "%s--moe-policy all --set moe_expert_capacity_factor=8", gbs);
    CU_ASSERT_EQUAL_FATAL(simrun(args, all, err), 0);
    ASSERT_REL(csv_field(all, 2, "mem_activations_bytes"),
               csv_field(keys, 1, "mem_activations_bytes"), 1e-9);
    ASSERT_REL(csv_field(all, 2, "peak_bytes"), csv_field(keys, 1, "peak_bytes"), 1e-9);
    ASSERT_REL(csv_field(all, 1, "mem_activations_bytes"),
               csv_field(drop, 1, "mem_activations_bytes"), 1e-9);
    CU_ASSERT_EQUAL(simrun("--moe-policy switch --set moe_expert_capacity_factor=1000", sw, err),
                    NP_EXIT_NOFIT);
    CU_ASSERT(file_has(err, "does not fit"));
    CU_ASSERT_EQUAL(simrun("--moe-policy all --set moe_expert_capacity_factor=1000", all, err),
                    NP_EXIT_NOFIT);
    CU_ASSERT(file_has(err, "policy 'switch' cannot run here"));
    CU_ASSERT(access(all, F_OK) != 0); /* all or nothing */
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CU_ASSERT_EQUAL(system(cmd), 0);
}

void register_moe_capacity_run_tests(void)
{
    TEST_SUITE("moe_capacity_run",
               {"unpadded drop replays kept tokens", test_unpadded_drop_replays_kept_tokens},
               {"switch without its keys is refused", test_switch_without_its_keys_is_refused},
               {"switch with its keys is the key run", test_switch_with_its_keys_is_the_key_run},
               {"simrun switch memory", test_simrun_switch_memory});
}
