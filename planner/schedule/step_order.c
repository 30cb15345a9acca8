/*
 * step_order.c -- which chunk-step a stage runs when (step_order.h).
 *
 * These three facts are shared by the schedule generators, which emit ops in
 * this order, and by the memory model, which replays it to find a stage's
 * activation peak; keeping them here lets memory.c and the schedules depend
 * on them without depending on each other.  The orders themselves are
 * explained where the schedules are: schedule_1f1b.c (1F1B over chunk-steps),
 * schedule_interleaved.c (Megatron's interleaved warm-up) and memory.c (the
 * in-flight counts they give).
 */
#include "step_order.h"

sched_chunk_step sched_step_at(int p, int v, int k, bool forward)
{
    int in_group = (k / p) % v;
    sched_chunk_step c = {forward ? in_group : v - 1 - in_group, (k / (p * v)) * p + k % p};
    return c;
}

int sched_interleaved_warmup(int p, int s, int v) { return 2 * (p - s - 1) + (v - 1) * p; }

bool sched_skips_recompute(const plan *pl, int stage, int micro_batch)
{
    if (!pl->merak_shifted_recompute)
        return false;
    int p = pl->num_stages, m = pl->num_micro_batches;
    return micro_batch >= m - (p - stage);
}
