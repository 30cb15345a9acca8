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
} sim_platform;

/* Checks the file before SimGrid sees it (exists, is a regular file), then
 * loads it with SimGrid's aborts caught (platform_guarded) and checks that
 * every server can reach the others.  Returns 0 or NP_EXIT_INPUT. */
int platform_load(const char *path, sim_platform *out, np_error *err);
void platform_free(sim_platform *p);

/* Runs fn(ctx) with SimGrid's aborts caught (SimGrid reports bad input by
 * aborting): 0 when fn returned, 1 when SimGrid aborted, with the first error
 * it logged in message.  After an abort SimGrid's state cannot be trusted:
 * the caller reports and exits. */
int platform_guarded(void (*fn)(void *ctx), void *ctx, char *message, size_t size);

#endif
