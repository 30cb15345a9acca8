/*
 * predict.c -- the 1F1B critical path planners predict (see predict.h for
 * the formula and its sources).
 *
 * One stage at a time: its time S_s from its layers and boundary send, its
 * tail from its gradients and parameters; the iteration is the critical path
 * over them.  The pieces are public because TensorOpt's frontier sweep
 * (frontier_tuple.c) prices stages with the same S_s and tail that this
 * file sums, so that a frontier point and the plan it stands for agree.
 */
#include "predict.h"

#include <math.h>

bool predict_boundary_same_node(const cl_cluster *c, int tp, int dp, int s)
{
    long long per = c->npus_per_node, delta = (long long)tp * dp;
    if (per <= 0)
        return true;
    /* Every pair shares a server unless a server boundary falls in
     * (δs, δ(s+2) − 1]. */
    long long lo = delta * s, hi = delta * (s + 2) - 1;
    return hi / per == lo / per;
}

double predict_boundary_s(const cm_model *cm, const cl_cluster *c, const plan *pl, int s,
                          predict_sends sends)
{
    if (!c || s >= pl->num_stages - 1)
        return 0.0;
    return predict_chunk_boundary_s(cm, c, pl, s, sends); /* chunk s is stage s */
}

double predict_stage_comm_s(const cm_model *cm, const cl_cluster *c, const plan *pl, int s,
                            predict_sends sends)
{
    double gathers = 0.0;
    if (s > 0)
        gathers += cm->layers[pl->chunk_start[s] - 1].recv_gather_s;
    if (s < pl->num_stages - 1)
        gathers += cm->layers[pl->chunk_start[s + 1] - 1].recv_gather_s;
    return 2.0 * predict_boundary_s(cm, c, pl, s, sends) + gathers;
}

double predict_layer_s(const cm_model *cm, const plan *pl, int l, bool skip_recompute)
{
    const cm_layer *ly = &cm->layers[l];
    plan_layer_cost rc;
    plan_layer_recompute(pl, cm, l, skip_recompute, &rc);
    double zero_s = cm_zero_overlapped(cm) ? ly->zero_forward_s + ly->zero_backward_s : 0.0;
    return cm_forward_total_s(ly) + ly->backward_s + ly->weight_grad_s + ly->tp_backward_s +
           cm_backward_extra_s(ly) + rc.recompute_s - zero_s;
}

double predict_zero_stream_s(const cm_model *cm, int first, int last, int what)
{
    if (!cm_zero_overlapped(cm))
        return 0.0;
    double reduce_s = predict_zero_reduce_s(cm, first, last), gather_s = 0.0;
    if (what == PREDICT_ZERO_REDUCE)
        return reduce_s;
    for (int l = first; l < last; l++)
        gather_s += cm->layers[l].zero_forward_s;
    /* ZeRO-3 gathers before the forward and the backward (0 for ZeRO-2) */
    return what == PREDICT_ZERO_GATHER ? gather_s : 2.0 * gather_s + reduce_s;
}

double predict_zero_reduce_s(const cm_model *cm, int first, int last)
{
    double sum = 0.0;
    for (int l = first; l < last; l++)
        sum += cm->layers[l].zero_backward_s - cm->layers[l].zero_forward_s;
    return sum;
}

double predict_zero_chain_less_s(const cm_model *cm, int first, int last)
{
    return cm_zero_overlapped(cm) ? 0.0 : predict_zero_reduce_s(cm, first, last);
}

double predict_dp_allreduce_s(const cl_cluster *c, int tp, int dp, double grad_bytes)
{
    if (!c || dp <= 1)
        return 0.0;
    cl_cluster dp_view = *c;
    /* The engine runs data-parallel collectives as flows and scale-up
     * transfers at the link bandwidth (sim/net): no bus efficiency here. */
    dp_view.collective_bus_efficiency = 1.0;
    return cm_dp_ring_s(&dp_view, tp, dp, grad_bytes, 2);
}

/* The sync's form over `group` replicas `stride` NPUs apart (cm_dp_ring_s). */
static double sync_form_s(const cm_model *cm, const cl_cluster *c, int stride, int group,
                          double param_bytes, double grad_bytes)
{
    if (cm->sharding >= WL_SHARD_OPTIM_GRADS_PARAMS)
        return 0.0; /* reduce-scattered per micro-batch, parameters gathered per pass */
    if (cm->sharding == WL_SHARD_OPTIM_GRADS)
        return cm_dp_ring_allgather_s(c, stride, group, param_bytes);
    if (cm->sharding == WL_SHARD_OPTIM) /* reduce-scatter the gradients, gather the parameters */
        return (predict_dp_allreduce_s(c, stride, group, grad_bytes) +
                predict_dp_allreduce_s(c, stride, group, param_bytes)) /
               2.0;
    return predict_dp_allreduce_s(c, stride, group, grad_bytes);
}

/* The model's context- and expert-parallel sizes, 1 without. */
static int model_cp(const cm_model *cm)
{
    return cm->context_parallel > 1 ? cm->context_parallel : 1;
}

static int model_ep(const cm_model *cm)
{
    return cm->has_source ? cm->source.parallel.expert_model_parallel_size : 1;
}

/* The expert-data-parallel group of a MoE model whose experts' gradients
 * are reduced apart (sync_split_s): its size, 0 when they are not. */
static int expert_group(const cm_model *cm, int dp, double expert_grad_bytes)
{
    int ep = model_ep(cm);
    return ep >= 2 && dp % ep == 0 && expert_grad_bytes > 0 ? dp / ep : 0;
}

/* The sync with the experts' share (expert_params and expert_grad_bytes of
 * the same layers) reduced apart, as the engine does: over the
 * expert-data-parallel group, the dp/ep replicas holding the same experts,
 * tp·cp·ep NPUs apart in Megatron's order (sim/engine/engine_moe.c), the
 * dense rest over the dp·cp replicas. */
static double sync_split_s(const cm_model *cm, const cl_cluster *c, int tp, int dp,
                           double param_bytes, double grad_bytes, double expert_param_bytes,
                           double expert_grad_bytes)
{
    int cp = model_cp(cm), ep = model_ep(cm);
    if (!expert_group(cm, dp, expert_grad_bytes))
        return sync_form_s(cm, c, tp, dp * cp, param_bytes, grad_bytes);
    return sync_form_s(cm, c, tp, dp * cp, fmax(0.0, param_bytes - expert_param_bytes),
                       fmax(0.0, grad_bytes - expert_grad_bytes)) +
           sync_form_s(cm, c, tp * cp * ep, dp / ep, expert_param_bytes, expert_grad_bytes);
}

/* The experts' parameter bytes (at the gathers' width) and gradient bytes
 * of the layers [first, last), added to *param and *grad. */
static void expert_bytes(const cm_model *cm, int first, int last, double *param, double *grad)
{
    for (int l = first; l < last; l++) {
        *param += cm->layers[l].moe.expert_params * cm_model_gather_bytes(cm);
        *grad += cm->layers[l].moe.expert_grad_bytes;
    }
}

double predict_dp_sync_s(const cm_model *cm, const cl_cluster *c, int tp, int dp, int first,
                         int last, double grad_bytes)
{
    double param_bytes = 0.0, expert_param = 0.0, expert_grad = 0.0;
    for (int l = first; l < last; l++)
        param_bytes += cm->layers[l].params * cm_model_gather_bytes(cm);
    expert_bytes(cm, first, last, &expert_param, &expert_grad);
    return sync_split_s(cm, c, tp, dp, param_bytes, grad_bytes, expert_param, expert_grad);
}

/* ZeRO-2 with its collectives overlapped: the gather of the update leaves
 * the tail for the start of the next iteration. */
static bool zero2_update_overlapped(const cm_model *cm)
{
    return cm_zero_overlapped(cm) && cm->sharding == WL_SHARD_OPTIM_GRADS;
}

static int dp_group(const cm_model *cm, const plan *pl) { return pl->data_parallel * model_cp(cm); }

/* --dp-overlap without ZeRO-2/3 (no_shard, or the distributed optimizer):
 * gradient buckets reduced during the last backward, and with the
 * distributed optimizer the gather of the update during the next
 * iteration's first forwards (sim/engine/engine_overlap.c). */
static bool dp_buckets_overlapped(const cm_model *cm, const plan *pl)
{
    return cm->zero_overlap && cm->sharding < WL_SHARD_OPTIM_GRADS && dp_group(cm, pl) >= 2;
}

double predict_dp_bucket_exposed_s(const cm_model *cm, const cl_cluster *c, const plan *pl,
                                   int first, int last)
{
    double grad_bytes = 0.0, backward_s = 0.0; /* the backward op, its recompute apart */
    double expert_param = 0.0, expert_grad = 0.0;
    for (int l = first; l < last; l++) {
        grad_bytes += cm->layers[l].grad_bytes;
        backward_s += cm_backward_total_s(&cm->layers[l], RECOMPUTE_NONE);
    }
    expert_bytes(cm, first, last, &expert_param, &expert_grad);
    if (!c || grad_bytes <= 0 || !dp_buckets_overlapped(cm, pl))
        return 0.0;
    /* As the engine cuts them (sim/engine/engine_overlap.c): with a MoE
     * model's experts reduced apart, the dense gradients in buckets over the
     * data-parallel group and the experts' in buckets of their own over the
     * expert-data-parallel group, tp·cp·ep NPUs apart (none when that group
     * has one member); else every gradient over the data-parallel group. */
    int tp = pl->tensor_parallel, cp = model_cp(cm), ep = model_ep(cm);
    int edp = expert_group(cm, pl->data_parallel, expert_grad);
    double bucket = cm_dp_bucket_bytes(cm, cm->dp_bucket_bytes, pl->data_parallel);
    double dense = edp ? fmax(0.0, grad_bytes - expert_grad) : grad_bytes;
    double ex = edp >= 2 ? expert_grad : 0.0;
    double nd = dense > 0 ? ceil(dense / bucket) : 0, ne = ex > 0 ? ceil(ex / bucket) : 0;
    double half = cm->sharding == WL_SHARD_OPTIM ? 0.5 : 1.0; /* a reduce-scatter: half the ring */
    double rd = nd ? half * predict_dp_allreduce_s(c, tp, dp_group(cm, pl), dense / nd) : 0.0;
    double re = ne ? half * predict_dp_allreduce_s(c, tp * cp * ep, edp, ex / ne) : 0.0;
    /* dense bucket k is handed over at (k+1)/nd of the backward, expert
     * bucket k at (k+1)/ne, the earlier first (cm_dp_expert_bucket_next), and one
     * collective runs at a time: the last ends this long after the
     * backward's end (with one kind alone, max_k ((k+1)·d/n + (n−k)·r) − d) */
    double t = 0.0;
    for (int jd = 0, je = 0; jd + je < nd + ne;) {
        if (cm_dp_expert_bucket_next(jd, (int)nd, je, (int)ne)) {
            t = fmax(t, (je + 1.0) / ne * backward_s) + re;
            je++;
        } else {
            t = fmax(t, (jd + 1.0) / nd * backward_s) + rd;
            jd++;
        }
    }
    return fmax(0.0, t - backward_s);
}

/* The bytes a stage's sync reduces: its parameters (at the weights'
 * width), gradients, and the experts' share of both (reduced apart). */
typedef struct sync_bytes {
    double param, grad, expert_param, expert_grad;
} sync_bytes;

/* Adds the layers [first, last) to *b. */
static void add_sync_bytes(const cm_model *cm, int first, int last, sync_bytes *b)
{
    for (int l = first; l < last; l++) {
        b->grad += cm->layers[l].grad_bytes;
        b->param += cm->layers[l].params * cm_model_gather_bytes(cm);
    }
    expert_bytes(cm, first, last, &b->expert_param, &b->expert_grad);
}

/* AR_s without ZeRO-2/3's last reduce-scatter: the sync of a stage whose
 * last backward is the layers [first, last) (an interleaved stage's chunk
 * 0) and whose chunks hold the bytes b. */
static double stage_sync_s(const cm_model *cm, const cl_cluster *c, const plan *pl, int first,
                           int last, const sync_bytes *b)
{
    if (dp_buckets_overlapped(cm, pl))
        return predict_dp_bucket_exposed_s(cm, c, pl, first, last);
    if (zero2_update_overlapped(cm))
        return 0.0;
    return sync_split_s(cm, c, pl->tensor_parallel, pl->data_parallel, b->param, b->grad,
                        b->expert_param, b->expert_grad);
}

double predict_stage_end_s(const cm_model *cm, const cl_cluster *c, const plan *pl, int first,
                           int last)
{
    sync_bytes b = {0};
    add_sync_bytes(cm, first, last, &b);
    return stage_sync_s(cm, c, pl, first, last, &b) + cm_optimizer_step_s(cm, first, last);
}

double predict_stage_tail_s(const cm_model *cm, const cl_cluster *c, const plan *pl, int s)
{
    int first = pl->chunk_start[s], last = pl->chunk_start[s + 1];
    /* ZeRO-2/3: the last reduce-scatter, after the last backward's send,
     * ends before the sync and the step */
    return predict_zero_reduce_s(cm, first, last) + predict_stage_end_s(cm, c, pl, first, last);
}

double predict_zero_update_exposed_s(const cm_model *cm, const cl_cluster *c, const plan *pl,
                                     predict_sends sends)
{
    int dp = pl->data_parallel, group = dp_group(cm, pl);
    int cp = model_cp(cm), ep = model_ep(cm);
    bool optim = dp_buckets_overlapped(cm, pl) && cm->sharding == WL_SHARD_OPTIM;
    if (!(zero2_update_overlapped(cm) || optim) || !c || group < 2)
        return 0.0;
    /* the engine's bucket (sim/engine/engine_overlap.c, overlap_build) */
    double bucket_bytes = cm_dp_bucket_bytes(cm, cm->dp_bucket_bytes, dp);
    double exposed = 0.0, start = 0.0; /* start: stage s's first forward, unhindered */
    for (int s = 0; s < pl->num_stages; s++) {
        int first = pl->chunk_start[s], last = pl->chunk_start[s + 1];
        double params = 0.0, grad_bytes = 0.0, forward_s = 0.0;
        for (int l = first; l < last; l++) {
            params += cm->layers[l].params;
            grad_bytes += cm->layers[l].grad_bytes;
            forward_s += cm_forward_total_s(&cm->layers[l]);
        }
        /* ZeRO-2 cuts the update by parameters, the distributed optimizer
         * into as many buckets as the gradients, with a MoE model's experts
         * in buckets of their own over the expert-data-parallel group (as
         * the engine's gradients: predict_dp_bucket_exposed_s) */
        double expert_param = 0.0, expert_grad = 0.0;
        expert_bytes(cm, first, last, &expert_param, &expert_grad);
        int edp = optim ? expert_group(cm, dp, expert_grad) : 0;
        double param_bytes = params * cm_model_gather_bytes(cm);
        double dense = edp ? fmax(0.0, param_bytes - expert_param) : param_bytes;
        double ex = edp >= 2 ? expert_param : 0.0;
        double nd =
            optim ? ceil((edp ? fmax(0.0, grad_bytes - expert_grad) : grad_bytes) / bucket_bytes)
                  : cm_dp_param_buckets(cm, params, bucket_bytes);
        double ne = ex > 0 ? ceil(expert_grad / bucket_bytes) : 0;
        if (dense <= 0)
            nd = 0;
        double gd = nd ? cm_dp_ring_allgather_s(c, pl->tensor_parallel, group, dense / nd) : 0.0;
        double ge =
            ne ? cm_dp_ring_allgather_s(c, pl->tensor_parallel * cp * ep, edp, ex / ne) : 0.0;
        double b = nd + ne;
        if (params > 0 && b > 0) {
            /* one gather at a time, in the engine's order; piece k of the
             * forward after bucket k: it ends at max_k (T_k + (b−k)·F/b),
             * T_k the end of gather k (with one kind alone, max((k+1)·g +
             * (b−k)·F/b) over k = 0 or b − 1) */
            double t = 0.0, end = 0.0;
            for (int jd = 0, je = 0; jd + je < b;) {
                bool expert = cm_dp_expert_bucket_next(jd, (int)nd, je, (int)ne);
                t += expert ? ge : gd;
                end = fmax(end, t + (b - (jd + je)) * forward_s / b);
                jd += !expert;
                je += expert;
            }
            exposed = fmax(exposed, end - forward_s - start);
        }
        start += forward_s + predict_boundary_s(cm, c, pl, s, sends);
        if (s < pl->num_stages - 1)
            start += cm->layers[last - 1].recv_gather_s;
    }
    return exposed;
}

double predict_critical_path_s(double sum_stage_s, double max_stage_s, int m, double tail_s)
{
    return sum_stage_s + (m - 1) * max_stage_s + tail_s;
}

double predict_1f1b_iteration_s(const cm_model *cm, const cl_cluster *c, const plan *pl,
                                predict_sends sends)
{
    bool shifted = pl->merak_shifted_recompute;
    double sum = 0.0, max = 0.0, tail = 0.0;
    for (int s = 0; s < pl->num_stages; s++) {
        double stage_s = predict_stage_comm_s(cm, c, pl, s, sends);
        double ends_s = stage_s; /* what the warm-up and cool-down pay */
        for (int l = pl->chunk_start[s]; l < pl->chunk_start[s + 1]; l++) {
            stage_s += predict_layer_s(cm, pl, l, false);
            ends_s += predict_layer_s(cm, pl, l, shifted);
        }
        /* blocking ZeRO-2/3: each reduce-scatter holds the stage after its
         * backward's send, off the fill and drain (the last is in the tail) */
        int first = pl->chunk_start[s], last = pl->chunk_start[s + 1];
        sum += ends_s - predict_zero_chain_less_s(cm, first, last);
        /* overlapped ZeRO-2/3: a stage's steady state is its compute or its
         * collectives' stream, whichever is longer */
        max = fmax(max, fmax(stage_s, predict_zero_stream_s(cm, first, last, PREDICT_ZERO_ALL)));
        tail = fmax(tail, predict_stage_tail_s(cm, c, pl, s));
    }
    /* ZeRO-3: stage 0's first gather has nothing to hide behind; ZeRO-2: what
     * the first forwards do not hide of the gather of the update */
    sum += predict_zero_stream_s(cm, pl->chunk_start[0], pl->chunk_start[1], PREDICT_ZERO_GATHER);
    sum += predict_zero_update_exposed_s(cm, c, pl, sends);
    return predict_critical_path_s(sum, max, pl->num_micro_batches, tail);
}

double predict_chunk_boundary_s(const cm_model *cm, const cl_cluster *c, const plan *pl, int k,
                                predict_sends sends)
{
    int p = pl->num_stages, a = k % p;
    double bytes = cm->layers[pl->chunk_start[k + 1] - 1].output_bytes;
    if (sends == PREDICT_SENDS_SCALEOUT)
        return cl_p2p_time(c, bytes, 0);
    if (bytes <= 0)
        return 0.0;
    /* Rank order tp-cp-dp-pp: a stage spans δ = tp·cp·dp ranks; stage p − 1
     * sends to stage 0, δ(p − 1) ranks back, in one server only when the
     * whole pipeline is. */
    int tp_cp = pl->tensor_parallel * model_cp(cm);
    bool same = a + 1 < p ? predict_boundary_same_node(c, tp_cp, pl->data_parallel, a)
                          : c->npus_per_node <= 0 ||
                                (long long)tp_cp * pl->data_parallel * p <= c->npus_per_node;
    return cl_p2p_time(c, bytes, same);
}

/* Micro-batch 0's forward through the p·v chunks, with the sends between:
 * when the last chunk's first backward can start. */
static double first_forward_s(const cm_model *cm, const cl_cluster *c, const plan *pl,
                              predict_sends sends)
{
    int chunks = pl->num_stages * (pl->num_chunks > 0 ? pl->num_chunks : 1);
    double t = 0.0;
    for (int k = 0; k < chunks; k++) {
        for (int l = pl->chunk_start[k]; l < pl->chunk_start[k + 1]; l++)
            t += cm_forward_total_s(&cm->layers[l]);
        if (c && k + 1 < chunks)
            t += predict_chunk_boundary_s(cm, c, pl, k, sends) +
                 cm->layers[pl->chunk_start[k + 1] - 1].recv_gather_s;
    }
    return t;
}

double predict_interleaved_iteration_s(const cm_model *cm, const cl_cluster *c, const plan *pl,
                                       predict_sends sends)
{
    int p = pl->num_stages, v = pl->num_chunks > 0 ? pl->num_chunks : 1;
    if (pl->merak_shifted_recompute || pl->micro_batch_sizes)
        return 0.0;
    int chunks = p * v;
    /* Overlapped ZeRO-2 whose reduce-scatters outlast the compute: stage
     * s's stream starts with its first backward, at t0_s, micro-batch 0's
     * forward through the chunks and the backwards of the last row of
     * chunks from stage p − 1 down to s, and then runs its m·v
     * reduce-scatters back to back before the step: a bound the iteration
     * cannot beat, however the fill goes.  Hence the stages from the last. */
    bool zero2_stream = cm_zero_overlapped(cm) && cm->sharding == WL_SHARD_OPTIM_GRADS;
    double t0 = zero2_stream ? first_forward_s(cm, c, pl, sends) : 0.0, stream_bound = 0.0;
    /* the bottleneck stage's S and S', Σ S' */
    double max = 0.0, max_chain = 0.0, sum_chain = 0.0, tail = 0.0, max_sends = 0.0;
    /* overlap_p2p_comm: the steady state's sends overlap the compute that
     * follows them, so they leave a stage's S; the fill and drain (the
     * warm-up and cool-down, whose sends block) still cross them */
    bool async_sends = cm_async_p2p(cm, v);
    for (int s = p - 1; s >= 0; s--) {
        double stage_s = 0.0, step_s = 0.0, less_s = 0.0, stream_s = 0.0, sends_s = 0.0;
        sync_bytes bytes = {0};
        for (int j = 0; j < v; j++) {
            int k = j * p + s, first = pl->chunk_start[k], last = pl->chunk_start[k + 1];
            for (int l = first; l < last; l++)
                stage_s += predict_layer_s(cm, pl, l, false);
            add_sync_bytes(cm, first, last, &bytes);
            if (c && k + 1 < chunks)
                sends_s += 2.0 * predict_chunk_boundary_s(cm, c, pl, k, sends);
            if (k > 0)
                stage_s += cm->layers[first - 1].recv_gather_s;
            if (k + 1 < chunks)
                stage_s += cm->layers[last - 1].recv_gather_s;
            step_s += cm_optimizer_step_s(cm, first, last);
            less_s += predict_zero_chain_less_s(cm, first, last);
            stream_s += predict_zero_stream_s(cm, first, last, PREDICT_ZERO_ALL);
        }
        /* one sync of the stage's chunks (ZeRO-2: one gather of the update,
         * as the op lists post it) */
        double sync_s = stage_sync_s(cm, c, pl, pl->chunk_start[s], pl->chunk_start[s + 1], &bytes);
        /* overlapped ZeRO-3: the last reduce-scatter (chunk 0's) ends before
         * the step; blocking, it is in S_b */
        if (cm_zero_overlapped(cm))
            sync_s += predict_zero_reduce_s(cm, pl->chunk_start[s], pl->chunk_start[s + 1]);
        /* the fill and drain run the compute chain; overlapped ZeRO-2/3's
         * stream only paces the steady state, as in the 1F1B prediction */
        double chain_s = stage_s + sends_s - less_s;
        stage_s = fmax(stage_s + (async_sends ? 0.0 : sends_s), stream_s);
        sum_chain += chain_s;
        if (stage_s > max || (stage_s == max && chain_s > max_chain)) { /* ties: larger S' */
            max = stage_s;
            max_chain = chain_s;
            max_sends = async_sends ? sends_s : 0.0;
        }
        tail = fmax(tail, sync_s + step_s);
        if (zero2_stream) { /* the last row's backward of stage s, after chunk k + 1's */
            int k = (v - 1) * p + s, first = pl->chunk_start[k], last = pl->chunk_start[k + 1];
            if (c && s < p - 1)
                t0 += predict_chunk_boundary_s(cm, c, pl, k, sends) +
                      cm->layers[last - 1].recv_gather_s;
            for (int l = first; l < last; l++)
                t0 += predict_layer_s(cm, pl, l, false) - cm_forward_total_s(&cm->layers[l]);
            /* ZeRO-2's stream is its reduce-scatters */
            stream_bound = fmax(stream_bound, t0 + pl->num_micro_batches * stream_s + step_s);
        }
    }
    /* overlapped ZeRO-3: stage 0's first gather has nothing to hide behind */
    double first_gather_s =
        predict_zero_stream_s(cm, pl->chunk_start[0], pl->chunk_start[1], PREDICT_ZERO_GATHER);
    /* the gather of the update (distributed optimizer or ZeRO-2, overlapped):
     * what the first forwards of chunk 0 do not hide */
    double update_s = predict_zero_update_exposed_s(cm, c, pl, sends);
    double path_s = max + max_sends + (sum_chain - max_chain) / v + first_gather_s + update_s +
                    (pl->num_micro_batches - 1) * max + tail;
    return fmax(path_s, zero2_stream ? update_s + stream_bound : 0.0);
}
