/*
 * transport.h -- transport: moving bytes between endpoints of NPUs.
 *
 * An ENDPOINT is what sends and receives: tp NPUs (a pipeline worker, a
 * collective member), TP rank r on hosts[r] with global rank ranks[r].  A
 * TRANSFER from endpoint a to endpoint b moves `bytes` from every rank r of a
 * to rank r of b: one SimGrid flow per rank, or, when the two NPUs share a
 * server, a scale-up delay of cl_p2p_time() that no XML link carries, queued
 * behind the earlier closed-form legs of the two NPUs' ports (or a
 * flow between their scale-up ports when the platform simulates the scale-up
 * fabric, and a relay through it for cross-rail PXN: transport_scaleup.c).  The
 * sender starts it and never waits; whoever holds the transfer (the receiver)
 * waits on its flows: handing the flow itself over is the cheapest way to move
 * bytes between two NPUs in SimGrid (docs/design.md, SimGrid facts).
 *
 * A TRANSPORT is the context every transfer of one run shares: the platform,
 * the NPUs per endpoint, the clock origin its times are relative to, and the
 * count of SimGrid activities started (a run's cost is proportional to it, and
 * the engine's callers add their own executions to it).  The engine's
 * pipeline sends and every collective message (collective.h) travel this
 * way; the transport knows nothing of workers, stages or schedules.
 */
#ifndef SIM_TRANSPORT_H
#define SIM_TRANSPORT_H

#include <simgrid/engine.h>
#include <simgrid/forward.h>
#include <stdbool.h>

#include "platform.h"

struct tp_symmetry;
struct transport_legs;

/* The most flows one TP rank's part of a transfer starts: a PXN relay's
 * scale-up leg and its network leg split over two NIC planes. */
#define TRANSFER_FLOWS_PER_RANK 3

typedef struct transport {
    const sim_platform *pf;
    int tp;          /* NPUs per endpoint */
    double t0;       /* simulated clock at the origin (the run's start) */
    long activities; /* SimGrid executions, flows and sleeps started */
    /* The exact TP fold (transport_symmetry.h): when set, a transfer posts
     * TP rank 0's flows only, after checking the pair.  NULL: every rank's. */
    struct tp_symmetry *symmetry;
    struct transport_legs *record; /* set: flows are listed, not started */
    /* Set when a pair first met during the run fails the fold's check: the
     * transport then kills every actor (the run cannot go on exactly). */
    char fold_error[512];
    /* Closed-form scale-up legs (transport_scaleup.c): when each NPU's port
     * is next free to send ([0, n)) and to receive ([n, 2n)), in seconds
     * since the origin; allocated at the first such leg, NULL before. */
    double *port_free;
} transport;

typedef struct endpoint {
    sg_host_t *hosts; /* [tp]: the NPUs of TP ranks 0..tp−1 */
    int *ranks;       /* [tp]: their global ranks */
} endpoint;

typedef struct transfer {
    sg_exec_t *flows; /* SimGrid flows still to wait for, [num_flows] */
    int num_flows;
    double arrive_s; /* scale-up part: when its data is there */
    double sent_s;   /* when the sender posted it */
} transfer;

/* A transport for endpoints of tp NPUs on pf, its origin the current
 * simulated clock, no activity counted yet. */
void transport_init(transport *t, const sim_platform *pf, int tp);

/* Releases what the transport allocated (not the platform). */
void transport_destroy(transport *t);

/* Simulated seconds since the origin. */
static inline double transport_now(const transport *t) { return simgrid_get_clock() - t->t0; }

/* A SimGrid flow of `bytes` from src to dst, started: a 2-host parallel
 * execution, the cheapest flow docs/design.md (SimGrid facts) measured.  Not
 * counted: the caller owns it. */
sg_exec_t transport_flow_start(sg_host_t src, sg_host_t dst, double bytes);

/* Whether two NPUs (global ranks) sit in one server, on the scale-up fabric. */
bool transport_same_server(const transport *t, int rank_a, int rank_b);

/* Starts a transfer of `bytes` from every TP rank of `from` to the same rank
 * of `to` (see the head comment); returns at once.  Nothing moves for
 * bytes ≤ 0. */
transfer transport_start(transport *t, const endpoint *from, const endpoint *to, double bytes);
/* The flows TP rank r's part of a transfer from `from` to `to` would
 * start (at most TRANSFER_FLOWS_PER_RANK) and whether it would wait for a
 * closed-form scale-up time; nothing is started or counted. */
typedef struct transport_legs {
    sg_host_t src[TRANSFER_FLOWS_PER_RANK], dst[TRANSFER_FLOWS_PER_RANK];
    int count;
    bool waits;
} transport_legs;
void transport_rank_legs(transport *t, const endpoint *from, const endpoint *to, int r,
                         transport_legs *out);

/* Waits until every part of x has arrived (and releases its flows). */
void transport_wait(transport *t, transfer *x);

/* Start-up latency α of a message between the TP ranks 0 of a and b: the
 * scale-up latency inside a server, else the route's. */
double transport_latency_s(const transport *t, const endpoint *a, const endpoint *b);
/* Sleeps duration_s (counted as an activity); nothing for ≤ 0. */
void transport_sleep(transport *t, double duration_s);

#endif
