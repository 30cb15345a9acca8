/*
 * csimd_cross.c -- CSIMD proper: the multi-dimensional dichotomy that sizes
 * the micro-batches for fixed cuts, and the cross search that alternates it
 * with the cuts of csimd_imd.c.
 *
 * Multi-dimensional dichotomy (sizes for fixed cuts).  Moves of `step`
 * samples from micro-batch i to j, over all ordered pairs (neighbouring pairs
 * only when M > ALL_PAIRS_MAX_M), kept when T drops; when no move helps the
 * step is halved, from B/(2M) down to 1.
 *
 * Cross search.  Start from even sizes and the better of even cuts and IMD's;
 * alternate sizing, a local re-bisection of the cuts and a fresh IMD until T
 * stops improving.  Every accepted step lowers T, so CSIMD is never worse than
 * MBPP-E on its own model.
 */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "csimd_internal.h"

#define MAX_CROSS_ROUNDS 32
#define MAX_SIZE_EVALS 200000
#define ALL_PAIRS_MAX_M 48

static bool try_move(csimd_ctx *x, const int *start, int *sizes, int from, int to, int step,
                     double *t)
{
    if (from == to || sizes[from] - step < 1)
        return false;
    sizes[from] -= step;
    sizes[to] += step;
    double candidate = csimd_predict_s(x, start, sizes);
    if (IMPROVES(candidate, *t)) {
        *t = candidate;
        return true;
    }
    sizes[from] += step;
    sizes[to] -= step;
    return false;
}

static double search_sizes(csimd_ctx *x, const int *start, int *sizes)
{
    int m = x->m, evals = 0;
    double t = csimd_predict_s(x, start, sizes);
    int step = x->samples / (2 * m);
    if (step < 1)
        step = 1;
    while (step >= 1 && evals < MAX_SIZE_EVALS && m > 1) {
        bool moved = false;
        for (int i = 0; i < m; i++)
            for (int j = 0; j < m; j++) {
                if (m > ALL_PAIRS_MAX_M && abs(i - j) != 1)
                    continue;
                evals++;
                moved |= try_move(x, start, sizes, i, j, step, &t);
            }
        if (!moved)
            step /= 2;
    }
    return t;
}

/* The cross search from even sizes; returns T (INFINITY: nothing fits). */
double csimd_cross_search(csimd_ctx *x, int *start, int *sizes)
{
    int p = x->p;
    int trial[p + 1];
    csimd_even_sizes(x->samples, x->m, sizes);
    csimd_even_cuts(x->num_layers, p, start);
    double t = csimd_predict_s(x, start, sizes);
    if (csimd_imd_cuts(x, sizes, trial) == 0) {
        double ti = csimd_predict_s(x, trial, sizes);
        if (ti < t) {
            t = ti;
            memcpy(start, trial, sizeof trial);
        }
    }
    if (isinf(t))
        return t;
    for (int round = 0; round < MAX_CROSS_ROUNDS; round++) {
        double before = t;
        t = search_sizes(x, start, sizes);
        t = csimd_refine_cuts(x, start, sizes);
        if (csimd_imd_cuts(x, sizes, trial) == 0) {
            double ti = csimd_predict_s(x, trial, sizes);
            if (IMPROVES(ti, t)) {
                t = ti;
                memcpy(start, trial, sizeof trial);
            }
        }
        if (!IMPROVES(t, before))
            break;
    }
    return t;
}
