/*
 * collective_ring.c -- flow-level ring all-reduce over data parallelism.
 *
 * A step-by-step ring all-reduce of S bytes over N members takes
 * 2(N−1)·(α + S/(N·B)) on an idle fabric, but costs 2N(N−1) messages.  Each
 * member instead sends ONE flow to its ring successor carrying all
 * 2(N−1)/N·S bytes it would send over the 2(N−1) steps, and then waits the
 * remaining (2(N−1)−1)·α of step latencies: the bandwidth term and the
 * latency term are the same, with N messages instead of 2N(N−1) (DESIGN.md,
 * measured on SimGrid).  Each TP rank runs its own ring on its own NIC, so a
 * TP group's gradients are never funnelled through one NPU.
 */
#include "engine_internal.h"

static double ring_latency_s(engine *e, worker *w, worker *next)
{
    int per_node = e->pf->cluster.npus_per_node;
    if (w->ranks[0] / per_node == next->ranks[0] / per_node)
        return e->pf->cluster.scaleup_latency_s;
    return sg_host_get_route_latency(w->hosts[0], next->hosts[0]);
}

void coll_allreduce(engine *e, worker *w, double bytes)
{
    int n = e->dp;
    if (n < 2 || bytes <= 0)
        return;
    worker *next = engine_worker(e, w->stage, (w->replica + 1) % n);
    double edge_bytes = 2.0 * (n - 1) / n * bytes;
    engine_post(e, w, next, CH_COLLECTIVE, edge_bytes);
    engine_receive(e, w, CH_COLLECTIVE);
    double rest_s = (2.0 * (n - 1) - 1) * ring_latency_s(e, w, next);
    if (rest_s > 0) {
        sg_actor_sleep_for(rest_s);
        e->activities++;
    }
}
