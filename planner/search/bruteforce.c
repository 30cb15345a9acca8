/*
 * bruteforce.c -- exhaustive search over small plans (see bruteforce.h).
 *
 * Design.  Deliberately dumb, so that it can be trusted as a reference: the
 * cut points between chunks run through every combination in lexicographic
 * order (1 ≤ c_1 < … < c_{K−1} ≤ L−1), and for each partition the recompute
 * options run through every L-digit number in base |options| (an odometer).
 * Every candidate is a complete plan handed to the cost function, so the
 * same enumerator serves any planner's objective; no pruning, no bounds.
 * The one work plan is rewritten in place and copied into `best` only when
 * it improves, so a candidate costs O(L) plus the cost function.
 *
 * bf_cost_bmpipe() evaluates the BMPipe objective straight from a plan with
 * the cost model's own accessors and takes its memory verdict from
 * mem_check_fits(), so that a planner that formulates the same objective in
 * another way (the ILP of planner_bmpipe.c) is checked against an
 * independent evaluation.
 */
#include "bruteforce.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "memory.h"

static int options_of(unsigned option_mask, recompute_kind *out)
{
    int n = 0;
    for (int r = 0; r < RECOMPUTE_COUNT; r++)
        if (option_mask & BF_OPTION(r))
            out[n++] = (recompute_kind)r;
    return n;
}

long bf_count(int num_layers, int num_chunks, unsigned option_mask)
{
    recompute_kind options[RECOMPUTE_COUNT];
    int num_options = options_of(option_mask, options);
    if (num_layers < 1 || num_chunks < 1 || num_chunks > num_layers || num_options == 0)
        return -1;
    /* C(L−1, K−1), built incrementally so every intermediate is an integer. */
    double count = 1;
    for (int i = 1; i < num_chunks; i++)
        count = count * (num_layers - num_chunks + i) / i;
    for (int l = 0; l < num_layers; l++)
        count *= num_options;
    return count > (double)BF_MAX_CANDIDATES ? -1 : (long)llround(count);
}

/* First partition: chunks of one layer, the last chunk takes the rest. */
static void partition_first(int *chunk_start, int chunks, int num_layers)
{
    for (int k = 0; k < chunks; k++)
        chunk_start[k] = k;
    chunk_start[chunks] = num_layers;
}

/* Next combination of the cut points chunk_start[1..K−1]; false after the last. */
static bool partition_next(int *chunk_start, int chunks, int num_layers)
{
    for (int i = chunks - 1; i >= 1; i--) {
        /* Cut i can move right while it leaves one layer for each later chunk. */
        if (chunk_start[i] < num_layers - (chunks - i)) {
            chunk_start[i]++;
            for (int j = i + 1; j < chunks; j++)
                chunk_start[j] = chunk_start[j - 1] + 1;
            return true;
        }
    }
    return false;
}

/* Next recompute assignment (odometer over digit[]); false after the last. */
static bool recompute_next(plan *pl, int *digit, const recompute_kind *options, int num_options)
{
    for (int l = 0; l < pl->num_layers; l++) {
        if (++digit[l] < num_options) {
            pl->recompute[l] = options[digit[l]];
            return true;
        }
        digit[l] = 0;
        pl->recompute[l] = options[0];
    }
    return false;
}

static void keep_best(plan *best, const plan *work)
{
    int chunks = work->num_stages * work->num_chunks;
    memcpy(best->chunk_start, work->chunk_start, ((size_t)chunks + 1) * sizeof *best->chunk_start);
    memcpy(best->recompute, work->recompute, (size_t)work->num_layers * sizeof *best->recompute);
}

int bf_search(const plan *shape, unsigned option_mask, bf_cost_fn cost, void *ctx, plan *best,
              bf_result *res)
{
    recompute_kind options[RECOMPUTE_COUNT];
    int num_options = options_of(option_mask, options);
    int chunks = shape->num_stages * shape->num_chunks, num_layers = shape->num_layers;
    res->best_cost = INFINITY;
    res->evaluated = 0;
    memset(best, 0, sizeof *best);
    if (bf_count(num_layers, chunks, option_mask) < 0)
        return -1;
    plan work;
    int *digit = calloc((size_t)num_layers, sizeof *digit);
    if (!digit || plan_copy(&work, shape)) {
        free(digit);
        return -1;
    }
    free(work.recompute_units); /* per-layer options only */
    work.recompute_units = NULL;
    partition_first(work.chunk_start, chunks, num_layers);
    for (int l = 0; l < num_layers; l++)
        work.recompute[l] = options[0];
    if (plan_copy(best, &work)) { /* the first candidate, until one is cheaper */
        plan_free(&work);
        free(digit);
        return -1;
    }
    do {
        do {
            double c = cost(&work, ctx);
            res->evaluated++;
            if (c < res->best_cost) {
                res->best_cost = c;
                keep_best(best, &work);
            }
        } while (recompute_next(&work, digit, options, num_options));
    } while (partition_next(work.chunk_start, chunks, num_layers));
    plan_free(&work);
    free(digit);
    return 0;
}

/* ---- the BMPipe objective ---------------------------------------------- */

double bf_cost_bmpipe(const plan *pl, void *ctx)
{
    const bf_bmpipe_ctx *b = ctx;
    const cm_model *cm = b->cm;
    int p = pl->num_stages, v = pl->num_chunks, chunks = p * v;
    double work_total = 0, bottleneck = 0;
    if (mem_check_fits(cm, pl, NULL) != 0)
        return INFINITY;
    for (int s = 0; s < p; s++) {
        double work = 0, comm = 0;
        for (int j = 0; j < v; j++) {
            int k = j * p + s;
            for (int l = pl->chunk_start[k]; l < pl->chunk_start[k + 1]; l++)
                work += cm_forward_total_s(&cm->layers[l]) +
                        cm_backward_total_s(&cm->layers[l], pl->recompute[l]);
            if (k < chunks - 1 && b->cluster && !cm_async_p2p(cm, v))
                comm += cm_boundary_s(b->cluster, &cm->layers[pl->chunk_start[k + 1] - 1], 0);
        }
        work_total += work;
        bottleneck = fmax(bottleneck, work + 2 * comm);
    }
    return work_total / v + (pl->num_micro_batches - 1.0 / v) * bottleneck;
}
