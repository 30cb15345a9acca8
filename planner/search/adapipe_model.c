/*
 * adapipe_model.c -- AdaPipe's model of the job: per-layer prefix sums of
 * work, static, weight and kept bytes and unit layers, the boundary sends,
 * each stage's in-flight micro-batches and stashed copies, the longest
 * stage whose static bytes fit, and the check that every layer with
 * recompute units is identical (the exact level 1 relies on it).
 */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "adapipe_internal.h"
#include "memory.h"

void ap_links_free(ap_model *d)
{
    if (d->links)
        for (int k = 0; k < d->frontier_count * d->max_len; k++)
            free(d->links[k]);
    free(d->links);
    d->links = NULL;
}

void ap_model_free(ap_model *d)
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
int ap_longest_range(const double *prefix, int L, double limit)
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
int ap_model_init(ap_model *d, const cm_model *cm, const cl_cluster *c, schedule_kind sched, int p,
                  int m)
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
        /* with ZeRO-2/3's overlap, the layer's share of the buffers it holds
         * (memory.c reserves them per stage, a sum over a one-chunk stage) */
        d->static_bytes[l + 1] =
            d->static_bytes[l] + ly->state_bytes + mem_zero_overlap_layer_bytes(cm, l);
        d->weight_bytes[l + 1] = d->weight_bytes[l] + ly->params * cm->weight_bytes_per_param;
        d->other_kept[l + 1] =
            d->other_kept[l] + (units ? 0.0 : ly->activation_bytes[RECOMPUTE_NONE]);
        d->unit_layers[l + 1] = d->unit_layers[l] + (units ? 1 : 0);
        if (l + 1 < d->L && c)
            d->cut_s[l + 1] = 2.0 * cm_boundary_s(c, ly, 0);
    }
    for (int s = 0; s < p; s++) {
        d->inflight[s] = mem_inflight(sched, p, s, m, 1, 0);
        d->stash[s] = mem_stash_copies(sched, p, s, m);
    }
    d->max_len_cap = ap_max_len(d);
    return d->unit_layer ? ap_layer_frontier(d) : 0;
}
