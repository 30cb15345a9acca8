/*
 * schedule_pipedream.c -- asynchronous pipelines without a flush: PipeDream
 * with weight stashing (Narayanan et al. SOSP'19, section 3.3) and
 * PipeDream-2BW (Narayanan et al. ICML'21, section 3.1).
 *
 * Both run the 1F1B order forever: stage s keeps k_s = p − s micro-batches
 * in flight (PipeDream's NOAM, SOSP'19 section 3.2) and never drains.  An
 * iteration is m >= p micro-batches: sched_build() refuses fewer, for which
 * this period would cap k_s at m (in_flight(), and memory.c's count) and
 * model a throttled pipeline that is neither schedule -- the times fell as
 * m grew (docs/planners.md, "PipeDream").  They differ in when weights
 * change, hence in how many versions a stage keeps:
 *   - PipeDream updates a stage's weights after every backward and stashes
 *     the version each in-flight micro-batch used for its forward, so that
 *     its backward sees the same weights: k_s versions (the live weights and
 *     k_s − 1 stashed copies).  Here each backward is followed by the
 *     stage's gradient all-reduce (when data-parallel) and optimizer step.
 *   - 2BW accumulates gradients over m micro-batches and updates once
 *     (the all-reduce and optimizer step close our iteration); with m >= p a
 *     micro-batch's forward and backward straddle at most one update, so two
 *     versions suffice (double buffering).  With m < p they would not: 2BW
 *     is defined for m >= p only (ICML'21, section 3.1).
 * memory.c charges the extra versions as static bytes (mem_stage_bytes()).
 *
 * What "one iteration" means.  An asynchronous pipeline has no iteration
 * boundary; a user wants its steady-state cost of m micro-batches.  The op
 * list is therefore one period of the steady state, not a fill-and-drain:
 * stage s runs, for j = 0..m−1, the forward of micro-batch j and the backward
 * of micro-batch j − (k_s − 1).  The first k_s − 1 backwards belong to the
 * previous iteration's last micro-batches, whose forwards ran in the previous
 * period, and this period's last k_s − 1 forwards are finished by the next:
 * the next iteration's warm-up overlaps this one's cool-down, as in a
 * pipeline that never drains.  Accordingly,
 *   - the activations of those k_s − 1 micro-batches are resident when the
 *     period starts: they are added to the stage's starting bytes
 *     (static_bytes, which the engine's tracker starts from), so the tracker's
 *     peak is the steady state's: static + k_s activations;
 *   - a gradient that crosses the period boundary (k_s − k_{s+1} of them on
 *     each backward channel: one, as m >= p) is sent by stage s+1 at the
 *     start of the period, instead of at the end of the previous one; its
 *     last backwards then send nothing.  Every channel still carries exactly
 *     m transfers per iteration.
 * Forward inputs are not carried: every stage forwards micro-batches 0..m−1
 * in the period, so stage s waits for stage s−1's first forward.  That one
 * pass of forward latency, (p − 1)·F with uniform stages, is the part of the
 * fill a single-period replay cannot hide (carrying both directions would
 * need a common op boundary on every stage, which uniform stages only have
 * when F = B).  With uniform stages and free communication the replay takes
 * m(F + B) + (p − 1)·F plus the weight updates: stage s starts at s·F, and
 * its j-th backward needs stage s+1's (j−1)-th, done at (s+1)·F + j(F+B),
 * just when stage s reaches it, so no stage waits again.  A measured bubble
 * of (p − 1)·F / (m(F + B)) against 1F1B's (p − 1)/m
 * (tests/test_pipedream_period.c).
 *
 * Micro-batch ids of the previous iteration's backwards are taken mod m, so
 * that sched_check() can match them.
 */
#include "schedule_internal.h"

/* k_s = min(p − s, m): p − s, since sched_build() refuses m < p. */
static int in_flight(const plan *pl, int s)
{
    int p = pl->num_stages, m = pl->num_micro_batches;
    return p - s < m ? p - s : m;
}

/* Micro-batch id mod m: backwards of the previous iteration keep their ids. */
static int wrap(const plan *pl, int i)
{
    int m = pl->num_micro_batches;
    return ((i % m) + m) % m;
}

/* Micro-batch of the j-th backward of the period: j − (k_s − 1), mod m. */
static int backward_micro_batch(const plan *pl, int s, int j)
{
    return wrap(pl, j - (in_flight(pl, s) - 1));
}

/* Gradients of stage s's backward channel to s−1 that cross the period
 * boundary: k_{s−1} − k_s (none on stage 0, which sends none). */
static int carried(const plan *pl, int s)
{
    return s > 0 ? in_flight(pl, s - 1) - in_flight(pl, s) : 0;
}

/* The backward of the j-th pair of the period; its gradient goes to stage
 * s−1 unless stage s−1 needs it only in the next period (carried). */
static int backward_step(sched_stage *st, const plan *pl, const cm_model *cm, int s, int j)
{
    int i = backward_micro_batch(pl, s, j);
    if (sched_emit_backward_step(st, pl, cm, s, 0, i, false,
                                 j < pl->num_micro_batches - carried(pl, s)))
        return -1;
    if (pl->schedule == SCHED_PIPEDREAM)
        return sched_emit_iteration_end(st, pl, cm, s); /* update per backward */
    return 0;
}

/* Gradients stage s−1 consumes first in this period but stage s computed at
 * the end of the previous one: the backwards of pairs m − carried .. m − 1. */
static int send_carried_gradients(sched_stage *st, const plan *pl, const cm_model *cm, int s)
{
    int m = pl->num_micro_batches;
    for (int j = m - carried(pl, s); j < m; j++) {
        int i = backward_micro_batch(pl, s, j);
        if (sched_emit_p2p(st, pl, cm, OP_SEND_BACKWARD, s, 0, i, s - 1))
            return -1;
    }
    return 0;
}

/* Activations of the micro-batches forwarded in the previous period whose
 * backwards run in this one. */
static double resident_activation_bytes(const plan *pl, const cm_model *cm, int s)
{
    double bytes = 0;
    for (int j = 0; j < in_flight(pl, s) - 1; j++) {
        int i = backward_micro_batch(pl, s, j);
        sched_chunk c;
        sched_chunk_cost(pl, cm, s, 0, i, sched_skips_recompute(pl, s, i), &c);
        bytes += c.activation_bytes;
    }
    return bytes;
}

int sched_gen_pipedream(sched_stage *st, const plan *pl, const cm_model *cm, int s)
{
    int m = pl->num_micro_batches;
    st->static_bytes += resident_activation_bytes(pl, cm, s);
    if (send_carried_gradients(st, pl, cm, s))
        return -1;
    for (int j = 0; j < m; j++) {
        if (sched_emit_forward_step(st, pl, cm, s, 0, j))
            return -1;
        if (backward_step(st, pl, cm, s, j))
            return -1;
    }
    if (pl->schedule == SCHED_PIPEDREAM_2BW)
        return sched_emit_iteration_end(st, pl, cm, s);
    return 0;
}
