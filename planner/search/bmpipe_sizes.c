/*
 * bmpipe_sizes.c -- chunk sizes for identical middle layers, and BMPipe's
 * stage-pattern form (v = 1), which needs nothing else.
 *
 * With identical middle layers a chunk is described by how many it holds
 * and with which options.  For every chunk k and size n this file finds,
 * by enumeration, W*(k,n): the least F + B of the chunk over every option
 * mix (and option of the end layer pinned to it) that fits its stage's
 * budget were the chunk alone on the stage, and that mix.  Binary
 * size[k,n] selects the chunk's size.
 *
 * The stage-pattern form chooses only sizes; the integer-count form
 * (bmpipe_count.c, v > 1) adds them to its own columns as valid cuts.
 */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bmpipe_internal.h"

/* Time and bytes of chunk k under a mix; the bytes are what its stage would
 * need if the chunk were alone on it (exact for v = 1; for v > 1 a lower
 * bound of every memory row: the most it holds, or the most it holds while
 * its own backward adds the transient). */
static void chunk_cost(const bmp_problem *pb, int k, const layer_count *mix, double *time_s,
                       double *bytes)
{
    int L = pb->num_layers, s = k % pb->p;
    double static_b = 0, kept = 0, transient = 0, t = 0;
    for (int r = 0; r < R; r++) {
        if (!mix[r])
            continue;
        t += mix[r] * pb->time_s[R + r];
        static_b += mix[r] * bmp_static_bytes(pb, 1, s);
        kept += mix[r] * pb->keep_bytes[R + r];
        transient = fmax(transient, pb->transient_bytes[R + r]);
    }
    int ends[2] = {k == 0 ? 0 : -1, k == pb->chunks - 1 ? L - 1 : -1};
    for (int e = 0; e < 2; e++) {
        if (ends[e] < 0)
            continue;
        int i = ends[e] * R + mix[R + e];
        t += pb->time_s[i];
        static_b += bmp_static_bytes(pb, ends[e], s);
        kept += pb->keep_bytes[i];
        transient = fmax(transient, pb->transient_bytes[i]);
    }
    *time_s = t;
    *bytes = static_b + fmax(pb->inflight[k] * kept, pb->own_held[k] * kept + transient);
}

/* Whether layer l may take option r (end layers a chunk does not hold only
 * take option 0, a placeholder). */
static bool end_option_ok(const bmp_problem *pb, int l, bool held, int r)
{
    return held ? pb->allowed[l * R + r] : r == 0;
}

/* W*(k, n) and its mix (INFINITY when no mix fits). */
static double chunk_floor_s(const bmp_problem *pb, int k, int n, layer_count *best_mix)
{
    int L = pb->num_layers;
    double best = INFINITY, budget = pb->budget_bytes[k % pb->p];
    layer_count mix[MIX];
    for (mix[R] = 0; mix[R] < R; mix[R]++) {
        if (!end_option_ok(pb, 0, k == 0, mix[R]))
            continue;
        for (mix[R + 1] = 0; mix[R + 1] < R; mix[R + 1]++) {
            if (!end_option_ok(pb, L - 1, k == pb->chunks - 1, mix[R + 1]))
                continue;
            for (int a = 0; a <= n; a++) {
                for (int b = 0; a + b <= n; b++) {
                    mix[0] = (layer_count)a;
                    mix[1] = (layer_count)b;
                    mix[2] = (layer_count)(n - a - b);
                    bool ok = true;
                    for (int r = 0; r < R; r++)
                        ok = ok && (mix[r] == 0 || pb->allowed[R + r]);
                    double t, bytes;
                    if (!ok)
                        continue;
                    chunk_cost(pb, k, mix, &t, &bytes);
                    if (bytes <= budget && t < best) {
                        best = t;
                        memcpy(best_mix, mix, sizeof mix);
                    }
                }
            }
        }
    }
    return best;
}

int bmp_sizes_init(chunk_sizes *cs, const bmp_problem *pb)
{
    int K = pb->chunks;
    cs->N = pb->num_layers - 2;
    size_t cells = (size_t)K * (cs->N + 1);
    cs->col = calloc(cells, sizeof *cs->col);
    cs->floor_s = calloc(cells, sizeof *cs->floor_s);
    cs->mix = calloc(cells * MIX, sizeof *cs->mix);
    cs->most = calloc((size_t)K, sizeof *cs->most);
    return cs->col && cs->floor_s && cs->mix && cs->most ? 0 : -1;
}

void bmp_sizes_free(chunk_sizes *cs)
{
    free(cs->col);
    free(cs->floor_s);
    free(cs->mix);
    free(cs->most);
}

/* Size columns for every size that fits (up to MAX_CHUNK_LAYERS, far beyond
 * any device's memory); their objective is W*·weight. */
void bmp_sizes_columns(ilp *b, const bmp_problem *pb, chunk_sizes *cs, double weight)
{
    int K = pb->chunks, N = cs->N;
    for (int k = 0; k < K; k++) {
        int fewest = K == 1 ? N : (k == 0 || k == K - 1 ? 0 : 1);
        cs->most[k] = fewest - 1;
        for (int n = fewest; n <= N && n <= MAX_CHUNK_LAYERS; n++) {
            int i = k * (N + 1) + n;
            cs->floor_s[i] = chunk_floor_s(pb, k, n, &cs->mix[i * MIX]);
            if (isinf(cs->floor_s[i]))
                break; /* one layer more never fits where n did not */
            cs->col[i] = bmp_ilp_col(b, GLP_BV, 0, 1, cs->floor_s[i] * weight);
            cs->most[k] = n;
        }
    }
}

/* Σ_n size[k,n] = 1 for every chunk, and every middle layer placed. */
void bmp_sizes_rows(ilp *b, const bmp_problem *pb, const chunk_sizes *cs)
{
    int K = pb->chunks, N = cs->N;
    for (int k = 0; k < K; k++) {
        bmp_ilp_row(b, GLP_FX, 1, 1);
        for (int n = 0; n <= N; n++)
            bmp_ilp_term(b, cs->col[k * (N + 1) + n], 1);
    }
    bmp_ilp_row(b, GLP_FX, N, N);
    for (int k = 0; k < K; k++)
        for (int n = 1; n <= N; n++)
            bmp_ilp_term(b, cs->col[k * (N + 1) + n], n);
}

/* Both boundary sends of chunk k when it holds n middle layers: its last
 * layer is a middle one unless it is chunk 0 holding layer 0 alone. */
static double sizes_sends_s(const bmp_problem *pb, int k, int n)
{
    if (k == pb->chunks - 1)
        return 0.0;
    return 2 * pb->send_s[k == 0 && n == 0 ? 0 : 1];
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The bottleneck by levels (v = 1).  With t_0 < … < t_{J−1} the distinct
 * values of W*(s,n) + 2c_s over the sizes a stage may take, binaries
 * y_j = [the bottleneck reaches t_j] with y_j ≥ y_{j+1},
 *   y_j ≥ Σ_{n: W*(s,n) + 2c_s ≥ t_j} size[s,n]   for every stage s,
 *   τ ≥ t_0 + Σ_j (t_j − t_{j−1})·y_j.
 * Valid since τ bounds every stage's time from above and W* from below.
 * With τ ≥ F_s + B_s + 2c_s alone the LP relaxation lets every stage take
 * a fraction of a layer; this charges the bottleneck for the largest size a
 * stage puts any weight on.  On Llama 3 405B (126 layers, 16 stages) GLPK
 * went from a 1.5% gap left after 10 s to a proven optimum in 0.5 s. */
static int sizes_level_rows(ilp *b, const bmp_problem *pb, const chunk_sizes *cs, int tau)
{
    int K = pb->chunks, N = cs->N, J = 0;
    double *level = malloc((size_t)K * (N + 1) * sizeof *level);
    int *y = calloc((size_t)K * (N + 1), sizeof *y);
    if (!level || !y) {
        free(level);
        free(y);
        return -1;
    }
    for (int i = 0; i < K * (N + 1); i++)
        if (cs->col[i])
            level[J++] = cs->floor_s[i] + sizes_sends_s(pb, i / (N + 1), i % (N + 1));
    qsort(level, (size_t)J, sizeof *level, compare_doubles);
    int distinct = 0;
    for (int j = 0; j < J; j++)
        if (distinct == 0 || level[j] > level[distinct - 1])
            level[distinct++] = level[j];
    for (int j = 1; j < distinct; j++)
        y[j] = bmp_ilp_col(b, GLP_BV, 0, 1, 0);
    bmp_ilp_row(b, GLP_LO, distinct ? level[0] : 0, 0);
    bmp_ilp_term(b, tau, 1);
    for (int j = 1; j < distinct; j++)
        bmp_ilp_term(b, y[j], -(level[j] - level[j - 1]));
    for (int j = 1; j < distinct; j++) {
        if (j + 1 < distinct) {
            bmp_ilp_row(b, GLP_LO, 0, 0);
            bmp_ilp_term(b, y[j], 1);
            bmp_ilp_term(b, y[j + 1], -1);
        }
        for (int k = 0; k < K; k++) {
            bmp_ilp_row(b, GLP_LO, 0, 0);
            bmp_ilp_term(b, y[j], 1);
            for (int n = 0; n <= N; n++) {
                int i = k * (N + 1) + n;
                if (cs->col[i] && cs->floor_s[i] + sizes_sends_s(pb, k, n) >= level[j])
                    bmp_ilp_term(b, cs->col[i], -1);
            }
        }
    }
    free(y);
    free(level);
    return 0;
}

/* Writes the plan of chosen sizes and mixes (mix_of(k) per chunk). */
void bmp_sizes_decode(const bmp_problem *pb, const layer_count *const *mix_of, plan *pl)
{
    int L = pb->num_layers, K = pb->chunks;
    int l = 1; /* next middle layer; layer 0 opens chunk 0 */
    pl->chunk_start[0] = 0;
    pl->recompute[0] = (recompute_kind)mix_of[0][R];
    pl->recompute[L - 1] = (recompute_kind)mix_of[K - 1][R + 1];
    for (int k = 0; k < K; k++) {
        for (int r = 0; r < R; r++)
            for (int i = 0; i < mix_of[k][r] && l < L - 1; i++)
                pl->recompute[l++] = (recompute_kind)r;
        pl->chunk_start[k + 1] = k == K - 1 ? L : l;
    }
}

/* ---- the stage-pattern form: identical layers, v = 1 -------------------- */

/* With one chunk per stage the stages share nothing but the layer count, so
 * the fastest fitting mix of a stage of n layers is its best choice whatever
 * the others do: n[s,r] = mix_r(s, n) for the chosen n, and the ILP only
 * chooses sizes.  Rows: one size per stage, Σ n = N, τ ≥ W*(s,n) + 2c_s of
 * the chosen size, the level rows; objective Σ W*·size + (m − 1)·τ. */
int bmp_pattern_build(ilp *b, const bmp_problem *pb, chunk_sizes *cs)
{
    int K = pb->chunks, N = cs->N;
    bmp_sizes_columns(b, pb, cs, 1.0);
    int tau = bmp_ilp_col(b, GLP_CV, 0, INFINITY, pb->m - 1.0);
    bmp_sizes_rows(b, pb, cs);
    for (int k = 0; k < K; k++) {
        bmp_ilp_row(b, GLP_LO, 0, 0);
        bmp_ilp_term(b, tau, 1);
        for (int n = 0; n <= N; n++) {
            int i = k * (N + 1) + n;
            bmp_ilp_term(b, cs->col[i], -(cs->floor_s[i] + sizes_sends_s(pb, k, n)));
        }
    }
    return sizes_level_rows(b, pb, cs, tau);
}

int bmp_pattern_decode(const bmp_problem *pb, const chunk_sizes *cs, glp_prob *lp, plan *pl)
{
    int K = pb->chunks, N = cs->N;
    const layer_count **mix_of = calloc((size_t)K, sizeof *mix_of);
    if (!mix_of)
        return -1;
    for (int i = 0; i < K * (N + 1); i++)
        if (cs->col[i] && glp_mip_col_val(lp, cs->col[i]) > 0.5)
            mix_of[i / (N + 1)] = &cs->mix[i * MIX];
    bmp_sizes_decode(pb, mix_of, pl);
    free(mix_of);
    return 0;
}
