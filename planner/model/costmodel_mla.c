/*
 * costmodel_mla.c -- multi-head latent attention (MLA) in the decoder layer:
 * DeepSeek-V2 (arXiv 2405.04434, section 2.1) and V3 (arXiv 2412.19437,
 * section 2.1.1), as Megatron-LM's MLASelfAttention runs it in training.
 * Notation: costmodel_internal.h, and r_q (q_lora_rank, 0: no query
 * compression), r_kv (kv_lora_rank), d_n (qk_head_dim, the part of a query
 * or key head without position), d_r (qk_pos_emb_head_dim, the rotary part),
 * d_v (v_head_dim), a heads; d_qk = d_n + d_r.
 *
 * Projections, per token (the parameter count is moe_attention_params()):
 *   query down  h → r_q, its RMSNorm, query up r_q → a·d_qk
 *               (without compression one projection h → a·d_qk)
 *   kv down     h → r_kv + d_r (the latent and the shared rotary key), the
 *               latent's RMSNorm, kv up r_kv → a·(d_n + d_v)
 *   output      a·d_v → h
 * Under tensor parallelism Megatron splits the up projections and the
 * output by heads (column- and row-parallel) and runs the down projections
 * whole on every rank (parallel_mode "duplicated"), so their time is paid on
 * every rank while the model FLOPs count them once.  Training materialises
 * every head's keys and values, so the attention core is MHA's over a heads
 * with a query/key head of d_qk and a value head of d_v (costmodel_attention.c
 * reads x->dqk and x->dv; for MHA and GQA both are d).
 *
 * What the backward keeps (the qkv unit): the two down projections' outputs
 * and their normalised forms (the up projections' inputs), and Q, K and V
 * of the a/t local heads: n·(2r_q + 2r_kv + d_r + (a/t)(2d_qk + d_v))·D.
 * The core's output (proj_input) is n·(a/t)·d_v·D.
 *
 * Not modelled: rotary embedding and the concatenation of the rotary and
 * position-free parts (elementwise passes; RoPE is not timed for MHA either),
 * context parallelism with MLA (refused by cm_check_transformer()).
 */
#include "costmodel_internal.h"

void cm_mla_shape(shape *x, const wl_model *md)
{
    if (!md->multi_latent_attention)
        return;
    x->mla = true;
    x->rq = md->q_lora_rank;
    x->rkv = md->kv_lora_rank;
    x->dr = md->qk_pos_emb_head_dim;
    x->dqk = md->qk_head_dim + x->dr;
    x->dv = md->v_head_dim;
    x->g = x->a; /* every head has its own key and value after the up projection */
}

/* Query, key and value projections on one rank, forward. */
double cm_mla_projections_s(const shape *x)
{
    double heads = x->a / x->t, n = x->n;
    double q = x->rq > 0
                   ? cm_linear_s(x, n, x->h, x->rq, 1.0) + cm_memop_s(x, 2.0 * n * x->rq * x->D) +
                         cm_linear_s(x, n, x->rq, heads * x->dqk, 1.0)
                   : cm_linear_s(x, n, x->h, heads * x->dqk, 1.0);
    double kv = cm_linear_s(x, n, x->h, x->rkv + x->dr, 1.0) +
                cm_memop_s(x, 2.0 * n * x->rkv * x->D) +
                cm_linear_s(x, n, x->rkv, heads * (x->dqk - x->dr + x->dv), 1.0);
    return q + kv;
}

double cm_mla_output_projection_s(const shape *x)
{
    return cm_linear_s(x, x->n, x->a / x->t * x->dv, x->h, 1.0);
}

double cm_mla_qkv_kept_bytes(const shape *x)
{
    double latent = 2.0 * x->rq + 2.0 * x->rkv + x->dr;
    return x->n * (latent + x->a / x->t * (2.0 * x->dqk + x->dv)) * x->D;
}

double cm_mla_core_output_bytes(const shape *x) { return x->n * x->a / x->t * x->dv * x->D; }

/* Model FLOPs of one rank's attention, forward: the projections' 2·n·params
 * (norm weights aside) and the core's QKᵀ and AV over the full s² (as the
 * MHA count), all over t. */
double cm_mla_flops(const shape *x)
{
    double a = x->a, h = x->h, dn = x->dqk - x->dr;
    double q = x->rq > 0 ? h * x->rq + x->rq * a * x->dqk : h * a * x->dqk;
    double kv = h * (x->rkv + x->dr) + x->rkv * a * (dn + x->dv);
    double out = a * x->dv * h;
    double core = 2.0 * x->b * x->s * x->s * a * (x->dqk + x->dv);
    return (2.0 * x->n * (q + kv + out) + core) / x->t;
}

/* Attention parameters one rank holds: the down projections and their norms
 * whole, the up projections and the output over t.  At t = 1 this is
 * moe_attention_params(). */
double cm_mla_params(const shape *x)
{
    double a = x->a, h = x->h, dn = x->dqk - x->dr;
    double whole = (x->rq > 0 ? h * x->rq + x->rq : 0.0) + h * (x->rkv + x->dr) + x->rkv;
    double split = (x->rq > 0 ? x->rq * a * x->dqk : h * a * x->dqk) + x->rkv * a * (dn + x->dv) +
                   a * x->dv * h;
    return whole + split / x->t;
}
