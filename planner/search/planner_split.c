/*
 * planner_split.c -- what the planners do with Megatron's fixed pipeline
 * split (pipeline_split.h: decoder_first/last_pipeline_num_layers,
 * account_for_embedding/loss_in_pipeline_split) and with layouts they cannot
 * re-choose.
 *
 * The keys fix how many decoder layers every stage (and model chunk) holds
 * in Megatron-LM, the baseline.  The planners that partition "as Megatron
 * does" take that split: Megatron's own baseline and Merak, whose stages are
 * Megatron's uniform shards.  The planners that search the cut points
 * themselves (PipeDream's DP, AdaPipe's bottleneck search, BMPipe's ILP,
 * CSIMD and its MBPP baselines) accept the keys and choose their own split:
 * what the keys stand for, the embedding's and the loss's cost on the first
 * and last stage, they already see, because the cost model's layer array
 * starts with the embedding and ends with the final norm, LM head and loss
 * (costmodel.h), and every partition of it keeps those on the first and
 * last chunk.  TensorOpt's frontier re-chooses pp and partitions every
 * candidate as Megatron does (ft_uniform_plan() calls the Megatron
 * planner), so it takes the split at every pp where the keys hold and skips
 * the others, as Megatron-LM would refuse them.
 * planner_run() then notes once, in the plan, what the planner did with
 * the keys.  Without the keys every planner behaves as before.
 */
#include "planner.h"

#include <stdio.h>
#include <stdlib.h>

#include "pipeline_split.h"

int planner_split_partition(const cm_model *cm, const wl_workload *w, plan *pl, np_error *err)
{
    if (!wl_split_is_set(w)) {
        planner_uniform_partition(cm, pl);
        return 0;
    }
    int chunks = pl->num_stages * pl->num_chunks;
    int first_decoder = -1, num_decoder = 0;
    for (int l = 0; l < cm->num_layers; l++) {
        if (cm->layers[l].kind == CM_DECODER || cm->layers[l].kind == CM_CUSTOM) {
            if (first_decoder < 0)
                first_decoder = l;
            num_decoder++;
        }
    }
    int *counts = malloc((size_t)chunks * sizeof *counts);
    if (!counts)
        return np_error_set(err, NP_EXIT_INTERNAL, "<planner>", "", 0, "out of memory");
    wl_split_error e;
    if (wl_pipeline_split(w, pl->num_stages, pl->num_chunks, counts, &e)) {
        free(counts);
        return wl_key_error(err, NP_EXIT_INPUT, w, e.key, "%s", e.text);
    }
    int next = first_decoder < 0 ? 0 : first_decoder, total = 0;
    pl->chunk_start[0] = 0;
    for (int k = 0; k < chunks; k++) {
        next += counts[k];
        total += counts[k];
        pl->chunk_start[k + 1] = next;
    }
    free(counts);
    if (total != num_decoder)
        return np_error_set(err, NP_EXIT_INTERNAL, "<planner>", "", 0,
                            "the pipeline split places %d layers, the cost model has %d", total,
                            num_decoder);
    pl->chunk_start[chunks] = cm->num_layers;
    return 0;
}

void planner_note_own_split(const planner_desc *d, const wl_workload *w, plan *pl)
{
    const char *key = wl_split_key(w);
    if (!key || d->split == PLANNER_SPLIT_TAKEN)
        return;
    if (d->split == PLANNER_SPLIT_TAKEN_PER_PP)
        snprintf(pl->note, sizeof pl->note,
                 "%s applied Megatron's split (%s) at every pp it tried and skipped the pp where "
                 "it cannot hold",
                 d->name, key);
    else
        snprintf(pl->note, sizeof pl->note,
                 "%s chose its own cut points, not Megatron's split (%s); the embedding and the "
                 "loss stay priced on the first and last stage",
                 d->name, key);
}

int planner_refuse_context_parallel(const char *name, const wl_workload *w, np_error *err)
{
    int cp = w->parallel.context_parallel_size;
    if (cp <= 1)
        return 0;
    return wl_key_error(err, NP_EXIT_INPUT, w, "parallel.context_parallel_size",
                        "planner %s re-chooses tp, pp and dp over the NPUs and does not model "
                        "context parallelism; expected 1, got %d",
                        name, cp);
}
