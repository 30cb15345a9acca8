/*
 * costmodel.c -- per-layer time and memory of a model on one NPU.
 *
 * Design.  Every layer is priced operator by operator with the roofline
 *   t = max(FLOPs / (peak · efficiency), bytes / HBM bandwidth) + launch,
 * GEMMs at the cluster's matmul efficiency, elementwise operators (norms,
 * softmax, dropout, activation, residual adds) with no FLOPs, i.e. purely on
 * HBM bandwidth at efficiency 1.  Sums of operators give the forward (F),
 * input-gradient (B) and weight-gradient (W) passes; tensor-parallel
 * collectives are kept apart (tp_forward_s, tp_backward_s) so the simulator
 * can put them on the scale-up fabric.
 *
 * Notation: b micro-batch, s sequence, h hidden, a heads, g query groups,
 * d = h/a head size, f ffn hidden, V (padded) vocabulary, t tensor parallel,
 * D bytes of the training dtype, n = b·s tokens, n_l = n/t with sequence
 * parallelism (SP) else n: the tokens an elementwise op outside the
 * tensor-parallel regions touches on one rank.
 *
 * Decoder layer FLOPs, forward, per rank (Narayanan et al. SC'21, eq. in
 * section 5.1: 24bsh² + 4bs²h for MHA, ffn = 4h, GeLU):
 *   QKV 2nh(h + 2gd)/t (GQA: K and V have g·d columns), scores QKᵀ 2bs²h/t,
 *   AV 2bs²h/t (both counted fully, as Megatron's FLOP count does),
 *   output projection 2nh²/t, MLP 2·2nhf/t (GeLU) or 3·2nhf/t (SwiGLU).
 * Backward: B repeats every GEMM once (input gradient) and the attention core
 * twice (both operands of QKᵀ and AV need gradients, there is no weight);
 * W repeats the weighted GEMMs once.  So B + W = 2F in FLOPs (the usual
 * "backward = 2× forward").  Elementwise backward ops read the saved tensor
 * and the output gradient and write the input gradient (3 tensors where the
 * forward moved 2).
 *
 * Activations (Korthikanti et al. 2022, section 4.1 and Table 2; 16-bit
 * activations, 1-byte dropout masks).  The decoder's kept tensors are split
 * into AdaPipe-style units, each with the bytes it keeps and the forward time
 * that regenerates it from the tensors before it:
 *   layer input (always kept, not a unit)    n_l·h·D         Korthikanti: 2sbh (LN1 input)
 *   qkv_input   LN1 output, input of QKV     n_l·h·D                      2sbh
 *   qkv         Q, K, V                      n(h+2gd)/t·D                 6sbh/t (MHA)
 *   core_attn   softmax out, dropout mask,   b(a/t)s²(2D+1)               5as²b/t
 *               dropout out
 *   proj_input  AV output (context)          n·h/t·D                      2sbh/t
 *   attn_mask   dropout mask after proj      n_l·h                        sbh
 *   ln2_input   residual sum                 n_l·h·D                      2sbh
 *   fc1_input   LN2 output                   n_l·h·D                      2sbh
 *   fc1_output  activation input             n·f(·2 SwiGLU)/t·D           8sbh/t (f=4h)
 *   fc2_input   activation output            n·f/t·D                      8sbh/t
 *   mlp_mask    dropout mask after FC2       n_l·h                        sbh
 * which sums to sbh(34 + 5as/h) with t = 1, sbh(10 + 24/t + 5as/(ht)) with TP,
 * sbh/t·(34 + 5as/h) with TP+SP: Table 2 exactly, and generalises to GQA,
 * SwiGLU, other ffn sizes and fp32 (D = 4).  Selective recompute drops
 * core_attn (Table 2 rows "selective"); full recompute keeps the layer input
 * only, 2sbh, or 2sbh/t with SP where Megatron's checkpoint input is the
 * sequence-sharded hidden state (Table 2 prints 2sbh, the no-SP case).
 * Dropout is always modelled (Megatron's default p = 0.1 and Korthikanti's
 * accounting); Llama recipes set it to 0, which would save 2 bytes·sbh/t of
 * masks: a known, small overestimate.
 *
 * Recompute time: selective = the attention core forward (QKᵀ, softmax,
 * dropout, AV: what Megatron's checkpointed core attention re-runs); full =
 * the whole forward including its TP collectives.
 *
 * TP collectives (Megatron-LM, Shoeybi et al. 2019; Korthikanti section 4.2.2):
 * without SP two all-reduces in forward (after attention and after the MLP)
 * and two in backward, each of n·h·D bytes; with SP each all-reduce becomes an
 * all-gather plus a reduce-scatter of the same tensor, each half the ring
 * all-reduce time, so the totals are equal.  Ring on the scale-up fabric:
 * all-reduce 2(t−1)(α + S/(t·B)), all-gather or reduce-scatter (t−1)(α + S/(t·B))
 * (DESIGN.md); t = 1 costs nothing.  A TP group wider than a node runs on the
 * scale-out fabric.
 *
 * Parameters per NPU: decoder QKV h(h+2gd), projection h², MLP 2hf (3hf
 * SwiGLU), split over t; the two norms (h weights for RMSNorm, which we
 * assume with SwiGLU, Llama style; 2h for LayerNorm otherwise) are replicated
 * on every TP rank as in Megatron.  No linear biases (Llama; GPT-3's are 0.1%
 * of its parameters).  The vocabulary is padded as Megatron does
 * (make_vocab_size_divisible_by = 128, times t).  Embedding V·h/t; LM head
 * V·h/t when untied; when tied, Megatron keeps a copy of the word embeddings
 * on the last stage when pp > 1 (and all-reduces its gradient with the first
 * stage), so the LM head holds V·h/t then too, and 0 only when pp = 1.
 * Position embeddings are not modelled (RoPE).
 *
 * Bytes per parameter (Megatron-LM docs, "Distributed Optimizer" table):
 *   bf16 params, fp32 grads: 18 non-distributed (2 weight + 4 fp32 grad +
 *   4 fp32 master + 8 Adam m, v), 6 + 12/dp distributed; fp16 params, fp16
 *   grads: 20, 4 + 16/dp; fp32: 16, 8 + 8/dp.  Gradients reduced over DP
 *   (grad_bytes): fp32 main grads, 4 bytes per parameter, for bf16 and fp32;
 *   2 for fp16 (Megatron's default fp16 grad buffer).
 *
 * Output to the next stage: n·h·D per TP rank without SP (Megatron sends the
 * full hidden state from every rank), n·h·D/t with SP (the state is
 * sequence-sharded).
 *
 * Workspace: 1 GiB for the runtime (device context, kernels, allocator
 * reserve) plus the collective buffers of the three communicators a rank
 * belongs to (TP, PP, DP), 2 × 200 MiB each (HCCL_BUFFSIZE default 200 MB,
 * an input and an output buffer): 2.17 GiB (2.33 GB) in all, under 4% of a
 * 64 GB NPU.  Allocator fragmentation is not modelled.
 *
 * Layer-by-layer models (workload model.layers): the spec is the layer as one
 * NPU runs it (no TP split).  Without a time table, forward = roofline of
 * b·FLOPs against reading the weights and writing b·activation bytes; B = F;
 * W = F for layers with parameters, else 0.  With a table, forward and
 * backward are interpolated linearly in b (extrapolated from the end
 * segments), the backward split evenly into B and W when the layer has
 * parameters.  Selective recompute means nothing there (no attention core):
 * it keeps everything, like none; full keeps the layer input, i.e. the
 * previous layer's output (the first layer: its own output, a proxy for the
 * sample), never more than none keeps, and re-runs the forward.
 *
 * MoE (first-order): each token runs topk experts of moe_ffn_hidden_size, so
 * MLP FLOPs and activations are those of a dense MLP of topk·ffn; expert
 * weights are split over expert and tensor parallelism and their optimizer
 * state sharded over dp/ep.  The router GEMM, the capacity factor and the
 * all-to-all are left to the schedule (OP_ALLTOALL).
 */
#include "costmodel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB (1024.0 * 1024.0)
#define RUNTIME_RESERVE_BYTES (1.0 * GIB)
#define COLLECTIVE_BUFFER_BYTES (200.0 * MIB)
#define COMMUNICATORS_PER_RANK 3
#define VOCAB_PAD_MULTIPLE 128
#define TOKEN_ID_BYTES 8.0 /* int64 ids the embedding keeps for its backward */
#define FP32_BYTES 4.0
#define UNIT_CORE_ATTENTION 2 /* index of core_attention in decoder_units() */

/* ---- hardware primitives ------------------------------------------------ */

double cm_roofline_s(const cl_cluster *c, double flops, double bytes, double efficiency)
{
    double compute_s = flops > 0 ? flops / (c->peak_flops * efficiency) : 0.0;
    double memory_s = bytes > 0 ? bytes / c->hbm_bandwidth_Bps : 0.0;
    return fmax(compute_s, memory_s) + c->kernel_launch_s;
}

static void ring_link(const cl_cluster *c, int ranks, double *bw_Bps, double *latency_s)
{
    bool in_node = c->npus_per_node <= 0 || ranks <= c->npus_per_node;
    *bw_Bps = in_node ? c->scaleup_bandwidth_Bps : c->scaleout_bandwidth_Bps;
    *latency_s = in_node ? c->scaleup_latency_s : c->scaleout_latency_s;
}

double cm_ring_allgather_s(const cl_cluster *c, int ranks, double bytes)
{
    if (ranks <= 1)
        return 0.0;
    double bw, lat;
    ring_link(c, ranks, &bw, &lat);
    return (ranks - 1) * (lat + bytes / (ranks * bw));
}

double cm_ring_allreduce_s(const cl_cluster *c, int ranks, double bytes)
{
    return 2.0 * cm_ring_allgather_s(c, ranks, bytes);
}

/* ---- bytes per parameter ---------------------------------------------- */

static double dtype_bytes(wl_dtype d) { return d == WL_FP32 ? 4.0 : 2.0; }

double cm_state_bytes_per_param(wl_dtype d, bool distributed_optimizer, int dp)
{
    double replicated, sharded; /* Megatron docs' table: replicated + sharded/dp */
    switch (d) {
    case WL_FP16:
        replicated = 4, sharded = 16;
        break;
    case WL_FP32:
        replicated = 8, sharded = 8;
        break;
    default:
        replicated = 6, sharded = 12;
        break;
    }
    if (!distributed_optimizer)
        return replicated + sharded;
    return replicated + sharded / (dp > 0 ? dp : 1);
}

double cm_grad_bytes_per_param(wl_dtype d) { return d == WL_FP16 ? 2.0 : 4.0; }

/* ---- Korthikanti Table 2 ---------------------------------------------- */

double cm_korthikanti_activation_bytes(double s, double b, double h, double a, int t,
                                       bool sequence_parallel, recompute_kind r)
{
    double sbh = s * b * h, attn = 5.0 * a * s / h;
    if (t < 1)
        t = 1;
    if (r == RECOMPUTE_FULL)
        return 2.0 * sbh / (sequence_parallel ? t : 1);
    if (r == RECOMPUTE_SELECTIVE)
        attn = 0.0;
    if (sequence_parallel)
        return sbh / t * (34.0 + attn);
    return sbh * (10.0 + 24.0 / t + attn / t);
}

/* ---- shape of one job --------------------------------------------------- */

typedef struct shape {
    const cl_cluster *c;
    double b, s, h, a, g, d, f, V;
    double n, nl; /* tokens; tokens of an elementwise op on one rank */
    double D;     /* activation / weight bytes */
    int t, pp, dp, ep;
    bool sp, swiglu;
    double mlp_width;   /* columns of FC1 per token: f, 2f with SwiGLU */
    double norm_params; /* per norm: h (RMSNorm) or 2h (LayerNorm) */
    double state_bpp, grad_bpp, expert_state_bpp;
} shape;

static double padded_vocab(long vocab, int t)
{
    double multiple = (double)VOCAB_PAD_MULTIPLE * t;
    return ceil((double)vocab / multiple) * multiple;
}

static void shape_init(shape *x, const wl_workload *w, const cl_cluster *c, int b)
{
    const wl_model *md = &w->model;
    memset(x, 0, sizeof *x);
    x->c = c;
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
    x->f = (double)md->ffn_hidden_size;
    if (md->num_experts > 0)
        x->f = md->moe_router_topk * (double)(md->moe_ffn_hidden_size > 0 ? md->moe_ffn_hidden_size
                                                                          : md->ffn_hidden_size);
    x->V = padded_vocab(md->vocab_size, x->t);
    x->n = x->b * x->s;
    x->nl = x->sp ? x->n / x->t : x->n;
    x->D = dtype_bytes(w->training.params_dtype);
    x->swiglu = md->swiglu;
    x->mlp_width = x->swiglu ? 2.0 * x->f : x->f;
    x->norm_params = x->swiglu ? x->h : 2.0 * x->h;
    bool dist = w->training.use_distributed_optimizer;
    x->state_bpp = cm_state_bytes_per_param(w->training.params_dtype, dist, x->dp);
    x->expert_state_bpp = cm_state_bytes_per_param(w->training.params_dtype, dist,
                                                   x->dp / x->ep > 0 ? x->dp / x->ep : 1);
    x->grad_bpp = cm_grad_bytes_per_param(w->training.params_dtype);
}

/* GEMM [m×k]·[k×n], `count` times (batched): FLOPs 2mkn, bytes of the three
 * operands, at the matmul efficiency. */
static double gemm_s(const shape *x, double m, double k, double n, double count)
{
    double flops = 2.0 * m * k * n * count;
    double bytes = (m * k + k * n + m * n) * x->D * count;
    return cm_roofline_s(x->c, flops, bytes, x->c->matmul_efficiency);
}

/* Elementwise operator that moves `bytes` through HBM. */
static double memop_s(const shape *x, double bytes) { return cm_roofline_s(x->c, 0.0, bytes, 1.0); }

static void set_state(cm_layer *ly, const shape *x, double dense_params, double expert_params)
{
    ly->params = dense_params + expert_params;
    ly->state_bytes = dense_params * x->state_bpp + expert_params * x->expert_state_bpp;
    ly->grad_bytes = ly->params * x->grad_bpp;
}

static void add_unit(cm_layer *ly, const char *name, double forward_s, double bytes)
{
    cm_unit *u = &ly->units[ly->num_units++];
    snprintf(u->name, sizeof u->name, "%s", name);
    u->forward_s = forward_s;
    u->activation_bytes = bytes;
}

/* ---- decoder layer ------------------------------------------------------ */

/* Forward operator times of one decoder layer on one rank. */
typedef struct decoder_forward {
    double norm1, qkv, scores, softmax, attn_dropout, av, proj, proj_dropout, residual1;
    double norm2, fc1, act, fc2, mlp_dropout, residual2;
} decoder_forward;

static void decoder_forward_times(const shape *x, decoder_forward *o)
{
    double heads = x->a / x->t, scores_elems = x->b * heads * x->s * x->s;
    double hidden_l = x->nl * x->h;
    o->norm1 = memop_s(x, 2.0 * hidden_l * x->D);
    o->qkv = gemm_s(x, x->n, x->h, (x->h + 2.0 * x->g * x->d) / x->t, 1.0);
    o->scores = gemm_s(x, x->s, x->d, x->s, x->b * heads);
    o->softmax = memop_s(x, 2.0 * scores_elems * x->D);
    o->attn_dropout = memop_s(x, scores_elems * (2.0 * x->D + 1.0));
    o->av = gemm_s(x, x->s, x->s, x->d, x->b * heads);
    o->proj = gemm_s(x, x->n, x->h / x->t, x->h, 1.0);
    o->proj_dropout = memop_s(x, hidden_l * (2.0 * x->D + 1.0));
    o->residual1 = memop_s(x, 3.0 * hidden_l * x->D);
    o->norm2 = memop_s(x, 2.0 * hidden_l * x->D);
    o->fc1 = gemm_s(x, x->n, x->h, x->mlp_width / x->t, 1.0);
    o->act = memop_s(x, x->n * x->f / x->t * x->D * (x->swiglu ? 3.0 : 2.0));
    o->fc2 = gemm_s(x, x->n, x->f / x->t, x->h, 1.0);
    o->mlp_dropout = memop_s(x, hidden_l * (2.0 * x->D + 1.0));
    o->residual2 = memop_s(x, 3.0 * hidden_l * x->D);
}

static double decoder_forward_sum(const decoder_forward *o)
{
    return o->norm1 + o->qkv + o->scores + o->softmax + o->attn_dropout + o->av + o->proj +
           o->proj_dropout + o->residual1 + o->norm2 + o->fc1 + o->act + o->fc2 + o->mlp_dropout +
           o->residual2;
}

static double attention_core_s(const decoder_forward *o)
{
    return o->scores + o->softmax + o->attn_dropout + o->av;
}

/* Input-gradient pass: every GEMM once, the attention core GEMMs twice,
 * elementwise backward ops move 3 tensors (saved input, grad out, grad in). */
static double decoder_backward_s(const shape *x, const decoder_forward *o)
{
    double heads = x->a / x->t, scores_elems = x->b * heads * x->s * x->s;
    double hidden_l = x->nl * x->h;
    double gemms = o->qkv + 2.0 * o->scores + 2.0 * o->av + o->proj + o->fc1 + o->fc2;
    double elementwise = 2.0 * memop_s(x, 3.0 * hidden_l * x->D)           /* norms */
                         + memop_s(x, 3.0 * scores_elems * x->D)           /* softmax */
                         + memop_s(x, scores_elems * (2.0 * x->D + 1.0))   /* attn dropout */
                         + 2.0 * memop_s(x, hidden_l * (2.0 * x->D + 1.0)) /* dropouts */
                         + 2.0 * memop_s(x, 3.0 * hidden_l * x->D)         /* residual grads */
                         + memop_s(x, x->n * x->f / x->t * x->D * (x->swiglu ? 5.0 : 3.0));
    return gemms + elementwise;
}

static double decoder_flops(const shape *x)
{
    double qkv = 2.0 * x->n * x->h * (x->h + 2.0 * x->g * x->d);
    double core = 2.0 * 2.0 * x->b * x->s * x->s * x->h;
    double proj = 2.0 * x->n * x->h * x->h;
    double mlp = 2.0 * x->n * x->h * x->f * (x->swiglu ? 3.0 : 2.0);
    return (qkv + core + proj + mlp) / x->t;
}

static void decoder_params(const shape *x, const wl_model *md, double *dense, double *expert)
{
    double attention = x->h * (x->h + 2.0 * x->g * x->d) + x->h * x->h;
    double mats = x->swiglu ? 3.0 : 2.0;
    *dense = attention / x->t + 2.0 * x->norm_params;
    if (md->num_experts > 0) {
        double e_ffn =
            (double)(md->moe_ffn_hidden_size > 0 ? md->moe_ffn_hidden_size : md->ffn_hidden_size);
        *expert = md->num_experts * mats * x->h * e_ffn / ((double)x->ep * x->t);
        *dense += x->h * md->num_experts; /* router, replicated */
    } else {
        *dense += mats * x->h * x->f / x->t;
        *expert = 0.0;
    }
}

static void decoder_units(cm_layer *ly, const shape *x, const decoder_forward *o,
                          double allgather_s, double reduce_s)
{
    double heads = x->a / x->t, hidden_l = x->nl * x->h;
    add_unit(ly, "qkv_input", o->norm1, hidden_l * x->D);
    add_unit(ly, "qkv", o->qkv + allgather_s, x->n * (x->h + 2.0 * x->g * x->d) / x->t * x->D);
    add_unit(ly, "core_attention", attention_core_s(o),
             x->b * heads * x->s * x->s * (2.0 * x->D + 1.0));
    add_unit(ly, "proj_input", o->av, x->n * x->h / x->t * x->D);
    add_unit(ly, "attn_dropout_mask", o->proj_dropout, hidden_l);
    add_unit(ly, "ln2_input", o->proj + reduce_s + o->proj_dropout + o->residual1, hidden_l * x->D);
    add_unit(ly, "fc1_input", o->norm2, hidden_l * x->D);
    add_unit(ly, "fc1_output", o->fc1 + allgather_s, x->n * x->mlp_width / x->t * x->D);
    add_unit(ly, "fc2_input", o->act, x->n * x->f / x->t * x->D);
    add_unit(ly, "mlp_dropout_mask", o->mlp_dropout, hidden_l);
}

static void decoder_layer(cm_layer *ly, const shape *x, const wl_model *md, int index)
{
    decoder_forward o;
    decoder_forward_times(x, &o);
    snprintf(ly->name, sizeof ly->name, "decoder.%d", index);
    ly->kind = CM_DECODER;
    ly->forward_s = decoder_forward_sum(&o);
    ly->backward_s = decoder_backward_s(x, &o);
    ly->weight_grad_s = o.qkv + o.proj + o.fc1 + o.fc2;
    ly->tp_bytes = x->n * x->h * x->D;
    double allreduce = cm_ring_allreduce_s(x->c, x->t, ly->tp_bytes);
    double half = allreduce / 2.0; /* one all-gather or reduce-scatter */
    ly->tp_forward_s = 2.0 * allreduce;
    ly->tp_backward_s = 2.0 * allreduce;
    decoder_units(ly, x, &o, x->sp ? half : 0.0, x->sp ? half : allreduce);
    double kept = 0.0;
    for (int u = 0; u < ly->num_units; u++)
        kept += ly->units[u].activation_bytes;
    double layer_input = x->nl * x->h * x->D;
    ly->activation_bytes[RECOMPUTE_NONE] = layer_input + kept;
    ly->activation_bytes[RECOMPUTE_SELECTIVE] =
        layer_input + kept - ly->units[UNIT_CORE_ATTENTION].activation_bytes;
    ly->activation_bytes[RECOMPUTE_FULL] = layer_input;
    ly->recompute_s[RECOMPUTE_NONE] = 0.0;
    ly->recompute_s[RECOMPUTE_SELECTIVE] = attention_core_s(&o);
    ly->recompute_s[RECOMPUTE_FULL] = ly->forward_s + ly->tp_forward_s;
    double dense, expert;
    decoder_params(x, md, &dense, &expert);
    set_state(ly, x, dense, expert);
    ly->forward_flops = decoder_flops(x);
    ly->output_bytes = x->nl * x->h * x->D;
}

/* ---- embedding and LM head ---------------------------------------------- */

/* Vocab-parallel lookup (Megatron VocabParallelEmbedding): each rank reads the
 * rows of its vocabulary slice and writes a full, masked n×h output, then the
 * TP group all-reduces it (reduce-scatters it with SP).  Its backward is a
 * scatter-add of the output gradient into the fp32 gradient rows (W only). */
static void embedding_layer(cm_layer *ly, const shape *x)
{
    double out = x->n * x->h * x->D;
    snprintf(ly->name, sizeof ly->name, "embedding");
    ly->kind = CM_EMBEDDING;
    ly->forward_s = memop_s(x, out * (1.0 + 1.0 / x->t));
    ly->weight_grad_s = memop_s(x, out + 2.0 * x->n / x->t * x->h * x->grad_bpp);
    ly->tp_bytes = out;
    double allreduce = cm_ring_allreduce_s(x->c, x->t, out);
    ly->tp_forward_s = x->sp ? allreduce / 2.0 : allreduce;
    ly->tp_backward_s = x->sp ? allreduce / 2.0 : 0.0;
    for (int r = 0; r < RECOMPUTE_COUNT; r++)
        ly->activation_bytes[r] = x->n * TOKEN_ID_BYTES;
    set_state(ly, x, x->V * x->h / x->t, 0.0);
    ly->output_bytes = x->nl * x->h * x->D;
}

/* Final norm, LM head GEMM 2·n·h·V/t, and Megatron's vocab-parallel cross
 * entropy on fp32 logits (cast, max, subtract-exp, sum: ~5 fp32 passes plus
 * the read of the D-byte logits; it keeps the fp32 softmax for the backward
 * and all-reduces three n-float vectors over TP). */
static void lm_head_layer(cm_layer *ly, const shape *x, bool untied)
{
    double vt = x->V / x->t, hidden_l = x->nl * x->h;
    double input = x->n * x->h * x->D;
    double gemm = gemm_s(x, x->n, x->h, vt, 1.0);
    double cross_entropy = memop_s(x, x->n * vt * (x->D + 5.0 * FP32_BYTES));
    snprintf(ly->name, sizeof ly->name, "lm_head");
    ly->kind = CM_LM_HEAD;
    ly->forward_s = memop_s(x, 2.0 * hidden_l * x->D) + gemm + cross_entropy;
    ly->backward_s =
        memop_s(x, x->n * vt * (FP32_BYTES + x->D)) + gemm + memop_s(x, 3.0 * hidden_l * x->D);
    ly->weight_grad_s = gemm;
    ly->tp_bytes = input;
    double allreduce = cm_ring_allreduce_s(x->c, x->t, input);
    double loss_reductions = 3.0 * cm_ring_allreduce_s(x->c, x->t, x->n * FP32_BYTES);
    ly->tp_forward_s = (x->sp ? allreduce / 2.0 : 0.0) + loss_reductions;
    ly->tp_backward_s = x->sp ? allreduce / 2.0 : allreduce;
    double kept = 2.0 * hidden_l * x->D + x->n * vt * FP32_BYTES;
    ly->activation_bytes[RECOMPUTE_NONE] = kept;
    ly->activation_bytes[RECOMPUTE_SELECTIVE] = kept;
    ly->activation_bytes[RECOMPUTE_FULL] = hidden_l * x->D;
    ly->recompute_s[RECOMPUTE_FULL] = ly->forward_s + ly->tp_forward_s;
    bool holds_copy = untied || x->pp > 1;
    set_state(ly, x, (holds_copy ? x->V * x->h / x->t : 0.0) + x->norm_params, 0.0);
    ly->forward_flops = 2.0 * x->n * x->h * vt;
    ly->output_bytes = 0.0;
}

/* ---- layer-by-layer models ---------------------------------------------- */

/* Piecewise-linear interpolation of (xs, ys) at q, extrapolated from the end
 * segments; a single point scales proportionally.  Never negative. */
double cm_interpolate(const double *xs, const double *ys, int count, double q)
{
    if (count <= 0)
        return 0.0;
    if (count == 1)
        return xs[0] > 0 ? ys[0] * q / xs[0] : ys[0];
    int i = 0;
    while (i < count - 2 && q > xs[i + 1])
        i++;
    double dx = xs[i + 1] - xs[i];
    if (dx <= 0)
        return fmax(0.0, ys[i]);
    double slope = (ys[i + 1] - ys[i]) / dx;
    return fmax(0.0, ys[i] + slope * (q - xs[i]));
}

static void custom_layer(cm_layer *ly, const shape *x, const wl_layer_spec *sp, double input_bytes)
{
    snprintf(ly->name, sizeof ly->name, "%s", sp->name);
    ly->kind = CM_CUSTOM;
    bool weighted = sp->params > 0;
    if (sp->num_time_points > 0) {
        ly->forward_s =
            cm_interpolate(sp->time_batch, sp->time_forward_s, sp->num_time_points, x->b);
        double bwd = cm_interpolate(sp->time_batch, sp->time_backward_s, sp->num_time_points, x->b);
        ly->backward_s = weighted ? bwd / 2.0 : bwd;
        ly->weight_grad_s = weighted ? bwd / 2.0 : 0.0;
    } else {
        double bytes = sp->params * x->D + x->b * sp->activation_bytes;
        ly->forward_s =
            cm_roofline_s(x->c, x->b * sp->forward_flops, bytes, x->c->matmul_efficiency);
        ly->backward_s = ly->forward_s;
        ly->weight_grad_s = weighted ? ly->forward_s : 0.0;
    }
    ly->activation_bytes[RECOMPUTE_NONE] = x->b * sp->activation_bytes;
    ly->activation_bytes[RECOMPUTE_SELECTIVE] = x->b * sp->activation_bytes;
    ly->activation_bytes[RECOMPUTE_FULL] = fmin(x->b * input_bytes, x->b * sp->activation_bytes);
    ly->recompute_s[RECOMPUTE_FULL] = ly->forward_s;
    set_state(ly, x, sp->params, 0.0);
    ly->forward_flops = x->b * sp->forward_flops;
    ly->output_bytes = x->b * sp->output_bytes;
}

/* ---- build --------------------------------------------------------------- */

static int check_divisible(const wl_workload *w, const char *key, long value, long by,
                           const char *by_name, np_error *err)
{
    if (by > 0 && value % by == 0)
        return 0;
    return np_error_set(err, NP_EXIT_INPUT, w->path, key, 0,
                        "%ld is not divisible by %s (%ld), as Megatron-LM requires", value, by_name,
                        by);
}

static int check_transformer(const wl_workload *w, const shape *x, np_error *err)
{
    const wl_model *md = &w->model;
    const char *tp = "parallel.tensor_model_parallel_size";
    if (md->num_layers <= 0 || md->hidden_size <= 0 || md->seq_length <= 0 ||
        md->num_attention_heads <= 0 || md->vocab_size <= 0 || md->ffn_hidden_size <= 0)
        return np_error_set(err, NP_EXIT_INPUT, w->path, "model", 0,
                            "num_layers, hidden_size, ffn_hidden_size, num_attention_heads, "
                            "seq_length and vocab_size must be positive");
    int rc = check_divisible(w, "model.hidden_size", md->hidden_size, md->num_attention_heads,
                             "model.num_attention_heads", err);
    if (!rc)
        rc = check_divisible(w, "model.num_attention_heads", md->num_attention_heads, (long)x->g,
                             "model.num_query_groups", err);
    if (!rc)
        rc =
            check_divisible(w, "model.num_attention_heads", md->num_attention_heads, x->t, tp, err);
    if (!rc)
        rc = check_divisible(w, "model.num_query_groups", (long)x->g, x->t, tp, err);
    if (!rc)
        rc = check_divisible(w, "model.ffn_hidden_size", md->ffn_hidden_size, x->t, tp, err);
    return rc;
}

static double workspace_bytes(void)
{
    return RUNTIME_RESERVE_BYTES + COMMUNICATORS_PER_RANK * 2.0 * COLLECTIVE_BUFFER_BYTES;
}

static int build_transformer(cm_model *m, const wl_workload *w, const shape *x)
{
    int L = w->model.num_layers;
    m->num_layers = L + 2;
    m->layers = calloc((size_t)m->num_layers, sizeof *m->layers);
    if (!m->layers)
        return -1;
    embedding_layer(&m->layers[0], x);
    for (int l = 0; l < L; l++)
        decoder_layer(&m->layers[1 + l], x, &w->model, l);
    lm_head_layer(&m->layers[L + 1], x, w->model.untie_embeddings_and_output_weights);
    return 0;
}

static int build_custom(cm_model *m, const wl_workload *w, const shape *x)
{
    const wl_model *md = &w->model;
    m->num_layers = md->num_layer_specs;
    m->layers = calloc((size_t)m->num_layers, sizeof *m->layers);
    if (!m->layers)
        return -1;
    for (int l = 0; l < md->num_layer_specs; l++) {
        const wl_layer_spec *sp = &md->layer_specs[l];
        double input = l > 0 ? md->layer_specs[l - 1].output_bytes : sp->output_bytes;
        custom_layer(&m->layers[l], x, sp, input);
    }
    return 0;
}

int cm_build(const wl_workload *w, const cl_cluster *c, int micro_batch_size, cm_model *out,
             np_error *err)
{
    memset(out, 0, sizeof *out);
    int b = micro_batch_size > 0 ? micro_batch_size : w->training.micro_batch_size;
    if (b <= 0)
        return np_error_set(err, NP_EXIT_INPUT, w->path, "training.micro_batch_size", 0,
                            "expected a positive integer, got %d", b);
    shape x;
    shape_init(&x, w, c, b);
    bool custom = w->model.num_layer_specs > 0;
    int rc = custom ? 0 : check_transformer(w, &x, err);
    if (rc)
        return rc;
    if ((custom ? build_custom(out, w, &x) : build_transformer(out, w, &x)) != 0)
        return np_error_set(err, NP_EXIT_INTERNAL, w->path, "", 0, "out of memory");
    out->micro_batch_size = b;
    out->tensor_parallel = x.t;
    out->data_parallel = x.dp;
    out->sequence_parallel = x.sp;
    out->distributed_optimizer = w->training.use_distributed_optimizer;
    out->workspace_bytes = workspace_bytes();
    out->hbm_bytes = c->hbm_bytes;
    out->hbm_bandwidth_Bps = c->hbm_bandwidth_Bps;
    out->kernel_launch_s = c->kernel_launch_s;
    out->weight_bytes_per_param = x.D;
    out->optimizer_bytes_per_param = cm_optimizer_bytes_per_param(w->training.params_dtype);
    out->has_source = true;
    out->source = *w;
    out->cluster = *c;
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
    shape_init(&x, w, &m->cluster, 1);
    x.b = b;
    x.n = b * x.s;
    x.nl = x.sp ? x.n / x.t : x.n;
    memset(out, 0, sizeof *out);
    const wl_model *md = &w->model;
    if (md->num_layer_specs > 0) {
        const wl_layer_spec *sp = md->layer_specs;
        custom_layer(out, &x, &sp[layer], sp[layer > 0 ? layer - 1 : 0].output_bytes);
    } else if (layer == 0) {
        embedding_layer(out, &x);
    } else if (layer == m->num_layers - 1) {
        lm_head_layer(out, &x, md->untie_embeddings_and_output_weights);
    } else {
        decoder_layer(out, &x, md, layer - 1);
    }
    return 0;
}

void cm_free(cm_model *m)
{
    free(m->layers);
    m->layers = NULL;
    m->num_layers = 0;
}

/* ---- totals ------------------------------------------------------------- */

double cm_forward_total_s(const cm_layer *l) { return l->forward_s + l->tp_forward_s; }

double cm_backward_total_s(const cm_layer *l, recompute_kind r)
{
    return l->backward_s + l->weight_grad_s + l->recompute_s[r] + l->tp_backward_s;
}

/* HBM traffic of one Adam step per parameter (Kingma & Ba; Megatron's fused
 * Adam over the fp32 main params): read the main gradient, read and write the
 * fp32 master weight and both moments, write the half-precision weight copy. */
double cm_optimizer_bytes_per_param(wl_dtype d)
{
    double rw_fp32_state = 3.0 * 2.0 * FP32_BYTES; /* master, m, v: read + write */
    if (d == WL_FP32)
        return FP32_BYTES + rw_fp32_state;
    return cm_grad_bytes_per_param(d) + rw_fp32_state + dtype_bytes(d);
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
