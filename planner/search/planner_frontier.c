/*
 * planner_frontier.c -- TensorOpt frontier tracking and the planner "ft".
 *
 * Source.  Z. Cai et al., "TensorOpt: Exploring the Tradeoffs in Distributed
 * DNN Training With Auto-Parallelism", IEEE TPDS 33(8), 2022 [rec: from the
 * abstract and PLANNERS.md].  Each operator has configurations, each with a
 * cost (time, memory); instead of one optimum, keep per configuration the
 * frontier of non-dominated (time, memory) pairs, combine operators with the
 * Pareto-sum F1 ⊕ F2 = Pareto{(t1 + t2, m1 + m2)} and alternatives with the
 * Pareto-union, and return the whole frontier, from which a user picks the
 * fastest plan that fits or the smallest memory for a device count.
 *
 * Sets.  A frontier is pruned by sorting on time and keeping strictly
 * decreasing memory (O(n log n)); the Pareto-sum enumerates the |A|·|B| pairs
 * and prunes.  Comparisons use a relative tolerance of 1e-9, so that the same
 * sum taken in two orders is one point, not two.
 *
 * Chain DP.  Operators 0..n−1 in a chain, operator i with configurations c:
 *   F_0(c) = N_0(c),
 *   F_i(c) = Pareto( ∪_{c'} [F_{i−1}(c') ⊕ E_i(c', c)] ) ⊕ N_i(c),
 * result ∪_c F_{n−1}(c).  Every point remembers the previous configuration
 * and point, so any result point unwinds to one configuration per operator.
 *
 * What is modelled for a training job (1F1B pipeline, Megatron layout):
 *   - Global choices, enumerated: TP degree t (t ≤ NPUs per node, t divides
 *     the heads, the query groups and the FFN width; t = 1 for a layer-listed
 *     model), pipeline depth p ≤ layers, data parallelism d = N/(t·p) dividing
 *     the global batch G, micro-batch size b a power of two dividing G/d, so
 *     m = G/(d·b).  Every tuple gets its own cost model (cm_build on the
 *     workload with these sizes) and Megatron's uniform partition (planner_
 *     megatron), embedding on the first stage, LM head on the last.
 *   - Operators: the layers of the cost model.  Configuration: the layer's
 *     recompute option; decoder layers none / selective / full, listed
 *     (CNN-style) layers none / full (selective means nothing there), the
 *     embedding and the LM head none, as Megatron does.  N_l(r) is the single
 *     point (F + B + W + TP collectives + recompute time, activation bytes
 *     kept per micro-batch) that plan_layer_recompute() gives.
 *   - Sharding: TensorOpt's configurations also carry a sharding with
 *     resharding edges.  Our plan type holds one TP degree for the whole
 *     model and the simulator runs one TP group per stage, so the sharding is
 *     a global choice, every edge joins two layers of identical sharding and
 *     costs 0.  The chain solver takes edge costs (tests exercise them); a
 *     per-layer TP would need a plan type that can express it.
 *   - A stage is one device (group): its layers' time and activation bytes
 *     add, which is exactly the Pareto-sum setting, so the chain DP over the
 *     stage's layers gives its (time, activation) frontier.  Stage memory is
 *     (memory.c's replay of 1F1B)
 *       M_s = static_s + k_s · A_s + τ_s + workspace,  k_s = min(p − s, m),
 *     with τ_s the largest recompute working set of a layer of the stage, a
 *     maximum rather than a sum.  It is handled by levels: for every distinct
 *     working-set value λ, the DP runs with the options whose working set is
 *     ≤ λ and charges λ; a configuration appears exactly at its own level
 *     and, over-charged and therefore dominated, at higher ones.
 *     Stage time S_s = Σ layer times + 2·c_s, c_s the send of the stage's
 *     output (alpha-beta on the scale-up fabric when both ends of every TP
 *     rank's transfer share a server under Megatron's tp-dp-pp rank order,
 *     else on the scale-out fabric).
 *   - Stages run concurrently, so they do not Pareto-sum: the iteration is
 *     the 1F1B critical path T = Σ_s S_s + (m − 1)·max_s S_s + tail (Narayanan
 *     et al. SC'21 §2.2; PLANNERS.md, BMPipe's preparation time plus (m−1)τ),
 *     tail = max_s (DP gradient all-reduce + optimizer step), and memory per
 *     device is max_s M_s.  Both grow with every stage's S_s and M_s, so for
 *     a memory bound μ the fastest choice takes, in every stage, its fastest
 *     point with M_s ≤ μ; sweeping μ over the stages' memory values and
 *     pruning gives the exact frontier of the tuple (any configuration with
 *     memory M is matched or beaten by the sweep at μ = M).
 *   - DP all-reduce: ring (cm_ring_allreduce_s) of the stage's gradient bytes
 *     over d replicas, on the scale-out fabric once t·d exceeds a server (the
 *     replicas of a TP rank sit t ranks apart).  Optimizer:
 *     cm_optimizer_step_s over the stage's layers.
 *   - The job's frontier for N devices is the Pareto-union over the tuples.
 *     Across device counts, frontier_sweep() lists one frontier per N.
 *
 * Not modelled: interleaved or zero-bubble schedules, uneven partitions
 * (the partition is Megatron's; BMPipe and AdaPipe search it), per-unit
 * recompute, and communication overlap beyond what the critical path states.
 */
#include "frontier.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memory.h"
#include "planner.h"
#include "predict.h"

#define FT_SOURCE "<ft>"

/* ======================================================================== */
/* 1. Pareto sets                                                            */
/* ======================================================================== */

void frontier_set_init(frontier_set *f) { memset(f, 0, sizeof *f); }

void frontier_set_free(frontier_set *f)
{
    free(f->points);
    memset(f, 0, sizeof *f);
}

int frontier_set_add(frontier_set *f, double time_s, double memory_bytes, int left, int right)
{
    if (f->count == f->capacity) {
        int cap = f->capacity ? 2 * f->capacity : 16;
        frontier_point *pts = realloc(f->points, (size_t)cap * sizeof *pts);
        if (!pts)
            return -1;
        f->points = pts;
        f->capacity = cap;
    }
    f->points[f->count++] = (frontier_point){time_s, memory_bytes, left, right};
    return 0;
}

static bool near_equal(double a, double b)
{
    return fabs(a - b) <= FRONTIER_TOLERANCE * fmax(fabs(a), fabs(b));
}

static bool no_greater(double a, double b) { return a <= b || near_equal(a, b); }

bool frontier_dominates(const frontier_point *q, const frontier_point *p)
{
    if (!no_greater(q->time_s, p->time_s) || !no_greater(q->memory_bytes, p->memory_bytes))
        return false;
    return !(near_equal(q->time_s, p->time_s) && near_equal(q->memory_bytes, p->memory_bytes));
}

static int point_compare(const void *a, const void *b)
{
    const frontier_point *x = a, *y = b;
    if (x->time_s != y->time_s)
        return x->time_s < y->time_s ? -1 : 1;
    if (x->memory_bytes != y->memory_bytes)
        return x->memory_bytes < y->memory_bytes ? -1 : 1;
    return 0;
}

static bool set_sorted(const frontier_set *f)
{
    for (int i = 1; i < f->count; i++)
        if (point_compare(&f->points[i - 1], &f->points[i]) > 0)
            return false;
    return true;
}

void frontier_prune(frontier_set *f)
{
    if (f->count < 2)
        return;
    if (!set_sorted(f)) /* sums with one point and merged unions already are */
        qsort(f->points, (size_t)f->count, sizeof *f->points, point_compare);
    int kept = 0;
    for (int i = 0; i < f->count; i++) {
        frontier_point p = f->points[i];
        if (kept) {
            const frontier_point *last = &f->points[kept - 1];
            if (no_greater(last->memory_bytes, p.memory_bytes))
                continue; /* as fast or faster, with no more memory */
        }
        /* p has strictly less memory; a kept point of (nearly) the same time
         * is dominated by it. */
        while (kept && near_equal(f->points[kept - 1].time_s, p.time_s))
            kept--;
        f->points[kept++] = p;
    }
    f->count = kept;
}

static void set_move(frontier_set *dst, frontier_set *src)
{
    free(dst->points);
    *dst = *src;
    frontier_set_init(src);
}

/* Appends the points of a and b, merged in order when both are sorted (the
 * usual case: pruned frontiers), so that the prune needs no sort. */
static int union_points(const frontier_set *a, const frontier_set *b, frontier_set *tmp)
{
    bool merge = set_sorted(a) && set_sorted(b);
    int i = 0, j = 0;
    while (i < a->count || j < b->count) {
        bool from_a = j == b->count;
        if (!from_a && i < a->count)
            from_a = !merge || point_compare(&a->points[i], &b->points[j]) <= 0;
        const frontier_point *p = from_a ? &a->points[i++] : &b->points[j++];
        if (frontier_set_add(tmp, p->time_s, p->memory_bytes, p->left, p->right))
            return -1;
    }
    return 0;
}

int frontier_union(const frontier_set *a, const frontier_set *b, frontier_set *out)
{
    frontier_set tmp;
    frontier_set_init(&tmp);
    if (union_points(a, b, &tmp)) {
        frontier_set_free(&tmp);
        return -1;
    }
    frontier_prune(&tmp);
    set_move(out, &tmp);
    return 0;
}

int frontier_sum(const frontier_set *a, const frontier_set *b, frontier_set *out)
{
    frontier_set tmp;
    frontier_set_init(&tmp);
    for (int i = 0; i < a->count; i++)
        for (int j = 0; j < b->count; j++) {
            const frontier_point *p = &a->points[i], *q = &b->points[j];
            if (frontier_set_add(&tmp, p->time_s + q->time_s, p->memory_bytes + q->memory_bytes, i,
                                 j)) {
                frontier_set_free(&tmp);
                return -1;
            }
        }
    frontier_prune(&tmp);
    set_move(out, &tmp);
    return 0;
}

/* ======================================================================== */
/* 2. Chain DP                                                               */
/* ======================================================================== */

void frontier_chain_free(frontier_chain *ch)
{
    int total = ch->first_set ? ch->first_set[ch->num_ops] : 0;
    for (int s = 0; s < total; s++) {
        if (ch->sets)
            frontier_set_free(&ch->sets[s]);
        if (ch->node_pick)
            free(ch->node_pick[s]);
    }
    free(ch->sets);
    free(ch->node_pick);
    free(ch->first_set);
    frontier_set_free(&ch->result);
    memset(ch, 0, sizeof *ch);
}

/* Records which node point every point of F used, then rewrites the points'
 * provenance from "index in the union" to "previous config, previous index". */
static int chain_record(frontier_set *F, const frontier_set *joined, int **pick)
{
    *pick = malloc((size_t)(F->count > 0 ? F->count : 1) * sizeof **pick);
    if (!*pick)
        return -1;
    for (int k = 0; k < F->count; k++) {
        frontier_point *p = &F->points[k];
        (*pick)[k] = p->right;
        if (joined) {
            const frontier_point *from = &joined->points[p->left];
            p->left = from->left;
            p->right = from->right;
        } else {
            p->left = p->right = -1;
        }
    }
    return 0;
}

/* Pareto ∪_{c'} [F_{i−1}(c') ⊕ E_i(c', c)], points tagged (c', index). */
static int chain_join(const frontier_chain_op *ops, int i, int c, const frontier_chain *ch,
                      frontier_set *joined)
{
    const frontier_chain_op *op = &ops[i];
    frontier_set edge, part;
    frontier_set_init(&edge);
    frontier_set_init(&part);
    int rc = 0;
    for (int cp = 0; cp < ops[i - 1].num_configs && !rc; cp++) {
        int e = cp * op->num_configs + c;
        double et = op->edge_time_s ? op->edge_time_s[e] : 0.0;
        double em = op->edge_memory_bytes ? op->edge_memory_bytes[e] : 0.0;
        if (isinf(et) || isinf(em))
            continue;
        edge.count = 0;
        rc = frontier_set_add(&edge, et, em, 0, 0);
        if (!rc)
            rc = frontier_sum(&ch->sets[ch->first_set[i - 1] + cp], &edge, &part);
        for (int k = 0; !rc && k < part.count; k++) {
            part.points[k].right = part.points[k].left;
            part.points[k].left = cp;
        }
        if (!rc)
            rc = frontier_union(joined, &part, joined);
    }
    frontier_set_free(&edge);
    frontier_set_free(&part);
    return rc;
}

/* With free edges the join is the same for every configuration c: joined
 * caches it (count < 0: not computed yet). */
static int chain_step(const frontier_chain_op *ops, int i, int c, frontier_chain *ch,
                      frontier_set *cached)
{
    int s = ch->first_set[i] + c;
    frontier_set *F = &ch->sets[s];
    const frontier_set *node = &ops[i].node[c];
    if (i == 0) {
        frontier_set none;
        frontier_set_init(&none);
        int rc = frontier_set_add(&none, 0.0, 0.0, 0, 0);
        if (!rc)
            rc = frontier_sum(&none, node, F); /* right = node index */
        frontier_set_free(&none);
        return rc ? rc : chain_record(F, NULL, &ch->node_pick[s]);
    }
    bool free_edges = !ops[i].edge_time_s && !ops[i].edge_memory_bytes;
    frontier_set own, *joined = free_edges ? cached : &own;
    frontier_set_init(&own);
    int rc = 0;
    if (!free_edges || c == 0)
        rc = chain_join(ops, i, c, ch, joined);
    if (!rc)
        rc = frontier_sum(joined, node, F);
    if (!rc)
        rc = chain_record(F, joined, &ch->node_pick[s]);
    frontier_set_free(&own);
    return rc;
}

int frontier_chain_solve(const frontier_chain_op *ops, int num_ops, frontier_chain *out)
{
    memset(out, 0, sizeof *out);
    out->num_ops = num_ops;
    out->first_set = calloc((size_t)num_ops + 1, sizeof *out->first_set);
    if (!out->first_set)
        return -1;
    for (int i = 0; i < num_ops; i++)
        out->first_set[i + 1] = out->first_set[i] + ops[i].num_configs;
    int total = out->first_set[num_ops];
    out->sets = calloc((size_t)(total > 0 ? total : 1), sizeof *out->sets);
    out->node_pick = calloc((size_t)(total > 0 ? total : 1), sizeof *out->node_pick);
    if (!out->sets || !out->node_pick)
        goto oom;
    frontier_set part;
    frontier_set_init(&part);
    for (int i = 0; i < num_ops; i++) {
        part.count = 0; /* the join shared by the configurations of op i */
        for (int c = 0; c < ops[i].num_configs; c++)
            if (chain_step(ops, i, c, out, &part))
                goto oom_part;
    }
    if (num_ops == 0) {
        frontier_set_free(&part);
        return 0;
    }
    int last = num_ops - 1;
    for (int c = 0; c < ops[last].num_configs; c++) {
        const frontier_set *F = &out->sets[out->first_set[last] + c];
        part.count = 0;
        for (int k = 0; k < F->count; k++)
            if (frontier_set_add(&part, F->points[k].time_s, F->points[k].memory_bytes, c, k))
                goto oom_part;
        if (frontier_union(&out->result, &part, &out->result))
            goto oom_part;
    }
    frontier_set_free(&part);
    return 0;
oom_part:
    frontier_set_free(&part);
oom:
    frontier_chain_free(out);
    return -1;
}

void frontier_chain_choice(const frontier_chain *ch, int k, int *configs, int *picks)
{
    int c = ch->result.points[k].left, idx = ch->result.points[k].right;
    for (int i = ch->num_ops - 1; i >= 0; i--) {
        int s = ch->first_set[i] + c;
        configs[i] = c;
        if (picks)
            picks[i] = ch->node_pick[s][idx];
        const frontier_point *p = &ch->sets[s].points[idx];
        c = p->left;
        idx = p->right;
    }
}

/* ======================================================================== */
/* 3. The job's cost function                                               */
/* ======================================================================== */

/* The 1F1B critical path of predict.c, sends placed by Megatron's rank order. */
double frontier_plan_time_s(const cm_model *cm, const cl_cluster *c, const plan *pl)
{
    return predict_1f1b_iteration_s(cm, c, pl, PREDICT_SENDS_RANK_ORDER);
}

/* ======================================================================== */
/* 3. Workloads and plans of a configuration                                */
/* ======================================================================== */

void frontier_workload_for_entry(const wl_workload *w, const frontier_entry *e, wl_workload *out)
{
    *out = *w;
    out->parallel.tensor_model_parallel_size = e->tensor_parallel;
    out->parallel.pipeline_model_parallel_size = e->pipeline_parallel;
    out->parallel.data_parallel_size = e->data_parallel;
    out->parallel.virtual_pipeline_model_parallel_size = 1;
    out->training.micro_batch_size = e->micro_batch_size;
    out->schedule = SCHED_1F1B;
}

void frontier_workload_for_plan(const wl_workload *w, const plan *pl, wl_workload *out)
{
    *out = *w;
    out->parallel.tensor_model_parallel_size = pl->tensor_parallel;
    out->parallel.pipeline_model_parallel_size = pl->num_stages;
    out->parallel.data_parallel_size = pl->data_parallel;
    out->parallel.virtual_pipeline_model_parallel_size = pl->num_chunks;
    out->training.micro_batch_size = pl->micro_batch_size;
    out->schedule = pl->schedule;
}

/* Megatron's uniform 1F1B partition of cm for the workload wc, every layer
 * without recompute (the caller sets the options). */
static int uniform_plan(const cm_model *cm, const cl_cluster *c, const wl_workload *wc, plan *out,
                        np_error *err)
{
    planner_options o;
    planner_init_options(&o, wc);
    o.schedule = SCHED_1F1B;
    o.num_chunks = 1;
    o.recompute = RECOMPUTE_NONE;
    return planner_megatron(cm, c, wc, &o, out, err);
}

int frontier_entry_plan(const wl_workload *w, const cl_cluster *c, const frontier_entry *e,
                        plan *out, np_error *err)
{
    wl_workload wc;
    cm_model cm;
    frontier_workload_for_entry(w, e, &wc);
    int rc = cm_build(&wc, c, e->micro_batch_size, &cm, err);
    if (rc)
        return rc;
    rc = uniform_plan(&cm, c, &wc, out, err);
    if (!rc && cm.num_layers != e->num_layers) {
        plan_free(out);
        rc = np_error_set(err, NP_EXIT_INTERNAL, FT_SOURCE, "", 0,
                          "frontier entry has %d layers, the cost model %d", e->num_layers,
                          cm.num_layers);
    }
    cm_free(&cm);
    if (rc)
        return rc;
    memcpy(out->recompute, e->recompute, (size_t)e->num_layers * sizeof *out->recompute);
    out->predicted_iteration_s = e->iteration_s;
    snprintf(out->planner, sizeof out->planner, "ft");
    return 0;
}

/* ======================================================================== */
/* 3. One (tp, pp, dp, micro-batch) tuple                                   */
/* ======================================================================== */

/* Recompute options a layer may take (see the header comment). */
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
    double inflight = mem_inflight(SCHED_1F1B, te->p, s, te->m, 1, 0);
    double comm_s = 2.0 * predict_boundary_s(cm, te->c, &te->pl, s, PREDICT_SENDS_RANK_ORDER);
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
            sum += q->time_s;
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

/* ======================================================================== */
/* 3. The frontier for one device count                                     */
/* ======================================================================== */

typedef struct tuple {
    int devices, tp, pp, dp, b, m;
} tuple;

static void entry_free(frontier_entry *e)
{
    free(e->recompute);
    e->recompute = NULL;
}

void frontier_free(frontier *f)
{
    for (int i = 0; i < f->count; i++)
        entry_free(&f->entries[i]);
    free(f->entries);
    memset(f, 0, sizeof *f);
}

static frontier_entry *frontier_push(frontier *f)
{
    if (f->count == f->capacity) {
        int cap = f->capacity ? 2 * f->capacity : 16;
        frontier_entry *e = realloc(f->entries, (size_t)cap * sizeof *e);
        if (!e)
            return NULL;
        f->entries = e;
        f->capacity = cap;
    }
    frontier_entry *e = &f->entries[f->count++];
    memset(e, 0, sizeof *e);
    return e;
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
        frontier_entry *e = frontier_push(&next);
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
    frontier_free(f);
    *f = next;
    return 0;
}

/* Prices one tuple and merges its frontier into f.  A tuple the cost model
 * rejects is skipped. */
static int tuple_evaluate(const wl_workload *w, const cl_cluster *c, const tuple *t, frontier *f,
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
    tuple_eval te = {.cm = &cm, .c = c, .p = t->pp, .m = t->m};
    rc = uniform_plan(&cm, c, &wc, &te.pl, NULL);
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
        te.tail_s = fmax(te.tail_s, predict_stage_tail_s(&cm, c, &te.pl, s));
        rc = stage_solve(&te, s);
    }
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

static bool tp_valid(const wl_workload *w, const cl_cluster *c, int tp)
{
    const wl_model *md = &w->model;
    if (c->npus_per_node > 0 && tp > c->npus_per_node)
        return false;
    if (md->num_layer_specs > 0)
        return tp == 1; /* listed layers are priced as one NPU runs them */
    int groups = md->num_query_groups > 0 ? md->num_query_groups : md->num_attention_heads;
    return md->num_attention_heads % tp == 0 && groups % tp == 0 && md->ffn_hidden_size % tp == 0;
}

static int pipeline_layers(const wl_workload *w)
{
    return w->model.num_layer_specs > 0 ? w->model.num_layer_specs : w->model.num_layers;
}

/* Every valid (tp, pp, dp, b) of n devices; returns how many were valid. */
static int device_count_evaluate(const wl_workload *w, const cl_cluster *c, int n, frontier *f,
                                 np_error *err)
{
    long long G = w->training.global_batch_size;
    int ep = w->model.num_experts > 0 && w->parallel.expert_model_parallel_size > 0
                 ? w->parallel.expert_model_parallel_size
                 : 1;
    int valid = 0;
    for (int tp = 1; tp <= n; tp++) {
        if (n % tp || !tp_valid(w, c, tp))
            continue;
        for (int pp = 1; pp <= n / tp && pp <= pipeline_layers(w); pp++) {
            if ((n / tp) % pp)
                continue;
            int dp = n / tp / pp;
            if (G % dp || dp % ep)
                continue;
            long long per_replica = G / dp;
            for (long long b = 1; b <= per_replica && per_replica % b == 0; b *= 2) {
                tuple t = {n, tp, pp, dp, (int)b, (int)(per_replica / b)};
                valid++;
                int rc = tuple_evaluate(w, c, &t, f, err);
                if (rc)
                    return -rc;
            }
        }
    }
    return valid;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int frontier_compute(const wl_workload *w, const cl_cluster *c, int num_devices, frontier *out,
                     np_error *err)
{
    memset(out, 0, sizeof *out);
    out->capacity_bytes = c->hbm_bytes;
    double t0 = now_s();
    if (num_devices <= 0)
        return np_error_set(err, NP_EXIT_INPUT, w->path, "parallel", 0,
                            "expected a positive device count, got %d", num_devices);
    int valid = device_count_evaluate(w, c, num_devices, out, err);
    out->wall_s = now_s() - t0;
    if (valid < 0) {
        frontier_free(out);
        return -valid;
    }
    if (valid == 0)
        return np_error_set(err, NP_EXIT_INPUT, w->path, "parallel", 0,
                            "no split of %d NPUs into tensor x pipeline x data parallel sizes "
                            "fits the model: tensor parallel must divide the heads (%d), query "
                            "groups and FFN width and stay within a server (%d NPUs), pipeline "
                            "at most %d stages, data parallel must divide the global batch (%ld)",
                            num_devices, w->model.num_attention_heads, c->npus_per_node,
                            pipeline_layers(w), w->training.global_batch_size);
    return 0;
}

static int frontier_append(frontier *dst, frontier *src)
{
    for (int i = 0; i < src->count; i++) {
        frontier_entry *e = frontier_push(dst);
        if (!e)
            return -1;
        *e = src->entries[i];
        src->entries[i].recompute = NULL;
    }
    dst->configs_evaluated += src->configs_evaluated;
    return 0;
}

/* 1, 2, 4, ... then the platform's count itself when it is not a power of 2. */
static long long next_device_count(long long n, int num_npus)
{
    return n < num_npus && 2 * n > num_npus ? num_npus : 2 * n;
}

int frontier_sweep(const wl_workload *w, const cl_cluster *c, frontier *out, np_error *err)
{
    memset(out, 0, sizeof *out);
    out->capacity_bytes = c->hbm_bytes;
    double t0 = now_s();
    bool started = false;
    for (long long n = 1; n <= c->num_npus; n = next_device_count(n, c->num_npus)) {
        frontier one;
        int rc = frontier_compute(w, c, (int)n, &one, err);
        if (rc == NP_EXIT_INPUT) {
            np_error_clear(err);
            continue;
        }
        if (rc) {
            frontier_free(out);
            return rc;
        }
        started = started || frontier_fastest_fitting(&one, 0) >= 0;
        if (started && frontier_append(out, &one)) {
            frontier_free(&one);
            frontier_free(out);
            return np_error_set(err, NP_EXIT_INTERNAL, FT_SOURCE, "", 0, "out of memory");
        }
        frontier_free(&one);
    }
    out->wall_s = now_s() - t0;
    return 0;
}

int frontier_fastest_fitting(const frontier *f, int devices)
{
    int best = -1;
    for (int i = 0; i < f->count; i++) {
        const frontier_entry *e = &f->entries[i];
        if ((devices && e->devices != devices) || !e->fits)
            continue;
        if (best < 0 || e->iteration_s < f->entries[best].iteration_s)
            best = i;
    }
    return best;
}

int frontier_smallest_memory(const frontier *f, int devices)
{
    int best = -1;
    for (int i = 0; i < f->count; i++) {
        const frontier_entry *e = &f->entries[i];
        if (devices && e->devices != devices)
            continue;
        if (best < 0 || e->memory_bytes < f->entries[best].memory_bytes)
            best = i;
    }
    return best;
}

/* ======================================================================== */
/* 3. Output and the planner                                                */
/* ======================================================================== */

static void recompute_label(const frontier_entry *e, char *buf, int size)
{
    int layers = 0;
    for (int r = 0; r < RECOMPUTE_COUNT; r++)
        layers += e->recompute_layers[r];
    for (int r = 0; r < RECOMPUTE_COUNT; r++)
        if (e->recompute_layers[r] == layers) {
            snprintf(buf, size, "%s", wl_recompute_name((recompute_kind)r));
            return;
        }
    snprintf(buf, size, "mixed(%d/%d/%d)", e->recompute_layers[RECOMPUTE_NONE],
             e->recompute_layers[RECOMPUTE_SELECTIVE], e->recompute_layers[RECOMPUTE_FULL]);
}

int frontier_write_csv(const char *path, const frontier *f, np_error *err)
{
    FILE *out = fopen(path, "w");
    if (!out)
        return np_error_set(err, NP_EXIT_INTERNAL, path, "", 0,
                            "cannot open the frontier CSV for writing");
    fprintf(out, "devices,tp,pp,dp,micro_batch_size,recompute,iteration_s,memory_bytes,"
                 "feasible,capacity_bytes\n");
    for (int i = 0; i < f->count; i++) {
        const frontier_entry *e = &f->entries[i];
        char label[64];
        recompute_label(e, label, (int)sizeof label);
        fprintf(out, "%d,%d,%d,%d,%d,%s,%.9g,%.0f,%s,%.0f\n", e->devices, e->tensor_parallel,
                e->pipeline_parallel, e->data_parallel, e->micro_batch_size, label, e->iteration_s,
                e->memory_bytes, e->fits ? "true" : "false", f->capacity_bytes);
    }
    if (fclose(out) != 0)
        return np_error_set(err, NP_EXIT_INTERNAL, path, "", 0, "error writing the frontier CSV");
    return 0;
}

int planner_frontier(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                     const planner_options *o, plan *out, np_error *err)
{
    (void)cm; /* built for the workload's sizes; every tuple gets its own */
    if (o->schedule != SCHED_1F1B)
        return np_error_set(err, NP_EXIT_INPUT, w->path, "schedule", 0,
                            "planner ft models the 1f1b schedule only, got %s",
                            wl_schedule_name(o->schedule));
    const wl_parallel *par = &w->parallel;
    int devices = par->tensor_model_parallel_size * par->pipeline_model_parallel_size *
                  par->data_parallel_size;
    frontier f;
    int rc = frontier_compute(w, c, devices, &f, err);
    if (rc)
        return rc;
    int best = frontier_fastest_fitting(&f, devices);
    if (best < 0) {
        int least = frontier_smallest_memory(&f, devices);
        rc = np_error_set(err, NP_EXIT_NOFIT, w->path, "", 0,
                          "planner ft: no configuration of %d NPUs fits %.2f GB per NPU; the "
                          "smallest needs %.2f GB",
                          devices, c->hbm_bytes / 1e9,
                          least >= 0 ? f.entries[least].memory_bytes / 1e9 : 0.0);
    } else {
        rc = frontier_entry_plan(w, c, &f.entries[best], out, err);
    }
    frontier_free(&f);
    return rc;
}
