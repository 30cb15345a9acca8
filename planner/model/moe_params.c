/*
 * moe_params.c -- the MoE layer map, the expert layout, parameter counts and
 * the experts' memory per NPU (moe.h has the formulas and their sources).
 */
#include <math.h>

#include "costmodel.h"
#include "moe.h"

bool wl_moe_is_moe_layer(const wl_model *m, int layer)
{
    if (m->num_experts <= 0 || layer < 0 || layer >= WL_MAX_LAYERS || layer >= m->num_layers)
        return false;
    return (m->moe_layer_freq.map[layer >> 3] >> (layer & 7)) & 1u;
}

int wl_moe_num_layers(const wl_model *m)
{
    int n = 0;
    for (int l = 0; l < m->num_layers; l++)
        n += wl_moe_is_moe_layer(m, l);
    return n;
}

static int at_least_1(int v) { return v > 0 ? v : 1; }

void moe_layout_of(const wl_workload *w, moe_layout *out)
{
    const wl_parallel *p = &w->parallel;
    out->tp = at_least_1(p->tensor_model_parallel_size);
    out->cp = at_least_1(p->context_parallel_size);
    out->dp = at_least_1(p->data_parallel_size);
    out->ep = at_least_1(p->expert_model_parallel_size);
    out->etp = p->expert_tensor_parallel_size > 0 ? p->expert_tensor_parallel_size : out->tp;
    out->edp = at_least_1(out->tp * out->cp * out->dp / (out->ep * out->etp));
    out->local_experts = w->model.num_experts > 0 ? w->model.num_experts / out->ep : 0;
}

/* One layer's attention: h(h + 2gd) + h² for MHA/GQA.  Multi-latent
 * attention (DeepSeek-V2, arXiv 2405.04434, section 2.1; V3's config) with
 * q_lora_rank r_q, kv_lora_rank r_kv, head dims d_n (no position), d_r
 * (rotary) and d_v over a heads:
 *   queries  h·r_q + r_q (its norm) + r_q·a·(d_n + d_r), or h·a·(d_n + d_r)
 *            without the query compression (r_q = 0)
 *   keys, values  h·(r_kv + d_r) + r_kv (its norm) + r_kv·a·(d_n + d_v)
 *   output   a·d_v·h */
double moe_attention_params(const wl_model *m)
{
    double h = (double)m->hidden_size;
    double a = m->num_attention_heads > 0 ? m->num_attention_heads : 1;
    if (!m->multi_latent_attention) {
        double g = m->num_query_groups > 0 ? m->num_query_groups : a, d = h / a;
        return h * (h + 2.0 * g * d) + h * h;
    }
    double rq = m->q_lora_rank, rkv = m->kv_lora_rank, dn = m->qk_head_dim;
    double dr = m->qk_pos_emb_head_dim, dv = m->v_head_dim;
    double q = rq > 0 ? h * rq + rq + rq * a * (dn + dr) : h * a * (dn + dr);
    double kv = h * (rkv + dr) + rkv + rkv * a * (dn + dv);
    return q + kv + a * dv * h;
}

void moe_count_params(const wl_workload *w, moe_params *out)
{
    const wl_model *m = &w->model;
    double h = (double)m->hidden_size, V = (double)m->vocab_size;
    double mats = m->swiglu ? 3.0 : 2.0, norm = m->swiglu ? h : 2.0 * h;
    double E = m->num_experts, k = m->moe_router_topk;
    *out = (moe_params){0};
    out->embedding = V * h * (m->untie_embeddings_and_output_weights ? 2.0 : 1.0);
    out->attention = m->num_layers * (moe_attention_params(m) + 2.0 * norm) + norm;
    out->one_expert = mats * h * (double)m->moe_ffn_hidden_size;
    double shared = mats * h * (double)m->moe_shared_expert_intermediate_size;
    double active_experts = 0.0;
    for (int l = 0; l < m->num_layers; l++) {
        if (!wl_moe_is_moe_layer(m, l)) {
            out->dense_mlp += mats * h * (double)m->ffn_hidden_size;
            continue;
        }
        out->routers += h * E;
        out->routed_experts += E * out->one_expert;
        out->shared_experts += shared;
        active_experts += k * out->one_expert;
    }
    double common =
        out->embedding + out->attention + out->dense_mlp + out->routers + out->shared_experts;
    out->total = common + out->routed_experts;
    out->active = common + active_experts;
}

void moe_expert_memory_of(const wl_workload *w, moe_expert_memory *out)
{
    const wl_model *m = &w->model;
    moe_layout x;
    moe_layout_of(w, &x);
    double mats = m->swiglu ? 3.0 : 2.0;
    cm_precision prec;
    cm_precision_of(&w->training, &prec);
    wl_dp_sharding s = w->training.data_parallel_sharding_strategy;
    if (s < WL_SHARD_NO_SHARD || s >= WL_SHARD_COUNT)
        s = WL_SHARD_NO_SHARD;
    if (w->training.use_distributed_optimizer && s < WL_SHARD_OPTIM)
        s = WL_SHARD_OPTIM;
    out->params =
        x.local_experts * mats * (double)m->hidden_size * (double)m->moe_ffn_hidden_size / x.etp;
    out->state_bytes = out->params * cm_sharded_state_bytes_per_param(&prec, s, x.edp);
    out->grad_bytes = out->params * prec.grad;
}

double moe_capacity(double tokens, int topk, int num_experts, double capacity_factor)
{
    if (capacity_factor <= 0 || num_experts <= 0)
        return 0.0;
    return ceil(tokens * topk / num_experts * capacity_factor);
}
