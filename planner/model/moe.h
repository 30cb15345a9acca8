/*
 * moe.h -- Mixture-of-Experts in the model layer: which decoder layers are
 * MoE, the parallel layout of the expert layers, parameter counts (total and
 * active) and the per-NPU memory of the experts.
 *
 * Megatron-LM's MoE (Megatron-Core, megatron/core/transformer/moe): an MoE
 * layer replaces the MLP of a decoder layer by a router (a linear h → E,
 * softmax or sigmoid, top-k), a token dispatcher that sends every token to
 * its k experts (all-to-all among the EP ranks, or all-gather), E routed
 * experts, each an MLP of moe_ffn_hidden_size (two matrices, three with
 * SwiGLU), an optional shared expert of moe_shared_expert_intermediate_size
 * that every token runs (DeepSeekMoE), and the combine that brings the k
 * outputs back and sums them weighted by the router's probabilities.
 *
 * Layout (parallel_state.initialize_model_parallel with "MoE parallel
 * folding"): the dense part of a stage uses tp x cp x dp ranks; the expert
 * layers use the same ranks as etp x ep x edp, so the expert data-parallel
 * group (over which expert gradients are reduced and, with the distributed
 * optimizer, the expert optimizer state is sharded) has
 *     edp = tp·cp·dp / (ep·etp)
 * ranks.  Each EP rank holds E/ep experts, each split over etp ranks.
 */
#ifndef MOE_H
#define MOE_H

#include <stdbool.h>
#include <stddef.h>

#include "workload.h"

/* True when decoder layer `layer` (0-based) of a model with experts is an
 * MoE layer (model.moe_layer_freq); false for a dense model. */
bool wl_moe_is_moe_layer(const wl_model *m, int layer);
/* Number of MoE decoder layers. */
int wl_moe_num_layers(const wl_model *m);
/* Expands a --moe-layer-freq list expression ("([0]*3+[1]*58)") into
 * bits[0 .. *length) (bits holds WL_MAX_LAYERS + 1 entries).  0, or -1 with
 * why[] naming the problem and where (workload_moe.c). */
int wl_moe_pattern_expand(const char *text, unsigned char *bits, int *length, char *why,
                          size_t why_size);

/* The expert layers' parallel layout of workload w. */
typedef struct moe_layout {
    int tp, cp, dp;    /* the dense layout of one stage */
    int ep, etp;       /* expert parallel, expert tensor parallel */
    int edp;           /* expert data parallel: tp·cp·dp / (ep·etp) */
    int local_experts; /* E / ep */
} moe_layout;
void moe_layout_of(const wl_workload *w, moe_layout *out);

/* Parameters of the whole model (not per NPU), Transformer models only.
 * Counted as the published totals count them: embedding V·h (vocabulary
 * unpadded), the LM head V·h when untied, per decoder layer attention
 * h(h + 2gd) + h², two norms, then a dense MLP (mats·h·ffn) or, in an MoE
 * layer, the router h·E, E routed experts mats·h·moe_ffn and the shared
 * expert mats·h·moe_shared; the final norm.  mats = 3 with SwiGLU, else 2;
 * a norm has h weights (RMSNorm, with SwiGLU) or 2h (LayerNorm).  Active
 * parameters count k routed experts instead of E. */
typedef struct moe_params {
    double total, active;
    double embedding;      /* embedding + untied LM head */
    double attention;      /* all layers, with their norms and the final norm */
    double dense_mlp;      /* MLPs of the dense layers */
    double routers;        /* all MoE layers */
    double routed_experts; /* all MoE layers, all E experts */
    double shared_experts; /* all MoE layers */
    double one_expert;     /* mats·h·moe_ffn */
} moe_params;
void moe_count_params(const wl_workload *w, moe_params *out);
/* One decoder layer's attention parameters, without its norm: MHA/GQA's
 * h(h + 2gd) + h², or multi-latent attention's projections and their two
 * norms (model.multi_latent_attention; moe_params.c gives the formula).
 * The cost model's time and memory keep MHA's shape (docs/moe.md). */
double moe_attention_params(const wl_model *m);

/* Memory of the experts of one MoE layer on one NPU (closed forms, bytes):
 *   params        E/ep experts split over etp: (E/ep)·mats·h·moe_ffn/etp
 *   state_bytes   params × the bytes per parameter of weights, gradients
 *                 and optimizer state with the optimizer state sharded over
 *                 edp (Megatron's distributed-optimizer table, bf16:
 *                 6 + 12/edp; 18 without the distributed optimizer)
 *   grad_bytes    params × G (fp32 main gradients 4; 2 for fp16 and bf16 ones), the
 *                 expert-DP all-reduce's payload
 * Dense parameters (router, shared expert) are not here: they follow the
 * dense layout. */
typedef struct moe_expert_memory {
    double params, state_bytes, grad_bytes;
} moe_expert_memory;
void moe_expert_memory_of(const wl_workload *w, moe_expert_memory *out);

/* Expert capacity per expert and source rank, Megatron's
 * get_capacity(num_tokens · topk, num_experts, capacity_factor) =
 * ceil(tokens·k/E · cf), and Switch's C = ⌈cf·T·k/E⌉ (Fedus et al. 2021, eq.
 * for expert capacity, k = 1 there); 0 when cf is 0 (no limit). */
double moe_capacity(double tokens, int topk, int num_experts, double capacity_factor);

#endif
