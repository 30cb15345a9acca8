/*
 * test_estimate.c -- a run's size before its op lists exist
 * (engine_estimate_run) and the bound simrun holds it to
 * (engine_check_estimate, --allow-large).
 *
 * The estimate is checked three ways: against counts derived by hand for
 * 1F1B with p = 2, m = 4 (worked out below), against the op lists
 * sched_build() really makes for every schedule on small shapes (ops, and the
 * executions the engine runs: maximal runs of consecutive compute ops), and
 * against the activities a real engine run reports.
 */
#include <string.h>

#include "engine.h"
#include "testutil.h"

/* A uniform model whose layers also have parameters and gradients, so that
 * every stage ends with a gradient all-reduce and an optimizer step. */
static void model_with_optimizer(cm_model *cm, int layers, int dp)
{
    test_uniform_model(cm, layers);
    cm->data_parallel = dp;
    cm->optimizer_bytes_per_param = 16;
    cm->kernel_launch_s = 1e-6;
    for (int l = 0; l < layers; l++) {
        cm->layers[l].params = 1000;
        cm->layers[l].grad_bytes = 2000;
    }
}

static bool is_compute(int kind)
{
    return kind == OP_FORWARD || kind == OP_BACKWARD || kind == OP_WEIGHT_GRAD ||
           kind == OP_RECOMPUTE || kind == OP_OPTIMIZER;
}

/* SimGrid executions one worker of stage st starts: consecutive compute ops
 * run as one (engine_worker.c, worker_run_compute), a zero-length run as
 * none. */
static int count_executions(const sched_stage *st)
{
    int n = 0;
    for (int i = 0; i < st->num_ops;) {
        if (!is_compute(st->ops[i].kind)) {
            i++;
            continue;
        }
        double run_s = 0;
        for (; i < st->num_ops && is_compute(st->ops[i].kind); i++)
            run_s += st->ops[i].compute_s + st->ops[i].comm_s;
        n += run_s > 0;
    }
    return n;
}

static int count_compute_ops(const sched_stage *st)
{
    int n = 0;
    for (int i = 0; i < st->num_ops; i++)
        n += is_compute(st->ops[i].kind);
    return n;
}

static int count_p2p_ops(const sched_stage *st)
{
    return test_count_ops(st, OP_SEND_FORWARD) + test_count_ops(st, OP_RECV_FORWARD) +
           test_count_ops(st, OP_SEND_BACKWARD) + test_count_ops(st, OP_RECV_BACKWARD);
}

/* ---- 1F1B, p = 2, m = 4, by hand ------------------------------------------ */

/* Stage 0 runs (warm-up min(p − 1, m) = 1 forward, then F/B pairs, then the
 * remaining backward, then the flush):
 *   F0 sF | F1 sF rB B0 | F2 sF rB B1 | F3 sF rB B2 | rB B3 | AR OPT
 * stage 1 (no warm-up):
 *   rF F0 B0 sB | rF F1 B1 sB | rF F2 B2 sB | rF F3 B3 sB | AR OPT
 * so per stage 2m + 1 = 9 compute ops, 2m = 8 transfers, one all-reduce:
 * 18 ops; per pipeline 2m(p − 1) = 8 sends.  Consecutive compute ops run as
 * one execution: stage 0 runs F0, F1, B0+F2, B1+F3, B2, B3, OPT = 7, stage 1
 * F+B four times and OPT = 5: 12 per replica.  On test_flat_4.xml (one NPU
 * per server, TP 1) every send is one flow; the ring-flow all-reduce of 2
 * members is, per member, one flow and one sleep for the latency of its
 * other step.  With DP 2: executions 2·12 = 24, flows 2·8 = 16, all-reduce
 * 2 stages · 2 members · 2 = 8: 48 activities.  Folded to 1 replica
 * (--fold-dp 1): the other replica runs only its optimizer steps (2) and
 * joins the all-reduces (8): 12 + 2 + 8 + 8 = 30. */
enum { HAND_P = 2, HAND_M = 4, HAND_DP = 2 };

static void hand_case(cm_model *cm, plan *pl)
{
    model_with_optimizer(cm, HAND_P, HAND_DP);
    test_uniform_plan(pl, HAND_P, HAND_M, 1, SCHED_1F1B);
    pl->data_parallel = HAND_DP;
}

static void test_1f1b_counts_by_hand(void)
{
    cm_model cm;
    plan pl;
    schedule sc;
    np_error err;
    hand_case(&cm, &pl);
    CU_ASSERT_EQUAL_FATAL(sched_build(&pl, &cm, &sc, &err), 0);
    cl_cluster c = test_scaleout_cluster(25e9, 4e-6); /* one NPU per server */
    engine_options o;
    engine_init_options(&o);
    engine_estimate e;
    engine_estimate_run(&c, &cm, &pl, &o, &e);

    int m = HAND_M, p = HAND_P;
    CU_ASSERT_EQUAL(e.compute_ops, p * (2 * m + 1));
    CU_ASSERT_EQUAL(e.sends, 2 * m * (p - 1));
    CU_ASSERT_EQUAL(e.p2p_ops, 2 * 2 * m * (p - 1));
    CU_ASSERT_EQUAL(e.ops, p * 18);
    CU_ASSERT_EQUAL(e.executions, HAND_DP * 12);
    CU_ASSERT_EQUAL(e.p2p_activities, HAND_DP * 8);
    CU_ASSERT_EQUAL(e.collective_activities, 8);
    CU_ASSERT_EQUAL(e.activities, 48);
    /* the op lists agree with the hand count */
    int compute = 0, p2p = 0, ops = 0, executions = 0;
    for (int s = 0; s < p; s++) {
        compute += count_compute_ops(&sc.stages[s]);
        p2p += count_p2p_ops(&sc.stages[s]);
        ops += sc.stages[s].num_ops;
        executions += count_executions(&sc.stages[s]);
    }
    CU_ASSERT_EQUAL(compute, p * (2 * m + 1));
    CU_ASSERT_EQUAL(p2p, 2 * 2 * m * (p - 1));
    CU_ASSERT_EQUAL(ops, p * 18);
    CU_ASSERT_EQUAL(executions * HAND_DP, HAND_DP * 12);
    /* bytes: the op lists at their doubled capacity (64 ops a stage) */
    CU_ASSERT_EQUAL(e.op_list_bytes, p * 64.0 * sizeof(sched_op));
    CU_ASSERT(e.bytes > e.op_list_bytes);
    sched_free(&sc);
    plan_free(&pl);
    cm_free(&cm);
}

typedef struct run_counts {
    int rc;
    double estimated[2];
    long actual[2];
} run_counts;

/* In a child: the hand case on test_flat_4.xml, every replica and folded to
 * one, estimated and run. */
static void run_hand_case(void *ctx, int fd)
{
    run_counts out = {0};
    cm_model cm;
    plan pl;
    schedule sc;
    sim_platform pf;
    np_error err;
    hand_case(&cm, &pl);
    wl_workload w;
    memset(&w, 0, sizeof w);
    w.training.micro_batch_size = 1;
    w.training.global_batch_size = HAND_M * HAND_DP;
    test_simgrid_init();
    out.rc = platform_load(test_path("platforms/test_flat_4.xml"), &pf, &err);
    if (!out.rc)
        out.rc = sched_build(&pl, &cm, &sc, &err);
    for (int f = 0; f < 2 && !out.rc; f++) {
        engine_options o;
        engine_init_options(&o);
        o.fold_dp = f == 0 ? 0 : 1;
        engine_estimate e;
        engine_estimate_run(&pf.cluster, &cm, &pl, &o, &e);
        out.estimated[f] = e.activities;
        engine_result r;
        if ((out.rc = engine_run(&pf, &w, &cm, &pl, &sc, &o, &r, &err)))
            break;
        out.actual[f] = r.activities;
        engine_result_free(&r);
    }
    test_write_all(fd, &out, sizeof out);
}

static void test_1f1b_activities_match_a_run(void)
{
    run_counts out;
    CU_ASSERT_EQUAL_FATAL(test_in_child(run_hand_case, NULL, &out, sizeof out), 0);
    CU_ASSERT_EQUAL_FATAL(out.rc, 0);
    CU_ASSERT_EQUAL(out.estimated[0], 48);
    CU_ASSERT_EQUAL(out.actual[0], 48);
    CU_ASSERT_EQUAL(out.estimated[1], 30);
    CU_ASSERT_EQUAL(out.actual[1], 30);
}

/* ---- every schedule against its op lists ---------------------------------- */

typedef struct shape {
    schedule_kind kind;
    int p, m, v, dp;
    bool recompute; /* full recompute on every layer: a recompute op before each B */
    int zero;       /* 2: ZeRO-2 (optim_grads), 3: ZeRO-3 (optim_grads_params), else none */
} shape;

static void check_shape(const shape *sh)
{
    cm_model cm;
    plan pl;
    schedule sc;
    np_error err;
    model_with_optimizer(&cm, sh->p * sh->v, sh->dp);
    for (int l = 0; l < cm.num_layers; l++)
        cm.layers[l].weight_grad_s = 0.5;
    if (sh->zero) { /* the sharded collectives' bytes (schedule_parallel.c) */
        cm.sharding = sh->zero == 3 ? WL_SHARD_OPTIM_GRADS_PARAMS : WL_SHARD_OPTIM_GRADS;
        cm.weight_bytes_per_param = 2;
        for (int l = 0; l < cm.num_layers; l++) {
            cm.layers[l].zero_reduce_bytes = 2000;
            cm.layers[l].zero_gather_bytes = sh->zero == 3 ? 2000 : 0;
        }
    }
    test_chunked_plan(&pl, sh->p, sh->v, sh->m, 1, sh->kind);
    pl.data_parallel = sh->dp;
    for (int l = 0; sh->recompute && l < cm.num_layers; l++) {
        cm.layers[l].recompute_s[RECOMPUTE_FULL] = 1;
        pl.recompute[l] = RECOMPUTE_FULL;
    }
    if (sched_build(&pl, &cm, &sc, &err) != 0) {
        fprintf(stderr, "\n  %s p=%d m=%d v=%d: %s\n", wl_schedule_name(sh->kind), sh->p, sh->m,
                sh->v, err.text);
        CU_FAIL("sched_build");
        plan_free(&pl);
        cm_free(&cm);
        return;
    }
    cl_cluster c = test_scaleout_cluster(25e9, 4e-6);
    engine_options o;
    engine_init_options(&o);
    engine_estimate e;
    engine_estimate_run(&c, &cm, &pl, &o, &e);
    double ops = 0, compute = 0, p2p = 0, executions = 0, max_ops = 0;
    for (int s = 0; s < sh->p; s++) {
        ops += sc.stages[s].num_ops;
        compute += count_compute_ops(&sc.stages[s]);
        p2p += count_p2p_ops(&sc.stages[s]);
        executions += sh->dp * count_executions(&sc.stages[s]);
        if (sc.stages[s].num_ops > max_ops)
            max_ops = sc.stages[s].num_ops;
    }
    if (e.ops != ops || e.compute_ops != compute || e.p2p_ops != p2p ||
        e.executions != executions || e.max_stage_ops != max_ops)
        fprintf(stderr,
                "\n  %s p=%d m=%d v=%d dp=%d recompute=%d zero=%d: estimated ops %g compute %g "
                "p2p %g executions %g, op lists %g %g %g %g\n",
                wl_schedule_name(sh->kind), sh->p, sh->m, sh->v, sh->dp, sh->recompute, sh->zero,
                e.ops, e.compute_ops, e.p2p_ops, e.executions, ops, compute, p2p, executions);
    CU_ASSERT_EQUAL(e.ops, ops);
    CU_ASSERT_EQUAL(e.compute_ops, compute);
    CU_ASSERT_EQUAL(e.p2p_ops, p2p);
    CU_ASSERT_EQUAL(e.executions, executions);
    CU_ASSERT_EQUAL(e.max_stage_ops, max_ops);
    sched_free(&sc);
    plan_free(&pl);
    cm_free(&cm);
}

static void test_every_schedule_matches_its_op_lists(void)
{
    const schedule_kind kinds[] = {SCHED_GPIPE, SCHED_1F1B,      SCHED_ZB_H1,
                                   SCHED_ZB_H2, SCHED_PIPEDREAM, SCHED_PIPEDREAM_2BW};
    const int ps[] = {1, 2, 3, 4, 8}, ms[] = {1, 2, 3, 4, 8, 13, 32}, dps[] = {1, 2};
    for (unsigned k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (unsigned a = 0; a < sizeof ps / sizeof ps[0]; a++)
            for (unsigned b = 0; b < sizeof ms / sizeof ms[0]; b++)
                for (unsigned d = 0; d < sizeof dps / sizeof dps[0]; d++)
                    for (int r = 0; r < 2; r++) {
                        bool async = kinds[k] == SCHED_PIPEDREAM || kinds[k] == SCHED_PIPEDREAM_2BW;
                        if (async && ms[b] < ps[a])
                            continue; /* refused (sched_build, test_pipedream_period.c) */
                        shape sh = {kinds[k], ps[a], ms[b], 1, dps[d], r, 0};
                        check_shape(&sh);
                    }
    /* interleaved: m a multiple of p, v chunks per stage */
    const int vs[] = {2, 3};
    for (unsigned a = 1; a < sizeof ps / sizeof ps[0]; a++)
        for (unsigned i = 0; i < sizeof vs / sizeof vs[0]; i++)
            for (int groups = 1; groups <= 5; groups += 2)
                for (unsigned d = 0; d < sizeof dps / sizeof dps[0]; d++)
                    for (int r = 0; r < 2; r++) {
                        shape sh = {SCHED_INTERLEAVED, ps[a], groups * ps[a], vs[i], dps[d], r, 0};
                        check_shape(&sh);
                    }
}

/* ZeRO-2 and ZeRO-3 (DP 2): their reduce-scatters and gathers in the op
 * lists, and the merges they break, under every schedule they run with
 * (not PipeDream). */
static void test_sharded_schedules_match_their_op_lists(void)
{
    const schedule_kind kinds[] = {SCHED_GPIPE, SCHED_1F1B, SCHED_ZB_H1, SCHED_ZB_H2};
    const int ps[] = {1, 2, 3, 4, 8}, ms[] = {1, 2, 3, 4, 8, 13, 32};
    for (int zero = 2; zero <= 3; zero++)
        for (int r = 0; r < 2; r++) {
            for (unsigned k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
                for (unsigned a = 0; a < sizeof ps / sizeof ps[0]; a++)
                    for (unsigned b = 0; b < sizeof ms / sizeof ms[0]; b++) {
                        shape sh = {kinds[k], ps[a], ms[b], 1, 2, r, zero};
                        check_shape(&sh);
                    }
            for (unsigned a = 1; a < sizeof ps / sizeof ps[0]; a++)
                for (int v = 2; v <= 3; v++)
                    for (int groups = 1; groups <= 5; groups += 2) {
                        shape sh = {SCHED_INTERLEAVED, ps[a], groups * ps[a], v, 2, r, zero};
                        check_shape(&sh);
                    }
        }
}

/* ---- the bound ------------------------------------------------------------------ */

/* small_gpt's shape (PP 4, DP 2, TP 1) with m micro-batches, no cost model:
 * the estimate needs only the plan's sizes. */
static void estimate_large(int m, engine_estimate *e)
{
    plan pl;
    test_uniform_plan(&pl, 4, m, 2, SCHED_1F1B);
    pl.data_parallel = 2;
    cl_cluster c = test_npu_cluster(8, 4);
    engine_options o;
    engine_init_options(&o);
    engine_estimate_run(&c, NULL, &pl, &o, e);
    plan_free(&pl);
}

static void test_bound_refuses_and_allow_large_passes(void)
{
    engine_limits lim, allow = {INFINITY, INFINITY}; /* what --allow-large sets */
    engine_init_limits(&lim);
    CU_ASSERT_EQUAL(lim.max_activities, 5e7);
    CU_ASSERT(lim.max_bytes > 0);
    np_error err;

    /* small: within the bound */
    engine_estimate e;
    estimate_large(8, &e);
    CU_ASSERT_EQUAL(engine_check_estimate(&e, &lim, "w.json", "training.global_batch_size",
                                          "16 sequences", &err),
                    0);

    /* 2^22 micro-batches: ~1e8 activities, refused; --allow-large runs it */
    estimate_large(1 << 22, &e);
    CU_ASSERT(e.activities > 5e7);
    np_error_clear(&err);
    CU_ASSERT_EQUAL(engine_check_estimate(&e, &lim, "w.json", "training.global_batch_size",
                                          "8388608 sequences", &err),
                    NP_EXIT_INPUT);
    CU_ASSERT_STRING_EQUAL(err.source, "w.json");
    CU_ASSERT_STRING_EQUAL(err.key, "training.global_batch_size");
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "over the limit of 5e+07 activities"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "--allow-large runs it anyway"));
    CU_ASSERT_EQUAL(engine_check_estimate(&e, &allow, "w.json", "training.global_batch_size",
                                          "8388608 sequences", &err),
                    0);

    /* memory alone: a machine of 1 MB refuses what fits in the time bound */
    estimate_large(1 << 16, &e);
    engine_limits small_machine = {5e7, 1e6};
    CU_ASSERT(e.activities < 5e7 && e.bytes > 1e6);
    CU_ASSERT_EQUAL(engine_check_estimate(&e, &small_machine, "w.json", "k", "x", &err),
                    NP_EXIT_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "MemTotal"));

    /* 2^29 micro-batches: an op list cannot hold 6·2^29 ops, even allowed */
    estimate_large(1 << 29, &e);
    CU_ASSERT(e.max_stage_ops > 1 << 30);
    CU_ASSERT_EQUAL(engine_check_estimate(&e, &allow, "w.json", "k", "x", &err), NP_EXIT_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "even with --allow-large"));
}

static void test_bytes_are_formatted_in_decimal_units(void)
{
    char buf[32];
    engine_format_bytes(1.93e12, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "1.9 TB");
    engine_format_bytes(512e6, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "512 MB");
    engine_format_bytes(100, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "100 B");
}

void register_estimate_tests(void)
{
    TEST_SUITE(
        "estimate", {"1F1B p=2 m=4: ops and activities by hand", test_1f1b_counts_by_hand},
        {"1F1B p=2 m=4: activities of a real run", test_1f1b_activities_match_a_run},
        {"every schedule matches its op lists", test_every_schedule_matches_its_op_lists},
        {"ZeRO-2/3 under every schedule match their op lists",
         test_sharded_schedules_match_their_op_lists},
        {"the bound refuses, --allow-large passes", test_bound_refuses_and_allow_large_passes},
        {"bytes in decimal units", test_bytes_are_formatted_in_decimal_units});
}
