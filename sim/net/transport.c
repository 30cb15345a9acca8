/*
 * transport.c -- transport: starting and waiting for flows and transfers.
 *
 * The one place where bytes between NPUs become SimGrid activities, for the
 * engine's stage-to-stage sends and for every collective message alike, so
 * both contend on the same links and are counted the same way (transport.h).
 */
#include <simgrid/actor.h>
#include <simgrid/exec.h>
#include <simgrid/host.h>
#include <stdlib.h>
#include <xbt/asserts.h>

#include "transport.h"
#include "transport_scaleup.h"

void transport_init(transport *t, const sim_platform *pf, int tp)
{
    t->pf = pf;
    t->tp = tp;
    t->t0 = simgrid_get_clock();
    t->activities = 0;
}

sg_exec_t transport_flow_start(sg_host_t src, sg_host_t dst, double bytes)
{
    sg_host_t hosts[2] = {src, dst};
    double flops[2] = {0, 0};
    double comm[4] = {0, bytes, 0, 0};
    sg_exec_t flow = sg_actor_parallel_exec_init(2, hosts, flops, comm);
    sg_exec_start(flow);
    return flow;
}

bool transport_same_server(const transport *t, int rank_a, int rank_b)
{
    int per_node = t->pf->cluster.npus_per_node;
    return rank_a / per_node == rank_b / per_node;
}

transfer transport_start(transport *t, const endpoint *from, const endpoint *to, double bytes)
{
    double now = transport_now(t);
    transfer x = {.flows = NULL, .num_flows = 0, .arrive_s = now, .sent_s = now};
    if (bytes <= 0)
        return x;
    for (int r = 0; r < t->tp; r++) {
        /* Same server, or PXN: the scale-up fabric (transport_scaleup.c). */
        if (transport_scaleup_part(t, from->ranks[r], to->ranks[r], bytes, &x))
            continue;
        if (!x.flows && !(x.flows = malloc((size_t)2 * t->tp * sizeof *x.flows)))
            xbt_die("npusim: out of memory posting a transfer");
        x.flows[x.num_flows++] = transport_flow_start(from->hosts[r], to->hosts[r], bytes);
        t->activities++;
    }
    return x;
}

void transport_wait(transport *t, transfer *x)
{
    for (int i = 0; i < x->num_flows; i++)
        sg_exec_wait(x->flows[i]); /* releases the flow */
    free(x->flows);
    x->flows = NULL;
    x->num_flows = 0;
    if (x->arrive_s > transport_now(t)) {
        sg_actor_sleep_until(x->arrive_s + t->t0);
        t->activities++;
    }
}

double transport_latency_s(const transport *t, const endpoint *a, const endpoint *b)
{
    if (transport_same_server(t, a->ranks[0], b->ranks[0]))
        return t->pf->cluster.scaleup_latency_s;
    return sg_host_get_route_latency(a->hosts[0], b->hosts[0]);
}

void transport_sleep(transport *t, double duration_s)
{
    if (duration_s <= 0)
        return;
    sg_actor_sleep_for(duration_s);
    t->activities++;
}
