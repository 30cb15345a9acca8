/*
 * costmodel_transformer.c -- the Transformer layers of the cost model: the
 * embedding, the decoder layer and the LM head, operator by operator.
 *
 * The decoder's GEMM and attention FLOPs and bytes, its AdaPipe-style
 * recomputable units, its activations under each recompute option
 * (Korthikanti et al. 2022) and its tensor-parallel collectives are all
 * here; the roofline, the shape of the job (notation: costmodel_internal.h)
 * and model construction are in costmodel.c.  The attention core (unfused
 * or FlashAttention-2) is priced in costmodel_attention.c, the efficiencies
 * by shape in costmodel_efficiency.c.  Variants of the Transformer layer (MoE
 * blocks, context parallelism) belong in files beside this one.
 *
 * Decoder layer FLOPs, forward, per rank (Narayanan et al. SC'21, eq. in
 * section 5.1: 24bsh² + 4bs²h for MHA, ffn = 4h, GeLU):
 *   QKV 2nh(h + 2gd)/t (GQA: K and V have g·d columns), scores QKᵀ 2bs²h/t,
 *   AV 2bs²h/t (both counted fully, as Megatron's FLOP count does),
 *   output projection 2nh²/t, MLP 2·2nhf/t (GeLU) or 3·2nhf/t (SwiGLU).
 * Backward: B repeats every GEMM once (input gradient) and the attention core
 * twice (both operands of QKᵀ and AV need gradients, there is no weight);
 * W repeats the weighted GEMMs once.  So B + W = 2F in FLOPs (the usual
 * "backward = 2× forward"); FlashAttention's backward recomputes the scores
 * and does 2.5× its forward (costmodel_attention.c), which the model FLOPs
 * used for MFU do not count.  Elementwise backward ops read the saved tensor
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
 *               dropout out (FlashAttention: softmax statistics only,
 *               b(a/t)s·8 bytes)
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
 * Dropout follows the workload's probabilities (Megatron's defaults 0.1,
 * Korthikanti's accounting): at 0 (Llama recipes) PyTorch's dropout returns
 * its input, so the masks (attn_mask, mlp_mask: n_l·h each; in core_attn the
 * mask and the dropout output) are not kept and the dropout passes cost
 * nothing.  With FlashAttention the attention dropout happens in the kernel
 * and keeps nothing either way.
 *
 * Recompute time: selective = the attention core forward (QKᵀ, softmax,
 * dropout, AV: what Megatron's checkpointed core attention re-runs); full =
 * the whole forward including its TP collectives.  With FlashAttention,
 * selective re-runs the kernel's forward and frees its softmax statistics:
 * Megatron-Core checkpoints the core attention whatever its kernel
 * (costmodel_attention.c).
 *
 * Elementwise operators run at HBM bandwidth, one pass each: the norms and
 * the activation as one kernel (Megatron's fused LayerNorm / RMSNorm and
 * bias-GeLU or SwiGLU kernels; no biases are modelled), the dropout and the
 * residual add as two, or as one when the platform says elementwise_fusion
 * (Megatron's bias_dropout_add fusion).
 *
 * TP collectives (Megatron-LM, Shoeybi et al. 2019; Korthikanti section 4.2.2):
 * without SP two all-reduces in forward (after attention and after the MLP)
 * and two in backward, each of n·h·D bytes; with SP each all-reduce becomes an
 * all-gather plus a reduce-scatter of the same tensor, each half the ring
 * all-reduce time, so the totals are equal.  In the backward, Megatron's
 * column-parallel layers (QKV and FC1) overlap their collectives with their
 * GEMMs (LinearWithGradAccumulationAndAsyncCommunication.backward, the
 * default since async_tensor_model_parallel_allreduce; Korthikanti section
 * 4.2.2 and 6): the all-reduce of the input gradient (without SP), or its
 * reduce-scatter (SP), runs while the weight-gradient GEMM computes; with SP
 * the layer also all-gathers again its sequence-sharded input for that GEMM,
 * while the input-gradient GEMM computes.  Each hides behind its GEMM as far
 * as the GEMM lasts: exposed max(0, collective − GEMM).  The row-parallel
 * layers' backward all-gathers (SP) are needed before their GEMMs and stay
 * exposed.  So tp_backward_s is the exposed part; it assumes the layer's
 * weight-gradient GEMM runs right after its input-gradient GEMM (schedules
 * that defer W, zero-bubble's, would expose the reduction).  Ring on the scale-up fabric:
 * all-reduce 2(t−1)(α + S/(t·B)), all-gather or reduce-scatter (t−1)(α + S/(t·B))
 * (docs/design.md, cost model), B the link bandwidth times the platform's
 * collective_bus_efficiency; t = 1 costs nothing.  A TP group wider than a
 * node runs on the scale-out fabric.
 *
 * With tp_comm_overlap (Megatron-Core's --tp-comm-overlap: Transformer
 * Engine's userbuffers; it needs SP) each of the forward's four collectives
 * is pipelined with the GEMM beside it, by the methods of TE's default
 * configuration (initialize_ub; Megatron passes none of its own):
 *   - ring exchange for the all-gathers before QKV and FC1 and, in the
 *     backward, the row-parallel layers' output-gradient all-gathers before
 *     their input-gradient GEMMs (the column-parallel ones already hide,
 *     above): the GEMM of time G runs as t chunks of G/t, each on the slice
 *     that has arrived, while the next slice moves, t − 1 ring steps of
 *     c = α + S/(t·B): G/t + (t − 1)·max(G/t, c) in all, exposed
 *     (t − 1)·max(0, c − G/t);
 *   - "pipeline" with 4 splits for the reduce-scatters after the projection
 *     and FC2: the GEMM runs as k = 4 chunks of G/k and each chunk's output is
 *     reduce-scattered, R = (t − 1)(α + S/(k·t·B)), while the next chunk
 *     computes; the last chunk's reduce-scatter is always exposed:
 *     R + (k − 1)·max(0, R − G/k).
 * (The decomposition is Wang et al.'s, ASPLOS 2023, "Overlap Communication
 * with Dependent Computation via Decomposition in Large Deep Learning
 * Models".)  Not modelled: a chunked GEMM's lower efficiency, and the SMs or
 * copy engines the communication takes from it (TE's pipeline method
 * reserves 16 SMs).
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
 * Output to the next stage, per TP rank: n·h·D/t with SP (the state is
 * sequence-sharded); without SP n·h·D/t too under Megatron's scatter/gather
 * p2p (scatter_gather_tensors_in_pipeline, on by default: each rank sends its
 * 1/t slice and the receiving stage all-gathers the tensor on the scale-up
 * fabric, recv_gather_s, charged by the schedule to the receiver's forward or
 * backward), else n·h·D from every rank.
 *
 * Multi-latent attention (model.multi_latent_attention): its projections,
 * parameters, kept bytes and FLOPs replace the QKV and output projection's
 * above (costmodel_mla.c); the core uses its head sizes.
 *
 * MoE: in an MoE layer (model.moe_layer_freq) the dense MLP above is the
 * shared expert (none when moe_shared_expert_intermediate_size is 0), and
 * costmodel_moe.c adds the router, the dispatch and combine, the routed
 * experts and their memory.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "costmodel_internal.h"

#define TOKEN_ID_BYTES 8.0    /* int64 ids the embedding keeps for its backward */
#define UNIT_CORE_ATTENTION 2 /* index of core_attention in decoder_units() */

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

/* ---- decoder layer ------------------------------------------------------ */

/* Forward operator times of one decoder layer on one rank; the attention
 * core's parts come from costmodel_attention.c (FlashAttention: the kernel in
 * scores, softmax, attn_dropout and av 0). */
typedef struct decoder_forward {
    double norm1, qkv, scores, softmax, attn_dropout, av, proj, proj_dropout, residual1;
    double norm2, fc1, act, fc2, mlp_dropout, residual2;
    double proj_cast, fc2_cast; /* FP8: the inputs' casts (costmodel_fp8.c) */
    cm_attention core;
} decoder_forward;

/* Dropout after the projection or FC2, then the residual add: two passes
 * (the dropout reads x and writes y and its 1-byte mask; the add reads two
 * tensors and writes one), none for the dropout when its probability is 0;
 * with the platform's elementwise_fusion one pass (Megatron's
 * bias_dropout_add_fused_train: read x and the residual, write the sum and
 * the mask), charged to the dropout. */
static void dropout_add_times(const shape *x, double hidden_l, double *dropout_s, double *add_s)
{
    if (x->fused_elementwise && x->hidden_dropout) {
        *dropout_s = cm_memop_s(x, hidden_l * (3.0 * x->D + 1.0));
        *add_s = 0.0;
        return;
    }
    *dropout_s = x->hidden_dropout ? cm_memop_s(x, hidden_l * (2.0 * x->D + 1.0)) : 0.0;
    *add_s = cm_memop_s(x, 3.0 * hidden_l * x->D);
}

/* Values of the projection's input on one rank: the attention output. */
static double proj_input_elements(const shape *x)
{
    return x->mla ? cm_mla_core_output_bytes(x) / x->D : x->n * x->h / x->t;
}

static void decoder_forward_times(const shape *x, decoder_forward *o)
{
    double hidden_l = x->nl * x->h;
    cm_attention_core(x, &o->core);
    o->norm1 = cm_memop_s(x, 2.0 * hidden_l * x->D);
    o->qkv = x->mla ? cm_mla_projections_s(x)
                    : cm_linear_s(x, x->n, x->h, (x->h + 2.0 * x->g * x->d) / x->t, 1.0);
    o->scores = o->core.scores_s;
    o->softmax = o->core.softmax_s;
    o->attn_dropout = o->core.dropout_s;
    o->av = o->core.av_s;
    o->proj = x->mla ? cm_mla_output_projection_s(x) : cm_linear_s(x, x->n, x->h / x->t, x->h, 1.0);
    o->proj_cast = cm_fp8_cast_s(x, proj_input_elements(x));
    dropout_add_times(x, hidden_l, &o->proj_dropout, &o->residual1);
    o->norm2 = cm_memop_s(x, 2.0 * hidden_l * x->D);
    bool mlp = x->f > 0; /* an MoE layer without a shared expert has no dense MLP */
    o->fc1 = mlp ? cm_linear_s(x, x->n, x->h, x->mlp_width / x->t, 1.0) : 0.0;
    o->act = mlp ? cm_memop_s(x, x->n * x->f / x->t * x->D * (x->swiglu ? 3.0 : 2.0)) : 0.0;
    o->fc2 = mlp ? cm_linear_s(x, x->n, x->f / x->t, x->h, 1.0) : 0.0;
    o->fc2_cast = mlp ? cm_fp8_cast_s(x, x->n * x->f / x->t) : 0.0;
    dropout_add_times(x, hidden_l, &o->mlp_dropout, &o->residual2);
}

static double decoder_forward_sum(const decoder_forward *o)
{
    return o->norm1 + o->qkv + o->scores + o->softmax + o->attn_dropout + o->av + o->proj +
           o->proj_dropout + o->residual1 + o->norm2 + o->fc1 + o->act + o->fc2 + o->mlp_dropout +
           o->residual2 + o->proj_cast + o->fc2_cast;
}

static double attention_core_s(const decoder_forward *o)
{
    return o->scores + o->softmax + o->attn_dropout + o->av;
}

/* Input-gradient pass: every GEMM once, the attention core as
 * costmodel_attention.c prices it (unfused: its GEMMs twice), elementwise
 * backward ops move 3 tensors (saved input, grad out, grad in); the dropout
 * backward reads the mask, none when the probability is 0.  Fusion leaves the
 * backward as it is: the fused dropout-add's backward is the dropout's, and
 * the residual gradients are summed where the stream forks either way. */
/* FP8: every linear layer's output gradient cast (costmodel_fp8.c): QKV's
 * and FC1's column-parallel outputs, the projection's and FC2's full hidden
 * state (multi-latent attention's projections: its QKV part as MHA's). */
static double fp8_gradient_casts_s(const shape *x)
{
    if (!x->fp8)
        return 0.0;
    double qkv = x->n * (x->h + 2.0 * x->g * x->d) / x->t;
    double mlp = x->f > 0
                     ? cm_fp8_cast_s(x, x->n * x->mlp_width / x->t) + cm_fp8_cast_s(x, x->n * x->h)
                     : 0.0;
    return cm_fp8_cast_s(x, qkv) + cm_fp8_cast_s(x, x->n * x->h) + mlp;
}

static double decoder_backward_s(const shape *x, const decoder_forward *o)
{
    double hidden_l = x->nl * x->h;
    const cm_attention *core = &o->core;
    double gemms = o->qkv + core->grad_scores_s + core->grad_av_s + o->proj + o->fc1 + o->fc2;
    double dropouts = x->hidden_dropout ? 2.0 * cm_memop_s(x, hidden_l * (2.0 * x->D + 1.0)) : 0.0;
    double elementwise =
        2.0 * cm_memop_s(x, 3.0 * hidden_l * x->D)               /* norms */
        + core->grad_softmax_s + core->grad_dropout_s + dropouts /* masks */
        + 2.0 * cm_memop_s(x, 3.0 * hidden_l * x->D)             /* residual grads */
        + (x->f > 0 ? cm_memop_s(x, x->n * x->f / x->t * x->D * (x->swiglu ? 5.0 : 3.0)) : 0.0);
    return gemms + elementwise + fp8_gradient_casts_s(x);
}

static double decoder_flops(const shape *x)
{
    double qkv = 2.0 * x->n * x->h * (x->h + 2.0 * x->g * x->d);
    double core = 2.0 * 2.0 * x->b * x->s * x->s * x->h;
    double proj = 2.0 * x->n * x->h * x->h;
    double mlp = 2.0 * x->n * x->h * x->f * (x->swiglu ? 3.0 : 2.0);
    if (x->mla)
        return cm_mla_flops(x) + mlp / x->t;
    return (qkv + core + proj + mlp) / x->t;
}

/* The dense MLP is x->f wide: the shared expert of an MoE layer (0 when
 * there is none), whose router and experts costmodel_moe.c adds. */
static void decoder_params(const shape *x, double *dense, double *expert)
{
    double attention = x->h * (x->h + 2.0 * x->g * x->d) + x->h * x->h;
    double mats = x->swiglu ? 3.0 : 2.0;
    double per_rank = x->mla ? cm_mla_params(x) : attention / x->t;
    *dense = per_rank + 2.0 * x->norm_params + mats * x->h * x->f / x->t;
    *expert = 0.0;
}

/* The exposed time of the forward's four TP collectives (see the head of
 * this file): the all-gathers (SP) before QKV and FC1, the reduce-scatters
 * (SP) or all-reduces after the projection and FC2. */
typedef struct tp_exposed {
    double qkv, proj, fc1, fc2;
} tp_exposed;

/* Transformer Engine's default number of splits of its "pipeline" overlap
 * method (initialize_ub's default ub_cfgs: num_splits 4). */
#define TE_PIPELINE_SPLITS 4

/* An all-gather of t − 1 ring steps of `step` exchanged under a GEMM of
 * `gemm` split in t chunks (TE's ring exchange): what the GEMM does not hide. */
static double ring_exchange_exposed_s(int t, double step, double gemm)
{
    return (t - 1) * fmax(0.0, step - gemm / t);
}

/* A GEMM of `gemm` in k chunks, each chunk's output reduce-scattered in
 * `chunk_rs` while the next computes (TE's pipeline method). */
static double split_pipeline_exposed_s(int k, double chunk_rs, double gemm)
{
    return chunk_rs + (k - 1) * fmax(0.0, chunk_rs - gemm / k);
}

static tp_exposed tp_forward_exposed(const shape *x, const decoder_forward *o, double bytes,
                                     double allreduce)
{
    double half = allreduce / 2.0; /* one all-gather or reduce-scatter */
    /* An MoE layer without a shared expert has no dense MLP, so none of its
     * collectives: its dispatcher moves the tokens (costmodel_moe.c). */
    double mlp = x->f > 0 ? 1.0 : 0.0;
    if (!x->sp)
        return (tp_exposed){0.0, allreduce, 0.0, mlp * allreduce};
    if (!x->tp_overlap)
        return (tp_exposed){half, half, mlp * half, mlp * half};
    double step = half / (x->t - 1);
    double chunk_rs = cm_ring_allgather_s(x->tp_c, x->t, bytes / TE_PIPELINE_SPLITS);
    return (tp_exposed){ring_exchange_exposed_s(x->t, step, o->qkv),
                        split_pipeline_exposed_s(TE_PIPELINE_SPLITS, chunk_rs, o->proj),
                        mlp * ring_exchange_exposed_s(x->t, step, o->fc1),
                        mlp * split_pipeline_exposed_s(TE_PIPELINE_SPLITS, chunk_rs, o->fc2)};
}

static void decoder_units(cm_layer *ly, const shape *x, const decoder_forward *o,
                          const tp_exposed *e)
{
    double hidden_l = x->nl * x->h, mask = x->hidden_dropout ? hidden_l : 0.0;
    double qkv =
        x->mla ? cm_mla_qkv_kept_bytes(x) : x->n * (x->h + 2.0 * x->g * x->d) / x->t * x->D;
    double context = x->mla ? cm_mla_core_output_bytes(x) : x->n * x->h / x->t * x->D;
    cm_add_unit(ly, "qkv_input", o->norm1, cm_linear_input_bytes(x, hidden_l));
    cm_add_unit(ly, "qkv", o->qkv + e->qkv, qkv);
    cm_add_unit(ly, "core_attention", attention_core_s(o), o->core.kept_bytes);
    cm_add_unit(ly, "proj_input", o->core.output_s + o->proj_cast,
                x->fp8 ? cm_linear_input_bytes(x, proj_input_elements(x)) : context);
    cm_add_unit(ly, "attn_dropout_mask", o->proj_dropout, mask);
    cm_add_unit(ly, "ln2_input", o->proj + e->proj + o->proj_dropout + o->residual1,
                hidden_l * x->D);
    cm_add_unit(ly, "fc1_input", o->norm2, cm_linear_input_bytes(x, hidden_l));
    cm_add_unit(ly, "fc1_output", o->fc1 + e->fc1, x->n * x->mlp_width / x->t * x->D);
    cm_add_unit(ly, "fc2_input", o->act + o->fc2_cast,
                cm_linear_input_bytes(x, x->n * x->f / x->t));
    cm_add_unit(ly, "mlp_dropout_mask", o->mlp_dropout, mask);
}

/* The backward's exposed TP collectives (see the head of this file): the
 * column-parallel QKV and FC1 hide their input-gradient reduction behind
 * their weight-gradient GEMM and, with SP, their input's all-gather behind
 * their input-gradient GEMM (both GEMMs as long as the forward's); the
 * row-parallel projection and FC2 all-gather the output gradient first, or,
 * with tp_comm_overlap, pipelined with their input-gradient GEMMs. */
static double tp_backward_exposed_s(const shape *x, const decoder_forward *o, double allreduce)
{
    bool mlp = x->f > 0; /* no dense MLP, no MLP collectives (tp_forward_exposed) */
    if (!x->sp)
        return fmax(0.0, allreduce - o->qkv) + (mlp ? fmax(0.0, allreduce - o->fc1) : 0.0);
    double half = allreduce / 2.0;
    double row = mlp ? 2.0 * half : half;
    double step = half / (x->t - 1); /* one ring step */
    if (x->tp_overlap)
        row = ring_exchange_exposed_s(x->t, step, o->proj) +
              (mlp ? ring_exchange_exposed_s(x->t, step, o->fc2) : 0.0);
    return row + 2.0 * (fmax(0.0, half - o->qkv) + (mlp ? fmax(0.0, half - o->fc1) : 0.0));
}

/* What a stage boundary after this layer carries per TP rank: the hidden
 * state n·h·D, or n·h·D/t when it is sequence-sharded (SP) or scattered
 * (Megatron's scatter/gather p2p without SP: each rank sends its 1/t slice
 * and the receiver all-gathers the n·h·D tensor over its TP group, a ring
 * (t−1)(α + S/(t·B)) on the scale-up fabric, recv_gather_s). */
static void stage_output(cm_layer *ly, const shape *x)
{
    double hidden = x->n * x->h * x->D;
    ly->output_bytes = x->scatter_gather ? hidden / x->t : x->nl * x->h * x->D;
    ly->recv_gather_s = x->scatter_gather ? cm_ring_allgather_s(x->tp_c, x->t, hidden) : 0.0;
}

void cm_decoder_layer(cm_layer *ly, const shape *x0, const wl_model *md, int index)
{
    shape moe_shape; /* MoE hook: an MoE layer's dense MLP is its shared expert */
    const shape *x = cm_moe_layer_shape(x0, md, index, &moe_shape);
    decoder_forward o;
    decoder_forward_times(x, &o);
    snprintf(ly->name, sizeof ly->name, "decoder.%d", index);
    ly->kind = CM_DECODER;
    ly->forward_s = decoder_forward_sum(&o);
    ly->backward_s = decoder_backward_s(x, &o);
    ly->weight_grad_s = o.qkv + o.proj + o.fc1 + o.fc2;
    ly->tp_bytes = x->n * x->h * x->D;
    double allreduce = cm_ring_allreduce_s(x->tp_c, x->t, ly->tp_bytes);
    tp_exposed e = tp_forward_exposed(x, &o, ly->tp_bytes, allreduce);
    ly->tp_forward_s = (e.qkv + e.proj) + (e.fc1 + e.fc2); /* 2·allreduce exactly without overlap */
    ly->tp_backward_s = tp_backward_exposed_s(x, &o, allreduce);
    decoder_units(ly, x, &o, &e);
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
    decoder_params(x, &dense, &expert);
    cm_set_state(ly, x, dense, expert);
    ly->forward_flops = decoder_flops(x);
    stage_output(ly, x);
    cm_moe_decoder(ly, x, md, index); /* MoE hook: router, experts, all-to-all */
    /* FP8: every parameter but the norms' is a linear layer's (an MoE
     * router's few included) */
    ly->fp8_weight_cache_bytes = cm_fp8_weight_cache_bytes(x, ly->params - 2.0 * x->norm_params);
    ly->state_bytes += ly->fp8_weight_cache_bytes;
}

/* ---- embedding and LM head ---------------------------------------------- */

/* Vocab-parallel lookup (Megatron VocabParallelEmbedding): each rank reads the
 * rows of its vocabulary slice and writes a full, masked n×h output, then the
 * TP group all-reduces it (reduce-scatters it with SP).  Its backward is a
 * scatter-add of the output gradient into the gradient rows (W only; fp32
 * unless the gradients are bf16). */
void cm_embedding_layer(cm_layer *ly, const shape *x)
{
    double out = x->n * x->h * x->D;
    snprintf(ly->name, sizeof ly->name, "embedding");
    ly->kind = CM_EMBEDDING;
    ly->forward_s = cm_memop_s(x, out * (1.0 + 1.0 / x->t));
    ly->weight_grad_s = cm_memop_s(x, out + 2.0 * x->n / x->t * x->h * x->precision.grad);
    ly->tp_bytes = out;
    double allreduce = cm_ring_allreduce_s(x->tp_c, x->t, out);
    ly->tp_forward_s = x->sp ? allreduce / 2.0 : allreduce;
    ly->tp_backward_s = x->sp ? allreduce / 2.0 : 0.0;
    for (int r = 0; r < RECOMPUTE_COUNT; r++)
        ly->activation_bytes[r] = x->n * TOKEN_ID_BYTES;
    cm_set_state(ly, x, x->V * x->h / x->t, 0.0);
    stage_output(ly, x);
}

/* Final norm, LM head GEMM 2·n·h·V/t, and Megatron's vocab-parallel cross
 * entropy on fp32 logits (cast, max, subtract-exp, sum: ~5 fp32 passes plus
 * the read of the D-byte logits; it keeps the fp32 softmax for the backward
 * and all-reduces three n-float vectors over TP). */
void cm_lm_head_layer(cm_layer *ly, const shape *x, bool untied)
{
    double vt = x->V / x->t, hidden_l = x->nl * x->h;
    double input = x->n * x->h * x->D;
    double gemm = cm_gemm_s(x, x->n, x->h, vt, 1.0);
    double cross_entropy = cm_memop_s(x, x->n * vt * (x->D + 5.0 * FP32_BYTES));
    snprintf(ly->name, sizeof ly->name, "lm_head");
    ly->kind = CM_LM_HEAD;
    ly->forward_s = cm_memop_s(x, 2.0 * hidden_l * x->D) + gemm + cross_entropy;
    ly->backward_s = cm_memop_s(x, x->n * vt * (FP32_BYTES + x->D)) + gemm +
                     cm_memop_s(x, 3.0 * hidden_l * x->D);
    ly->weight_grad_s = gemm;
    ly->tp_bytes = input;
    double allreduce = cm_ring_allreduce_s(x->tp_c, x->t, input);
    double loss_reductions = 3.0 * cm_ring_allreduce_s(x->tp_c, x->t, x->n * FP32_BYTES);
    ly->tp_forward_s = (x->sp ? allreduce / 2.0 : 0.0) + loss_reductions;
    ly->tp_backward_s = x->sp ? allreduce / 2.0 : allreduce;
    double kept = 2.0 * hidden_l * x->D + x->n * vt * FP32_BYTES;
    ly->activation_bytes[RECOMPUTE_NONE] = kept;
    ly->activation_bytes[RECOMPUTE_SELECTIVE] = kept;
    ly->activation_bytes[RECOMPUTE_FULL] = hidden_l * x->D;
    ly->recompute_s[RECOMPUTE_FULL] = ly->forward_s + ly->tp_forward_s;
    bool holds_copy = untied || x->pp > 1;
    cm_set_state(ly, x, (holds_copy ? x->V * x->h / x->t : 0.0) + x->norm_params, 0.0);
    ly->forward_flops = 2.0 * x->n * x->h * vt;
    ly->output_bytes = 0.0;
}

/* ---- build --------------------------------------------------------------- */

static int check_divisible(const wl_workload *w, const char *key, long value, long by,
                           const char *by_name, np_error *err)
{
    if (by > 0 && value % by == 0)
        return 0;
    return wl_key_error(err, NP_EXIT_INPUT, w, key,
                        "%ld is not divisible by %s (%ld), as Megatron-LM requires", value, by_name,
                        by);
}

int cm_check_transformer(const wl_workload *w, const shape *x, np_error *err)
{
    const wl_model *md = &w->model;
    const char *tp = "parallel.tensor_model_parallel_size";
    if (md->num_layers <= 0 || md->hidden_size <= 0 || md->seq_length <= 0 ||
        md->num_attention_heads <= 0 || md->vocab_size <= 0 || md->ffn_hidden_size <= 0)
        return wl_key_error(err, NP_EXIT_INPUT, w, "model",
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
    if (!rc && x->mla && x->cp > 1)
        rc = wl_key_error(err, NP_EXIT_INPUT, w, "parallel.context_parallel_size",
                          "context parallelism with model.multi_latent_attention is not modelled "
                          "(the K/V ring of costmodel_cp.c is MHA's): expected 1, got %d",
                          x->cp);
    return rc;
}

int cm_build_transformer(cm_model *m, const wl_workload *w, const shape *x)
{
    int L = w->model.num_layers;
    m->num_layers = L + 2;
    m->layers = calloc((size_t)m->num_layers, sizeof *m->layers);
    if (!m->layers)
        return -1;
    cm_embedding_layer(&m->layers[0], x);
    for (int l = 0; l < L; l++)
        cm_decoder_layer(&m->layers[1 + l], x, &w->model, l);
    cm_lm_head_layer(&m->layers[L + 1], x, w->model.untie_embeddings_and_output_weights);
    return 0;
}
