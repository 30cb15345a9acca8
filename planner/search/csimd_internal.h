/*
 * csimd_internal.h -- what the files of CSIMD and its MBPP baselines share:
 * the planning context (the cost model's per-layer sums and the t(b) rows),
 * the constants more than one file reads, and the functions one file offers
 * the others.  planner_csimd.c states the problem.  Private to
 * planner/search/ and its tests (test_csimd.c, test_sharding.c).
 */

#ifndef CSIMD_INTERNAL_H
#define CSIMD_INTERNAL_H

#include <stdbool.h>

#include "planner.h"

#define CSIMD_MAX_SAMPLES 65536 /* per pipeline; bounds the t(b) tables */
#define IMPROVES(t, best) ((t) < (best) * (1.0 - 1e-12))
/* GPipe's backward runs the micro-batches last to first (Huang et al. 2019,
 * Fig. 2c); must match schedule_gpipe.c. */
#define BACKWARD_REVERSED 1

/* Every layer at one micro-batch size: prefix sums of forward and backward
 * time and each layer's output bytes.  The times are what the pipeline's
 * chain waits for: without ZeRO-2/3's reduce-scatters (reduce_prefix) and,
 * overlapped, without their gathers either (csimd_time.c). */
typedef struct csimd_row {
    double *forward_prefix_s;   /* [L + 1] */
    double *backward_prefix_s;  /* [L + 1] */
    double *recompute_prefix_s; /* [L + 1] the backward's recompute part */
    double *output_bytes;       /* [L] */
} csimd_row;

typedef struct csimd_ctx {
    const cm_model *cm;
    const cl_cluster *c;
    int p, m, num_layers, samples, dp;
    recompute_kind recompute;
    bool *same_node;      /* [p - 1]: boundary k stays in a server */
    double *state_prefix; /* [L + 1] static bytes + the ZeRO overlap's reserve */
    double *kept_prefix;  /* [L + 1] activation bytes kept per sample */
    double *transient;    /* [L] recompute working set per sample */
    /* [L + 1] ZeRO-2/3's reduce-scatters per micro-batch, never in the rows:
     * blocking (!zero_overlapped) they hold the stage after the backward's
     * send, overlapped they run on a stream of their own */
    double *reduce_prefix;
    bool zero_overlapped;
    csimd_row **rows;                       /* [samples + 1], filled on first use */
    double *fwd, *bwd, *comm, *rec;         /* [p * m] scratch of one evaluation */
    double *tail, *after, *gather, *reduce; /* [p] */
    bool failed;                            /* out of memory while filling a row */
} csimd_ctx;

/* csimd_time.c: the makespan recurrence, the context and the t(b) rows, the
 * prediction of one plan. */

/* ZeRO-2/3's collectives of each stage [p], per micro-batch (csimd_time.c) */
typedef struct csimd_zero {
    const double *after_s;     /* blocking reduce-scatter, after the backward's send */
    const double *gather_s;    /* overlapped: per-pass gather (ZeRO-3) */
    const double *reduce_s;    /* overlapped: reduce-scatter */
    const double *recompute_s; /* [p * m] the recompute that opens each backward pass */
} csimd_zero;

double csimd_gpipe_makespan_s(int p, int m, const double *forward_s, const double *backward_s,
                              const double *comm_s, const csimd_zero *zero, const double *tail_s);
int csimd_context_new(const cm_model *cm, const cl_cluster *c, int p, int dp, int samples, int m,
                      recompute_kind r, csimd_ctx **out);
void csimd_context_free(csimd_ctx *x);
const csimd_row *csimd_context_row(csimd_ctx *x, int b);
bool csimd_stage_fits(const csimd_ctx *x, int first, int last, int max_b);
int csimd_max_size(const int *sizes, int m);
double csimd_stage_reduce_s(const csimd_ctx *x, int first, int last);
double csimd_stage_tail_s(const csimd_ctx *x, int first, int last);
double csimd_predict_s(csimd_ctx *x, const int *start, const int *sizes);

/* csimd_imd.c and csimd_bound.c: the cuts for fixed sizes. */

int csimd_imd_cuts(csimd_ctx *x, const int *sizes, int *start);
double csimd_refine_cuts(csimd_ctx *x, int *start, const int *sizes);
void csimd_bound_cuts(csimd_ctx *x, const int *sizes, const double *busy, int *start);

/* csimd_cross.c: the cross search; csimd_mbpp.c: the baselines' plans. */

double csimd_cross_search(csimd_ctx *x, int *start, int *sizes);
void csimd_even_sizes(int samples, int m, int *sizes);
void csimd_even_cuts(int num_layers, int p, int *start);
double csimd_random_search(csimd_ctx *x, int *start, int *sizes);

#endif
