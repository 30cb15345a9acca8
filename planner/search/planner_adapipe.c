/*
 * planner_adapipe.c -- AdaPipe-style adaptive recomputation and partitioning
 * (Sun et al., "AdaPipe: Optimizing Pipeline Parallelism with Adaptive
 * Recomputation and Partitioning", ASPLOS'24), reconstructed from the paper's
 * abstract and two-level formulation (docs/planners.md, "AdaPipe").
 *
 * Two levels.  Level 1 (adapipe_recompute.c) chooses, for every candidate
 * stage, which units of its layers to recompute so that it fits its memory
 * in the least recompute time, exactly, exploiting identical layers.
 * Level 2 (adapipe_partition.c) partitions the layers over the stages to
 * minimise the 1F1B critical path, searching the bottleneck τ.  Each file
 * states its level in full.
 *
 * The plan expresses its choices as plan.recompute_units (bit u: recompute
 * unit u of that layer); plan_layer_recompute() prices them.  Layers without
 * units (embedding, LM head, layers of a layer-by-layer model) keep all
 * their activations.  o->recompute is ignored: choosing it is the point.
 *
 * Files.  adapipe_model.c the model of the job, adapipe_recompute.c level
 * 1, adapipe_partition.c level 2; adapipe_internal.h declares what they
 * share.  This file checks the job, runs the search and prices the plan.
 */

#include <math.h>

#include "adapipe_internal.h"
#include "predict.h"

static int ap_plan(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                   const planner_options *o, plan *out, np_error *err)
{
    int p = w->parallel.pipeline_model_parallel_size;
    int rc = planner_require_one_chunk("adapipe", w, o, err);
    if (rc || (rc = planner_require_layer_per_stage("adapipe", cm, w, err)))
        return rc;
    if (plan_init(out, p, 1, cm->num_layers) || plan_use_recompute_units(out))
        return np_error_set(err, NP_EXIT_INTERNAL, "<adapipe>", "", 0, "out of memory");
    planner_plan_basics(out, w, o);
    ap_model d;
    rc = ap_model_init(&d, cm, c, out->schedule, p, out->num_micro_batches);
    double cost = INFINITY;
    if (rc == 0)
        rc = ap_search_bounded(&d, out, &cost);
    ap_model_free(&d);
    if (rc < -1)
        return wl_key_error(err, NP_EXIT_INPUT, w, "model",
                            "adapipe needs every layer with recompute units to be identical; "
                            "layer %d (%s) differs from the first one",
                            -rc - 2, cm->layers[-rc - 2].name);
    if (rc)
        return np_error_set(err, NP_EXIT_INTERNAL, "<adapipe>", "", 0, "out of memory");
    if (cost == INFINITY)
        return np_error_set(err, NP_EXIT_NOFIT, w->path, "", 0,
                            "adapipe: no partition of the %d layers over %d stages fits in %.2f GB "
                            "per device, even recomputing every unit",
                            cm->num_layers, p, cm->hbm_bytes / 1e9);
    /* The search's cost, with the data-parallel all-reduce and optimizer step
     * of the slowest stage at the end. */
    out->predicted_iteration_s = predict_1f1b_iteration_s(cm, c, out, PREDICT_SENDS_SCALEOUT);
    return 0;
}

int planner_adapipe(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                    const planner_options *o, plan *out, np_error *err)
{
    return planner_call_clean(ap_plan, cm, c, w, o, out, err);
}
