/* reference_cluster.c -- see reference_cluster.h. */
#include "reference_cluster.h"

#include <string.h>

cl_cluster test_npu_cluster(int num_npus, int npus_per_node)
{
    cl_cluster c;
    memset(&c, 0, sizeof c);
    c.num_npus = num_npus;
    c.npus_per_node = npus_per_node;
    c.peak_flops = 313e12;
    c.matmul_efficiency = 0.7;
    c.hbm_bytes = 64e9;
    c.hbm_bandwidth_Bps = 1.6e12;
    c.scaleup_bandwidth_Bps = 196e9;
    c.scaleup_latency_s = 2e-6;
    c.scaleout_bandwidth_Bps = 25e9;
    c.scaleout_latency_s = 4e-6;
    c.kernel_launch_s = 10e-6;
    return c;
}
