/*
 * transport.c -- transport: starting and waiting for flows and transfers.
 *
 * The one place where bytes between NPUs become SimGrid activities, for the
 * engine's stage-to-stage sends and for every collective message alike, so
 * both contend on the same links and are counted the same way (transport.h),
 * and where a network leg uses one or both planes of a dual-plane NIC.
 */
#include <simgrid/actor.h>
#include <simgrid/exec.h>
#include <simgrid/host.h>
#include <stdint.h>
#include <stdlib.h>
#include <xbt/asserts.h>

#include "transport.h"
#include "transport_scaleup.h"
#include "transport_symmetry.h"

void transport_init(transport *t, const sim_platform *pf, int tp)
{
    t->pf = pf;
    t->tp = tp;
    t->t0 = simgrid_get_clock();
    t->activities = 0;
    t->symmetry = NULL;
    t->record = NULL;
    t->fold_error[0] = '\0';
    t->port_free = NULL;
}

void transport_destroy(transport *t)
{
    free(t->port_free);
    t->port_free = NULL;
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

void transport_add_flow(transport *t, transfer *x, sg_host_t src, sg_host_t dst, double bytes)
{
    transport_legs *rec = t->record;
    if (rec) {
        rec->src[rec->count] = src;
        rec->dst[rec->count++] = dst;
        return;
    }
    if (!x->flows &&
        !(x->flows = malloc((size_t)TRANSFER_FLOWS_PER_RANK * t->tp * sizeof *x->flows)))
        xbt_die("npusim: out of memory posting a transfer");
    x->flows[x->num_flows++] = transport_flow_start(src, dst, bytes);
    t->activities++;
}

/* Dual-plane NICs (nic_planes=2, docs/platform-format.md): NPU R's port k
 * sits on plane k, port 0 being the NPU host itself and port 1 the host
 * pl1-R; the planes are joined by no link, so a flow stays on the plane of
 * its sender's port, and one flow (one RDMA queue pair) gets one port's
 * bandwidth.  PLANE_SPLIT: two flows of half the bytes, one per plane, as
 * NCCL spreads a send's or a collective's channels over the NIC's ports, so
 * an idle transfer takes α + S/(2·B_port); PLANE_HASH: the whole transfer on
 * the plane transport_plane_hash(a, b) picks, α + S/B_port: one queue pair
 * on one port, its port chosen by a hash of the two addresses (the ECMP or
 * bonding hash of a real NIC), so flows that meet on a port share it by
 * chance, not by design. */
int transport_plane_hash(int a, int b)
{
    /* MurmurHash3's 32-bit finaliser (Appleby, public domain) of a·φ XOR b:
     * every bit of both ranks reaches the low bit, so the choice has no
     * structure in the ranks (a plain a XOR b would put every pair of one
     * rail, ranks 8 apart, on the same plane). */
    uint32_t h = (uint32_t)a * 0x9E3779B1u ^ (uint32_t)b;
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    return (int)(h & 1);
}

void transport_network_leg(transport *t, int a, int b, sg_host_t src, sg_host_t dst, double bytes,
                           transfer *x)
{
    const sim_platform *pf = t->pf;
    if (pf->nic_planes != 2) {
        transport_add_flow(t, x, src, dst, bytes);
        return;
    }
    sg_host_t *plane1 = pf->plane1_port_of_rank;
    if (pf->plane_policy == PLANE_SPLIT) {
        transport_add_flow(t, x, src, dst, bytes / 2);
        transport_add_flow(t, x, plane1[a], plane1[b], bytes / 2);
    } else if (transport_plane_hash(a, b)) {
        transport_add_flow(t, x, plane1[a], plane1[b], bytes);
    } else {
        transport_add_flow(t, x, src, dst, bytes);
    }
}

bool transport_same_server(const transport *t, int rank_a, int rank_b)
{
    int per_node = t->pf->cluster.npus_per_node;
    return rank_a / per_node == rank_b / per_node;
}

/* TP rank r's part of a transfer. */
static void rank_part(transport *t, const endpoint *from, const endpoint *to, int r, double bytes,
                      transfer *x)
{
    /* Same server, or PXN: the scale-up fabric (transport_scaleup.c). */
    if (transport_scaleup_part(t, from->ranks[r], to->ranks[r], bytes, x))
        return;
    transport_network_leg(t, from->ranks[r], to->ranks[r], from->hosts[r], to->hosts[r], bytes, x);
}

void transport_rank_legs(transport *t, const endpoint *from, const endpoint *to, int r,
                         transport_legs *out)
{
    double now = transport_now(t);
    transfer x = {.flows = NULL, .num_flows = 0, .arrive_s = now, .sent_s = now};
    out->count = 0;
    t->record = out;
    rank_part(t, from, to, r, 1.0, &x);
    t->record = NULL;
    out->waits = x.arrive_s > now;
}

transfer transport_start(transport *t, const endpoint *from, const endpoint *to, double bytes)
{
    double now = transport_now(t);
    transfer x = {.flows = NULL, .num_flows = 0, .arrive_s = now, .sent_s = now};
    if (bytes <= 0)
        return x;
    int ranks = t->tp;
    if (t->symmetry) { /* the exact TP fold: rank 0 stands for all */
        if (!tp_symmetry_check(t->symmetry, t, from, to, t->fold_error, sizeof t->fold_error)) {
            /* The rates simulated so far may be wrong: stop every actor;
             * the engine reports t->fold_error (engine_run). */
            sg_actor_kill_all();
            sg_actor_exit();
        }
        ranks = 1;
    }
    for (int r = 0; r < ranks; r++)
        rank_part(t, from, to, r, bytes, &x);
    return x;
}

void transport_wait(transport *t, transfer *x)
{
    for (int i = 0; i < x->num_flows; i++)
        if (!sg_exec_test(x->flows[i])) /* a finished flow: released, no wait */
            sg_exec_wait(x->flows[i]);  /* releases the flow */
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
