/*
 * planner.c -- the planner registry and the common wrapper (see planner.h).
 */
#include "planner.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "memory.h"

static const planner_desc planners[] = {
    {"megatron", "uniform layers per stage, one recompute option for every layer", planner_megatron,
     PLANNER_SPLIT_TAKEN},
    {"pipedream", "PipeDream's DP over p stages: min-max stage time, lightest recompute that fits",
     planner_pipedream, PLANNER_SPLIT_OWN},
    {"adapipe", "AdaPipe: per-unit recompute knapsack per stage, partition by bottleneck search",
     planner_adapipe, PLANNER_SPLIT_OWN},
    {"merak", "Merak: uniform stages, stage-aware full recompute r_k, shifted critical path",
     planner_merak, PLANNER_SPLIT_TAKEN},
    {"ft", "TensorOpt frontier: fastest tp/pp/dp, micro-batch, per-layer recompute that fits",
     planner_frontier, PLANNER_SPLIT_TAKEN_PER_PP},
    {"bmpipe", "ILP (GLPK) over partition and per-layer recompute under each stage's memory",
     planner_bmpipe, PLANNER_SPLIT_OWN},
    {"csimd", "CSIMD cross search: GPipe cuts (IMD) and micro-batch sizes under nonlinear t(b)",
     planner_csimd, PLANNER_SPLIT_OWN},
    {"mbpp-r", "GPipe baseline: random cuts and micro-batch sizes (median of seeded draws)",
     planner_mbpp_random, PLANNER_SPLIT_OWN},
    {"mbpp-e", "GPipe baseline: even layers per stage, even micro-batch sizes", planner_mbpp_even,
     PLANNER_SPLIT_OWN},
};

const planner_desc *planner_all(int *count)
{
    *count = (int)(sizeof planners / sizeof planners[0]);
    return planners;
}

const planner_desc *planner_find(const char *name)
{
    int n;
    const planner_desc *all = planner_all(&n);
    for (int i = 0; i < n; i++)
        if (strcmp(all[i].name, name) == 0)
            return &all[i];
    return NULL;
}

void planner_init_options(planner_options *o, const wl_workload *w)
{
    memset(o, 0, sizeof *o);
    o->schedule = w->schedule;
    o->num_chunks = w->parallel.virtual_pipeline_model_parallel_size;
    o->recompute = (int)w->training.recompute_granularity;
    o->time_limit_s = 10.0;
}

void planner_plan_basics(plan *pl, const wl_workload *w, const planner_options *o)
{
    pl->schedule = o->schedule;
    pl->micro_batch_size = w->training.micro_batch_size;
    pl->num_micro_batches = wl_num_micro_batches(w);
    pl->tensor_parallel = w->parallel.tensor_model_parallel_size;
    pl->data_parallel = w->parallel.data_parallel_size;
}

int planner_require_one_chunk(const char *name, const wl_workload *w, const planner_options *o,
                              np_error *err)
{
    if (o->schedule != SCHED_INTERLEAVED)
        return 0;
    return wl_key_error(err, NP_EXIT_INPUT, w, "schedule",
                        "%s plans one model chunk per stage; expected 1f1b, gpipe, zb-h1, zb-h2, "
                        "pipedream or pipedream-2bw, got interleaved",
                        name);
}

int planner_require_layer_per_stage(const char *name, const cm_model *cm, const wl_workload *w,
                                    np_error *err)
{
    int p = w->parallel.pipeline_model_parallel_size;
    if (cm->num_layers >= p)
        return 0;
    return wl_key_error(err, NP_EXIT_INPUT, w, "parallel.pipeline_model_parallel_size",
                        "%s needs at least one layer per stage: %d stages, %d layers", name, p,
                        cm->num_layers);
}

int planner_call_clean(planner_fn body, const cm_model *cm, const cl_cluster *c,
                       const wl_workload *w, const planner_options *o, plan *out, np_error *err)
{
    memset(out, 0, sizeof *out);
    int rc = body(cm, c, w, o, out, err);
    if (rc)
        plan_free(out);
    return rc;
}

int planner_run(const planner_desc *d, const cm_model *cm, const cl_cluster *c,
                const wl_workload *w, const planner_options *o, plan *out, np_error *err)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = d->run(cm, c, w, o, out, err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (rc)
        return rc;
    snprintf(out->planner, sizeof out->planner, "%s", d->name);
    planner_note_own_split(d, w, out);
    out->planner_wall_s = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
    rc = plan_check(out, w->path, err);
    if (rc || o->skip_memory_check)
        return rc;
    cm_model own;
    const cm_model *plan_cm;
    if ((rc = planner_cost_model_for(w, c, cm, out, &own, &plan_cm, err)))
        return rc;
    rc = mem_check_fits(plan_cm, out, err);
    if (plan_cm == &own)
        cm_free(&own);
    return rc;
}

int planner_cost_model_for(const wl_workload *w, const cl_cluster *c, const cm_model *base,
                           const plan *pl, cm_model *own, const cm_model **out, np_error *err)
{
    const wl_parallel *par = &w->parallel;
    *out = base;
    if (pl->tensor_parallel == par->tensor_model_parallel_size &&
        pl->data_parallel == par->data_parallel_size &&
        pl->num_stages == par->pipeline_model_parallel_size &&
        pl->micro_batch_size == base->micro_batch_size)
        return 0;
    wl_workload sized = *w; /* shallow: only the sizes change */
    sized.parallel.tensor_model_parallel_size = pl->tensor_parallel;
    sized.parallel.data_parallel_size = pl->data_parallel;
    sized.parallel.pipeline_model_parallel_size = pl->num_stages;
    *out = own;
    int rc = cm_build(&sized, c, pl->micro_batch_size, own, err);
    if (!rc) { /* the caller's, not the workload's */
        own->zero_overlap = base->zero_overlap;
        own->dp_bucket_bytes = base->dp_bucket_bytes;
    }
    return rc;
}
