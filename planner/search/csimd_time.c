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
 * the shipped platforms prediction and simulation agree to 1e-6.
 * Memory (GPipe keeps every micro-batch): static + (B/b0)*kept activations +
 * (max b_j / b0)*largest recompute transient + workspace <= HBM per stage,
 * a bound that is never below memory.c's replay, so plans always fit.
 */

#include <math.h>
#include <stdlib.h>

#include "csimd_internal.h"
#include "memory.h"
#include "predict.h"

/* GPipe iteration time of p stages and m micro-batches: forward_s[k*m + j],
 * backward_s[k*m + j], comm_s[k*m + j] (the tensor of micro-batch j across
 * boundary k, k < p-1, either way) and tail_s[k] after stage k's last
 * backward (NULL: none).  Sends block their stage until the tensor arrives. */
double csimd_gpipe_makespan_s(int p, int m, const double *forward_s, const double *backward_s,
                              const double *comm_s, const double *tail_s)
{
    double done[p], free_s[p]; /* last op's end; when the stage may go on */
    for (int k = 0; k < p; k++)
        done[k] = free_s[k] = 0.0;
    for (int j = 0; j < m; j++)
        for (int k = 0; k < p; k++) {
            double ready = k ? done[k - 1] + comm_s[(k - 1) * m + j] : 0.0;
            done[k] = fmax(ready, free_s[k]) + forward_s[k * m + j];
            free_s[k] = done[k] + (k + 1 < p ? comm_s[k * m + j] : 0.0);
        }
    for (int n = 0; n < m; n++) {
        int j = BACKWARD_REVERSED ? m - 1 - n : n;
        for (int k = p - 1; k >= 0; k--) {
            double ready = k + 1 < p ? done[k + 1] + comm_s[k * m + j] : 0.0;
            done[k] = fmax(ready, free_s[k]) + backward_s[k * m + j];
            free_s[k] = done[k] + (k ? comm_s[(k - 1) * m + j] : 0.0);
        }
    }
    double t = 0.0;
    for (int k = 0; k < p; k++)
        t = fmax(t, free_s[k] + (tail_s ? tail_s[k] : 0.0));
    return t;
}

void csimd_context_free(csimd_ctx *x)
{
    if (!x)
        return;
    if (x->rows)
        for (int b = 0; b <= x->samples; b++)
            if (x->rows[b]) {
                free(x->rows[b]->forward_prefix_s);
                free(x->rows[b]->backward_prefix_s);
                free(x->rows[b]->output_bytes);
                free(x->rows[b]);
            }
    free(x->rows);
    free(x->same_node);
    free(x->state_prefix);
    free(x->kept_prefix);
    free(x->transient);
    free(x->grad_prefix);
    free(x->fwd);
    free(x->bwd);
    free(x->comm);
    free(x->tail);
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
        x->grad_prefix[l + 1] = x->grad_prefix[l] + ly->grad_bytes;
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
    x->grad_prefix = calloc((size_t)L + 1, sizeof(double));
    x->transient = calloc((size_t)L, sizeof(double));
    x->rows = calloc((size_t)samples + 1, sizeof *x->rows);
    x->fwd = calloc((size_t)p * m, sizeof(double));
    x->bwd = calloc((size_t)p * m, sizeof(double));
    x->comm = calloc((size_t)p * m, sizeof(double));
    x->tail = calloc((size_t)p, sizeof(double));
    if (!x->same_node || !x->state_prefix || !x->kept_prefix || !x->grad_prefix || !x->transient ||
        !x->rows || !x->fwd || !x->bwd || !x->comm || !x->tail) {
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
        row->output_bytes = calloc((size_t)L, sizeof(double));
    }
    if (!row || !row->forward_prefix_s || !row->backward_prefix_s || !row->output_bytes) {
        if (row) {
            free(row->forward_prefix_s);
            free(row->backward_prefix_s);
            free(row->output_bytes);
            free(row);
        }
        x->failed = true;
        return NULL;
    }
    for (int l = 0; l < L; l++) {
        cm_layer at;
        cm_layer_at_batch(x->cm, l, b, &at);
        row->forward_prefix_s[l + 1] = row->forward_prefix_s[l] + cm_forward_total_s(&at);
        row->backward_prefix_s[l + 1] =
            row->backward_prefix_s[l] + cm_backward_total_s(&at, x->recompute);
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

/* Data-parallel gradient all-reduce and optimizer step after the last
 * backward of the stage holding layers [first, last). */
double csimd_stage_tail_s(const csimd_ctx *x, int first, int last)
{
    return cm_optimizer_step_s(x->cm, first, last) +
           predict_dp_sync_s(x->cm, x->c, x->cm->tensor_parallel > 0 ? x->cm->tensor_parallel : 1,
                             x->dp, first, last, x->grad_prefix[last] - x->grad_prefix[first]);
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
            if (k + 1 < p)
                x->comm[k * m + j] = cl_p2p_time(x->c, row->output_bytes[b - 1], x->same_node[k]);
        }
    }
    for (int k = 0; k < p; k++)
        x->tail[k] = csimd_stage_tail_s(x, start[k], start[k + 1]);
    return csimd_gpipe_makespan_s(p, m, x->fwd, x->bwd, x->comm, x->tail);
}
