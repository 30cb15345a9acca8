/*
 * collective_internal.h -- collective plumbing shared by collective*.c.  Not
 * a public interface.
 *
 * A member running a collective holds a coll_ctx: the transport carrying its
 * messages, its group, the session the group's members share for this call,
 * and a message-tag counter every member advances the same way
 * (collective_transport.c).  A coll_view is the part of the group an
 * algorithm runs on (the hierarchical all-reduce runs its phases on views of
 * the servers and across them).  The algorithms take S, one member's whole
 * vector, as `bytes` (collective.h).
 */
#ifndef SIM_COLLECTIVE_INTERNAL_H
#define SIM_COLLECTIVE_INTERNAL_H

#include "collective.h"
#include "transport.h"

typedef struct coll_session coll_session;
typedef struct coll_ctx {
    transport *t;
    const coll_group *g;
    coll_session *session;
    int next_tag;
} coll_ctx;
typedef struct coll_view {
    const int *index; /* [n]: group index of each view position; NULL = identity */
    int n, me;        /* size, and the caller's position */
} coll_view;

/* ---- collective_transport.c ---------------------------------------------- */

void coll_ctx_enter(coll_ctx *c, transport *t, const coll_group *g);
void coll_ctx_leave(coll_ctx *c);
/* The session's cache of ring-flow's members per server for the whole
 * group (collective_ring.c); 0 until computed. */
int *coll_session_ring_local(coll_ctx *c);
/* Its cache of the channels' mean edge latency (collective_ring.c); < 0
 * until computed. */
double *coll_session_ring_step(coll_ctx *c);
/* Reserves `count` consecutive message tags; returns the first. */
int coll_tags(coll_ctx *c, int count);
/* Group index of view position i. */
static inline int coll_view_member(const coll_view *v, int i) { return v->index ? v->index[i] : i; }
/* The endpoint of view position i. */
static inline const endpoint *coll_view_endpoint(const coll_ctx *c, const coll_view *v, int i)
{
    return c->g->members[coll_view_member(v, i)];
}
/* Starts `bytes` from every TP rank of the caller to the same rank of view
 * member `to` (a flow, or a scale-up delay inside a server); returns at once,
 * with the time the transfer's closed-form scale-up part has arrived (now
 * when it has none). */
double coll_send(coll_ctx *c, const coll_view *v, int to, int tag, double bytes);
/* Whether a message from the caller to view member `to` has a closed-form
 * scale-up part (same server, or a PXN relay leg, on a platform whose
 * scale-up fabric is not simulated): a delay, not a flow that shares the
 * NPU's port with the caller's other messages. */
bool coll_closed_form_pair(coll_ctx *c, const coll_view *v, int to);
/* Waits until the message `tag` from view member `from` has arrived. */
void coll_recv(coll_ctx *c, const coll_view *v, int from, int tag);
/* Start-up latency α of a message between view members a and b. */
double coll_latency_s(const coll_ctx *c, const coll_view *v, int a, int b);
void coll_sleep(coll_ctx *c, double duration_s);

/* ---- the algorithms: collective.c dispatches, collective_*.c run ---------- */

/* Runs (kind, p) on view v; coll_run() is this on the whole group. */
void coll_run_view(coll_ctx *c, const coll_view *v, int kind, const coll_params *p, double bytes);
void coll_ring_allreduce(coll_ctx *c, const coll_view *v, double bytes);
void coll_ring_reduce_scatter(coll_ctx *c, const coll_view *v, double bytes);
void coll_ring_allgather(coll_ctx *c, const coll_view *v, double bytes);
void coll_ring_flow_allreduce(coll_ctx *c, const coll_view *v, double bytes);
void coll_ring_flow_reduce_scatter(coll_ctx *c, const coll_view *v, double bytes);
void coll_ring_flow_allgather(coll_ctx *c, const coll_view *v, double bytes);
void coll_butterfly_reduce_scatter(coll_ctx *c, const coll_view *v, int radix, double bytes);
void coll_butterfly_allgather(coll_ctx *c, const coll_view *v, int radix, double bytes);
void coll_hierarchical_allreduce(coll_ctx *c, const coll_view *v, const coll_params *p,
                                 double bytes);
void coll_pairwise_alltoall(coll_ctx *c, const coll_view *v, double bytes);
void coll_bruck_alltoall(coll_ctx *c, const coll_view *v, double bytes);
void coll_concurrent_alltoall(coll_ctx *c, const coll_view *v, double bytes);
/* The pairwise and the concurrent exchange with to_bytes[j] for view member
 * j (NULL: `each` for every member); collective_alltoall.c. */
void coll_pairwise_exchange(coll_ctx *c, const coll_view *v, const double *to_bytes, double each);
void coll_concurrent_exchange(coll_ctx *c, const coll_view *v, const double *to_bytes, double each);

#endif
