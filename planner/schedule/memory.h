/*
 * memory.h -- device memory of a pipeline stage under a plan.
 *
 * Stage bytes = static (weights, gradients, optimizer state of the stage's
 * layers) + in-flight micro-batches × activation bytes kept per micro-batch
 * + the largest transient of a recompute pass + workspace.
 * The in-flight counts are the schedules' published ones (docs/design.md,
 * memory model):
 *   GPipe m; 1F1B min(p−s, m); interleaved stage s: Megatron's warm-up count;
 *   ZB-H1 min(p, m) and ZB-H2 min(2p−1, m) on every stage (activations stay
 *   until the delayed W); PipeDream weight stashing adds one weight
 *   version per in-flight micro-batch, 2BW two.
 * The simulator's memory tracker measures the same quantity op by op; the two
 * agree exactly for uniform micro-batches (a test checks it).
 * The same figures, split by what holds them, are simrun --memory's table
 * (sim/cli/cli_memory.c), the CSV's mem_* columns and the "does not fit"
 * error's text (mem_describe_stage()).
 */
#ifndef MEMORY_H
#define MEMORY_H

#include "costmodel.h"
#include "plan.h"

/* The memory of one pipeline stage at its peak, in bytes per NPU.  The
 * static part is split by what holds it (the state split of
 * costmodel_sharding.c, with the sharding level of
 * data_parallel_sharding_strategy / use_distributed_optimizer applied):
 * weight_bytes + stash_bytes + grad_bytes + optimizer_bytes = static_bytes,
 * static + activation + transient + workspace = total_bytes. */
typedef struct mem_stage {
    double static_bytes;     /* weights + grads + optimizer state (+ stashed versions) */
    double activation_bytes; /* peak of kept activations */
    double transient_bytes;  /* recompute working set on top of that */
    double workspace_bytes;
    double total_bytes;
    double capacity_bytes;
    double weight_bytes;    /* the live weights (1/n of them under ZeRO-3) */
    double stash_bytes;     /* PipeDream's stashed weight versions */
    double grad_bytes;      /* gradients (1/n under ZeRO-2/3) */
    double optimizer_bytes; /* master weights and Adam moments (1/n when sharded) */
    int inflight;           /* chunk forwards whose activations are held at the activation
                               peak: micro-batches, or (chunk, micro-batch) pairs when
                               interleaved */
} mem_stage;

/* One model chunk of a stage (interleaved schedules have v per stage) at the
 * stage's activation peak. */
typedef struct mem_chunk {
    int layers;
    double weight_bytes, grad_bytes, optimizer_bytes;
    double activation_bytes; /* held by this chunk at the stage's activation peak */
    int inflight;            /* its micro-batches held then */
} mem_chunk;

/* Micro-batches whose activations chunk `chunk` of stage s holds at its peak. */
double mem_inflight(schedule_kind sched, int p, int s, int m, int v, int chunk);

/* Weight copies stage s keeps besides the live weights: PipeDream stashes
 * one per in-flight micro-batch but the newest, min(p−s, m) − 1;
 * PipeDream-2BW one; every other schedule none. */
double mem_stash_copies(schedule_kind sched, int p, int s, int m);

/* The buffers ZeRO-2/3's overlapped collectives hold on stage s besides the
 * cost model's workspace (cm->zero_overlap, simrun --dp-overlap, with
 * data_parallel_sharding_strategy optim_grads or optim_grads_params and
 * DP ≥ 2): the unsharded gradients of the stage's largest chunk for the
 * reduce-scatter in flight, plus under ZeRO-3 the gathered parameters of
 * its largest chunk for the prefetch; 0 without the overlap.  Part of
 * mem_stage.workspace_bytes, and the engine's tracker starts from it. */
double mem_zero_overlap_bytes(const cm_model *cm, const plan *pl, int s);

/* Layer l's share of that reserve when its stage is one chunk (every
 * schedule but the interleaved one): a one-chunk stage of layers [i, j)
 * reserves exactly the sum of its layers' shares, so planners that size
 * stages by prefix sums add it to the static bytes.  0 without the overlap. */
double mem_zero_overlap_layer_bytes(const cm_model *cm, int l);

/* Memory of stage s under the plan. */
void mem_stage_bytes(const cm_model *cm, const plan *pl, int s, mem_stage *out);

/* The same, and when chunks is not NULL the plan's num_chunks (at least 1)
 * chunks of stage s, chunk j in chunks[j]; mem_stage_bytes() is this with
 * chunks NULL. */
void mem_stage_chunks(const cm_model *cm, const plan *pl, int s, mem_stage *out, mem_chunk *chunks);

/* The stage with the largest total (the first of equal ones), its memory in
 * *out; -1 when the plan has no stage. */
int mem_worst_stage(const cm_model *cm, const plan *pl, mem_stage *out);

/* Layer l's static bytes split into weights, gradients and optimizer state
 * (they sum to its state_bytes).  A model built from a workload splits by
 * its dtype and sharding: per parameter D weight, G gradient and S optimizer
 * bytes (bf16 2, 4, 12), each divided by the data-parallel (× CP) shards
 * when the sharding level covers it (ZeRO-1: S, ZeRO-2: G and S, ZeRO-3:
 * all; experts over shards / ep).  A synthetic model (no workload) has
 * weight_bytes_per_param per parameter of weights, the rest as optimizer. */
void mem_layer_state(const cm_model *cm, int l, double *weights, double *grads, double *optimizer);

/* "stage S needs T GB (weights ... + workspace W) but has C GB" into buf,
 * the breakdown the "does not fit" error gives; returns snprintf's count. */
int mem_describe_stage(char *buf, int size, int s, const mem_stage *st);

/* 0 when every stage fits, NP_EXIT_NOFIT with a message listing the bytes
 * needed and available per stage otherwise. */
int mem_check_fits(const cm_model *cm, const plan *pl, np_error *err);

#endif
