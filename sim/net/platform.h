/*
 * platform.h -- a loaded SimGrid platform seen as an NPU cluster.
 *
 * platform_load() loads the XML into SimGrid (simgrid_init must have run),
 * numbers the NPUs (rank = the number at the end of the host name, which
 * must run 0..N-1 without gaps), and fills a cl_cluster from the hosts'
 * speed and properties (see cluster.h for the property names) and from the
 * route between NPU 0 and the first NPU of the next node (the scale-out
 * bandwidth and latency).  Every problem is an np_error naming the file and
 * the property; nothing aborts on a malformed platform.
 */
#ifndef SIM_PLATFORM_H
#define SIM_PLATFORM_H

#include <simgrid/forward.h>
#include <stddef.h>

#include "cluster.h"
#include "np_error.h"

typedef struct sim_platform {
    cl_cluster cluster;
    int num_npus;
    sg_host_t *host_of_rank; /* [num_npus] */
    /* The fabric (platform_fabric.c, docs/platform-format.md): */
    int scaleup_simulated; /* scaleup_fabric="simulated": same-server transfers as flows */
    sg_host_t *scaleup_port_of_rank; /* [num_npus] port hosts sup-R, or NULL */
    int cross_rail_pxn; /* cross_rail_pxn=1: cross-rail traffic via the scale-up fabric first */
    /* Dual-plane NICs (nic_planes=2): NPU R's second port is the host pl1-R
     * on plane 1, an independent copy of plane 0's fabric (the NPU hosts'). */
    int nic_planes;                 /* 1 or 2 */
    int plane_policy;               /* nic_plane_policy: PLANE_SPLIT or PLANE_HASH */
    sg_host_t *plane1_port_of_rank; /* [num_npus] plane-1 port hosts pl1-R, or NULL */
    /* Why --fold-dp would not be exact here ("" where it is): a fabric that
     * is not a fat tree of per-NPU down-links (a torus, a dragonfly), a
     * rail-optimised one or a tapered one, where one replica's stage-to-stage
     * flows and another's collectives can meet on a link that binds
     * (engine_run refuses). */
    char fold_blocker[192];
    /* Set when the reader turned SimGrid's selective max-min update on (a
     * torus or dragonfly above SELECTIVE_UPDATE_MIN_HOSTS NPUs): the cluster,
     * for simrun's note; "" under the full solve. */
    char selective_update[64];
} sim_platform;

/* How a transfer between two NPUs of a dual-plane platform uses the planes
 * (docs/platform-format.md, Dual-plane): split in two halves, one per plane
 * (NCCL's channels over both ports), or whole on the plane a hash of a
 * and b picks (one queue pair on one port; transport.c). */
enum { PLANE_SPLIT = 0, PLANE_HASH = 1 };

/* What a platform may cost to build.  SimGrid builds about a million
 * elements (hosts, switches, links) in 7 s and 1.2 GB on a 2-core machine;
 * the default bound, PLATFORM_MAX_ELEMENTS, keeps a load near 15 s and
 * 2 GB.  A 16K-NPU 2-level fat tree is about 41 thousand. */
#define PLATFORM_MAX_ELEMENTS 2e6
typedef struct platform_limits {
    double max_elements; /* INFINITY: no bound (simrun --allow-large) */
    /* 1 (the default): how SimGrid re-solves its max-min system is chosen
     * by fabric (platform_internal.h), unless the platform's <config> sets
     * it; 0: left as configured (simrun's --cfg sets it). */
    int tune_solver;
} platform_limits;
void platform_init_limits(platform_limits *lim); /* the defaults above */

/* Checks the file before SimGrid sees it (a regular file, XML with a
 * versioned <platform>, within lim), then loads it with SimGrid's aborts
 * caught (platform_guarded), reads every host and link figure in range and
 * checks that every server can reach the others.  Returns 0 or
 * NP_EXIT_INPUT. */
int platform_load_with(const char *path, const platform_limits *lim, sim_platform *out,
                       np_error *err);
/* platform_load_with() with the default limits. */
int platform_load(const char *path, sim_platform *out, np_error *err);
void platform_free(sim_platform *p);

/* Runs fn(ctx) with SimGrid's aborts caught (SimGrid reports bad input by
 * aborting): 0 when fn returned, 1 when SimGrid aborted, with the first error
 * it logged in message.  After an abort SimGrid's state cannot be trusted:
 * the caller reports and exits. */
int platform_guarded(void (*fn)(void *ctx), void *ctx, char *message, size_t size);

#endif
