/*
 * schedule.h -- pipeline schedules as ordered op lists, one per stage.
 *
 * A schedule generator turns (plan, cost model) into, for every pipeline
 * stage, the exact sequence of operations its worker performs in one
 * iteration: forward and backward passes of (micro-batch, virtual chunk),
 * recompute passes, the sends and receives between neighbouring stages, the
 * data-parallel gradient all-reduce and the optimizer step.  Every op carries
 * its duration and bytes, computed here from the cost model, so the simulator
 * only replays: it never needs to know what a layer is.
 *
 * All data-parallel replicas of a stage run the same list.  Sends and receives
 * on one channel (stage pair and direction) are matched in FIFO order; the
 * generators emit them in matching order, and sched_check() verifies it.
 *
 * Memory: an op with mem_delta_bytes > 0 allocates when it starts, one with
 * mem_delta_bytes < 0 frees when it ends; mem_transient_bytes is held only
 * while the op runs.
 */
#ifndef SCHEDULE_H
#define SCHEDULE_H

#include <stdint.h>

#include "costmodel.h"
#include "np_error.h"
#include "plan.h"

typedef enum op_kind {
    OP_FORWARD = 0,
    OP_BACKWARD,      /* input gradient (B); includes W when the schedule does not split it */
    OP_WEIGHT_GRAD,   /* weight gradient (W), zero-bubble schedules */
    OP_RECOMPUTE,     /* re-run of the forward before the backward */
    OP_SEND_FORWARD,  /* activation to the next stage */
    OP_RECV_FORWARD,  /* activation from the previous stage */
    OP_SEND_BACKWARD, /* gradient to the previous stage */
    OP_RECV_BACKWARD, /* gradient from the next stage */
    OP_DP_ALLREDUCE,  /* gradient all-reduce over data parallelism */
    OP_OPTIMIZER,     /* optimizer step */
    OP_ALLTOALL,      /* expert-parallel all-to-all (MoE) */
    /* Sharded data parallelism (schedule_parallel.c), on the data-parallel
     * (× context-parallel) group: an all-gather of `bytes` of parameters
     * (its output), a reduce-scatter of `bytes` of gradients (its input). */
    OP_PARAM_GATHER,
    OP_GRAD_REDUCE_SCATTER,
    OP_KIND_COUNT
} op_kind;

typedef struct sched_op {
    uint8_t kind;  /* op_kind */
    uint8_t chunk; /* virtual chunk on this stage */
    /* A send the stage does not wait for (overlap_p2p_comm: the interleaved
     * schedule's steady-state sends, schedule_1f1b.c); the receiver waits. */
    uint8_t async_send;
    /* A backward whose weight gradient is its own W op (the zero-bubble
     * schedules, sched_emit_backward's split_weight_grad). */
    uint8_t weight_grad_split;
    int32_t micro_batch; /* -1 for per-iteration ops */
    int32_t peer;        /* peer stage of a send / receive, else -1 */
    double compute_s;    /* compute time on the NPU */
    double comm_s;       /* TP collective time inside the op (scale-up fabric) */
    double bytes;        /* per TP rank: message, or all-reduce payload */
    double mem_delta_bytes;
    double mem_transient_bytes;
    /* Context parallelism, on an F, B or recompute op (schedule_parallel.c):
     * cp_bytes sent to the CP ring successor (one message after another,
     * cp_steps of them) while cp_overlap_s of the op's compute runs; the op
     * waits for its predecessor's before the rest of its compute.  0: none. */
    double cp_bytes;
    double cp_overlap_s;
    int32_t cp_steps;
} sched_op;

typedef struct sched_stage {
    int num_ops;
    int capacity;
    sched_op *ops;
    double static_bytes; /* weights + grads + optimizer state (+ stashes) */
    double workspace_bytes;
} sched_stage;

typedef struct schedule {
    int num_stages;
    sched_stage *stages;
} schedule;

/* Builds the op lists for pl->schedule.  Returns 0 or an np_exit_code. */
int sched_build(const plan *pl, const cm_model *cm, schedule *out, np_error *err);
void sched_free(schedule *sc);

/* Verifies every receive has a matching send in FIFO order per channel and
 * that a fully sequential replay cannot deadlock. */
int sched_check(const schedule *sc, np_error *err);

const char *sched_op_name(op_kind k);

/* Internal helpers shared by the generators (schedule.c). */
sched_op *sched_push(sched_stage *st, op_kind kind, int micro_batch, int chunk);

#endif
