/*
 * csimd_time.c -- CSIMD's time model: the GPipe makespan recurrence, the
 * planning context with each layer's time at every micro-batch size t(b)
 * (tabulated on first use), and the predicted iteration time and memory
 * check of one plan, which every search of CSIMD and MBPP calls.
 *
 * Time model.  A stage's forward F_k(b) and backward B_k(b) are sums of its
 * layers' times at batch b, taken from cm_layer_at_batch(): the cost model's
 * roofline per operator or the workload's profiled table t(b) interpolated,
 * i.e. nonlinear in b (launches and weight reads do not shrink with b).  The
 * paper fits alpha*b^gamma + beta to profiled points; we can evaluate the
 * cost model at every integer b, so we tabulate instead of fitting.  The
 * boundary tensor of stage k costs C_k(b) = cl_p2p_time(output bytes at b),
 * on the scale-up fabric when every replica's two stages share a server
 * (Megatron's tp-dp-pp rank order, as the engine places them).  The TP
 * all-gather a receiver runs under scatter/gather p2p (cm_layer.recv_gather_s)
 * is not in C_k: CSIMD plans GPipe on models whose stages rarely use TP
 * without SP, and the simulation charges it anyway.  The paper's
 * recurrence, micro-batch j on stage k,
 *   E[k][j] = max(E[k-1][j] + C_{k-1}(b_j), E[k][j-1]) + F_k(b_j),
 * treats a transfer as a delay.  Our engine's sends block the sender until
 * the tensor arrives (as Megatron's p2p calls do), so a stage may go on only
 * after its send too:
 *   E[k][j] = max(E[k-1][j] + C_{k-1}(b_j), E[k][j-1] + C_k(b_{j-1})) + F_k(b_j)
 * (C_{p-1} = 0).  Backward, mirrored: stage k starts once its forwards and
 * their sends are done, micro-batches in schedule_gpipe.c's order (last
 * first, BACKWARD_REVERSED), gradients from stage k+1, sends to stage k-1.
 * T = max over k of the stage's last send + its data-parallel all-reduce
 * (ring) + optimizer step.  This is exactly what the simulator replays: on
 * the shipped platforms prediction and simulation agree to 1e-6.  ZeRO-2/3's
 * collectives enter as the engine runs them (csimd_gpipe_makespan_s): a
 * blocking reduce-scatter after the backward's send, off the chain; with
 * --dp-overlap, gathers and reduce-scatters on streams of their own (ZeRO-2's
 * gather of the update at the iteration's start is the 1F1B estimate,
 * predict_zero_update_exposed_s()).
 * Memory (GPipe keeps every micro-batch): static + (B/b0)*kept activations +
 * (max b_j / b0)*largest recompute transient + workspace <= HBM per stage,
 * a bound that is never below memory.c's replay, so plans always fit.
 */

#include <math.h>
#include <stdlib.h>

#include "csimd_internal.h"
#include "memory.h"
#include "predict.h"

/* One stage's clock in the recurrence below: its last op's end, when it
 * may go on, when the gather its next pass waits for ends, when its last
 * reduce-scatter ends, and when its network port is free (the gathers and
 * reduce-scatters share it, in the order they are launched). */
typedef struct stage_clock {
    double done, free, gathered, reduced, port;
} stage_clock;

/* A pass of the stage, its input ready at `ready`: when it starts.  With
 * the gathers overlapped the next pass's gather is launched as the compute
 * op before it starts: lag_s (its recompute) into this pass. */
static double pass_start(stage_clock *c, double ready, double gather_s, double lag_s, bool last)
{
    double at = fmax(ready, c->free);
    if (gather_s > 0) {
        at = fmax(at, c->gathered);
        if (!last)
            c->gathered = c->port = fmax(at + lag_s, c->port) + gather_s;
    }
    return at;
}

/* GPipe iteration time of p stages and m micro-batches: forward_s[k*m + j],
 * backward_s[k*m + j], comm_s[k*m + j] (the tensor of micro-batch j across
 * boundary k, k < p-1, either way) and tail_s[k] after stage k's last
 * backward (NULL: none).  Sends block their stage until the tensor arrives.
 * zero (NULL: none) adds ZeRO-2/3's collectives per stage, as the engine
 * runs them (schedule_parallel.c, engine_overlap.c): after_s[k], blocking,
 * holds the stage after each backward's send; with --dp-overlap,
 * gather_s[k] runs before every pass on a gather stream, launched when the
 * stage's previous compute op starts (the first at once; a backward pass
 * is its recompute, recompute_s[k*m + j], then the backward op), and
 * reduce_s[k] after each backward's send on a reduce-scatter stream, the
 * stage going on once the previous one has ended; the tail waits for the
 * last. */
double csimd_gpipe_makespan_s(int p, int m, const double *forward_s, const double *backward_s,
                              const double *comm_s, const csimd_zero *zero, const double *tail_s)
{
    static const csimd_zero none = {0};
    const csimd_zero *z = zero ? zero : &none;
    stage_clock clk[p];
    for (int k = 0; k < p; k++) {
        double first_gather = z->gather_s ? z->gather_s[k] : 0.0; /* launched at once */
        clk[k] = (stage_clock){.gathered = first_gather, .port = first_gather};
    }
    for (int j = 0; j < m; j++)
        for (int k = 0; k < p; k++) {
            stage_clock *c = &clk[k];
            double ready = k ? clk[k - 1].done + comm_s[(k - 1) * m + j] : 0.0;
            c->done = pass_start(c, ready, z->gather_s ? z->gather_s[k] : 0.0, 0.0, false) +
                      forward_s[k * m + j];
            c->free = c->done + (k + 1 < p ? comm_s[k * m + j] : 0.0);
        }
    for (int n = 0; n < m; n++) {
        int j = BACKWARD_REVERSED ? m - 1 - n : n;
        for (int k = p - 1; k >= 0; k--) {
            stage_clock *c = &clk[k];
            double ready = k + 1 < p ? clk[k + 1].done + comm_s[k * m + j] : 0.0;
            double lag = z->recompute_s ? z->recompute_s[k * m + j] : 0.0;
            c->done = pass_start(c, ready, z->gather_s ? z->gather_s[k] : 0.0, lag, n == m - 1) +
                      backward_s[k * m + j];
            c->free =
                c->done + (k ? comm_s[(k - 1) * m + j] : 0.0) + (z->after_s ? z->after_s[k] : 0.0);
            if (z->reduce_s) { /* after the previous reduce-scatter ends */
                c->free = fmax(c->free, c->reduced);
                c->reduced = c->port = fmax(c->free, c->port) + z->reduce_s[k];
            }
        }
    }
    double t = 0.0;
    for (int k = 0; k < p; k++)
        t = fmax(t, fmax(clk[k].free, clk[k].reduced) + (tail_s ? tail_s[k] : 0.0));
    return t;
}

static void row_free(csimd_row *row)
{
    if (!row)
        return;
    free(row->forward_prefix_s);
    free(row->backward_prefix_s);
    free(row->recompute_prefix_s);
    free(row->output_bytes);
    free(row);
}

void csimd_context_free(csimd_ctx *x)
{
    if (!x)
        return;
    if (x->rows)
        for (int b = 0; b <= x->samples; b++)
            row_free(x->rows[b]);
    free(x->rows);
    free(x->same_node);
    free(x->state_prefix);
    free(x->kept_prefix);
    free(x->transient);
    free(x->fwd);
    free(x->bwd);
    free(x->comm);
    free(x->rec);
    free(x->tail);
    free(x->after);
    free(x->gather);
    free(x->reduce);
    free(x->reduce_prefix);
    free(x);
}

static void context_fill_layers(csimd_ctx *x)
{
    const cm_model *cm = x->cm;
    double per_sample = 1.0 / cm->micro_batch_size;
    for (int l = 0; l < x->num_layers; l++) {
        const cm_layer *ly = &cm->layers[l];
        x->state_prefix[l + 1] =
            x->state_prefix[l] + ly->state_bytes + mem_zero_overlap_layer_bytes(x->cm, l);
        x->kept_prefix[l + 1] = x->kept_prefix[l] + ly->activation_bytes[x->recompute] * per_sample;
        x->reduce_prefix[l + 1] = x->reduce_prefix[l] + predict_zero_reduce_s(cm, l, l + 1);
        double all = ly->activation_bytes[RECOMPUTE_NONE];
        x->transient[l] = (all - ly->activation_bytes[x->recompute]) * per_sample;
    }
}

/* A planning context for p stages of the cost model, the workload's batch
 * and micro-batch count, every layer under recompute option r. */
int csimd_context_new(const cm_model *cm, const cl_cluster *c, int p, int dp, int samples, int m,
                      recompute_kind r, csimd_ctx **out)
{
    *out = NULL;
    if (p < 1 || m < 1 || samples < m || samples > CSIMD_MAX_SAMPLES || cm->num_layers < p ||
        cm->micro_batch_size < 1)
        return -1;
    csimd_ctx *x = calloc(1, sizeof *x);
    if (!x)
        return -1;
    *x = (csimd_ctx){.cm = cm,
                     .c = c,
                     .p = p,
                     .m = m,
                     .num_layers = cm->num_layers,
                     .samples = samples,
                     .dp = dp > 0 ? dp : 1,
                     .recompute = r};
    int L = cm->num_layers;
    x->same_node = calloc((size_t)p, sizeof *x->same_node);
    x->state_prefix = calloc((size_t)L + 1, sizeof(double));
    x->kept_prefix = calloc((size_t)L + 1, sizeof(double));
    x->transient = calloc((size_t)L, sizeof(double));
    x->rows = calloc((size_t)samples + 1, sizeof *x->rows);
    x->fwd = calloc((size_t)p * m, sizeof(double));
    x->bwd = calloc((size_t)p * m, sizeof(double));
    x->comm = calloc((size_t)p * m, sizeof(double));
    x->rec = calloc((size_t)p * m, sizeof(double));
    x->tail = calloc((size_t)p, sizeof(double));
    x->after = calloc((size_t)p, sizeof(double));
    x->gather = calloc((size_t)p, sizeof(double));
    x->reduce = calloc((size_t)p, sizeof(double));
    x->reduce_prefix = calloc((size_t)L + 1, sizeof(double));
    x->zero_overlapped = cm_zero_overlapped(cm);
    if (!x->same_node || !x->state_prefix || !x->kept_prefix || !x->transient || !x->rows ||
        !x->fwd || !x->bwd || !x->comm || !x->rec || !x->tail || !x->after || !x->gather ||
        !x->reduce || !x->reduce_prefix) {
        csimd_context_free(x);
        return -1;
    }
    int tp_cp = (cm->tensor_parallel > 0 ? cm->tensor_parallel : 1) *
                (cm->context_parallel > 1 ? cm->context_parallel : 1);
    for (int k = 0; k + 1 < p; k++)
        x->same_node[k] = predict_boundary_same_node(c, tp_cp, x->dp, k);
    context_fill_layers(x);
    *out = x;
    return 0;
}

/* Every layer at batch b, computed on first use. */
const csimd_row *csimd_context_row(csimd_ctx *x, int b)
{
    if (x->rows[b])
        return x->rows[b];
    int L = x->num_layers;
    csimd_row *row = calloc(1, sizeof *row);
    if (row) {
        row->forward_prefix_s = calloc((size_t)L + 1, sizeof(double));
        row->backward_prefix_s = calloc((size_t)L + 1, sizeof(double));
        row->recompute_prefix_s = calloc((size_t)L + 1, sizeof(double));
        row->output_bytes = calloc((size_t)L, sizeof(double));
    }
    if (!row || !row->forward_prefix_s || !row->backward_prefix_s || !row->recompute_prefix_s ||
        !row->output_bytes) {
        row_free(row);
        x->failed = true;
        return NULL;
    }
    for (int l = 0; l < L; l++) {
        cm_layer at;
        cm_layer_at_batch(x->cm, l, b, &at);
        /* ZeRO-2/3: the row holds what the pipeline's chain waits for; the
         * blocking reduce-scatters follow the send (reduce_prefix), the
         * overlapped collectives run on streams of their own */
        double zero_f = x->zero_overlapped ? at.zero_forward_s : 0.0;
        double zero_b =
            x->zero_overlapped ? at.zero_backward_s : x->reduce_prefix[l + 1] - x->reduce_prefix[l];
        row->forward_prefix_s[l + 1] = row->forward_prefix_s[l] + cm_forward_total_s(&at) - zero_f;
        row->backward_prefix_s[l + 1] =
            row->backward_prefix_s[l] + cm_backward_total_s(&at, x->recompute) - zero_b;
        row->recompute_prefix_s[l + 1] = row->recompute_prefix_s[l] + at.recompute_s[x->recompute];
        row->output_bytes[l] = at.output_bytes;
    }
    x->rows[b] = row;
    return row;
}

bool csimd_stage_fits(const csimd_ctx *x, int first, int last, int max_b)
{
    double transient = 0.0;
    for (int l = first; l < last; l++)
        transient = fmax(transient, x->transient[l]);
    double bytes = x->state_prefix[last] - x->state_prefix[first] +
                   x->samples * (x->kept_prefix[last] - x->kept_prefix[first]) + max_b * transient +
                   x->cm->workspace_bytes;
    return bytes <= x->cm->hbm_bytes;
}

int csimd_max_size(const int *sizes, int m)
{
    int b = 0;
    for (int j = 0; j < m; j++)
        b = sizes[j] > b ? sizes[j] : b;
    return b;
}

static bool plan_fits(const csimd_ctx *x, const int *start, const int *sizes)
{
    int max_b = csimd_max_size(sizes, x->m);
    for (int k = 0; k < x->p; k++)
        if (!csimd_stage_fits(x, start[k], start[k + 1], max_b))
            return false;
    return true;
}

/* A plan view of p stages cut at start[p + 1], for the 1F1B prediction's
 * pieces (predict.h) */
static plan stage_plan(const csimd_ctx *x, int p, int *start)
{
    return (plan){.num_stages = p,
                  .num_chunks = 1,
                  .chunk_start = start,
                  .tensor_parallel = x->cm->tensor_parallel > 0 ? x->cm->tensor_parallel : 1,
                  .data_parallel = x->dp};
}

double csimd_stage_reduce_s(const csimd_ctx *x, int first, int last)
{
    return x->reduce_prefix[last] - x->reduce_prefix[first];
}

/* What follows the last reduce-scatter of the stage holding layers
 * [first, last) (the recurrence runs it, blocking or overlapped): its
 * data-parallel sync and optimizer step (predict_stage_end_s()). */
double csimd_stage_tail_s(const csimd_ctx *x, int first, int last)
{
    int range[2] = {first, last};
    plan pl = stage_plan(x, 1, range);
    return predict_stage_end_s(x->cm, x->c, &pl, first, last);
}

/* Predicted iteration time of cuts `start` [p + 1] and sizes [m]; INFINITY
 * when a stage does not fit in memory. */
double csimd_predict_s(csimd_ctx *x, const int *start, const int *sizes)
{
    if (!plan_fits(x, start, sizes))
        return INFINITY;
    int p = x->p, m = x->m;
    for (int j = 0; j < m; j++) {
        const csimd_row *row = csimd_context_row(x, sizes[j]);
        if (!row)
            return INFINITY;
        for (int k = 0; k < p; k++) {
            int a = start[k], b = start[k + 1];
            x->fwd[k * m + j] = row->forward_prefix_s[b] - row->forward_prefix_s[a];
            x->bwd[k * m + j] = row->backward_prefix_s[b] - row->backward_prefix_s[a];
            x->rec[k * m + j] = row->recompute_prefix_s[b] - row->recompute_prefix_s[a];
            if (k + 1 < p)
                x->comm[k * m + j] = cl_p2p_time(x->c, row->output_bytes[b - 1], x->same_node[k]);
        }
    }
    for (int k = 0; k < p; k++) {
        int a = start[k], b = start[k + 1];
        double reduce = csimd_stage_reduce_s(x, a, b);
        x->tail[k] = csimd_stage_tail_s(x, a, b);
        x->after[k] = x->zero_overlapped ? 0.0 : reduce;
        x->reduce[k] = x->zero_overlapped ? reduce : 0.0;
        x->gather[k] = predict_zero_stream_s(x->cm, a, b, PREDICT_ZERO_GATHER);
    }
    /* overlapped ZeRO-2: what the first forwards do not hide of the gather
     * of the update delays the pipeline's fill (predict.c) */
    plan pl = stage_plan(x, p, (int *)start);
    x->fwd[0] += predict_zero_update_exposed_s(x->cm, x->c, &pl, PREDICT_SENDS_RANK_ORDER);
    csimd_zero zero = {x->after, x->gather, x->reduce, x->rec};
    return csimd_gpipe_makespan_s(p, m, x->fwd, x->bwd, x->comm, &zero, x->tail);
}
