/*
 * costmodel_internal.h -- what the files of the cost model share (not
 * public: costmodel.h is the interface).
 *
 * The cost model is split by concept:
 *   costmodel.c              the core: roofline and ring primitives, bytes per
 *                            parameter, the shape of a job, model construction
 *                            (cm_build, cm_layer_at_batch), optimizer step
 *   costmodel_transformer.c  the Transformer: embedding, decoder layer (GEMM
 *                            and attention FLOPs and bytes, recomputable
 *                            units, Korthikanti activations), LM head
 *   costmodel_attention.c    the attention core: unfused (scores, softmax,
 *                            dropout, AV) or FlashAttention-2
 *   costmodel_efficiency.c   GEMM efficiency by shape, the attention
 *                            kernel's, the collective bus efficiency
 *   costmodel_layers.c       layer-by-layer models (workload model.layers):
 *                            per-sample specs and profiled time tables t(b)
 *   costmodel_parallel.c     context parallelism and data-parallel sharding
 *                            applied to the shape and to the built layers
 *   costmodel_cp.c           context parallelism: the remote attention
 *                            blocks and the ring exchange of K/V
 *   costmodel_sharding.c     data-parallel sharding: state bytes per
 *                            parameter, ZeRO-2/3 collectives per layer
 * A new kind of layer (an MoE block, FlashAttention, context parallelism)
 * prices its operators with cm_gemm_s() and cm_memop_s() and fills a cm_layer
 * with cm_set_state() and cm_add_unit(), in a file beside these.
 */
#ifndef COSTMODEL_INTERNAL_H
#define COSTMODEL_INTERNAL_H

#include <stdbool.h>

#include "costmodel.h"

#define FP32_BYTES 4.0
#define FP8_BYTES 1.0

/* ---- shape of one job --------------------------------------------------- */

/* Notation: b micro-batch, s sequence, h hidden, a heads, g query groups,
 * d = h/a head size, f ffn hidden, V (padded) vocabulary, t tensor parallel,
 * D bytes of the training dtype, n = b·s tokens, n_l = n/t with sequence
 * parallelism (SP) else n: the tokens an elementwise op outside the
 * tensor-parallel regions touches on one rank. */
typedef struct shape {
    const cl_cluster *c;
    /* The TP group's collectives: c, or tp_view (c with one NPU per server,
     * so every ring is on the scale-out route) when c->tp_across_servers. */
    const cl_cluster *tp_c;
    cl_cluster tp_view;
    const wl_workload *w; /* the workload priced (MoE layers read its layout) */
    double b, s, h, a, g, d, f, V;
    double n, nl; /* tokens; tokens of an elementwise op on one rank */
    double D;     /* activation / weight bytes */
    int t, pp, dp, ep;
    bool sp, swiglu;
    double mlp_width;       /* columns of FC1 per token: f, 2f with SwiGLU */
    double norm_params;     /* per norm: h (RMSNorm) or 2h (LayerNorm) */
    bool flash;             /* fused attention (FlashAttention-2) */
    bool attention_dropout; /* dropout probability > 0 on the attention probabilities */
    bool hidden_dropout;    /* dropout probability > 0 after the projection and FC2 */
    bool fused_elementwise; /* the platform's elementwise_fusion */
    bool scatter_gather;    /* scatter/gather p2p applies: asked for, no SP, t > 1 */
    bool tp_overlap;        /* tp_comm_overlap (it needs SP, so t > 1) */
    cm_precision precision; /* bytes per parameter: weight, gradient, state */
    double state_bpp, expert_state_bpp;
    /* Context parallelism: c ranks share a sequence, s above is this rank's
     * s/c (costmodel_parallel.c); the data-parallel group of the gradients
     * and of the sharded state is dp·c replicas; the sharding strategy. */
    int cp, shards;
    wl_dp_sharding sharding;
    /* Attention head sizes: queries and keys dqk, values dv (both d for MHA
     * and GQA); with multi-latent attention (mla) its ranks r_q, r_kv and the
     * rotary head size d_r (costmodel_mla.c). */
    double dqk, dv;
    bool mla;
    double rq, rkv, dr;
    /* FP8 linear layers (training.fp8_format on a platform with fp8_flops):
     * costmodel_fp8.c. */
    bool fp8, fp8_params; /* fp8_params: fp8_param_gather */
    double fp8_peak;
} shape;

/* FP8 training (costmodel_fp8.c): the shape's fp8 fields; a linear
 * layer's GEMM (FP8 or, without it, cm_gemm_s); the cast of `elements`
 * params_dtype values to FP8, row- and column-wise (0 without FP8); the
 * bytes a linear layer keeps of an input of `elements` values; the cached
 * FP8 weights of `linear_params` parameters. */
void cm_fp8_shape(shape *x, const wl_workload *w, const cl_cluster *c);
double cm_linear_s(const shape *x, double m, double k, double n, double count);
double cm_fp8_cast_s(const shape *x, double elements);
double cm_linear_input_bytes(const shape *x, double elements);
double cm_fp8_weight_cache_bytes(const shape *x, double linear_params);

/* The shape of workload w on cluster c at micro-batch size b (costmodel.c). */
void cm_shape_init(shape *x, const wl_workload *w, const cl_cluster *c, int b);

/* ---- pricing primitives (costmodel.c) ------------------------------------ */

/* GEMM [m×k]·[k×n], `count` times (batched): FLOPs 2mkn, bytes of the three
 * operands, at the matmul efficiency. */
double cm_gemm_s(const shape *x, double m, double k, double n, double count);
/* Elementwise operator that moves `bytes` through HBM. */
double cm_memop_s(const shape *x, double bytes);
/* Parameters of a layer and their state and gradient bytes; expert
 * parameters have their optimizer state sharded over dp/ep. */
void cm_set_state(cm_layer *ly, const shape *x, double dense_params, double expert_params);
/* Appends a recomputable unit to the layer. */
void cm_add_unit(cm_layer *ly, const char *name, double forward_s, double bytes);

/* ---- the attention core (costmodel_attention.c) ------------------------- */

/* Scores, softmax, attention dropout and AV of one decoder layer on one rank
 * (unfused), or the FlashAttention kernel that does them all. */
typedef struct cm_attention {
    /* Forward parts (FlashAttention: the kernel in scores_s, the rest 0) and
     * their sum. */
    double scores_s, softmax_s, dropout_s, av_s, forward_s;
    /* Input-gradient parts (no weights); FlashAttention: grad_scores_s. */
    double grad_scores_s, grad_av_s, grad_softmax_s, grad_dropout_s;
    double output_s;         /* re-creating the core's output alone (the proj_input unit) */
    double kept_bytes;       /* what the core keeps for its backward (the core_attention unit),
                              * which selective recompute drops (costmodel_attention.c) */
    double block_kept_bytes; /* what one more (s/c)² context-parallel block adds to it */
} cm_attention;
void cm_attention_core(const shape *x, cm_attention *out);
/* FlashAttention's kept softmax statistics, b·(a/t)·s rows of 2 fp32 values. */
double cm_flash_statistics_bytes(const shape *x);

/* ---- multi-latent attention (costmodel_mla.c) ----------------------------- */

/* Sets the MLA fields of x from the model (nothing without MLA). */
void cm_mla_shape(shape *x, const wl_model *md);
/* Forward time of the query, key and value projections on one rank. */
double cm_mla_projections_s(const shape *x);
/* Forward time of the output projection a/t·d_v → h. */
double cm_mla_output_projection_s(const shape *x);
/* Bytes the projections keep for the backward (the qkv unit). */
double cm_mla_qkv_kept_bytes(const shape *x);
/* The attention core's output, the output projection's input. */
double cm_mla_core_output_bytes(const shape *x);
/* Model FLOPs of the attention (projections and core) on one rank, forward. */
double cm_mla_flops(const shape *x);
/* Attention parameters held by one rank. */
double cm_mla_params(const shape *x);

/* ---- context parallelism and sharding (costmodel_parallel.c) ------------- */

/* End of cm_shape_init(): the sequence per CP rank, the sharding and the
 * state bytes per parameter it implies.  Nothing changes without them. */
void cm_shape_parallel(shape *x, const wl_workload *w);
/* End of cm_build(): the model's CP and sharding fields, every layer's CP
 * exchange and ZeRO collectives, ZeRO's gathered layer in the workspace. */
void cm_parallel_finish(cm_model *m, const shape *x);
/* The same for one layer re-priced by cm_layer_at_batch(). */
void cm_parallel_layer(cm_layer *ly, const shape *x);
/* Adds the c − 1 remote attention blocks and the ring exchange to a decoder
 * layer priced on this rank's s/c tokens (costmodel_cp.c). */
void cm_cp_decoder(cm_layer *ly, const shape *x);
/* ZeRO-2/3 per-layer bytes and closed-form times (costmodel_sharding.c). */
void cm_sharding_layer(cm_layer *ly, const shape *x);
/* Bytes ZeRO holds unsharded while one layer runs (its gathered parameters
 * and its gradients before the reduce-scatter). */
double cm_sharding_working_bytes(const cm_layer *ly);

/* ---- Transformer layers (costmodel_transformer.c) ------------------------ */

void cm_embedding_layer(cm_layer *ly, const shape *x);
void cm_decoder_layer(cm_layer *ly, const shape *x, const wl_model *md, int index);
void cm_lm_head_layer(cm_layer *ly, const shape *x, bool untied);
/* Megatron-LM's divisibility rules on the model sizes; 0 or an np_exit_code. */
int cm_check_transformer(const wl_workload *w, const shape *x, np_error *err);
/* Fills m->layers with embedding, decoders, LM head; -1 when out of memory. */
int cm_build_transformer(cm_model *m, const wl_workload *w, const shape *x);

/* ---- mixture of experts (costmodel_moe.c) ---------------------------------- */

/* The shape of decoder layer `index`: x itself for a dense layer; for an
 * MoE layer a copy in *local whose dense MLP is the shared expert (f =
 * moe_shared_expert_intermediate_size, 0 when there is none). */
const shape *cm_moe_layer_shape(const shape *x, const wl_model *md, int index, shape *local);
/* Adds the router, dispatch, experts and combine to decoder layer ly, priced
 * on the shape cm_moe_layer_shape() gave, when layer `index` is MoE. */
void cm_moe_decoder(cm_layer *ly, const shape *x, const wl_model *md, int index);

/* ---- layer-by-layer models (costmodel_layers.c) -------------------------- */

/* Layer sp at micro-batch x->b; input_bytes per sample is what full
 * recompute keeps (the previous layer's output). */
void cm_custom_layer(cm_layer *ly, const shape *x, const wl_layer_spec *sp, double input_bytes);
/* Fills m->layers from the workload's layer specs; -1 when out of memory. */
int cm_build_custom(cm_model *m, const wl_workload *w, const shape *x);

#endif
