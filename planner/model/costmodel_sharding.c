/*
 * costmodel_sharding.c -- data-parallel sharding beyond the distributed
 * optimizer (training.data_parallel_sharding_strategy).
 *
 * Bytes per parameter.  Megatron-LM's distributed-optimizer table splits a
 * parameter's state into R bytes every replica keeps (the D-byte weight and
 * the gradient) and S bytes the distributed optimizer shards (fp32 master
 * weight and Adam moments): bf16 R = 6 (2 weight + 4 fp32 main gradient),
 * S = 12; fp16 R = 4, S = 16; fp32 R = 8, S = 8 (other gradient and
 * optimizer dtypes: cm_precision, costmodel.h).  Over n replicas (dp·cp):
 *   no_shard             R + S                   bf16 18
 *   optim (ZeRO-1)       R + S/n                 bf16 6 + 12/n  (Megatron's)
 *   optim_grads (ZeRO-2) D + (R − D + S)/n       bf16 2 + 16/n
 *   optim_grads_params   (R + S)/n               bf16 18/n
 *     (ZeRO-3, FSDP)
 * which is ZeRO's 2 + 2 + K split (Rajbhandari et al., SC'20, §5: Ψ(2 + 2 +
 * K), then 2Ψ + (2 + K)Ψ/N_d, then (2 + 2 + K)Ψ/N_d) with Megatron's fp32
 * main gradients by default (4 bytes where ZeRO counts fp16's 2).
 *
 * Collectives (per layer, per micro-batch, on the data-parallel group of
 * dp·cp replicas; the schedule layer emits them per model chunk,
 * schedule_parallel.c):
 *   ZeRO-3: all-gather of the layer's parameters (D·params bytes out, each
 *           rank contributing 1/n: it receives D·params·(n−1)/n) before the
 *           forward and again before the backward (FSDP frees them after
 *           each pass); reduce-scatter of its gradients after the backward.
 *   ZeRO-2: the reduce-scatter only (the gradients are sharded as soon as
 *           they are reduced); the parameters stay whole and are all-gathered
 *           once after the optimizer step, as the distributed optimizer does.
 * Closed form for the planners: a ring (n−1)(α + S/(n·B)) per all-gather or
 * reduce-scatter, on the scale-up fabric when the group's tp·n NPUs fit in a
 * server (as predict_dp_allreduce_s()), nothing overlapped.
 *
 * Working set: while a layer runs, ZeRO-3 holds its gathered parameters and,
 * in the backward, its unsharded gradients; ZeRO-2 its unsharded gradients.
 * costmodel_parallel.c reserves the largest layer's in the workspace.
 */
#include <math.h>

#include "costmodel_internal.h"

double cm_sharded_state_bytes_per_param(const cm_precision *p, wl_dp_sharding s, int shards)
{
    double r = cm_replicated_bytes(p), sh = cm_sharded_bytes(p), w = p->weight;
    double n = shards > 0 ? shards : 1;
    switch (s) {
    case WL_SHARD_OPTIM:
        return r + sh / n;
    case WL_SHARD_OPTIM_GRADS:
        return w + (r - w + sh) / n;
    case WL_SHARD_OPTIM_GRADS_PARAMS:
        return (r + sh) / n;
    default:
        return r + sh;
    }
}

double cm_dp_ring_s(const cl_cluster *c, int tp, int ranks, double bytes, int halves)
{
    if (!c || ranks <= 1 || bytes <= 0)
        return 0.0;
    int t = tp > 0 ? tp : 1;
    cl_cluster view = *c; /* replicas of one TP rank, tp NPUs apart */
    int local = 1;
    if (c->npus_per_node > 0) {
        view.npus_per_node = c->npus_per_node / t > 0 ? c->npus_per_node / t : 1;
        if (c->dp_ring_local > 0 && c->dp_ring_tp == t)
            local = c->dp_ring_local;
        else if (c->npus_per_node % t == 0)
            local = view.npus_per_node;
    }
    if (local < 2 || ranks <= local || ranks % local)
        return halves * cm_ring_allgather_s(&view, ranks, bytes);
    /* ring-flow's channels (sim/net/collective_ring.c): 1/local of the
     * ring's bytes on each member's NIC, the rest to its successor in the
     * server, then the other steps at a channel ring's mean edge latency
     * (local − 1 scale-up edges for each NIC edge) */
    int steps = halves * (ranks - 1);
    double total = steps * bytes / ranks;
    double out = c->scaleout_latency_s + total / (local * c->scaleout_bandwidth_Bps);
    double in = c->scaleup_latency_s +
                total * (local - 1) / local / (c->scaleup_bandwidth_Bps * cm_bus_efficiency(c));
    double step = ((local - 1) * c->scaleup_latency_s + c->scaleout_latency_s) / local;
    return fmax(out, in) + (steps - 1) * step;
}

double cm_dp_ring_allgather_s(const cl_cluster *c, int tp, int ranks, double bytes)
{
    return cm_dp_ring_s(c, tp, ranks, bytes, 1);
}

double cm_dp_bucket_bytes(const cm_model *m, double given, int dp)
{
    return given > 0 ? given : cm_model_precision(m).grad * fmax(40e6, (double)dp * 1e6);
}

bool cm_dp_expert_bucket_next(int jd, int nd, int je, int ne)
{
    if (je >= ne)
        return false;
    return jd >= nd || (double)(je + 1) / ne < (double)(jd + 1) / nd;
}

bool cm_zero_overlapped(const cm_model *cm)
{
    return cm->zero_overlap && cm->sharding >= WL_SHARD_OPTIM_GRADS && cm->data_parallel >= 2;
}

double cm_dp_param_buckets(const cm_model *m, double params, double bucket_bytes)
{
    return params > 0 ? ceil(cm_model_precision(m).grad * params / bucket_bytes) : 0.0;
}

void cm_sharding_layer(cm_layer *ly, const shape *x)
{
    ly->zero_gather_bytes = ly->zero_reduce_bytes = 0.0;
    ly->zero_forward_s = ly->zero_backward_s = 0.0;
    if (x->sharding < WL_SHARD_OPTIM_GRADS || x->shards < 2 || ly->params <= 0)
        return;
    ly->zero_reduce_bytes = ly->params * x->precision.grad;
    ly->zero_backward_s = cm_dp_ring_allgather_s(x->c, x->t, x->shards, ly->zero_reduce_bytes);
    if (x->sharding < WL_SHARD_OPTIM_GRADS_PARAMS)
        return;
    ly->zero_gather_bytes = ly->params * cm_gather_bytes(&x->precision);
    double gather_s = cm_dp_ring_allgather_s(x->c, x->t, x->shards, ly->zero_gather_bytes);
    ly->zero_forward_s = gather_s;
    ly->zero_backward_s += gather_s;
}

double cm_sharding_working_bytes(const cm_layer *ly)
{
    return ly->zero_gather_bytes + ly->zero_reduce_bytes;
}
