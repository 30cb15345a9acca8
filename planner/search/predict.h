/*
 * predict.h -- the iteration time a planner predicts for a one-chunk plan.
 *
 * Megatron, TensorOpt (ft), PipeDream, AdaPipe and Merak all state the same
 * prediction, the 1F1B critical path (Narayanan et al. SC'21 §2.2;
 * docs/planners.md, BMPipe's preparation time plus (m−1)·τ, τ ≥ F + B + 2c):
 *   T   = Σ_s S'_s + (m − 1)·max_s S_s + max_s (AR_s + O_s),
 *   S_s = Σ_{l in s} (F_l + B_l + W_l + TP collectives_l + recompute_l
 *         + exposed CP exchange_l + ZeRO-2/3 collectives_l) + 2·c_s + g_s,
 * S'_s = S_s, or S_s without its recompute when the plan shifts it (Merak's
 * shifted critical path: the warm-up and cool-down micro-batches skip it),
 * and without ZeRO-2/3's blocking reduce-scatters, which the engine runs
 * after the backward's send (predict_zero_chain_less_s()),
 * c_s the send of stage s's output to stage s + 1 (none after the last),
 * g_s the TP all-gathers stage s runs on what it receives when boundary
 * tensors are scattered (scatter/gather p2p without SP: the activation from
 * s − 1 and the gradient from s + 1, cm_layer.recv_gather_s; 0 otherwise),
 * AR_s the ring all-reduce of the stage's gradients over the d data-parallel
 * replicas and O_s its optimizer step.  With ZeRO-2/3's collectives
 * overlapped (predict_zero_stream_s()) S_s leaves them out, max_s S_s is
 * over max(S_s, their stream's time), the tail adds the last reduce-scatter
 * and stage 0's first ZeRO-3 gather is added to the sum; ZeRO-2's gather of
 * the update leaves AR_s, and what the first forwards do not hide of it at
 * the iteration's start is added to the sum
 * (predict_zero_update_exposed_s()).  Recompute is what
 * plan_layer_recompute() charges, per layer or per unit (AdaPipe).
 *
 * The planners differ in one assumption only, where a stage's neighbour sits
 * (predict_sends): PipeDream, AdaPipe and Merak put pipeline neighbours on
 * different servers (their partitioning searches price cuts the same way);
 * Megatron and TensorOpt follow Megatron's tp-dp-pp rank order.
 *
 * BMPipe's ILP objective (no all-reduce term, interleaved chunks) and CSIMD's
 * GPipe makespan are other formulas and stay with those planners.
 */
#ifndef PREDICT_H
#define PREDICT_H

#include <stdbool.h>

#include "cluster.h"
#include "costmodel.h"
#include "plan.h"

typedef enum predict_sends {
    /* Always over the scale-out fabric, latency included even for an empty
     * tensor: one server holds one TP group, so neighbours are servers apart. */
    PREDICT_SENDS_SCALEOUT,
    /* Scale-up when both ends of every TP rank's transfer share a server under
     * Megatron's tp-dp-pp rank order (predict_boundary_same_node()), else
     * scale-out; nothing to send, no time. */
    PREDICT_SENDS_RANK_ORDER,
} predict_sends;

/* Megatron's rank order is tp-dp-pp: stage s holds ranks [δs, δ(s+1)),
 * δ = tp·dp, and its rank x sends to x + δ.  True when every such pair of
 * stages s and s + 1 shares a server. */
bool predict_boundary_same_node(const cl_cluster *c, int tp, int dp, int s);

/* c_k: one send of chunk k's output to chunk k + 1, from stage k mod p to
 * (k + 1) mod p (a plan of p·v chunks; the last stage's chunk feeds stage
 * 0's next one).  c needed. */
double predict_chunk_boundary_s(const cm_model *cm, const cl_cluster *c, const plan *pl, int k,
                                predict_sends sends);

/* c_s: one send of stage s's output to stage s + 1; 0 for the last stage
 * and without a cluster. */
double predict_boundary_s(const cm_model *cm, const cl_cluster *c, const plan *pl, int s,
                          predict_sends sends);

/* 2·c_s + g_s: stage s's two boundary sends and the all-gathers of what it
 * receives (one-chunk plans). */
double predict_stage_comm_s(const cm_model *cm, const cl_cluster *c, const plan *pl, int s,
                            predict_sends sends);

/* F + B + W + TP collectives of layer l, plus the recompute the plan asks of
 * it unless skip_recompute. */
double predict_layer_s(const cm_model *cm, const plan *pl, int l, bool skip_recompute);

/* ZeRO-2/3 with their collectives overlapped (cm_model.zero_overlap,
 * simrun --dp-overlap; sim/engine/engine_overlap.c), the layers [first,
 * last) per micro-batch: PREDICT_ZERO_ALL the time of their collectives'
 * stream (ZeRO-3's two gathers and the reduce-scatter), which bounds the
 * stage's steady state from below as max(S_s, that); PREDICT_ZERO_GATHER one
 * gather (stage 0's first is exposed); PREDICT_ZERO_REDUCE the
 * reduce-scatter (the last is exposed, in the tail).  predict_layer_s() then
 * leaves them out.  0 without the overlap. */
enum { PREDICT_ZERO_ALL, PREDICT_ZERO_GATHER, PREDICT_ZERO_REDUCE };
double predict_zero_stream_s(const cm_model *cm, int first, int last, int what);

/* ZeRO-2/3 (cm_model.sharding at least optim_grads over two or more
 * replicas), the layers [first, last): the reduce-scatter of their
 * gradients per micro-batch, blocking or overlapped; 0 without sharding.
 * The engine runs it after the backward's send (sched_parallel_finish()),
 * so the last one is in the stage's tail. */
double predict_zero_reduce_s(const cm_model *cm, int first, int last);

/* What the pipeline's fill and drain do not wait for of S_s: the blocking
 * reduce-scatters of predict_zero_reduce_s() (each after its backward's
 * send, it holds the stage but not the gradient on its way upstream); 0
 * when overlapped (predict_layer_s() leaves them out already) or without
 * sharding.  Σ_s S'_s is less this. */
double predict_zero_chain_less_s(const cm_model *cm, int first, int last);

/* Ring all-reduce of grad_bytes over dp data-parallel replicas,
 * 2(d−1)(α + S/(d·B)), on the scale-up fabric when the replicas of one TP
 * rank (tp ranks apart) share a server.  0 for dp ≤ 1 or without a cluster. */
double predict_dp_allreduce_s(const cl_cluster *c, int tp, int dp, double grad_bytes);

/* AR_s: the gradient sync at the end of the iteration of the layers
 * [first, last) of grad_bytes, over the dp·cp replicas of Megatron's
 * data-parallel group with context parallelism: the ring all-reduce of
 * predict_dp_allreduce_s() with no_shard, with optim its reduce-scatter of
 * the gradients and all-gather of the parameters (half a ring each, the
 * parameters at the weights' width), the all-gather of the parameters
 * with optim_grads (its gradients are reduce-scattered per micro-batch, in
 * the layers' zero_backward_s), nothing with optim_grads_params. */
double predict_dp_sync_s(const cm_model *cm, const cl_cluster *c, int tp, int dp, int first,
                         int last, double grad_bytes);

/* --dp-overlap (cm_model.zero_overlap) without ZeRO-2/3: what the last
 * backward of the layers [first, last), d long, does not hide of their
 * gradient sync (sim/engine/engine_overlap.c): n = ⌈G/bucket⌉ buckets of
 * G/n bytes each, bucket k handed over at (k + 1)·d/n, reduced one after
 * another in r (the ring all-reduce of G/n, or with the distributed
 * optimizer its reduce-scatter, half of it), the last ending
 * max(r, n·r − (n − 1)·d/n) after the backward.  0 without the overlap, a
 * cluster, gradients or two data-parallel replicas. */
double predict_dp_bucket_exposed_s(const cm_model *cm, const cl_cluster *c, const plan *pl,
                                   int first, int last);

/* AR_s + O_s: stage s's data-parallel all-reduce and optimizer step.  With
 * ZeRO-2/3, AR_s is the last reduce-scatter (predict_zero_reduce_s()) plus
 * predict_dp_sync_s(), and with their collectives overlapped
 * (cm_model.zero_overlap) ZeRO-2's gather of the update is not in it (the
 * next iteration's forwards hide it: predict_zero_update_exposed_s()).
 * With --dp-overlap and no ZeRO-2/3, AR_s is predict_dp_bucket_exposed_s(),
 * the distributed optimizer's gather of the update, as ZeRO-2's, at the
 * next iteration's start. */
double predict_stage_tail_s(const cm_model *cm, const cl_cluster *c, const plan *pl, int s);

/* The same for the layers [first, last) without ZeRO-2/3's last
 * reduce-scatter: what follows it (CSIMD's recurrence runs that
 * reduce-scatter itself). */
double predict_stage_end_s(const cm_model *cm, const cl_cluster *c, const plan *pl, int first,
                           int last);

/* ZeRO-2 or the distributed optimizer with --dp-overlap
 * (sim/engine/engine_overlap.c): every stage gathers the previous step's
 * update of its parameters P_s at the iteration's start, in b_s =
 * ⌈G·P_s/bucket⌉ buckets (G the gradient's 4 or 2 bytes; the distributed optimizer: as many as its
 * gradients, ⌈G_s/bucket⌉; cm_model's
 * dp_bucket_bytes, 0: Megatron's max(40M, 1M·dp) gradients) of ring
 * all-gather time g_s each, back to back, while its first forward F_s runs
 * in b_s pieces, piece k after bucket k; that forward, starting unhindered
 * at t_s = Σ_{j<s} (F_j + c_j + g'_j) (g'_j the all-gather of what stage j + 1
 * receives), ends max(g_s, b_s·g_s − (b_s − 1)·F_s/b_s) − t_s late when that
 * is positive.  The pipeline's fill waits for the latest: the result is the
 * largest over the stages, at least 0 (stage 0's: g_0 when g_0 ≤ F_0/b_0,
 * else b_0·g_0 − (b_0 − 1)·F_0/b_0).  0 without ZeRO-2 or the distributed
 * optimizer, the overlap, a cluster or two data-parallel replicas. */
double predict_zero_update_exposed_s(const cm_model *cm, const cl_cluster *c, const plan *pl,
                                     predict_sends sends);

/* Σ S' + (m − 1)·max S + tail. */
double predict_critical_path_s(double sum_stage_s, double max_stage_s, int m, double tail_s);

/* T above for a one-chunk plan with uniform micro-batches. */
double predict_1f1b_iteration_s(const cm_model *cm, const cl_cluster *c, const plan *pl,
                                predict_sends sends);

/* Megatron's interleaved 1F1B with v chunks per stage (Narayanan et al.
 * SC'21 §2.2: the fill and the drain cross each stage at 1/v of its time,
 * a bubble of (p − 1)/v stage times):
 *   T = S_b + (Σ_s S'_s − S'_b)/v + (m − 1)·S_b + max_s (AR_s + O_s),
 * S_s over all v chunks of stage s (chunk j·p + s), 2·c_k for every chunk k
 * that sends its output on (the last stage's chunk to stage 0's next one
 * included: p·v − 1 boundaries) and the all-gathers of what it receives,
 * b the stage of the largest S_s, S'_s = S_s less its blocking ZeRO-2/3
 * reduce-scatters (which follow the sends: predict_zero_chain_less_s()).
 * Exact for identical chunks without communication, (m·v + p − 1)·chunk,
 * and with blocking ZeRO-2/3 (p − 1)·chunk' + m·v·chunk (tests/
 * test_sharding.c); v = 1 gives the 1F1B formula without sharding.  With
 * ZeRO-3 overlapped, S_s is at least its collectives' stream and stage 0's
 * first gather is added, as for 1F1B.  With --dp-overlap the gradient
 * buckets of chunk 0 (the stage's last backward) set AR_s
 * (predict_dp_bucket_exposed_s()), and the gather of the update
 * (distributed optimizer, ZeRO-2) adds what chunk 0's first forwards do
 * not hide (predict_zero_update_exposed_s(); the engine gathers chunk 1's
 * with it and later chunks' at Megatron's launch points, after those
 * forwards).  Not for Merak's shifted recompute or uneven micro-batches: 0
 * (no prediction). */
double predict_interleaved_iteration_s(const cm_model *cm, const cl_cluster *c, const plan *pl,
                                       predict_sends sends);

#endif
