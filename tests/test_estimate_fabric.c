/*
 * test_estimate_fabric.c -- the estimate of a run's activities
 * (engine_estimate_platform) on fabrics where a transfer is not one flow per
 * TP rank: dual-plane NICs (split: a flow per plane; hash: one), a simulated
 * scale-up fabric (a flow per same-server part instead of a sleep) and PXN
 * (a scale-up leg to the relay, then the network leg).
 *
 * Each case runs a small 1F1B plan (uniform layers with an optimizer step,
 * m = 4) in a child on the platform, with the estimate taken beside it, and
 * checks three numbers: the stage-to-stage activities counted by hand from
 * the platform's design, the estimate's total, and the run's `activities`.
 *
 * Counts by hand (rank of TP rank r of worker (s, d): r + tp·(d + dp·s),
 * Megatron's order; 8 NPUs per server, NPU R on rail R mod 8; a plan fills
 * its platform, as the engine requires):
 *   - test_rail_2plane_64.xml, p = 8, tp = 8, dp = 1: stage s is server s,
 *     every TP rank sends to the same rail of the next server: a send is 8
 *     network legs, 16 flows split and 8 hashed, and waits for no scale-up
 *     part (no sleep); 2m(p − 1) sends: 2·m·(p − 1)·tp·planes flows.
 *   - the same, p = 2, tp = 8, dp = 4: replica d of stage s on server d +
 *     4s; 4 pipelines of 2m sends (4·2m·tp·planes flows), 4·12 executions
 *     (test_estimate.c's hand count: stage 0 F0, F1, B0+F2, B1+F3, B2, B3,
 *     OPT, stage 1 four F+B and OPT), and per stage a ring-flow all-reduce
 *     of 4 members, each one message (tp·planes flows) and one latency
 *     sleep: 2·4·(tp·planes + 1).
 *   - test_scaleup_16.xml (scaleup_fabric simulated), p = 4, tp = 4, dp = 1:
 *     stages 0, 1 in server 0 and 2, 3 in server 1; every send is 4 flows,
 *     between scale-up ports (0↔1, 2↔3) or on the network (1↔2): 2·m·3·4
 *     (the closed-form count, a sleep per same-server send, would be 2·m·6).
 *   - test_rail_pxn_64.xml (PXN, simulated scale-up), p = 16, tp = 1,
 *     dp = 4: replica d of stage s is NPU d + 4s; from an even stage the
 *     next is in the same server (one scale-up flow), from an odd one in the
 *     next server on rail d vs d + 4 (a scale-up flow to the relay, then a
 *     network flow): per replica and direction 8·1 + 7·2 = 22 flows a
 *     micro-batch, 2·m·dp·22 in all.
 * And ZeRO-2's collectives on the dual-plane platform, blocking and with
 * --dp-overlap (test_dual_plane_zero2_counts_its_collectives).  Every count
 * is taken twice: with --per-rank-flows as above, and with the exact TP fold
 * (engine_symmetry.c), where a transfer posts TP rank 0's flows alone (tp
 * times fewer) and its scale-up wait once, on the platforms whose routes
 * allow it: split planes and the simulated scale-up fabric, not hashed
 * planes (a group's ranks land on either plane).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "testutil.h"

#define M 4

typedef struct fabric_case {
    const char *platform;
    const char *from, *to; /* a variant: `from` replaced by `to`; NULL: as shipped */
    int p, tp, dp;
    bool zero2, overlap; /* ZeRO-2 (optim_grads); --dp-overlap with 4 buckets of the update */
    bool per_rank;       /* --per-rank-flows; else the exact TP fold where it applies */
} fabric_case;

typedef struct fabric_counts {
    int rc;
    char error[1024];
    double estimated, estimated_p2p, estimated_collective, estimated_executions;
    long actual;
    int estimated_tp_fold, tp_fold;
} fabric_counts;

static void run_fabric_case(void *ctx, int fd)
{
    const fabric_case *fc = ctx;
    fabric_counts out = {0};
    cm_model cm;
    plan pl;
    schedule sc;
    sim_platform pf;
    np_error err;
    test_uniform_model(&cm, fc->p);
    cm.data_parallel = fc->dp;
    cm.tensor_parallel = fc->tp;
    cm.optimizer_bytes_per_param = 16;
    cm.kernel_launch_s = 1e-6;
    for (int l = 0; l < fc->p; l++) {
        cm.layers[l].params = 1000;
        cm.layers[l].grad_bytes = 2000;
        cm.layers[l].output_bytes = 1e6;
        cm.layers[l].zero_reduce_bytes = fc->zero2 ? 4e6 : 0;
    }
    if (fc->zero2) {
        cm.sharding = WL_SHARD_OPTIM_GRADS;
        cm.weight_bytes_per_param = 2;
    }
    test_uniform_plan(&pl, fc->p, M, 1, SCHED_1F1B);
    pl.tensor_parallel = fc->tp;
    pl.data_parallel = fc->dp;
    wl_workload w;
    memset(&w, 0, sizeof w);
    w.training.micro_batch_size = 1;
    w.training.global_batch_size = M * fc->dp;
    char variant[64] = "";
    const char *path = test_path(fc->platform);
    if (fc->from) {
        out.rc = test_write_variant(fc->platform, fc->from, fc->to, variant, sizeof variant);
        path = variant;
    }
    test_simgrid_init();
    if (!out.rc)
        out.rc = platform_load(path, &pf, &err);
    if (!out.rc)
        out.rc = sched_build(&pl, &cm, &sc, &err);
    if (!out.rc) {
        engine_options o;
        engine_init_options(&o);
        o.dp_overlap = fc->overlap;
        o.per_rank_flows = fc->per_rank;
        o.dp_bucket_bytes = 4000 / 4; /* a chunk's 1000 parameters in 4 buckets */
        engine_estimate e;
        engine_estimate_platform(&pf, &cm, &pl, &o, &e);
        out.estimated = e.activities;
        out.estimated_p2p = e.p2p_activities;
        out.estimated_collective = e.collective_activities;
        out.estimated_executions = e.executions;
        out.estimated_tp_fold = e.tp_fold;
        engine_result r;
        out.rc = engine_run(&pf, &w, &cm, &pl, &sc, &o, &r, &err);
        if (!out.rc) {
            out.actual = r.activities;
            out.tp_fold = r.tp_fold;
            engine_result_free(&r);
        }
    }
    if (out.rc)
        snprintf(out.error, sizeof out.error, "%s", err.text);
    if (variant[0])
        unlink(variant);
    test_write_all(fd, &out, sizeof out);
}

static void run_case(const fabric_case *fc, fabric_counts *out)
{
    CU_ASSERT_EQUAL_FATAL(test_in_child(run_fabric_case, (void *)fc, out, sizeof *out), 0);
    if (out->rc)
        fprintf(stderr, "\n  %s: %s\n", fc->platform, out->error);
    CU_ASSERT_EQUAL_FATAL(out->rc, 0);
    if (out->estimated != out->actual)
        fprintf(stderr, "\n  %s p=%d tp=%d dp=%d: estimated %g (p2p %g, collectives %g), ran %ld\n",
                fc->platform, fc->p, fc->tp, fc->dp, out->estimated, out->estimated_p2p,
                out->estimated_collective, out->actual);
    CU_ASSERT_EQUAL(out->estimated_tp_fold, out->tp_fold);
}

/* The TP ranks whose flows a transfer posts: all of them with per-rank
 * flows or where the fold does not apply, else rank 0's alone. */
static int posting_ranks(const fabric_case *fc, bool folds)
{
    return fc->per_rank || !folds ? fc->tp : 1;
}

#define DUAL "platforms/test_rail_2plane_64.xml"
#define SPLIT_PROP "<prop id=\"nic_plane_policy\" value=\"split\"/>"
#define HASH_PROP "<prop id=\"nic_plane_policy\" value=\"hash\"/>"

static void test_dual_plane_pipeline_counts_a_flow_per_plane(void)
{
    for (int hash = 0; hash <= 1; hash++)
        for (int per_rank = 0; per_rank <= 1; per_rank++) {
            fabric_case fc = {DUAL,    hash ? SPLIT_PROP : NULL, HASH_PROP, 8, 8, 1, false, false,
                              per_rank};
            fabric_counts c;
            run_case(&fc, &c);
            int planes = hash ? 1 : 2;             /* flows per network leg */
            int ranks = posting_ranks(&fc, !hash); /* a hash puts a group's ranks on 2 planes */
            CU_ASSERT_EQUAL(c.estimated_p2p, 2 * M * 7 * ranks * planes);
            CU_ASSERT_EQUAL(c.estimated_collective, 0);
            CU_ASSERT_EQUAL(c.estimated, c.actual);
            CU_ASSERT_EQUAL(c.tp_fold, 8 / ranks);
        }
}

static void test_dual_plane_gradient_sync_counts_a_flow_per_plane(void)
{
    for (int hash = 0; hash <= 1; hash++)
        for (int per_rank = 0; per_rank <= 1; per_rank++) {
            fabric_case fc = {DUAL,    hash ? SPLIT_PROP : NULL, HASH_PROP, 2, 8, 4, false, false,
                              per_rank};
            fabric_counts c;
            run_case(&fc, &c);
            int planes = hash ? 1 : 2, ranks = posting_ranks(&fc, !hash);
            double p2p = 4 * 2 * M * ranks * planes, sync = 2 * 4 * (ranks * planes + 1);
            CU_ASSERT_EQUAL(c.estimated_p2p, p2p);
            CU_ASSERT_EQUAL(c.estimated_collective, sync);
            CU_ASSERT_EQUAL(c.estimated_executions, 4 * 12);
            CU_ASSERT_EQUAL(c.estimated, p2p + sync + 4 * 12);
            CU_ASSERT_EQUAL(c.actual, p2p + sync + 4 * 12);
        }
}

/* ZeRO-2 on the same platform and plan: per stage m reduce-scatters and the
 * gather of the update, blocking after the step (1) or overlapped in 4
 * buckets (4), each a ring-flow of 4 members of tp·planes flows and a
 * latency sleep.  The reduce-scatter after every B breaks stage 0's B→F
 * merges: stage 0 runs its 2m + 1 compute ops apart, stage 1 F+B four times
 * and the step, 14 executions per replica; overlapped, each stage's first
 * forward runs in 4 pieces and stage 1's no longer merges with its B: 3 + 4
 * more. */
static void test_dual_plane_zero2_counts_its_collectives(void)
{
    for (int overlap = 0; overlap <= 1; overlap++)
        for (int per_rank = 0; per_rank <= 1; per_rank++) {
            fabric_case fc = {DUAL, NULL, NULL, 2, 8, 4, true, overlap, per_rank};
            fabric_counts c;
            run_case(&fc, &c);
            int ranks = posting_ranks(&fc, true);
            double gathers = overlap ? 4 : 1, member = ranks * 2 + 1;
            double sync = 2 * (M + gathers) * 4 * member;
            double executions = 4 * (14 + (overlap ? 7 : 0));
            CU_ASSERT_EQUAL(c.estimated_collective, sync);
            CU_ASSERT_EQUAL(c.estimated_executions, executions);
            CU_ASSERT_EQUAL(c.estimated, 4 * 2 * M * ranks * 2 + sync + executions);
            CU_ASSERT_EQUAL(c.actual, 4 * 2 * M * ranks * 2 + sync + executions);
        }
}

static void test_simulated_scaleup_counts_a_flow_per_rank(void)
{
    for (int per_rank = 0; per_rank <= 1; per_rank++) {
        fabric_case fc = {
            "platforms/test_scaleup_16.xml", NULL, NULL, 4, 4, 1, false, false, per_rank};
        fabric_counts c;
        run_case(&fc, &c);
        int ranks = posting_ranks(&fc, true); /* each rank's port is its own */
        CU_ASSERT_EQUAL(c.estimated_p2p, 2 * M * 3 * ranks);
        CU_ASSERT_EQUAL(c.estimated, c.actual);
        CU_ASSERT_EQUAL(c.tp_fold, 4 / ranks);
    }
}

static void test_pxn_counts_the_relay_leg(void)
{
    fabric_case fc = {"platforms/test_rail_pxn_64.xml", NULL, NULL, 16, 1, 4, false, false, false};
    fabric_counts c;
    run_case(&fc, &c);
    CU_ASSERT_EQUAL(c.estimated_p2p, 2 * M * 4 * 22);
    CU_ASSERT_EQUAL(c.estimated, c.actual);
}

/* Ring-flow's channels (collective.h): 8 replicas of TP 2, 4 per server, on
 * the 3-tier Clos.  Each member of a stage's all-reduce sends two messages,
 * to its successor in the server (a scale-up transfer: one wait) and to its
 * peer in the next server (a flow per TP rank, one under the TP fold), then
 * sleeps the other steps' latency: 2 + r activities, r = 2 or 1; 4 stages of
 * 8 members. */
static void test_channel_ring_counts_both_messages(void)
{
    for (int per_rank = 0; per_rank < 2; per_rank++) {
        fabric_case fc = {
            "platforms/test_clos3_64.xml", NULL, NULL, 4, 2, 8, false, false, per_rank};
        fabric_counts c;
        run_case(&fc, &c);
        CU_ASSERT_EQUAL(c.tp_fold, per_rank ? 1 : 2);
        CU_ASSERT_EQUAL(c.estimated_collective, 4 * 8 * (2 + (per_rank ? 2 : 1)));
        CU_ASSERT_EQUAL(c.estimated, c.actual);
    }
}

void register_estimate_fabric_tests(void)
{
    TEST_SUITE("estimate_fabric",
               {"dual-plane pipeline: a flow per plane (split) or one (hash)",
                test_dual_plane_pipeline_counts_a_flow_per_plane},
               {"dual-plane gradient sync: a flow per plane (split) or one (hash)",
                test_dual_plane_gradient_sync_counts_a_flow_per_plane},
               {"dual-plane ZeRO-2: its collectives, blocking and overlapped",
                test_dual_plane_zero2_counts_its_collectives},
               {"simulated scale-up: a flow per same-server rank",
                test_simulated_scaleup_counts_a_flow_per_rank},
               {"PXN: the relay's scale-up leg and the network leg", test_pxn_counts_the_relay_leg},
               {"ring-flow's channels: both messages of every member",
                test_channel_ring_counts_both_messages});
}
