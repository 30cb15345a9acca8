/*
 * transport_scaleup.h -- the parts of a transfer that involve the scale-up
 * fabric (transport.h): a transfer between two NPUs of one server, and, on a
 * rail-optimised platform with cross_rail_pxn=1, a transfer between NPUs of
 * different servers and rails (NCCL's PXN).  Internal to sim/net.
 */
#ifndef SIM_TRANSPORT_SCALEUP_H
#define SIM_TRANSPORT_SCALEUP_H

#include <stdbool.h>

#include "transport.h"

/* Starts a flow of `bytes` from src to dst as part of x (counted). */
void transport_add_flow(transport *t, transfer *x, sg_host_t src, sg_host_t dst, double bytes);

/* Starts the network leg of x from NPU a (host src) to NPU b (host dst):
 * one flow, or on a dual-plane platform (nic_planes=2) two halves, one per
 * plane, or one flow on the plane its nic_plane_policy hashes to
 * (transport.c). */
void transport_network_leg(transport *t, int a, int b, sg_host_t src, sg_host_t dst, double bytes,
                           transfer *x);

/* The plane (0 or 1) of a transfer from NPU a to NPU b under
 * nic_plane_policy="hash": the low bit of MurmurHash3's 32-bit finaliser of
 * (a · 0x9E3779B1) XOR b, all in unsigned 32-bit arithmetic (transport.c). */
int transport_plane_hash(int a, int b);

/* The rail of an NPU: its index inside its server (NIC i of every server is
 * on rail i, docs/platform-format.md). */
int transport_rail(const transport *t, int rank);

/* Starts the part of transfer x that moves `bytes` from NPU a to NPU b when
 * it involves the scale-up fabric, and returns true; false when a and b
 * talk over the scale-out fabric alone (the caller starts the flow):
 *   - same server, closed form (scaleup_fabric absent or "closed_form"):
 *     x->arrive_s at least now + cl_p2p_time(same node), no activity;
 *   - same server, simulated: a flow between the two NPUs' port hosts;
 *   - PXN (different servers and rails, cross_rail_pxn=1): the scale-up leg
 *     from a to the NPU of a's server on b's rail (closed form or a flow as
 *     above) and the network flow from that NPU to b, started together: NCCL
 *     cuts the message into chunks and pipelines them through the relay, so
 *     the two legs overlap and the slower one sets the time.
 * The network flow is transport_network_leg's (one or two NIC planes). */
bool transport_scaleup_part(transport *t, int a, int b, double bytes, transfer *x);

#endif
