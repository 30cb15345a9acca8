/*
 * bmpipe_binary.c -- BMPipe's binary form, exact for any layers:
 * q[l,k,r] (layer l in chunk k with option r), Y[l,k] its prefix over the
 * chunks (contiguous chunks in order, none empty), the stage rows bounding
 * τ by F + B + 2c, one memory row per held vector, the transient rows
 * R_k ≥ t·q, and the decoding of a solution into chunk starts and options.
 * L·p·v·|options| binaries: the planner uses it when the middle layers
 * differ (or on request), the count forms otherwise.
 */

#include <math.h>
#include <stdlib.h>

#include "bmpipe_internal.h"

/* Layer l can only sit in chunks that leave every earlier and later chunk a
 * layer of its own. */
static int first_chunk(const bmp_problem *pb, int l)
{
    int k = pb->chunks - (pb->num_layers - l);
    return k > 0 ? k : 0;
}

static int last_chunk(const bmp_problem *pb, int l)
{
    return l < pb->chunks - 1 ? l : pb->chunks - 1;
}

static void binary_columns(ilp *b, const bmp_problem *pb, binary_cols *bc, int *transient_col)
{
    int L = pb->num_layers, K = pb->chunks;
    for (int l = 0; l < L; l++)
        for (int k = first_chunk(pb, l); k <= last_chunk(pb, l); k++)
            for (int r = 0; r < R; r++)
                if (pb->allowed[l * R + r])
                    bc->q[(l * K + k) * R + r] =
                        bmp_ilp_col(b, GLP_BV, 0, 1, pb->time_s[l * R + r] / pb->v);
    for (int l = 0; l < L; l++)
        for (int k = 0; k < K - 1; k++)
            bc->y[l * K + k] = bmp_ilp_col(b, GLP_CV, 0, 1, 0);
    bc->tau = bmp_ilp_col(b, GLP_CV, 0, INFINITY, pb->m - 1.0 / pb->v);
    for (int k = 0; k < K; k++)
        transient_col[k] = bmp_ilp_col(b, GLP_CV, 0, INFINITY, 0);
}

/* Σ_r coefficient(r)·q[l,k,r] added to the current row. */
static void binary_terms(ilp *b, const bmp_problem *pb, const binary_cols *bc, int l, int k,
                         const double *per_option, double scale)
{
    for (int r = 0; r < R; r++)
        bmp_ilp_term(b, bc->q[(l * pb->chunks + k) * R + r], scale * per_option[r]);
}

static void binary_structure_rows(ilp *b, const bmp_problem *pb, const binary_cols *bc)
{
    int L = pb->num_layers, K = pb->chunks;
    static const double one[R] = {1, 1, 1};
    for (int l = 0; l < L; l++) {
        bmp_ilp_row(b, GLP_FX, 1, 1);
        for (int k = 0; k < K; k++)
            binary_terms(b, pb, bc, l, k, one, 1);
        for (int k = 0; k < K - 1; k++) { /* Y[l,k] = Y[l,k−1] + Σ_r q[l,k,r] */
            bmp_ilp_row(b, GLP_FX, 0, 0);
            bmp_ilp_term(b, bc->y[l * K + k], 1);
            if (k > 0)
                bmp_ilp_term(b, bc->y[l * K + k - 1], -1);
            binary_terms(b, pb, bc, l, k, one, -1);
        }
    }
    for (int l = 0; l + 1 < L; l++) {
        for (int k = 0; k < K - 1; k++) {
            bmp_ilp_row(b, GLP_LO, 0, 0); /* Y[l,k] ≥ Y[l+1,k] */
            bmp_ilp_term(b, bc->y[l * K + k], 1);
            bmp_ilp_term(b, bc->y[(l + 1) * K + k], -1);
            if (k + 1 < K - 1) {
                bmp_ilp_row(b, GLP_LO, 0, 0); /* Y[l+1,k+1] ≥ Y[l,k] */
                bmp_ilp_term(b, bc->y[(l + 1) * K + k + 1], 1);
                bmp_ilp_term(b, bc->y[l * K + k], -1);
            }
        }
    }
}

static void binary_stage_rows(ilp *b, const bmp_problem *pb, const binary_cols *bc,
                              const int *transient_col)
{
    int L = pb->num_layers, K = pb->chunks, p = pb->p;
    double ms = bmp_memory_scale(pb);
    for (int s = 0; s < p; s++) {
        bmp_ilp_row(b, GLP_LO, 0, 0); /* τ ≥ Σ_{k of s} F_k + B_k + 2c_k */
        bmp_ilp_term(b, bc->tau, 1);
        for (int k = s; k < K; k += p) {
            for (int l = 0; l < L; l++) {
                binary_terms(b, pb, bc, l, k, &pb->time_s[l * R], -1);
                if (k < K - 1) { /* c_k = Σ_l (Y[l,k] − Y[l+1,k])·send_l, by Y */
                    double sent = l + 1 < L ? pb->send_s[l] : 0.0;
                    double before = l > 0 ? pb->send_s[l - 1] : 0.0;
                    bmp_ilp_term(b, bc->y[l * K + k], -2 * (sent - before));
                }
            }
        }
        for (int i = pb->row_begin[s]; i < pb->row_begin[s + 1]; i++) {
            bmp_ilp_row(b, GLP_UP, 0, pb->budget_bytes[s] * ms); /* memory of stage s */
            bmp_ilp_term(b, transient_col[pb->row_chunk[i] * p + s], 1);
            for (int k = s; k < K; k += p) {
                for (int l = 0; l < L; l++) {
                    double bytes[R];
                    bmp_memory_coefficients(pb, l, s, pb->row_held[i * pb->v + k / p], bytes);
                    binary_terms(b, pb, bc, l, k, bytes, ms);
                }
            }
        }
        for (int k = s; k < K; k += p) {
            for (int l = 0; l < L; l++) { /* R_k ≥ t_l^r·q[l,k,r], when layer l may add one */
                bool any = false;
                for (int r = 0; r < R; r++)
                    any = any || (bc->q[(l * K + k) * R + r] && pb->transient_bytes[l * R + r] > 0);
                if (!any)
                    continue;
                bmp_ilp_row(b, GLP_LO, 0, 0);
                bmp_ilp_term(b, transient_col[k], 1);
                binary_terms(b, pb, bc, l, k, &pb->transient_bytes[l * R], -ms);
            }
        }
    }
}

int bmp_binary_build(ilp *b, const bmp_problem *pb, binary_cols *bc, int *transient_col)
{
    bc->q = calloc((size_t)pb->num_layers * pb->chunks * R, sizeof(int));
    bc->y = calloc((size_t)pb->num_layers * pb->chunks, sizeof(int));
    if (!bc->q || !bc->y)
        return -1;
    binary_columns(b, pb, bc, transient_col);
    binary_structure_rows(b, pb, bc);
    binary_stage_rows(b, pb, bc, transient_col);
    return 0;
}

void bmp_binary_decode(const bmp_problem *pb, const binary_cols *bc, glp_prob *lp, plan *pl)
{
    int L = pb->num_layers, K = pb->chunks;
    for (int k = 0; k <= K; k++)
        pl->chunk_start[k] = k == K ? L : 0;
    int chunk = 0;
    for (int l = 0; l < L; l++) {
        for (int k = 0; k < K; k++) {
            for (int r = 0; r < R; r++) {
                int j = bc->q[(l * K + k) * R + r];
                if (j && glp_mip_col_val(lp, j) > 0.5) {
                    pl->recompute[l] = (recompute_kind)r;
                    for (; chunk < k; chunk++)
                        pl->chunk_start[chunk + 1] = l;
                }
            }
        }
    }
}
