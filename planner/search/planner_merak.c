/*
 * planner_merak.c -- Merak's stage-aware recomputation and shifted critical
 * path (Lai et al., "Merak: An Efficient Distributed DNN Training Framework
 * with Automated 3D Parallelism for Giant Foundation Models", TPDS 2023;
 * docs/planners.md, "Merak").
 *
 * Partition.  Merak shards the model into equal stages; we use Megatron's
 * uniform rule (planner_megatron.c): decoder layers split evenly, the
 * embedding with the first stage, the LM head with the last, the extra
 * layers of an uneven split on the stages after the first.
 *
 * Stage-aware recompute.  Early stages hold more micro-batches in flight
 * (1F1B: p−s on stage s), so they recompute more.  Stage 0 recomputes a
 * fraction r0 of its layers and stage k < p−1
 *   r_k = 1 − (1 − r0)·(p−1)/(p−1−k)        (clamped to [0, 1]),
 * the last stage none (planner_merak_ratio(); with p = 1 the one stage is
 * stage 0 and recomputes r0).  Stage k recomputes ceil(r_k·n_k) of its n_k
 * decoder (or custom) layers, the first ones in model order, each with full
 * recompute (keep the layer input, re-run the layer: Merak checkpoints whole
 * layers).
 *
 * Choosing r0.  The plan changes only where some ceil(r_k·n_k) steps, i.e.
 * at r0 = 1 − (1 − c/n_k)(p−1−k)/(p−1) for c = 1..n_k; those values, 0 and
 * 1 are every distinct plan.  Each is checked with mem_check_fits() and
 * priced with the prediction below; the fastest plan that fits wins (ties:
 * the smaller r0).  More recompute is never faster, so this is the smallest
 * r0 that makes every stage fit, unless a recompute working set tips a stage.
 *
 * Shifted critical path.  plan.merak_shifted_recompute makes the last p−s
 * micro-batches of stage s skip recompute (sched_skips_recompute()), and the
 * memory model charges them their full activations from their forward on.
 * In 1F1B those are exactly the p−s micro-batches in flight on stage s after
 * its last forward, so with the shift the stage peaks at (p−s)·a^none per
 * layer, as if nothing were recomputed: the shift fits only when no
 * recompute is needed at all.  (Merak instead issues those recomputes early,
 * before the blocking gradient receive, in the cool-down where memory is
 * being freed; our schedule does not model that.)  So every r0 is tried with
 * the shift and without it; the shift is kept whenever the plan fits with it.
 *
 * Predicted iteration time (predict.c's 1F1B critical path, sends over the
 * scale-out fabric as for PipeDream):
 *   Σ_s t'_s + 2·Σ_{s<p−1} c_s + (m−1)·max_s (t_s + 2·c_s) + max_s (AR_s + O_s)
 * t_s = Σ (f + b + recompute) of stage s, t'_s the same without the recompute
 * when the shift is on (the warm-up and cool-down micro-batches skip it), c_s
 * its boundary send, AR_s + O_s its DP all-reduce and optimizer step.
 * o->recompute is ignored.
 */
#include "planner.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "memory.h"
#include "predict.h"

double planner_merak_ratio(int p, int k, double r0)
{
    if (k == 0)
        return fmin(fmax(r0, 0.0), 1.0);
    if (k >= p - 1)
        return 0.0;
    double r = 1.0 - (1.0 - r0) * (p - 1.0) / (p - 1.0 - k);
    return fmin(fmax(r, 0.0), 1.0);
}

static bool mk_recomputable(const cm_layer *ly)
{
    return ly->kind == CM_DECODER || ly->kind == CM_CUSTOM;
}

static int mk_stage_layers(const cm_model *cm, const plan *pl, int s)
{
    int n = 0;
    for (int l = pl->chunk_start[s]; l < pl->chunk_start[s + 1]; l++)
        n += mk_recomputable(&cm->layers[l]);
    return n;
}

/* Full recompute on the first ceil(r_k·n_k) recomputable layers of each stage. */
static void mk_apply(const cm_model *cm, plan *pl, double r0)
{
    int p = pl->num_stages;
    for (int s = 0; s < p; s++) {
        int n = mk_stage_layers(cm, pl, s);
        int todo = (int)ceil(planner_merak_ratio(p, s, r0) * n - 1e-9);
        for (int l = pl->chunk_start[s]; l < pl->chunk_start[s + 1]; l++) {
            bool recompute = mk_recomputable(&cm->layers[l]) && todo > 0;
            pl->recompute[l] = recompute ? RECOMPUTE_FULL : RECOMPUTE_NONE;
            todo -= recompute;
        }
    }
}

static int mk_double_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Every r0 at which some stage's recompute count steps, plus 0 and 1, sorted. */
static double *mk_candidates(const cm_model *cm, const plan *pl, int *count)
{
    int p = pl->num_stages, n = 2;
    for (int s = 0; s < p; s++)
        n += mk_stage_layers(cm, pl, s);
    double *v = malloc((size_t)n * sizeof *v);
    if (!v)
        return NULL;
    int k = 0;
    v[k++] = 0.0;
    v[k++] = 1.0;
    for (int s = 0; s < p && (s < p - 1 || p == 1); s++) {
        int layers = mk_stage_layers(cm, pl, s);
        double shrink = (s == 0) ? 1.0 : (p - 1.0 - s) / (p - 1.0);
        /* Stage s's count changes where r_s = c/n: c = 0 too for s ≥ 1
         * (the r0 below which it recomputes nothing while stage 0 does). */
        for (int c = s == 0 ? 1 : 0; c <= layers; c++) {
            double r0 = 1.0 - (1.0 - (double)c / layers) * shrink;
            if (r0 > 0.0 && r0 < 1.0)
                v[k++] = r0;
        }
    }
    qsort(v, (size_t)k, sizeof *v, mk_double_cmp);
    *count = k;
    return v;
}

static int mk_plan(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                   const planner_options *o, plan *out, np_error *err)
{
    int p = w->parallel.pipeline_model_parallel_size;
    int rc = planner_require_one_chunk("merak", w, o, err);
    if (rc)
        return rc;
    if (plan_init(out, p, 1, cm->num_layers))
        return np_error_set(err, NP_EXIT_INTERNAL, "<merak>", "", 0, "out of memory");
    planner_plan_basics(out, w, o);
    if ((rc = planner_split_partition(cm, w, out, err)))
        return rc;
    for (int s = 0; s < p; s++)
        if (out->chunk_start[s + 1] <= out->chunk_start[s])
            return wl_key_error(err, NP_EXIT_INPUT, w, "parallel.pipeline_model_parallel_size",
                                "merak splits the layers evenly over %d stages; stage %d is empty",
                                p, s);
    int count;
    double *cand = mk_candidates(cm, out, &count);
    if (!cand)
        return np_error_set(err, NP_EXIT_INTERNAL, "<merak>", "", 0, "out of memory");
    double best_s = INFINITY, best_r0 = 0.0;
    bool best_shift = true;
    for (int shift = 1; shift >= 0; shift--) {
        out->merak_shifted_recompute = shift;
        for (int k = 0; k < count; k++) {
            mk_apply(cm, out, cand[k]);
            if (mem_check_fits(cm, out, NULL) != 0)
                continue;
            double t = predict_1f1b_iteration_s(cm, c, out, PREDICT_SENDS_SCALEOUT);
            if (t < best_s) {
                best_s = t;
                best_r0 = cand[k];
                best_shift = shift;
            }
        }
    }
    free(cand);
    if (best_s == INFINITY) { /* r0 = 1 does not fit either: say where */
        out->merak_shifted_recompute = false;
        mk_apply(cm, out, 1.0);
        snprintf(out->planner, sizeof out->planner, "merak");
        rc = mem_check_fits(cm, out, err);
        if (rc && err) /* Merak's rule, not the job, may be what does not fit */
            snprintf(err->key, sizeof err->key, "its last stage never recomputes");
        return rc;
    }
    out->merak_shifted_recompute = best_shift;
    mk_apply(cm, out, best_r0);
    out->predicted_iteration_s = best_s;
    return 0;
}

int planner_merak(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                  const planner_options *o, plan *out, np_error *err)
{
    return planner_call_clean(mk_plan, cm, c, w, o, out, err);
}
