/*
 * engine_metrics.c -- metrics: a run's result, from the workers' accounting.
 *
 * Nothing is sampled during a run: every worker adds up its own busy,
 * recompute, TP, exposed point-to-point and data-parallel times and tracks its
 * device memory as it replays its ops (engine_worker.c).  Once SimGrid has
 * stopped, metrics_collect() folds them into the per-stage and whole-run
 * figures of engine_result (engine.h defines each): a stage's figure is its
 * slowest (or largest) replica's, and the run's pipeline time is the last
 * F/B/W end over all workers.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"

static double model_flops_per_iteration(const cm_model *cm, const plan *pl)
{
    /* A model's layer split over TP runs 1/t of its FLOPs on each TP rank; a
     * layer a workload lists (CM_CUSTOM, costmodel_layers.c) runs whole on
     * every TP rank, and the copies are not model FLOPs. */
    double per_micro_batch = 0;
    for (int l = 0; l < cm->num_layers; l++)
        per_micro_batch += cm->layers[l].forward_flops *
                           (cm->layers[l].kind == CM_CUSTOM ? 1 : pl->tensor_parallel);
    double samples = (double)pl->num_micro_batches * cm->micro_batch_size;
    if (pl->micro_batch_sizes) {
        samples = 0;
        for (int i = 0; i < pl->num_micro_batches; i++)
            samples += pl->micro_batch_sizes[i];
    }
    /* forward + backward = 3 forwards (Narayanan et al. SC'21, eq. 3); a TP
     * group's FLOPs times the DP replicas and CP ranks (each of which
     * computes its 1/c of the sequence). */
    int cp = cm->context_parallel > 1 ? cm->context_parallel : 1;
    return 3.0 * per_micro_batch * (samples / cm->micro_batch_size) * pl->data_parallel * cp;
}

static void stage_metrics(engine *e, int s, engine_stage_metrics *m)
{
    memset(m, 0, sizeof *m);
    m->capacity_bytes = e->pf->cluster.hbm_bytes;
    for (int i = 0; i < e->dp * e->cp; i++) {
        const worker *w = engine_cp_worker(e, s, i % e->dp, i / e->dp);
        if (w->busy_s > m->busy_s) {
            m->busy_s = w->busy_s;
            m->recompute_s = w->recompute_s;
            m->tp_comm_s = w->tp_comm_s;
        }
        if (w->peak_bytes > m->peak_bytes)
            m->peak_bytes = w->peak_bytes;
        if (w->p2p_exposed_s > m->p2p_exposed_s)
            m->p2p_exposed_s = w->p2p_exposed_s;
        if (w->dp_comm_s > m->dp_comm_s)
            m->dp_comm_s = w->dp_comm_s;
    }
}

int metrics_collect(engine *e, const wl_workload *w, const cm_model *cm, engine_result *out)
{
    out->num_stages = e->p;
    out->stages = calloc((size_t)e->p, sizeof *out->stages);
    if (!out->stages)
        return -1;
    for (int i = 0; i < engine_num_workers(e); i++) {
        const worker *wk = &e->workers[i];
        if (wk->end_s > out->iteration_s)
            out->iteration_s = wk->end_s;
        if (wk->pipeline_end_s > out->pipeline_s)
            out->pipeline_s = wk->pipeline_end_s;
    }
    double idle = 0, busy = 0, comm = 0;
    for (int s = 0; s < e->p; s++) {
        engine_stage_metrics *m = &out->stages[s];
        stage_metrics(e, s, m);
        /* a stage is never busy longer than the pipeline runs: a negative
         * idle time is the rounding of the sums (e.g. -1e-16 s at PP 1) */
        double stage_idle = fmax(0.0, out->pipeline_s - m->busy_s);
        m->bubble_ratio = m->busy_s > 0 ? stage_idle / m->busy_s : 0;
        idle += stage_idle;
        busy += m->busy_s;
        comm += m->tp_comm_s + m->p2p_exposed_s + m->dp_comm_s;
        if (m->peak_bytes > out->peak_bytes)
            out->peak_bytes = m->peak_bytes;
    }
    out->bubble_ratio = busy > 0 ? idle / busy : 0;
    out->exposed_comm_s = comm / e->p;
    out->peak_fraction = out->peak_bytes / e->pf->cluster.hbm_bytes;
    double npus = (double)e->tp * e->p * e->dp * e->cp;
    out->mfu = model_flops_per_iteration(cm, e->pl) /
               (out->iteration_s * npus * e->pf->cluster.peak_flops);
    double tokens =
        (double)w->training.global_batch_size * (w->model.seq_length > 0 ? w->model.seq_length : 1);
    out->tokens_per_s = tokens / out->iteration_s;
    out->activities = e->net.activities;
    if (e->opt->record_spans) {
        int n = e->p * e->dp; /* CP rank 0's workers (engine_cp_worker) */
        out->num_workers = n;
        out->spans = calloc((size_t)n, sizeof *out->spans);
        out->num_spans = calloc((size_t)n, sizeof *out->num_spans);
        if (!out->spans || !out->num_spans)
            return -1;
        for (int i = 0; i < n; i++) { /* hand the timelines over */
            out->spans[i] = e->workers[i].spans;
            out->num_spans[i] = e->workers[i].num_spans;
            e->workers[i].spans = NULL;
        }
    }
    return 0;
}

void engine_result_free(engine_result *r)
{
    free(r->stages);
    if (r->spans)
        for (int i = 0; i < r->num_workers; i++)
            free(r->spans[i]);
    free(r->spans);
    free(r->num_spans);
    free(r->moe_load_rows); /* MoE hook: the per-expert load timeline */
    free(r->moe_load_events);
    memset(r, 0, sizeof *r);
}
