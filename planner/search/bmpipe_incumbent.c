/*
 * bmpipe_incumbent.c -- a first incumbent for BMPipe's ILP: a greedy
 * heuristic plan and its column values in the binary and count forms.
 *
 * On a large model GLPK's branch-and-cut may find no integer point for a
 * long time (the binary form of 126 layers × 16 stages: none in 10 s; the
 * interleaved count form of Llama 3 405B: none in 10 s), so those forms
 * start from a heuristic plan handed to GLPK as its first incumbent
 * (glp_ios_heur_sol): whatever the time limit, the planner then returns a
 * plan and the gap GLPK proves for it.
 *
 * Recompute of a stage, greedily: for each cap on the recompute transient
 * (none, the largest selective one, the largest of all), start every layer
 * at its least-memory option and repeatedly take the upgrade that saves the
 * most time per byte and still fits; keep the fastest of the three.
 * Partition: with one chunk per stage, a DP over stages finds the smallest
 * bottleneck τ* under these greedy stage times, a second one the least
 * Σ_s (F_s + B_s) among partitions whose stages stay within τ*; with v > 1,
 * Megatron's even split of the layers over the p·v chunks.
 */

#include <math.h>
#include <stdlib.h>

#include "bmpipe_internal.h"

/* Greedy recompute of stage s's layers (chunks s, s+p, … of `starts`):
 * their F + B, or INFINITY when nothing fits; options to choice[l] when
 * non-NULL. */
static double greedy_stage_work_s(const bmp_problem *pb, int s, const int *starts,
                                  recompute_kind *choice)
{
    int n = 0, layer[pb->num_layers];
    double alpha[pb->num_layers], base = 0, best = INFINITY, budget = pb->budget_bytes[s];
    recompute_kind cur[pb->num_layers];
    for (int k = s; k < pb->chunks; k += pb->p) {
        for (int l = starts[k]; l < starts[k + 1]; l++, n++) {
            layer[n] = l;
            alpha[n] = pb->inflight[k];
            base += bmp_static_bytes(pb, l, s);
        }
    }
    if (base > budget)
        return INFINITY;
    for (int c = 0; c < R; c++) {
        double cap = 0; /* c = 0: no transient; 1: selective's; 2: every option's */
        for (int i = 0; i < n; i++)
            for (int r = 0; r <= c; r++)
                if (pb->allowed[layer[i] * R + r])
                    cap = fmax(cap, pb->transient_bytes[layer[i] * R + r]);
        double used = base + cap, time = 0;
        bool ok = true;
        for (int i = 0; i < n && ok; i++) { /* least kept bytes within the cap */
            const double *a = &pb->keep_bytes[layer[i] * R];
            int pick = -1;
            for (int r = 0; r < R; r++)
                if (pb->allowed[layer[i] * R + r] && pb->transient_bytes[layer[i] * R + r] <= cap &&
                    (pick < 0 || a[r] < a[pick]))
                    pick = r;
            ok = pick >= 0;
            if (ok) {
                cur[i] = (recompute_kind)pick;
                used += alpha[i] * a[pick];
                time += pb->time_s[layer[i] * R + pick];
            }
        }
        if (!ok || used > budget)
            continue;
        for (;;) { /* the upgrade with the most time saved per byte that fits */
            int bi = -1, br = 0;
            double best_ratio = -1;
            for (int i = 0; i < n; i++) {
                const double *t = &pb->time_s[layer[i] * R], *a = &pb->keep_bytes[layer[i] * R];
                for (int r = 0; r < R; r++) {
                    double extra = alpha[i] * (a[r] - a[cur[i]]), saved = t[cur[i]] - t[r];
                    if (!pb->allowed[layer[i] * R + r] ||
                        pb->transient_bytes[layer[i] * R + r] > cap || saved <= 0 ||
                        used + extra > budget || saved / fmax(extra, 1.0) <= best_ratio)
                        continue;
                    best_ratio = saved / fmax(extra, 1.0);
                    bi = i;
                    br = r;
                }
            }
            if (bi < 0)
                break;
            const double *t = &pb->time_s[layer[bi] * R], *a = &pb->keep_bytes[layer[bi] * R];
            used += alpha[bi] * (a[br] - a[cur[bi]]);
            time -= t[cur[bi]] - t[br];
            cur[bi] = (recompute_kind)br;
        }
        if (time < best) {
            best = time;
            for (int i = 0; choice && i < n; i++)
                choice[layer[i]] = cur[i];
        }
    }
    return best;
}

/* v = 1: stage s holding [i, j), greedy work plus its boundary sends in
 * the bottleneck (with_sends) or not. */
static double greedy_range_s(const bmp_problem *pb, int s, int i, int j, bool with_sends)
{
    int starts[pb->chunks + 1];
    starts[s] = i;
    starts[s + 1] = j;
    double t = greedy_stage_work_s(pb, s, starts, NULL);
    return with_sends && s < pb->p - 1 ? t + 2 * pb->send_s[j - 1] : t;
}

/* v = 1: the two DPs of the heuristic into pl->chunk_start; -1 when no
 * partition fits. */
static int heuristic_partition(const bmp_problem *pb, plan *pl)
{
    int L = pb->num_layers, p = pb->p, rc = -1;
    size_t cells = (size_t)(p + 1) * (L + 1);
    double *bottleneck = malloc(cells * sizeof *bottleneck), *work = malloc(cells * sizeof *work);
    int *from = malloc(cells * sizeof *from);
    if (!bottleneck || !work || !from)
        goto done;
#define AT(s, j) ((s) * (L + 1) + (j))
    for (size_t i = 0; i < cells; i++)
        bottleneck[i] = work[i] = INFINITY;
    bottleneck[AT(0, 0)] = work[AT(0, 0)] = 0;
    for (int s = 0; s < p; s++) /* the smallest bottleneck */
        for (int j = s + 1; j <= L - (p - 1 - s); j++)
            for (int i = j - 1; i >= s; i--) {
                double t = greedy_range_s(pb, s, i, j, true);
                if (isinf(t))
                    break; /* a longer range does not fit either */
                bottleneck[AT(s + 1, j)] =
                    fmin(bottleneck[AT(s + 1, j)], fmax(bottleneck[AT(s, i)], t));
            }
    double tau = bottleneck[AT(p, L)] * (1 + 1e-12);
    for (int s = 0; s < p && isfinite(tau); s++) /* the least total work within it */
        for (int j = s + 1; j <= L - (p - 1 - s); j++)
            for (int i = j - 1; i >= s; i--) {
                double t = greedy_range_s(pb, s, i, j, true);
                if (isinf(t))
                    break;
                double w = work[AT(s, i)] + greedy_range_s(pb, s, i, j, false);
                if (t <= tau && w < work[AT(s + 1, j)]) {
                    work[AT(s + 1, j)] = w;
                    from[AT(s + 1, j)] = i;
                }
            }
    if (isinf(work[AT(p, L)]))
        goto done;
    pl->chunk_start[p] = L;
    for (int s = p; s > 0; s--)
        pl->chunk_start[s - 1] = from[AT(s, pl->chunk_start[s])];
#undef AT
    rc = 0;
done:
    free(bottleneck);
    free(work);
    free(from);
    return rc;
}

/* The heuristic plan into pl; -1 when it finds none that fits. */
int bmp_heuristic_plan(const bmp_problem *pb, plan *pl)
{
    int K = pb->chunks, L = pb->num_layers;
    if (pb->v == 1) {
        if (heuristic_partition(pb, pl))
            return -1;
    } else {
        for (int k = 0; k <= K; k++)
            pl->chunk_start[k] = (int)((long)k * L / K);
    }
    for (int s = 0; s < pb->p; s++)
        if (isinf(greedy_stage_work_s(pb, s, pl->chunk_start, pl->recompute)))
            return -1;
    return 0;
}

/* The binary form's column values for plan pl (1-based, GLPK's layout). */
double *bmp_binary_point(const bmp_problem *pb, const binary_cols *bc, const int *transient_col,
                         int num_cols, const plan *pl)
{
    int K = pb->chunks;
    double *x = calloc((size_t)num_cols + 1, sizeof *x), transient[K];
    if (!x)
        return NULL;
    for (int k = 0; k < K; k++) {
        for (int l = pl->chunk_start[k]; l < pl->chunk_start[k + 1]; l++) {
            x[bc->q[(l * K + k) * R + pl->recompute[l]]] = 1;
            for (int later = k; later < K - 1; later++)
                x[bc->y[l * K + later]] = 1;
        }
    }
    x[bc->tau] = bmp_plan_bottleneck_s(pb, pl, NULL, transient);
    for (int k = 0; k < K; k++)
        x[transient_col[k]] = transient[k];
    return x;
}

/* The count form's column values for plan pl, or NULL when pl uses an
 * option or a chunk size the form left out. */
double *bmp_count_point(const bmp_problem *pb, const count_cols *cc, const chunk_sizes *cs,
                        const int *transient_col, int num_cols, const plan *pl)
{
    int L = pb->num_layers, K = pb->chunks, N = cs->N;
    double *x = calloc((size_t)num_cols + 1, sizeof *x), transient[K];
    if (!x)
        return NULL;
    bool ok = cc->first[pl->recompute[0]] && cc->last[pl->recompute[L - 1]];
    x[cc->first[pl->recompute[0]]] = 1;
    x[cc->last[pl->recompute[L - 1]]] = 1;
    for (int k = 0; k < K && ok; k++) {
        int counts[R] = {0}, first = k == 0 ? 1 : pl->chunk_start[k];
        int end = k == K - 1 ? L - 1 : pl->chunk_start[k + 1];
        for (int l = first; l < end; l++)
            counts[pl->recompute[l]]++;
        for (int r = 0; r < R; r++) {
            ok = ok && (counts[r] == 0 || cc->n[k * R + r]);
            x[cc->n[k * R + r]] = counts[r];
            x[cc->z[k * R + r]] = counts[r] > 0;
        }
        ok = ok && end - first >= 0 && cs->col[k * (N + 1) + (end - first)];
        if (ok)
            x[cs->col[k * (N + 1) + (end - first)]] = 1;
    }
    x[cc->tau] = bmp_plan_bottleneck_s(pb, pl, NULL, transient);
    for (int k = 0; k < K; k++)
        x[transient_col[k]] = transient[k];
    x[0] = 0; /* absent columns (index 0) were written here */
    if (!ok) {
        free(x);
        return NULL;
    }
    return x;
}
