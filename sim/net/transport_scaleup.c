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
 * ports do.  Without the property the closed form is kept, with no
 * activity: a leg of S bytes from NPU a to NPU b holds a's sending port and
 * b's receiving port (one direction each of a full-duplex NVLink or HCCS
 * port) for S/B_u, and starts when both are free, so it arrives α_u + S/B_u
 * after max(now, a's port free, b's port free).  Legs that share no port
 * take the idle closed form; legs that meet on a port queue there in the
 * order they are posted, which keeps the port's bandwidth: seven NPUs that
 * each send a block to the same NPU deliver the last one after 7·S/B_u + α_u,
 * as seven flows sharing its port would, not after S/B_u (until 6 December
 * 2026 a closed-form leg shared nothing, and a skewed MoE all-to-all inside
 * a server ran up to 7 times too fast).  It differs from sharing the port
 * fairly in which leg finishes first, not in when the last one does.
 */
#include <math.h>
#include <stdlib.h>
#include <xbt/asserts.h>

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
    double start = transport_now(t);
    if (!t->record) { /* a leg only listed (t->record) leaves the ports as they are */
        int n = pf->num_npus;
        if (!t->port_free && !(t->port_free = calloc((size_t)2 * n, sizeof *t->port_free)))
            xbt_die("npusim: out of memory for the scale-up ports");
        double *send_free = &t->port_free[a], *recv_free = &t->port_free[n + b];
        start = fmax(start, fmax(*send_free, *recv_free));
        *send_free = *recv_free = start + bytes / pf->cluster.scaleup_bandwidth_Bps;
    }
    double done = start + cl_p2p_time(&pf->cluster, bytes, 1);
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
