/*
 * schedule_gpipe.c -- GPipe: every forward, then every backward (Huang et al.
 * 2019, "GPipe: Efficient Training of Giant Neural Networks using Pipeline
 * Parallelism", section 2.2 and figure 2c).
 *
 * Stage s runs the forwards of micro-batches 0..m−1, then their backwards in
 * reverse order (m−1 first, as in the paper's figure: the last stage can start
 * the backward of the micro-batch it has just finished), then the flush
 * (gradient all-reduce and optimizer step).  Every micro-batch's activations
 * are alive when the first backward starts: m in flight on every stage.  With
 * uniform stages and free communication the iteration takes (m + p − 1)(F + B),
 * a bubble of (p − 1)/m of the useful work, the same as 1F1B; GPipe only pays
 * in memory.
 *
 * Communication is placed as in schedule_1f1b.c: a receive just before the op
 * that needs it, a send right after the op that produced it.
 */
#include "schedule_internal.h"

int sched_gen_gpipe(sched_stage *st, const plan *pl, const cm_model *cm, int s)
{
    int m = pl->num_micro_batches;
    for (int i = 0; i < m; i++)
        if (sched_emit_forward_step(st, pl, cm, s, 0, i))
            return -1;
    for (int i = m - 1; i >= 0; i--)
        if (sched_emit_backward_step(st, pl, cm, s, 0, i, false, true))
            return -1;
    return sched_emit_iteration_end(st, pl, cm, s);
}
