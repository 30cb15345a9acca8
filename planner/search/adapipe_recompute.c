/*
 * adapipe_recompute.c -- AdaPipe's level 1, the per-unit recompute
 * knapsack: the least recompute time of every candidate stage under its
 * memory, and the unit masks of the winners.
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
 */

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "adapipe_internal.h"

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
int ap_layer_frontier(ap_model *d)
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

void ap_fill_stages(ap_model *d, ap_table *t, int *rc)
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
void ap_stage_masks(const ap_model *d, int i, int j, int x, int at, plan *pl)
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
