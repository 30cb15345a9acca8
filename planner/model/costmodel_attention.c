/*
 * costmodel_attention.c -- the attention core of a decoder layer on one
 * rank: QKᵀ, softmax, attention dropout and AV, either as separate kernels
 * (Megatron's unfused path) or as one FlashAttention-2 kernel
 * (use_flash_attn).  Notation: costmodel_internal.h; E = b·(a/t)·s² score
 * elements per rank.
 *
 * Unfused (Korthikanti et al. 2022, section 4.1).  Forward: the batched GEMMs
 * QKᵀ and AV (b·a/t products of s×d by d×s and s×s by s×d, 2bs²h/t FLOPs
 * each), a softmax pass reading and writing E·D bytes and, when the attention
 * dropout probability is above 0, a dropout pass reading E·D and writing the
 * E·D output and an E-byte mask.  Kept for the backward: the softmax output
 * (E·D), and with dropout its mask (E) and output (E·D): 5as²b/t bytes in
 * Korthikanti's bf16 accounting, 2as²b/t without dropout.  Backward: each
 * GEMM twice (both operands need gradients), the softmax backward (3 passes
 * of E·D) and the dropout backward (E(2D+1)).  PyTorch's dropout with p = 0
 * returns its input (ATen's dropout: no kernel, no mask), so a probability
 * of 0 removes the pass and its mask.  Selective recompute drops everything
 * the core keeps and re-runs its forward.
 *
 * FlashAttention-2 (Dao 2023, "FlashAttention-2: Faster Attention with Better
 * Parallelism and Work Partitioning").  One kernel tiles Q, K and V through
 * on-chip memory and never writes the s×s scores: it reads Q, K, V, writes
 * the output O and, per row of every head, the softmax statistics the
 * backward needs.  FLOPs, as the paper counts them for its benchmarks
 * (section 4.1): forward 4·s²·d·heads per sample, i.e. 4bs²h/t per rank
 * (the two matmuls), backward 2.5 times that, 10bs²h/t (five matmuls: the
 * scores are recomputed from Q, K and the statistics, then dV, dP, dQ, dK).
 * Every model here is a causal decoder, and the causal mask lets the kernel
 * skip the blocks above the diagonal: it does half the s² work, and
 * FlashAttention-2's benchmarks count it so ("with causal mask, we divide
 * this number by 2", section 4.1), which is how the published efficiencies
 * (attention_efficiency) are measured.  So the kernel's time counts half
 * (CAUSAL_WORK); the model FLOPs of the MFU keep Megatron's full s²
 * (costmodel_transformer.c).  Until 6 December 2026 the time counted the
 * full s², twice the kernel's work.  Both passes run at the platform's
 * attention_efficiency (costmodel_efficiency.c) against their HBM traffic:
 * forward Q, K, V in and O out plus the statistics; backward Q, K, V, O, dO
 * and the statistics in, dQ, dK, dV out.  Attention dropout happens inside
 * the kernel from the RNG state, with no mask kept and no separate pass; its
 * arithmetic is not timed.
 *
 * What FlashAttention keeps: Q, K, V (the qkv unit) and O (the proj_input
 * unit) as before, and the statistics: two fp32 values per row (the running
 * max and sum of FlashAttention's online softmax), b·(a/t)·s·8 bytes.
 * FlashAttention-2 folds them into one logsumexp, so this counts 4 bytes per
 * row more than the kernel keeps (under 0.1% of a layer's activations).
 *
 * Multi-latent attention (costmodel_mla.c) has query and key heads of d_qk
 * and value heads of d_v instead of d: QKᵀ multiplies s×d_qk by d_qk×s, AV
 * s×s by s×d_v, FlashAttention's FLOPs are 2bs²(a/t)(d_qk + d_v) and its
 * Q, K, V and O tensors are n·(a/t) times d_qk, d_qk, d_v and d_v elements.
 *
 * Selective recompute with FlashAttention re-runs the kernel's forward in
 * the backward and saves only the statistics.  Megatron-Core checkpoints the
 * core attention whatever kernel runs it (megatron/core/transformer/
 * attention.py: checkpoint_core_attention is recompute_granularity ==
 * 'selective', with "core_attn" in recompute_modules since those were
 * introduced, and Attention.forward then calls
 * _checkpointed_attention_forward on Transformer Engine's fused or flash
 * kernel alike).  The checkpoint keeps its inputs Q, K and V, which the qkv
 * unit holds anyway, and the output O stays the projection's input, so what
 * it frees is the kernel's own statistics (kept_bytes).  Until 6 December
 * 2026 the model followed the legacy ParallelAttention, which skips the
 * checkpoint under use_flash_attn, and priced selective as none.  With
 * context parallelism every rank keeps one set of statistics per row (the
 * ring merges the blocks' into it), so a remote block keeps nothing of its
 * own (block_kept_bytes 0; costmodel_cp.c), and the recompute re-runs the
 * whole ring, exchanges included.
 */
#include "costmodel_internal.h"

double cm_flash_statistics_bytes(const shape *x)
{
    return x->b * (x->a / x->t) * x->s * 2.0 * FP32_BYTES;
}

static void unfused_core(const shape *x, cm_attention *o)
{
    double heads = x->a / x->t, E = x->b * heads * x->s * x->s;
    double dropout_bytes = E * (2.0 * x->D + 1.0);
    o->scores_s = cm_gemm_s(x, x->s, x->dqk, x->s, x->b * heads);
    o->softmax_s = cm_memop_s(x, 2.0 * E * x->D);
    o->dropout_s = x->attention_dropout ? cm_memop_s(x, dropout_bytes) : 0.0;
    o->av_s = cm_gemm_s(x, x->s, x->s, x->dv, x->b * heads);
    o->grad_scores_s = 2.0 * o->scores_s;
    o->grad_av_s = 2.0 * o->av_s;
    o->grad_softmax_s = cm_memop_s(x, 3.0 * E * x->D);
    o->grad_dropout_s = x->attention_dropout ? cm_memop_s(x, dropout_bytes) : 0.0;
    o->output_s = o->av_s;
    o->kept_bytes = E * x->D + (x->attention_dropout ? E * (x->D + 1.0) : 0.0);
    o->block_kept_bytes = o->kept_bytes;
}

/* The share of the s×s attention work a causal kernel does (above). */
#define CAUSAL_WORK 0.5

static void flash_core(const shape *x, cm_attention *o)
{
    double eff = cm_attention_efficiency(x->c);
    double core_flops = 4.0 * x->b * x->s * x->s * x->h / x->t;
    double q = x->n * x->h / x->t * x->D, kv = 2.0 * x->n * x->g * x->d / x->t * x->D, out = q;
    if (x->mla) { /* query/key heads of d_qk, value heads of d_v (costmodel_mla.c) */
        double heads = x->a / x->t;
        core_flops = 2.0 * x->b * x->s * x->s * heads * (x->dqk + x->dv);
        q = x->n * heads * x->dqk * x->D;
        kv = x->n * heads * (x->dqk + x->dv) * x->D;
        out = x->n * heads * x->dv * x->D;
    }
    core_flops *= CAUSAL_WORK;
    double stats = cm_flash_statistics_bytes(x);
    double forward_bytes = q + kv + out + stats;                   /* Q, K, V in; O out */
    double backward_bytes = (q + kv + 2.0 * out) + stats + q + kv; /* Q K V O dO in; dQ dK dV */
    o->scores_s = cm_roofline_s(x->c, core_flops, forward_bytes, eff);
    o->grad_scores_s = cm_roofline_s(x->c, 2.5 * core_flops, backward_bytes, eff);
    o->output_s = o->scores_s;
    o->kept_bytes = stats;
    o->block_kept_bytes = 0.0; /* one set of statistics per row, local or remote */
}

void cm_attention_core(const shape *x, cm_attention *out)
{
    *out = (cm_attention){0};
    if (x->flash)
        flash_core(x, out);
    else
        unfused_core(x, out);
    out->forward_s = out->scores_s + out->softmax_s + out->dropout_s + out->av_s;
}
