/*
 * frontier.h -- TensorOpt's frontier tracking (Cai et al., TensorOpt, TPDS
 * 2022): the Pareto frontier of (iteration time, memory per device) over the
 * parallelisation choices of a training job.
 *
 * Three layers, smallest first:
 *   1. Pareto sets of (time, memory) points and their algebra:
 *      frontier_prune (sort on time, keep strictly decreasing memory),
 *      frontier_union (Pareto of A ∪ B) and frontier_sum (the Pareto-sum
 *      A ⊕ B = Pareto{(t1 + t2, m1 + m2)}).
 *   2. The chain dynamic programme over operators with configurations:
 *      F_i(c) = Pareto ∪_{c'} [F_{i−1}(c') ⊕ E_i(c', c)] ⊕ N_i(c),
 *      with node frontiers N and resharding edge costs E, and the
 *      back-tracking that recovers the configuration of every point.
 *   3. The job's frontier: for a device count N, every TP/PP/DP split, micro-
 *      batch size and per-layer recompute option of a 1F1B pipeline, priced
 *      by the cost model (frontier_plan_time_s, mem_stage_bytes); the planner
 *      "ft" picks from it the fastest plan that fits device memory.
 * planner_frontier.c states the model and its sources.
 */
#ifndef FRONTIER_H
#define FRONTIER_H

#include <stdbool.h>

#include "cluster.h"
#include "costmodel.h"
#include "np_error.h"
#include "plan.h"
#include "workload.h"

/* ---- 1. Pareto sets ------------------------------------------------------ */

typedef struct frontier_point {
    double time_s;
    double memory_bytes;
    /* Provenance: frontier_sum() sets left / right to the indices of the two
     * summed points in its operands; frontier_union() and frontier_prune()
     * keep whatever the points carried. */
    int left, right;
} frontier_point;

typedef struct frontier_set {
    int count, capacity;
    frontier_point *points; /* after a prune: time increasing, memory decreasing */
} frontier_set;

void frontier_set_init(frontier_set *f);
void frontier_set_free(frontier_set *f);
/* Appends a point (no pruning).  0, or -1 when out of memory. */
int frontier_set_add(frontier_set *f, double time_s, double memory_bytes, int left, int right);
/* q dominates p: no worse in both and better in one (relative tolerance
 * FRONTIER_TOLERANCE, so that sums taken in different orders compare equal). */
bool frontier_dominates(const frontier_point *q, const frontier_point *p);
#define FRONTIER_TOLERANCE 1e-9

/* Keeps the non-dominated points, time increasing and memory strictly
 * decreasing; of points equal within the tolerance one is kept. */
void frontier_prune(frontier_set *f);
/* out = Pareto(a ∪ b); out may be a or b.  0, or -1 when out of memory. */
int frontier_union(const frontier_set *a, const frontier_set *b, frontier_set *out);
/* out = Pareto{(a_i + b_j)}; point left = i, right = j; out may be a or b. */
int frontier_sum(const frontier_set *a, const frontier_set *b, frontier_set *out);

/* ---- 2. Chain DP ----------------------------------------------------------- */

/* Operator i of a chain: its configurations' own frontiers N_i(c) and the
 * resharding cost from each configuration c' of operator i−1 (row-major
 * [c' · num_configs + c]; NULL means free; an infinite time forbids the pair;
 * ignored for operator 0). */
typedef struct frontier_chain_op {
    int num_configs;
    const frontier_set *node;        /* [num_configs] */
    const double *edge_time_s;       /* [prev num_configs · num_configs] or NULL */
    const double *edge_memory_bytes; /* same, or NULL */
} frontier_chain_op;

typedef struct frontier_chain {
    int num_ops;
    int *first_set;      /* [num_ops + 1]: sets of operator i are [first_set[i], first_set[i+1]) */
    frontier_set *sets;  /* F_i(c); point left/right = previous config / index in its set */
    int **node_pick;     /* per set, per point: index of the N_i(c) point used */
    frontier_set result; /* Pareto ∪_c F_last(c); left = config, right = index in F_last(c) */
} frontier_chain;

int frontier_chain_solve(const frontier_chain_op *ops, int num_ops, frontier_chain *out);
/* Configuration (and node point, when picks != NULL) of every operator for
 * point k of out->result. */
void frontier_chain_choice(const frontier_chain *ch, int k, int *configs, int *picks);
void frontier_chain_free(frontier_chain *ch);

/* ---- 3. The job's frontier ------------------------------------------------- */

/* One non-dominated configuration of the job. */
typedef struct frontier_entry {
    int devices;
    int tensor_parallel, pipeline_parallel, data_parallel;
    int micro_batch_size, num_micro_batches;
    double iteration_s;                    /* frontier_plan_time_s() of its plan */
    double memory_bytes;                   /* max over stages of mem_stage_bytes() of its plan */
    bool fits;                             /* memory_bytes <= device HBM */
    int num_layers;                        /* of the cost model */
    recompute_kind *recompute;             /* [num_layers] */
    int recompute_layers[RECOMPUTE_COUNT]; /* decoder (or listed) layers per option */
} frontier_entry;

typedef struct frontier {
    int count, capacity;
    frontier_entry *entries; /* per device count, time increasing, memory decreasing */
    int configs_evaluated;   /* (tp, pp, dp, micro-batch) tuples priced */
    double capacity_bytes;   /* device HBM the entries were checked against */
    double wall_s;
    bool zero_overlap; /* memory with ZeRO-2/3's overlap reserve (mem_zero_overlap_bytes()) */
} frontier;

void frontier_free(frontier *f);

/* The frontier of w on num_devices NPUs of cluster c.  out is initialised
 * here.  Returns 0 (possibly with no fitting entry), or NP_EXIT_INPUT when no
 * (tp, pp, dp, micro-batch) tuple is valid for num_devices. */
int frontier_compute(const wl_workload *w, const cl_cluster *c, int num_devices, frontier *out,
                     np_error *err);

/* The same, with zero_overlap the run's ZeRO-2/3 overlap (cm_model's
 * zero_overlap, simrun --dp-overlap): every tuple's memory then includes the
 * buffers the overlapped collectives hold, as mem_check_fits() counts them. */
int frontier_compute_with(const wl_workload *w, const cl_cluster *c, int num_devices,
                          bool zero_overlap, frontier *out, np_error *err);

/* Frontiers for N = 1, 2, 4, ... below c->num_npus and N = c->num_npus,
 * kept from the smallest N that has a fitting entry on; appended to out
 * (initialised here); zero_overlap as frontier_compute_with()'s. */
int frontier_sweep(const wl_workload *w, const cl_cluster *c, bool zero_overlap, frontier *out,
                   np_error *err);

/* Index of the fastest fitting entry for `devices` (0: any), or -1. */
int frontier_fastest_fitting(const frontier *f, int devices);
/* Index of the entry with the least memory for `devices` (0: any), or -1. */
int frontier_smallest_memory(const frontier *f, int devices);

/* CSV, one row per entry, in the "Frontier CSV" format of analysis/README.md
 * (analysis/plot_frontier.py; `--group devices` draws one frontier per count):
 *   devices,tp,pp,dp,micro_batch_size,recompute,iteration_s,memory_bytes,
 *   feasible,capacity_bytes
 * recompute is none / selective / full when every decoder layer uses it, else
 * "mixed(N/S/F)" (decoder layers with none / selective / full); iteration_s is
 * the frontier's prediction; feasible is true when the entry fits. */
int frontier_write_csv(const char *path, const frontier *f, np_error *err);

/* The workload w with an entry's or a plan's parallel sizes and micro-batch
 * size: the job a cost model must be built for before the plan is checked,
 * scheduled or simulated (cm_build reads these fields). */
void frontier_workload_for_entry(const wl_workload *w, const frontier_entry *e, wl_workload *out);
void frontier_workload_for_plan(const wl_workload *w, const plan *pl, wl_workload *out);

/* The 1F1B plan of an entry (uniform Megatron partition, the entry's
 * per-layer recompute), with predicted_iteration_s set. */
int frontier_entry_plan(const wl_workload *w, const cl_cluster *c, const frontier_entry *e,
                        plan *out, np_error *err);

/* The cost function of the frontier, for any 1F1B plan with uniform
 * micro-batches: the 1F1B critical path
 *   T = Σ_s S_s + (m − 1)·max_s S_s + max_s (DP all-reduce_s + optimizer_s),
 * S_s = Σ_{l in s} (F_l + B_l + W_l + TP collectives + recompute_l) + 2·c_s,
 * c_s the boundary send of stage s (docs/planners.md, BMPipe's τ ≥ F + B + 2c). */
double frontier_plan_time_s(const cm_model *cm, const cl_cluster *c, const plan *pl);

#endif
