/*
 * test_moe_replay_checks.c -- a routing trace is replayed or refused, never
 * ignored, and it is held against the plan simulated, not the workload.
 *
 * The tokens one NPU routes per micro-batch are b·s/cp (divided by t with
 * sequence parallelism and t > 1) times topk: the 21B MoE (s = 2048, topk 2,
 * TP 1) routes 4096 at b = 1 and 16384 at b = 4; Mixtral (s = 4096, topk 2,
 * SP) 1024 at b = 1 on TP 8, 12288 at b = 3 on TP 2, 8192 at b = 1 on TP 1.
 *
 * The engine runs are the 21B MoE on platforms/moe_32npu.xml (EP 32 = DP 32,
 * 12 MoE layers, global batch 64) in a child process, Megatron's plan or
 * that plan with another micro-batch size than the workload's (as
 * TensorOpt's planner or a --plan file may choose, priced by its own cost
 * model).  With micro-batches of 2 samples every replica runs one; an
 * iteration then routes 64 samples ·
 * 2048 tokens · topk 2 · 12 MoE layers = 3,145,728 assignments, whatever the
 * micro-batch size, and each expert of a balanced layer receives
 * ep·(tokens per source)/E = 32·8192/32 = 8192 of them.
 */
#include <string.h>

#include "engine.h"
#include "moe_policy.h"
#include "moe_testutil.h"
#include "planner.h"
#include "testutil.h"

/* ---- the tokens a plan routes ------------------------------------------- */

static void test_plan_tokens_follow_the_closed_form(void)
{
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load("workloads/moe_21b_32npu.json", &w, &err), 0);
    CU_ASSERT_EQUAL(moe_trace_tokens(&w, 1, 1), 4096);
    CU_ASSERT_EQUAL(moe_trace_tokens(&w, 4, 1), 16384);
    CU_ASSERT_EQUAL(moe_trace_workload_tokens(&w), 4096);
    wl_free(&w);
    CU_ASSERT_EQUAL_FATAL(test_wl_load("workloads/mixtral_8x7b.json", &w, &err), 0);
    CU_ASSERT_EQUAL(moe_trace_tokens(&w, 1, 8), 1024);
    CU_ASSERT_EQUAL(moe_trace_tokens(&w, 3, 2), 12288);
    CU_ASSERT_EQUAL(moe_trace_tokens(&w, 1, 1), 8192); /* no SP on one rank */
    wl_free(&w);
}

/* A trace of 4096 assignments per source fits a plan of micro-batch 1 and
 * is refused for one of 4, naming the file, the key and both figures. */
static void test_trace_is_checked_against_the_plans_micro_batch(void)
{
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load("workloads/moe_21b_32npu.json", &w, &err), 0);
    moe_trace t;
    CU_ASSERT_EQUAL_FATAL(moe_test_hot_trace(&t), 0);
    CU_ASSERT_EQUAL(moe_trace_check_workload(&t, &w, "t.trace", &err), 0);
    CU_ASSERT_EQUAL(moe_trace_check_plan(&t, &w, 1, 1, "megatron", "t.trace", &err), 0);
    CU_ASSERT_EQUAL(moe_trace_check_plan(&t, &w, 4, 1, "ft", "t.trace", &err), NP_EXIT_INPUT);
    CU_ASSERT_STRING_EQUAL(err.source, "t.trace");
    CU_ASSERT_STRING_EQUAL(err.key, "tokens");
    CU_ASSERT_PTR_NOT_NULL(
        strstr(err.text, "4096 assignments per NPU and micro-batch in the trace"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "planner ft's plan (micro_batch_size 4"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "routes 16384"));
    moe_trace_free(&t);
    wl_free(&w);
}

/* ---- engine runs ---------------------------------------------------------- */

typedef struct check_case {
    const char *sets[4];
    int num_sets;
    bool hot_trace;                   /* moe_test_hot_trace (4096 assignments per source) */
    bool dp_overlap;                  /* engine_options.dp_overlap */
    bool record;                      /* record_spans: the per-expert load timeline */
    int policy;                       /* engine_options.moe_policy */
    int plan_mbs;                     /* > 0: the plan's micro-batch size (the workload keeps 1) */
    double max_flows;                 /* engine_options.moe_max_flows (0: the default) */
    bool merak;                       /* the plan with Merak's shifted recompute */
    const char *named_in, *named_key; /* where the trace was given */
} check_case;

typedef struct check_outcome {
    int rc;
    np_error err;
    bool replayed;
    double assignments, load0;
} check_outcome;

static void run_check(void *ctx, int fd)
{
    const check_case *c = ctx;
    check_outcome out;
    memset(&out, 0, sizeof out);
    sim_platform pf;
    test_job j;
    memset(&j, 0, sizeof j);
    test_simgrid_init();
    const char *sets[5] = {"training.global_batch_size=64"};
    for (int i = 0; i < c->num_sets; i++)
        sets[i + 1] = c->sets[i];
    out.rc = platform_load(test_path("platforms/moe_32npu.xml"), &pf, &out.err);
    if (!out.rc)
        out.rc = test_job_build(&j, &pf.cluster, "workloads/moe_21b_32npu.json", sets,
                                c->num_sets + 1, "megatron", &out.err);
    cm_model own = {0};
    const cm_model *cm = &j.cm;
    if (!out.rc && c->plan_mbs > 0) { /* the same samples in micro-batches of plan_mbs */
        j.pl.micro_batch_size = c->plan_mbs;
        j.pl.num_micro_batches = 64 / (32 * c->plan_mbs);
        out.rc = planner_cost_model_for(&j.w, &pf.cluster, &j.cm, &j.pl, &own, &cm, &out.err);
    }
    if (c->merak)
        j.pl.merak_shifted_recompute = true;
    if (!out.rc && (c->plan_mbs > 0 || c->merak))
        out.rc = test_job_reschedule(&j, cm, &out.err);
    moe_trace t = {0};
    engine_options o;
    engine_init_options(&o);
    if (c->hot_trace && moe_test_hot_trace(&t) == 0) {
        t.path = "hot.trace";
        t.named_in = c->named_in;
        t.named_key = c->named_key;
        o.moe_trace = &t;
    }
    o.dp_overlap = c->dp_overlap;
    o.record_spans = c->record;
    o.moe_policy = c->policy;
    o.moe_max_flows = c->max_flows;
    engine_result r = {0};
    if (!out.rc)
        out.rc = engine_run(&pf, &j.w, cm, &j.pl, &j.sc, &o, &r, &out.err);
    out.replayed = r.moe_replayed;
    out.assignments = r.moe_assignments;
    out.load0 = r.moe_load_rows ? r.moe_load_rows[0] : -1.0;
    engine_result_free(&r);
    moe_trace_free(&t);
    if (cm == &own)
        cm_free(&own);
    test_write_all(fd, &out, sizeof out);
}

static check_outcome run(const check_case *c)
{
    check_outcome out;
    CU_ASSERT_EQUAL_FATAL(test_in_child(run_check, (void *)c, &out, sizeof out), 0);
    return out;
}

/* A refusal: exit code, source, key, and a part of the text. */
static void expect_refused(const check_outcome *o, int rc, const char *source, const char *key,
                           const char *text)
{
    CU_ASSERT_EQUAL(o->rc, rc);
    CU_ASSERT_STRING_EQUAL(o->err.source, source);
    CU_ASSERT_STRING_EQUAL(o->err.key, key);
    if (!strstr(o->err.text, text))
        fprintf(stderr, "\n  expected \"%s\" in: %s\n", text, o->err.text);
    CU_ASSERT_PTR_NOT_NULL(strstr(o->err.text, text));
}

/* Where the replay does not apply the trace is refused (exit 1), naming
 * the option that gave it and the condition, never silently ignored. */
static void test_trace_without_the_replay_is_refused(void)
{
    check_case overlap = {.sets = {"training.data_parallel_sharding_strategy=optim_grads"},
                          .num_sets = 1,
                          .hot_trace = true,
                          .dp_overlap = true};
    check_outcome o = run(&overlap);
    expect_refused(&o, NP_EXIT_USAGE, "<command line>", "--moe-trace",
                   "--dp-overlap with ZeRO-2/3");
    CU_ASSERT_PTR_NOT_NULL(strstr(o.err.text, "hot.trace needs the MoE replay"));
    check_case allgather = {.sets = {"model.moe_token_dispatcher_type=allgather"},
                            .num_sets = 1,
                            .hot_trace = true,
                            .named_in = "w.json",
                            .named_key = "model.moe_token_trace"};
    o = run(&allgather);
    expect_refused(&o, NP_EXIT_USAGE, "w.json", "model.moe_token_trace",
                   "model.moe_token_dispatcher_type");
    /* 12 layers · 2 micro-batches · 4 all-to-alls · 31 messages · 32
     * replicas = 95,232 flows, over a bound of 1000 */
    check_case bound = {.hot_trace = true, .max_flows = 1000};
    o = run(&bound);
    expect_refused(&o, NP_EXIT_USAGE, "<command line>", "--moe-trace", "9.5e+04 flows");
    /* full recompute re-runs the forward's 2 all-to-alls: 6 per layer and
     * micro-batch, 142,848 flows */
    check_case full = {.sets = {"training.recompute_granularity=full"},
                       .num_sets = 1,
                       .hot_trace = true,
                       .max_flows = 1000};
    o = run(&full);
    expect_refused(&o, NP_EXIT_USAGE, "<command line>", "--moe-trace", "1.4e+05 flows");
    /* Merak's shifted recompute: the one stage's last micro-batch keeps its
     * activations, so only micro-batch 0 recomputes: 12 · 31 · 32 · (2 · 4
     * + 1 · 2) = 119,040 flows */
    full.merak = true;
    o = run(&full);
    expect_refused(&o, NP_EXIT_USAGE, "<command line>", "--moe-trace", "1.2e+05 flows");
    /* without a trace the closed form is allowed, and says nothing */
    check_case zero = overlap;
    zero.hot_trace = false;
    o = run(&zero);
    CU_ASSERT_EQUAL(o.rc, 0);
    CU_ASSERT(!o.replayed);
    /* --dp-overlap alone replays (test_moe_dp_overlap.c) */
    check_case balanced = {.dp_overlap = true};
    o = run(&balanced);
    CU_ASSERT_EQUAL(o.rc, 0);
    CU_ASSERT(o.replayed);
}

/* A plan of micro-batch 2 routes 8192 assignments per source: the trace
 * of 4096, made for the workload's micro-batch, is refused (exit 2),
 * naming the trace file and both figures. */
static void test_trace_of_another_micro_batch_is_refused(void)
{
    check_case c = {.hot_trace = true, .plan_mbs = 2};
    check_outcome o = run(&c);
    expect_refused(&o, NP_EXIT_INPUT, "hot.trace", "tokens", "routes 8192");
    CU_ASSERT_PTR_NOT_NULL(strstr(o.err.text, "4096 assignments"));
}

/* Balanced routing at the plan's micro-batch (2 samples), with and without
 * a policy: 3,145,728 assignments and 8192 per expert and layer. */
static void test_balanced_routing_follows_the_plans_micro_batch(void)
{
    check_case none = {.plan_mbs = 2, .record = true};
    check_outcome o = run(&none);
    CU_ASSERT_EQUAL_FATAL(o.rc, 0);
    CU_ASSERT(o.replayed);
    CU_ASSERT_DOUBLE_EQUAL(o.assignments, 3145728.0, 0.5);
    CU_ASSERT_DOUBLE_EQUAL(o.load0, 8192.0, 1e-9);
    check_case sw = none;
    sw.policy = MOE_POLICY_SWITCH; /* on Switch's keys, as simrun applies them */
    sw.sets[0] = "model.moe_expert_capacity_factor=1.25";
    sw.sets[1] = "model.moe_pad_expert_input_to_capacity=true";
    sw.num_sets = 2;
    o = run(&sw);
    CU_ASSERT_EQUAL_FATAL(o.rc, 0);
    CU_ASSERT_DOUBLE_EQUAL(o.assignments, 3145728.0, 0.5);
    CU_ASSERT_DOUBLE_EQUAL(o.load0, 8192.0, 1e-9);
}

void register_moe_replay_checks_tests(void)
{
    TEST_SUITE(
        "moe_replay_checks",
        {"plan tokens follow the closed form", test_plan_tokens_follow_the_closed_form},
        {"trace is checked against the plan's micro-batch",
         test_trace_is_checked_against_the_plans_micro_batch},
        {"trace without the replay is refused", test_trace_without_the_replay_is_refused},
        {"trace of another micro-batch is refused", test_trace_of_another_micro_batch_is_refused},
        {"balanced routing follows the plan's micro-batch",
         test_balanced_routing_follows_the_plans_micro_batch});
}
