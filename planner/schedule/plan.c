/*
 * plan.c -- allocation and checks of a plan (see plan.h).
 *
 * A plan is plain data so that planners can build it and the simulator can
 * replay it (or a saved copy) without knowing which planner made it.  The
 * check here is the single place that states what a valid plan is; every
 * planner's output and every loaded plan goes through it.
 */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

int plan_init(plan *pl, int num_stages, int num_chunks, int num_layers)
{
    memset(pl, 0, sizeof *pl);
    pl->num_stages = num_stages;
    pl->num_chunks = num_chunks;
    pl->num_layers = num_layers;
    pl->schedule = SCHED_1F1B;
    pl->chunk_start = calloc((size_t)num_stages * num_chunks + 1, sizeof *pl->chunk_start);
    pl->recompute = calloc((size_t)num_layers, sizeof *pl->recompute);
    if (!pl->chunk_start || !pl->recompute) {
        plan_free(pl);
        return -1;
    }
    return 0;
}

void plan_free(plan *pl)
{
    free(pl->chunk_start);
    free(pl->recompute);
    free(pl->micro_batch_sizes);
    free(pl->recompute_units);
    pl->recompute_units = NULL;
    pl->chunk_start = NULL;
    pl->recompute = NULL;
    pl->micro_batch_sizes = NULL;
}

int plan_copy(plan *dst, const plan *src)
{
    if (plan_init(dst, src->num_stages, src->num_chunks, src->num_layers))
        return -1;
    int *starts = dst->chunk_start;
    recompute_kind *rc = dst->recompute;
    *dst = *src;
    dst->chunk_start = starts;
    dst->recompute = rc;
    dst->micro_batch_sizes = NULL;
    dst->recompute_units = NULL;
    memcpy(starts, src->chunk_start,
           ((size_t)src->num_stages * src->num_chunks + 1) * sizeof *starts);
    memcpy(rc, src->recompute, (size_t)src->num_layers * sizeof *rc);
    if (src->micro_batch_sizes) {
        dst->micro_batch_sizes = malloc((size_t)src->num_micro_batches * sizeof(int));
        if (!dst->micro_batch_sizes)
            return -1;
        memcpy(dst->micro_batch_sizes, src->micro_batch_sizes,
               (size_t)src->num_micro_batches * sizeof(int));
    }
    if (src->recompute_units) {
        if (plan_use_recompute_units(dst))
            return -1;
        memcpy(dst->recompute_units, src->recompute_units,
               (size_t)src->num_layers * sizeof *dst->recompute_units);
    }
    return 0;
}

int plan_use_recompute_units(plan *pl)
{
    free(pl->recompute_units);
    pl->recompute_units = calloc((size_t)pl->num_layers, sizeof *pl->recompute_units);
    return pl->recompute_units ? 0 : -1;
}

void plan_layer_recompute(const plan *pl, const cm_model *cm, int layer, bool skip_recompute,
                          plan_layer_cost *out)
{
    const cm_layer *ly = &cm->layers[layer];
    double kept_all = ly->activation_bytes[RECOMPUTE_NONE];
    if (skip_recompute) {
        *out = (plan_layer_cost){0, kept_all, 0};
        return;
    }
    if (pl->recompute_units) {
        /* Recomputing a unit drops the bytes it keeps and costs its forward. */
        double time_s = 0, dropped = 0;
        for (int u = 0; u < ly->num_units; u++) {
            if (pl->recompute_units[layer] & (1u << u)) {
                time_s += ly->units[u].forward_s;
                dropped += ly->units[u].activation_bytes;
            }
        }
        *out = (plan_layer_cost){time_s, kept_all - dropped, dropped};
        return;
    }
    recompute_kind r = pl->recompute[layer];
    *out = (plan_layer_cost){ly->recompute_s[r], ly->activation_bytes[r],
                             kept_all - ly->activation_bytes[r]};
}

int plan_stage_of_layer(const plan *pl, int layer, int *chunk)
{
    int chunks = pl->num_stages * pl->num_chunks;
    for (int k = 0; k < chunks; k++) {
        if (layer >= pl->chunk_start[k] && layer < pl->chunk_start[k + 1]) {
            if (chunk)
                *chunk = k / pl->num_stages;
            return k % pl->num_stages;
        }
    }
    return -1;
}

int plan_check(const plan *pl, const char *source, np_error *err)
{
    int p = pl->num_stages, v = pl->num_chunks, chunks = p * v;
    if (p < 1 || v < 1)
        return np_error_set(err, NP_EXIT_INPUT, source, "num_stages", 0,
                            "expected at least one stage and one chunk, got %d stages, %d chunks",
                            p, v);
    if (pl->chunk_start[0] != 0 || pl->chunk_start[chunks] != pl->num_layers)
        return np_error_set(err, NP_EXIT_INPUT, source, "chunk_start", 0,
                            "chunks must cover layers 0..%d, they cover %d..%d", pl->num_layers - 1,
                            pl->chunk_start[0], pl->chunk_start[chunks] - 1);
    for (int k = 0; k < chunks; k++)
        if (pl->chunk_start[k + 1] <= pl->chunk_start[k])
            return np_error_set(err, NP_EXIT_INPUT, source, "chunk_start", 0,
                                "model chunk %d (stage %d, virtual chunk %d) is empty", k, k % p,
                                k / p);
    for (int l = 0; l < pl->num_layers; l++)
        if ((int)pl->recompute[l] < 0 || pl->recompute[l] >= RECOMPUTE_COUNT)
            return np_error_set(err, NP_EXIT_INPUT, source, "recompute", 0,
                                "layer %d has recompute option %d, expected none/selective/full", l,
                                (int)pl->recompute[l]);
    if (pl->num_micro_batches < 1 || pl->micro_batch_size < 1)
        return np_error_set(
            err, NP_EXIT_INPUT, source, "num_micro_batches", 0,
            "expected at least one micro-batch of at least one sample, got %d of %d",
            pl->num_micro_batches, pl->micro_batch_size);
    if (pl->micro_batch_sizes)
        for (int i = 0; i < pl->num_micro_batches; i++)
            if (pl->micro_batch_sizes[i] < 1)
                return np_error_set(err, NP_EXIT_INPUT, source, "micro_batch_sizes", 0,
                                    "micro-batch %d has size %d, expected >= 1", i,
                                    pl->micro_batch_sizes[i]);
    if (pl->schedule == SCHED_INTERLEAVED && (v < 2 || pl->num_micro_batches % p != 0))
        return np_error_set(err, NP_EXIT_INPUT, source, "schedule", 0,
                            "interleaved 1F1B needs at least 2 virtual chunks and a number of "
                            "micro-batches divisible by the %d stages, got v=%d, m=%d",
                            p, v, pl->num_micro_batches);
    if (pl->schedule != SCHED_INTERLEAVED && v != 1)
        return np_error_set(err, NP_EXIT_INPUT, source, "num_chunks", 0,
                            "schedule %s runs one chunk per stage, got %d",
                            wl_schedule_name(pl->schedule), v);
    return 0;
}
