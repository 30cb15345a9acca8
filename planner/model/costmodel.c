/*
 * costmodel.c -- per-layer time and memory of a model on one NPU.
 *
 * Design.  Every layer is priced operator by operator with the roofline
 *   t = max(FLOPs / (peak · efficiency), bytes / HBM bandwidth) + launch,
 * GEMMs at the cluster's matmul efficiency (or, when the platform gives a
 * gemm_efficiency_table, at the efficiency of their smallest dimension:
 * costmodel_efficiency.c), elementwise operators (norms, softmax, dropout,
 * activation, residual adds) with no FLOPs, i.e. purely on HBM bandwidth at
 * efficiency 1.  Sums of operators give the forward (F),
 * input-gradient (B) and weight-gradient (W) passes; tensor-parallel
 * collectives are kept apart (tp_forward_s, tp_backward_s) so the simulator
 * can put them on the scale-up fabric.
 *
 * This file is the core: the hardware primitives (roofline, ring
 * collectives), bytes per parameter, the shape of a job, model construction
 * and re-pricing at another micro-batch size, and the optimizer step.  The
 * layers themselves are priced beside it (costmodel_internal.h lists the
 * files): the Transformer in costmodel_transformer.c, layer-by-layer models
 * in costmodel_layers.c.
 *
 * Bytes per parameter (Megatron-LM docs, "Distributed Optimizer" table):
 *   bf16 params, fp32 grads: 18 non-distributed (2 weight + 4 fp32 grad +
 *   4 fp32 master + 8 Adam m, v), 6 + 12/dp distributed; fp16 params, fp16
 *   grads: 20, 4 + 16/dp; fp32: 16, 8 + 8/dp.  Gradients reduced over DP
 *   (grad_bytes): fp32 main grads, 4 bytes per parameter, for bf16 and fp32;
 *   2 for fp16 (Megatron's default fp16 grad buffer) and for bf16 with
 *   grad_reduce_in_bf16.  The precision-aware optimizer's dtypes:
 *   cm_precision_of() (costmodel.h, cm_precision).
 *
 * Workspace: 1 GiB for the runtime (device context, kernels, allocator
 * reserve) plus the collective buffers of the three communicators a rank
 * belongs to (TP, PP, DP), 2 × 200 MiB each (HCCL_BUFFSIZE default 200 MB,
 * an input and an output buffer): 2.17 GiB (2.33 GB) in all, under 4% of a
 * 64 GB NPU.  Allocator fragmentation is not modelled.
 */
#include "costmodel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costmodel_internal.h"
#include "np_sha256.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB (1024.0 * 1024.0)
#define RUNTIME_RESERVE_BYTES (1.0 * GIB)
#define COLLECTIVE_BUFFER_BYTES (200.0 * MIB)
#define COMMUNICATORS_PER_RANK 3
#define VOCAB_PAD_MULTIPLE 128

/* ---- hardware primitives ------------------------------------------------ */

double cm_roofline_s(const cl_cluster *c, double flops, double bytes, double efficiency)
{
    return cm_roofline_at_peak_s(c, c->peak_flops, flops, bytes, efficiency);
}

double cm_roofline_at_peak_s(const cl_cluster *c, double peak_flops, double flops, double bytes,
                             double efficiency)
{
    double compute_s = flops > 0 ? flops / (peak_flops * efficiency) : 0.0;
    double memory_s = bytes > 0 ? bytes / cm_hbm_bandwidth_Bps(c) : 0.0;
    return fmax(compute_s, memory_s) + c->kernel_launch_s;
}

/* A ring inside a server runs at the bus bandwidth NCCL-like libraries
 * reach on the scale-up fabric (collective_bus_efficiency of the link rate,
 * costmodel_efficiency.c); one wider than a server on the scale-out route. */
static void ring_link(const cl_cluster *c, int ranks, double *bw_Bps, double *latency_s)
{
    bool in_node = c->npus_per_node <= 0 || ranks <= c->npus_per_node;
    *bw_Bps = in_node ? c->scaleup_bandwidth_Bps * cm_bus_efficiency(c) : c->scaleout_bandwidth_Bps;
    *latency_s = in_node ? c->scaleup_latency_s : c->scaleout_latency_s;
}

double cm_ring_allgather_s(const cl_cluster *c, int ranks, double bytes)
{
    if (ranks <= 1 || bytes <= 0)
        return 0.0; /* nothing to move: the engine posts no collective */
    double bw, lat;
    ring_link(c, ranks, &bw, &lat);
    return (ranks - 1) * (lat + bytes / (ranks * bw));
}

double cm_ring_allreduce_s(const cl_cluster *c, int ranks, double bytes)
{
    return 2.0 * cm_ring_allgather_s(c, ranks, bytes);
}

double cm_boundary_s(const cl_cluster *c, const cm_layer *ly, int same_node)
{
    return cl_p2p_time(c, ly->output_bytes, same_node) + ly->recv_gather_s;
}

/* ---- bytes per parameter ---------------------------------------------- */

static double dtype_bytes(wl_dtype d) { return d == WL_FP32 ? 4.0 : 2.0; }

double cm_gather_bytes(const cm_precision *p) { return p->gather > 0 ? p->gather : p->weight; }

double cm_model_gather_bytes(const cm_model *m)
{
    return m->precision.gather > 0 ? m->precision.gather : m->weight_bytes_per_param;
}

void cm_precision_of(const wl_training *t, cm_precision *out)
{
    memset(out, 0, sizeof *out);
    out->weight = dtype_bytes(t->params_dtype);
    out->gather = t->fp8_param_gather ? 1.0 : out->weight;
    out->exp_avg = out->exp_avg_sq = FP32_BYTES;
    switch (t->params_dtype) {
    case WL_FP32: /* the weight is its own master, its gradient fp32 */
        out->grad = FP32_BYTES;
        return;
    case WL_FP16: /* fp16 gradients, copied to fp32 for the optimizer */
        out->grad = 2.0;
        out->main_grad = out->main_param = FP32_BYTES;
        return;
    default:
        break;
    }
    bool aware = t->use_precision_aware_optimizer;
    out->grad = t->grad_reduce_in_bf16 || (aware && t->main_grads_dtype == WL_STATE_BF16)
                    ? 2.0
                    : FP32_BYTES;
    out->main_param = FP32_BYTES;
    if (!aware)
        return;
    out->exp_avg = wl_state_dtype_bytes(t->exp_avg_dtype);
    out->exp_avg_sq = wl_state_dtype_bytes(t->exp_avg_sq_dtype);
    if (t->main_params_dtype != WL_STATE_FP32)
        out->main_param = wl_state_dtype_bytes(t->main_params_dtype);
    else if (t->store_param_remainders && !t->fp8_param_gather) { /* FP8 params: no bf16 half */
        out->main_param = 2.0; /* the low half; the bf16 weight is the high one */
        out->remainders = true;
    }
}

cm_precision cm_dtype_precision(wl_dtype d)
{
    wl_training t = {.params_dtype = d};
    cm_precision p;
    cm_precision_of(&t, &p);
    return p;
}

cm_precision cm_model_precision(const cm_model *m)
{
    return m && m->precision.weight > 0 ? m->precision : cm_dtype_precision(WL_BF16);
}

double cm_replicated_bytes(const cm_precision *p) { return p->weight + p->grad; }

double cm_sharded_bytes(const cm_precision *p)
{
    return p->main_param + p->main_grad + p->exp_avg + p->exp_avg_sq;
}

double cm_state_bytes_per_param(const cm_precision *p, bool distributed_optimizer, int dp)
{
    double sharded = cm_sharded_bytes(p);
    if (distributed_optimizer)
        sharded /= dp > 0 ? dp : 1;
    return cm_replicated_bytes(p) + sharded;
}

/* ---- shape of one job --------------------------------------------------- */

static double padded_vocab(long vocab, int t)
{
    double multiple = (double)VOCAB_PAD_MULTIPLE * t;
    return ceil((double)vocab / multiple) * multiple;
}

void cm_shape_init(shape *x, const wl_workload *w, const cl_cluster *c, int b)
{
    const wl_model *md = &w->model;
    memset(x, 0, sizeof *x);
    x->c = c;
    x->tp_c = c;
    if (c->tp_across_servers) { /* a ring across servers waits on its NIC hops */
        x->tp_view = *c;
        x->tp_view.npus_per_node = 1;
        x->tp_c = &x->tp_view;
    }
    x->w = w;
    x->t = w->parallel.tensor_model_parallel_size > 0 ? w->parallel.tensor_model_parallel_size : 1;
    x->pp =
        w->parallel.pipeline_model_parallel_size > 0 ? w->parallel.pipeline_model_parallel_size : 1;
    x->dp = w->parallel.data_parallel_size > 0 ? w->parallel.data_parallel_size : 1;
    x->ep = w->parallel.expert_model_parallel_size > 0 ? w->parallel.expert_model_parallel_size : 1;
    x->sp = w->training.sequence_parallel && x->t > 1;
    x->b = b;
    x->s = (double)md->seq_length;
    x->h = (double)md->hidden_size;
    x->a = md->num_attention_heads;
    x->g = md->num_query_groups > 0 ? md->num_query_groups : md->num_attention_heads;
    x->d = x->a > 0 ? x->h / x->a : 0;
    x->dqk = x->dv = x->d;
    cm_mla_shape(x, md);                /* multi-latent attention: costmodel_mla.c */
    x->f = (double)md->ffn_hidden_size; /* MoE layers: costmodel_moe.c */
    x->V = padded_vocab(md->vocab_size, x->t);
    x->n = x->b * x->s;
    x->nl = x->sp ? x->n / x->t : x->n;
    x->D = dtype_bytes(w->training.params_dtype);
    x->swiglu = md->swiglu;
    x->mlp_width = x->swiglu ? 2.0 * x->f : x->f;
    x->norm_params = x->swiglu ? x->h : 2.0 * x->h;
    x->flash = w->training.use_flash_attn;
    x->attention_dropout = md->attention_dropout > 0;
    x->hidden_dropout = md->hidden_dropout > 0;
    x->fused_elementwise = c->elementwise_fusion != 0;
    x->scatter_gather = w->training.scatter_gather_tensors_in_pipeline && !x->sp && x->t > 1;
    x->tp_overlap = w->training.tp_comm_overlap && x->sp;
    bool dist = w->training.use_distributed_optimizer;
    cm_precision_of(&w->training, &x->precision);
    x->state_bpp = cm_state_bytes_per_param(&x->precision, dist, x->dp);
    x->expert_state_bpp = x->state_bpp; /* over the expert-DP group: costmodel_parallel.c */
    cm_shape_parallel(x, w);            /* context parallelism, sharding: costmodel_parallel.c */
    cm_fp8_shape(x, w, c);              /* FP8 linear layers: costmodel_fp8.c */
}

/* GEMM [m×k]·[k×n], `count` times (batched): FLOPs 2mkn, bytes of the three
 * operands, at the matmul efficiency, or at the platform's efficiency for
 * its smallest dimension (costmodel_efficiency.c). */
double cm_gemm_s(const shape *x, double m, double k, double n, double count)
{
    double flops = 2.0 * m * k * n * count;
    double bytes = (m * k + k * n + m * n) * x->D * count;
    return cm_roofline_s(x->c, flops, bytes, cm_gemm_efficiency(x->c, m, k, n));
}

/* Elementwise operator that moves `bytes` through HBM. */
double cm_memop_s(const shape *x, double bytes) { return cm_roofline_s(x->c, 0.0, bytes, 1.0); }

void cm_set_state(cm_layer *ly, const shape *x, double dense_params, double expert_params)
{
    ly->params = dense_params + expert_params;
    ly->state_bytes = dense_params * x->state_bpp + expert_params * x->expert_state_bpp;
    ly->grad_bytes = ly->params * x->precision.grad;
}

void cm_add_unit(cm_layer *ly, const char *name, double forward_s, double bytes)
{
    cm_unit *u = &ly->units[ly->num_units++];
    snprintf(u->name, sizeof u->name, "%s", name);
    u->forward_s = forward_s;
    u->activation_bytes = bytes;
}

/* ---- build --------------------------------------------------------------- */

static double workspace_bytes(void)
{
    return RUNTIME_RESERVE_BYTES + COMMUNICATORS_PER_RANK * 2.0 * COLLECTIVE_BUFFER_BYTES;
}

int cm_build(const wl_workload *w, const cl_cluster *c, int micro_batch_size, cm_model *out,
             np_error *err)
{
    memset(out, 0, sizeof *out);
    int b = micro_batch_size > 0 ? micro_batch_size : w->training.micro_batch_size;
    if (b <= 0)
        return wl_key_error(err, NP_EXIT_INPUT, w, "training.micro_batch_size",
                            "expected a positive integer, got %d", b);
    shape x;
    cm_shape_init(&x, w, c, b);
    bool custom = w->model.num_layer_specs > 0;
    if (w->training.fp8_format != WL_FP8_NONE && custom)
        return wl_key_error(err, NP_EXIT_INPUT, w, "training.fp8_format",
                            "FP8 is modelled for the transformer of the model keys, not for "
                            "model.layers (their times are given)");
    if (w->training.fp8_format != WL_FP8_NONE && c->fp8_peak_flops <= 0)
        return wl_key_error(err, NP_EXIT_INPUT, w, "training.fp8_format",
                            "the platform %s gives no fp8_flops (the device's dense FP8 peak): "
                            "FP8 GEMMs cannot be priced on it",
                            c->name);
    int rc = custom ? 0 : cm_check_transformer(w, &x, err);
    if (rc)
        return rc;
    if ((custom ? cm_build_custom(out, w, &x) : cm_build_transformer(out, w, &x)) != 0)
        return np_error_set(err, NP_EXIT_INTERNAL, w->path, "", 0, "out of memory");
    out->micro_batch_size = b;
    out->tensor_parallel = x.t;
    out->data_parallel = x.dp;
    out->sequence_parallel = x.sp;
    out->distributed_optimizer = w->training.use_distributed_optimizer;
    out->moe_overlap = w->model.overlap_moe_expert_parallel_comm;
    out->overlap_p2p = w->training.overlap_p2p_comm;
    out->workspace_bytes = workspace_bytes();
    out->hbm_bytes = c->hbm_bytes;
    out->hbm_bandwidth_Bps = cm_hbm_bandwidth_Bps(c);
    out->kernel_launch_s = c->kernel_launch_s;
    out->weight_bytes_per_param = x.D;
    out->precision = x.precision;
    out->optimizer_bytes_per_param = cm_optimizer_bytes_per_param(&x.precision);
    out->has_source = true;
    out->source = *w;
    out->cluster = *c;
    cm_parallel_finish(out, &x);
    return 0;
}

/* A synthetic model has no formulas to re-run: every per-micro-batch
 * quantity scales by `scale`, the per-layer state does not. */
static void layer_scale(cm_layer *ly, double scale)
{
    ly->forward_s *= scale;
    ly->backward_s *= scale;
    ly->weight_grad_s *= scale;
    ly->tp_forward_s *= scale;
    ly->tp_backward_s *= scale;
    ly->tp_bytes *= scale;
    for (int r = 0; r < RECOMPUTE_COUNT; r++) {
        ly->recompute_s[r] *= scale;
        ly->activation_bytes[r] *= scale;
    }
    ly->forward_flops *= scale;
    ly->output_bytes *= scale;
    ly->recv_gather_s *= scale;
    for (int u = 0; u < ly->num_units; u++) {
        ly->units[u].forward_s *= scale;
        ly->units[u].activation_bytes *= scale;
    }
}

int cm_layer_at_batch(const cm_model *m, int layer, double b, cm_layer *out)
{
    if (layer < 0 || layer >= m->num_layers || !(b > 0))
        return -1;
    const wl_workload *w = &m->source;
    if (!m->has_source) {
        *out = m->layers[layer];
        layer_scale(out, m->micro_batch_size > 0 ? b / m->micro_batch_size : b);
        return 0;
    }
    shape x;
    cm_shape_init(&x, w, &m->cluster, 1);
    x.b = b;
    x.n = b * x.s;
    x.nl = x.sp ? x.n / x.t : x.n;
    memset(out, 0, sizeof *out);
    const wl_model *md = &w->model;
    if (md->num_layer_specs > 0) {
        const wl_layer_spec *sp = md->layer_specs;
        cm_custom_layer(out, &x, &sp[layer], sp[layer > 0 ? layer - 1 : 0].output_bytes);
    } else if (layer == 0) {
        cm_embedding_layer(out, &x);
    } else if (layer == m->num_layers - 1) {
        cm_lm_head_layer(out, &x, md->untie_embeddings_and_output_weights);
    } else {
        cm_decoder_layer(out, &x, md, layer - 1);
    }
    cm_parallel_layer(out, &x);
    return 0;
}

void cm_free(cm_model *m)
{
    free(m->layers);
    m->layers = NULL;
    m->num_layers = 0;
}

/* ---- totals ------------------------------------------------------------- */

double cm_forward_total_s(const cm_layer *l)
{
    return l->forward_s + l->tp_forward_s + cm_forward_extra_s(l);
}

double cm_backward_total_s(const cm_layer *l, recompute_kind r)
{
    return l->backward_s + l->weight_grad_s + l->recompute_s[r] + l->tp_backward_s +
           cm_backward_extra_s(l);
}

/* HBM traffic of one Adam step per parameter (Kingma & Ba; Megatron's fused
 * Adam over the main params): read the gradient, read and write the master
 * weight and both moments, write the half-precision weight; where the weight
 * is the master (fp32) or holds the master's high half (remainders) it is
 * read as well.  bf16 4 + 24 + 2 = 30, fp16 28, fp32 28.  Not counted: the
 * gradient's cast to fp32 and the gradient-norm pass. */
double cm_optimizer_bytes_per_param(const cm_precision *p)
{
    double state = p->main_param + p->exp_avg + p->exp_avg_sq;
    bool weight_read = p->main_param == 0 || p->remainders;
    return p->grad + 2.0 * state + p->weight * (weight_read ? 2.0 : 1.0);
}

/* Adam is memory-bound: bytes/param over the parameters this NPU updates,
 * i.e. 1/dp of them with the distributed optimizer, one launch per layer
 * (multi-tensor apply). */
double cm_optimizer_step_s(const cm_model *m, int first, int last)
{
    double params = 0.0;
    for (int l = first; l < last; l++)
        params += m->layers[l].params;
    if (m->distributed_optimizer && m->data_parallel > 1)
        params /= m->data_parallel;
    if (last <= first || m->hbm_bandwidth_Bps <= 0)
        return 0.0;
    return params * m->optimizer_bytes_per_param / m->hbm_bandwidth_Bps +
           (last - first) * m->kernel_launch_s;
}

/* ---- the fingerprint ------------------------------------------------------ */

static void hash_numbers(np_sha256 *h, const char *tag, const double *v, int n)
{
    char buf[40];
    np_sha256_update(h, tag, strlen(tag));
    for (int i = 0; i < n; i++) {
        int len = snprintf(buf, sizeof buf, " %.12g", v[i]); /* not the last bits: a build
                                                              * with other rounding agrees */
        np_sha256_update(h, buf, (size_t)len);
    }
    np_sha256_update(h, "\n", 1);
}

void cm_fingerprint(const cm_model *m, char hex[65])
{
    np_sha256 h;
    np_sha256_init(&h);
    const cl_cluster *c = &m->cluster;
    double model[] = {m->num_layers,
                      m->micro_batch_size,
                      m->tensor_parallel,
                      m->data_parallel,
                      m->context_parallel,
                      m->sharding,
                      m->sequence_parallel,
                      m->distributed_optimizer,
                      m->moe_overlap,
                      m->overlap_p2p,
                      m->zero_overlap,
                      m->dp_bucket_bytes,
                      m->workspace_bytes,
                      m->hbm_bytes,
                      m->hbm_bandwidth_Bps,
                      m->kernel_launch_s,
                      m->weight_bytes_per_param,
                      m->optimizer_bytes_per_param};
    hash_numbers(&h, "model", model, (int)(sizeof model / sizeof model[0]));
    double cluster[] = {c->num_npus,
                        c->npus_per_node,
                        c->peak_flops,
                        c->matmul_efficiency,
                        c->hbm_bytes,
                        c->hbm_bandwidth_Bps,
                        c->scaleup_bandwidth_Bps,
                        c->scaleup_latency_s,
                        c->scaleout_bandwidth_Bps,
                        c->scaleout_latency_s,
                        c->kernel_launch_s,
                        c->fabric_taper,
                        c->attention_efficiency,
                        c->elementwise_fusion,
                        c->collective_bus_efficiency,
                        c->hbm_efficiency,
                        c->tp_across_servers,
                        c->dp_ring_local,
                        c->dp_ring_tp};
    hash_numbers(&h, "cluster", cluster, (int)(sizeof cluster / sizeof cluster[0]));
    for (int l = 0; l < m->num_layers; l++) {
        const cm_layer *ly = &m->layers[l];
        np_sha256_update(&h, ly->name, strnlen(ly->name, sizeof ly->name));
        double v[] = {
            ly->kind,           ly->forward_s,       ly->backward_s,        ly->weight_grad_s,
            ly->tp_forward_s,   ly->tp_backward_s,   ly->tp_bytes,          ly->params,
            ly->state_bytes,    ly->grad_bytes,      ly->forward_flops,     ly->output_bytes,
            ly->recv_gather_s,  ly->num_units,       ly->zero_gather_bytes, ly->zero_reduce_bytes,
            ly->zero_forward_s, ly->zero_backward_s, cm_forward_total_s(ly)};
        hash_numbers(&h, " layer", v, (int)(sizeof v / sizeof v[0]));
        double r[2 * RECOMPUTE_COUNT];
        for (int k = 0; k < RECOMPUTE_COUNT; k++) {
            r[2 * k] = ly->recompute_s[k];
            r[2 * k + 1] = ly->activation_bytes[k];
        }
        hash_numbers(&h, " recompute", r, 2 * RECOMPUTE_COUNT);
        for (int u = 0; u < ly->num_units && u < CM_MAX_UNITS; u++) {
            double uv[] = {ly->units[u].forward_s, ly->units[u].activation_bytes};
            hash_numbers(&h, ly->units[u].name, uv, 2);
        }
        for (int k = 0; k < RECOMPUTE_COUNT; k++) {
            double b = cm_backward_total_s(ly, (recompute_kind)k);
            hash_numbers(&h, " backward", &b, 1);
        }
    }
    unsigned char digest[32];
    np_sha256_final(&h, digest);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", digest[i]);
}
