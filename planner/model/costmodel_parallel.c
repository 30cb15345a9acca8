/*
 * costmodel_parallel.c -- context parallelism and data-parallel sharding
 * applied to the cost model: to the shape of a job (the sequence one CP rank
 * holds, the state bytes per parameter of the sharding) and to the layers
 * once they are priced (the CP exchange, the ZeRO collectives, ZeRO's
 * working set).  costmodel.c calls the three hooks; the concepts themselves
 * are in costmodel_cp.c and costmodel_sharding.c.
 *
 * Context parallelism (Megatron-LM --context-parallel-size c) splits every
 * sequence over the c ranks of a CP group: a rank holds s/c tokens of each
 * sample, so every layer is priced on b·s/c tokens (activations, GEMMs, TP
 * collectives, boundary tensors: all 1/c), except the attention core, which
 * still sees every key: the c − 1 remote blocks are added by costmodel_cp.c.
 * Parameters are not split by CP; their gradients are reduced, and with the
 * distributed optimizer their state sharded, over the dp·c ranks of
 * Megatron's data-parallel group with context parallelism.
 *
 * Without CP and with no_shard or optim the shape and the layers are left
 * exactly as costmodel.c made them.
 */
#include <math.h>

#include "costmodel_internal.h"
#include "moe.h"

void cm_shape_parallel(shape *x, const wl_workload *w)
{
    x->cp = w->parallel.context_parallel_size > 1 ? w->parallel.context_parallel_size : 1;
    x->shards = x->dp * x->cp;
    wl_dp_sharding s = w->training.data_parallel_sharding_strategy;
    if (s < WL_SHARD_NO_SHARD || s >= WL_SHARD_COUNT)
        s = WL_SHARD_NO_SHARD;
    if (w->training.use_distributed_optimizer && s < WL_SHARD_OPTIM)
        s = WL_SHARD_OPTIM; /* the distributed optimizer is "optim" */
    x->sharding = s;
    if (x->cp > 1) {
        x->s /= x->cp;
        x->n = x->b * x->s;
        x->nl = x->sp ? x->n / x->t : x->n;
    }
    if (x->cp > 1 || s > WL_SHARD_OPTIM)
        x->state_bpp = cm_sharded_state_bytes_per_param(&x->precision, s, x->shards);
    /* Expert state is sharded over the expert-data-parallel group,
     * tp·cp·dp/(ep·etp) ranks (moe.h). */
    moe_layout ml;
    moe_layout_of(w, &ml);
    x->expert_state_bpp = cm_sharded_state_bytes_per_param(&x->precision, s, ml.edp);
}

void cm_parallel_layer(cm_layer *ly, const shape *x)
{
    if (x->cp > 1 && ly->kind == CM_DECODER)
        cm_cp_decoder(ly, x);
    cm_sharding_layer(ly, x);
}

void cm_parallel_finish(cm_model *m, const shape *x)
{
    m->context_parallel = x->cp;
    m->sharding = x->sharding;
    m->data_parallel = x->shards;
    m->distributed_optimizer = x->sharding >= WL_SHARD_OPTIM;
    double working = 0.0;
    for (int l = 0; l < m->num_layers; l++) {
        cm_parallel_layer(&m->layers[l], x);
        working = fmax(working, cm_sharding_working_bytes(&m->layers[l]));
    }
    /* ZeRO's unsharded layer (gathered parameters, gradients before their
     * reduce-scatter) is a buffer the run keeps: reserved like the
     * communicators' buffers, so every planner, the memory model and the
     * engine's tracker count it the same way. */
    m->workspace_bytes += working;
}

double cm_forward_extra_s(const cm_layer *l) { return l->cp_forward.exposed_s + l->zero_forward_s; }

double cm_backward_extra_s(const cm_layer *l)
{
    return l->cp_backward.exposed_s + l->zero_backward_s;
}
