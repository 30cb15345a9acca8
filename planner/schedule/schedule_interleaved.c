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
 * one stage (p = 1) the chunks hand over on the device: no transfer.  The
 * step helpers of schedule.c (sched_emit_forward_step(), ...) place these
 * transfers for every generator; with v = 1 they reduce to 1F1B's.
 *
 * So interleaved 1F1B is 1F1B's order over chunk-steps with Megatron's longer
 * warm-up: both run sched_emit_1f1b_order() (schedule_1f1b.c).
 */
#include "schedule_internal.h"

int sched_gen_interleaved(sched_stage *st, const plan *pl, const cm_model *cm, int s)
{
    int warmup = sched_interleaved_warmup(pl->num_stages, s, pl->num_chunks);
    if (cm->moe_overlap) /* Megatron-Core's combined 1F1B: one more (engine_moe_overlap.c) */
        warmup++;
    return sched_emit_1f1b_order(st, pl, cm, s, warmup);
}
