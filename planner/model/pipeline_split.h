/*
 * pipeline_split.h -- Megatron-LM's split of the decoder layers over the
 * pipeline when the workload fixes it: the uneven first and last stages
 * (parallel.decoder_first_pipeline_num_layers, decoder_last_...) or the
 * embedding and the loss counted as layers (account_for_embedding_in_...,
 * account_for_loss_in_pipeline_split).
 *
 * Semantics (Megatron-LM, megatron/core/transformer/transformer_block.py,
 * get_num_layers_to_build(), and TransformerConfig's checks):
 *   - first / last set: the first (last) pipeline stage holds that many
 *     decoder layers; the rest, num_layers − first − last, split evenly over
 *     the stages in between, which must divide them.  With virtual stages the
 *     count of a pipeline stage is split evenly over its v model chunks (the
 *     first stage's v chunks hold first/v layers each), so every stage's count
 *     must be a multiple of v.
 *   - account_for_embedding / account_for_loss: the embedding (loss) counts as
 *     one layer, (num_layers + e + l) / p per stage (a multiple required), /v
 *     per chunk; the first model chunk (chunk 0 of stage 0) builds one decoder
 *     layer fewer, the last model chunk (chunk v−1 of stage p−1) too.
 *   - pipeline_model_parallel_layout (Megatron-Core's custom layout,
 *     pipeline_layout.c): every chunk's layers listed; it excludes the
 *     other four keys;
 *   - the two forms exclude each other (Megatron refuses the combination);
 *     a layer-listed model (model.layers) has no embedding or loss to count.
 * A stage of the middle left without layers is refused: a plan's chunks are
 * never empty.  The error names the key that cannot hold.
 */
#ifndef PIPELINE_SPLIT_H
#define PIPELINE_SPLIT_H

#include <stdbool.h>
#include <stddef.h>

#include "workload.h"

#define WL_KEY_FIRST_STAGE "parallel.decoder_first_pipeline_num_layers"
#define WL_KEY_LAST_STAGE "parallel.decoder_last_pipeline_num_layers"
#define WL_KEY_ACCOUNT_EMBEDDING "parallel.account_for_embedding_in_pipeline_split"
#define WL_KEY_ACCOUNT_LOSS "parallel.account_for_loss_in_pipeline_split"
#define WL_KEY_LAYOUT "parallel.pipeline_model_parallel_layout"

/* Why a split cannot hold: the dotted key to blame and the sentence. */
typedef struct wl_split_error {
    const char *key;
    char text[320];
} wl_split_error;

/* Decoder layers of every model chunk from a Megatron layout string
 * (pipeline_layout.c says the grammar and what is refused) into counts[p·v]
 * (may be NULL); they sum to num_layers.  0, or -1 with *e filled. */
int wl_layout_counts(const char *layout, int p, int v, int num_layers, int *counts,
                     wl_split_error *e);

/* True when one of the five keys fixes the split. */
bool wl_split_is_set(const wl_workload *w);
/* The first of the five keys that is set (NULL when none): what a planner
 * that chooses its own cut points names when it refuses them. */
const char *wl_split_key(const wl_workload *w);

/* Decoder layers (listed layers on a layer-listed model) of every model
 * chunk k = j·p + s of p stages and v chunks per stage, into counts[p·v]
 * (counts may be NULL: only check).  Their sum is model.num_layers.  0, or
 * -1 with *e filled. */
int wl_pipeline_split(const wl_workload *w, int p, int v, int *counts, wl_split_error *e);

#endif
