/*
 * schedule.c -- what every schedule generator shares (see schedule.h).
 *
 * sched_build() dispatches on the plan's schedule; the generators live one per
 * file (schedule_1f1b.c, ...).  This file also holds the chunk cost helper that
 * turns cost-model layers into op durations and memory deltas, so that every
 * generator charges work and memory the same way, and sched_check(), which
 * replays the op lists abstractly to prove that sends and receives match and
 * that the schedule cannot deadlock.
 */
#include "schedule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory.h"
#include "schedule_internal.h"

static const char *const op_names[OP_ALLTOALL + 1] = {
    "F",          "B",        "W",        "recompute",    "send-fwd",
    "recv-fwd",   "send-bwd", "recv-bwd", "dp-allreduce", "optimizer",
    "all-to-all",
};

const char *sched_op_name(op_kind k)
{
    return (unsigned)k <= OP_ALLTOALL ? op_names[k] : sched_parallel_op_name(k);
}

sched_op *sched_push(sched_stage *st, op_kind kind, int micro_batch, int chunk)
{
    if (st->num_ops == st->capacity) {
        int cap = st->capacity ? 2 * st->capacity : 64;
        sched_op *ops = realloc(st->ops, (size_t)cap * sizeof *ops);
        if (!ops)
            return NULL;
        st->ops = ops;
        st->capacity = cap;
    }
    sched_op *op = &st->ops[st->num_ops++];
    memset(op, 0, sizeof *op);
    op->kind = (uint8_t)kind;
    op->micro_batch = micro_batch;
    op->chunk = (uint8_t)chunk;
    op->peer = -1;
    return op;
}

void sched_free(schedule *sc)
{
    if (!sc->stages)
        return;
    for (int s = 0; s < sc->num_stages; s++)
        free(sc->stages[s].ops);
    free(sc->stages);
    sc->stages = NULL;
}

/* Samples in micro-batch i relative to the cost model's micro-batch: the
 * scale of its bytes (activations, transients, boundary tensors), which are
 * linear in the batch.  Its times are not: sched_chunk_cost() re-prices each
 * layer at b_i with cm_layer_at_batch(), so that launches and weight reads
 * stay fixed costs (CSIMD's nonlinear t(b)). */
static double micro_batch_scale(const plan *pl, const cm_model *cm, int i)
{
    if (!pl->micro_batch_sizes || i < 0)
        return 1.0;
    return (double)pl->micro_batch_sizes[i] / cm->micro_batch_size;
}

/* Layer l as micro-batch i runs it: the cost model's layer, or with
 * per-micro-batch sizes the layer re-priced at b_i into *at.  *time_scale is
 * left to apply to its times (1 once re-priced).  Recompute times scale as
 * the layer's forward does: exact for full recompute, which re-runs it. */
static const cm_layer *micro_batch_layer(const plan *pl, const cm_model *cm, int l, int i,
                                         cm_layer *at, double *time_scale, double *recompute_scale)
{
    const cm_layer *ly = &cm->layers[l];
    *time_scale = *recompute_scale = micro_batch_scale(pl, cm, i);
    if (!pl->micro_batch_sizes || i < 0 ||
        cm_layer_at_batch(cm, l, pl->micro_batch_sizes[i], at) != 0)
        return ly;
    double base_s = cm_forward_total_s(ly);
    *time_scale = 1.0;
    if (base_s > 0)
        *recompute_scale = cm_forward_total_s(at) / base_s;
    return at;
}

/* recv_gather_s of the boundary after layer l, as micro-batch i runs it. */
static double boundary_gather_s(const plan *pl, const cm_model *cm, int l, int i)
{
    if (cm->layers[l].recv_gather_s <= 0)
        return 0.0;
    cm_layer at;
    double ts, rs;
    const cm_layer *ly = micro_batch_layer(pl, cm, l, i, &at, &ts, &rs);
    return ly->recv_gather_s * ts;
}

void sched_chunk_cost(const plan *pl, const cm_model *cm, int stage, int chunk, int micro_batch,
                      bool skip_recompute, sched_chunk *out)
{
    memset(out, 0, sizeof *out);
    int k = chunk * pl->num_stages + stage;
    int first = pl->chunk_start[k], last = pl->chunk_start[k + 1];
    double scale = micro_batch_scale(pl, cm, micro_batch);
    for (int l = first; l < last; l++) {
        cm_layer at;
        double ts, rs;
        const cm_layer *ly = micro_batch_layer(pl, cm, l, micro_batch, &at, &ts, &rs);
        plan_layer_cost rc;
        plan_layer_recompute(pl, cm, l, skip_recompute, &rc);
        out->forward_s += ly->forward_s * ts;
        out->forward_comm_s += ly->tp_forward_s * ts;
        out->backward_s += ly->backward_s * ts;
        out->weight_grad_s += ly->weight_grad_s * ts;
        out->backward_comm_s += ly->tp_backward_s * ts;
        out->recompute_s += rc.recompute_s * rs;
        out->activation_bytes += rc.activation_bytes;
        if (rc.transient_bytes > out->transient_bytes)
            out->transient_bytes = rc.transient_bytes;
        out->static_bytes += cm->layers[l].state_bytes;
        out->grad_bytes += cm->layers[l].grad_bytes;
    }
    out->output_bytes = cm->layers[last - 1].output_bytes;
    out->activation_bytes *= scale;
    out->transient_bytes *= scale;
    out->output_bytes *= scale;
    /* The receiver all-gathers a scattered boundary tensor (Megatron's
     * p2p_communication with scatter_gather_tensors_in_pipeline and no SP):
     * the forward of a chunk that receives its input, the backward of one
     * that receives its output gradient (the same size as its output). */
    int chunks = pl->num_stages * pl->num_chunks;
    if (pl->num_stages > 1 && k > 0)
        out->input_gather_s = boundary_gather_s(pl, cm, first - 1, micro_batch);
    if (pl->num_stages > 1 && k < chunks - 1)
        out->grad_gather_s = boundary_gather_s(pl, cm, last - 1, micro_batch);
}

int sched_emit_forward(sched_stage *st, const plan *pl, const cm_model *cm, int s, int chunk, int i,
                       bool skip_recompute)
{
    sched_chunk c;
    sched_chunk_cost(pl, cm, s, chunk, i, skip_recompute, &c);
    sched_op *op = sched_push(st, OP_FORWARD, i, chunk);
    if (!op)
        return -1;
    op->compute_s = c.forward_s;
    op->comm_s = c.forward_comm_s + c.input_gather_s;
    op->mem_delta_bytes = c.activation_bytes;
    return 0;
}

int sched_emit_backward(sched_stage *st, const plan *pl, const cm_model *cm, int s, int chunk,
                        int i, bool skip_recompute, bool split_weight_grad)
{
    sched_chunk c;
    sched_chunk_cost(pl, cm, s, chunk, i, skip_recompute, &c);
    if (c.recompute_s > 0) {
        sched_op *r = sched_push(st, OP_RECOMPUTE, i, chunk);
        if (!r)
            return -1;
        r->compute_s = c.recompute_s;
        r->mem_transient_bytes = c.transient_bytes;
    }
    sched_op *op = sched_push(st, OP_BACKWARD, i, chunk);
    if (!op)
        return -1;
    op->compute_s = c.backward_s + (split_weight_grad ? 0.0 : c.weight_grad_s);
    op->weight_grad_split = split_weight_grad;
    op->comm_s = c.backward_comm_s + c.grad_gather_s;
    op->mem_transient_bytes = c.transient_bytes;
    /* A split backward leaves the activations to W, which needs the inputs
     * of the weight GEMMs (schedule_zb.c explains the choice). */
    op->mem_delta_bytes = split_weight_grad ? 0.0 : -c.activation_bytes;
    return 0;
}

int sched_emit_weight_grad(sched_stage *st, const plan *pl, const cm_model *cm, int s, int chunk,
                           int i)
{
    sched_chunk c;
    sched_chunk_cost(pl, cm, s, chunk, i, sched_skips_recompute(pl, s, i), &c);
    sched_op *op = sched_push(st, OP_WEIGHT_GRAD, i, chunk);
    if (!op)
        return -1;
    op->compute_s = c.weight_grad_s;
    op->mem_delta_bytes = -c.activation_bytes; /* kept since the forward */
    return 0;
}

int sched_emit_p2p(sched_stage *st, const plan *pl, const cm_model *cm, op_kind kind, int s,
                   int chunk, int i, int peer)
{
    /* The tensor crossing a boundary is the output of the sending chunk's last
     * layer; its gradient has the same size.  Forward sends and backward
     * receives carry this chunk's output; forward receives and backward sends
     * carry the previous chunk's. */
    int p = pl->num_stages;
    int k = chunk * p + s;
    bool own_output = (kind == OP_SEND_FORWARD || kind == OP_RECV_BACKWARD);
    int boundary_layer = own_output ? pl->chunk_start[k + 1] - 1 : pl->chunk_start[k] - 1;
    sched_op *op = sched_push(st, kind, i, chunk);
    if (!op)
        return -1;
    op->peer = peer;
    op->bytes = cm->layers[boundary_layer].output_bytes * micro_batch_scale(pl, cm, i);
    return 0;
}

/* Stage holding the model chunk before / after one of stage s: the
 * neighbouring stage, except that chunk j of stage p−1 feeds chunk j+1 of
 * stage 0 (interleaved; schedule_interleaved.c). */
static int previous_stage(const plan *pl, int s) { return s > 0 ? s - 1 : pl->num_stages - 1; }

static int next_stage(const plan *pl, int s) { return s < pl->num_stages - 1 ? s + 1 : 0; }

static bool is_first_chunk(int s, int chunk) { return s == 0 && chunk == 0; }

static bool is_last_chunk(const plan *pl, int s, int chunk)
{
    return s == pl->num_stages - 1 && chunk == pl->num_chunks - 1;
}

/* A transfer with peer; none when the peer is this stage (p = 1: the next
 * chunk is on this device). */
static int step_p2p(sched_stage *st, const plan *pl, const cm_model *cm, op_kind kind, int s,
                    int chunk, int i, int peer)
{
    if (peer == s)
        return 0;
    return sched_emit_p2p(st, pl, cm, kind, s, chunk, i, peer);
}

int sched_emit_forward_step(sched_stage *st, const plan *pl, const cm_model *cm, int s, int chunk,
                            int i)
{
    if (!is_first_chunk(s, chunk) &&
        step_p2p(st, pl, cm, OP_RECV_FORWARD, s, chunk, i, previous_stage(pl, s)))
        return -1;
    if (sched_emit_forward(st, pl, cm, s, chunk, i, sched_skips_recompute(pl, s, i)))
        return -1;
    if (!is_last_chunk(pl, s, chunk) &&
        step_p2p(st, pl, cm, OP_SEND_FORWARD, s, chunk, i, next_stage(pl, s)))
        return -1;
    return 0;
}

int sched_emit_backward_step(sched_stage *st, const plan *pl, const cm_model *cm, int s, int chunk,
                             int i, bool split_weight_grad, bool send_input_grad)
{
    if (!is_last_chunk(pl, s, chunk) &&
        step_p2p(st, pl, cm, OP_RECV_BACKWARD, s, chunk, i, next_stage(pl, s)))
        return -1;
    if (sched_emit_backward(st, pl, cm, s, chunk, i, sched_skips_recompute(pl, s, i),
                            split_weight_grad))
        return -1;
    if (send_input_grad && !is_first_chunk(s, chunk) &&
        step_p2p(st, pl, cm, OP_SEND_BACKWARD, s, chunk, i, previous_stage(pl, s)))
        return -1;
    return 0;
}

int sched_emit_iteration_end(sched_stage *st, const plan *pl, const cm_model *cm, int s)
{
    double grad_bytes = 0;
    for (int j = 0; j < pl->num_chunks; j++) {
        sched_chunk c;
        sched_chunk_cost(pl, cm, s, j, -1, false, &c);
        grad_bytes += c.grad_bytes;
    }
    if (pl->data_parallel > 1) {
        sched_op *ar = sched_push(st, OP_DP_ALLREDUCE, -1, 0);
        if (!ar)
            return -1;
        ar->bytes = grad_bytes;
    }
    double opt_s = 0;
    for (int j = 0; j < pl->num_chunks; j++) {
        int k = j * pl->num_stages + s;
        opt_s += cm_optimizer_step_s(cm, pl->chunk_start[k], pl->chunk_start[k + 1]);
    }
    if (opt_s > 0) {
        sched_op *op = sched_push(st, OP_OPTIMIZER, -1, 0);
        if (!op)
            return -1;
        op->compute_s = opt_s;
    }
    return 0;
}

static void stage_static_bytes(sched_stage *st, const plan *pl, const cm_model *cm, int s)
{
    mem_stage m;
    mem_stage_bytes(cm, pl, s, &m);
    st->static_bytes = m.static_bytes;
    st->workspace_bytes = m.workspace_bytes;
}

int sched_build(const plan *pl, const cm_model *cm, schedule *out, np_error *err)
{
    int rc = plan_check(pl, "<plan>", err);
    if (rc)
        return rc;
    int p = pl->num_stages, m = pl->num_micro_batches;
    bool async = pl->schedule == SCHED_PIPEDREAM || pl->schedule == SCHED_PIPEDREAM_2BW;
    if (async && m < p) /* schedule_pipedream.c, docs/planners.md "PipeDream" */
        return np_error_set(err, NP_EXIT_INPUT, "<plan>", "num_micro_batches", 0,
                            "schedule %s needs at least one micro-batch per stage in an "
                            "iteration (m >= p), got m = %d on %d stages (global batch / "
                            "(micro-batch size x data-parallel size)): %s; raise the global "
                            "batch or use fewer stages",
                            wl_schedule_name(pl->schedule), m, p,
                            pl->schedule == SCHED_PIPEDREAM_2BW
                                ? "2BW's two weight versions suffice only when a version "
                                  "lasts m >= p micro-batches"
                                : "PipeDream keeps p - s micro-batches in flight on stage s "
                                  "whatever m, more than the m the memory model charges");
    out->num_stages = pl->num_stages;
    out->stages = calloc((size_t)pl->num_stages, sizeof *out->stages);
    if (!out->stages)
        return np_error_set(err, NP_EXIT_INTERNAL, "<schedule>", "", 0, "out of memory");
    sched_generator gen = NULL;
    switch (pl->schedule) {
    case SCHED_GPIPE:
        gen = sched_gen_gpipe;
        break;
    case SCHED_1F1B:
        gen = sched_gen_1f1b;
        break;
    case SCHED_INTERLEAVED:
        gen = sched_gen_interleaved;
        break;
    case SCHED_ZB_H1:
        gen = sched_gen_zb_h1;
        break;
    case SCHED_ZB_H2:
        gen = sched_gen_zb_h2;
        break;
    case SCHED_PIPEDREAM:
    case SCHED_PIPEDREAM_2BW:
        gen = sched_gen_pipedream;
        break;
    default:
        break;
    }
    if (!gen) {
        sched_free(out);
        return np_error_set(err, NP_EXIT_INPUT, "<plan>", "schedule", 0,
                            "schedule '%s' is not available in this build",
                            wl_schedule_name(pl->schedule));
    }
    for (int s = 0; s < pl->num_stages; s++) {
        stage_static_bytes(&out->stages[s], pl, cm, s);
        if (gen(&out->stages[s], pl, cm, s) != 0 ||
            sched_parallel_finish(&out->stages[s], pl, cm, s) != 0) {
            sched_free(out);
            return np_error_set(err, NP_EXIT_INTERNAL, "<schedule>", "", 0,
                                "out of memory while generating stage %d", s);
        }
    }
    return sched_check(out, err);
}

/* A FIFO per (receiving stage, direction) of the messages sent to it. */
typedef struct check_channel {
    long *items;
    int head, tail, capacity;
} check_channel;

static int channel_push(check_channel *ch, long item)
{
    if (ch->tail == ch->capacity) {
        int cap = ch->capacity ? 2 * ch->capacity : 32;
        long *items = realloc(ch->items, (size_t)cap * sizeof *items);
        if (!items)
            return -1;
        ch->items = items;
        ch->capacity = cap;
    }
    ch->items[ch->tail++] = item;
    return 0;
}

static bool is_recv(int kind) { return kind == OP_RECV_FORWARD || kind == OP_RECV_BACKWARD; }
static bool is_send(int kind) { return kind == OP_SEND_FORWARD || kind == OP_SEND_BACKWARD; }
static int direction(int kind)
{
    return kind == OP_SEND_FORWARD || kind == OP_RECV_FORWARD ? 0 : 1;
}

/* Channel items encode (micro-batch, sender's chunk, sender stage). */
#define CHECK_MAX_CHUNKS 256

/* The chunk whose output a receive on stage s expects: the same chunk of
 * the neighbouring stage, except across the interleaved wrap-around, where
 * the last stage's chunk j feeds the first stage's chunk j + 1 (and the
 * first stage's gradient of chunk j goes to the last stage's chunk j − 1). */
static int sender_chunk(const schedule *sc, int s, const sched_op *op)
{
    int p = sc->num_stages;
    if (op->kind == OP_RECV_FORWARD && s == 0 && op->peer == p - 1)
        return op->chunk - 1;
    if (op->kind == OP_RECV_BACKWARD && s == p - 1 && op->peer == 0)
        return op->chunk + 1;
    return op->chunk;
}

/* Executes as many ops of stage s as it can; returns how many it ran,
 * or -1 with err set on a mismatch. */
static int check_advance(const schedule *sc, int s, int *pc, check_channel *chans, np_error *err)
{
    const sched_stage *st = &sc->stages[s];
    int ran = 0;
    while (pc[s] < st->num_ops) {
        const sched_op *op = &st->ops[pc[s]];
        if (is_send(op->kind)) {
            if (op->peer < 0 || op->peer >= sc->num_stages)
                return np_error_set(err, NP_EXIT_INTERNAL, "<schedule>", "", 0,
                                    "stage %d op %d sends to stage %d", s, pc[s], op->peer),
                       -1;
            check_channel *ch = &chans[op->peer * 2 + direction(op->kind)];
            long item = ((long)op->micro_batch * CHECK_MAX_CHUNKS + op->chunk) * sc->num_stages + s;
            if (channel_push(ch, item) != 0)
                return np_error_set(err, NP_EXIT_INTERNAL, "<schedule>", "", 0, "out of memory"),
                       -1;
        } else if (is_recv(op->kind)) {
            check_channel *ch = &chans[s * 2 + direction(op->kind)];
            if (ch->head == ch->tail)
                break; /* blocked */
            long item = ch->items[ch->head++];
            int p = sc->num_stages;
            int from = (int)(item % p), chunk = (int)(item / p % CHECK_MAX_CHUNKS);
            int mb = (int)(item / p / CHECK_MAX_CHUNKS);
            if (mb != op->micro_batch || from != op->peer || chunk != sender_chunk(sc, s, op))
                return np_error_set(err, NP_EXIT_INTERNAL, "<schedule>", "", 0,
                                    "stage %d op %d (%s) expects micro-batch %d, chunk %d from "
                                    "stage %d, the channel delivers micro-batch %d, chunk %d from "
                                    "stage %d",
                                    s, pc[s], sched_op_name(op->kind), op->micro_batch,
                                    sender_chunk(sc, s, op), op->peer, mb, chunk, from),
                       -1;
        }
        pc[s]++;
        ran++;
    }
    return ran;
}

int sched_check(const schedule *sc, np_error *err)
{
    int p = sc->num_stages;
    int *pc = calloc((size_t)p, sizeof *pc);
    check_channel *chans = calloc((size_t)p * 2, sizeof *chans);
    int rc = 0;
    if (!pc || !chans) {
        rc = np_error_set(err, NP_EXIT_INTERNAL, "<schedule>", "", 0, "out of memory");
        goto out;
    }
    for (;;) {
        int progress = 0, done = 0;
        for (int s = 0; s < p; s++) {
            int ran = check_advance(sc, s, pc, chans, err);
            if (ran < 0) {
                rc = NP_EXIT_INTERNAL;
                goto out;
            }
            progress += ran;
            done += pc[s] == sc->stages[s].num_ops;
        }
        if (done == p)
            break;
        if (!progress) {
            int s = 0;
            while (pc[s] == sc->stages[s].num_ops)
                s++;
            rc = np_error_set(err, NP_EXIT_INTERNAL, "<schedule>", "", 0,
                              "schedule deadlocks: stage %d waits at op %d (%s of micro-batch %d)",
                              s, pc[s], sched_op_name(sc->stages[s].ops[pc[s]].kind),
                              sc->stages[s].ops[pc[s]].micro_batch);
            goto out;
        }
    }
    for (int c = 0; c < 2 * p; c++)
        if (chans[c].head != chans[c].tail) {
            rc = np_error_set(err, NP_EXIT_INTERNAL, "<schedule>", "", 0,
                              "stage %d never receives %d message(s) sent to it", c / 2,
                              chans[c].tail - chans[c].head);
            goto out;
        }
out:
    if (chans)
        for (int c = 0; c < 2 * p; c++)
            free(chans[c].items);
    free(chans);
    free(pc);
    return rc;
}
