/*
 * placement.h -- how a run's parallel ranks map to NPUs.
 *
 * A worker of the engine is (pipeline stage s, data-parallel replica d,
 * context-parallel rank c) and holds tp NPUs, TP rank r < tp.  Its TP rank r
 * sits on the NPU whose global rank (the number in its host name) is a
 * mixed-radix number of the four coordinates, digits ordered from the
 * fastest-varying to the slowest by the ORDER: the default "tp-cp-ep-dp-pp"
 * is Megatron-LM's (megatron/core/parallel_state.py, order "tp-cp-ep-dp-pp"):
 *   rank = r + tp·(c + cp·(d + dp·s)),
 * so a TP group fills consecutive NPUs of one server, then CP, then DP, and
 * pipeline stages are farthest apart.  Expert parallelism has no dimension
 * of its own here: an expert-parallel group is ep consecutive data-parallel
 * replicas (engine_collective.c), so "ep" may only be written just before
 * "dp" (as in Megatron's order), where it changes nothing.  Servers are
 * consecutive NPU ranks (server = rank / npus_per_node), so whatever the order,
 * two ranks share a server exactly when transport_same_server() says so.
 */
#ifndef SIM_PLACEMENT_H
#define SIM_PLACEMENT_H

#include <stdbool.h>

#include "np_error.h"

typedef enum placement_dim { PLACE_TP = 0, PLACE_CP, PLACE_DP, PLACE_PP, PLACE_DIMS } placement_dim;

typedef struct placement {
    placement_dim order[PLACE_DIMS]; /* fastest-varying first */
} placement;

#define PLACEMENT_DEFAULT "tp-cp-ep-dp-pp"

void placement_init(placement *p); /* Megatron's tp-cp-ep-dp-pp */

/* Parses an ORDER: tp, cp, dp and pp each once, separated by '-', fastest
 * first, with an optional "ep" just before "dp".  0, or NP_EXIT_USAGE with
 * the error naming `option` (e.g. "--placement"). */
int placement_parse(const char *text, const char *option, placement *p, np_error *err);

/* "tp-cp-dp-pp"-style name of p into buf. */
void placement_name(const placement *p, char *buf, int size);

/* The NPU rank of TP rank tp_rank of the worker (stage, replica, cp_rank),
 * sizes[PLACE_TP..PLACE_PP] = tp, cp, dp, pp. */
int placement_rank(const placement *p, const int sizes[PLACE_DIMS], int tp_rank, int cp_rank,
                   int replica, int stage);

/* The first TP group found in several servers (servers of npus_per_node
 * consecutive NPUs): its stage, replica and CP rank, and TP rank r on NPU
 * `rank` where TP rank 0 is on NPU `first`. */
typedef struct placement_split {
    int stage, replica, cp_rank, tp_rank, first, rank;
} placement_split;

/* Whether the order puts some TP group of at most a server's NPUs in
 * several servers (the first in *where, which may be NULL).  A group wider
 * than a server is in several whatever the order: false.  The cost model
 * prices TP collectives on the scale-out route in both cases
 * (cl_cluster.tp_across_servers for the first; simrun sets it), inside a
 * server otherwise.  sizes as for placement_rank. */
bool placement_tp_across_servers(const placement *p, const int sizes[PLACE_DIMS], int npus_per_node,
                                 placement_split *where);

/* Members per server of ring-flow's channels (collective.h, coll_ring_local)
 * for stage `stage`'s data-parallel group (the dp·cp workers, member d·cp + c,
 * by their TP rank 0's NPU): L > 1 when they come in runs of L per server,
 * else 1.  sizes as for placement_rank. */
int placement_dp_ring_local(const placement *p, const int sizes[PLACE_DIMS], int stage,
                            int npus_per_node);

#endif
