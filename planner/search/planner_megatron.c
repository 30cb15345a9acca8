/*
 * planner_megatron.c -- Megatron-LM's uniform baseline.
 *
 * Decoder layers are split evenly over the p·v model chunks; the embedding
 * goes with the first chunk and the LM head with the last, as Megatron
 * places them.  When L is not divisible by p·v the extra layers go to the
 * chunks after the first, one each, so the two chunks that already carry the
 * embedding and the head get the fewest (Megatron itself requires
 * divisibility or explicit first/last-stage layer counts).  Every decoder
 * (or listed) layer gets the same recompute option: the workload's
 * recompute_granularity, or, when the options leave the choice open, the
 * fastest of none, selective and full that fits in memory.  Its prediction
 * (1F1B only) is predict.c's critical path, sends placed by Megatron's rank
 * order, as TensorOpt's frontier prices plans.
 */
#include "planner.h"

#include <stddef.h>

#include "memory.h"
#include "predict.h"

void planner_uniform_partition(const cm_model *cm, plan *pl)
{
    int chunks = pl->num_stages * pl->num_chunks;
    int first_decoder = 0, num_decoder = 0;
    for (int l = 0; l < cm->num_layers; l++) {
        if (cm->layers[l].kind == CM_DECODER || cm->layers[l].kind == CM_CUSTOM) {
            if (!num_decoder)
                first_decoder = l;
            num_decoder++;
        }
    }
    int base = num_decoder / chunks, extra = num_decoder % chunks;
    int next = first_decoder;
    pl->chunk_start[0] = 0;
    for (int k = 0; k < chunks; k++) {
        next += base + (k >= 1 && k <= extra ? 1 : 0);
        pl->chunk_start[k + 1] = next;
    }
    pl->chunk_start[chunks] = cm->num_layers;
}

/* Option r on every decoder layer.  A listed layer (model.layers) takes full
 * recompute as Megatron's full granularity checkpoints any layer's input;
 * selective recomputes the attention core, which a listed layer does not
 * have, so it keeps everything (none).  The embedding and the head keep
 * theirs. */
static void set_recompute(const cm_model *cm, plan *pl, recompute_kind r)
{
    for (int l = 0; l < cm->num_layers; l++) {
        cm_layer_kind k = cm->layers[l].kind;
        pl->recompute[l] = k == CM_DECODER                         ? r
                           : k == CM_CUSTOM && r == RECOMPUTE_FULL ? RECOMPUTE_FULL
                                                                   : RECOMPUTE_NONE;
    }
}

int planner_megatron(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                     const planner_options *o, plan *out, np_error *err)
{
    int p = w->parallel.pipeline_model_parallel_size;
    int v = o->schedule == SCHED_INTERLEAVED ? o->num_chunks : 1;
    if (plan_init(out, p, v, cm->num_layers))
        return np_error_set(err, NP_EXIT_INTERNAL, "<megatron>", "", 0, "out of memory");
    planner_plan_basics(out, w, o);
    int rc = planner_split_partition(cm, w, out, err);
    if (rc)
        return rc;
    if (o->recompute >= 0) {
        set_recompute(cm, out, (recompute_kind)o->recompute);
    } else {
        int r = RECOMPUTE_NONE;
        for (; r < RECOMPUTE_COUNT; r++) {
            set_recompute(cm, out, (recompute_kind)r);
            if (mem_check_fits(cm, out, NULL) == 0)
                break;
        }
        if (r == RECOMPUTE_COUNT) /* full recompute does not fit either */
            return mem_check_fits(cm, out, err);
    }
    if (out->schedule == SCHED_1F1B)
        out->predicted_iteration_s = predict_1f1b_iteration_s(cm, c, out, PREDICT_SENDS_RANK_ORDER);
    else if (out->schedule == SCHED_INTERLEAVED)
        out->predicted_iteration_s =
            predict_interleaved_iteration_s(cm, c, out, PREDICT_SENDS_RANK_ORDER);
    return 0;
}
