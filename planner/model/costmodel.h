/*
 * costmodel.h -- per-layer time and memory of a model on one NPU.
 *
 * The cost model turns (workload, cluster, micro-batch size) into a flat array
 * of "layers" in model order, each with its forward / input-gradient /
 * weight-gradient time, its tensor-parallel collective time, its activation
 * bytes under each recompute option and its weight+gradient+optimizer bytes.
 * Planners partition this array; schedule generators turn it into op
 * durations; the simulator never sees it.
 *
 * For a Transformer the array is
 *   [0]        embedding (word + position), pinned to the first stage
 *   [1 .. L]   decoder layers
 *   [L+1]      final norm, LM head and loss, pinned to the last stage
 * For a layer-by-layer model (workload model.layers) it is the listed layers.
 *
 * All quantities are per NPU (one TP rank) and per micro-batch of
 * cm_model.micro_batch_size samples.  Times follow the roofline
 *   t = max(FLOPs / (peak · efficiency), bytes / HBM bandwidth) + launch
 * per operator; matmuls use the cluster's matmul efficiency (or its
 * efficiency by GEMM shape), FlashAttention its attention efficiency.  Sources of each
 * formula are cited in costmodel.c and the costmodel_*.c files beside it
 * (costmodel_internal.h lists them).
 */
#ifndef COSTMODEL_H
#define COSTMODEL_H

#include <stdbool.h>

#include "cluster.h"
#include "np_error.h"
#include "workload.h"

typedef enum cm_layer_kind { CM_EMBEDDING = 0, CM_DECODER, CM_LM_HEAD, CM_CUSTOM } cm_layer_kind;

/* A recomputable unit of a layer (AdaPipe's granularity): QKV projection,
 * core attention, output projection, LayerNorms, FC1, activation, FC2,
 * dropout.  The layer input is always kept and is not a unit. */
typedef struct cm_unit {
    char name[24];
    double forward_s;        /* time to recompute this unit */
    double activation_bytes; /* bytes it keeps for backward when not recomputed */
} cm_unit;

#define CM_MAX_UNITS 16 /* 10 of a decoder layer, 5 more in an MoE layer */

/* Context parallelism (costmodel_cp.c): one pass's ring exchange of K/V
 * chunks between the c ranks of a CP group, overlapped with the attention
 * steps it feeds.  Per NPU (one TP rank of one CP rank), per micro-batch. */
typedef struct cm_cp_exchange {
    double bytes;     /* sent to the ring successor over the pass: steps × one message */
    double overlap_s; /* attention compute the messages overlap: steps × one step */
    double exposed_s; /* closed form: steps × max(0, α + message/B − step) */
    int steps;        /* messages in sequence: c − 1 per forward and per backward */
} cm_cp_exchange;

/* The MoE part of a decoder layer on one NPU, per micro-batch, at a
 * balanced routing (every expert gets tokens·k/E); costmodel_moe.c has the
 * formulas.  Token counts are token-expert assignments. */
/* The AdaPipe units an MoE layer adds, in this order from
 * cm_moe_cost.first_unit (costmodel_moe.c). */
enum {
    CM_MOE_UNIT_ROUTER_PROBS,
    CM_MOE_UNIT_EXPERT_INPUT, /* recomputing it re-runs the dispatch */
    CM_MOE_UNIT_FC1_OUTPUT,
    CM_MOE_UNIT_ACT_OUTPUT,
    CM_MOE_UNIT_COMBINE_INPUT /* recomputing it re-runs FC2 and the combine */
};

typedef struct cm_moe_cost {
    int is_moe;              /* 1 in an MoE layer */
    double routed_tokens;    /* tokens this NPU routes (n/t with SP) */
    double expert_tokens;    /* assignments its local experts compute, padding included */
    double padding_tokens;   /* of expert_tokens, padding up to the capacity */
    double dropped_tokens;   /* assignments to its experts dropped over the capacity */
    double capacity;         /* per expert and source rank, 0: no limit */
    double a2a_bytes;        /* one dispatch or combine: this NPU's send buffer */
    double a2a_s;            /* its closed form (the run's algorithm, idle fabric) */
    double etp_gather_s;     /* all-gather (or reduce-scatter) over the expert-TP group */
    double expert_forward_s; /* the expert GEMMs and activation at expert_tokens */
    double expert_fc1_s, expert_act_s, expert_fc2_s; /* its three parts */
    double expert_backward_s, expert_weight_grad_s;
    int first_unit;           /* units[first_unit + CM_MOE_UNIT_*]: the MoE layer's units */
    double expert_params;     /* parameters of this NPU's experts */
    double expert_grad_bytes; /* reduced over the expert-data-parallel group */
} cm_moe_cost;

/* Bytes per parameter of the training state, from the workload's dtypes
 * (cm_precision_of): what every replica keeps, R = weight + grad, and what
 * the distributed optimizer shards, S = main_param + main_grad + exp_avg +
 * exp_avg_sq.  Megatron-LM's defaults: bf16 2 + 4 | 4 + 0 + 4 + 4 (R 6,
 * S 12); fp16 2 + 2 | 4 + 4 + 4 + 4 (the optimizer's fp32 copy of the fp16
 * gradient; R 4, S 16); fp32 4 + 4 | 0 + 0 + 4 + 4 (the weight is its own
 * master; R 8, S 8).  grad_reduce_in_bf16 or main_grads_dtype bf16 make the
 * gradient 2; the precision-aware optimizer's dtypes set the moments (fp8:
 * 1) and the master (fp16 2; an fp32 master of a bf16 weight kept as its
 * 16-bit remainder, store_param_remainders: 2, `remainders`).  Not counted:
 * the fp32 copy of a bf16 gradient shard that the optimizer step makes
 * without the precision-aware optimizer (it lives between the step and the
 * next iteration's zero_grad, outside the activations' peak). */
typedef struct cm_model cm_model;

typedef struct cm_precision {
    double weight, grad;
    double main_param, main_grad, exp_avg, exp_avg_sq;
    bool remainders;
    /* Bytes per parameter of the parameter all-gathers (the distributed
     * optimizer's, ZeRO-3's): 1 with fp8_param_gather; 0 means weight. */
    double gather;
} cm_precision;

void cm_precision_of(const wl_training *t, cm_precision *out);
/* Megatron's defaults for a parameter dtype (no other key set). */
cm_precision cm_dtype_precision(wl_dtype d);
/* The model's precision; a model built by hand (weight 0) reads as
 * Megatron's bf16 default. */
cm_precision cm_model_precision(const cm_model *m);
/* Bytes per parameter a parameter all-gather moves (cm_precision.gather),
 * of a precision and of a model (a hand-built one: its weight bytes). */
double cm_gather_bytes(const cm_precision *p);
double cm_model_gather_bytes(const cm_model *m);
/* R and S above. */
double cm_replicated_bytes(const cm_precision *p);
double cm_sharded_bytes(const cm_precision *p);

typedef struct cm_layer {
    char name[48];
    cm_layer_kind kind;
    double forward_s;     /* compute of the forward pass */
    double backward_s;    /* input-gradient pass (B) */
    double weight_grad_s; /* weight-gradient pass (W) */
    double tp_forward_s;  /* TP collectives in forward (all-reduce, or AG+RS with SP) */
    double tp_backward_s; /* TP collectives in backward */
    double tp_bytes;      /* payload of one forward TP collective per NPU */
    /* Extra forward work executed before the backward, and activation bytes kept
     * between forward and backward, under each recompute option. */
    double recompute_s[RECOMPUTE_COUNT];
    double activation_bytes[RECOMPUTE_COUNT];
    double params;      /* parameters held by one NPU (after the TP split) */
    double state_bytes; /* weights + gradients + optimizer state on one NPU */
    /* Of state_bytes, FP8 training's cached FP8 weights and their transposes
     * (costmodel_fp8.c), counted as weights; 0 without FP8. */
    double fp8_weight_cache_bytes;
    double grad_bytes;    /* gradient bytes reduced over data parallelism per NPU */
    double forward_flops; /* model FLOPs of the forward pass on one NPU (for MFU) */
    double output_bytes;  /* tensor sent to the next stage by one TP rank */
    /* Time the receiving stage spends all-gathering this output (or its
     * gradient) over its TP group: Megatron's scatter/gather p2p without SP,
     * where each rank sends 1/t of it; 0 otherwise. */
    double recv_gather_s;
    int num_units;
    cm_unit units[CM_MAX_UNITS];
    /* Context parallelism: the K/V exchange of the forward (also re-run by a
     * recompute of the attention core) and of the backward (K/V and their
     * gradients); all zero without it.  cm_forward_total_s() and
     * cm_backward_total_s() include their exposed_s. */
    cm_cp_exchange cp_forward, cp_backward;
    /* Sharded data parallelism (costmodel_sharding.c), per micro-batch:
     * ZeRO-3 all-gathers zero_gather_bytes of parameters (the all-gather's
     * output) before the forward and again before the backward; ZeRO-2 and
     * ZeRO-3 reduce-scatter zero_reduce_bytes of gradients after the
     * backward.  zero_forward_s and zero_backward_s are their closed-form
     * ring times over the data-parallel (× CP) group, which the totals
     * include; all zero otherwise. */
    double zero_gather_bytes, zero_reduce_bytes;
    double zero_forward_s, zero_backward_s;
    /* Mixture of experts (costmodel_moe.c): what the MoE part of the layer
     * costs at a balanced load; all zero in a dense layer. */
    cm_moe_cost moe;
} cm_layer;

typedef struct cm_model {
    int num_layers;
    cm_layer *layers;
    int micro_batch_size;
    int tensor_parallel;
    /* Replicas the gradients are reduced over and the optimizer state is
     * sharded over: data parallel × context parallel (Megatron's
     * data-parallel group with context parallelism). */
    int data_parallel;
    int context_parallel; /* c: ranks sharing one sequence; 0 or 1 means none */
    int sharding;         /* a wl_dp_sharding; 0 = no_shard (synthetic models) */
    bool sequence_parallel;
    bool distributed_optimizer;
    /* model.overlap_moe_expert_parallel_comm (combined 1F1B): interleaved
     * 1F1B warms up with one forward more, as Megatron-Core's does, so that
     * every steady-state forward pairs with a backward of another
     * micro-batch (sim/engine/engine_moe_overlap.c) */
    bool moe_overlap;
    /* training.overlap_p2p_comm: the interleaved steady state's sends do
     * not hold their stage (schedule_1f1b.c marks them, the predictions drop
     * them from the steady state); cm_async_p2p() says where it applies */
    bool overlap_p2p;
    /* ZeRO-2/3's per-pass collectives overlap compute (simrun --dp-overlap,
     * set by the caller after cm_build(); sim/engine/engine_overlap.c): the
     * memory model reserves their in-flight buffers, the prediction prices
     * them on a stream of their own (planner/search/predict.c). */
    bool zero_overlap;
    /* With it, simrun's --dp-bucket-bytes (0: Megatron's default bucket of
     * max(40M, 1M·dp) 4-byte gradients): ZeRO-2's gather of the update runs
     * in buckets of a quarter as many parameters (predict.c). */
    double dp_bucket_bytes;
    double workspace_bytes;        /* reserved per NPU: framework, allocator slack, comm buffers */
    double hbm_bytes;              /* capacity per NPU (copied from the cluster) */
    double hbm_bandwidth_Bps;      /* the cluster's achieved one (cm_hbm_bandwidth_Bps), for
                                    * cm_optimizer_step_s() */
    double kernel_launch_s;        /* copied from the cluster, for cm_optimizer_step_s() */
    double weight_bytes_per_param; /* one weight copy (PipeDream's stashed versions) */
    cm_precision precision;        /* every byte per parameter of the state */
    double optimizer_bytes_per_param; /* HBM traffic of one Adam update per parameter */
    /* What cm_layer_at_batch() re-prices a layer from: shallow copies of the
     * workload (its layer_specs stay the caller's and must outlive the model)
     * and of the cluster.  has_source is false for a synthetic model, which
     * is then scaled linearly in b. */
    bool has_source;
    wl_workload source;
    cl_cluster cluster;
} cm_model;

/* Whether a plan of `chunks` virtual chunks per stage runs overlap_p2p_comm's
 * asynchronous steady-state sends: only interleaved plans (v > 1), the only
 * ones Megatron applies the key to. */
static inline bool cm_async_p2p(const cm_model *m, int chunks)
{
    return m->overlap_p2p && chunks > 1;
}

/* Builds the cost model for micro-batch size b (b <= 0: the workload's
 * training.micro_batch_size). Returns 0 or an np_exit_code. */
int cm_build(const wl_workload *w, const cl_cluster *c, int micro_batch_size, cm_model *out,
             np_error *err);
void cm_free(cm_model *m);

/* The SHA-256 (hex) of what a plan's prediction is priced from: every
 * layer's times, bytes and parameters, the model's sizes and options, and
 * the cluster's device and network figures, to 12 significant digits (so
 * that builds that round the last bits differently agree).  Two
 * models with the same fingerprint price every plan alike; a saved plan
 * keeps the fingerprint it was priced with (plan_json.h). */
void cm_fingerprint(const cm_model *m, char hex[65]);

/* Forward time of layer l including its TP collectives. */
double cm_forward_total_s(const cm_layer *l);
/* Backward (B + W) time including recompute under option r and TP collectives. */
double cm_backward_total_s(const cm_layer *l, recompute_kind r);
/* Layer `layer` as it runs on a micro-batch of b samples (CSIMD's nonlinear
 * t(b)): the same formulas cm_build() uses, evaluated at b -- the roofline per
 * operator, or the layer's profiled time table interpolated at b -- so fixed
 * costs (launches, weight reads) do not scale with b; activation and output
 * bytes are linear in b.  At b = m->micro_batch_size it equals m->layers[layer].
 * A model without a workload is scaled linearly from its layers.  Returns 0,
 * or -1 when layer is out of range or b <= 0. */
int cm_layer_at_batch(const cm_model *m, int layer, double b, cm_layer *out);
/* Optimizer step time for the parameters of layers [first, last) on one NPU
 * (memory-bound Adam over the state, cm_optimizer_bytes_per_param(), at
 * m->hbm_bandwidth_Bps). */
double cm_optimizer_step_s(const cm_model *m, int first, int last);

/* Korthikanti et al. 2022 (Reducing Activation Recomputation in Large
 * Transformer Models, Table 2): activation bytes per layer per micro-batch on
 * one TP rank, s = sequence, b = micro-batch, h = hidden, a = heads, t = TP. */
double cm_korthikanti_activation_bytes(double s, double b, double h, double a, int t,
                                       bool sequence_parallel, recompute_kind r);

/* Building blocks, exposed for planners and tests. */
/* Roofline time of one operator: max(flops/(peak·efficiency), bytes/HBM bw)
 * + launch, the HBM bandwidth the achieved one (cm_hbm_bandwidth_Bps). */
double cm_roofline_s(const cl_cluster *c, double flops, double bytes, double efficiency);
/* The same roofline against another peak (FP8 GEMMs: the cluster's fp8_peak_flops). */
double cm_roofline_at_peak_s(const cl_cluster *c, double peak_flops, double flops, double bytes,
                             double efficiency);
/* Ring all-reduce of `bytes` over `ranks` NPUs: 2(N−1)(α + S/(N·B)) on the
 * scale-up fabric (scale-out when the group is wider than a node). */
double cm_ring_allreduce_s(const cl_cluster *c, int ranks, double bytes);
/* Ring all-gather or reduce-scatter of a `bytes` tensor: half an all-reduce
 * (0 for one rank or nothing to move, as the engine posts nothing).
 * On the scale-up fabric B is the link bandwidth times the platform's
 * collective_bus_efficiency (1 when not given). */
double cm_ring_allgather_s(const cl_cluster *c, int ranks, double bytes);
/* One crossing of layer ly's output to the next stage, as the planners price
 * a cut: the p2p send of output_bytes plus the receiver's all-gather
 * (recv_gather_s, scatter/gather p2p). */
double cm_boundary_s(const cl_cluster *c, const cm_layer *ly, int same_node);
/* Efficiencies (costmodel_efficiency.c), each the platform's optional
 * property or its default (cluster.h): a GEMM [m×k]·[k×n] by its smallest
 * dimension (gemm_efficiency_table, else matmul_efficiency); the table alone
 * at a smallest dimension; the fused attention kernel; the bus efficiency
 * of ring collectives on the scale-up fabric; the HBM bandwidth a
 * memory-bound kernel achieves (hbm_bandwidth_Bps · hbm_efficiency). */
double cm_gemm_efficiency(const cl_cluster *c, double m, double k, double n);
double cm_gemm_table_efficiency(const cl_cluster *c, double min_dim);
double cm_attention_efficiency(const cl_cluster *c);
double cm_bus_efficiency(const cl_cluster *c);
double cm_hbm_bandwidth_Bps(const cl_cluster *c);
/* Weights + gradients + optimizer state per parameter, R + S or with the
 * distributed optimizer R + S/dp (cm_precision; Megatron-LM's
 * distributed-optimizer table: bf16 18 or 6 + 12/dp, fp16 20 or 4 + 16/dp,
 * fp32 16 or 8 + 8/dp). */
double cm_state_bytes_per_param(const cm_precision *p, bool distributed_optimizer, int dp);
/* The same for every data-parallel sharding strategy over `shards` replicas
 * (costmodel_sharding.c): with R the replicated and S the sharded bytes of
 * the table above and D the weight's, no_shard R + S, optim R + S/n,
 * optim_grads D + (R − D + S)/n, optim_grads_params (R + S)/n; bf16: 18,
 * 6 + 12/n, 2 + 16/n, 18/n. */
double cm_sharded_state_bytes_per_param(const cm_precision *p, wl_dp_sharding s, int shards);
/* What cm_forward_total_s() and cm_backward_total_s() add to a layer's
 * compute and TP time: the exposed context-parallel exchange and the
 * sharded data-parallel collectives of the pass. */
double cm_forward_extra_s(const cm_layer *l);
double cm_backward_extra_s(const cm_layer *l);
/* Megatron's DDP bucket in bytes of the model's gradients (4 or 2 bytes
 * each, cm_model_precision): `given` when positive (--dp-bucket-bytes),
 * else max(40M, 1M·dp) parameters (distributed_data_parallel_config.py);
 * and the buckets of `params` parameters (ZeRO-2's gather of the update is
 * cut the same way). */
double cm_dp_bucket_bytes(const cm_model *m, double given, int dp);
/* The order a chunk's dense and expert gradient buckets are handed over in
 * (a MoE model's experts reduced apart), each kind's buckets spread evenly
 * over the op: whether the next one, after jd of nd dense and je of ne
 * expert ones, is an expert one.  The engine reduces them in this order and
 * the planners' prediction follows it. */
bool cm_dp_expert_bucket_next(int jd, int nd, int je, int ne);
/* Whether ZeRO-2/3's collectives run overlapped (zero_overlap: simrun
 * --dp-overlap) and move anything (sharded over at least 2 replicas). */
bool cm_zero_overlapped(const cm_model *cm);
double cm_dp_param_buckets(const cm_model *m, double params, double bucket_bytes);

/* The engine's ring-flow among `ranks` replicas of one TP rank, tp NPUs
 * apart, `halves` = 1 (all-gather, reduce-scatter) or 2 (all-reduce): on the
 * scale-up fabric when tp·ranks NPUs fit in a server (bus efficiency as in
 * cm_ring_allgather_s); across servers one ring at the NIC's pace, or, when
 * a server holds local = npus_per_node/tp ≥ 2 of them (tp dividing it and
 * local dividing ranks), local channels: the slower of 1/local of the
 * ring's 2(N−1)/N·S (halves = 2) on the NIC and the rest on the scale-up
 * fabric, then 2N−3 steps at the channel ring's mean edge latency,
 * ((local − 1)·α_u + α)/local (sim/net/collective_ring.c).  The
 * planners' view of data-parallel collectives (predict.h). */
double cm_dp_ring_s(const cl_cluster *c, int tp, int ranks, double bytes, int halves);
double cm_dp_ring_allgather_s(const cl_cluster *c, int tp, int ranks, double bytes);
/* HBM bytes moved per parameter by one Adam step: read the gradient, read
 * and write the master weight and both moments, write the weight (and read
 * it too where it is the master or carries the master's high half). */
double cm_optimizer_bytes_per_param(const cm_precision *p);
/* Piecewise-linear interpolation of a table (xs increasing) at q,
 * extrapolated from the end segments, clamped at 0. */
double cm_interpolate(const double *xs, const double *ys, int count, double q);

#endif
