/*
 * schedule_parallel.c -- what context parallelism and sharded data
 * parallelism add to a stage's op list once its generator has ordered it
 * (sched_build() calls sched_parallel_finish() per stage).  The generators
 * decide the order of passes and transfers; this file only annotates and
 * inserts around them, so every schedule gets the same treatment.
 *
 * Context parallelism (c > 1, cost model costmodel_cp.c).  Every F, B and
 * recompute op carries its chunk's ring exchange: the bytes its CP rank sends
 * to its ring successor, the number of messages, and the attention compute
 * they overlap (cp_bytes, cp_steps, cp_overlap_s; summed over the chunk's
 * layers and scaled to the micro-batch).  A recompute carries the forward's
 * exchange for the layers whose recompute re-runs the attention core
 * (selective, full, or a unit mask holding "core_attention"); the cost
 * model's recompute time includes that exchange's closed-form exposure,
 * which is taken out of the op's compute so that the engine, which replays
 * the exchange as flows (sim/engine/engine_cp.c), does not count it twice.
 * The gradients are reduced over the dp·c ranks of the data-parallel group
 * with context parallelism, so a gradient sync is added before the
 * optimizer when dp = 1 (the generators emit none for one replica).
 *
 * Sharded data parallelism, per model chunk and micro-batch, on the dp·c
 * group (granularity: one collective per chunk carrying the sum of its
 * layers' bytes, which is the bandwidth time of FSDP's per-layer collectives
 * run back to back without overlap; the memory is per layer, the cost
 * model's workspace):
 *   optim_grads_params (ZeRO-3): a parameter all-gather before every
 *     forward, another before every recompute-and-backward, a gradient
 *     reduce-scatter after the pass that completes the chunk's gradients
 *     (the backward, or W when the schedule splits it), placed after the
 *     backward's send so the gradient leaves first; no gradient sync at the
 *     end of the iteration: the optimizer updates the local shard.
 *   optim_grads (ZeRO-2): the reduce-scatters only; after the optimizer
 *     step the updated parameters are all-gathered (the distributed
 *     optimizer's second half) instead of the all-reduce or reduce-scatter.
 *   no_shard, optim: the list as the generator made it.
 * Without context parallelism and with no_shard or optim the list is left
 * untouched.
 */
#include <stdlib.h>
#include <string.h>

#include "schedule_internal.h"

const char *sched_parallel_op_name(op_kind k)
{
    if (k == OP_PARAM_GATHER)
        return "param-gather";
    return k == OP_GRAD_REDUCE_SCATTER ? "grad-reduce-scatter" : "?";
}

typedef struct finish_ctx {
    const plan *pl;
    const cm_model *cm;
    int s, cp;
    bool zero, zero3, cp_sync;
} finish_ctx;

static double mb_scale(const finish_ctx *x, int i)
{
    const plan *pl = x->pl;
    if (!pl->micro_batch_sizes || i < 0 || x->cm->micro_batch_size <= 0)
        return 1.0;
    return (double)pl->micro_batch_sizes[i] / x->cm->micro_batch_size;
}

static int unit_named(const cm_layer *ly, const char *name)
{
    for (int u = 0; u < ly->num_units; u++)
        if (strcmp(ly->units[u].name, name) == 0)
            return u;
    return -1;
}

static bool unit_recomputed(const plan *pl, const cm_layer *ly, int l, const char *name)
{
    int u = unit_named(ly, name);
    return u >= 0 && (pl->recompute_units[l] >> u) & 1u;
}

/* How many times the recompute the plan gives layer l re-runs its attention
 * ring, and with it the forward's exchange: once for a layer's selective or
 * full recompute; per unit (AdaPipe), once for the core_attention unit and
 * once for the proj_input unit, the core's output, which with context
 * parallelism only the whole ring re-creates (costmodel_cp.c prices each
 * unit so). */
static int attention_reruns(const plan *pl, const cm_model *cm, int l)
{
    const cm_layer *ly = &cm->layers[l];
    if (ly->cp_forward.steps <= 0)
        return 0;
    if (pl->recompute_units)
        return unit_recomputed(pl, ly, l, "core_attention") +
               unit_recomputed(pl, ly, l, "proj_input");
    return pl->recompute[l] != RECOMPUTE_NONE;
}

static void chunk_layers(const finish_ctx *x, int chunk, int *first, int *last)
{
    int k = chunk * x->pl->num_stages + x->s;
    *first = x->pl->chunk_start[k];
    *last = x->pl->chunk_start[k + 1];
}

/* The ring exchange of a pass of (chunk, micro-batch) on op. */
static void annotate_cp(const finish_ctx *x, sched_op *op)
{
    int first, last;
    chunk_layers(x, op->chunk, &first, &last);
    double bytes = 0, overlap_s = 0, rerun_exposed_s = 0;
    int steps = 0;
    for (int l = first; l < last; l++) {
        const cm_layer *ly = &x->cm->layers[l];
        const cm_cp_exchange *e = NULL;
        if (op->kind == OP_FORWARD)
            e = &ly->cp_forward;
        else if (op->kind == OP_BACKWARD)
            e = &ly->cp_backward;
        int times = 1;
        if (op->kind == OP_RECOMPUTE && (times = attention_reruns(x->pl, x->cm, l)) > 0)
            e = &ly->cp_forward, rerun_exposed_s += times * ly->cp_forward.exposed_s;
        if (!e)
            continue;
        bytes += times * e->bytes;
        overlap_s += times * e->overlap_s;
        steps += times * e->steps;
    }
    double scale = mb_scale(x, op->micro_batch);
    op->cp_bytes = bytes * scale;
    op->cp_overlap_s = overlap_s * scale;
    op->cp_steps = steps;
    op->compute_s -= rerun_exposed_s * scale;
    if (op->compute_s + op->comm_s < op->cp_overlap_s)
        op->compute_s = op->cp_overlap_s - op->comm_s;
}

static double chunk_sum(const finish_ctx *x, int chunk, int what)
{
    int first, last;
    chunk_layers(x, chunk, &first, &last);
    double sum = 0;
    for (int l = first; l < last; l++) {
        const cm_layer *ly = &x->cm->layers[l];
        sum += what == 0   ? ly->zero_gather_bytes
               : what == 1 ? ly->zero_reduce_bytes
               : what == 2 ? ly->grad_bytes
                           : ly->params * cm_model_gather_bytes(x->cm);
    }
    return sum;
}

static double stage_sum(const finish_ctx *x, int what)
{
    double sum = 0;
    for (int j = 0; j < x->pl->num_chunks; j++)
        sum += chunk_sum(x, j, what);
    return sum;
}

/* Appends a collective of `bytes` (nothing for none). */
static int push_collective(sched_stage *out, op_kind kind, int mb, int chunk, double bytes)
{
    if (bytes <= 0)
        return 0;
    sched_op *op = sched_push(out, kind, mb, chunk);
    if (!op)
        return -1;
    op->bytes = bytes;
    return 0;
}

static bool same_pass(const sched_op *a, const sched_op *b)
{
    return a->chunk == b->chunk && a->micro_batch == b->micro_batch;
}

/* Ops before op i of the input: ZeRO-3's gathers, the gradient sync a CP
 * group needs before the optimizer. */
static int emit_before(const finish_ctx *x, const sched_stage *in, int i, sched_stage *out)
{
    const sched_op *op = &in->ops[i];
    bool after_recompute =
        i > 0 && in->ops[i - 1].kind == OP_RECOMPUTE && same_pass(&in->ops[i - 1], op);
    if (x->zero3 && (op->kind == OP_FORWARD || op->kind == OP_RECOMPUTE ||
                     (op->kind == OP_BACKWARD && !after_recompute)))
        return push_collective(out, OP_PARAM_GATHER, op->micro_batch, op->chunk,
                               chunk_sum(x, op->chunk, 0));
    if (op->kind == OP_OPTIMIZER && x->cp_sync && !x->zero)
        return push_collective(out, OP_DP_ALLREDUCE, -1, 0, stage_sum(x, 2));
    return 0;
}

int sched_parallel_finish(sched_stage *st, const plan *pl, const cm_model *cm, int s)
{
    finish_ctx x = {.pl = pl, .cm = cm, .s = s};
    x.cp = cm->context_parallel > 1 ? cm->context_parallel : 1;
    int group = pl->data_parallel * x.cp;
    x.zero = cm->sharding >= WL_SHARD_OPTIM_GRADS && group > 1;
    x.zero3 = x.zero && cm->sharding >= WL_SHARD_OPTIM_GRADS_PARAMS;
    x.cp_sync = x.cp > 1 && pl->data_parallel == 1;
    if (x.cp == 1 && !x.zero)
        return 0;
    bool split = false, optimizer = false;
    for (int i = 0; i < st->num_ops; i++)
        split = split || st->ops[i].kind == OP_WEIGHT_GRAD;
    sched_stage out = {0};
    for (int i = 0; i < st->num_ops; i++) {
        const sched_op *op = &st->ops[i];
        if (op->kind == OP_DP_ALLREDUCE && x.zero)
            continue; /* ZeRO-2/3 reduce-scatter per micro-batch instead */
        if (emit_before(&x, st, i, &out))
            goto oom;
        sched_op *copy = sched_push(&out, (op_kind)op->kind, op->micro_batch, op->chunk);
        if (!copy)
            goto oom;
        *copy = *op;
        if (x.cp > 1 &&
            (op->kind == OP_FORWARD || op->kind == OP_BACKWARD || op->kind == OP_RECOMPUTE))
            annotate_cp(&x, copy);
        if (op->kind == OP_OPTIMIZER) {
            optimizer = true;
            if (x.zero && !x.zero3 &&
                push_collective(&out, OP_PARAM_GATHER, -1, 0, stage_sum(&x, 3)))
                goto oom;
        }
        bool completes = op->kind == (split ? OP_WEIGHT_GRAD : OP_BACKWARD);
        if (!x.zero || !completes)
            continue;
        if (i + 1 < st->num_ops && st->ops[i + 1].kind == OP_SEND_BACKWARD &&
            same_pass(&st->ops[i + 1], op)) {
            sched_op *send = sched_push(&out, OP_SEND_BACKWARD, op->micro_batch, op->chunk);
            if (!send)
                goto oom;
            *send = st->ops[++i];
        }
        if (push_collective(&out, OP_GRAD_REDUCE_SCATTER, op->micro_batch, op->chunk,
                            chunk_sum(&x, op->chunk, 1)))
            goto oom;
    }
    if (!optimizer && x.cp_sync && !x.zero &&
        push_collective(&out, OP_DP_ALLREDUCE, -1, 0, stage_sum(&x, 2)))
        goto oom;
    if (!optimizer && x.zero && !x.zero3 &&
        push_collective(&out, OP_PARAM_GATHER, -1, 0, stage_sum(&x, 3)))
        goto oom;
    free(st->ops);
    st->ops = out.ops;
    st->num_ops = out.num_ops;
    st->capacity = out.capacity;
    return 0;
oom:
    free(out.ops);
    return -1;
}
