/*
 * bmpipe_problem.c -- BMPipe's problem as the cost model gives it: per layer
 * and recompute option the time F + B (TP collectives and recompute
 * included), the activation bytes kept and the transient a recompute
 * re-materialises, the boundary send, and which options are dominated; the
 * static bytes and memory coefficients of a layer in a memory row; whether
 * the middle layers are identical (the count forms apply); and the
 * bottleneck τ and objective T of a plan from those same coefficients.
 * Every form, the heuristic and the planner read the cost model only
 * through these, so that the ILP and the plan's reported T agree.
 */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bmpipe_internal.h"
#include "memory.h"

void bmp_problem_free(bmp_problem *pb)
{
    free(pb->inflight);
    free(pb->own_held);
    free(pb->row_begin);
    free(pb->row_chunk);
    free(pb->row_held);
    free(pb->budget_bytes);
    free(pb->stash_copies);
    free(pb->time_s);
    free(pb->keep_bytes);
    free(pb->transient_bytes);
    free(pb->send_s);
    free(pb->allowed);
}

/* Option r of layer l is dominated when a lower-indexed option is no worse in
 * every term, or a higher-indexed one is no worse and better in one. */
static bool option_dominated(const bmp_problem *pb, int l, int r)
{
    const double *t = &pb->time_s[l * R], *a = &pb->keep_bytes[l * R];
    const double *x = &pb->transient_bytes[l * R];
    for (int o = 0; o < R; o++) {
        if (o == r || t[o] > t[r] || a[o] > a[r] || x[o] > x[r])
            continue;
        if (o < r || t[o] < t[r] || a[o] < a[r] || x[o] < x[r])
            return true;
    }
    return false;
}

/* A lower bound of every stage's ZeRO overlap reserve when v > 1: a stage's
 * largest chunk holds at least one layer, so its reserve is at least the
 * smallest layer's share. */
static double overlap_floor_bytes(const bmp_problem *pb)
{
    if (pb->v == 1)
        return 0.0; /* in the static terms, exactly */
    double least = INFINITY;
    for (int l = 0; l < pb->num_layers; l++)
        least = fmin(least, mem_zero_overlap_layer_bytes(pb->cm, l));
    return isfinite(least) ? least : 0.0;
}

int bmp_problem_init(bmp_problem *pb, const cm_model *cm, const cl_cluster *c, int p, int v, int m,
                     schedule_kind sched)
{
    int L = cm->num_layers, K = p * v;
    *pb = (bmp_problem){.cm = cm, .num_layers = L, .p = p, .v = v, .chunks = K, .m = m};
    pb->inflight = calloc((size_t)K, sizeof(double));
    pb->budget_bytes = calloc((size_t)p, sizeof(double));
    pb->stash_copies = calloc((size_t)p, sizeof(double));
    pb->time_s = calloc((size_t)L * R, sizeof(double));
    pb->keep_bytes = calloc((size_t)L * R, sizeof(double));
    pb->transient_bytes = calloc((size_t)L * R, sizeof(double));
    pb->send_s = calloc((size_t)L, sizeof(double));
    pb->allowed = calloc((size_t)L * R, sizeof(bool));
    if (!pb->inflight || !pb->budget_bytes || !pb->stash_copies || !pb->time_s || !pb->keep_bytes ||
        !pb->transient_bytes || !pb->send_s || !pb->allowed)
        return -1;
    if (bmp_memory_rows_init(pb, sched))
        return -1;
    for (int s = 0; s < p; s++) {
        pb->budget_bytes[s] = cm->hbm_bytes - cm->workspace_bytes - overlap_floor_bytes(pb);
        pb->stash_copies[s] = mem_stash_copies(sched, p, s, m);
    }
    /* overlap_p2p_comm: the interleaved steady state's sends overlap
     * compute (schedule_1f1b.c), so they leave the bottleneck tau */
    bool async_sends = cm_async_p2p(cm, v);
    for (int l = 0; l < L; l++) {
        const cm_layer *ly = &cm->layers[l];
        pb->send_s[l] = c && !async_sends ? cm_boundary_s(c, ly, 0) : 0.0;
        for (int r = 0; r < R; r++) {
            pb->time_s[l * R + r] = cm_forward_total_s(ly) + cm_backward_total_s(ly, r);
            pb->keep_bytes[l * R + r] = ly->activation_bytes[r];
            pb->transient_bytes[l * R + r] =
                ly->activation_bytes[RECOMPUTE_NONE] - ly->activation_bytes[r];
        }
    }
    for (int l = 0; l < L; l++)
        for (int r = 0; r < R; r++)
            pb->allowed[l * R + r] = !option_dominated(pb, l, r);
    return 0;
}

/* Bytes layer l costs on stage s as a static term: state, stashed copies
 * and, with one chunk per stage, its share of the buffers ZeRO-2/3's
 * overlap holds (memory.c reserves the stage's sum then).  With v > 1 that
 * reserve is the largest chunk's, not a sum: the budget starts below the
 * capacity by a lower bound of it (overlap_floor_bytes()) and the repair
 * rounds cut the rest. */
double bmp_static_bytes(const bmp_problem *pb, int l, int s)
{
    const cm_layer *ly = &pb->cm->layers[l];
    double reserve = pb->v == 1 ? mem_zero_overlap_layer_bytes(pb->cm, l) : 0.0;
    return ly->state_bytes + pb->stash_copies[s] * ly->params * pb->cm->weight_bytes_per_param +
           reserve;
}

/* Per-option coefficients of layer l of stage s in a memory row where its
 * chunk holds `held` micro-batches. */
void bmp_memory_coefficients(const bmp_problem *pb, int l, int s, double held, double *out)
{
    for (int r = 0; r < R; r++)
        out[r] = bmp_static_bytes(pb, l, s) + held * pb->keep_bytes[l * R + r];
}

/* Layers l and o cost the same in every term of the ILP. */
static bool layers_identical(const bmp_problem *pb, int l, int o)
{
    size_t n = R * sizeof(double);
    const cm_layer *a = &pb->cm->layers[l], *b = &pb->cm->layers[o];
    return memcmp(&pb->time_s[l * R], &pb->time_s[o * R], n) == 0 &&
           memcmp(&pb->keep_bytes[l * R], &pb->keep_bytes[o * R], n) == 0 &&
           memcmp(&pb->transient_bytes[l * R], &pb->transient_bytes[o * R], n) == 0 &&
           memcmp(&pb->allowed[l * R], &pb->allowed[o * R], R * sizeof(bool)) == 0 &&
           a->state_bytes == b->state_bytes && a->params == b->params &&
           mem_zero_overlap_layer_bytes(pb->cm, l) == mem_zero_overlap_layer_bytes(pb->cm, o) &&
           pb->send_s[l] == pb->send_s[o];
}

/* The integer-count form applies when layers 1 .. L−2 are all identical. */
bool bmp_middle_identical(const bmp_problem *pb)
{
    if (pb->num_layers < 3)
        return false;
    for (int l = 2; l < pb->num_layers - 1; l++)
        if (!layers_identical(pb, 1, l))
            return false;
    return true;
}

/* Memory rows are scaled to the device capacity, so coefficients are O(1). */
double bmp_memory_scale(const bmp_problem *pb)
{
    return pb->cm->hbm_bytes > 0 ? 1.0 / pb->cm->hbm_bytes : 1.0;
}

/* The bottleneck τ of plan pl from the ILP's own coefficients; the total
 * work Σ_s (F_s + B_s) to *work_s and each chunk's transient (scaled as
 * the memory rows) to transient[k] when non-NULL. */
double bmp_plan_bottleneck_s(const bmp_problem *pb, const plan *pl, double *work_s,
                             double *transient)
{
    double tau = 0, total = 0, ms = bmp_memory_scale(pb);
    for (int s = 0; s < pb->p; s++) {
        double t = 0;
        for (int k = s; k < pb->chunks; k += pb->p) {
            double largest = 0;
            for (int l = pl->chunk_start[k]; l < pl->chunk_start[k + 1]; l++) {
                int i = l * R + pl->recompute[l];
                t += pb->time_s[i];
                largest = fmax(largest, ms * pb->transient_bytes[i]);
            }
            if (transient)
                transient[k] = largest;
        }
        total += t;
        for (int k = s; k < pb->chunks - 1; k += pb->p)
            t += 2 * pb->send_s[pl->chunk_start[k + 1] - 1];
        tau = fmax(tau, t);
    }
    if (work_s)
        *work_s = total;
    return tau;
}

/* The objective T of a plan: Σ_s (F_s + B_s)/v + (m − 1/v)·τ. */
double bmp_problem_objective(const bmp_problem *pb, const plan *pl)
{
    double work;
    double tau = bmp_plan_bottleneck_s(pb, pl, &work, NULL);
    return work / pb->v + (pb->m - 1.0 / pb->v) * tau;
}
