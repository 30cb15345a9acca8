/*
 * schedule_internal.h -- what the schedule generators share (not public).
 *
 * Each generator fills the op list of one stage.  They charge work through
 * the sched_emit_* helpers so that every schedule prices a forward, a
 * backward, a recompute or a boundary transfer identically; a generator only
 * decides the order.
 */
#ifndef SCHEDULE_INTERNAL_H
#define SCHEDULE_INTERNAL_H

#include <stdbool.h>

#include "schedule.h"
#include "step_order.h"

/* Sum over the layers of one model chunk, for one micro-batch. */
typedef struct sched_chunk {
    double forward_s, forward_comm_s;
    double backward_s, weight_grad_s, backward_comm_s;
    double recompute_s;
    double activation_bytes; /* kept from forward to backward */
    double transient_bytes;  /* largest per-layer recompute working set */
    double static_bytes, grad_bytes;
    double output_bytes;
    /* Scatter/gather p2p (cm_layer.recv_gather_s): the TP all-gather of the
     * activation this chunk receives before its forward, and of the
     * gradient it receives before its backward; 0 where nothing is
     * received (first chunk, last chunk, a single stage). */
    double input_gather_s, grad_gather_s;
} sched_chunk;

typedef int (*sched_generator)(sched_stage *st, const plan *pl, const cm_model *cm, int stage);

int sched_gen_gpipe(sched_stage *st, const plan *pl, const cm_model *cm, int stage);
int sched_gen_1f1b(sched_stage *st, const plan *pl, const cm_model *cm, int stage);
int sched_gen_interleaved(sched_stage *st, const plan *pl, const cm_model *cm, int stage);
/* The order of chunk-steps (sched_step_at(), sched_interleaved_warmup(),
 * sched_skips_recompute()) is in step_order.h, shared with memory.c. */

/* 1F1B's order over the m·v chunk-steps of stage s (schedule_1f1b.c):
 * min(warmup, m·v) forwards, then one forward and one backward until the
 * forwards run out, then the remaining backwards, then the flush.  1F1B and
 * interleaved 1F1B differ only in the warm-up. */
int sched_emit_1f1b_order(sched_stage *st, const plan *pl, const cm_model *cm, int stage,
                          int warmup);
int sched_gen_zb_h1(sched_stage *st, const plan *pl, const cm_model *cm, int stage);
int sched_gen_zb_h2(sched_stage *st, const plan *pl, const cm_model *cm, int stage);
/* PipeDream and PipeDream-2BW: one steady-state period (schedule_pipedream.c). */
int sched_gen_pipedream(sched_stage *st, const plan *pl, const cm_model *cm, int stage);

void sched_chunk_cost(const plan *pl, const cm_model *cm, int stage, int chunk, int micro_batch,
                      bool skip_recompute, sched_chunk *out);

/* Forward of (chunk, micro-batch i): allocates its activations. */
int sched_emit_forward(sched_stage *st, const plan *pl, const cm_model *cm, int s, int chunk, int i,
                       bool skip_recompute);
/* Recompute (when the chunk recomputes) then backward; frees the activations.
 * split_weight_grad leaves W to a later sched_emit_weight_grad(), which then
 * frees them. */
int sched_emit_backward(sched_stage *st, const plan *pl, const cm_model *cm, int s, int chunk,
                        int i, bool skip_recompute, bool split_weight_grad);
int sched_emit_weight_grad(sched_stage *st, const plan *pl, const cm_model *cm, int s, int chunk,
                           int i);
/* A send or receive of the boundary tensor of (chunk, micro-batch i). */
int sched_emit_p2p(sched_stage *st, const plan *pl, const cm_model *cm, op_kind kind, int s,
                   int chunk, int i, int peer);
/* Steps: an op with the transfers around it, placed as Megatron places them
 * (schedule_1f1b.c): receive the input just before the forward of (chunk,
 * micro-batch i), send the output right after; receive the output gradient
 * just before the backward, send the input gradient right after.  Model
 * chunk k = chunk·p + s talks to the stages holding chunks k − 1 and k + 1;
 * the first chunk receives no input and the last sends no output.  Recompute
 * is skipped where sched_skips_recompute() says.  send_input_grad false
 * leaves the gradient to a later sched_emit_p2p() (PipeDream carries it to
 * the next period); split_weight_grad as for sched_emit_backward(). */
int sched_emit_forward_step(sched_stage *st, const plan *pl, const cm_model *cm, int s, int chunk,
                            int i);
int sched_emit_backward_step(sched_stage *st, const plan *pl, const cm_model *cm, int s, int chunk,
                             int i, bool split_weight_grad, bool send_input_grad);
/* Data-parallel gradient all-reduce and optimizer step. */
int sched_emit_iteration_end(sched_stage *st, const plan *pl, const cm_model *cm, int s);

/* After a generator filled stage s (schedule_parallel.c): context
 * parallelism's exchange on the F, B and recompute ops, sharded data
 * parallelism's gathers and reduce-scatters around them, and the gradient
 * sync of a data-parallel × context-parallel group.  Leaves the list as it
 * is without them.  0, or -1 when out of memory. */
int sched_parallel_finish(sched_stage *st, const plan *pl, const cm_model *cm, int s);
/* Names of the op kinds it adds ("param-gather", "grad-reduce-scatter"), "?"
 * for any other. */
const char *sched_parallel_op_name(op_kind k);

#endif
