/* cluster.c -- alpha-beta estimates on a cl_cluster (see cluster.h). */
#include "cluster.h"

double cl_p2p_time(const cl_cluster *c, double bytes, int same_node)
{
    if (same_node)
        return c->scaleup_latency_s + bytes / c->scaleup_bandwidth_Bps;
    return c->scaleout_latency_s + bytes / c->scaleout_bandwidth_Bps;
}
