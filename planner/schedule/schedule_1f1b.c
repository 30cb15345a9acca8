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

int sched_emit_1f1b_order(sched_stage *st, const plan *pl, const cm_model *cm, int s, int warmup)
{
    int total = pl->num_micro_batches * pl->num_chunks;
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

int sched_gen_1f1b(sched_stage *st, const plan *pl, const cm_model *cm, int s)
{
    return sched_emit_1f1b_order(st, pl, cm, s, pl->num_stages - s - 1);
}
