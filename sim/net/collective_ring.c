/*
 * collective_ring.c -- ring all-reduce, reduce-scatter and all-gather.
 *
 * The members form a ring in view order; each sends to its successor and
 * hears from its predecessor.  The vector of S bytes is cut into N chunks.
 *
 * Step by step (Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms
 * for clusters of workstations", JPDC 2009; Thakur, Rabenseifner & Gropp,
 * IJHPCA 2005): reduce-scatter is N−1 steps, in each a member sends one chunk
 * of S/N to its successor and waits for the predecessor's, which it reduces
 * into its own; all-gather is N−1 more steps passing the reduced chunks on.
 * On an idle fabric every step costs α + S/(N·B) (one flow in and one out of
 * every NIC), so
 *   reduce-scatter = all-gather = (N−1)(α + S/(N·B)),
 *   all-reduce = reduce-scatter + all-gather = 2(N−1)(α + S/(N·B)).
 * It costs 2N(N−1) messages per all-reduce and TP rank: 4.2M flows for the
 * 16 DP groups of 128 replicas × 8 TP ranks of the 16K Llama run.
 *
 * Flow-level ("ring-flow"): each member instead sends ONE flow to its
 * successor carrying everything it would send over the steps, 2(N−1)/N·S for
 * the all-reduce ((N−1)/N·S for RS or AG), then waits out the latencies of the
 * remaining steps, (2(N−1)−1)·α (resp. (N−2)·α).  On an idle fabric
 *   α + 2(N−1)/N·S/B + (2N−3)·α = 2(N−1)(α + S/(N·B)),
 * the step ring's time, with N messages instead of 2N(N−1) (measured on
 * SimGrid: docs/design.md, SimGrid facts).  What it gives up: the steps'
 * pipelining is assumed perfect, so a slow link delays the whole edge rather
 * than one chunk.
 */
#include "collective.h"
#include "collective_internal.h"

static int ring_next(const coll_view *v) { return (v->me + 1) % v->n; }
static int ring_prev(const coll_view *v) { return (v->me + v->n - 1) % v->n; }

/* N−1 steps of S/N each: the skeleton of reduce-scatter and all-gather. */
static void ring_steps(coll_ctx *c, const coll_view *v, double bytes)
{
    int steps = v->n - 1;
    int tag = coll_tags(c, steps);
    for (int k = 0; k < steps; k++) {
        coll_send(c, v, ring_next(v), tag + k, bytes / v->n);
        coll_recv(c, v, ring_prev(v), tag + k);
    }
}

void coll_ring_reduce_scatter(coll_ctx *c, const coll_view *v, double bytes)
{
    ring_steps(c, v, bytes);
}

void coll_ring_allgather(coll_ctx *c, const coll_view *v, double bytes) { ring_steps(c, v, bytes); }

void coll_ring_allreduce(coll_ctx *c, const coll_view *v, double bytes)
{
    coll_ring_reduce_scatter(c, v, bytes);
    coll_ring_allgather(c, v, bytes);
}

/* The latency that paces every step of the ring: the largest of its edges'.
 * Each step needs the predecessor's chunk, so a member whose own edges are
 * fast (inside a server) still waits a slow edge's latency per step.  The
 * first edge that leaves a server stands for all of them (on a fat tree they
 * differ only by the hops of leaf-local vs spine routes): computing every
 * edge in every member would cost N² route look-ups per collective. */
static double ring_step_latency_s(const coll_ctx *c, const coll_view *v)
{
    double slowest = coll_latency_s(c, v, v->me, ring_next(v));
    for (int i = 0; i < v->n; i++) {
        int next = (i + 1) % v->n;
        double a = coll_latency_s(c, v, i, next);
        if (a > slowest)
            slowest = a;
        if (a > c->t->pf->cluster.scaleup_latency_s)
            break; /* the first edge between servers */
    }
    return slowest;
}

/* One flow carrying `steps` chunks of S/N, then the other steps' latency. */
static void ring_flow(coll_ctx *c, const coll_view *v, int steps, double bytes)
{
    int tag = coll_tags(c, 1);
    coll_send(c, v, ring_next(v), tag, steps * bytes / v->n);
    coll_recv(c, v, ring_prev(v), tag);
    coll_sleep(c, (steps - 1) * ring_step_latency_s(c, v));
}

void coll_ring_flow_reduce_scatter(coll_ctx *c, const coll_view *v, double bytes)
{
    ring_flow(c, v, v->n - 1, bytes);
}

void coll_ring_flow_allgather(coll_ctx *c, const coll_view *v, double bytes)
{
    ring_flow(c, v, v->n - 1, bytes);
}

void coll_ring_flow_allreduce(coll_ctx *c, const coll_view *v, double bytes)
{
    ring_flow(c, v, 2 * (v->n - 1), bytes);
}
