/*
 * cli_size.c -- the bound on a run's size (--allow-large).
 *
 * A valid workload can ask for a run that would take hours and more memory
 * than the machine has: global_batch_size = 2^30 on small_gpt is 2^29
 * micro-batches per pipeline.  Before any op list is built, simrun estimates
 * the run (engine_estimate_platform(): SimGrid activities and bytes, from the
 * plan's sizes and schedule) and refuses one over the bound
 * (engine_init_limits(): 5e7 activities, the machine's MemTotal) with exit
 * code 2, naming the file and the key that drives the size:
 *   - before any planner runs, the workload's own configuration (its memory
 *     replay alone is proportional to the micro-batches): the workload file
 *     and training.global_batch_size;
 *   - every planner's plan (each one under --planner all), which may pick
 *     other sizes: the workload file and training.global_batch_size;
 *   - a saved plan (--plan): the plan file and its num_micro_batches.
 * --allow-large lifts the bound; an op list larger than it can index is
 * refused regardless.
 */
#include <math.h>
#include <stdio.h>

#include "cli.h"

engine_options cli_engine_options(const cli *c, const job *j)
{
    engine_options eo = c->engine;
    eo.record_spans = c->trace_path != NULL;
    if (j->w.training.use_distributed_optimizer)
        eo.dp_param_gather_ratio = cm_gather_bytes(&j->cm.precision) / j->cm.precision.grad;
    eo.fold_dp = c->fold_dp_replicas;
    return eo;
}

static void limits_of(const cli *c, engine_limits *l)
{
    engine_init_limits(l);
    if (c->allow_large) {
        l->max_activities = INFINITY;
        l->max_bytes = INFINITY;
    }
}

static int check(const cli *c, const job *j, const plan *pl, const char *source, const char *key,
                 const char *what, np_error *err)
{
    engine_options eo = cli_engine_options(c, j);
    engine_estimate e;
    engine_estimate_platform(&j->pf, &j->cm, pl, &eo, &e);
    engine_limits l;
    limits_of(c, &l);
    int rc = engine_check_estimate(&e, &l, source, key, what, err);
    if (rc && eo.dp_overlap && eo.dp_bucket_bytes > 0) {
        /* The buckets may be what makes it large: blame --dp-bucket-bytes
         * when Megatron's default bucket keeps the run within the bound. */
        engine_options defaults = eo;
        defaults.dp_bucket_bytes = 0.0;
        engine_estimate d;
        engine_estimate_platform(&j->pf, &j->cm, pl, &defaults, &d);
        np_error ignored;
        if (engine_check_estimate(&d, &l, source, key, what, &ignored) == 0) {
            char why[64];
            snprintf(why, sizeof why, "%.6g-byte buckets", eo.dp_bucket_bytes);
            engine_check_estimate(&e, &l, "<command line>", "--dp-bucket-bytes", why, err);
            rc = NP_EXIT_USAGE; /* an option's value, as other usage errors */
            if (err)
                err->code = rc;
        }
    }
    return rc;
}

int check_workload_size(const cli *c, const job *j, np_error *err)
{
    const wl_workload *w = &j->w;
    int p = w->parallel.pipeline_model_parallel_size;
    int v = w->schedule == SCHED_INTERLEAVED && w->parallel.virtual_pipeline_model_parallel_size > 0
                ? w->parallel.virtual_pipeline_model_parallel_size
                : 1;
    int layers = j->cm.num_layers;
    /* The workload's own plan, as the Megatron planner makes it: uniform
     * chunks, the workload's recompute on every layer. */
    plan pl = {0};
    if (p < 1 || layers < p * v || plan_init(&pl, p, v, layers))
        return 0; /* not a plan the planners accept: they say why */
    for (int k = 0; k <= p * v; k++)
        pl.chunk_start[k] = (int)((long)layers * k / (p * v));
    for (int l = 0; l < layers; l++)
        pl.recompute[l] = w->training.recompute_granularity;
    pl.schedule = w->schedule;
    pl.micro_batch_size = w->training.micro_batch_size;
    pl.num_micro_batches = wl_num_micro_batches(w);
    pl.tensor_parallel = w->parallel.tensor_model_parallel_size;
    pl.data_parallel = w->parallel.data_parallel_size;
    char what[160];
    snprintf(what, sizeof what, "%ld sequences give %d micro-batches per pipeline",
             w->training.global_batch_size, pl.num_micro_batches);
    int rc = check(c, j, &pl, c->workload_path, "training.global_batch_size", what, err);
    plan_free(&pl);
    return rc;
}

int check_plan_size(const cli *c, const job *j, const plan *pl, np_error *err)
{
    char what[200];
    if (c->plan_in) {
        snprintf(what, sizeof what, "%d micro-batches per pipeline", pl->num_micro_batches);
        return check(c, j, pl, c->plan_in, "num_micro_batches", what, err);
    }
    snprintf(what, sizeof what,
             "%ld sequences give %d micro-batches per pipeline in %s's plan (micro-batch %d, "
             "%d replicas)",
             j->w.training.global_batch_size, pl->num_micro_batches, pl->planner,
             pl->micro_batch_size, pl->data_parallel);
    return check(c, j, pl, c->workload_path, "training.global_batch_size", what, err);
}
