/*
 * bmpipe_count.c -- BMPipe's integer-count form: identical middle layers
 * and v > 1 chunks per stage (the interleaved schedule).
 *
 * The chunks of a stage share its memory, so a chunk's best mix depends on
 * the others: integer n[k,r], binary z[k,r] = [n[k,r] > 0] for the
 * transient, binaries for the end layers' options, exact memory rows per
 * stage; the size binaries only add the valid cuts Σ_r n[k,r] = Σ_n n·size
 * and F_k + B_k ≥ Σ_n W*(k,n)·size[k,n] (W* computed with the chunk alone
 * on its stage is a lower bound).
 */

#include <math.h>
#include <stdlib.h>

#include "bmpipe_internal.h"

static void count_columns(ilp *b, const bmp_problem *pb, count_cols *cc, int *transient_col)
{
    int L = pb->num_layers, K = pb->chunks, N = L - 2;
    double inv_v = 1.0 / pb->v;
    for (int k = 0; k < K; k++) {
        for (int r = 0; r < R; r++) {
            if (!pb->allowed[R + r])
                continue;
            cc->n[k * R + r] = bmp_ilp_col(b, GLP_IV, 0, N, pb->time_s[R + r] * inv_v);
            if (pb->transient_bytes[R + r] > 0)
                cc->z[k * R + r] = bmp_ilp_col(b, GLP_BV, 0, 1, 0);
        }
    }
    for (int r = 0; r < R; r++) {
        if (pb->allowed[r])
            cc->first[r] = bmp_ilp_col(b, GLP_BV, 0, 1, pb->time_s[r] * inv_v);
        if (pb->allowed[(L - 1) * R + r])
            cc->last[r] = bmp_ilp_col(b, GLP_BV, 0, 1, pb->time_s[(L - 1) * R + r] * inv_v);
    }
    cc->tau = bmp_ilp_col(b, GLP_CV, 0, INFINITY, pb->m - 1.0 / pb->v);
    for (int k = 0; k < K; k++)
        transient_col[k] = bmp_ilp_col(b, GLP_CV, 0, INFINITY, 0);
}

/* Σ_r coefficient(r)·n[k,r] added to the current row. */
static void count_terms(ilp *b, const count_cols *cc, int k, const double *per_option, double scale)
{
    for (int r = 0; r < R; r++)
        bmp_ilp_term(b, cc->n[k * R + r], scale * per_option[r]);
}

/* Terms of the end layers that chunk k holds (layer 0 in chunk 0, layer
 * L−1 in chunk K−1), coefficients per option, for one row. */
static void count_end_terms(ilp *b, const bmp_problem *pb, const count_cols *cc, int k,
                            const double *first, const double *last, double scale)
{
    for (int r = 0; r < R; r++) {
        if (k == 0)
            bmp_ilp_term(b, cc->first[r], scale * first[r]);
        if (k == pb->chunks - 1)
            bmp_ilp_term(b, cc->last[r], scale * last[r]);
    }
}

static void count_structure_rows(ilp *b, const bmp_problem *pb, const count_cols *cc,
                                 const chunk_sizes *cs)
{
    int K = pb->chunks, N = cs->N;
    static const double one[R] = {1, 1, 1};
    bmp_ilp_row(b, GLP_FX, 1, 1);
    for (int r = 0; r < R; r++)
        bmp_ilp_term(b, cc->first[r], 1);
    bmp_ilp_row(b, GLP_FX, 1, 1);
    for (int r = 0; r < R; r++)
        bmp_ilp_term(b, cc->last[r], 1);
    bmp_sizes_rows(b, pb, cs);
    for (int k = 0; k < K; k++) { /* Σ_r n[k,r] = Σ_n n·size[k,n] */
        bmp_ilp_row(b, GLP_FX, 0, 0);
        count_terms(b, cc, k, one, 1);
        for (int n = 1; n <= N; n++)
            bmp_ilp_term(b, cs->col[k * (N + 1) + n], -n);
        for (int r = 0; r < R; r++) { /* n[k,r] ≤ most_k·z[k,r] */
            if (!cc->z[k * R + r])
                continue;
            bmp_ilp_row(b, GLP_UP, 0, 0);
            bmp_ilp_term(b, cc->n[k * R + r], 1);
            bmp_ilp_term(b, cc->z[k * R + r], -fmax(cs->most[k], 1));
        }
    }
}

static void count_stage_rows(ilp *b, const bmp_problem *pb, const count_cols *cc,
                             const chunk_sizes *cs, const int *transient_col)
{
    int L = pb->num_layers, K = pb->chunks, p = pb->p, N = cs->N;
    const double *last_layer = &pb->time_s[(L - 1) * R];
    double ms = bmp_memory_scale(pb);
    for (int s = 0; s < p; s++) {
        double sends = 0;
        for (int k = s; k < K - 1; k += p)
            sends += 2 * pb->send_s[1]; /* chunk k ends with a middle layer ... */
        bmp_ilp_row(b, GLP_LO, sends, 0);
        bmp_ilp_term(b, cc->tau, 1);
        if (s == 0) /* ... unless it is chunk 0 holding layer 0 alone */
            bmp_ilp_term(b, cs->col[0], -2 * (pb->send_s[0] - pb->send_s[1]));
        for (int k = s; k < K; k += p) {
            count_terms(b, cc, k, &pb->time_s[R], -1);
            count_end_terms(b, pb, cc, k, pb->time_s, last_layer, -1);
        }
        for (int k = s; k < K; k += p) { /* F_k + B_k ≥ Σ_n W*(k,n)·size[k,n] */
            bmp_ilp_row(b, GLP_LO, 0, 0);
            count_terms(b, cc, k, &pb->time_s[R], 1);
            count_end_terms(b, pb, cc, k, pb->time_s, last_layer, 1);
            for (int n = 0; n <= N; n++)
                bmp_ilp_term(b, cs->col[k * (N + 1) + n], -cs->floor_s[k * (N + 1) + n]);
        }

        for (int i = pb->row_begin[s]; i < pb->row_begin[s + 1]; i++) {
            bmp_ilp_row(b, GLP_UP, 0, pb->budget_bytes[s] * ms);
            bmp_ilp_term(b, transient_col[pb->row_chunk[i] * p + s], 1);
            for (int k = s; k < K; k += p) {
                double middle[R], first[R], last[R], held = pb->row_held[i * pb->v + k / p];
                bmp_memory_coefficients(pb, 1, s, held, middle);
                bmp_memory_coefficients(pb, 0, s, held, first);
                bmp_memory_coefficients(pb, L - 1, s, held, last);
                count_terms(b, cc, k, middle, ms);
                count_end_terms(b, pb, cc, k, first, last, ms);
            }
        }
        for (int k = s; k < K; k += p) { /* R_k ≥ t^r·z[k,r], and the end layers' */
            for (int r = 0; r < R; r++) {
                if (!cc->z[k * R + r])
                    continue;
                bmp_ilp_row(b, GLP_LO, 0, 0);
                bmp_ilp_term(b, transient_col[k], 1);
                bmp_ilp_term(b, cc->z[k * R + r], -ms * pb->transient_bytes[R + r]);
            }
            if (k == 0 || k == K - 1) {
                bmp_ilp_row(b, GLP_LO, 0, 0);
                bmp_ilp_term(b, transient_col[k], 1);
                count_end_terms(b, pb, cc, k, pb->transient_bytes,
                                &pb->transient_bytes[(L - 1) * R], -ms);
            }
        }
    }
}

int bmp_count_build(ilp *b, const bmp_problem *pb, count_cols *cc, chunk_sizes *cs,
                    int *transient_col)
{
    cc->n = calloc((size_t)pb->chunks * R, sizeof(int));
    cc->z = calloc((size_t)pb->chunks * R, sizeof(int));
    if (!cc->n || !cc->z)
        return -1;
    count_columns(b, pb, cc, transient_col);
    bmp_sizes_columns(b, pb, cs, 0.0);
    count_structure_rows(b, pb, cc, cs);
    count_stage_rows(b, pb, cc, cs, transient_col);
    return 0;
}

int bmp_count_decode(const bmp_problem *pb, const count_cols *cc, glp_prob *lp, plan *pl)
{
    int K = pb->chunks;
    layer_count *mixes = calloc((size_t)K * MIX, sizeof *mixes);
    const layer_count **mix_of = calloc((size_t)K, sizeof *mix_of);
    if (!mixes || !mix_of) {
        free(mixes);
        free(mix_of);
        return -1;
    }
    for (int k = 0; k < K; k++) {
        layer_count *mix = &mixes[k * MIX];
        for (int r = 0; r < R; r++) {
            int j = cc->n[k * R + r];
            mix[r] = (layer_count)(j ? lround(glp_mip_col_val(lp, j)) : 0);
            if (k == 0 && cc->first[r] && glp_mip_col_val(lp, cc->first[r]) > 0.5)
                mix[R] = (layer_count)r;
            if (k == K - 1 && cc->last[r] && glp_mip_col_val(lp, cc->last[r]) > 0.5)
                mix[R + 1] = (layer_count)r;
        }
        mix_of[k] = mix;
    }
    bmp_sizes_decode(pb, mix_of, pl);
    free(mixes);
    free(mix_of);
    return 0;
}
