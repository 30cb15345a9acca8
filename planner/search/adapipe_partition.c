/*
 * adapipe_partition.c -- AdaPipe's level 2: the τ/stage DP that partitions
 * the layers given every candidate stage's time from level 1, the search
 * over bottlenecks, and the bound on stage length that keeps level 1
 * small.
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
 */

#include <math.h>
#include <stdlib.h>

#include "adapipe_internal.h"

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
int ap_search_bounded(ap_model *d, plan *out, double *cost)
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
