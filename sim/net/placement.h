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

/* Whether every TP group sits in one server (servers of npus_per_node
 * consecutive NPUs): 0, or NP_EXIT_USAGE with the error naming `option`
 * and the first group found across servers.  The cost model prices TP
 * collectives on the scale-up fabric when tp ≤ npus_per_node (it does not
 * know the placement), so an order that spreads such a group over servers
 * would be priced as if it were inside one; a group wider than a server is
 * priced on the scale-out route whatever the order, and is accepted.
 * sizes as for placement_rank. */
int placement_check_tp(const placement *p, const int sizes[PLACE_DIMS], int npus_per_node,
                       const char *option, np_error *err);

#endif
