/*
 * planner.h -- the one interface every planner implements.
 *
 * A planner is a function from (cost model, cluster, workload, options) to a
 * plan.  It never simulates, parses or prints; it may fail with an np_error
 * (typically NP_EXIT_NOFIT when no plan fits in memory).  planner_run() wraps
 * every planner the same way: it times it, checks the plan it returns and
 * records its name.
 */
#ifndef PLANNER_H
#define PLANNER_H

#include "cluster.h"
#include "costmodel.h"
#include "np_error.h"
#include "plan.h"
#include "workload.h"

typedef struct planner_options {
    schedule_kind schedule;  /* schedule the plan must use */
    int num_chunks;          /* v, for interleaved */
    int recompute;           /* a recompute_kind for every layer, or -1: the planner chooses */
    double time_limit_s;     /* for search-based planners (the ILP) */
} planner_options;

/* Defaults taken from the workload: its schedule, virtual chunks and
 * recompute granularity; 10 s time limit (GLPK's glp_init_iocp() style). */
void planner_init_options(planner_options *o, const wl_workload *w);

typedef int (*planner_fn)(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                          const planner_options *o, plan *out, np_error *err);

typedef struct planner_desc {
    const char *name;
    const char *summary;
    planner_fn run;
} planner_desc;

const planner_desc *planner_find(const char *name); /* NULL when unknown */
const planner_desc *planner_all(int *count);

int planner_run(const planner_desc *d, const cm_model *cm, const cl_cluster *c,
                const wl_workload *w, const planner_options *o, plan *out, np_error *err);

/* The planners. */
int planner_megatron(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                     const planner_options *o, plan *out, np_error *err);
/* TensorOpt frontier tracking (planner_frontier.c, frontier.h): chooses tp, pp,
 * dp, micro-batch size and per-layer recompute, so its plan's sizes may differ
 * from the workload's (and from cm's); ignores o->recompute. */
int planner_frontier(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                     const planner_options *o, plan *out, np_error *err);

/* The cost model a plan runs on: base when the plan keeps the workload's
 * parallel sizes and micro-batch size, else one built into *own for the
 * plan's own (TensorOpt's frontier chooses them).  *out points at the one to
 * use; cm_free(own) afterwards when *out == own. */
int planner_cost_model_for(const wl_workload *w, const cl_cluster *c, const cm_model *base,
                           const plan *pl, cm_model *own, const cm_model **out, np_error *err);

/* CSIMD and its GPipe baselines (planner_csimd.c): cut points and
 * micro-batch sizes (plan.micro_batch_sizes) under schedule "gpipe". */
int planner_csimd(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                  const planner_options *o, plan *out, np_error *err);
int planner_mbpp_random(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                        const planner_options *o, plan *out, np_error *err);
int planner_mbpp_even(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                      const planner_options *o, plan *out, np_error *err);

/* Fills the fields every planner sets the same way from the workload:
 * micro-batching, TP, DP, schedule. */
void planner_plan_basics(plan *pl, const wl_workload *w, const planner_options *o);

#endif
