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
 *
 * Optional host properties: each has a default equal to the model without
 * it, so a platform that does not give it prices everything as before
 * (docs/platform-format.md, "Optional host properties"):
 *   gemm_efficiency_table     "d1:e1,d2:e2,...": a GEMM whose smallest
 *                             dimension is d runs at efficiency e,
 *                             piecewise-linear in log(d) between points and
 *                             constant beyond the ends; default: none, every
 *                             GEMM at matmul_efficiency
 *   attention_efficiency      fraction of peak of the fused attention kernel
 *                             (FlashAttention), (0, 1]; default
 *                             matmul_efficiency
 *   elementwise_fusion        0 or 1: dropout and residual add in one memory
 *                             pass (Megatron's bias-dropout-add fusion);
 *                             default 0
 *   collective_bus_efficiency achieved bus bandwidth / link bandwidth of a
 *                             ring collective on the scale-up fabric, (0, 1];
 *                             default 1
 *   hbm_efficiency            achieved / peak device-memory bandwidth of a
 *                             memory-bound kernel (elementwise, norm,
 *                             softmax, the optimizer step), (0, 1]; default 1
 *   fp8_flops                 dense FP8 Tensor Core peak FLOP/s per NPU, for
 *                             workloads with training.fp8_format; default
 *                             none: such a workload is refused
 * A cluster built by hand (tests) leaves them 0, which means the same
 * defaults.
 */
#ifndef CLUSTER_H
#define CLUSTER_H

#include <stddef.h>

/* Points of a gemm_efficiency_table. */
#define CL_GEMM_TABLE_MAX 16

/* An all-to-all's algorithm, for its closed form (sim/net/collective.h runs
 * the same three as flows). */
typedef enum cl_alltoall {
    CL_A2A_CONCURRENT, /* every block at once (NCCL's grouped send/recv) */
    CL_A2A_PAIRWISE,   /* N−1 lockstep steps */
    CL_A2A_BRUCK,      /* ⌈log2 N⌉ steps */
} cl_alltoall;

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
    /* Optional properties (above); 0 / empty: their default. */
    int gemm_table_points;
    double gemm_table_min_dim[CL_GEMM_TABLE_MAX];    /* strictly increasing, >= 1 */
    double gemm_table_efficiency[CL_GEMM_TABLE_MAX]; /* (0, 1] */
    double attention_efficiency;                     /* 0: matmul_efficiency */
    int elementwise_fusion;                          /* 0 or 1 */
    double collective_bus_efficiency;                /* 0: 1 */
    double hbm_efficiency;                           /* 0: 1 */
    double fp8_peak_flops;                           /* 0: no FP8 */
    /* Not a platform property: set (simrun) when the run's rank order puts
     * the NPUs of a TP group in different servers (sim/net/placement.h), so
     * the cost model prices its TP collectives on the scale-out route. */
    int tp_across_servers;
    /* Not a platform property either: the channels the engine's
     * data-parallel ring runs with at TP dp_ring_tp (simrun sets both from
     * the run's rank order and --dp-algorithm: 1 for the step ring, else the
     * replicas per server of ring-flow, collective.h); cm_dp_ring_s() uses
     * it at that TP.  0: npus_per_node/tp, Megatron's order with ring-flow. */
    int dp_ring_local, dp_ring_tp;
    /* Not a platform property either: the expert-parallel all-to-all's
     * algorithm, which prices its closed form (simrun sets it from
     * --ep-alltoall-algorithm; costmodel_moe.c).  0 is the replay's
     * default, concurrent. */
    cl_alltoall ep_alltoall;
} cl_cluster;

/* Bruck's all-to-all, step k of ⌈log2 n⌉: the blocks it carries, those
 * whose index in 0..n−1 has bit k set, ⌊n/2^(k+1)⌋·2^k + max(0, n mod
 * 2^(k+1) − 2^k) (sim/net/collective_alltoall.c runs it). */
long cl_bruck_blocks(int n, int k);

/* Point-to-point time of `bytes` between two NPUs, alpha-beta, on the
 * scale-up fabric (same node) or the scale-out fabric. */
double cl_p2p_time(const cl_cluster *c, double bytes, int same_node);

/* Parses a gemm_efficiency_table ("128:0.35,512:0.6,...", spaces allowed
 * around the numbers) into c's table.  Dimensions must be finite, at least 1
 * and strictly increasing, efficiencies in (0, 1], at most CL_GEMM_TABLE_MAX
 * points.  Returns 0, or -1 with why[] saying what is wrong (c unchanged). */
int cl_gemm_table_parse(const char *text, cl_cluster *c, char *why, size_t why_size);

#endif
