/*
 * engine_estimate_internal.h -- what engine_estimate.c and
 * engine_estimate_net.c share.  Not a public interface.
 */
#ifndef SIM_ENGINE_ESTIMATE_INTERNAL_H
#define SIM_ENGINE_ESTIMATE_INTERNAL_H

#include "engine_internal.h"

/* A plan read from a file is estimated before anything checks it against the
 * platform: beyond these sizes the per-rank sums are sampled, so that
 * an absurd TP or DP cannot make the estimate itself slow. */
#define MAX_EXACT_TP 4096
#define MAX_EXACT_REPLICAS 4096
#define MAX_EXACT_PARTNERS 64

/* What the transport posts for one rank's part of a transfer
 * (transport_start, transport_scaleup_part, transport_network_leg), read
 * from the platform: a network leg is one flow, or two on a dual-plane
 * platform whose policy splits every leg over both planes (a hashed leg is
 * one flow on one plane); a same-server part is a flow between scale-up
 * ports when the scale-up fabric is simulated, else part of the one sleep
 * that waits for the closed-form time; with PXN a cross-rail part is a
 * scale-up leg to the relay on the destination's rail and a network leg. */
typedef struct est_fabric {
    int per_node;       /* npus_per_node, at least 1 */
    int legs;           /* flows per network leg: 1 or 2 (dual-plane, split) */
    bool scaleup_flows; /* scaleup_fabric="simulated" */
    bool pxn;           /* cross_rail_pxn=1 */
    placement order;    /* engine_options.placement */
    bool tp_fold;       /* the exact TP fold: rank 0's flows only (engine_symmetry.c) */
} est_fabric;

/* The fabric of c, with pf's planes, scale-up and PXN (pf NULL: one plane,
 * a closed-form scale-up, no PXN), the ranks in o's placement. */
est_fabric est_fabric_of(const cl_cluster *c, const sim_platform *pf, const engine_options *o);

/* The activities of a transfer from worker (stage sa, replica d) to worker
 * (sb, e): its flows, and one sleep when some part waits for the
 * closed-form scale-up time. */
double est_transfer_cost(const est_fabric *f, const plan *pl, int sa, int d, int sb, int e);

/* The activities of one gradient collective (kind, algorithm a) among the
 * replicas of stage s, over all its members. */
double est_stage_collective(const est_fabric *f, const plan *pl, const engine_options *o,
                            coll_algorithm a, coll_kind kind, int s);

#endif
