/*
 * adapipe_internal.h -- what the files of the AdaPipe planner share: the
 * model of the job (per-layer prefix sums, the unit-mask frontier F and the
 * links that trace H_x[n] back), the table of candidate stages, and the
 * functions one file offers the others.  planner_adapipe.c gives the
 * overview.  Private to planner/search/.
 */

#ifndef ADAPIPE_INTERNAL_H
#define ADAPIPE_INTERNAL_H

#include <stddef.h>

#include "planner.h"

/* A point of a Pareto frontier: kept bytes and recompute time. */
typedef struct ap_point {
    double kept_bytes, time_s;
} ap_point;

/* H_x[n] for one x and every n < max_len, while it is being built. */
typedef struct ap_level {
    ap_point **points; /* [max_len] */
    int *count;        /* [max_len] */
    int *capacity;     /* [max_len] */
} ap_level;

typedef struct ap_model {
    const cm_model *cm;
    const cl_cluster *c;
    int L, p, m;
    int max_len_cap; /* the longest stage whose static bytes fit */
    int max_len;     /* the longest stage of the current search */
    schedule_kind sched;
    const cm_layer *unit_layer; /* the template of every layer with units */
    /* F, sorted by kept bytes, and the unit mask of each point. */
    ap_point *frontier;
    int *frontier_mask;
    int frontier_count;
    /* links[x·max_len + n][k]: where point k of H_x[n] comes from: v ≥ 0,
     * point v of H_x[n−1] plus F[x]; v < 0, point −v−1 of H_{x+1}[n]. */
    int **links;
    /* [L+1] prefix sums; static_bytes: state + the ZeRO overlap's reserve */
    double *work_s, *static_bytes, *weight_bytes, *other_kept;
    int *unit_layers;         /* [L+1] prefix counts */
    double *cut_s;            /* [L+1] 2·c_j */
    double *inflight, *stash; /* [p] */
} ap_model;

/* Every candidate stage: (s, i, len) at index (s·L + i)·max_len + len−1. */
typedef struct ap_table {
    double *stage_s; /* T(s, i, i+len): INFINITY when it cannot be a stage */
    int *designated; /* x of its best masks, -1 when it has no unit layer */
    int *rest;       /* index of the other layers' point in H_x[n−1] */
    double *best;    /* D[s][j], [(p+1)·(L+1)] */
    int *from;
} ap_table;

/* Cell of candidate stage (s, i, i+len) in the table. */
static inline size_t ap_cell(const ap_model *d, int s, int i, int len)
{
    return ((size_t)s * d->L + i) * d->max_len + (len - 1);
}

/* adapipe_model.c */
int ap_model_init(ap_model *d, const cm_model *cm, const cl_cluster *c, schedule_kind sched, int p,
                  int m);
void ap_model_free(ap_model *d);
void ap_links_free(ap_model *d);
int ap_longest_range(const double *prefix, int L, double limit);

/* adapipe_recompute.c: level 1 */
int ap_layer_frontier(ap_model *d);
void ap_fill_stages(ap_model *d, ap_table *t, int *rc);
void ap_stage_masks(const ap_model *d, int i, int j, int x, int at, plan *pl);

/* adapipe_partition.c: level 2 */
int ap_search_bounded(ap_model *d, plan *out, double *cost);

#endif
