/*
 * schedule_zb.c -- the handcrafted zero-bubble schedules ZB-H1 and ZB-H2
 * (Qi, Wan, Huang, Lin, "Zero Bubble Pipeline Parallelism", ICLR 2024,
 * section 2 and figure 3).
 *
 * The backward is split into B, the input gradient that the previous stage
 * waits for, and W, the weight gradient that nothing downstream needs: W can
 * wait and fill what would be bubbles.  Both schedules are the 1F1B pattern
 * with W passes delayed; they differ in how many micro-batches a stage may
 * hold (forwarded, W not yet done) and how many forwards it runs before its
 * first B:
 *   ZB-H1: min(p − s, m) warm-up forwards (1F1B's), at most p held.
 *          Paper, section 2.1: "we adjust the starting points of W passes
 *          depending on the number of warm-up micro-batches ... all workers
 *          maintain the same number of in-flight micro-batches", and the
 *          first worker's peak stays 1F1B's.
 *   ZB-H2: min(2(p − s) − 1, m) warm-up forwards, at most 2p − 1 held: with
 *          T_F = T_B = T_W stage s starts at time s and its first B arrives
 *          at 2p − 1 − s, so extra forwards fill that wait (section 2.2, the
 *          paper's (2p − 1)·M_B peak).
 * After the warm-up, for every B_j in order: run B_j; then, while forwards
 * remain, run the oldest pending W only if the next forward would exceed the
 * holding limit, then that forward; once the forwards are done, one pending W
 * per B.  The W passes left over run at the end, after the last B: that is the
 * paper's "W at the tail", which turns ZB-H2's trapezoid into a
 * parallelogram.  Stage s's order is thus fixed by (p, s, m), like 1F1B's.
 *
 * What this reproduces (checked by tests/test_engine_schedules.c on uniform
 * stages with free communication, and by brute force over p <= 10, m <= 4p
 * when the order was designed):
 *   - ZB-H1 with m >= p and T_W <= min(T_F, T_B): the iteration lasts
 *     m(T_F+T_B+T_W) + (p−1)(T_F+T_B−T_W), the paper's bubble.  With
 *     T_W > T_F or T_W > T_B the delayed W no longer fits and it is longer.
 *   - ZB-H2 with m >= 2p − 1 and T_F = T_B = T_W (the paper's assumption for
 *     its handcrafted schedules): every stage works without a gap from its
 *     first op to its last, the paper's zero bubble, (p−1)(T_F+T_B−2T_W) = 0.
 *     The layout is a parallelogram: stage s runs from s·T_F to s·T_F +
 *     3m·T_F.  The paper removes the optimizer's synchronisation ("post
 *     validation", section 4) so that the next iteration fills the p−1
 *     slots of skew; our iteration ends with the per-stage flush and the
 *     engine measures first op to last op, so one isolated iteration shows
 *     that skew: (p−1)·T_F, the same iteration time as ZB-H1 at equal times.
 *
 * Memory.  The paper charges M_B per micro-batch from F to B, then M_W (what
 * W needs: the inputs of each weight GEMM and the output gradients B
 * produced) from B to W, with M_W < M_B (sections 2.1 and 3.1).  The cost
 * model has no per-pass split of a layer's activations, so we keep a
 * micro-batch's whole activation until its W (sched_emit_backward with
 * split_weight_grad frees nothing, sched_emit_weight_grad frees it): an upper
 * bound by M_B − M_W per W-pending micro-batch.  Every stage then holds
 * min(p, m) micro-batches at its peak under ZB-H1 (stage 0 as under 1F1B) and
 * min(2p − 1, m) under ZB-H2, as memory.c's mem_inflight() says.
 */
#include "schedule_internal.h"

typedef struct zb_state {
    int next_forward, next_weight_grad; /* micro-batches, in order */
    int holding_limit;                  /* forwarded and W not yet done */
} zb_state;

static int weight_grad_step(sched_stage *st, const plan *pl, const cm_model *cm, int s, zb_state *z)
{
    return sched_emit_weight_grad(st, pl, cm, s, 0, z->next_weight_grad++);
}

static int zb_generate(sched_stage *st, const plan *pl, const cm_model *cm, int s, int warmup,
                       int holding_limit)
{
    int m = pl->num_micro_batches;
    zb_state z = {0, 0, holding_limit};
    if (warmup > m)
        warmup = m;
    for (; z.next_forward < warmup; z.next_forward++)
        if (sched_emit_forward_step(st, pl, cm, s, 0, z.next_forward))
            return -1;
    for (int j = 0; j < m; j++) {
        /* B only: the weight gradient is left to weight_grad_step(). */
        if (sched_emit_backward_step(st, pl, cm, s, 0, j, true, true))
            return -1;
        if (z.next_forward < m) {
            if (z.next_forward - z.next_weight_grad >= z.holding_limit &&
                weight_grad_step(st, pl, cm, s, &z))
                return -1;
            if (sched_emit_forward_step(st, pl, cm, s, 0, z.next_forward++))
                return -1;
        } else if (z.next_weight_grad <= j && weight_grad_step(st, pl, cm, s, &z)) {
            return -1;
        }
    }
    while (z.next_weight_grad < m)
        if (weight_grad_step(st, pl, cm, s, &z))
            return -1;
    return sched_emit_iteration_end(st, pl, cm, s);
}

int sched_gen_zb_h1(sched_stage *st, const plan *pl, const cm_model *cm, int s)
{
    int p = pl->num_stages;
    return zb_generate(st, pl, cm, s, p - s, p);
}

int sched_gen_zb_h2(sched_stage *st, const plan *pl, const cm_model *cm, int s)
{
    int p = pl->num_stages;
    return zb_generate(st, pl, cm, s, 2 * (p - s) - 1, 2 * p - 1);
}
