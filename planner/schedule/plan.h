/*
 * plan.h -- a training plan: what a planner decides and the simulator replays.
 *
 * A plan partitions the cost model's layer array into p·v contiguous model
 * chunks (v = 1 except for interleaved schedules), gives every layer a
 * recompute option and fixes micro-batching and the schedule.  Model chunk
 * k = j·p + s is virtual chunk j of pipeline stage s (Megatron's interleaved
 * layout); it holds layers [chunk_start[k], chunk_start[k+1]).
 */
#ifndef PLAN_H
#define PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "costmodel.h"
#include "np_error.h"
#include "workload.h"

typedef struct plan {
    char planner[32];
    schedule_kind schedule;
    int num_stages;            /* p */
    int num_chunks;            /* v: virtual chunks per stage */
    int num_layers;            /* length of the cost model's layer array */
    int *chunk_start;          /* [p·v + 1], chunk_start[0] = 0, [p·v] = num_layers */
    recompute_kind *recompute; /* [num_layers] */
    /* Per-unit recompute (AdaPipe): when non-NULL, layer l recomputes the
     * units of cm_layer.units whose bit is set in recompute_units[l], and
     * recompute[l] is ignored for it.  NULL for every other planner. */
    uint16_t *recompute_units;
    int micro_batch_size;
    int num_micro_batches;  /* m, per pipeline per iteration */
    int *micro_batch_sizes; /* [m] when micro-batches differ (CSIMD), else NULL */
    int tensor_parallel;
    int data_parallel;
    bool merak_shifted_recompute; /* last p−s micro-batches of stage s skip recompute */
    double predicted_iteration_s; /* the planner's own estimate; 0 when none */
    double planner_wall_s;
    /* Planners that call a solver (BMPipe's ILP): the relative MIP gap left
     * when it stopped (0 when proven optimal, INFINITY when no bound was
     * proven) and its status, e.g. "optimal, count form"; "" for others. */
    double solver_gap;
    char solver_status[32];
    /* cm_fingerprint() of the cost model predicted_iteration_s was priced
     * with; "" when unknown (a plan file written before the key existed). */
    char cost_model_sha256[65];
    /* One sentence the planner wants the reader to see beside its row (e.g.
     * that it chose its own cut points over the workload's fixed split);
     * "" for none.  Not part of the plan's JSON form. */
    char note[192];
} plan;

/* Allocates arrays for p stages, v chunks, L layers; everything else zero. */
int plan_init(plan *pl, int num_stages, int num_chunks, int num_layers);
void plan_free(plan *pl);
int plan_copy(plan *dst, const plan *src);

/* What layer l costs under the plan's recompute decision for it (none when
 * skip_recompute, as Merak's shifted critical path asks): the recompute time
 * before its backward, the activation bytes it keeps between forward and
 * backward, and the extra bytes the recompute materialises while it runs.
 * The one place that turns a recompute decision into time and bytes: the
 * schedules and the memory model both call it. */
typedef struct plan_layer_cost {
    double recompute_s;
    double activation_bytes;
    double transient_bytes;
} plan_layer_cost;
void plan_layer_recompute(const plan *pl, const cm_model *cm, int layer, bool skip_recompute,
                          plan_layer_cost *out);

/* Allocates recompute_units (all zero) for a per-unit plan. */
int plan_use_recompute_units(plan *pl);

/* Stage and virtual chunk holding layer l. */
int plan_stage_of_layer(const plan *pl, int layer, int *chunk);

/* Checks that chunks are contiguous, non-empty and cover every layer, and
 * that each schedule's constraints hold (e.g. m divisible by p for
 * interleaved).  source names the plan's origin for the message. */
int plan_check(const plan *pl, const char *source, np_error *err);

#endif
