/*
 * frontier_tuple.c -- the frontier of one (tp, pp, dp, micro-batch) tuple
 * and its merge into the frontier of a device count.  On Megatron's uniform
 * partition every stage gets, per recompute working-set level, the chain DP
 * over its layers' options (frontier_chain.c); the memory-bound sweep over
 * the stages' points gives the tuple's exact frontier, and only the points
 * that survive the union with the running frontier are materialised as
 * entries.  planner_frontier.c states the model (stage memory by levels,
 * the 1F1B critical path, the tail).
 */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontier_internal.h"
#include "memory.h"
#include "planner.h"
#include "predict.h"

/* Recompute options a layer may take (see planner_frontier.c). */
static int layer_choices(const cm_layer *ly, recompute_kind out[RECOMPUTE_COUNT])
{
    int n = 0;
    out[n++] = RECOMPUTE_NONE;
    if (ly->kind == CM_DECODER)
        out[n++] = RECOMPUTE_SELECTIVE;
    if (ly->kind == CM_DECODER || ly->kind == CM_CUSTOM)
        out[n++] = RECOMPUTE_FULL;
    return n;
}

/* Cost of layer l under option r: time, kept bytes, recompute working set. */
typedef struct option_cost {
    double time_s, activation_bytes, transient_bytes;
} option_cost;

static option_cost layer_option_cost(plan *scratch, const cm_model *cm, int l, recompute_kind r)
{
    recompute_kind saved = scratch->recompute[l];
    plan_layer_cost rc;
    scratch->recompute[l] = r;
    plan_layer_recompute(scratch, cm, l, false, &rc);
    option_cost o = {predict_layer_s(cm, scratch, l, false), rc.activation_bytes,
                     rc.transient_bytes};
    scratch->recompute[l] = saved;
    return o;
}

/* The (S_s, M_s) frontier of one stage at one working-set level. */
typedef struct stage_level {
    double transient_bytes; /* λ */
    frontier_chain chain;
    recompute_kind *options; /* [layers · RECOMPUTE_COUNT]: config index → option */
} stage_level;

typedef struct stage_eval {
    int first, last; /* layers [first, last) */
    int num_levels;
    stage_level *levels;
    frontier_set points; /* (S_s, M_s); left = level, right = index in its chain result */
    double chain_less_s; /* S_s − S'_s: blocking ZeRO reduce-scatters (predict.h) */
} stage_eval;

typedef struct tuple_eval {
    const cm_model *cm;
    const cl_cluster *c;
    plan pl; /* uniform partition; also the scratch plan for option costs */
    int p, m;
    double tail_s;
    stage_eval *stages;
} tuple_eval;

static void stage_eval_free(stage_eval *se)
{
    for (int v = 0; v < se->num_levels; v++) {
        frontier_chain_free(&se->levels[v].chain);
        free(se->levels[v].options);
    }
    free(se->levels);
    frontier_set_free(&se->points);
}

static int double_compare(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Distinct working-set values of the stage's options, increasing. */
static int stage_levels(tuple_eval *te, stage_eval *se, double **out)
{
    int n = 0, cap = (se->last - se->first) * RECOMPUTE_COUNT + 1;
    double *v = malloc((size_t)cap * sizeof *v);
    if (!v)
        return -1;
    v[n++] = 0.0;
    for (int l = se->first; l < se->last; l++) {
        recompute_kind ch[RECOMPUTE_COUNT];
        int k = layer_choices(&te->cm->layers[l], ch);
        for (int j = 0; j < k; j++)
            v[n++] = layer_option_cost(&te->pl, te->cm, l, ch[j]).transient_bytes;
    }
    qsort(v, (size_t)n, sizeof *v, double_compare);
    int u = 0;
    for (int i = 0; i < n; i++)
        if (u == 0 || v[i] != v[u - 1])
            v[u++] = v[i];
    *out = v;
    return u;
}

/* Chain DP over the stage's layers with the options whose working set is at
 * most lv->transient_bytes. */
static int level_solve(tuple_eval *te, stage_eval *se, stage_level *lv)
{
    int n = se->last - se->first;
    frontier_chain_op *ops = calloc((size_t)n, sizeof *ops);
    frontier_set *nodes = calloc((size_t)n * RECOMPUTE_COUNT, sizeof *nodes);
    lv->options = calloc((size_t)n * RECOMPUTE_COUNT, sizeof *lv->options);
    int rc = (!ops || !nodes || !lv->options) ? -1 : 0;
    for (int i = 0; i < n && !rc; i++) {
        int l = se->first + i;
        recompute_kind ch[RECOMPUTE_COUNT];
        int k = layer_choices(&te->cm->layers[l], ch);
        ops[i].node = &nodes[i * RECOMPUTE_COUNT];
        for (int j = 0; j < k && !rc; j++) {
            option_cost oc = layer_option_cost(&te->pl, te->cm, l, ch[j]);
            if (oc.transient_bytes > lv->transient_bytes)
                continue;
            int cfg = ops[i].num_configs++;
            lv->options[i * RECOMPUTE_COUNT + cfg] = ch[j];
            rc = frontier_set_add(&nodes[i * RECOMPUTE_COUNT + cfg], oc.time_s, oc.activation_bytes,
                                  0, 0);
        }
    }
    if (!rc)
        rc = frontier_chain_solve(ops, n, &lv->chain);
    if (nodes)
        for (int i = 0; i < n * RECOMPUTE_COUNT; i++)
            frontier_set_free(&nodes[i]);
    free(nodes);
    free(ops);
    return rc;
}

static int stage_solve(tuple_eval *te, int s)
{
    stage_eval *se = &te->stages[s];
    const cm_model *cm = te->cm;
    double *values;
    int nv = stage_levels(te, se, &values);
    if (nv < 0)
        return -1;
    se->levels = calloc((size_t)nv, sizeof *se->levels);
    if (!se->levels) {
        free(values);
        return -1;
    }
    se->num_levels = nv;
    double static_bytes = 0.0;
    for (int l = se->first; l < se->last; l++)
        static_bytes += cm->layers[l].state_bytes;
    /* with ZeRO-2/3's overlap, the buffers it holds (memory.c) */
    static_bytes += mem_zero_overlap_bytes(cm, &te->pl, s);
    double inflight = mem_inflight(SCHED_1F1B, te->p, s, te->m, 1, 0);
    double comm_s = predict_stage_comm_s(cm, te->c, &te->pl, s, PREDICT_SENDS_RANK_ORDER);
    int rc = 0;
    for (int v = 0; v < nv && !rc; v++) {
        stage_level *lv = &se->levels[v];
        lv->transient_bytes = values[v];
        rc = level_solve(te, se, lv);
        const frontier_set *r = &lv->chain.result;
        for (int k = 0; k < r->count && !rc; k++) {
            const frontier_point *q = &r->points[k];
            double mem = static_bytes + inflight * q->memory_bytes + lv->transient_bytes +
                         cm->workspace_bytes;
            rc = frontier_set_add(&se->points, q->time_s + comm_s, mem, v, k);
        }
    }
    free(values);
    frontier_prune(&se->points);
    return rc;
}

/* Index of the fastest point of a stage with memory <= mu, or -1.  Points
 * are time increasing, memory decreasing: the fitting ones are a suffix. */
static int stage_pick(const stage_eval *se, double mu)
{
    int lo = 0, hi = se->points.count;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (se->points.points[mid].memory_bytes <= mu)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo < se->points.count ? lo : -1;
}

/* The tuple's frontier by the memory-bound sweep; left = index into mus. */
static int tuple_sweep(const tuple_eval *te, double **mus_out, frontier_set *out)
{
    int total = 0;
    for (int s = 0; s < te->p; s++)
        total += te->stages[s].points.count;
    double *mus = malloc((size_t)(total > 0 ? total : 1) * sizeof *mus);
    if (!mus)
        return -1;
    int n = 0;
    for (int s = 0; s < te->p; s++)
        for (int k = 0; k < te->stages[s].points.count; k++)
            mus[n++] = te->stages[s].points.points[k].memory_bytes;
    qsort(mus, (size_t)n, sizeof *mus, double_compare);
    for (int i = 0; i < n; i++) {
        double sum = 0.0, max = 0.0, mem = 0.0;
        bool feasible = true;
        for (int s = 0; s < te->p && feasible; s++) {
            int k = stage_pick(&te->stages[s], mus[i]);
            if (k < 0) {
                feasible = false;
                break;
            }
            const frontier_point *q = &te->stages[s].points.points[k];
            sum += q->time_s - te->stages[s].chain_less_s;
            max = fmax(max, q->time_s);
            mem = fmax(mem, q->memory_bytes);
        }
        if (feasible && frontier_set_add(out, predict_critical_path_s(sum, max, te->m, te->tail_s),
                                         mem, i, 0)) {
            free(mus);
            return -1;
        }
    }
    frontier_prune(out);
    *mus_out = mus;
    return 0;
}

/* Builds the entry of the sweep point at memory bound mu. */
static int entry_materialise(const tuple_eval *te, const tuple *t, double mu,
                             const frontier_point *q, frontier_entry *e)
{
    const cm_model *cm = te->cm;
    e->devices = t->devices;
    e->tensor_parallel = t->tp;
    e->pipeline_parallel = t->pp;
    e->data_parallel = t->dp;
    e->micro_batch_size = t->b;
    e->num_micro_batches = t->m;
    e->iteration_s = q->time_s;
    e->memory_bytes = q->memory_bytes;
    e->fits = q->memory_bytes <= cm->hbm_bytes;
    e->num_layers = cm->num_layers;
    e->recompute = calloc((size_t)cm->num_layers, sizeof *e->recompute);
    int *configs = calloc((size_t)cm->num_layers, sizeof *configs);
    if (!e->recompute || !configs) {
        free(configs);
        return -1;
    }
    for (int s = 0; s < te->p; s++) {
        const stage_eval *se = &te->stages[s];
        const frontier_point *sp = &se->points.points[stage_pick(se, mu)];
        const stage_level *lv = &se->levels[sp->left];
        frontier_chain_choice(&lv->chain, sp->right, configs, NULL);
        for (int i = 0; i < se->last - se->first; i++)
            e->recompute[se->first + i] = lv->options[i * RECOMPUTE_COUNT + configs[i]];
    }
    for (int l = 0; l < cm->num_layers; l++)
        if (cm->layers[l].kind == CM_DECODER || cm->layers[l].kind == CM_CUSTOM)
            e->recompute_layers[e->recompute[l]]++;
    free(configs);
    return 0;
}

/* Merges the tuple's sweep points into the running frontier f of one device
 * count: only the points that survive the union are materialised. */
static int frontier_merge(frontier *f, const tuple_eval *te, const tuple *t, const double *mus,
                          const frontier_set *cand)
{
    frontier_set all;
    frontier_set_init(&all);
    int rc = 0;
    for (int i = 0; i < f->count && !rc; i++)
        rc = frontier_set_add(&all, f->entries[i].iteration_s, f->entries[i].memory_bytes, i, 0);
    for (int k = 0; k < cand->count && !rc; k++)
        rc = frontier_set_add(&all, cand->points[k].time_s, cand->points[k].memory_bytes, k, 1);
    if (!rc)
        frontier_prune(&all);
    frontier next = {0};
    for (int k = 0; k < all.count && !rc; k++) {
        const frontier_point *p = &all.points[k];
        frontier_entry *e = ft_frontier_push(&next);
        if (!e) {
            rc = -1;
        } else if (p->right == 0) {
            *e = f->entries[p->left];
            f->entries[p->left].recompute = NULL; /* moved */
        } else {
            const frontier_point *q = &cand->points[p->left];
            rc = entry_materialise(te, t, mus[q->left], q, e);
        }
    }
    frontier_set_free(&all);
    if (rc) {
        frontier_free(&next);
        return -1;
    }
    next.configs_evaluated = f->configs_evaluated;
    next.capacity_bytes = f->capacity_bytes;
    next.zero_overlap = f->zero_overlap; /* the rest of the tuples price it too */
    frontier_free(f);
    *f = next;
    return 0;
}

/* Prices one tuple and merges its frontier into f.  A tuple the cost model
 * rejects is skipped. */
int ft_tuple_evaluate(const wl_workload *w, const cl_cluster *c, const tuple *t, frontier *f,
                      np_error *err)
{
    wl_workload wc;
    frontier_entry shape = {.tensor_parallel = t->tp,
                            .pipeline_parallel = t->pp,
                            .data_parallel = t->dp,
                            .micro_batch_size = t->b};
    frontier_workload_for_entry(w, &shape, &wc);
    cm_model cm;
    int rc = cm_build(&wc, c, t->b, &cm, NULL);
    if (rc)
        return rc == NP_EXIT_INPUT ? 0 : np_error_set(err, rc, FT_SOURCE, "", 0, "out of memory");
    cm.zero_overlap = f->zero_overlap;
    tuple_eval te = {.cm = &cm, .c = c, .p = t->pp, .m = t->m};
    rc = ft_uniform_plan(&cm, c, &wc, &te.pl, NULL);
    if (rc) {
        cm_free(&cm);
        return 0;
    }
    f->configs_evaluated++;
    te.stages = calloc((size_t)t->pp, sizeof *te.stages);
    double *mus = NULL;
    frontier_set cand;
    frontier_set_init(&cand);
    rc = te.stages ? 0 : -1;
    for (int s = 0; s < t->pp && !rc; s++) {
        te.stages[s].first = te.pl.chunk_start[s];
        te.stages[s].last = te.pl.chunk_start[s + 1];
        te.stages[s].chain_less_s =
            predict_zero_chain_less_s(&cm, te.stages[s].first, te.stages[s].last);
        te.tail_s = fmax(te.tail_s, predict_stage_tail_s(&cm, c, &te.pl, s));
        rc = stage_solve(&te, s);
    }
    /* ZeRO-2's overlapped gather of the update: what the first forwards do
     * not hide, the same for every recompute (predict.c) */
    te.tail_s += predict_zero_update_exposed_s(&cm, c, &te.pl, PREDICT_SENDS_RANK_ORDER);
    if (!rc)
        rc = tuple_sweep(&te, &mus, &cand);
    if (!rc)
        rc = frontier_merge(f, &te, t, mus, &cand);
    for (int s = 0; te.stages && s < t->pp; s++)
        stage_eval_free(&te.stages[s]);
    free(te.stages);
    free(mus);
    frontier_set_free(&cand);
    plan_free(&te.pl);
    cm_free(&cm);
    return rc ? np_error_set(err, NP_EXIT_INTERNAL, FT_SOURCE, "", 0, "out of memory") : 0;
}
