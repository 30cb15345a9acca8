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

/* The k-th chunk-step of a stage: chunk (k / p) mod v, micro-batch
 * (k / (p·v))·p + k mod p for a forward; the chunks in reverse for a backward
 * (schedule_interleaved.c).  With v = 1: chunk 0, micro-batch k. */
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

static int forward_step(sched_stage *st, const plan *pl, const cm_model *cm, int s, int k)
{
    chunk_step c = forward_of(pl, k);
    return sched_emit_forward_step(st, pl, cm, s, c.chunk, c.micro_batch);
}

static int backward_step(sched_stage *st, const plan *pl, const cm_model *cm, int s, int k)
{
    chunk_step c = backward_of(pl, k);
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
