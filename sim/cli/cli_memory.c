/*
 * cli_memory.c -- simrun --memory: the device memory of every pipeline stage
 * at its peak, by what holds it, printed after the result row of a plan.
 *
 * One row per stage, and under an interleaved plan one more per model chunk
 * of the stage.  The figures are planner/schedule/memory.c's
 * (mem_stage_chunks()), the same code that refuses a plan that does not fit
 * (mem_check_fits()) and gives the engine's memory tracker its static bytes,
 * so the breakdown, the error and the simulation never disagree about what
 * a stage holds:
 *   weights, gradients, optimizer   the static state, with the sharding level
 *       of data_parallel_sharding_strategy (or use_distributed_optimizer)
 *       applied over the dp·cp replicas; PipeDream's stashed weight versions
 *       in a column of their own when a stage has any;
 *   activations, in-flight          the activations kept at the stage's
 *       activation peak and the chunk forwards held then (micro-batches:
 *       1F1B's min(p−s, m); interleaved: (chunk, micro-batch) pairs);
 *   transient                       the recompute working set on top of it;
 *   workspace                       the cost model's reserve;
 *   predicted = their sum, capacity, headroom = capacity − predicted, and
 *   simulated: the engine's measured peak of the stage (largest over its
 *   data-parallel replicas), which equals predicted for uniform micro-batches.
 * A chunk row gives its own static state and the activations it holds at the
 * stage's peak; the stage-wide columns show "-".
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "memory.h"

#define GB 1e9

static void print_head(FILE *out, bool stash)
{
    fprintf(out, "%6s %5s %6s %9s", "stage", "chunk", "layers", "weights");
    if (stash)
        fprintf(out, " %9s", "stashed");
    fprintf(out, " %9s %9s %11s %9s %9s %9s %9s %9s %9s %9s\n", "grads", "optimizer", "activations",
            "in-flight", "transient", "workspace", "predicted", "capacity", "headroom",
            "simulated");
}

static void print_stage(FILE *out, int s, int layers, bool interleaved, bool stash,
                        const mem_stage *st, double simulated)
{
    fprintf(out, "%6d %5s %6d %9.2f", s, interleaved ? "all" : "-", layers, st->weight_bytes / GB);
    if (stash)
        fprintf(out, " %9.2f", st->stash_bytes / GB);
    fprintf(out, " %9.2f %9.2f %11.2f %9d %9.2f %9.2f %9.2f %9.2f %9.2f", st->grad_bytes / GB,
            st->optimizer_bytes / GB, st->activation_bytes / GB, st->inflight,
            st->transient_bytes / GB, st->workspace_bytes / GB, st->total_bytes / GB,
            st->capacity_bytes / GB, (st->capacity_bytes - st->total_bytes) / GB);
    if (simulated >= 0)
        fprintf(out, " %9.2f\n", simulated / GB);
    else
        fprintf(out, " %9s\n", "-");
}

static void print_chunk(FILE *out, int s, int j, bool stash, const mem_chunk *ch)
{
    fprintf(out, "%6d %5d %6d %9.2f", s, j, ch->layers, ch->weight_bytes / GB);
    if (stash)
        fprintf(out, " %9s", "-");
    fprintf(out, " %9.2f %9.2f %11.2f %9d %9s %9s %9s %9s %9s %9s\n", ch->grad_bytes / GB,
            ch->optimizer_bytes / GB, ch->activation_bytes / GB, ch->inflight, "-", "-", "-", "-",
            "-", "-");
}

/* The bytes per parameter of the state before sharding (cm_precision). */
static void print_precision(FILE *out, const cm_precision *p)
{
    fprintf(out, "; per parameter: weight %g B, gradient %g B, optimizer %g B (master %g%s",
            p->weight, p->grad, cm_sharded_bytes(p), p->main_param,
            p->remainders ? " as remainders" : "");
    if (p->main_grad > 0)
        fprintf(out, ", gradient copy %g", p->main_grad);
    fprintf(out, ", moments %g + %g)\n", p->exp_avg, p->exp_avg_sq);
}

/* What the state columns are sharded over, in words, and their bytes per
 * parameter. */
static void print_caption(FILE *out, const report_row *row)
{
    const cm_model *cm = row->cm;
    const plan *pl = row->pl;
    char v[32] = "";
    if (pl->schedule == SCHED_INTERLEAVED && pl->num_chunks > 1)
        snprintf(v, sizeof v, ", v %d", pl->num_chunks);
    fprintf(out, "\nmemory per NPU by stage (GB = 1e9 bytes): %s, %s, p %d%s, m %d; ", pl->planner,
            wl_schedule_name(pl->schedule), pl->num_stages, v, pl->num_micro_batches);
    wl_dp_sharding sh = (wl_dp_sharding)cm->sharding;
    if (!cm->has_source) {
        fprintf(out, "state as the model gives it\n");
        return;
    }
    if (sh == WL_SHARD_NO_SHARD || cm->data_parallel <= 1)
        fprintf(out, "state not sharded (%s, %d data-parallel replicas)", wl_sharding_name(sh),
                cm->data_parallel);
    else
        fprintf(out, "%s over %d data-parallel%s replicas shards %s", wl_sharding_name(sh),
                cm->data_parallel, cm->context_parallel > 1 ? " x context-parallel" : "",
                sh == WL_SHARD_OPTIM         ? "the optimizer state"
                : sh == WL_SHARD_OPTIM_GRADS ? "the optimizer state and gradients"
                                             : "the optimizer state, gradients and weights");
    print_precision(out, &cm->precision);
    if (cm->source.training.fp8_format != WL_FP8_NONE)
        fprintf(out, "weights include FP8 training's cached FP8 copies and transposes, 2 B per "
                     "parameter of the linear layers\n");
}

void cli_print_memory(FILE *out, const report_row *row)
{
    const cm_model *cm = row->cm;
    const plan *pl = row->pl;
    const engine_result *r = row->r;
    if (!cm || pl->num_stages <= 0)
        return;
    int v = pl->num_chunks > 0 ? pl->num_chunks : 1;
    bool interleaved = v > 1;
    mem_stage *st = calloc((size_t)pl->num_stages, sizeof *st);
    mem_chunk *ch = calloc((size_t)pl->num_stages * v, sizeof *ch);
    if (!st || !ch) {
        free(st);
        free(ch);
        fprintf(out, "\nmemory per NPU by stage: out of memory\n");
        return;
    }
    bool stash = false;
    for (int s = 0; s < pl->num_stages; s++) {
        mem_stage_chunks(cm, pl, s, &st[s], &ch[(size_t)s * v]);
        stash |= st[s].stash_bytes > 0;
    }
    print_caption(out, row);
    print_head(out, stash);
    for (int s = 0; s < pl->num_stages; s++) {
        int layers = 0;
        for (int j = 0; j < v; j++)
            layers += ch[(size_t)s * v + j].layers;
        double simulated = r && s < r->num_stages ? r->stages[s].peak_bytes : -1.0;
        print_stage(out, s, layers, interleaved, stash, &st[s], simulated);
        for (int j = 0; interleaved && j < v; j++)
            print_chunk(out, s, j, stash, &ch[(size_t)s * v + j]);
    }
    free(st);
    free(ch);
}
