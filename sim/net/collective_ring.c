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
 *
 * Channels: when the members come in runs of L > 1 per server (TP below the
 * server size), one ring would cross every server boundary on one member's
 * NIC with the whole 2(N−1)/N·S.  NCCL runs a ring per channel, each on its
 * own NIC, with 1/L of the data (collective.h, coll_ring_peers): so every
 * member sends 1/L of its bytes to its peer in the next server and the rest
 * to its successor in the server.  On an idle fabric
 *   max(α + 2(N−1)/N·S/(L·B), α_u + (L−1)/L·2(N−1)/N·S/B_u) + (2N−3)·λ,
 * λ = ((L−1)·α_u + α)/L the mean edge latency of a channel ring, the ring
 * formula with B = L NICs when the NICs are the bottleneck.  The step ring
 * (COLL_RING) stays one ring, and the plain ring-flow (L = 1) keeps the
 * slowest edge's latency per step (an upper bound when edges differ).
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

/* ---- channels (collective.h, coll_ring_peers) --------------------------- */

int coll_ring_local(int n, long (*server)(const void *ctx, int i), const void *ctx)
{
    int local = 1;
    long first = server(ctx, 0);
    while (local < n && server(ctx, local) == first)
        local++;
    if (local == 1 || n % local)
        return 1;
    for (int start = local; start < n; start += local) {
        long here = server(ctx, start);
        if (here == server(ctx, start - 1))
            return 1; /* a server's members in two runs */
        for (int i = start + 1; i < start + local; i++)
            if (server(ctx, i) != here)
                return 1;
    }
    return local;
}

void coll_ring_peers_of(int n, int local, int me, coll_ring_peers *out)
{
    if (local < 1 || n % local)
        local = 1;
    int servers = n / local, k = me / local, j = me % local;
    out->intra_next = local > 1 ? k * local + (j + 1) % local : -1;
    out->intra_prev = local > 1 ? k * local + (j + local - 1) % local : -1;
    /* channel rings leave server k on member j for member j of server k+1;
     * the last server's member j wraps to member (j + servers) mod local */
    out->inter_next = k + 1 < servers ? (k + 1) * local + j : (j + servers) % local;
    out->inter_prev = k > 0 ? (k - 1) * local + j
                            : (servers - 1) * local + ((j - servers) % local + local) % local;
}

typedef struct view_of {
    const coll_ctx *c;
    const coll_view *v;
    int per_node;
} view_of;

static long view_server(const void *ctx, int i)
{
    const view_of *w = ctx;
    return coll_view_endpoint(w->c, w->v, i)->ranks[0] / w->per_node;
}

/* The view's members per server for the channels: computed once per
 * collective call for the whole group (the session keeps it: O(n) per call,
 * not per member), each time for a sub-view (hierarchical's across-servers
 * view, one member per server, stops at its second member). */
static int view_local(coll_ctx *c, const coll_view *v)
{
    int per_node = c->t->pf->cluster.npus_per_node;
    if (per_node <= 0 || v->n < 2)
        return 1;
    view_of w = {c, v, per_node};
    if (v->index)
        return coll_ring_local(v->n, view_server, &w);
    int *cached = coll_session_ring_local(c);
    if (*cached == 0)
        *cached = coll_ring_local(v->n, view_server, &w);
    return *cached;
}

/* ---- ring-flow ------------------------------------------------------------ */

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

/* With channels, a step's latency is the mean of a channel ring's edges:
 * the steps pipeline around the ring, so the critical path of its 2(N−1)
 * steps crosses as many consecutive edges, L−1 inside a server for each
 * one between servers.  The edges between servers (member 0's channel:
 * servers k to k+1, and the wrap to server 0) are looked up once per
 * collective call for the whole group (the session keeps the mean). */
static double channel_step_latency_s(coll_ctx *c, const coll_view *v, const coll_ring_peers *p,
                                     int local)
{
    double *cached = v->index ? NULL : coll_session_ring_step(c);
    if (cached && *cached >= 0)
        return *cached;
    int servers = v->n / local;
    double between = 0.0;
    for (int k = 0; k < servers; k++) {
        coll_ring_peers q;
        coll_ring_peers_of(v->n, local, k * local, &q);
        between += coll_latency_s(c, v, k * local, q.inter_next);
    }
    double inside = coll_latency_s(c, v, v->me, p->intra_next);
    double step = ((local - 1) * inside + between / servers) / local;
    if (cached)
        *cached = step;
    return step;
}

/* A member of a ring-flow collective is done with an edge when both ends
 * are: it tells its predecessor that the flow has arrived (an empty message,
 * which arrives at once) and waits for its successor to say the same of its
 * own flow.  A step ring's member, whose last step sends as well as
 * receives, cannot leave earlier either.  On an idle fabric the two flows
 * end together and this costs nothing; when members join at different
 * times, it keeps an early member from starting the next collective while
 * its flow of this one still runs, which a member waiting on its incoming
 * flow alone would do (and then share its NIC between the two). */
static void acked(coll_ctx *c, const coll_view *v, int prev, int next, int tag)
{
    coll_send(c, v, prev, tag, 0);
    coll_recv(c, v, next, tag);
}

/* Each member sends what it would send over the ring's `steps` steps, S/N a
 * step: as one flow to its successor, or, with channels, (local−1)/local of
 * it to its successor in the server and 1/local to its peer in the next;
 * waits for its incoming flows and for its outgoing ones to be received
 * (acked); then the other steps' latency. */
static void ring_flow(coll_ctx *c, const coll_view *v, int steps, double bytes)
{
    int local = view_local(c, v);
    int tag = coll_tags(c, 4); /* every member reserves four: two flows, two acks */
    double total = steps * bytes / v->n;
    if (local == 1) {
        coll_send(c, v, ring_next(v), tag, total);
        coll_recv(c, v, ring_prev(v), tag);
        acked(c, v, ring_prev(v), ring_next(v), tag + 2);
        coll_sleep(c, (steps - 1) * ring_step_latency_s(c, v));
        return;
    }
    coll_ring_peers p;
    coll_ring_peers_of(v->n, local, v->me, &p);
    if (p.inter_next == p.intra_next) { /* one server: the plain ring */
        coll_send(c, v, p.intra_next, tag, total);
        coll_recv(c, v, p.intra_prev, tag);
        acked(c, v, p.intra_prev, p.intra_next, tag + 2);
    } else {
        coll_send(c, v, p.intra_next, tag, total * (local - 1) / local);
        coll_send(c, v, p.inter_next, tag + 1, total / local);
        coll_recv(c, v, p.intra_prev, tag);
        coll_recv(c, v, p.inter_prev, tag + 1);
        acked(c, v, p.intra_prev, p.intra_next, tag + 2);
        acked(c, v, p.inter_prev, p.inter_next, tag + 3);
    }
    coll_sleep(c, (steps - 1) * channel_step_latency_s(c, v, &p, local));
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
