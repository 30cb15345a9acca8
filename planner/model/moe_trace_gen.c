/*
 * moe_trace_gen.c -- a seeded generator of MoE routing traces
 * (moe_trace.h; docs/moe-trace-format.md, "Generator").
 *
 * What it reproduces, and from where:
 *   - skewed expert popularity: expert loads in trained MoE models are far
 *     from uniform: a few experts receive most tokens (the imbalance
 *     FasterMoE, He et al. PPoPP 2022, answers with dynamic shadowing);
 *     modelled as Zipf's law p_r ∝ 1/r^s over the experts ranked by load;
 *   - "about 70% of the tokens can go to two experts": the share the two
 *     hottest experts hold is a parameter (top2_share), and the exponent is
 *     chosen to give it;
 *   - hot experts change over training: the mapping from popularity rank to
 *     expert drifts each step (each rank swaps with a random rank with
 *     probability `drift`), independently per layer.
 * Each source rank draws its assignments independently from the same
 * popularity (a multinomial, sampled with Vose's alias method); a top-k
 * router gives an expert each token at most once, so an expert above
 * tokens/topk from one source hands its excess to the others, drawn from
 * the same popularity.
 *
 * Random numbers: SplitMix64 (Steele, Lea & Flood, OOPSLA 2014), one stream
 * from the seed, so a seed gives the same trace on every machine.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "moe_trace.h"

typedef struct rng {
    uint64_t state;
} rng;

static uint64_t rng_next(rng *g)
{
    uint64_t z = (g->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double rng_uniform(rng *g) { return (double)(rng_next(g) >> 11) * 0x1.0p-53; }

static int rng_below(rng *g, int n) { return (int)(rng_uniform(g) * n); }

void moe_zipf_probabilities(int experts, double s, double *p)
{
    double sum = 0.0;
    for (int r = 0; r < experts; r++)
        sum += p[r] = pow(r + 1.0, -s);
    for (int r = 0; r < experts; r++)
        p[r] /= sum;
}

void moe_zipf_capped(int experts, double s, int topk, double *q)
{
    moe_zipf_probabilities(experts, s, q);
    double cap = 1.0 / topk;
    /* p is decreasing in rank, so the capped experts are a prefix: cap the
     * prefix until every expert after it, scaled up, stays under the cap. */
    for (int full = 0; full < experts; full++) {
        double rest = 0.0;
        for (int r = full; r < experts; r++)
            rest += q[r];
        double scale = (1.0 - full * cap) / rest;
        if (q[full] * scale <= cap) {
            for (int r = full; r < experts; r++)
                q[r] *= scale;
            return;
        }
        q[full] = cap;
    }
}

double moe_zipf_for_top2(int experts, int topk, double share)
{
    if (experts < 3 || topk < 1 || !(share > 2.0 / experts) || !(share < fmin(1.0, 2.0 / topk)))
        return -1.0;
    double *q = malloc((size_t)experts * sizeof *q);
    if (!q)
        return -1.0;
    double lo = 0.0, hi = 1.0;
    for (;;) { /* widen until the top two hold more than share */
        moe_zipf_capped(experts, hi, topk, q);
        if (q[0] + q[1] >= share || hi > 100.0)
            break;
        hi *= 2.0;
    }
    bool reached = q[0] + q[1] >= share;
    for (int i = 0; reached && i < 100; i++) {
        double mid = 0.5 * (lo + hi);
        moe_zipf_capped(experts, mid, topk, q);
        if (q[0] + q[1] < share)
            lo = mid;
        else
            hi = mid;
    }
    free(q);
    return reached ? 0.5 * (lo + hi) : -1.0;
}

/* ---- Vose's alias method over popularity ranks ----------------------------- */

typedef struct alias {
    int n;
    double *prob;
    int *other;
} alias;

static int alias_build(alias *a, const double *p, int n)
{
    a->n = n;
    a->prob = malloc((size_t)n * sizeof *a->prob);
    a->other = malloc((size_t)n * sizeof *a->other);
    int *small = malloc((size_t)n * sizeof *small), *large = malloc((size_t)n * sizeof *large);
    if (!a->prob || !a->other || !small || !large) {
        free(small);
        free(large);
        return -1;
    }
    int ns = 0, nl = 0;
    for (int i = 0; i < n; i++) {
        a->prob[i] = p[i] * n;
        a->other[i] = i;
        if (a->prob[i] < 1.0)
            small[ns++] = i;
        else
            large[nl++] = i;
    }
    while (ns > 0 && nl > 0) {
        int s = small[--ns], l = large[nl - 1];
        a->other[s] = l;
        a->prob[l] -= 1.0 - a->prob[s];
        if (a->prob[l] < 1.0) {
            nl--;
            small[ns++] = l;
        }
    }
    while (nl > 0)
        a->prob[large[--nl]] = 1.0;
    while (ns > 0)
        a->prob[small[--ns]] = 1.0; /* rounding leftovers */
    free(small);
    free(large);
    return 0;
}

static int alias_draw(const alias *a, rng *g)
{
    int i = rng_below(g, a->n);
    return rng_uniform(g) < a->prob[i] ? i : a->other[i];
}

static void alias_free(alias *a)
{
    free(a->prob);
    free(a->other);
}

/* ---- generation --------------------------------------------------------- */

/* Each token of each source, layer and step is one draw (about 11 ns here):
 * a bound on the generation's time, as MOE_TRACE_MAX_COUNTS bounds the
 * file's size.  2^40 tokens were accepted and would have run for hours. */
#define MAX_DRAWS 2e9

static int check_params(const moe_trace_params *p, char *why, size_t size)
{
    if (p->experts < 1 || p->sources < 1 || p->layers < 1 || p->steps < 1)
        snprintf(why, size, "experts, sources, layers and steps must be positive");
    else if (p->topk < 1 || p->topk > p->experts)
        snprintf(why, size, "topk must be in [1, experts = %d], got %d", p->experts, p->topk);
    else if (p->tokens < p->topk || p->tokens % p->topk != 0)
        snprintf(why, size, "tokens (%ld) must be a positive multiple of topk (%d)", p->tokens,
                 p->topk);
    else if ((double)p->tokens * p->sources * p->layers * p->steps > MAX_DRAWS)
        snprintf(why, size,
                 "tokens x sources x layers x steps = %ld x %d x %d x %d = %.3g draws, over the "
                 "limit of %.0e (about 20 s of generation at 11 ns a draw): give fewer tokens, "
                 "sources, layers or steps",
                 p->tokens, p->sources, p->layers, p->steps,
                 (double)p->tokens * p->sources * p->layers * p->steps, MAX_DRAWS);
    else if (!(p->drift >= 0.0 && p->drift <= 1.0))
        snprintf(why, size, "drift must be in [0, 1], got %g", p->drift);
    else if (p->top2_share > 0 && (p->experts < 3 || !(p->top2_share > 2.0 / p->experts) ||
                                   !(p->top2_share < fmin(2.0 / p->topk, 1.0))))
        snprintf(why, size,
                 "top2 share %g must be above 2/experts = %g and below both 1 and 2/topk = %g "
                 "(two experts hold at most 2 of a token's %d assignments)",
                 p->top2_share, 2.0 / p->experts, 2.0 / p->topk, p->topk);
    else if (p->top2_share <= 0 && !(p->zipf_s >= 0.0 && p->zipf_s <= 100.0))
        snprintf(why, size, "the Zipf exponent must be in [0, 100], got %g", p->zipf_s);
    else
        return 0;
    return -1;
}

/* One source's row: `tokens` draws, then the excess of full experts
 * redrawn among the others. */
static void draw_row(uint32_t *row, const alias *a, const int *perm, const moe_trace_params *p,
                     rng *g)
{
    long limit = p->tokens / p->topk, excess = 0;
    memset(row, 0, (size_t)p->experts * sizeof *row);
    for (long i = 0; i < p->tokens; i++)
        row[perm[alias_draw(a, g)]]++;
    for (int e = 0; e < p->experts; e++)
        if (row[e] > limit) {
            excess += row[e] - limit;
            row[e] = (uint32_t)limit;
        }
    while (excess > 0) {
        int e = perm[alias_draw(a, g)];
        if (row[e] < limit) {
            row[e]++;
            excess--;
        }
    }
}

int moe_trace_generate(const moe_trace_params *p, moe_trace *out, char *why, size_t why_size)
{
    *out = (moe_trace){0};
    if (check_params(p, why, why_size))
        return -1;
    double s =
        p->top2_share > 0 ? moe_zipf_for_top2(p->experts, p->topk, p->top2_share) : p->zipf_s;
    if (s < 0) {
        snprintf(why, why_size, "no Zipf exponent up to 100 gives a top-2 share of %g",
                 p->top2_share);
        return -1;
    }
    if (moe_trace_alloc(out, p->experts, p->sources, p->layers, p->steps, p->topk, p->tokens)) {
        snprintf(why, why_size, "trace too large (at most %ld counts) or out of memory",
                 (long)MOE_TRACE_MAX_COUNTS);
        return -1;
    }
    double *prob = malloc((size_t)p->experts * sizeof *prob);
    int *perm = malloc((size_t)p->layers * p->experts * sizeof *perm);
    alias a = {0};
    if (prob)
        moe_zipf_probabilities(p->experts, s, prob);
    if (!prob || !perm || alias_build(&a, prob, p->experts)) {
        free(prob);
        free(perm);
        alias_free(&a);
        moe_trace_free(out);
        snprintf(why, why_size, "out of memory");
        return -1;
    }
    rng g = {.state = p->seed};
    for (int l = 0; l < p->layers; l++) { /* a random hot set per layer */
        int *pl = perm + (long)l * p->experts;
        for (int e = 0; e < p->experts; e++)
            pl[e] = e;
        for (int e = p->experts - 1; e > 0; e--) {
            int j = rng_below(&g, e + 1), tmp = pl[e];
            pl[e] = pl[j];
            pl[j] = tmp;
        }
    }
    for (int step = 0; step < p->steps; step++)
        for (int l = 0; l < p->layers; l++) {
            int *pl = perm + (long)l * p->experts;
            for (int r = 0; step > 0 && r < p->experts; r++)
                if (rng_uniform(&g) < p->drift) {
                    int j = rng_below(&g, p->experts), tmp = pl[r];
                    pl[r] = pl[j];
                    pl[j] = tmp;
                }
            for (int src = 0; src < p->sources; src++)
                draw_row(moe_trace_at(out, step, l, src, 0), &a, pl, p, &g);
        }
    free(prob);
    free(perm);
    alias_free(&a);
    return 0;
}
