/*
 * engine.c -- engine: options, SimGrid start-up, and a run's set-up and
 * tear-down (see engine.h).
 *
 * engine_run() checks the options against the plan, creates one worker per
 * (stage, replica, context-parallel rank) with its NPUs in Megatron's rank
 * order (tp-cp-dp-pp), starts their actors (engine_worker.c; engine_fold.c
 * for replicas folded away; engine_overlap.c for the gradient buckets), runs
 * SimGrid to the end and collects the metrics (engine_metrics.c).  Cost of a run is proportional to
 * the number of SimGrid activities, so the engine starts as few as the model
 * allows (docs/design.md, SimGrid facts: ~50K activities per CPU-second at
 * 16K hosts): one sleep per run of compute ops, one flow per TP rank per
 * stage-to-stage send, collective flows as collective*.c decides, zero-length
 * ops skipped.  Per-worker accounting is plain arithmetic on the simulated
 * clock.
 */
#include <simgrid/barrier.h>
#include <simgrid/engine.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xbt/log.h>

#include "engine_internal.h"
#include "transport_symmetry.h"
#include "engine_moe.h"

void engine_init_options(engine_options *o)
{
    memset(o, 0, sizeof *o);
    o->dp_algorithm = COLL_RING_FLOW;
    o->dp_radix = 4;
    o->dp_inter_algorithm = COLL_RING_FLOW;
    o->ep_alltoall_algorithm = COLL_CONCURRENT;
    o->dp_bucket_bytes = 0; /* Megatron's default for the run's DP size */
    placement_init(&o->placement);
}

typedef struct init_args {
    int *argc;
    char **argv;
} init_args;

static void init_simgrid(void *ctx)
{
    init_args *a = ctx;
    simgrid_init(a->argc, a->argv);
}

static void die_of_signal(int sig)
{
    signal(sig, SIG_DFL); /* both async-signal-safe */
    raise(sig);
}

int engine_simgrid_init(int *argc, char **argv, np_error *err)
{
    /* docs/design.md, SimGrid facts: the recommended configuration, given
     * before the user's own --cfg options so that those win. */
    static char *defaults[] = {
        "--log=root.thresh:critical",
        "--cfg=network/model:CM02",
        /* Measured with callgrind on the 16K Llama iteration: 3% fewer
         * instructions than the default Lazy update, identical results. */
        "--cfg=network/optim:Full",
        "--cfg=network/crosstraffic:0",
        "--cfg=network/TCP-gamma:1e15",
        "--cfg=contexts/stack-size:64",
#ifdef NPUSIM_SANITIZE
        /* AddressSanitizer cannot follow SimGrid's hand-made stack switches
         * (raw contexts); system threads keep its reports meaningful. */
        "--cfg=contexts/factory:thread",
#endif
    };
    enum { NUM_DEFAULTS = sizeof defaults / sizeof defaults[0] };
    static char *args[NUM_DEFAULTS + 128];
    int n = 0;
    args[n++] = *argc > 0 ? argv[0] : "simrun";
    for (int i = 0; i < NUM_DEFAULTS; i++)
        args[n++] = defaults[i];
    for (int i = 1; i < *argc && n < (int)(sizeof args / sizeof args[0]) - 1; i++)
        args[n++] = argv[i];
    args[n] = NULL;
    /* SimGrid aborts on a bad --cfg or --log: catch it, say it on one line. */
    init_args a = {&n, args};
    char message[1024] = "";
    if (platform_guarded(init_simgrid, &a, message, sizeof message))
        return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--cfg/--log", 0,
                            "SimGrid rejected an option: %s",
                            message[0] ? message : "(no message)");
    xbt_log_control_set("root.thresh:critical");
    /* SimGrid's own SIGINT handler calls exit(1): the run then looks like a
     * failure to whoever started it (simsweep wrote a failed row), and the
     * exit-time teardown can deadlock when the signal arrived inside malloc
     * (seen: a simrun hung for minutes after a Ctrl-C of a sweep).  Die of
     * the signal instead, at once, as a process without a handler does. */
    struct sigaction sa = {0};
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = die_of_signal;
    sigaction(SIGINT, &sa, NULL);
    return 0;
}

/* ---- set-up and tear-down ------------------------------------------------- */

static int workers_create(engine *e, np_error *err)
{
    int n = engine_num_workers(e);
    e->workers = calloc((size_t)n, sizeof *e->workers);
    int *ranks = malloc((size_t)n * e->tp * sizeof *ranks);
    sg_host_t *hosts = malloc((size_t)n * e->tp * sizeof *hosts);
    if (!e->workers || !ranks || !hosts) {
        free(ranks);
        free(hosts);
        return np_error_set(err, NP_EXIT_INTERNAL, "<engine>", "", 0, "out of memory");
    }
    for (int i = 0; i < n; i++) {
        worker *w = &e->workers[i];
        int d = i % e->dp, s = i / e->dp % e->p, c = i / (e->dp * e->p);
        w->stage = s;
        w->replica = d;
        w->cp_rank = c;
        w->eng = e;
        w->ep.ranks = ranks + (size_t)i * e->tp;
        w->ep.hosts = hosts + (size_t)i * e->tp;
        /* The rank order of placement.h (default Megatron's tp-cp-ep-dp-pp:
         * r + tp·(c + cp·(d + dp·s))). */
        int sizes[PLACE_DIMS] = {e->tp, e->cp, e->dp, e->p};
        for (int r = 0; r < e->tp; r++) {
            w->ep.ranks[r] = placement_rank(&e->opt->placement, sizes, r, c, d, s);
            w->ep.hosts[r] = e->pf->host_of_rank[w->ep.ranks[r]];
        }
        for (int ch = 0; ch < CH_COUNT; ch++)
            w->chan[ch].wake = sg_sem_init(0);
        w->simulated = d < e->fold;
        if (!w->simulated)
            w->collective_start = sg_sem_init(0);
        if (w->simulated && e->cp > 1 && c == 0)
            w->cp_ring = sg_barrier_init((unsigned)e->cp);
        if (w->simulated && e->overlap)
            overlap_worker_init(w);
    }
    return 0;
}

static void workers_start(engine *e)
{
    char name[64];
    for (int i = 0; i < engine_num_workers(e); i++) {
        worker *w = &e->workers[i];
        if (e->cp > 1)
            snprintf(name, sizeof name, "stage%d-dp%d-cp%d", w->stage, w->replica, w->cp_rank);
        else
            snprintf(name, sizeof name, "stage%d-dp%d", w->stage, w->replica);
        sg_actor_t a = sg_actor_init(name, w->ep.hosts[0]);
        sg_actor_set_data(a, w);
        sg_actor_start(a, w->simulated ? worker_main : fold_replica_main, 0, NULL);
        if (w->simulated && e->overlap) {
            snprintf(name, sizeof name, "stage%d-dp%d-cp%d-grads", w->stage, w->replica,
                     w->cp_rank);
            sg_actor_t c = sg_actor_init(name, w->ep.hosts[0]);
            sg_actor_set_data(c, w);
            sg_actor_start(c, overlap_comm_main, 0, NULL);
        }
    }
}

static void workers_destroy(engine *e)
{
    if (!e->workers)
        return;
    for (int i = 0; i < engine_num_workers(e); i++) {
        worker *w = &e->workers[i];
        for (int c = 0; c < CH_COUNT; c++) {
            sg_sem_destroy(w->chan[c].wake);
            free(w->chan[c].items);
        }
        if (w->collective_start)
            sg_sem_destroy(w->collective_start);
        if (w->cp_ring)
            sg_barrier_destroy(w->cp_ring);
        overlap_worker_destroy(w);
        free(w->spans);
    }
    free(e->workers[0].ep.ranks);
    free(e->workers[0].ep.hosts);
    free(e->workers);
    e->workers = NULL;
}

/* ---- a run ---------------------------------------------------------------- */

int engine_run(const sim_platform *pf, const wl_workload *w, const cm_model *cm, const plan *pl,
               const schedule *sc, const engine_options *o, engine_result *out, np_error *err)
{
    memset(out, 0, sizeof *out);
    engine e = {.pf = pf,
                .pl = pl,
                .sc = sc,
                .opt = o,
                .tp = pl->tensor_parallel,
                .dp = pl->data_parallel,
                .p = pl->num_stages,
                .cp = cm->context_parallel > 1 ? cm->context_parallel : 1};
    int rc = engine_check_fold(w, pl, o->fold_dp, err);
    if (!rc && o->fold_dp > 0 && o->fold_dp != pl->data_parallel && pf->fold_blocker[0])
        /* Measured: a 4:1 taper 16% faster folded, GPT-3 175B on a 1,024-NPU
         * dragonfly 3.4%, small_gpt on test_rail_64.xml 0.15% (docs/design.md,
         * Folding). */
        rc = np_error_set(err, NP_EXIT_USAGE, "<command line>", "--fold-dp", 0,
                          "cannot fold on %s: it is %s, where a folded-away replica's "
                          "stage-to-stage flows can meet another replica's collectives on a "
                          "link, so leaving them out would change the contention (folding "
                          "is exact on non-blocking fat trees with servers in rank order)",
                          pf->cluster.name, pf->fold_blocker);
    int sizes[PLACE_DIMS] = {e.tp, e.cp, e.dp, e.p};
    placement_split split;
    bool across =
        placement_tp_across_servers(&o->placement, sizes, pf->cluster.npus_per_node, &split);
    if (!rc && across != (cm->cluster.tp_across_servers != 0)) {
        /* the ops' TP collective times must come from where the groups sit */
        char name[32];
        placement_name(&o->placement, name, sizeof name);
        rc = across ? np_error_set(err, NP_EXIT_INTERNAL, "<command line>", "--placement", 0,
                                   "%s puts the TP group of stage %d, replica %d, CP rank %d "
                                   "across servers (TP rank 0 on NPU %d, TP rank %d on NPU %d), "
                                   "but the cost model priced its collectives inside a server "
                                   "(cl_cluster.tp_across_servers, which simrun sets)",
                                   name, split.stage, split.replica, split.cp_rank, split.first,
                                   split.tp_rank, split.rank)
                    : np_error_set(err, NP_EXIT_INTERNAL, "<command line>", "--placement", 0,
                                   "%s keeps every TP group in a server, but the cost model "
                                   "priced the TP collectives across servers",
                                   name);
    }
    if (rc || (rc = coll_check_options(o, err)) || (rc = overlap_check(pl, o, err)))
        return rc;
    e.fold = o->fold_dp > 0 ? o->fold_dp : e.dp;
    long needed = (long)e.tp * e.cp * e.dp * e.p;
    if (needed != pf->num_npus && e.cp == 1)
        return np_error_set(err, NP_EXIT_INPUT, pf->cluster.name, "", 0,
                            "the plan needs tp·pp·dp = %d·%d·%d = %ld NPUs, the platform has %d",
                            e.tp, e.p, e.dp, needed, pf->num_npus);
    if (needed != pf->num_npus)
        return np_error_set(err, NP_EXIT_INPUT, pf->cluster.name, "", 0,
                            "the plan needs tp·cp·dp·pp = %d·%d·%d·%d = %ld NPUs, the platform "
                            "has %d",
                            e.tp, e.cp, e.dp, e.p, needed, pf->num_npus);
    if ((rc = overlap_build(&e, cm, err)))
        return rc;
    if ((rc = engine_moe_prepare(&e, w, cm, err)) || o->check_only) { /* MoE hook */
        engine_moe_free(&e);
        overlap_free(&e);
        return rc;
    }
    if ((rc = workers_create(&e, err))) {
        engine_moe_free(&e);
        overlap_free(&e);
        return rc;
    }
    /* every worker, plus the gradient actors of the simulated ones */
    int actors = engine_num_workers(&e) + overlap_num_actors(&e);
    e.finish = sg_barrier_init((unsigned)actors);
    struct timespec t_start, t_end;
    clock_gettime(CLOCK_MONOTONIC, &t_start);
    transport_init(&e.net, pf, e.tp);
    /* the exact TP fold, when the fabric allows it (engine_symmetry.c) */
    if ((e.net.symmetry = engine_tp_symmetry(pf, cm, pl, o)))
        tp_symmetry_apply(e.net.symmetry);
    workers_start(&e);
    engine_progress_start(&e); /* engine_options.progress, when set (engine_progress.c) */
    simgrid_run();
    clock_gettime(CLOCK_MONOTONIC, &t_end);
    if (e.net.fold_error[0])
        /* a pair first met during the run failed the TP fold's check
         * (transport_start); the actors were killed, nothing is torn down */
        return np_error_set(err, NP_EXIT_INTERNAL, pf->cluster.name, "", 0,
                            "the exact TP fold does not hold on this platform: %s; the run "
                            "stopped there, as the rates simulated so far may be wrong "
                            "(rerun with --per-rank-flows; docs/design.md, \"The exact TP "
                            "fold\")",
                            e.net.fold_error);
    if (e.finished != actors)
        /* Actors are still blocked: SimGrid stopped on a deadlock.  Its state
         * cannot be reused, so nothing is torn down; the caller must stop. */
        return np_error_set(err, NP_EXIT_INTERNAL, "<engine>", "", 0,
                            "the simulation deadlocked: %d of %d actors finished (a schedule "
                            "whose sends and receives do not match?)",
                            e.finished, actors);
    sg_barrier_destroy(e.finish);
    out->tp_fold = e.net.symmetry ? e.tp : 1;
    tp_symmetry_free(e.net.symmetry); /* the links get their bandwidth back */
    transport_destroy(&e.net);
    rc = metrics_collect(&e, w, cm, out);
    engine_moe_collect(&e, out); /* MoE hook */
    out->wall_s = (t_end.tv_sec - t_start.tv_sec) + 1e-9 * (t_end.tv_nsec - t_start.tv_nsec);
    workers_destroy(&e);
    overlap_free(&e);
    engine_moe_free(&e);
    if (rc)
        return np_error_set(err, NP_EXIT_INTERNAL, "<engine>", "", 0, "out of memory");
    return 0;
}
