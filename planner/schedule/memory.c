/*
 * memory.c -- device memory of a pipeline stage under a plan.
 *
 * Design.  A stage's peak is
 *   static (weights, gradients, optimizer state, stashed weight versions)
 *   + the peak of activations kept between forwards and backwards
 *   + the recompute working set of the backward running at that peak
 *   + the workspace reserve of the cost model.
 * Rather than multiply an in-flight count by a per-micro-batch size, the
 * activation peak is found by replaying the stage's order of forwards and
 * backwards, the way the schedule generators emit them and the simulator's
 * memory tracker charges them (a forward allocates its chunk's activations;
 * a recompute and its backward hold the transient, the backward frees the
 * activations when it ends).  With uniform micro-batches and chunks this is
 * exactly mem_inflight() × bytes + transient; the replay also covers
 * micro-batches of different sizes (CSIMD), interleaved chunks of different
 * sizes and Merak's shifted recompute, where a product would be wrong.
 *
 * In-flight micro-batches at the peak, stage s of p, m micro-batches:
 *   GPipe (Huang et al. 2019): all m forwards precede the backwards: m.
 *   1F1B (Narayanan et al. SC'21 §2.2.1; PipeDream-Flush): min(p−s−1, m)
 *     warm-up forwards, then one forward, one backward: min(p−s, m).
 *   ZB-H1 (Qi et al. ICLR'24, §2.1): the 1F1B pattern, W passes delayed so
 *     that "all workers maintain the same number of in-flight micro-batches":
 *     min(p, m) forwarded and not yet W'd on every stage, stage 0's being
 *     the 1F1B peak.  W needs the inputs of the weight GEMMs, so a
 *     micro-batch keeps its activations until its W (schedule_zb.c frees
 *     them there: an upper bound on the paper's M_W < M_B after B).
 *   ZB-H2 (Qi et al. §2.2): warm-up forwards fill the time until the first B
 *     arrives (2(p−s)−1 on stage s with T_F = T_B = T_W) and W passes are
 *     delayed up to the paper's (2p−1)·M_B peak: min(2p−1, m) held until W
 *     on every stage.
 *   Interleaved 1F1B (Narayanan et al. SC'21 §2.2.2; Megatron-LM
 *     forward_backward_pipelining_with_interleaving): stage s runs
 *     W = min(2(p−s−1) + (v−1)·p, m·v) warm-up chunk-forwards, then one
 *     forward, one backward; forward k runs chunk (k / p) mod v, backward k
 *     chunk v−1 − (k / p) mod v, on micro-batch (k / (p·v))·p + k mod p.  The
 *     peak holds W+1 (chunk, micro-batch) pairs (all m·v when W = m·v), spread
 *     over the chunks as the first W+1 forwards fall: on stage 0 chunk 0 holds
 *     2p−1, the others p, i.e. (1 + (p−1)/(p·v)) of the stage's layers' worth
 *     (docs/design.md, memory model), which is BMPipe's α.  (Megatron-Core
 *     runs every forward first when m = p, all_warmup_microbatches; we
 *     follow the general formula there too.)
 *   PipeDream (Narayanan et al. SOSP'19), asynchronous with weight stashing:
 *     activations as 1F1B; stage s keeps one weight version per in-flight
 *     micro-batch, the live weights plus min(p−s, m)−1 stashed copies.
 *   PipeDream-2BW (Narayanan et al. ICML'21): activations as 1F1B, two weight
 *     versions: one extra copy.
 *
 * FlashAttention, dropout probabilities and scatter/gather p2p reach this
 * model through the cost model's per-layer bytes alone: FlashAttention's
 * layer keeps the softmax statistics instead of the s×s core, which its
 * selective recompute frees and re-creates (a transient of those bytes); a
 * dropout of 0 keeps no mask; a scattered boundary tensor is all-gathered
 * into the full layer input the receiving stage keeps anyway.
 */
#include "memory.h"
#include "step_order.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BYTES_PER_GB 1e9

static int min_int(int a, int b) { return a < b ? a : b; }

static int interleaved_warmup(int p, int s, int m, int v)
{
    return min_int(sched_interleaved_warmup(p, s, v), m * v);
}

/* Pipeline stages process these many micro-batches at their activation peak
 * (non-interleaved schedules). */
static int inflight_stage(schedule_kind sched, int p, int s, int m)
{
    switch (sched) {
    case SCHED_GPIPE:
        return m;
    case SCHED_ZB_H1:
        return min_int(p, m); /* held until W */
    case SCHED_ZB_H2:
        return min_int(2 * p - 1, m); /* held until W */
    default:
        return min_int(p - s, m);
    }
}

double mem_inflight(schedule_kind sched, int p, int s, int m, int v, int chunk)
{
    if (p <= 0 || s < 0 || s >= p || m <= 0)
        return 0.0;
    if (sched != SCHED_INTERLEAVED || v <= 1)
        return chunk == 0 ? inflight_stage(sched, p, s, m) : 0.0;
    if (chunk < 0 || chunk >= v)
        return 0.0;
    int held = min_int(interleaved_warmup(p, s, m, v) + 1, m * v);
    int count = 0;
    for (int k = 0; k < held; k++)
        if (sched_step_at(p, v, k, true).chunk == chunk)
            count++;
    return count;
}

/* ---- the static bytes split ------------------------------------------- */

/* Bytes per parameter of the weight, its gradient and its optimizer state
 * (master weight and Adam moments) on one NPU with the model's sharding
 * level over `shards` replicas: the split costmodel_sharding.c sums (D,
 * R − D and S of cm_precision; bf16 by default 2, 4, 12), ZeRO-1 dividing S,
 * ZeRO-2 also the gradient, ZeRO-3 also the weight. */
static void state_per_param(const cm_model *cm, int shards, double *w, double *g, double *o)
{
    double n = shards > 0 ? shards : 1;
    cm_precision p = cm_model_precision(cm);
    double D = cm->weight_bytes_per_param, G = p.grad, S = cm_sharded_bytes(&p);
    *w = cm->sharding >= WL_SHARD_OPTIM_GRADS_PARAMS ? D / n : D;
    *g = cm->sharding >= WL_SHARD_OPTIM_GRADS ? G / n : G;
    *o = cm->sharding >= WL_SHARD_OPTIM ? S / n : S;
}

/* Per parameter: dense (d) and expert (e, sharded over dp / ep) weights,
 * gradients and optimizer state; computed once per stage. */
typedef struct state_split {
    bool synthetic, moe;
    double wd, gd, od, we, ge, oe;
} state_split;

static state_split state_split_of(const cm_model *cm)
{
    state_split sp = {.synthetic = !cm->has_source};
    if (sp.synthetic)
        return sp;
    int ep = cm->source.parallel.expert_model_parallel_size;
    ep = ep > 0 ? ep : 1;
    state_per_param(cm, cm->data_parallel, &sp.wd, &sp.gd, &sp.od);
    state_per_param(cm, cm->data_parallel / ep > 0 ? cm->data_parallel / ep : 1, &sp.we, &sp.ge,
                    &sp.oe);
    double bd = sp.wd + sp.gd + sp.od, be = sp.we + sp.ge + sp.oe;
    sp.moe = cm->source.model.num_experts > 0 && fabs(be - bd) > 1e-9 * bd;
    return sp;
}

static void split_layer(const cm_model *cm, const state_split *sp, int l, double *weights,
                        double *grads, double *optimizer)
{
    const cm_layer *ly = &cm->layers[l];
    double cache = ly->fp8_weight_cache_bytes; /* FP8 weights: weights, over the split */
    double state = ly->state_bytes - cache;
    if (sp->synthetic) {
        *weights = fmin(ly->params * cm->weight_bytes_per_param, state);
        *grads = 0.0;
        *optimizer = state - *weights;
        return;
    }
    /* A MoE layer's experts are sharded over dp / ep replicas: its state is
     * dense·(wd + gd + od) + expert·(we + ge + oe) with dense + expert its
     * params, which gives the experts' count (costmodel.c, cm_set_state). */
    double expert = 0.0, bd = sp->wd + sp->gd + sp->od, be = sp->we + sp->ge + sp->oe;
    if (sp->moe)
        expert = fmin(fmax((state - ly->params * bd) / (be - bd), 0.0), ly->params);
    double dense = ly->params - expert;
    *weights = dense * sp->wd + expert * sp->we;
    *grads = dense * sp->gd + expert * sp->ge;
    /* the rest, so that the three sum to state_bytes exactly */
    *optimizer = fmax(state - *weights - *grads, 0.0);
    *weights += cache;
}

void mem_layer_state(const cm_model *cm, int l, double *weights, double *grads, double *optimizer)
{
    state_split sp = state_split_of(cm);
    split_layer(cm, &sp, l, weights, grads, optimizer);
}

/* ---- per-chunk sums of the plan ------------------------------------------ */

typedef struct chunk_cost {
    double activation_bytes; /* kept under the plan's recompute */
    double activation_none;  /* kept with no recompute (Merak's skipped micro-batches) */
    double transient_bytes;  /* largest per-layer recompute working set */
    double state_bytes;
    double weight_bytes; /* one full weight copy (PipeDream's stashed versions) */
    double live_weight_bytes, grad_bytes, optimizer_bytes; /* state_bytes split */
    int layers;
} chunk_cost;

static void chunk_sum(const cm_model *cm, const state_split *sp, const plan *pl, int s, int chunk,
                      chunk_cost *out)
{
    int k = chunk * pl->num_stages + s;
    memset(out, 0, sizeof *out);
    for (int l = pl->chunk_start[k]; l < pl->chunk_start[k + 1]; l++) {
        const cm_layer *ly = &cm->layers[l];
        plan_layer_cost rc;
        plan_layer_recompute(pl, cm, l, false, &rc);
        out->activation_bytes += rc.activation_bytes;
        out->activation_none += ly->activation_bytes[RECOMPUTE_NONE];
        out->transient_bytes = fmax(out->transient_bytes, rc.transient_bytes);
        out->state_bytes += ly->state_bytes;
        out->weight_bytes += ly->params * cm->weight_bytes_per_param;
        double w, g, o;
        split_layer(cm, sp, l, &w, &g, &o);
        out->live_weight_bytes += w;
        out->grad_bytes += g;
        out->optimizer_bytes += o;
        out->layers++;
    }
}

/* ---- replay of the stage's forward / backward order ------------------- */

typedef struct replay {
    const cm_model *cm;
    const plan *pl;
    int s;
    const chunk_cost *chunks;
    double held, peak_held, peak_total;
    int count, peak_count; /* chunk forwards held now, and at the activation peak */
    /* With a per-chunk report: each chunk's bytes and forwards held now
     * (held_bytes, held_count), copied to snap at the activation peak. */
    double *held_bytes;
    int *held_count;
    mem_chunk *snap;
    int v;
} replay;

static double mb_scale(const replay *r, int mb)
{
    const plan *pl = r->pl;
    if (!pl->micro_batch_sizes || mb < 0 || mb >= pl->num_micro_batches ||
        r->cm->micro_batch_size <= 0)
        return 1.0;
    return (double)pl->micro_batch_sizes[mb] / r->cm->micro_batch_size;
}

static double kept_bytes(const replay *r, int chunk, int mb)
{
    const chunk_cost *c = &r->chunks[chunk];
    bool skip = sched_skips_recompute(r->pl, r->s, mb);
    return mb_scale(r, mb) * (skip ? c->activation_none : c->activation_bytes);
}

static void replay_forward(replay *r, int chunk, int mb)
{
    double kept = kept_bytes(r, chunk, mb);
    r->held += kept;
    r->count++;
    if (r->snap) {
        r->held_bytes[chunk] += kept;
        r->held_count[chunk]++;
    }
    /* the first moment of the peak; with nothing kept, the most forwards */
    if (r->held > r->peak_held || (r->held == r->peak_held && r->count > r->peak_count)) {
        r->peak_held = r->held;
        r->peak_count = r->count;
        for (int j = 0; r->snap && j < r->v; j++) {
            r->snap[j].activation_bytes = r->held_bytes[j];
            r->snap[j].inflight = r->held_count[j];
        }
    }
    r->peak_total = fmax(r->peak_total, r->held);
}

static void replay_backward(replay *r, int chunk, int mb)
{
    bool skip = sched_skips_recompute(r->pl, r->s, mb);
    double transient = skip ? 0.0 : mb_scale(r, mb) * r->chunks[chunk].transient_bytes;
    r->peak_total = fmax(r->peak_total, r->held + transient);
    double kept = kept_bytes(r, chunk, mb);
    r->held -= kept;
    r->count--;
    if (r->snap) {
        r->held_bytes[chunk] -= kept;
        r->held_count[chunk]--;
    }
}

/* Warm-up chunk-forwards, then one chunk-forward and one chunk-backward,
 * then the drain, over total chunk-steps in the schedules' order
 * (sched_step_at()): GPipe (warm-up m), 1F1B and its variants (warm-up
 * k − 1), interleaved (Megatron's warm-up, v chunks). */
static void replay_order(replay *r, int p, int v, int warmup, int total, bool reverse_backwards)
{
    int f = 0, b = 0;
    for (; f < warmup; f++) {
        sched_chunk_step c = sched_step_at(p, v, f, true);
        replay_forward(r, c.chunk, c.micro_batch);
    }
    for (; f < total; f++, b++) {
        sched_chunk_step c = sched_step_at(p, v, f, true);
        replay_forward(r, c.chunk, c.micro_batch);
        c = sched_step_at(p, v, b, false);
        replay_backward(r, c.chunk, c.micro_batch);
    }
    for (; b < total; b++) {
        /* GPipe drains its backwards last micro-batch first
         * (schedule_gpipe.c); it matters where they differ (Merak's shift). */
        sched_chunk_step c = sched_step_at(p, v, reverse_backwards ? total - 1 - b : b, false);
        replay_backward(r, c.chunk, c.micro_batch);
    }
}

/* Forwards before the first backward: GPipe runs all m, the 1F1B family
 * k − 1 so that the next forward brings the stage to its k in flight. */
static int flat_warmup(schedule_kind sched, int p, int s, int m)
{
    int k = inflight_stage(sched, p, s, m);
    return sched == SCHED_GPIPE ? k : k - 1;
}

double mem_stash_copies(schedule_kind sched, int p, int s, int m)
{
    if (sched == SCHED_PIPEDREAM)
        return inflight_stage(SCHED_1F1B, p, s, m) - 1;
    return sched == SCHED_PIPEDREAM_2BW ? 1.0 : 0.0;
}

/* ZeRO-2/3 with --dp-overlap (cm->zero_overlap; sim/engine/engine_overlap.c):
 * beyond the unsharded layer the cost model's workspace holds, one
 * reduce-scatter in flight keeps a chunk's unsharded gradients until it ends
 * (the worker waits for it before it hands over the next), and ZeRO-3's
 * prefetch holds the next pass's gathered parameters while the current pass
 * computes: the stage's largest chunk of each, reserved for the whole
 * iteration like the workspace (an upper bound by at most one micro-batch's
 * activations: the buffers are first needed after the first backward), so
 * that the engine's tracker, which starts from this workspace, has the same
 * peak.  The planners subtract the same reserve from the capacity
 * (mem_zero_overlap_layer_bytes() for one-chunk stages). */

double mem_zero_overlap_layer_bytes(const cm_model *cm, int l)
{
    if (!cm_zero_overlapped(cm) || l < 0 || l >= cm->num_layers)
        return 0.0;
    return cm->layers[l].zero_reduce_bytes + cm->layers[l].zero_gather_bytes;
}

double mem_zero_overlap_bytes(const cm_model *cm, const plan *pl, int s)
{
    if (!cm_zero_overlapped(cm) || s < 0 || s >= pl->num_stages)
        return 0.0;
    double reduce = 0.0, gather = 0.0;
    int v = pl->num_chunks > 0 ? pl->num_chunks : 1;
    for (int j = 0; j < v; j++) {
        int k = j * pl->num_stages + s;
        double r = 0.0, g = 0.0;
        for (int l = pl->chunk_start[k]; l < pl->chunk_start[k + 1]; l++)
            r += cm->layers[l].zero_reduce_bytes, g += cm->layers[l].zero_gather_bytes;
        reduce = fmax(reduce, r);
        gather = fmax(gather, g);
    }
    return reduce + gather;
}

void mem_stage_chunks(const cm_model *cm, const plan *pl, int s, mem_stage *out, mem_chunk *report)
{
    int p = pl->num_stages, m = pl->num_micro_batches;
    int v = pl->num_chunks > 0 ? pl->num_chunks : 1;
    chunk_cost *chunks = calloc((size_t)v, sizeof *chunks);
    double *held_bytes = report ? calloc((size_t)v, sizeof *held_bytes) : NULL;
    int *held_count = report ? calloc((size_t)v, sizeof *held_count) : NULL;
    memset(out, 0, sizeof *out);
    if (report)
        memset(report, 0, (size_t)v * sizeof *report);
    out->workspace_bytes = cm->workspace_bytes + mem_zero_overlap_bytes(cm, pl, s);
    out->capacity_bytes = cm->hbm_bytes;
    if (!chunks || (report && (!held_bytes || !held_count))) {
        free(chunks);
        free(held_bytes);
        free(held_count);
        return;
    }
    double weights = 0.0;
    state_split sp = state_split_of(cm);
    for (int j = 0; j < v; j++) {
        chunk_sum(cm, &sp, pl, s, j, &chunks[j]);
        out->static_bytes += chunks[j].state_bytes;
        out->weight_bytes += chunks[j].live_weight_bytes;
        out->grad_bytes += chunks[j].grad_bytes;
        out->optimizer_bytes += chunks[j].optimizer_bytes;
        weights += chunks[j].weight_bytes;
        if (report) {
            report[j].layers = chunks[j].layers;
            report[j].weight_bytes = chunks[j].live_weight_bytes;
            report[j].grad_bytes = chunks[j].grad_bytes;
            report[j].optimizer_bytes = chunks[j].optimizer_bytes;
        }
    }
    out->stash_bytes = mem_stash_copies(pl->schedule, p, s, m) * weights;
    out->static_bytes += out->stash_bytes;
    replay r = {cm, pl, s, chunks, 0.0, 0.0, 0.0, 0, 0, held_bytes, held_count, report, v};
    /* combined 1F1B (cm->moe_overlap): one forward more before the first
     * backward (interleaved's extra warm-up; without stages B(k) merged with
     * F(k+1)); the engine also holds the two merged ops' transients at once,
     * which this replay does not */
    int extra = cm->moe_overlap ? 1 : 0;
    if (pl->schedule == SCHED_INTERLEAVED && v > 1)
        replay_order(&r, p, v, min_int(interleaved_warmup(p, s, m, v) + extra, m * v), m * v,
                     false);
    else
        replay_order(&r, p, 1, min_int(flat_warmup(pl->schedule, p, s, m) + extra, m), m,
                     pl->schedule == SCHED_GPIPE);
    free(chunks);
    free(held_bytes);
    free(held_count);
    out->activation_bytes = r.peak_held;
    out->inflight = r.peak_count;
    out->transient_bytes = r.peak_total - r.peak_held;
    out->total_bytes =
        out->static_bytes + out->activation_bytes + out->transient_bytes + out->workspace_bytes;
}

void mem_stage_bytes(const cm_model *cm, const plan *pl, int s, mem_stage *out)
{
    mem_stage_chunks(cm, pl, s, out, NULL);
}

int mem_worst_stage(const cm_model *cm, const plan *pl, mem_stage *out)
{
    int worst = -1;
    memset(out, 0, sizeof *out);
    for (int s = 0; s < pl->num_stages; s++) {
        mem_stage st;
        mem_stage_bytes(cm, pl, s, &st);
        if (worst < 0 || st.total_bytes > out->total_bytes) {
            worst = s;
            *out = st;
        }
    }
    return worst;
}

/* ---- the fit check -------------------------------------------------------- */

int mem_describe_stage(char *buf, int size, int s, const mem_stage *st)
{
    char stash[64] = "";
    if (st->stash_bytes > 0)
        snprintf(stash, sizeof stash, " + stashed weights %.2f", st->stash_bytes / BYTES_PER_GB);
    return snprintf(buf, size,
                    "stage %d needs %.2f GB (weights %.2f%s + gradients %.2f + optimizer %.2f"
                    " + activations %.2f (%d in flight) + recompute %.2f"
                    " + workspace %.2f) but has %.2f GB: does not fit",
                    s, st->total_bytes / BYTES_PER_GB, st->weight_bytes / BYTES_PER_GB, stash,
                    st->grad_bytes / BYTES_PER_GB, st->optimizer_bytes / BYTES_PER_GB,
                    st->activation_bytes / BYTES_PER_GB, st->inflight,
                    st->transient_bytes / BYTES_PER_GB, st->workspace_bytes / BYTES_PER_GB,
                    st->capacity_bytes / BYTES_PER_GB);
}

int mem_check_fits(const cm_model *cm, const plan *pl, np_error *err)
{
    char text[sizeof err->text], line[320];
    /* room for "; and N more stages do not fit" and for simrun's words
     * around the text (the planner's name, how to simulate it anyway) */
    const int reserve = 128;
    int used = 0, failing = 0, listed = 0;
    text[0] = '\0';
    for (int s = 0; s < pl->num_stages; s++) {
        mem_stage st;
        mem_stage_bytes(cm, pl, s, &st);
        if (st.total_bytes <= st.capacity_bytes)
            continue;
        failing++;
        int n = mem_describe_stage(line, (int)sizeof line, s, &st);
        if (used + n + 2 >= (int)sizeof text - reserve)
            continue;
        used += snprintf(text + used, sizeof text - used, "%s%s", listed ? "; " : "", line);
        listed++;
    }
    if (!failing)
        return 0;
    if (listed < failing)
        snprintf(text + used, sizeof text - used, "; and %d more stages do not fit",
                 failing - listed);
    return np_error_set(err, NP_EXIT_NOFIT, pl->planner[0] ? pl->planner : "<plan>", "", 0, "%s",
                        text);
}
