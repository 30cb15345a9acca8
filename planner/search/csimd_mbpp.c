/*
 * csimd_mbpp.c -- the plans of CSIMD's baselines: MBPP-E's even cuts and
 * sizes (also the cross search's starting point) and MBPP-R's seeded
 * random draws.
 *
 * Baselines (the Euro-Par abstract names them GPipe-R and GPipe-E).  The
 * paper's text is not available to us; from the names and the abstract:
 *   MBPP-E: even network division (L/p layers per stage, the first L mod p
 *           stages one more) and even data partition (B/M, the first B mod M
 *           micro-batches one more sample);
 *   MBPP-R: random cuts (p-1 distinct positions, uniform) and a random
 *           composition of B into M positive sizes (uniform), redrawn while
 *           the plan does not fit.  One draw is a lottery, so we draw
 *           RANDOM_DRAWS plans with a fixed seed and return the median by
 *           predicted T: a typical random plan, reproducible run to run.
 */

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "csimd_internal.h"

#define RANDOM_DRAWS 15
#define RANDOM_ATTEMPTS 1000
#define RANDOM_SEED 0x5eed2024c51dULL

void csimd_even_sizes(int samples, int m, int *sizes)
{
    for (int j = 0; j < m; j++)
        sizes[j] = samples / m + (j < samples % m ? 1 : 0);
}

void csimd_even_cuts(int num_layers, int p, int *start)
{
    start[0] = 0;
    for (int k = 0; k < p; k++)
        start[k + 1] = start[k] + num_layers / p + (k < num_layers % p ? 1 : 0);
}

/* splitmix64 (Steele, Lea & Flood, OOPSLA 2014): a small, seedable generator. */
static uint64_t rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* k distinct integers of 1..n, increasing, uniformly (Floyd's algorithm);
 * out[k] = n + 1 as a sentinel is not written. */
static int random_subset(uint64_t *rng, int n, int k, int *out)
{
    bool *taken = calloc((size_t)n + 1, sizeof *taken);
    if (!taken)
        return -1;
    for (int j = n - k + 1; j <= n; j++) {
        int v = 1 + (int)(rng_next(rng) % (uint64_t)j);
        taken[taken[v] ? j : v] = true;
    }
    for (int v = 1, i = 0; v <= n; v++)
        if (taken[v])
            out[i++] = v;
    free(taken);
    return 0;
}

/* A random division and partition: cuts from p-1 of the L-1 positions,
 * sizes from M-1 of the B-1 positions. */
static int random_plan(csimd_ctx *x, uint64_t *rng, int *start, int *sizes)
{
    int p = x->p, m = x->m, L = x->num_layers;
    int marks[m + 1];
    start[0] = 0;
    start[p] = L;
    if (random_subset(rng, L - 1, p - 1, start + 1))
        return -1;
    marks[0] = 0;
    marks[m] = x->samples;
    if (random_subset(rng, x->samples - 1, m - 1, marks + 1))
        return -1;
    for (int j = 0; j < m; j++)
        sizes[j] = marks[j + 1] - marks[j];
    return 0;
}

typedef struct random_draw {
    double t;
    int index;
} random_draw;

static int compare_draws(const void *a, const void *b)
{
    double ta = ((const random_draw *)a)->t, tb = ((const random_draw *)b)->t;
    return (ta > tb) - (ta < tb);
}

/* MBPP-R: the median of RANDOM_DRAWS fitting random plans. */
double csimd_random_search(csimd_ctx *x, int *start, int *sizes)
{
    int p = x->p, m = x->m;
    int *starts = malloc((size_t)RANDOM_DRAWS * (p + 1) * sizeof *starts);
    int *all_sizes = malloc((size_t)RANDOM_DRAWS * m * sizeof *all_sizes);
    random_draw draws[RANDOM_DRAWS];
    int n = 0;
    uint64_t rng = RANDOM_SEED;
    for (int attempt = 0;
         starts && all_sizes && n < RANDOM_DRAWS && attempt < RANDOM_ATTEMPTS * RANDOM_DRAWS;
         attempt++) {
        int *s = starts + (size_t)n * (p + 1), *b = all_sizes + (size_t)n * m;
        if (random_plan(x, &rng, s, b))
            break;
        double t = csimd_predict_s(x, s, b);
        if (!isinf(t))
            draws[n] = (random_draw){t, n}, n++;
    }
    double t = INFINITY;
    if (n > 0) {
        qsort(draws, (size_t)n, sizeof draws[0], compare_draws);
        random_draw median = draws[n / 2];
        memcpy(start, starts + (size_t)median.index * (p + 1), (size_t)(p + 1) * sizeof *start);
        memcpy(sizes, all_sizes + (size_t)median.index * m, (size_t)m * sizeof *sizes);
        t = median.t;
    }
    free(starts);
    free(all_sizes);
    return t;
}
