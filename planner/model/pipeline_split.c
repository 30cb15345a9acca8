/*
 * pipeline_split.c -- Megatron-LM's split of the decoder layers over the
 * pipeline stages and virtual chunks when the workload fixes it (see
 * pipeline_split.h for the semantics and their source).
 *
 * Example (Llama 3 405B, 126 layers, PP 16): first = last = 7 leaves 112
 * layers for the 14 middle stages, 8 each.  With virtual stages Megatron
 * splits each stage's count over its chunks, so 7 layers on a stage of v = 2
 * chunks is refused as Megatron refuses it; account_for_embedding and
 * account_for_loss give the same 7/8/.../8/7 stages for v = 1 and, for v = 2,
 * chunks of 4 decoder layers but 3 on the first and the last chunk (the
 * embedding and the loss stand for the fourth): the layout the Llama 3 paper
 * describes ("the first model chunk on the first stage has only the
 * embedding" at its own v).
 */
#include "pipeline_split.h"

#include <stdarg.h>
#include <stdio.h>

static int split_fail(wl_split_error *e, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int split_fail(wl_split_error *e, const char *key, const char *fmt, ...)
{
    if (!e)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    e->key = key;
    vsnprintf(e->text, sizeof e->text, fmt, ap);
    va_end(ap);
    return -1;
}

const char *wl_split_key(const wl_workload *w)
{
    const wl_parallel *p = &w->parallel;
    if (p->pipeline_model_parallel_layout[0])
        return WL_KEY_LAYOUT;
    if (p->decoder_first_pipeline_num_layers > 0)
        return WL_KEY_FIRST_STAGE;
    if (p->decoder_last_pipeline_num_layers > 0)
        return WL_KEY_LAST_STAGE;
    if (p->account_for_embedding_in_pipeline_split)
        return WL_KEY_ACCOUNT_EMBEDDING;
    if (p->account_for_loss_in_pipeline_split)
        return WL_KEY_ACCOUNT_LOSS;
    return NULL;
}

bool wl_split_is_set(const wl_workload *w) { return wl_split_key(w) != NULL; }

/* The uneven first / last stages: *first, *last (0: not set, the middle
 * count), *middle per stage in between. */
static int split_first_last(const wl_workload *w, int p, int v, int *first, int *last, int *middle,
                            wl_split_error *e)
{
    const wl_parallel *par = &w->parallel;
    int layers = w->model.num_layers;
    *first = par->decoder_first_pipeline_num_layers;
    *last = par->decoder_last_pipeline_num_layers;
    const char *key = *first > 0 ? WL_KEY_FIRST_STAGE : WL_KEY_LAST_STAGE;
    if (par->account_for_embedding_in_pipeline_split || par->account_for_loss_in_pipeline_split)
        return split_fail(e,
                          par->account_for_embedding_in_pipeline_split ? WL_KEY_ACCOUNT_EMBEDDING
                                                                       : WL_KEY_ACCOUNT_LOSS,
                          "cannot be combined with %s (Megatron-LM refuses the uneven first or "
                          "last stage together with the embedding or loss counted as a layer)",
                          key);
    if (p < 2)
        return split_fail(e, key,
                          "an uneven first or last stage needs at least 2 pipeline stages, "
                          "parallel.pipeline_model_parallel_size is %d",
                          p);
    long rest = layers;
    int stages = p;
    if (*first > 0)
        rest -= *first, stages--;
    if (*last > 0)
        rest -= *last, stages--;
    if (stages == 0 && rest != 0)
        return split_fail(e, key,
                          "with %d stages the first and last stage hold every layer: %d + %d "
                          "must equal model.num_layers (%d)",
                          p, *first, *last, layers);
    if (rest <= 0 && stages > 0)
        return split_fail(e, key,
                          "leaves %ld of the %d layers of model.num_layers for the %d middle "
                          "stages, which need at least one each",
                          rest, layers, stages);
    *middle = stages > 0 ? (int)(rest / stages) : 0;
    if (stages > 0 && rest % stages != 0)
        return split_fail(e, key,
                          "the %ld layers left of model.num_layers (%d) must split evenly over "
                          "the %d middle stages, as Megatron-LM requires; %ld = %d x %d + %ld",
                          rest, layers, stages, rest, stages, *middle, rest % stages);
    if (v <= 1)
        return 0;
    const char *vkey = "parallel.virtual_pipeline_model_parallel_size";
    if (*first > 0 && *first % v != 0)
        return split_fail(e, WL_KEY_FIRST_STAGE,
                          "the first stage's %d layers split over its %d model chunks (%s), "
                          "which must divide them, as Megatron-LM requires",
                          *first, v, vkey);
    if (*last > 0 && *last % v != 0)
        return split_fail(e, WL_KEY_LAST_STAGE,
                          "the last stage's %d layers split over its %d model chunks (%s), "
                          "which must divide them, as Megatron-LM requires",
                          *last, v, vkey);
    if (stages > 0 && *middle % v != 0)
        return split_fail(e, key,
                          "leaves %d layers on each middle stage, split over its %d model "
                          "chunks (%s), which must divide them, as Megatron-LM requires",
                          *middle, v, vkey);
    return 0;
}

/* The embedding and / or the loss counted as a layer: per chunk. */
static int split_account(const wl_workload *w, int p, int v, int *per_chunk, wl_split_error *e)
{
    const wl_parallel *par = &w->parallel;
    bool emb = par->account_for_embedding_in_pipeline_split;
    bool loss = par->account_for_loss_in_pipeline_split;
    const char *key = emb ? WL_KEY_ACCOUNT_EMBEDDING : WL_KEY_ACCOUNT_LOSS;
    if (w->model.num_layer_specs > 0)
        return split_fail(e, key,
                          "model.layers lists its layers: it has no embedding or loss layer to "
                          "count in the pipeline split");
    long total = (long)w->model.num_layers + emb + loss;
    if (total % p != 0)
        return split_fail(e, key,
                          "model.num_layers (%d) + %d counted layer(s) = %ld must be a multiple "
                          "of parallel.pipeline_model_parallel_size (%d), as Megatron-LM requires",
                          w->model.num_layers, emb + loss, total, p);
    long stage = total / p;
    if (stage % v != 0)
        return split_fail(e, key,
                          "gives %ld layers per stage, split over its %d model chunks "
                          "(parallel.virtual_pipeline_model_parallel_size), which must divide "
                          "them, as Megatron-LM requires",
                          stage, v);
    *per_chunk = (int)(stage / v);
    return 0;
}

int wl_pipeline_split(const wl_workload *w, int p, int v, int *counts, wl_split_error *e)
{
    if (v < 1)
        v = 1;
    const wl_parallel *par = &w->parallel;
    int chunks = p * v;
    if (par->pipeline_model_parallel_layout[0]) {
        const char *other = par->decoder_first_pipeline_num_layers > 0  ? WL_KEY_FIRST_STAGE
                            : par->decoder_last_pipeline_num_layers > 0 ? WL_KEY_LAST_STAGE
                            : par->account_for_embedding_in_pipeline_split
                                ? WL_KEY_ACCOUNT_EMBEDDING
                            : par->account_for_loss_in_pipeline_split ? WL_KEY_ACCOUNT_LOSS
                                                                      : NULL;
        if (other)
            return split_fail(e, WL_KEY_LAYOUT,
                              "lists every stage's layers and cannot be combined with %s "
                              "(Megatron-LM refuses the pair)",
                              other);
        if (w->model.num_layer_specs > 0)
            return split_fail(e, WL_KEY_LAYOUT,
                              "model.layers lists its layers: a layout places decoder layers");
        return wl_layout_counts(par->pipeline_model_parallel_layout, p, v, w->model.num_layers,
                                counts, e);
    }
    if (par->decoder_first_pipeline_num_layers > 0 || par->decoder_last_pipeline_num_layers > 0) {
        int first = 0, last = 0, middle = 0;
        if (split_first_last(w, p, v, &first, &last, &middle, e))
            return -1;
        for (int k = 0; counts && k < chunks; k++) {
            int s = k % p, n = middle;
            if (s == 0 && first > 0)
                n = first;
            else if (s == p - 1 && last > 0)
                n = last;
            counts[k] = n / v;
        }
        return 0;
    }
    if (!par->account_for_embedding_in_pipeline_split && !par->account_for_loss_in_pipeline_split) {
        return split_fail(e, "parallel", "no key fixes the pipeline split");
    }
    int per_chunk = 0;
    if (split_account(w, p, v, &per_chunk, e))
        return -1;
    for (int k = 0; counts && k < chunks; k++)
        counts[k] = per_chunk;
    if (counts && par->account_for_embedding_in_pipeline_split)
        counts[0] -= 1;
    if (counts && par->account_for_loss_in_pipeline_split)
        counts[chunks - 1] -= 1;
    return 0;
}
