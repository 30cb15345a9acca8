/*
 * costmodel_moe.c -- the MoE part of a decoder layer (Megatron-Core's
 * MoELayer): router, token dispatch, routed experts, combine, at a balanced
 * routing; the replay of a token trace re-prices the experts per NPU from
 * these figures.
 *
 * Notation (costmodel_internal.h, moe.h): E experts, k = moe_router_topk,
 * f_e = moe_ffn_hidden_size, E_l = E/ep local experts, etp expert tensor
 * parallelism, n_l the tokens one NPU routes per micro-batch (n/t: Megatron
 * requires sequence parallelism with MoE and t > 1), mats = 3 with SwiGLU
 * else 2, D bytes of the dtype.
 *
 * Tokens.  The EP ranks' n_l·k assignments spread evenly over the ep ranks,
 * so an EP rank receives n_l·k, and its etp expert-TP ranks all-gather
 * theirs: every NPU computes T = n_l·k·etp assignments, T/E_l per local
 * expert.  With a capacity factor cf each expert takes at most
 * C = ceil(n_l·k/E·cf) tokens from each source rank (Megatron's
 * get_capacity on the source's n_l·k assignments; Switch Transformer,
 * Fedus et al. 2021, section 2.2, "expert capacity = tokens per batch /
 * experts × capacity factor"), so at most ep·etp·C per local expert; more
 * is dropped (the token keeps its residual).  With
 * moe_pad_expert_input_to_capacity every expert computes exactly ep·etp·C
 * rows, the padding beyond the routed tokens included.
 *
 * Sent tokens.  A source permutes, sends (dispatch) and gets back (combine)
 * S_t tokens: its n_l·k assignments dropless; E·C padded (each expert's
 * slot filled to C); dropping without padding only the kept ones,
 * Σ_e min(c_e, C) = E·min(n_l·k/E, C) at a balanced routing.  Megatron-Core
 * drops before the permute: apply_router_token_dropping() clears the
 * dropped entries of the routing map, and MoEAlltoAllTokenDispatcher sizes
 * the permute (num_out_tokens) and the all-to-all's input_splits from that
 * map, so a dropped token is never sent.
 *
 * Operators, forward (costmodel.c's roofline):
 *   router     GEMM [n_l × h]·[h × E], then softmax and top-k over n_l·E
 *              fp32 scores (3 passes)
 *   permute    read n_l·h·D, write S_t·h·D (Megatron's permute)
 *   dispatch   all-to-all of S_t·h·D among the ep ranks (alltoall
 *              dispatcher), then an all-gather over the etp ranks; the
 *              allgather dispatcher all-gathers n_l·h·D over the ep·etp
 *              ranks instead
 *   experts    grouped GEMMs, E_l of them: [T/E_l × h]·[h × mats'·f_e/etp]
 *              (mats' = 2 with SwiGLU), activation over T·f_e/etp, and
 *              [T/E_l × f_e/etp]·[f_e/etp × h]
 *   combine    reduce-scatter over etp, all-to-all back, unpermute
 *              (read S_t·h·D and the probabilities, write n_l·h·D)
 * Backward: the router's and the experts' input-gradient GEMMs once each,
 * the elementwise ops' backward (3 tensors where the forward moved 2), the
 * two all-to-alls again; W: the router's and experts' weight GEMMs.
 *
 * All-to-all closed form, for the run's --ep-alltoall-algorithm
 * (cl_cluster.ep_alltoall; the algorithms are sim/net/collective_alltoall.c's).
 * The EP group's ep members sit etp ranks apart (Megatron's expert rank
 * order etp-ep-edp), so a server of P NPUs holds L = min(ep, max(1, P/etp))
 * of them; a member sends L−1 blocks of b = S/ep over the scale-up fabric
 * and ep−L over its NIC:
 *   concurrent (the default)  max((L−1)(α_up + b/B_up), α_out + (ep−L)·b/B_out):
 *                             the NIC's blocks share it at once, the
 *                             scale-up blocks leave the port one after the
 *                             other meanwhile (the second term only when
 *                             ep > L);
 *   pairwise                  (L−1)(α_up + b/B_up) + (ep−L)(α_out + b/B_out):
 *                             one block per step;
 *   bruck                     Σ_k (α + c_k·b/B) over its ⌈log2 ep⌉ steps,
 *                             c_k the blocks of step k; every step crosses
 *                             servers when ep > L (some member's partner
 *                             i + 2^k lies in the next server), none when
 *                             the group is inside one.
 * Until the engine replays the all-to-alls, the two of a forward and the two
 * of a backward are part of the layer's TP time (tp_forward_s,
 * tp_backward_s), like the other collectives inside a layer.
 *
 * Kept for the backward (AdaPipe units, so recompute can drop them):
 *   router_probs      n_l·E·4 + n_l·k·8 (fp32 probabilities, int64 indices)
 *   expert_input      T·h·D (the permuted, gathered tokens: FC1's input)
 *   expert_fc1_output T·mats'·f_e/etp·D
 *   expert_act_output T·f_e/etp·D (Megatron's "moe_act" recompute module)
 *   combine_input     S_t·h·D (expert outputs before the weighted sum: what
 *                     the combine's all-to-all brought back)
 * Full recompute keeps the layer input only and re-runs all of it,
 * all-to-alls included.
 *
 * Parameters: the router h·E is dense (replicated over TP, reduced over
 * DP); E_l experts of mats·h·f_e/etp are expert parameters, their state
 * sharded over the expert-data-parallel group (moe.h).
 */
#include <math.h>

#include "costmodel_internal.h"
#include "moe.h"

const shape *cm_moe_layer_shape(const shape *x, const wl_model *md, int index, shape *local)
{
    if (!wl_moe_is_moe_layer(md, index))
        return x;
    *local = *x;
    local->f = (double)md->moe_shared_expert_intermediate_size;
    local->mlp_width = local->swiglu ? 2.0 * local->f : local->f;
    return local;
}

/* The all-to-all of a send buffer of `bytes` among ep members etp ranks
 * apart, by c->ep_alltoall (closed forms above). */
static double alltoall_s(const cl_cluster *c, int ep, int etp, double bytes)
{
    if (ep <= 1)
        return 0.0;
    int per_server = c->npus_per_node > 0 ? c->npus_per_node / etp : ep;
    int local = per_server < 1 ? 1 : (per_server > ep ? ep : per_server);
    double block = bytes / ep;
    double up = (local - 1) * cl_p2p_time(c, block, 1);
    switch (c->ep_alltoall) {
    case CL_A2A_PAIRWISE:
        return up + (ep - local) * cl_p2p_time(c, block, 0);
    case CL_A2A_BRUCK: {
        double t = 0.0;
        for (int k = 0; (1L << k) < ep; k++)
            t += cl_p2p_time(c, (double)cl_bruck_blocks(ep, k) * block, local == ep);
        return t;
    }
    case CL_A2A_CONCURRENT:
    default:
        return ep > local ? fmax(up, cl_p2p_time(c, (ep - local) * block, 0)) : up;
    }
}

/* Ring all-gather of an output of `bytes` over ranks members etp apart: on
 * the scale-up fabric when they share a server. */
static double gather_s(const cl_cluster *c, int ranks, int stride, double bytes)
{
    if (ranks <= 1)
        return 0.0;
    bool in_node = c->npus_per_node <= 0 || (long)ranks * stride <= c->npus_per_node;
    return (ranks - 1) * cl_p2p_time(c, bytes / ranks, in_node);
}

/* S_t: the tokens one NPU permutes, sends in the dispatch and gets back in
 * the combine (above, "Sent tokens"). */
static double sent_tokens(const cm_moe_cost *m, double nl, double k, double E, bool pad)
{
    if (m->capacity <= 0)
        return nl * k;
    return pad ? E * m->capacity : E * fmin(nl * k / E, m->capacity);
}

/* Token counts of one NPU at a balanced routing. */
static void moe_tokens(cm_moe_cost *m, const shape *x, const wl_model *md, const moe_layout *ml)
{
    double k = md->moe_router_topk;
    m->routed_tokens = x->nl;
    double routed = x->nl * k * ml->etp; /* T */
    double per_expert = routed / ml->local_experts;
    m->capacity =
        moe_capacity(x->nl, md->moe_router_topk, md->num_experts, md->moe_expert_capacity_factor);
    double limit = m->capacity > 0 ? ml->ep * ml->etp * m->capacity : per_expert;
    double kept = fmin(per_expert, limit);
    double computed = md->moe_pad_expert_input_to_capacity ? limit : kept;
    m->dropped_tokens = (per_expert - kept) * ml->local_experts;
    m->padding_tokens = (computed - kept) * ml->local_experts;
    m->expert_tokens = computed * ml->local_experts;
}

void cm_moe_decoder(cm_layer *ly, const shape *x, const wl_model *md, int index)
{
    if (!wl_moe_is_moe_layer(md, index))
        return;
    moe_layout ml;
    moe_layout_of(x->w, &ml);
    cm_moe_cost *m = &ly->moe;
    m->is_moe = 1;
    moe_tokens(m, x, md, &ml);
    double h = x->h, E = md->num_experts, k = md->moe_router_topk, D = x->D;
    double fe = (double)md->moe_ffn_hidden_size / ml.etp;
    double fc1_cols = (x->swiglu ? 2.0 : 1.0) * fe;
    double nl = x->nl, T = m->expert_tokens, El = ml.local_experts;
    double per_expert = T / El;
    double sent = sent_tokens(m, nl, k, E, md->moe_pad_expert_input_to_capacity);

    /* forward */
    double router = cm_gemm_s(x, nl, h, E, 1.0);
    double scores = cm_memop_s(x, 3.0 * nl * E * FP32_BYTES);
    double permute = cm_memop_s(x, (nl + sent) * h * D);
    double fc1 = cm_linear_s(x, per_expert, h, fc1_cols, El);
    double act = cm_memop_s(x, T * fe * D * (x->swiglu ? 3.0 : 2.0));
    double fc2 = cm_linear_s(x, per_expert, fe, h, El);
    double unpermute = cm_memop_s(x, (nl + sent) * h * D + sent * FP32_BYTES);
    m->expert_fc1_s = fc1;
    m->expert_act_s = act;
    m->expert_fc2_s = fc2;
    m->expert_forward_s = fc1 + act + fc2;
    m->expert_backward_s = fc1 + fc2 + cm_memop_s(x, T * fe * D * (x->swiglu ? 5.0 : 3.0));
    m->expert_weight_grad_s = fc1 + fc2;
    double router_backward = cm_gemm_s(x, nl, E, h, 1.0) + cm_memop_s(x, 3.0 * nl * E * FP32_BYTES);
    double shuffle_backward = cm_memop_s(x, 1.5 * (nl + sent) * h * D) * 2.0;
    ly->forward_s += router + scores + permute + m->expert_forward_s + unpermute;
    ly->backward_s += router_backward + shuffle_backward + m->expert_backward_s;
    ly->weight_grad_s += cm_gemm_s(x, h, nl, E, 1.0) + m->expert_weight_grad_s;

    /* dispatch and combine */
    const cl_cluster *c = x->c;
    if (md->moe_token_dispatcher_type == WL_MOE_ALLTOALL) {
        m->a2a_bytes = sent * h * D;
        m->a2a_s = alltoall_s(c, ml.ep, ml.etp, m->a2a_bytes);
        m->etp_gather_s = gather_s(c, ml.etp, 1, T * h * D);
    } else { /* allgather: every rank of the ep·etp group gets all tokens */
        int ranks = ml.ep * ml.etp;
        m->a2a_bytes = 0.0;
        m->a2a_s = 0.0;
        m->etp_gather_s = gather_s(c, ranks, 1, ranks * nl * h * D);
    }
    double comm = 2.0 * (m->a2a_s + m->etp_gather_s);
    ly->tp_forward_s += comm;
    ly->tp_backward_s += comm;

    /* kept for the backward */
    double before = ly->activation_bytes[RECOMPUTE_NONE];
    m->first_unit = ly->num_units; /* in the order of CM_MOE_UNIT_* */
    cm_add_unit(ly, "router_probs", router + scores, nl * E * FP32_BYTES + nl * k * 8.0);
    cm_add_unit(ly, "expert_input", permute + m->a2a_s + m->etp_gather_s, T * h * D);
    cm_add_unit(ly, "expert_fc1_output", fc1, T * fc1_cols * D);
    cm_add_unit(ly, "expert_act_output", act, T * fe * D);
    cm_add_unit(ly, "combine_input", fc2 + m->etp_gather_s + m->a2a_s, sent * h * D);
    double added = 0.0;
    for (int u = ly->num_units - 5; u < ly->num_units; u++)
        added += ly->units[u].activation_bytes;
    ly->activation_bytes[RECOMPUTE_NONE] = before + added;
    ly->activation_bytes[RECOMPUTE_SELECTIVE] += added;
    ly->recompute_s[RECOMPUTE_FULL] = ly->forward_s + ly->tp_forward_s;

    /* parameters: the router is dense, the experts are not */
    double dense = ly->params + h * E;
    m->expert_params = El * (x->swiglu ? 3.0 : 2.0) * h * fe;
    cm_set_state(ly, x, dense, m->expert_params);
    m->expert_grad_bytes = m->expert_params * x->precision.grad;
    /* model FLOPs: the routed tokens the experts keep, no padding */
    double kept = T - m->padding_tokens;
    ly->forward_flops += 2.0 * nl * h * E + 2.0 * kept * (x->swiglu ? 3.0 : 2.0) * h * fe;
}
