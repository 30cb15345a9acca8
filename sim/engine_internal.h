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
#include <simgrid/semaphore.h>

#include "engine.h"

typedef struct transfer {
    sg_exec_t *flows;  /* SimGrid flows still to wait for, [num_flows] */
    int num_flows;
    double arrive_s;   /* scale-up part: when its data is there */
    double sent_s;     /* when the sender posted it */
} transfer;

typedef struct channel {
    transfer *items;
    int head, tail, capacity;
    sg_sem_t posted;
} channel;

enum { CH_FORWARD = 0, CH_BACKWARD, CH_COLLECTIVE, CH_COUNT };

struct engine;

typedef struct worker {
    int stage, replica;
    sg_host_t *hosts; /* [tp]: the NPUs of TP ranks 0..tp−1 */
    int *ranks;       /* [tp]: their global ranks */
    channel chan[CH_COUNT];
    struct engine *eng;
    sg_sem_t collective_start; /* folded-away replicas: released by the representative */
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
    int fold;        /* replicas whose pipelines run: dp, or K when folded */
    double t0;       /* simulated clock at the run's start */
    long activities;
    worker *workers; /* [p·dp], worker (s, d) at s·dp + d */
} engine;

static inline worker *engine_worker(engine *e, int stage, int replica)
{
    return &e->workers[stage * e->dp + replica];
}

static inline double engine_now(const engine *e) { return simgrid_get_clock() - e->t0; }

/* Posts a transfer of `bytes` from every TP rank of `from` to the same rank of
 * `to`, on `to`'s channel ch.  Returns immediately. */
void engine_post(engine *e, worker *from, worker *to, int ch, double bytes);
/* The same, but returns when the data has arrived (a blocking send). */
void engine_send(engine *e, worker *from, worker *to, int ch, double bytes);
/* Waits for the oldest transfer on w's channel ch; returns the time spent
 * waiting after the data was posted (exposed communication). */
double engine_receive(engine *e, worker *w, int ch);

/* Data-parallel all-reduce of `bytes` per NPU among the replicas of w's stage. */
void coll_allreduce(engine *e, worker *w, double bytes);

#endif
