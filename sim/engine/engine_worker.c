/*
 * engine_worker.c -- worker: the actor that replays a stage's op list.
 *
 * One actor per simulated pipeline worker (stage s, replica d) sits on the NPU
 * of its TP rank 0 and runs the ops in order: consecutive compute ops as one
 * sleep of their total time (worker_execute), a send as a transfer posted to
 * the peer's channel (blocking unless the op is an async_send), a receive as
 * a wait on its own channel, the data-parallel sync as a collective (or,
 * with --dp-overlap, a wait for the bucket actor of engine_overlap.c).  It keeps the worker's
 * accounting as it goes: busy and exposed times, device memory and its peak, and the timeline's
 * spans.
 */
#include <stdlib.h>
#include <xbt/asserts.h>

#include "engine_internal.h"
#include "engine_moe.h"

/* ---- channels ---------------------------------------------------------- */

void channel_post(channel *ch, transfer t)
{
    if (ch->head == ch->tail)
        ch->head = ch->tail = 0;
    if (ch->tail == ch->capacity) {
        int cap = ch->capacity ? 2 * ch->capacity : 8;
        transfer *items = realloc(ch->items, (size_t)cap * sizeof *items);
        if (!items)
            xbt_die("npusim: out of memory growing a channel");
        ch->items = items;
        ch->capacity = cap;
    }
    ch->items[ch->tail++] = t;
    if (ch->waiting) {
        ch->waiting = false;
        sg_sem_release(ch->wake);
    }
}

/* A send: starts the transfer and hands it to `to`'s channel ch, where
 * channel_receive() waits for it.  Blocking (Megatron's default), the sender
 * waits for it first; not blocking (an async_send op), it goes on at once. */
static void channel_send(engine *e, worker *from, worker *to, int ch, double bytes, bool blocking)
{
    transfer t = transport_start(&e->net, &from->ep, &to->ep, bytes);
    if (blocking)
        transport_wait(&e->net, &t);
    channel_post(&to->chan[ch], t);
}

transfer channel_take(engine *e, worker *w, int ch)
{
    channel *c = &w->chan[ch];
    /* Actors run one at a time and only switch inside SimGrid calls, so the
     * queue can be read directly: block only when it is empty. */
    while (c->head == c->tail) {
        c->waiting = true;
        sg_sem_acquire(c->wake);
    }
    transfer t = c->items[c->head++];
    transport_wait(&e->net, &t);
    return t;
}

/* Waits for the oldest transfer on w's channel ch; returns the time spent
 * waiting after the data was posted (exposed communication). */
static double channel_receive(engine *e, worker *w, int ch)
{
    double asked = engine_now(e);
    transfer t = channel_take(e, w, ch);
    double since = asked > t.sent_s ? asked : t.sent_s;
    return engine_now(e) - since;
}

/* ---- the worker actor ---------------------------------------------------- */

static void span_record_at(worker *w, const sched_op *op, double start_s, double end_s)
{
    if (!w->eng->opt->record_spans)
        return;
    if (w->num_spans == w->span_capacity) {
        int cap = w->span_capacity ? 2 * w->span_capacity : 64;
        engine_span *s = realloc(w->spans, (size_t)cap * sizeof *s);
        if (!s)
            xbt_die("npusim: out of memory recording the timeline");
        w->spans = s;
        w->span_capacity = cap;
    }
    engine_span *s = &w->spans[w->num_spans++];
    s->start_s = start_s;
    s->end_s = end_s;
    s->memory_bytes = w->mem_bytes;
    s->micro_batch = op->micro_batch;
    s->kind = op->kind;
    s->chunk = op->chunk;
}

static void span_record(worker *w, const sched_op *op, double start_s)
{
    span_record_at(w, op, start_s, engine_now(w->eng));
}

static void mem_acquire(worker *w, const sched_op *op)
{
    if (op->mem_delta_bytes > 0)
        w->mem_bytes += op->mem_delta_bytes;
    w->mem_bytes += op->mem_transient_bytes;
    if (w->mem_bytes > w->peak_bytes)
        w->peak_bytes = w->mem_bytes;
}

static void mem_release(worker *w, const sched_op *op)
{
    w->mem_bytes -= op->mem_transient_bytes;
    if (op->mem_delta_bytes < 0)
        w->mem_bytes += op->mem_delta_bytes;
}

bool worker_op_computes(int kind)
{
    return kind == OP_FORWARD || kind == OP_BACKWARD || kind == OP_WEIGHT_GRAD ||
           kind == OP_RECOMPUTE || kind == OP_OPTIMIZER;
}

/* Accounts a compute op that ran from start_s to end_s. */
static void compute_account(worker *w, const sched_op *op, double start_s, double end_s)
{
    mem_acquire(w, op);
    mem_release(w, op);
    span_record_at(w, op, start_s, end_s);
    if (op->kind == OP_OPTIMIZER)
        return;
    double duration_s = op->compute_s + op->comm_s;
    w->busy_s += duration_s;
    w->tp_comm_s += op->comm_s;
    if (op->kind == OP_RECOMPUTE)
        w->recompute_s += duration_s;
    w->pipeline_end_s = end_s;
}

/* A compute op of duration_s on the worker's NPU.  Nothing else ever
 * computes on that NPU meanwhile (one actor per TP group computes, the
 * others only move bytes), so an execution of duration_s × speed flops would
 * last exactly duration_s: a sleep gives the same time for fewer instructions
 * (measured: 5% fewer on the 2K interleaved Llama run, docs/design.md,
 * SimGrid facts). */
void worker_execute(worker *w, double duration_s)
{
    if (duration_s <= 0)
        return;
    if (w->eng->opt->compute_as_execution)
        sg_actor_execute(duration_s * sg_host_get_speed(w->ep.hosts[0]));
    else
        sg_actor_sleep_for(duration_s);
    w->eng->net.activities++;
}

void worker_account_merged(worker *w, const sched_op *a, const sched_op *b, double start_s,
                           double end_s)
{
    mem_acquire(w, a); /* both ops' transients are held at once */
    mem_acquire(w, b);
    mem_release(w, b);
    mem_release(w, a);
    double da = a->compute_s + a->comm_s, db = b->compute_s + b->comm_s;
    double mid_s = da + db > 0 ? start_s + (end_s - start_s) * da / (da + db) : start_s;
    span_record_at(w, a, start_s, mid_s);
    span_record_at(w, b, mid_s, end_s);
    w->busy_s += end_s - start_s;
    w->tp_comm_s += a->comm_s + b->comm_s;
    w->pipeline_end_s = end_s;
}

/* Runs a gradient op whose buckets become ready during it (--dp-overlap):
 * the op runs in as many equal pieces, each ending with one bucket handed to
 * the communication actor. */
static void run_releasing_buckets(worker *w, double before_s, double duration_s, int buckets)
{
    worker_execute(w, before_s + duration_s / buckets);
    sg_sem_release(w->bucket_ready);
    for (int k = 1; k < buckets; k++) {
        worker_execute(w, duration_s / buckets);
        sg_sem_release(w->bucket_ready);
    }
}

/* The first forward of a chunk with its parameters gathered during it
 * (--dp-overlap with the distributed optimizer): as many equal pieces as
 * buckets, each after its bucket has arrived. */
static void run_gathering_params(worker *w, const sched_op *op, int buckets)
{
    double duration_s = op->compute_s + op->comm_s, piece_s = duration_s / buckets;
    for (int k = 0; k < buckets; k++) {
        overlap_wait_params(w); /* data-parallel time (wait_dp) */
        worker_execute(w, piece_s);
    }
    /* The op's span is its compute alone, drawn as ending when its last
     * piece does: the waits between the pieces are data-parallel time, not
     * the op's, and show as the gap before it (a span from the first
     * piece's start drew them as forward compute, 42 ms of GPT-3's first
     * forward with --dp-overlap, beyond the stage's busy time). */
    double end_s = engine_now(w->eng);
    compute_account(w, op, end_s - duration_s, end_s);
}

/* A compute op with a context-parallel exchange (engine_cp.c): the
 * overlapped part with the exchange, then the rest of the op; the exposed
 * wait counts as the op's busy time (it is part of the layer, as TP
 * collectives are) and as exposed communication. */
static void run_cp_op(worker *w, const sched_op *op, int buckets)
{
    double start_s = engine_now(w->eng);
    double exposed_s = cp_exchange(w, op);
    double rest_s = op->compute_s + op->comm_s - op->cp_overlap_s;
    if (buckets > 0)
        run_releasing_buckets(w, 0, rest_s, buckets);
    else
        worker_execute(w, rest_s);
    compute_account(w, op, start_s, engine_now(w->eng));
    w->busy_s += exposed_s;
    w->p2p_exposed_s += exposed_s;
}

static bool has_cp(const worker *w, const sched_op *op)
{
    return op->cp_bytes > 0 && w->eng->cp > 1;
}

/* Runs the consecutive compute ops ops[0 .. count) from the first (op index
 * `first` of the stage): nothing else can run on the NPU between them, so
 * one sleep (worker_execute) of their total length replays them exactly (one
 * activity instead of several, e.g. a recompute and its backward), unless a
 * gradient bucket must be handed over part-way.  An op with a context-parallel
 * exchange runs on its own (run_cp_op).  Returns how many ops it ran. */
int worker_run_compute(worker *w, const sched_op *ops, int first, int count)
{
    const overlap_plan *ov = w->eng->overlap && w->simulated ? &w->eng->overlap[w->stage] : NULL;
    int gathers = count > 0 ? overlap_before_op(w, first) : 0;
    if (count > 0 && engine_moe_replays(w, &ops[0])) { /* MoE hook: engine_moe_dp.c */
        double start_s = engine_now(w->eng), waits_s = w->dp_comm_s;
        double exposed_s = engine_moe_exposed_s(w);
        double closed_s = engine_moe_run_op(w, &ops[0], gathers, ov ? ov->buckets_at_op[first] : 0);
        double end_s = engine_now(w->eng);
        compute_account(w, &ops[0], start_s, end_s);
        /* the all-to-alls are the op's; the parameter waits are DP time */
        double beyond_s =
            (end_s - start_s) - (w->dp_comm_s - waits_s) - (ops[0].compute_s + ops[0].comm_s);
        w->busy_s += beyond_s;
        if (ops[0].kind == OP_RECOMPUTE) /* recompute time, as the closed form counts them */
            w->recompute_s += beyond_s;
        else /* its communication: the replayed all-to-alls, not their closed form */
            w->tp_comm_s += engine_moe_exposed_s(w) - exposed_s - closed_s;
        return 1;
    }
    if (count > 0 && has_cp(w, &ops[0])) {
        for (int k = 0; k < gathers; k++)
            overlap_wait_params(w);
        run_cp_op(w, &ops[0], ov ? ov->buckets_at_op[first] : 0);
        return 1;
    }
    if (gathers > 0) {
        run_gathering_params(w, &ops[0], gathers);
        return 1;
    }
    int n = 0;
    double pending_s = 0;
    double start_s = engine_now(w->eng);
    while (n < count && worker_op_computes(ops[n].kind) && !has_cp(w, &ops[n])) {
        if (n > 0 && overlap_starts_block(w, first + n))
            break; /* a parameter gather's launch or wait comes first */
        if (n > 0 && engine_moe_replays(w, &ops[n]))
            break; /* an MoE op's all-to-alls: the next block, on its own */
        double d = ops[n].compute_s + ops[n].comm_s;
        int buckets = ov ? ov->buckets_at_op[first + n] : 0;
        if (buckets > 0) {
            run_releasing_buckets(w, pending_s, d, buckets);
            pending_s = 0;
        } else {
            pending_s += d;
        }
        n++;
    }
    worker_execute(w, pending_s);
    double t = start_s;
    for (int i = 0; i < n; i++) {
        double end_s = i + 1 < n ? t + ops[i].compute_s + ops[i].comm_s : engine_now(w->eng);
        compute_account(w, &ops[i], t, end_s);
        t = end_s;
    }
    return n;
}

/* Megatron's point-to-point calls wait for their requests
 * (p2p_communication.py, _communicate), so a send holds its worker until its
 * data has arrived; it returns the time spent.  An async_send op
 * (overlap_p2p_comm: the interleaved steady state, schedule_1f1b.c), which
 * Megatron posts and waits for only after the compute that follows, holds
 * nothing here; the receiver waits for the data as always (docs/design.md,
 * Stage-to-stage transfers). */
static double timed_send(worker *w, const sched_op *op, int ch)
{
    engine *e = w->eng;
    double start = engine_now(e);
    channel_send(e, w, engine_cp_worker(e, op->peer, w->replica, w->cp_rank), ch, op->bytes,
                 !op->async_send);
    return engine_now(e) - start;
}

static void run_op(worker *w, const sched_op *op)
{
    engine *e = w->eng;
    switch ((op_kind)op->kind) {
    case OP_FORWARD:
    case OP_BACKWARD:
    case OP_WEIGHT_GRAD:
    case OP_RECOMPUTE:
    case OP_OPTIMIZER:
        break; /* worker_main runs compute ops in blocks (worker_run_compute) */
    case OP_SEND_FORWARD:
        w->p2p_exposed_s += timed_send(w, op, CH_FORWARD);
        break;
    case OP_SEND_BACKWARD:
        w->p2p_exposed_s += timed_send(w, op, CH_BACKWARD);
        break;
    case OP_RECV_FORWARD:
        w->p2p_exposed_s += channel_receive(e, w, CH_FORWARD);
        break;
    case OP_RECV_BACKWARD:
        w->p2p_exposed_s += channel_receive(e, w, CH_BACKWARD);
        break;
    case OP_DP_ALLREDUCE: {
        double start = engine_now(e);
        if (e->overlap) {
            engine_moe_copies_sync(e, w);    /* MoE hook: copies (edp = 1 only) */
            sg_sem_acquire(w->buckets_done); /* what the overlap did not hide */
        } else {
            fold_release_replicas(w);
            engine_dp_allreduce(e, w, engine_moe_dense_grad_bytes(e, w, op->bytes));
            engine_moe_expert_sync(e, w); /* MoE hook: expert-DP group */
        }
        w->dp_comm_s += engine_now(e) - start;
        break;
    }
    case OP_PARAM_GATHER:
    case OP_GRAD_REDUCE_SCATTER: {
        if (overlap_zero_op(w, op))
            break; /* --dp-overlap: on the communication actors */
        double start = engine_now(e);
        fold_release_replicas(w);
        engine_dp_collective(e, w, (op_kind)op->kind, op->bytes);
        w->dp_comm_s += engine_now(e) - start;
        break;
    }
    case OP_ALLTOALL:
    case OP_KIND_COUNT:
        break;
    }
}

/* SimGrid cancels the activities an actor started when the actor ends, so a
 * worker whose last flow is still travelling (a collective's last send, whose
 * receiver is slower) must not end before it lands: every worker waits for
 * all the others, and none of their flows is in flight by then. */
void worker_linger(worker *w)
{
    w->eng->finished++;
    sg_barrier_wait(w->eng->finish);
}

void worker_run_op(worker *w, const sched_op *op)
{
    double start = engine_now(w->eng);
    run_op(w, op);
    span_record(w, op, start);
}

void worker_main(int argc, char **argv)
{
    worker *w = sg_actor_self_get_data();
    const sched_stage *st = &w->eng->sc->stages[w->stage];
    w->mem_bytes = w->peak_bytes = st->static_bytes + st->workspace_bytes;
    w->mem_bytes = w->peak_bytes += engine_moe_copy_bytes(w->eng, w); /* MoE hook: copies */
    for (int i = 0; i < st->num_ops;) {
        int merged; /* MoE hook: combined 1F1B (engine_moe_overlap.c) */
        if (w->eng->moe && (st->ops[i].kind == OP_FORWARD || st->ops[i].kind == OP_BACKWARD) &&
            (merged = engine_moe_overlap_step(w, st, i)) > 0) {
            i += merged;
            continue;
        }
        if (worker_op_computes(st->ops[i].kind)) {
            i += worker_run_compute(w, &st->ops[i], i, st->num_ops - i);
            continue;
        }
        worker_run_op(w, &st->ops[i]);
        i++;
    }
    overlap_zero_drain(w); /* a list without an optimizer step */
    w->end_s = engine_now(w->eng);
    worker_linger(w);
}
