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
 */
#ifndef MEMORY_H
#define MEMORY_H

#include "costmodel.h"
#include "plan.h"

typedef struct mem_stage {
    double static_bytes;     /* weights + grads + optimizer state (+ stashed versions) */
    double activation_bytes; /* peak of kept activations */
    double transient_bytes;  /* recompute working set on top of that */
    double workspace_bytes;
    double total_bytes;
    double capacity_bytes;
} mem_stage;

/* Micro-batches whose activations chunk `chunk` of stage s holds at its peak. */
double mem_inflight(schedule_kind sched, int p, int s, int m, int v, int chunk);

/* Weight copies stage s keeps besides the live weights: PipeDream stashes
 * one per in-flight micro-batch but the newest, min(p−s, m) − 1;
 * PipeDream-2BW one; every other schedule none. */
double mem_stash_copies(schedule_kind sched, int p, int s, int m);

/* Memory of stage s under the plan. */
void mem_stage_bytes(const cm_model *cm, const plan *pl, int s, mem_stage *out);

/* 0 when every stage fits, NP_EXIT_NOFIT with a message listing the bytes
 * needed and available per stage otherwise. */
int mem_check_fits(const cm_model *cm, const plan *pl, np_error *err);

#endif
