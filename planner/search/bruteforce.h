/*
 * bruteforce.h -- exhaustive search over small plans: the reference optimum
 * that the planner tests compare against.
 *
 * bf_search() visits every plan that splits a model's layers into the p·v
 * contiguous, non-empty model chunks of a template plan and gives every layer
 * one of a set of recompute options, asks a cost function for each, and keeps
 * the cheapest.  It knows nothing of any planner: the cost function says what
 * "cheapest" means and which plans are allowed (return INFINITY to reject).
 *
 * Size: C(L−1, p·v−1) partitions × |options|^L recompute choices.  With 8
 * layers, 4 stages and 3 options that is 35 × 6561 = 229,635 plans; keep tests
 * in that range (bf_search refuses more than BF_MAX_CANDIDATES).
 *
 * Typical use in a test:
 *   plan shape;                        // stages, chunks, schedule, m, ... set
 *   bf_bmpipe_ctx ctx = {&cm, NULL};   // NULL cluster: free communication
 *   plan best; bf_result res;
 *   bf_search(&shape, BF_ALL_OPTIONS, bf_cost_bmpipe, &ctx, &best, &res);
 *   ... compare res.best_cost with the planner's predicted_iteration_s ...
 *   plan_free(&best);
 */
#ifndef BRUTEFORCE_H
#define BRUTEFORCE_H

#include "cluster.h"
#include "costmodel.h"
#include "plan.h"

/* Cost of a candidate plan, lower is better; INFINITY rejects it (e.g. it
 * does not fit in memory).  The candidate is only valid during the call. */
typedef double (*bf_cost_fn)(const plan *candidate, void *ctx);

/* Recompute options to try, one bit per recompute_kind. */
#define BF_OPTION(r) (1u << (r))
#define BF_ALL_OPTIONS                                                                             \
    (BF_OPTION(RECOMPUTE_NONE) | BF_OPTION(RECOMPUTE_SELECTIVE) | BF_OPTION(RECOMPUTE_FULL))

#define BF_MAX_CANDIDATES 50000000L

typedef struct bf_result {
    double best_cost; /* INFINITY when every candidate was rejected */
    long evaluated;   /* candidates passed to the cost function */
} bf_result;

/* Searches every partition of shape->num_layers layers into
 * shape->num_stages · shape->num_chunks chunks and every per-layer recompute
 * option in option_mask.  Everything else (schedule, micro-batching, TP, DP)
 * is copied from shape.  On success best holds the first cheapest plan in
 * enumeration order (the first candidate when every one was rejected and
 * res->best_cost is INFINITY); free it with plan_free().
 * Returns 0, or -1 when the search is empty or larger than BF_MAX_CANDIDATES,
 * or memory runs out (best is then left empty). */
int bf_search(const plan *shape, unsigned option_mask, bf_cost_fn cost, void *ctx, plan *best,
              bf_result *res);

/* Number of candidates bf_search() would visit: C(L−1, chunks−1) · options^L
 * (−1 when it exceeds BF_MAX_CANDIDATES or the shape is empty). */
long bf_count(int num_layers, int num_chunks, unsigned option_mask);

/* The BMPipe objective (docs/planners.md "BMPipe") as a bf_cost_fn.  With
 *   F_s + B_s = Σ over the layers of stage s of cm_forward_total_s +
 *               cm_backward_total_s(layer, its recompute option),
 *   c_k       = cm_boundary_s(output bytes of chunk k's last layer, scale-out)
 *               for every chunk but the last (0 with a NULL cluster),
 *   τ         = max_s (F_s + B_s + 2 Σ_{chunks k of s} c_k),
 * it returns T = Σ_s (F_s + B_s) / v + (m − 1/v)·τ, i.e. the 1F1B critical
 * path Σ_s (F_s + B_s) + (m − 1)·τ for v = 1, and INFINITY when
 * mem_check_fits() rejects the plan. */
typedef struct bf_bmpipe_ctx {
    const cm_model *cm;
    const cl_cluster *cluster; /* NULL: communication is free */
} bf_bmpipe_ctx;
double bf_cost_bmpipe(const plan *candidate, void *ctx);

#endif
