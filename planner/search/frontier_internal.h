/*
 * frontier_internal.h -- what the files of TensorOpt's frontier share
 * beyond frontier.h: the error source of the planner "ft", a (tp, pp, dp,
 * micro-batch) tuple, and the functions one file offers the others
 * (frontier_sweep.c enumerates the tuples, frontier_tuple.c prices one,
 * planner_frontier.c builds the uniform plan both use).  Private to
 * planner/search/.
 */

#ifndef FRONTIER_INTERNAL_H
#define FRONTIER_INTERNAL_H

#include "frontier.h"

#define FT_SOURCE "<ft>"

typedef struct tuple {
    int devices, tp, pp, dp, b, m;
} tuple;

frontier_entry *ft_frontier_push(frontier *f);
int ft_uniform_plan(const cm_model *cm, const cl_cluster *c, const wl_workload *wc, plan *out,
                    np_error *err);
int ft_tuple_evaluate(const wl_workload *w, const cl_cluster *c, const tuple *t, frontier *f,
                      np_error *err);

#endif
