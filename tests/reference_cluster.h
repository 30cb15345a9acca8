/*
 * reference_cluster.h -- the 910B-class NPU cluster the unit tests and the
 * fuzz targets price models on (the figures of platforms/16k_npu.xml), for
 * code that needs a cluster without loading a platform into SimGrid.
 */
#ifndef REFERENCE_CLUSTER_H
#define REFERENCE_CLUSTER_H

#include "cluster.h"

/* The Ascend 910B-class NPU of platforms/16k_npu.xml and test_8npu.xml
 * (gen_platform.py): 313 TFLOPS dense at 70%, 64 GB of HBM at 1.6 TB/s,
 * HCCS 196 GB/s and 2 us within a server, a 25 GB/s NIC and a 4 us route
 * across, 10 us kernel launch.
 * num_npus NPUs, npus_per_node per server. */
cl_cluster test_npu_cluster(int num_npus, int npus_per_node);

#endif
