/*
 * schedule_interleaved.c -- interleaved 1F1B with v virtual chunks per stage
 * (Narayanan et al. SC'21, section 2.2.2; the order of Megatron-LM's
 * forward_backward_pipelining_with_interleaving).
 *
 * Model chunk k = j·p + s is virtual chunk j of stage s (plan.h), so a
 * micro-batch crosses every stage v times.  Stage s runs m·v chunk-forwards
 * and as many chunk-backwards:
 *   - warm-up: min(2(p − s − 1) + (v − 1)·p, m·v) chunk-forwards;
 *   - steady state: one chunk-forward, one chunk-backward;
 *   - cool-down: the remaining chunk-backwards; then the flush.
 * The k-th chunk-forward of a stage runs chunk (k / p) mod v on micro-batch
 * (k / (p·v))·p + k mod p: groups of p micro-batches go through chunk 0, then
 * chunk 1, ...; the k-th chunk-backward runs chunk v − 1 − (k / p) mod v on
 * the same micro-batch.  This needs m divisible by p (plan_check() enforces it).
 * With uniform chunks and free communication the iteration takes
 * m(F + B) + (p − 1)(F + B)/v: a bubble of (p − 1)/(v·m).
 *
 * Boundaries.  Chunk j of stage p−1 feeds chunk j+1 of stage 0, and the
 * gradient of chunk j+1 of stage 0 returns to chunk j of stage p−1; all other
 * transfers go to the neighbouring stage.  Every channel (receiving stage,
 * direction) then has a single sender, and the sender emits in the same order
 * as the receiver consumes: both walk the same (group, chunk, micro-batch)
 * order, and mapping chunk j to j+1 (or j+1 to j) keeps that order.  Megatron
 * pairs its sends and receives in batched calls; our sends never wait for the
 * receiver, so this consistent FIFO order is all sched_check() needs.  With
 * one stage (p = 1) the chunks hand over on the device: no transfer.
 */
#include "schedule_internal.h"

typedef struct chunk_step {
    int chunk, micro_batch;
} chunk_step;

static chunk_step forward_of(const plan *pl, int k)
{
    int p = pl->num_stages, v = pl->num_chunks;
    chunk_step c = {(k / p) % v, (k / (p * v)) * p + k % p};
    return c;
}

static chunk_step backward_of(const plan *pl, int k)
{
    chunk_step c = forward_of(pl, k);
    c.chunk = pl->num_chunks - 1 - c.chunk;
    return c;
}

/* Stage holding the model chunk before / after one of stage s. */
static int previous_stage(const plan *pl, int s)
{
    return s > 0 ? s - 1 : pl->num_stages - 1;
}

static int next_stage(const plan *pl, int s)
{
    return s < pl->num_stages - 1 ? s + 1 : 0;
}

static bool is_first_chunk(int s, int j)
{
    return s == 0 && j == 0;
}

static bool is_last_chunk(const plan *pl, int s, int j)
{
    return s == pl->num_stages - 1 && j == pl->num_chunks - 1;
}

static int p2p(sched_stage *st, const plan *pl, const cm_model *cm, op_kind kind, int s,
               chunk_step c, int peer)
{
    if (peer == s)
        return 0; /* p = 1: the next chunk is on this device */
    return sched_emit_p2p(st, pl, cm, kind, s, c.chunk, c.micro_batch, peer);
}

static int forward_step(sched_stage *st, const plan *pl, const cm_model *cm, int s, int k)
{
    chunk_step c = forward_of(pl, k);
    bool skip = sched_skips_recompute(pl, s, c.micro_batch);
    if (!is_first_chunk(s, c.chunk) &&
        p2p(st, pl, cm, OP_RECV_FORWARD, s, c, previous_stage(pl, s)))
        return -1;
    if (sched_emit_forward(st, pl, cm, s, c.chunk, c.micro_batch, skip))
        return -1;
    if (!is_last_chunk(pl, s, c.chunk) && p2p(st, pl, cm, OP_SEND_FORWARD, s, c, next_stage(pl, s)))
        return -1;
    return 0;
}

static int backward_step(sched_stage *st, const plan *pl, const cm_model *cm, int s, int k)
{
    chunk_step c = backward_of(pl, k);
    bool skip = sched_skips_recompute(pl, s, c.micro_batch);
    if (!is_last_chunk(pl, s, c.chunk) &&
        p2p(st, pl, cm, OP_RECV_BACKWARD, s, c, next_stage(pl, s)))
        return -1;
    if (sched_emit_backward(st, pl, cm, s, c.chunk, c.micro_batch, skip, false))
        return -1;
    if (!is_first_chunk(s, c.chunk) &&
        p2p(st, pl, cm, OP_SEND_BACKWARD, s, c, previous_stage(pl, s)))
        return -1;
    return 0;
}

int sched_gen_interleaved(sched_stage *st, const plan *pl, const cm_model *cm, int s)
{
    int p = pl->num_stages, v = pl->num_chunks;
    int total = pl->num_micro_batches * v;
    int warmup = 2 * (p - s - 1) + (v - 1) * p;
    if (warmup > total)
        warmup = total;
    int next_forward = 0, next_backward = 0;
    for (; next_forward < warmup; next_forward++)
        if (forward_step(st, pl, cm, s, next_forward))
            return -1;
    for (; next_forward < total; next_forward++, next_backward++) {
        if (forward_step(st, pl, cm, s, next_forward))
            return -1;
        if (backward_step(st, pl, cm, s, next_backward))
            return -1;
    }
    for (; next_backward < total; next_backward++)
        if (backward_step(st, pl, cm, s, next_backward))
            return -1;
    return sched_emit_iteration_end(st, pl, cm, s);
}
