/*
 * planner_adapipe.c -- AdaPipe-style adaptive recomputation and partitioning
 * (Sun et al., "AdaPipe: Optimizing Pipeline Parallelism with Adaptive
 * Recomputation and Partitioning", ASPLOS'24), reconstructed from the paper's
 * abstract and two-level formulation (PLANNERS.md, "AdaPipe").
 *
 * Level 1: recompute per stage.  For stage s holding layers [i, j), choose for
 * every layer which of its units (cm_layer.units: LayerNorm outputs, QKV,
 * core attention, output projection, FC1, activation, FC2, dropout masks;
 * the layer input is always kept) to recompute, minimising the recompute
 * time of the stage under its memory.  Our memory model (memory.c) charges a
 * one-chunk stage
 *   static + k_s·Σ_l kept_l + max_l dropped_l + workspace ≤ M,
 * kept_l = a_l^none − dropped_l, where the max is the working set of the
 * recompute running at the peak; k_s = mem_inflight().  That is the paper's
 * budget (M − ΣP − workspace)/k_s per micro-batch, with the transient made
 * explicit so that every plan passes the memory check.
 *   Exact solution, exploiting identical layers.  All layers with units must
 * be identical (the decoder layers of a Transformer; the planner refuses
 * others).  One layer's choices are its 2^U unit masks (U ≤ 12).  Only their
 * Pareto frontier F of (kept bytes, recompute time) matters (45 points for
 * Llama 3 405B's 10 units): trading a mask for one that keeps δ fewer bytes
 * in no more time lowers k·Σkept by k·δ and raises the max by at most δ.
 * Sort F by kept bytes; F_x = F[x..] are the masks that drop no more than
 * F[x].  Designate the layer that drops the most: with mask F[x], the other
 * n−1 layers take masks from F_x, and the stage fits iff
 *   k·(K_o + kept_x + Σ_others kept) + dropped_x + static + workspace ≤ M
 * (K_o: bytes kept by layers without units, which are never recomputed), so
 *   R(s, i, j) = min_x time_x + H_x[n−1]( (M − static − workspace − dropped_x)/k
 *                                           − K_o − kept_x ),
 * H_x[n](b) being the least time of n masks from F_x keeping ≤ b bytes.  The
 * frontiers H_x[n] are exact Pareto sets (no byte discretisation), built
 * from the largest x down with one linear merge each:
 *   H_x[0] = {(0, 0)},  H_x[n] = Pareto( H_{x+1}[n] ∪ (H_x[n−1] ⊕ F[x]) )
 * (a multiset of masks from F_x either has no F[x], or is one F[x] plus n−1
 * more).  For Llama that is 1.6 million points over the 45 x and n ≤ 25; only
 * two x are held at a time, every stage query is answered as its x goes by,
 * and one int per point is kept to trace the winners' masks back.
 *
 * Level 2: partition.  With T(s, i, j) = Σ_{l∈[i,j)} (f_l + b_l) + R(s,i,j) +
 * 2·c_j (c_j: boundary send after layer j−1, scale-out; none after the last
 * layer), for each candidate bottleneck τ (a value some T takes)
 *   D[s][j] = min_{i<j, T(s−1,i,j) ≤ τ} D[s−1][i] + T(s−1,i,j),
 * cost(τ) = D[p][L] + (m−1)·τ, and the plan is the best over τ.  τ runs up
 * from the smallest feasible one (found by bisection, feasibility being
 * monotone in τ) and stops once D_∞ + (m−1)·τ exceeds the best cost, D_∞
 * being D[p][L] without a bound (the paper prunes at (m−1)·τ ≥ best; D_∞
 * only tightens it).  The cost is the 1F1B critical path
 * Σ_s T_s + (m−1)·max_s T_s, exactly minimised over partitions and unit
 * masks; it is the plan's predicted iteration time (predict.c, sends over
 * the scale-out fabric), plus the data-parallel all-reduce and optimizer
 * step of the slowest stage at the end.
 *
 * The plan expresses its choices as plan.recompute_units (bit u: recompute
 * unit u of that layer); plan_layer_recompute() prices them.  Layers without
 * units (embedding, LM head, layers of a layer-by-layer model) keep all
 * their activations.  o->recompute is ignored: choosing it is the point.
 */
#include "planner.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memory.h"
#include "predict.h"

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
    double *work_s, *static_bytes, *weight_bytes, *other_kept; /* [L+1] prefix sums */
    int *unit_layers;                                          /* [L+1] prefix counts */
    double *cut_s;                                             /* [L+1] 2·c_j */
    double *inflight, *stash;                                  /* [p] */
} ap_model;

/* Every candidate stage: (s, i, len) at index (s·L + i)·max_len + len−1. */
typedef struct ap_table {
    double *stage_s; /* T(s, i, i+len): INFINITY when it cannot be a stage */
    int *designated; /* x of its best masks, -1 when it has no unit layer */
    int *rest;       /* index of the other layers' point in H_x[n−1] */
    double *best;    /* D[s][j], [(p+1)·(L+1)] */
    int *from;
} ap_table;

/* ---- Pareto frontiers ---------------------------------------------------- */

typedef struct ap_mask_point {
    ap_point pt;
    int mask;
} ap_mask_point;

static int ap_mask_point_cmp(const void *a, const void *b)
{
    const ap_point *x = &((const ap_mask_point *)a)->pt, *y = &((const ap_mask_point *)b)->pt;
    if (x->kept_bytes != y->kept_bytes)
        return x->kept_bytes < y->kept_bytes ? -1 : 1;
    return (x->time_s > y->time_s) - (x->time_s < y->time_s);
}

/* F: the masks whose time is strictly below that of every mask keeping
 * fewer bytes, sorted by kept bytes. */
static int ap_layer_frontier(ap_model *d)
{
    const cm_layer *ly = d->unit_layer;
    int masks = 1 << ly->num_units;
    ap_mask_point *all = malloc((size_t)masks * sizeof *all);
    d->frontier = malloc((size_t)masks * sizeof *d->frontier);
    d->frontier_mask = malloc((size_t)masks * sizeof *d->frontier_mask);
    if (!all || !d->frontier || !d->frontier_mask) {
        free(all);
        return -1;
    }
    for (int mask = 0; mask < masks; mask++) {
        double kept = ly->activation_bytes[RECOMPUTE_NONE], time = 0.0;
        for (int u = 0; u < ly->num_units; u++) {
            if (mask & (1 << u)) {
                kept -= ly->units[u].activation_bytes;
                time += ly->units[u].forward_s;
            }
        }
        all[mask] = (ap_mask_point){{kept, time}, mask};
    }
    qsort(all, (size_t)masks, sizeof *all, ap_mask_point_cmp);
    double best = INFINITY;
    for (int k = 0; k < masks; k++) {
        if (all[k].pt.time_s < best) {
            best = all[k].pt.time_s;
            d->frontier[d->frontier_count] = all[k].pt;
            d->frontier_mask[d->frontier_count++] = all[k].mask;
        }
    }
    free(all);
    return 0;
}

/* Index of the last point keeping at most budget bytes (its time is the
 * least of those), or -1. */
static int ap_lookup(const ap_point *v, int count, double budget)
{
    int lo = 0, hi = count - 1, found = -1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (v[mid].kept_bytes <= budget) {
            found = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return found;
}

static int ap_reserve(ap_level *h, int n, int size)
{
    if (h->capacity[n] >= size)
        return 0;
    ap_point *grown = realloc(h->points[n], (size_t)size * sizeof *grown);
    if (!grown)
        return -1;
    h->points[n] = grown;
    h->capacity[n] = size;
    return 0;
}

/* cur[n] = Pareto(prev[n] ∪ (cur[n−1] ⊕ f)), a merge of two lists sorted by
 * kept bytes with strictly falling time; links as in ap_model.links. */
static int ap_merge(const ap_level *prev, ap_level *cur, int n, ap_point f, int **links)
{
    const ap_point *a = prev->points[n], *b = cur->points[n - 1];
    int na = prev->count[n], nb = cur->count[n - 1], ia = 0, ib = 0, k = 0;
    if (ap_reserve(cur, n, na + nb) || !(*links = malloc((size_t)(na + nb + 1) * sizeof **links)))
        return -1;
    ap_point *out = cur->points[n];
    double best = INFINITY;
    while (ia < na || ib < nb) {
        ap_point shifted = {0, 0};
        if (ib < nb)
            shifted = (ap_point){b[ib].kept_bytes + f.kept_bytes, b[ib].time_s + f.time_s};
        bool take_a = ib >= nb || (ia < na && (a[ia].kept_bytes < shifted.kept_bytes ||
                                               (a[ia].kept_bytes == shifted.kept_bytes &&
                                                a[ia].time_s <= shifted.time_s)));
        ap_point next = take_a ? a[ia] : shifted;
        int link = take_a ? -(ia + 1) : ib;
        if (take_a)
            ia++;
        else
            ib++;
        if (next.time_s < best) {
            best = next.time_s;
            out[k] = next;
            (*links)[k++] = link;
        }
    }
    cur->count[n] = k;
    return 0;
}

/* ---- the model ------------------------------------------------------------ */

static void ap_links_free(ap_model *d)
{
    if (d->links)
        for (int k = 0; k < d->frontier_count * d->max_len; k++)
            free(d->links[k]);
    free(d->links);
    d->links = NULL;
}

static void ap_model_free(ap_model *d)
{
    ap_links_free(d);
    free(d->frontier);
    free(d->frontier_mask);
    free(d->work_s);
    free(d->static_bytes);
    free(d->weight_bytes);
    free(d->other_kept);
    free(d->unit_layers);
    free(d->cut_s);
    free(d->inflight);
    free(d->stash);
}

static bool ap_same_units(const cm_layer *a, const cm_layer *b)
{
    if (a->num_units != b->num_units ||
        a->activation_bytes[RECOMPUTE_NONE] != b->activation_bytes[RECOMPUTE_NONE])
        return false;
    for (int u = 0; u < a->num_units; u++)
        if (a->units[u].forward_s != b->units[u].forward_s ||
            a->units[u].activation_bytes != b->units[u].activation_bytes)
            return false;
    return true;
}

/* The longest range of layers whose sum is at most limit, from prefix sums
 * prefix[0..L] of non-negative terms (two pointers). */
static int ap_longest_range(const double *prefix, int L, double limit)
{
    int best = 0;
    for (int i = 0, j = 0; i < L; i++) {
        if (j < i)
            j = i;
        while (j < L && prefix[j + 1] - prefix[i] <= limit)
            j++;
        if (j - i > best)
            best = j - i;
    }
    return best;
}

/* The longest stage whose static bytes alone fit. */
static int ap_max_len(const ap_model *d)
{
    int best = ap_longest_range(d->static_bytes, d->L, d->cm->hbm_bytes - d->cm->workspace_bytes);
    int cap = d->L - d->p + 1;
    return best < cap ? best : cap;
}

static int ap_model_alloc(ap_model *d)
{
    size_t n = (size_t)d->L + 1;
    d->work_s = calloc(n, sizeof(double));
    d->static_bytes = calloc(n, sizeof(double));
    d->weight_bytes = calloc(n, sizeof(double));
    d->other_kept = calloc(n, sizeof(double));
    d->unit_layers = calloc(n, sizeof(int));
    d->cut_s = calloc(n, sizeof(double));
    d->inflight = calloc((size_t)d->p, sizeof(double));
    d->stash = calloc((size_t)d->p, sizeof(double));
    return d->work_s && d->static_bytes && d->weight_bytes && d->other_kept && d->unit_layers &&
                   d->cut_s && d->inflight && d->stash
               ? 0
               : -1;
}

/* Returns 0, -1 when out of memory, or -(l + 2) when the units of layer l
 * differ from those of the first layer with units. */
static int ap_model_init(ap_model *d, const cm_model *cm, const cl_cluster *c, schedule_kind sched,
                         int p, int m)
{
    memset(d, 0, sizeof *d);
    *d = (ap_model){.cm = cm, .c = c, .L = cm->num_layers, .p = p, .m = m, .sched = sched};
    if (ap_model_alloc(d))
        return -1;
    for (int l = 0; l < d->L; l++) {
        const cm_layer *ly = &cm->layers[l];
        bool units = ly->num_units > 0;
        if (units && !d->unit_layer)
            d->unit_layer = ly;
        if (units && !ap_same_units(d->unit_layer, ly))
            return -(l + 2);
        d->work_s[l + 1] =
            d->work_s[l] + cm_forward_total_s(ly) + cm_backward_total_s(ly, RECOMPUTE_NONE);
        d->static_bytes[l + 1] = d->static_bytes[l] + ly->state_bytes;
        d->weight_bytes[l + 1] = d->weight_bytes[l] + ly->params * cm->weight_bytes_per_param;
        d->other_kept[l + 1] =
            d->other_kept[l] + (units ? 0.0 : ly->activation_bytes[RECOMPUTE_NONE]);
        d->unit_layers[l + 1] = d->unit_layers[l] + (units ? 1 : 0);
        if (l + 1 < d->L && c)
            d->cut_s[l + 1] = 2.0 * cl_p2p_time(c, ly->output_bytes, 0);
    }
    for (int s = 0; s < p; s++) {
        d->inflight[s] = mem_inflight(sched, p, s, m, 1, 0);
        d->stash[s] = mem_stash_copies(sched, p, s, m);
    }
    d->max_len_cap = ap_max_len(d);
    return d->unit_layer ? ap_layer_frontier(d) : 0;
}

/* ---- level 1 -------------------------------------------------------------- */

static size_t ap_cell(const ap_model *d, int s, int i, int len)
{
    return ((size_t)s * d->L + i) * d->max_len + (len - 1);
}

/* Bytes left for the activations and transient of candidate stage (s, i, j),
 * or -INFINITY when it cannot be stage s (too few layers around it). */
static double ap_room(const ap_model *d, int s, int i, int j)
{
    if (j > d->L || i < s || d->L - j < d->p - 1 - s)
        return -INFINITY;
    /* A hair of slack so that summing in another order cannot tip a stage
     * that fits exactly over the capacity in mem_check_fits(). */
    return d->cm->hbm_bytes * (1.0 - 1e-12) - d->cm->workspace_bytes -
           (d->static_bytes[j] - d->static_bytes[i]) -
           d->stash[s] * (d->weight_bytes[j] - d->weight_bytes[i]) -
           d->inflight[s] * (d->other_kept[j] - d->other_kept[i]);
}

/* Offers H_x (every n) to every candidate stage with unit layers. */
static void ap_offer(const ap_model *d, const ap_level *h, int x, ap_table *t)
{
    ap_point fx = d->frontier[x];
    double dropped = d->unit_layer->activation_bytes[RECOMPUTE_NONE] - fx.kept_bytes;
    for (int s = 0; s < d->p; s++) {
        for (int i = 0; i < d->L; i++) {
            for (int len = 1; len <= d->max_len && i + len <= d->L; len++) {
                int j = i + len, n = d->unit_layers[j] - d->unit_layers[i];
                double room = ap_room(d, s, i, j);
                if (n == 0 || room == -INFINITY)
                    continue;
                double budget = (room - dropped) / d->inflight[s] - fx.kept_bytes;
                int at = ap_lookup(h->points[n - 1], h->count[n - 1], budget);
                if (at < 0)
                    continue;
                size_t cell = ap_cell(d, s, i, len);
                double time = fx.time_s + h->points[n - 1][at].time_s;
                if (time < t->stage_s[cell]) {
                    t->stage_s[cell] = time;
                    t->designated[cell] = x;
                    t->rest[cell] = at;
                }
            }
        }
    }
}

static void ap_level_free(ap_level *h, int max_len)
{
    if (h->points)
        for (int n = 0; n < max_len; n++)
            free(h->points[n]);
    free(h->points);
    free(h->count);
    free(h->capacity);
}

static int ap_level_init(ap_level *h, int max_len)
{
    h->points = calloc((size_t)max_len, sizeof *h->points);
    h->count = calloc((size_t)max_len, sizeof *h->count);
    h->capacity = calloc((size_t)max_len, sizeof *h->capacity);
    if (!h->points || !h->count || !h->capacity || ap_reserve(h, 0, 1))
        return -1;
    h->points[0][0] = (ap_point){0.0, 0.0};
    h->count[0] = 1;
    return 0;
}

/* Least recompute time of every candidate stage (left in t->stage_s):
 * builds H_x from the largest x down, two x at a time. */
static int ap_level1(ap_model *d, ap_table *t)
{
    ap_level prev = {0}, cur = {0};
    int rc = -1;
    if (ap_level_init(&prev, d->max_len) || ap_level_init(&cur, d->max_len))
        goto done;
    for (int x = d->frontier_count - 1; x >= 0; x--) {
        for (int n = 1; n < d->max_len; n++)
            if (ap_merge(&prev, &cur, n, d->frontier[x], &d->links[x * d->max_len + n]))
                goto done;
        ap_offer(d, &cur, x, t);
        ap_level swap = prev;
        prev = cur;
        cur = swap;
    }
    rc = 0;
done:
    ap_level_free(&prev, d->max_len);
    ap_level_free(&cur, d->max_len);
    return rc;
}

static void ap_fill_stages(ap_model *d, ap_table *t, int *rc)
{
    size_t cells = (size_t)d->p * d->L * d->max_len;
    for (size_t k = 0; k < cells; k++) {
        t->stage_s[k] = INFINITY;
        t->designated[k] = t->rest[k] = -1;
    }
    *rc = 0;
    if (d->unit_layer) {
        d->links = calloc((size_t)d->frontier_count * d->max_len, sizeof *d->links);
        *rc = d->links ? ap_level1(d, t) : -1;
    }
    if (*rc)
        return;
    for (int s = 0; s < d->p; s++) {
        for (int i = 0; i < d->L; i++) {
            for (int len = 1; len <= d->max_len && i + len <= d->L; len++) {
                int j = i + len;
                size_t cell = ap_cell(d, s, i, len);
                bool no_units = d->unit_layers[j] == d->unit_layers[i];
                if (no_units && ap_room(d, s, i, j) >= 0.0)
                    t->stage_s[cell] = 0.0;
                if (t->stage_s[cell] < INFINITY)
                    t->stage_s[cell] += d->work_s[j] - d->work_s[i] + d->cut_s[j];
            }
        }
    }
}

/* Writes the unit masks of stage [i, j) into the plan: the designated mask
 * F[x] on its first unit layer, the points traced back through the links on
 * the others. */
static void ap_stage_masks(const ap_model *d, int i, int j, int x, int at, plan *pl)
{
    int n = d->unit_layers[j] - d->unit_layers[i] - 1;
    bool first = true;
    for (int l = i; l < j; l++) {
        pl->recompute_units[l] = 0;
        if (d->cm->layers[l].num_units == 0)
            continue;
        if (first) {
            pl->recompute_units[l] = (uint16_t)d->frontier_mask[x];
            first = false;
            continue;
        }
        /* Skip to the x whose F[x] this point adds, then take it. */
        int link;
        while ((link = d->links[x * d->max_len + n][at]) < 0) {
            at = -link - 1;
            x++;
        }
        pl->recompute_units[l] = (uint16_t)d->frontier_mask[x];
        at = link;
        n--;
    }
}

/* ---- level 2 -------------------------------------------------------------- */

/* D[p][L] under bottleneck tau (INFINITY: no bound). */
static double ap_partition(const ap_model *d, const ap_table *t, double tau)
{
    int L = d->L, p = d->p;
    for (int k = 0; k < (p + 1) * (L + 1); k++)
        t->best[k] = INFINITY;
    t->best[0] = 0.0;
    for (int s = 1; s <= p; s++) {
        for (int j = s; j <= L - (p - s); j++) {
            double *cell = &t->best[s * (L + 1) + j];
            for (int len = 1; len <= d->max_len && len <= j - (s - 1); len++) {
                int i = j - len;
                double prev = t->best[(s - 1) * (L + 1) + i];
                double stage = t->stage_s[ap_cell(d, s - 1, i, len)];
                if (stage > tau || prev == INFINITY)
                    continue;
                if (prev + stage < *cell) {
                    *cell = prev + stage;
                    t->from[s * (L + 1) + j] = i;
                }
            }
        }
    }
    return t->best[p * (L + 1) + L];
}

static int ap_double_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorted distinct finite values of T: the candidate bottlenecks. */
static double *ap_candidates(const ap_model *d, const ap_table *t, int *count)
{
    size_t cells = (size_t)d->p * d->L * d->max_len, n = 0;
    double *v = malloc((cells ? cells : 1) * sizeof *v);
    if (!v)
        return NULL;
    for (size_t k = 0; k < cells; k++)
        if (t->stage_s[k] < INFINITY)
            v[n++] = t->stage_s[k];
    qsort(v, n, sizeof *v, ap_double_cmp);
    size_t distinct = 0;
    for (size_t k = 0; k < n; k++)
        if (distinct == 0 || v[k] != v[distinct - 1])
            v[distinct++] = v[k];
    *count = (int)distinct;
    return v;
}

/* The best bottleneck: bisection to the smallest feasible candidate, then
 * upwards with the pruning bound.  Returns INFINITY when nothing fits. */
static double ap_best_tau(const ap_model *d, const ap_table *t, const double *cand, int count,
                          double *best_cost)
{
    double unbounded = ap_partition(d, t, INFINITY), m1 = d->m - 1.0;
    *best_cost = INFINITY;
    if (unbounded == INFINITY || count == 0)
        return INFINITY;
    if (m1 <= 0.0) {
        *best_cost = unbounded;
        return INFINITY; /* with one micro-batch the bound does not matter */
    }
    int lo = 0, hi = count - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (ap_partition(d, t, cand[mid]) < INFINITY)
            hi = mid;
        else
            lo = mid + 1;
    }
    double best_tau = INFINITY;
    for (int k = lo; k < count && unbounded + m1 * cand[k] < *best_cost; k++) {
        double cost = ap_partition(d, t, cand[k]) + m1 * cand[k];
        if (cost < *best_cost) {
            *best_cost = cost;
            best_tau = cand[k];
        }
    }
    return best_tau;
}

/* ---- the planner ---------------------------------------------------------- */

static void ap_fill_plan(const ap_model *d, const ap_table *t, plan *out)
{
    int L = d->L;
    for (int s = d->p, j = L; s >= 1; s--) {
        int i = t->from[s * (L + 1) + j];
        size_t cell = ap_cell(d, s - 1, i, j - i);
        out->chunk_start[s] = j;
        if (t->designated[cell] >= 0)
            ap_stage_masks(d, i, j, t->designated[cell], t->rest[cell], out);
        else
            for (int l = i; l < j; l++)
                out->recompute_units[l] = 0;
        j = i;
    }
    out->chunk_start[0] = 0;
    for (int l = 0; l < L; l++)
        out->recompute[l] = RECOMPUTE_NONE;
}

static void ap_table_free(ap_table *t)
{
    free(t->stage_s);
    free(t->designated);
    free(t->rest);
    free(t->best);
    free(t->from);
}

/* One search with stages of at most max_len layers. */
static int ap_search(ap_model *d, int max_len, plan *out, double *cost)
{
    d->max_len = max_len;
    size_t cells = (size_t)d->p * d->L * d->max_len + 1;
    size_t prefixes = (size_t)(d->p + 1) * (d->L + 1);
    ap_table t = {malloc(cells * sizeof(double)), malloc(cells * sizeof(int)),
                  malloc(cells * sizeof(int)), malloc(prefixes * sizeof(double)),
                  calloc(prefixes, sizeof(int))};
    int count = 0, rc = -1;
    double *cand = NULL;
    *cost = INFINITY;
    if (t.stage_s && t.designated && t.rest && t.best && t.from) {
        ap_fill_stages(d, &t, &rc);
        if (rc == 0)
            cand = ap_candidates(d, &t, &count);
    }
    rc = -1;
    if (cand) {
        double tau = ap_best_tau(d, &t, cand, count, cost);
        if (*cost < INFINITY) {
            ap_partition(d, &t, tau); /* the winner's parent pointers */
            ap_fill_plan(d, &t, out);
        }
        rc = 0;
    }
    free(cand);
    ap_table_free(&t);
    ap_links_free(d);
    return rc;
}

/* Every stage of an optimum costs T_s ≤ C_opt / m (C_opt = Σ T + (m−1)·max T ≥ m·T_s)
 * and at least its work, so once a search bounded to max_len layers per
 * stage finds a plan of cost C, no stage of the optimum is longer than the
 * longest range with work ≤ C/m.  Start from 1.25·L/p, and search again
 * with that length when it is longer (or twice as long when nothing fits):
 * the result is exact, and H stays small. */
static int ap_search_bounded(ap_model *d, plan *out, double *cost)
{
    int cap = d->max_len_cap;
    int len = (5 * d->L + 4 * d->p - 1) / (4 * d->p) + 1;
    if (len > cap)
        len = cap;
    for (;;) {
        if (len < 1) {
            *cost = INFINITY;
            return 0;
        }
        int rc = ap_search(d, len, out, cost);
        if (rc)
            return rc;
        int next = *cost < INFINITY ? ap_longest_range(d->work_s, d->L, *cost / d->m) : 2 * len;
        if (next > cap)
            next = cap;
        if (next <= len)
            return 0;
        len = next;
    }
}

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
        return np_error_set(err, NP_EXIT_INPUT, w->path, "model", 0,
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
