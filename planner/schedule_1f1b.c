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
 * gradient just before the backward, send the input gradient right after.
 */
#include "schedule_internal.h"

static int forward_step(sched_stage *st, const plan *pl, const cm_model *cm, int s, int i)
{
    int p = pl->num_stages;
    bool skip = sched_skips_recompute(pl, s, i);
    if (s > 0 && sched_emit_p2p(st, pl, cm, OP_RECV_FORWARD, s, 0, i, s - 1))
        return -1;
    if (sched_emit_forward(st, pl, cm, s, 0, i, skip))
        return -1;
    if (s < p - 1 && sched_emit_p2p(st, pl, cm, OP_SEND_FORWARD, s, 0, i, s + 1))
        return -1;
    return 0;
}

static int backward_step(sched_stage *st, const plan *pl, const cm_model *cm, int s, int i)
{
    int p = pl->num_stages;
    bool skip = sched_skips_recompute(pl, s, i);
    if (s < p - 1 && sched_emit_p2p(st, pl, cm, OP_RECV_BACKWARD, s, 0, i, s + 1))
        return -1;
    if (sched_emit_backward(st, pl, cm, s, 0, i, skip, false))
        return -1;
    if (s > 0 && sched_emit_p2p(st, pl, cm, OP_SEND_BACKWARD, s, 0, i, s - 1))
        return -1;
    return 0;
}

int sched_gen_1f1b(sched_stage *st, const plan *pl, const cm_model *cm, int s)
{
    int p = pl->num_stages, m = pl->num_micro_batches;
    int warmup = p - s - 1 < m ? p - s - 1 : m;
    int next_forward = 0, next_backward = 0;
    for (; next_forward < warmup; next_forward++)
        if (forward_step(st, pl, cm, s, next_forward))
            return -1;
    for (; next_forward < m; next_forward++, next_backward++) {
        if (forward_step(st, pl, cm, s, next_forward))
            return -1;
        if (backward_step(st, pl, cm, s, next_backward))
            return -1;
    }
    for (; next_backward < m; next_backward++)
        if (backward_step(st, pl, cm, s, next_backward))
            return -1;
    return sched_emit_iteration_end(st, pl, cm, s);
}
