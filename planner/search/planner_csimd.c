/*
 * planner_csimd.c -- CSIMD and its baselines MBPP-R and MBPP-E: network
 * division (cut points) and data partition (micro-batch sizes) for GPipe.
 *
 * Problem (Zhou et al., "CSIMD: Cross-Search Algorithm with Improved
 * Multi-dimensional Dichotomy for Micro-Batch-Based Pipeline Parallel
 * Training in DNN", Euro-Par 2024, and its TPDS'25 extension; reconstructed
 * from the abstract and docs/planners.md).  A pipeline of p stages
 * runs the B = global_batch / dp samples of one replica as M micro-batches of
 * sizes b_1..b_M (sum B; M is the workload's micro-batch count, the same for
 * the three planners).  Choose the cuts and the sizes that minimise the
 * GPipe iteration time T.
 *
 * Recompute: the options' choice for every layer; when the planner may
 * choose (-1), the first of none, selective, full for which a plan fits.
 *
 * Files.  csimd_time.c the time model and the prediction of a plan,
 * csimd_imd.c and csimd_bound.c the cuts for fixed sizes, csimd_cross.c the
 * sizing and the cross search, csimd_mbpp.c the baselines' plans;
 * csimd_internal.h declares what they share.  This file checks the job and
 * runs one method per recompute option: the three planners.
 *
 * csimd_internal.h's functions are also entry points for the tests
 * (test_csimd.c and test_sharding.c include it; planner.h only registers
 * planners).
 */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "csimd_internal.h"

typedef enum csimd_method { METHOD_CSIMD, METHOD_RANDOM, METHOD_EVEN } csimd_method;

static const char *const method_names[] = {"csimd", "mbpp-r", "mbpp-e"};

static double run_method(csimd_ctx *x, csimd_method method, int *start, int *sizes)
{
    switch (method) {
    case METHOD_CSIMD:
        return csimd_cross_search(x, start, sizes);
    case METHOD_RANDOM:
        return csimd_random_search(x, start, sizes);
    case METHOD_EVEN:
        break;
    }
    csimd_even_cuts(x->num_layers, x->p, start);
    csimd_even_sizes(x->samples, x->m, sizes);
    return csimd_predict_s(x, start, sizes);
}

static int check_job(const cm_model *cm, const wl_workload *w, const planner_options *o,
                     csimd_method method, np_error *err)
{
    const char *name = method_names[method];
    if (o->schedule != SCHED_GPIPE)
        return wl_key_error(err, NP_EXIT_INPUT, w, "schedule",
                            "planner %s plans GPipe pipelines: expected schedule \"gpipe\" "
                            "(--schedule gpipe), got \"%s\"",
                            name, wl_schedule_name(o->schedule));
    long dp = w->parallel.data_parallel_size > 0 ? w->parallel.data_parallel_size : 1;
    long samples = w->training.global_batch_size / dp;
    if (samples > CSIMD_MAX_SAMPLES)
        return wl_key_error(err, NP_EXIT_INPUT, w, "training.global_batch_size",
                            "planner %s splits at most %d samples per pipeline "
                            "(global_batch_size / data_parallel_size), got %ld",
                            name, CSIMD_MAX_SAMPLES, samples);
    if (cm->num_layers < w->parallel.pipeline_model_parallel_size)
        return wl_key_error(err, NP_EXIT_INPUT, w, "parallel.pipeline_model_parallel_size",
                            "expected at most %d stages (one layer each), got %d", cm->num_layers,
                            w->parallel.pipeline_model_parallel_size);
    return 0;
}

static int fill_plan(const cm_model *cm, const wl_workload *w, const planner_options *o,
                     recompute_kind r, const int *start, const int *sizes, double t, plan *out)
{
    int p = w->parallel.pipeline_model_parallel_size;
    if (plan_init(out, p, 1, cm->num_layers))
        return -1;
    planner_plan_basics(out, w, o);
    int m = out->num_micro_batches;
    out->micro_batch_sizes = malloc((size_t)m * sizeof *out->micro_batch_sizes);
    if (!out->micro_batch_sizes) {
        plan_free(out);
        return -1;
    }
    memcpy(out->chunk_start, start, (size_t)(p + 1) * sizeof *start);
    memcpy(out->micro_batch_sizes, sizes, (size_t)m * sizeof *sizes);
    for (int l = 0; l < cm->num_layers; l++)
        out->recompute[l] = r;
    out->predicted_iteration_s = t;
    return 0;
}

static int plan_method(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                       const planner_options *o, csimd_method method, plan *out, np_error *err)
{
    int rc = check_job(cm, w, o, method, err);
    if (rc)
        return rc;
    const char *source = method_names[method];
    int p = w->parallel.pipeline_model_parallel_size, m = wl_num_micro_batches(w);
    int dp = w->parallel.data_parallel_size > 0 ? w->parallel.data_parallel_size : 1;
    int samples = (int)(w->training.global_batch_size / dp);
    int start[p + 1], *sizes = malloc((size_t)m * sizeof *sizes);
    if (!sizes)
        return np_error_set(err, NP_EXIT_INTERNAL, source, "", 0, "out of memory");
    recompute_kind first = o->recompute >= 0 ? (recompute_kind)o->recompute : RECOMPUTE_NONE;
    recompute_kind last = o->recompute >= 0 ? first : RECOMPUTE_FULL;
    rc = NP_EXIT_NOFIT;
    for (int r = first; r <= (int)last && rc == NP_EXIT_NOFIT; r++) {
        csimd_ctx *x;
        if (csimd_context_new(cm, c, p, dp, samples, m, (recompute_kind)r, &x)) {
            rc = NP_EXIT_INTERNAL;
            break;
        }
        double t = run_method(x, method, start, sizes);
        if (x->failed)
            rc = NP_EXIT_INTERNAL;
        else if (!isinf(t) && fill_plan(cm, w, o, (recompute_kind)r, start, sizes, t, out))
            rc = NP_EXIT_INTERNAL;
        else if (!isinf(t))
            rc = 0;
        csimd_context_free(x);
    }
    free(sizes);
    if (rc == NP_EXIT_INTERNAL)
        return np_error_set(err, rc, source, "", 0, "out of memory");
    if (rc == NP_EXIT_NOFIT)
        return wl_key_error(err, rc, w, "training.recompute_granularity",
                            "planner %s found no division of the %d layers into %d GPipe stages "
                            "that fits in %.1f GB per device with %d samples in flight per stage",
                            source, cm->num_layers, p, cm->hbm_bytes / 1e9, samples);
    return 0;
}

int planner_csimd(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                  const planner_options *o, plan *out, np_error *err)
{
    return plan_method(cm, c, w, o, METHOD_CSIMD, out, err);
}

int planner_mbpp_random(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                        const planner_options *o, plan *out, np_error *err)
{
    return plan_method(cm, c, w, o, METHOD_RANDOM, out, err);
}

int planner_mbpp_even(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                      const planner_options *o, plan *out, np_error *err)
{
    return plan_method(cm, c, w, o, METHOD_EVEN, out, err);
}
