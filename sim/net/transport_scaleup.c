/*
 * transport_scaleup.c -- same-server transfers and PXN (transport_scaleup.h).
 *
 * With scaleup_fabric="simulated" every NPU has a port host (sup-<rank>)
 * whose one SPLITDUPLEX link of scaleup_bandwidth_Bps and half the scale-up
 * latency joins a non-blocking switch (docs/platform-format.md).  A transfer
 * between two NPUs of a server is a flow between their ports: route latency
 * α_u = scaleup_latency_s and bandwidth B_u, so on an idle fabric it takes
 * α_u + S/B_u, exactly cl_p2p_time()'s closed form (tests/test_fabrics.c
 * checks both), and k flows leaving one port share B_u as NVLink or HCCS
 * ports do.  Without the property the closed form is kept: no activity, and
 * no contention inside a server.
 */
#include "transport_scaleup.h"

int transport_rail(const transport *t, int rank) { return rank % t->pf->cluster.npus_per_node; }

/* The scale-up leg from NPU a to NPU b of the same server. */
static void scaleup_leg(transport *t, int a, int b, double bytes, transfer *x)
{
    const sim_platform *pf = t->pf;
    if (pf->scaleup_simulated) {
        transport_add_flow(t, x, pf->scaleup_port_of_rank[a], pf->scaleup_port_of_rank[b], bytes);
        return;
    }
    double done = transport_now(t) + cl_p2p_time(&pf->cluster, bytes, 1);
    if (done > x->arrive_s)
        x->arrive_s = done;
}

bool transport_scaleup_part(transport *t, int a, int b, double bytes, transfer *x)
{
    const sim_platform *pf = t->pf;
    if (transport_same_server(t, a, b)) {
        scaleup_leg(t, a, b, bytes, x);
        return true;
    }
    if (!pf->cross_rail_pxn || transport_rail(t, a) == transport_rail(t, b))
        return false;
    int per_node = pf->cluster.npus_per_node;
    int relay = a / per_node * per_node + transport_rail(t, b);
    scaleup_leg(t, a, relay, bytes, x);
    transport_network_leg(t, relay, b, pf->host_of_rank[relay], pf->host_of_rank[b], bytes, x);
    return true;
}
