/*
 * testutil.h -- helpers shared by the CUnit suites.
 *
 * Paths: tests run from the source root (CTest sets the working directory);
 * test_path() also makes them work from anywhere by prefixing the source dir.
 *
 * What a suite builds its cases from, so that each test shows only what it
 * specifies: uniform models and plans with their op lists; seeded random
 * models (test_random_model, one xorshift64* stream per suite, so every
 * machine checks the same models); the 910B-class cluster of the platforms;
 * planner_run() with default options; a synthetic plan simulated in a forked
 * child (test_simulate_plan: SimGrid holds one platform per process); and
 * simrun's path on a workload file (test_job_build).
 */
#ifndef TESTUTIL_H
#define TESTUTIL_H

#include <CUnit/CUnit.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "reference_cluster.h"
#include "plan.h"
#include "schedule.h"

/* Absolute path of a file in the source tree, in a static rotating buffer. */
const char *test_path(const char *relative);

/* Relative difference |a-b| / max(|a|,|b|,tiny). */
double test_rel_diff(double a, double b);

/* Registers a suite with its tests: TEST_SUITE("name", {"case", fn}, ...). */
typedef struct test_case {
    const char *name;
    void (*fn)(void);
} test_case;
void test_add_suite(const char *name, const test_case *cases, int count);
#define TEST_SUITE(name, ...)                                                                      \
    do {                                                                                           \
        static const test_case cases_[] = {__VA_ARGS__};                                           \
        test_add_suite(name, cases_, (int)(sizeof cases_ / sizeof cases_[0]));                     \
    } while (0)

#define ASSERT_REL(actual, expected, tol)                                                          \
    do {                                                                                           \
        double a_ = (actual), e_ = (expected);                                                     \
        if (!(test_rel_diff(a_, e_) <= (tol)))                                                     \
            fprintf(stderr, "\n  %s:%d: %s = %.12g, expected %.12g (rel %.3g)\n", __FILE__,        \
                    __LINE__, #actual, a_, e_, test_rel_diff(a_, e_));                             \
        CU_ASSERT(test_rel_diff(a_, e_) <= (tol));                                                 \
    } while (0)

/* A synthetic cost model of n identical layers: F = 1, B = 2 time units,
 * 10 bytes of activations, 100 of state and a 1-byte output each, no TP. */
void test_uniform_model(cm_model *cm, int n);
/* p stages of layers_per_stage layers, m micro-batches of 1, TP = DP = 1. */
void test_uniform_plan(plan *pl, int p, int m, int layers_per_stage, schedule_kind k);
/* The same with v chunks of layers_per_chunk layers per stage: chunk k
 * (stage k mod p) holds layers k·layers_per_chunk onwards. */
void test_chunked_plan(plan *pl, int p, int v, int m, int layers_per_chunk, schedule_kind k);

/* A uniform model (test_uniform_model, with weight_grad_s per layer), a
 * chunked plan and the op lists sched_build() makes of them. */
typedef struct test_built_schedule {
    cm_model cm;
    plan pl;
    schedule sc;
    int rc; /* sched_build()'s; its error is printed with the plan's shape */
    np_error err;
} test_built_schedule;
void test_build_schedule(test_built_schedule *b, int p, int m, int v, int layers_per_chunk,
                         double weight_grad_s, schedule_kind k);
void test_built_schedule_free(test_built_schedule *b);

/* How many ops of kind k stage st runs. */
int test_count_ops(const sched_stage *st, op_kind k);

/* The recomputable unit of layer ly called name (a CUnit failure, and the
 * first unit, when there is none). */
const cm_unit *test_unit(const cm_layer *ly, const char *name);

/* ---- seeded synthetic models ---------------------------------------------- */

/* A range [lo, hi) to draw from; lo == hi is the constant lo and draws
 * nothing (so a constant does not shift the numbers drawn after it). */
typedef struct test_range {
    double lo, hi;
} test_range;

/* What test_random_model() draws besides what every model shares: forward_s
 * in [0.5, 2), backward_s in [0.5, 3), weight_grad_s in [0, 1) per layer. */
typedef struct test_random_spec {
    uint64_t stream; /* added to the scrambled seed: suites draw their own models */
    bool lm_head;    /* the last layer is a CM_LM_HEAD, else one more decoder */
    /* > 0: the decoders share one random table of this many units (forward
     * [0.05, 1) s, [2, 30) bytes each) on a 5-byte input they always keep,
     * and their activations are input + units; 0: decoder_activation_bytes. */
    int units;
    test_range edge_activation_bytes;    /* embedding and head, never recomputed */
    test_range decoder_activation_bytes; /* per micro-batch, no recompute */
    /* A decoder under selective / full recompute keeps this share of its
     * bytes; every layer under it re-runs this share of its forward (so an
     * embedding or head recomputed by mistake costs time and saves nothing). */
    double selective_kept, selective_cost;
    double full_kept, full_cost;
    test_range state_bytes, grad_bytes, output_bytes;
    double workspace_bytes;
    /* hbm_bytes = workspace + Σ state / 2 + slack · Σ activations (none): the
     * range sets how often memory binds. */
    test_range memory_slack;
} test_random_spec;

/* num_layers layers, the first an embedding, drawn from seed by a fixed
 * xorshift64* so every machine builds the same model: the unit table, then
 * layer by layer forward, backward, weight gradient, activations, state,
 * gradient and output bytes, then the memory slack.  Micro-batch 1, no TP,
 * DP 1.  Free with cm_free(). */
void test_random_model(cm_model *cm, int num_layers, uint64_t seed, const test_random_spec *spec);

/* A workload of p pipeline stages and m micro-batches of 1 under the given
 * schedule, TP = DP = 1, no virtual stages (what planner_run() reads). */
void test_pipeline_workload(wl_workload *w, int p, int m, schedule_kind sched);

/* One NPU per node behind a scale-out link of the given bandwidth and
 * latency; everything else zero. */
cl_cluster test_scaleout_cluster(double bandwidth_Bps, double latency_s);
/* num_npus NPUs, npus_per_node per server: the scale-out route (NIC) and
 * the scale-up fabric at the given bandwidths and latencies; everything
 * else zero (the planners' view of a flat test platform). */
cl_cluster test_two_level_cluster(int num_npus, int npus_per_node, double out_Bps, double out_s,
                                  double up_Bps, double up_s);

/* The largest mem_stage_bytes() total over pl's stages. */
double test_largest_stage_bytes(const cm_model *cm, const plan *pl);

/* planner_run() of the planner called `name` with the workload's default
 * options (planner_init_options()); err may be NULL. */
int test_run_planner(const char *name, const cm_model *cm, const cl_cluster *c,
                     const wl_workload *w, plan *out, np_error *err);

/* ---- simulating a synthetic plan -------------------------------------------- */

#define TEST_MAX_STAGES 32

/* What a test reads of a run: engine_result's totals and, per stage, its
 * metrics (the slowest replica's) and the span of replica 0's passes. */
typedef struct test_sim_result {
    int rc; /* 0, or the code of the step that failed (error says why) */
    char error[512];
    double iteration_s, pipeline_s, bubble_ratio;
    double stage_bubble_ratio[TEST_MAX_STAGES];
    double stage_busy_s[TEST_MAX_STAGES];
    double stage_peak_bytes[TEST_MAX_STAGES];
    double stage_dp_comm_s[TEST_MAX_STAGES]; /* exposed data-parallel time (largest replica) */
    /* First F/B/W/recompute start to last end on replica 0 (record_spans). */
    double stage_span_s[TEST_MAX_STAGES];
    /* The summed length of those spans on replica 0 (record_spans). */
    double stage_pass_time_s[TEST_MAX_STAGES];
    long activities; /* SimGrid activities started */
    int tp_fold;     /* TP ranks per network flow (engine_result.tp_fold) */
} test_sim_result;

/* In a child: starts SimGrid, loads `platform` (a path in the source tree),
 * builds pl's op lists into *sc and replays them into *res on a workload of
 * pl's batch (m micro-batches per replica).  o NULL: engine defaults. */
int test_run_plan(const char *platform, const cm_model *cm, const plan *pl, const engine_options *o,
                  schedule *sc, engine_result *res, np_error *err);

/* The figures of *out from a finished run of pl. */
void test_sim_summarize(const engine_result *res, const plan *pl, test_sim_result *out);

/* test_run_plan() in a forked child (SimGrid holds one platform per
 * process), its summary brought back in *out; a failed run's error is also
 * printed with the plan's schedule, p and m.  Returns 0 when the child
 * delivered *out (out->rc then says whether the run succeeded). */
int test_simulate_plan(const char *platform, const cm_model *cm, const plan *pl,
                       const engine_options *o, test_sim_result *out);
/* The same without printing a failed run's error: for a test that expects
 * the run to be refused and checks out->error itself. */
int test_simulate_plan_quiet(const char *platform, const cm_model *cm, const plan *pl,
                             const engine_options *o, test_sim_result *out);

/* ---- the simrun path on a workload file --------------------------------------- */

/* A workload as simrun runs it: loaded, priced, planned and turned into op
 * lists. */
typedef struct test_job {
    wl_workload w;
    cm_model cm;
    plan pl;
    schedule sc;
} test_job;

/* Loads `workload` (a path in the source tree) with the overrides, builds
 * its cost model on `cluster` (a loaded platform's), plans it with the
 * planner called `planner` (test_run_planner()) and builds the op lists.
 * Free with test_job_free(), also after a failure. */
int test_job_build(test_job *j, const cl_cluster *cluster, const char *workload,
                   const char *const *overrides, int num_overrides, const char *planner,
                   np_error *err);
void test_job_free(test_job *j);
/* Rebuilds j's op lists after a change to its plan, priced by cm (j's own
 * cost model or one of the plan's micro-batch size). */
int test_job_reschedule(test_job *j, const cm_model *cm, np_error *err);

/* SimGrid runs one platform per process: a test that simulates runs
 * fn(ctx, fd) in a forked child, which writes `size` bytes of result to fd.
 * Returns 0 when the child exited 0 and delivered the result. */
int test_in_child(void (*fn)(void *ctx, int fd), void *ctx, void *result, size_t size);

/* Writes all of data to fd (for results sent from a child). */
int test_write_all(int fd, const void *data, size_t size);

/* In a child: SimGrid with npusim's configuration and no log output. */
void test_simgrid_init(void);

/* Workload loading for the loader's tests: a file relative to the source
 * root, with overrides, or a text written to a temporary file. */
int test_wl_load(const char *relative, wl_workload *w, np_error *err);
int test_wl_load_with(const char *relative, const char *const *overrides, int n, wl_workload *w,
                      np_error *err);
int test_wl_load_text(const char *text, const char *const *overrides, int n, wl_workload *w,
                      np_error *err);
/* Loading tests/bad_input/FILE fails with NP_EXIT_INPUT, err.key equal to key
 * and err.text containing text. */
void test_expect_bad_input(const char *file, const char *key, const char *text);
/* Loading FILE with the one override fails on the command line, naming key,
 * with err.text containing text. */
void test_expect_override_error(const char *file, const char *override, const char *key,
                                const char *text);

/* Writes the shipped file `relative` with the first `from` replaced by `to`
 * to a new temporary file, its path in buf; 0, or -1 (no such file, no
 * `from` in it, no temporary file). */
int test_write_variant(const char *relative, const char *from, const char *to, char *buf,
                       size_t size);

#endif
