/*
 * cluster.h -- what the planners know of the hardware.
 *
 * sim/net/platform.c fills this from a loaded SimGrid platform (host speed, host
 * properties, the route between two servers); planner/ only reads it, so the
 * planners never see SimGrid.  All NPUs of a cluster are identical.
 *
 * Host properties of a platform (every <cluster> carries them as <prop>, which
 * SimGrid copies to each host); each one is required:
 *   hbm_bytes                 device memory capacity, bytes
 *   hbm_bandwidth_Bps         device memory bandwidth, bytes/s
 *   npus_per_node             NPUs in one server (scale-up domain)
 *   scaleup_bandwidth_Bps     per-NPU unidirectional scale-up bandwidth, bytes/s
 *   scaleup_latency_s         scale-up (HCCS / NVLink) latency, s
 *   matmul_efficiency         fraction of peak a large GEMM reaches, (0, 1]
 *   kernel_launch_s           fixed overhead per operator launch, s
 * The host `speed` is the peak dense FLOP/s in the training dtype.
 */
#ifndef CLUSTER_H
#define CLUSTER_H

typedef struct cl_cluster {
    char name[128]; /* platform file */
    int num_npus;
    int npus_per_node;
    double peak_flops;            /* per NPU, dense, training dtype */
    double matmul_efficiency;     /* (0, 1] */
    double hbm_bytes;             /* per NPU */
    double hbm_bandwidth_Bps;     /* per NPU */
    double scaleup_bandwidth_Bps; /* per NPU, one direction */
    double scaleup_latency_s;
    double
        scaleout_bandwidth_Bps; /* NIC bandwidth of one NPU (bottleneck of an inter-node route) */
    double scaleout_latency_s;  /* latency of an inter-node route */
    double kernel_launch_s;
    /* Up-link over down-link capacity of the most tapered fat-tree level:
     * 1 non-blocking, 0.25 a 4:1 taper; 1 when the fabric is not a fat tree. */
    double fabric_taper;
} cl_cluster;

/* Point-to-point time of `bytes` between two NPUs, alpha-beta, on the
 * scale-up fabric (same node) or the scale-out fabric. */
double cl_p2p_time(const cl_cluster *c, double bytes, int same_node);

#endif
