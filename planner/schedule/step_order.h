/*
 * step_order.h -- the order in which a pipeline stage runs its forwards and
 * backwards under the published schedules: the facts that the schedule
 * generators (schedule_*.c) emit and the memory model (memory.c) replays.
 *
 * They live apart from both so that neither calls into the other: the
 * generators include this header through schedule_internal.h, memory.c
 * includes it directly, and schedule.c may then use memory.h without an
 * include cycle.
 */
#ifndef STEP_ORDER_H
#define STEP_ORDER_H

#include <stdbool.h>

#include "plan.h"

/* The k-th chunk-forward (forward) or chunk-backward of a stage in 1F1B's
 * order over v chunks (schedule_1f1b.c): chunk (k / p) mod v, reversed
 * (v − 1 − it) for a backward, micro-batch (k / (p·v))·p + k mod p: groups
 * of p micro-batches go through chunk 0, then chunk 1, ... (Megatron's
 * interleaved order).  With v = 1: chunk 0, micro-batch k.  memory.c
 * replays the same order. */
typedef struct sched_chunk_step {
    int chunk, micro_batch;
} sched_chunk_step;
sched_chunk_step sched_step_at(int p, int v, int k, bool forward);

/* Megatron's interleaved warm-up on stage s: 2(p − s − 1) + (v − 1)·p
 * chunk-forwards (schedule_interleaved.c), before clamping to m·v. */
int sched_interleaved_warmup(int p, int s, int v);

/* Merak's shifted critical path: the last p−s micro-batches of stage s keep
 * their activations instead of recomputing (plan.merak_shifted_recompute). */
bool sched_skips_recompute(const plan *pl, int stage, int micro_batch);

#endif
