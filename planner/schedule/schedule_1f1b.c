/*
 * schedule_1f1b.c -- one-forward-one-backward (PipeDream-Flush, Megatron's
 * default non-interleaved schedule; Narayanan et al. SC'21, section 2.2.1).
 *
 * Stage s of p runs min(p−s−1, m) warm-up forwards, then alternates one
 * forward and one backward until the m forwards are done, then drains the
 * remaining backwards; a flush (gradient all-reduce, optimizer step) ends the
 * iteration.  At most min(p−s, m) micro-batches are in flight on stage s, and
 * with uniform stages and free communication the iteration takes
 * (m + p − 1)(F + B): a bubble of (p−1)/m of the useful work.
 *
 * Order of communication follows Megatron's: receive the forward input just
 * before the forward, send the output right after it; receive the output
 * gradient just before the backward, send the input gradient right after
 * (the sched_emit_*_step() helpers of schedule.c, which every generator uses).
 */
#include "schedule_internal.h"

static int forward_step(sched_stage *st, const plan *pl, const cm_model *cm, int s, int k)
{
    sched_chunk_step c = sched_step_at(pl->num_stages, pl->num_chunks, k, true);
    return sched_emit_forward_step(st, pl, cm, s, c.chunk, c.micro_batch);
}

static int backward_step(sched_stage *st, const plan *pl, const cm_model *cm, int s, int k)
{
    sched_chunk_step c = sched_step_at(pl->num_stages, pl->num_chunks, k, false);
    return sched_emit_backward_step(st, pl, cm, s, c.chunk, c.micro_batch, false, true);
}

/* overlap_p2p_comm: the sends of ops [from, end) go without their stage
 * waiting for them. */
static void mark_async_sends(sched_stage *st, int from)
{
    for (int i = from; i < st->num_ops; i++)
        if (st->ops[i].kind == OP_SEND_FORWARD || st->ops[i].kind == OP_SEND_BACKWARD)
            st->ops[i].async_send = 1;
}

/* With overlap_p2p_comm (interleaved only, as in Megatron-Core's
 * forward_backward_pipelining_with_interleaving) the steady state posts each
 * forward's send and waits for it only before the next forward, after the
 * backward in between, and each backward's send before the next backward:
 * those sends overlap compute.  A warm-up forward's send is waited for before
 * the next warm-up forward, nothing in between, and the cool-down's sends
 * block, as does the last steady-state backward's (the cool-down waits for
 * it first): those stay blocking. */
int sched_emit_1f1b_order(sched_stage *st, const plan *pl, const cm_model *cm, int s, int warmup)
{
    int total = pl->num_micro_batches * pl->num_chunks;
    if (warmup > total)
        warmup = total;
    bool async = cm_async_p2p(cm, pl->num_chunks);
    int next_forward = 0, next_backward = 0;
    for (; next_forward < warmup; next_forward++)
        if (forward_step(st, pl, cm, s, next_forward))
            return -1;
    for (; next_forward < total; next_forward++, next_backward++) {
        int from = st->num_ops;
        if (forward_step(st, pl, cm, s, next_forward))
            return -1;
        if (async)
            mark_async_sends(st, from);
        from = st->num_ops;
        if (backward_step(st, pl, cm, s, next_backward))
            return -1;
        if (async && next_forward + 1 < total)
            mark_async_sends(st, from);
    }
    for (; next_backward < total; next_backward++)
        if (backward_step(st, pl, cm, s, next_backward))
            return -1;
    return sched_emit_iteration_end(st, pl, cm, s);
}

int sched_gen_1f1b(sched_stage *st, const plan *pl, const cm_model *cm, int s)
{
    return sched_emit_1f1b_order(st, pl, cm, s, pl->num_stages - s - 1);
}
