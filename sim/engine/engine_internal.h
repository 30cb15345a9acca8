/*
 * engine_internal.h -- the engine's actors, channels and shared state, for
 * the engine_*.c files.  Not a public interface.
 *
 *   engine.c             options, SimGrid start-up, a run's set-up and tear-down
 *   engine_worker.c      the worker actor replaying its op list; channels
 *   engine_overlap.c     --dp-overlap: gradient buckets and their actor
 *   engine_fold.c        --fold-dp: the light actors of folded replicas
 *   engine_collective.c  the data- and expert-parallel collectives of a worker
 *   engine_cp.c          context parallelism: the ring exchange of K/V
 *   engine_metrics.c     the result, from the workers' accounting
 *   engine_progress.c    the progress callback's actor (engine_options.progress)
 *   engine_estimate.c    the activities and bytes a run will take, before it runs
 *                        (simrun refuses a job over its bound; declared in engine.h)
 *   engine_estimate_net.c  its count of a transfer's and a collective's activities
 *   engine_bound.c       that bound, and the refusal's message (engine.h)
 *
 * Bytes between NPUs travel through the transport (sim/net/transport.h): a
 * worker is an endpoint of tp NPUs, and the engine's transport holds the
 * run's clock origin and its activity count.  A channel is a FIFO of
 * transfers into one worker with a semaphore counting the transfers posted.
 * A sender starts its flows and posts them without waiting (a non-blocking
 * isend with the buffer handed over); the receiver acquires the semaphore,
 * takes the oldest transfer and waits on its flows.  Handing the flow itself
 * to the receiver is the cheapest way docs/design.md (SimGrid facts) measured
 * to move bytes between two NPUs in SimGrid.
 */
#ifndef SIM_ENGINE_INTERNAL_H
#define SIM_ENGINE_INTERNAL_H

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/exec.h>
#include <simgrid/host.h>
#include <simgrid/barrier.h>
#include <simgrid/semaphore.h>

#include "collective.h"
#include "engine.h"
#include "transport.h"

typedef struct channel {
    transfer *items;
    int head, tail, capacity;
    bool waiting; /* the receiver is blocked on `wake` (the queue was empty) */
    sg_sem_t wake;
} channel;

/* Stage-to-stage transfers in each direction; the K/V chunks of context
 * parallelism from the CP ring predecessor. */
enum { CH_FORWARD = 0, CH_BACKWARD, CH_CP, CH_COUNT };

struct engine;

typedef struct worker {
    int stage, replica;
    int cp_rank; /* rank in its context-parallel group, 0 without CP */
    endpoint ep; /* its tp NPUs: ep.hosts[r], ep.ranks[r] for TP rank r */
    channel chan[CH_COUNT];
    struct engine *eng;
    sg_sem_t collective_start; /* folded-away replicas: released by the representative */
    sg_bar_t cp_ring; /* CP rank 0 of a simulated (stage, replica), cp > 1: its ring's barrier */
    sg_sem_t bucket_ready; /* --dp-overlap: a gradient bucket can be reduced */
    sg_sem_t buckets_done; /* --dp-overlap: every bucket is reduced */
    sg_sem_t params_ready; /* --dp-overlap, distributed optimizer: a parameter bucket is gathered */
    sg_sem_t params_launch; /* --dp-overlap, interleaved: the next chunk's gather may start */
    sg_sem_t zero_rs_done;  /* --dp-overlap, ZeRO-2/3: a reduce-scatter has ended */
    sg_sem_t zero_ag_done;  /* --dp-overlap, ZeRO-3: a prefetched parameter gather has ended */
    int zero_rs_launched, zero_rs_waited; /* reduce-scatters handed over, and seen to end */
    bool simulated;                       /* false for a replica folded away */
    /* accounting (simulated seconds relative to the run's start) */
    double busy_s, recompute_s, tp_comm_s, p2p_exposed_s, dp_comm_s;
    double pipeline_end_s, end_s;
    double mem_bytes, peak_bytes;
    engine_span *spans;
    int num_spans, span_capacity;
} worker;

/* --dp-overlap, per stage: which ops make gradient buckets ready, and the
 * buckets' sizes in the order they become ready (the same for every replica
 * of the stage). */
typedef struct overlap_plan {
    int *buckets_at_op;  /* [num_ops]: buckets made ready during op i */
    double *bytes_at_op; /* [num_ops]: size of each of them */
    int num_buckets;
    double *bucket_bytes; /* [num_buckets] */
    /* With the MoE replay (overlap_split_experts): [num_buckets], true for an
     * expert bucket, reduced over the expert-data-parallel group; NULL when
     * every bucket is dense */
    bool *bucket_expert;
    /* With the distributed optimizer (overlap_param_gather): the parameter
     * all-gathers of the previous step's update, overlapped with this
     * iteration's forward; the chunks in the order their first forward
     * comes (engine_overlap.c). */
    int *gathers_at_op;    /* [num_ops]: buckets op i waits for, one per equal piece */
    int *launches_at_op;   /* [num_ops]: chunk gathers released when op i starts */
    int num_gather_chunks; /* chunks with parameters, in first-forward order */
    int *gather_buckets;   /* [num_gather_chunks]: buckets of each */
    double *gather_bytes;  /* [num_gather_chunks]: parameter bytes of each bucket */
    bool *gather_waits;    /* [num_gather_chunks]: starts only when launched */
    /* With the MoE replay: each chunk's expert parameter buckets, gathered
     * over the expert-data-parallel group, merged in (cm_dp_expert_bucket_next);
     * NULL without */
    int *gather_expert_buckets;  /* [num_gather_chunks] */
    double *gather_expert_bytes; /* [num_gather_chunks] */
    /* ZeRO-2/3 (data_parallel_sharding_strategy optim_grads[_params]): no
     * buckets; the op list's per-pass reduce-scatters run on the
     * communication actor, and ZeRO-3's per-pass parameter gathers on a
     * second one, prefetched (engine_overlap.c).  The gather_* arrays then
     * hold one entry per gather op, launches_at_op their launch points;
     * under ZeRO-2 (no per-pass gathers) the update's buckets, as above. */
    bool zero;
    int zero_gathers; /* ZeRO-3 gather ops of the stage (0 for ZeRO-2) */
} overlap_plan;

typedef struct engine {
    const sim_platform *pf;
    const plan *pl;
    const schedule *sc;
    const engine_options *opt;
    int tp, dp, p;
    int cp;                   /* context-parallel ranks per (stage, replica): 1 without CP */
    int fold;                 /* replicas whose pipelines run: dp, or K when folded */
    int finished;             /* actors that reached their end (a deadlock leaves fewer) */
    transport net;            /* clock origin: the run's start; every activity counted */
    worker *workers;          /* [cp·p·dp], worker (s, d, c) at (c·p + s)·dp + d */
    sg_bar_t finish;          /* every worker waits here before it ends (worker_linger) */
    overlap_plan *overlap;    /* [p] with --dp-overlap, else NULL */
    struct engine_moe *moe;   /* MoE replay (engine_moe.c), else NULL */
    double moe_skipped_flows; /* > 0: a replay over engine_options.moe_max_flows */
} engine;

/* Worker (stage, replica, CP rank c).  CP rank 0's workers come first, at
 * s·dp + d as without CP, so that the timelines and every per-(stage,
 * replica) view read them; the other CP ranks follow. */
static inline worker *engine_cp_worker(engine *e, int stage, int replica, int c)
{
    return &e->workers[((size_t)c * e->p + stage) * e->dp + replica];
}

static inline worker *engine_worker(engine *e, int stage, int replica)
{
    return engine_cp_worker(e, stage, replica, 0);
}

static inline int engine_num_workers(const engine *e) { return e->p * e->dp * e->cp; }

/* ---- engine_symmetry.c: the exact TP fold -------------------------------- */

/* The largest TP group the fold takes. */
#define ENGINE_MAX_TP 128
struct tp_symmetry;
/* The checker of the exact TP fold (sim/net/transport_symmetry.h) when the
 * run pl on pf can use it, holding the pairs of workers the pipeline and the
 * data- and context-parallel rings connect, all checked; NULL when the run
 * keeps per-rank flows (engine_options.per_rank_flows, tp 1, an MoE model,
 * PXN, hashed NIC planes, or routes that treat the ranks of a group
 * differently).  Nothing is scaled until tp_symmetry_apply(). */
struct tp_symmetry *engine_tp_symmetry(const sim_platform *pf, const cm_model *cm, const plan *pl,
                                       const engine_options *o);

/* Simulated seconds since the run's start. */
static inline double engine_now(const engine *e) { return transport_now(&e->net); }

/* ---- engine_worker.c --------------------------------------------------------- */

/* The actor of a simulated worker: replays its stage's op list. */
void worker_main(int argc, char **argv);
/* Runs the consecutive compute ops ops[0 .. count), op `first` of the stage
 * onwards, as one sleep (or one per gradient bucket handed over); returns
 * how many ops it ran. */
int worker_run_compute(worker *w, const sched_op *ops, int first, int count);
/* Whether an op of this kind computes on the NPU (F, B, W, recompute,
 * optimizer step) rather than moving bytes. */
bool worker_op_computes(int kind);
/* Counts the actor as finished and waits for every other one (SimGrid cancels
 * the activities of an actor that ends). */
void worker_linger(worker *w);
/* Runs a communication or collective op (a send, a receive, a data-parallel
 * sync) and records its span. */
void worker_run_op(worker *w, const sched_op *op);
/* Accounts ops a and b that ran merged from start_s to end_s (combined
 * 1F1B, engine_moe_overlap.c): both transients held at once, the span split
 * in proportion to their work, the whole interval busy. */
void worker_account_merged(worker *w, const sched_op *a, const sched_op *b, double start_s,
                           double end_s);
/* Hands transfer t to channel ch (the receiver waits on it); and takes the
 * oldest transfer of w's channel ch once it is posted, waiting for it to
 * arrive. */
void channel_post(channel *ch, transfer t);
transfer channel_take(engine *e, worker *w, int ch);
/* Computes duration_s on the worker's NPU: a sleep, or an execution with
 * engine_options.compute_as_execution (nothing for a zero length). */
void worker_execute(worker *w, double duration_s);

/* ---- engine_cp.c ------------------------------------------------------------- */

/* The ring exchange of a compute op with cp_bytes (context parallelism):
 * runs the op's cp_overlap_s of compute while its K/V messages travel to the
 * CP ring successor, then waits for the predecessor's; returns the time it
 * waited beyond the overlapped compute (exposed).  The caller runs the rest
 * of the op. */
double cp_exchange(worker *w, const sched_op *op);

/* ---- engine_overlap.c, engine_overlap_comm.c ---------------------------------- */

/* 0, or NP_EXIT_USAGE when --dp-overlap cannot apply to the run. */
int overlap_check(const plan *pl, const engine_options *o, np_error *err);
/* Fills e->overlap with --dp-overlap (and dp ≥ 2), else leaves it NULL. */
int overlap_build(engine *e, const cm_model *cm, np_error *err);
void overlap_free(engine *e);
/* The communication actor of a simulated worker: gathers its parameter
 * buckets (distributed optimizer) and reduces its gradient buckets. */
void overlap_comm_main(int argc, char **argv);
/* The semaphores of a simulated worker with --dp-overlap. */
void overlap_worker_init(worker *w);
void overlap_worker_destroy(worker *w);
/* Before op i of w's stage starts: releases the chunk gathers it launches;
 * returns how many parameter buckets it waits for (0: none), each before one
 * of as many equal pieces of the op. */
int overlap_before_op(worker *w, int i);
/* Whether op i of w's stage must start a compute block of its own (it
 * launches or waits for a parameter gather). */
bool overlap_starts_block(const worker *w, int i);
/* Waits for the next gathered parameter bucket; the wait is data-parallel
 * time. */
void overlap_wait_params(worker *w);
/* ZeRO-2/3 with --dp-overlap: whether w's sharded collective op (a per-pass
 * OP_PARAM_GATHER or OP_GRAD_REDUCE_SCATTER) is the overlap's; if so, runs
 * the worker's side of it (waits for the prefetched gather; waits for the
 * previous reduce-scatter, then hands this one over) and returns true. */
bool overlap_zero_op(worker *w, const sched_op *op);
/* Waits for every reduce-scatter handed over (before the optimizer step and
 * at the end of the list); the wait is data-parallel time. */
void overlap_zero_drain(worker *w);
/* A per-pass parameter gather of ZeRO-3 (not ZeRO-2's gather of the update,
 * which has no micro-batch). */
bool overlap_is_pass_gather(const sched_op *op);
/* Actors the overlap adds to the run (communication actors). */
int overlap_num_actors(const engine *e);
/* The MoE replay with --dp-overlap: rebuilds e->overlap with each chunk's
 * expert gradients out of its data-parallel buckets and, when edp ≥ 2, in
 * buckets of their own reduced over the expert-data-parallel group (and
 * likewise the distributed optimizer's parameter gathers).  0, or -1 out of
 * memory. */
int overlap_split_experts(engine *e, const cm_model *cm, int edp);

/* ---- engine_fold.c ----------------------------------------------------------- */

/* A representative starts the collective of the replicas it stands for. */
void fold_release_replicas(worker *w);
/* The light actor of a replica folded away. */
void fold_replica_main(int argc, char **argv);

/* ---- engine_collective.c ----------------------------------------------------- */

/* Data-parallel gradient sync of `bytes` per NPU among the replicas of w's
 * stage (and their CP ranks: Megatron's data-parallel group with context
 * parallelism, dp·cp members ordered by global rank): an all-reduce with
 * engine_options.dp_algorithm, or with the distributed optimizer a
 * reduce-scatter and an all-gather of the parameters. */
void engine_dp_allreduce(engine *e, worker *w, double bytes);
/* The gradient sync of `bytes` per member on group g, as engine_dp_allreduce
 * does it (also the expert-data-parallel group's, engine_moe.c). */
void engine_grad_sync(engine *e, const coll_group *g, double bytes);
/* Sharded data parallelism's collectives of one pass (OP_PARAM_GATHER: an
 * all-gather of `bytes` of parameters; OP_GRAD_REDUCE_SCATTER: a
 * reduce-scatter of `bytes` of gradients) on the same group and algorithm. */
void engine_dp_collective(engine *e, worker *w, op_kind kind, double bytes);
/* The same collective on group g (the expert-data-parallel group's). */
void engine_group_collective(engine *e, const coll_group *g, op_kind kind, double bytes);

/* ---- engine_progress.c ------------------------------------------------------- */

/* Starts the progress actor when engine_options.progress is set. */
void engine_progress_start(engine *e);

/* ---- engine_metrics.c -------------------------------------------------------- */

/* Fills out from the workers' accounting once the run is over (the timelines
 * are handed over with options.record_spans); -1 when out of memory. */
int metrics_collect(engine *e, const wl_workload *w, const cm_model *cm, engine_result *out);

#endif
