/*
 * engine_internal.h -- the engine's actors and channels, shared by engine.c
 * and the collective algorithms (collective*.c).  Not a public interface.
 *
 * A channel is a FIFO of transfers into one worker with a semaphore counting
 * the transfers posted.  A sender starts its flows and posts them without
 * waiting (a non-blocking isend with the buffer handed over); the receiver
 * acquires the semaphore, takes the oldest transfer and waits on its flows.
 * Handing the flow itself to the receiver is the cheapest way DESIGN.md
 * measured to move bytes between two NPUs in SimGrid.
 */
#ifndef SIM_ENGINE_INTERNAL_H
#define SIM_ENGINE_INTERNAL_H

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/exec.h>
#include <simgrid/host.h>
#include <simgrid/barrier.h>
#include <simgrid/semaphore.h>

#include "engine.h"

typedef struct transfer {
    sg_exec_t *flows; /* SimGrid flows still to wait for, [num_flows] */
    int num_flows;
    double arrive_s; /* scale-up part: when its data is there */
    double sent_s;   /* when the sender posted it */
} transfer;

typedef struct channel {
    transfer *items;
    int head, tail, capacity;
    sg_sem_t posted;
} channel;

enum { CH_FORWARD = 0, CH_BACKWARD, CH_COUNT };

struct engine;

typedef struct worker {
    int stage, replica;
    sg_host_t *hosts; /* [tp]: the NPUs of TP ranks 0..tp−1 */
    int *ranks;       /* [tp]: their global ranks */
    channel chan[CH_COUNT];
    struct engine *eng;
    sg_sem_t collective_start; /* folded-away replicas: released by the representative */
    sg_sem_t bucket_ready;     /* --dp-overlap: a gradient bucket can be reduced */
    sg_sem_t buckets_done;     /* --dp-overlap: every bucket is reduced */
    bool simulated;            /* false for a replica folded away */
    /* accounting (simulated seconds relative to the run's start) */
    double busy_s, recompute_s, tp_comm_s, p2p_exposed_s, dp_comm_s;
    double pipeline_end_s, end_s;
    double mem_bytes, peak_bytes;
    engine_span *spans;
    int num_spans, span_capacity;
} worker;

typedef struct engine {
    const sim_platform *pf;
    const plan *pl;
    const schedule *sc;
    const engine_options *opt;
    int tp, dp, p;
    int fold;     /* replicas whose pipelines run: dp, or K when folded */
    int finished; /* actors that reached their end (a deadlock leaves fewer) */
    double t0;    /* simulated clock at the run's start */
    long activities;
    worker *workers;              /* [p·dp], worker (s, d) at s·dp + d */
    sg_bar_t finish;              /* every worker waits here before it ends (worker_linger) */
    struct overlap_plan *overlap; /* [p] with --dp-overlap, else NULL */
} engine;

static inline worker *engine_worker(engine *e, int stage, int replica)
{
    return &e->workers[stage * e->dp + replica];
}

static inline double engine_now(const engine *e) { return simgrid_get_clock() - e->t0; }

/* Starts a transfer of `bytes` from every TP rank of `from` to the same rank
 * of `to`: one SimGrid flow per rank, or, when both NPUs share a server, a
 * scale-up delay of cl_p2p_time() that no XML link carries.  Returns at once. */
transfer engine_transfer_start(engine *e, const worker *from, const worker *to, double bytes);
/* Waits until every part of t has arrived (and releases its flows). */
void engine_transfer_wait(engine *e, transfer *t);
/* A blocking send: starts the transfer, waits for it, then hands it to
 * `to`'s channel ch, where engine_receive() finds it arrived. */
void engine_send(engine *e, worker *from, worker *to, int ch, double bytes);
/* Waits for the oldest transfer on w's channel ch; returns the time spent
 * waiting after the data was posted (exposed communication). */
double engine_receive(engine *e, worker *w, int ch);

/* ---- collectives (collective.h, collective_*.c) ---------------------------- */

/* Data-parallel all-reduce of `bytes` per NPU among the replicas of w's stage,
 * with engine_options.dp_algorithm. */
void coll_allreduce(engine *e, worker *w, double bytes);
/* Expert-parallel all-to-all among the ep_size consecutive replicas of w's
 * stage that hold w (Megatron's EP groups); `bytes` per NPU in total, bytes/ep
 * to each member; engine_options.ep_alltoall_algorithm. */
void coll_alltoall(engine *e, worker *w, int ep_size, double bytes);

/* Plumbing of the algorithms (collective_transport.c).  A member running a
 * collective holds a coll_ctx: its group, the session the group's members
 * share for this call, and a message-tag counter every member advances the
 * same way.  A coll_view is the part of the group an algorithm runs on. */
struct coll_group;
typedef struct coll_session coll_session;
typedef struct coll_ctx {
    engine *e;
    const struct coll_group *g;
    coll_session *session;
    int next_tag;
} coll_ctx;
typedef struct coll_view {
    const int *index; /* [n]: group index of each view position; NULL = identity */
    int n, me;        /* size, and the caller's position */
} coll_view;

void coll_ctx_enter(coll_ctx *c, engine *e, const struct coll_group *g);
void coll_ctx_leave(coll_ctx *c);
/* Reserves `count` consecutive message tags; returns the first. */
int coll_tags(coll_ctx *c, int count);
/* Group index of view position i. */
static inline int coll_view_member(const coll_view *v, int i) { return v->index ? v->index[i] : i; }
/* Starts `bytes` from every TP rank of the caller to the same rank of view
 * member `to` (a flow, or a scale-up delay inside a server); returns at once. */
void coll_send(coll_ctx *c, const coll_view *v, int to, int tag, double bytes);
/* Waits until the message `tag` from view member `from` has arrived. */
void coll_recv(coll_ctx *c, const coll_view *v, int from, int tag);
/* Start-up latency α of a message between view members a and b. */
double coll_latency_s(const coll_ctx *c, const coll_view *v, int a, int b);
void coll_sleep(coll_ctx *c, double duration_s);
/* A SimGrid flow of `bytes` from src to dst, started: a 2-host parallel
 * execution, the cheapest flow DESIGN.md measured. */
sg_exec_t engine_flow_start(sg_host_t src, sg_host_t dst, double bytes);
bool engine_same_server(const engine *e, int rank_a, int rank_b);

/* The algorithms on a view; `bytes` is S, one member's whole vector
 * (collective.h).  coll_run_view() dispatches on (kind, params). */
struct coll_params;
void coll_run_view(coll_ctx *c, const coll_view *v, int kind, const struct coll_params *p,
                   double bytes);
void coll_ring_allreduce(coll_ctx *c, const coll_view *v, double bytes);
void coll_ring_reduce_scatter(coll_ctx *c, const coll_view *v, double bytes);
void coll_ring_allgather(coll_ctx *c, const coll_view *v, double bytes);
void coll_ring_flow_allreduce(coll_ctx *c, const coll_view *v, double bytes);
void coll_ring_flow_reduce_scatter(coll_ctx *c, const coll_view *v, double bytes);
void coll_ring_flow_allgather(coll_ctx *c, const coll_view *v, double bytes);
void coll_butterfly_reduce_scatter(coll_ctx *c, const coll_view *v, int radix, double bytes);
void coll_butterfly_allgather(coll_ctx *c, const coll_view *v, int radix, double bytes);
void coll_hierarchical_allreduce(coll_ctx *c, const coll_view *v, const struct coll_params *p,
                                 double bytes);
void coll_pairwise_alltoall(coll_ctx *c, const coll_view *v, double bytes);
void coll_bruck_alltoall(coll_ctx *c, const coll_view *v, double bytes);

#endif
