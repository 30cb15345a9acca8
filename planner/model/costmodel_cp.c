/*
 * costmodel_cp.c -- context parallelism in the decoder layer: Megatron-LM's
 * ring attention (--context-parallel-size c, the "p2p" CP communication
 * type of Transformer Engine's attention with context parallelism).
 *
 * Every CP rank holds s/c tokens of each sequence (Megatron splits a
 * sequence into 2c chunks and gives rank r chunks r and 2c−1−r, so that the
 * causal work balances).  costmodel_transformer.c prices the layer on those
 * s/c tokens, which makes everything but the attention core 1/c of the
 * whole, and prices one attention block: the rank's queries against its own
 * keys, (s/c)² per head.  The queries must also meet the c − 1 other ranks'
 * keys: ring attention passes the K and V chunks round the CP ring, c − 1
 * steps per forward, each computing one more (s/c)² block while the next
 * chunk travels.  This file adds those c − 1 remote blocks and the exchange:
 *
 *   block forward   QKᵀ, softmax, dropout, AV on (s/c)² per head (the same
 *                   operators and roofline as the transformer's core:
 *                   unfused in full; a FlashAttention block's time counts
 *                   the causal half, as the local one's does, while the
 *                   model FLOPs count it in full, as Megatron's count does)
 *   block backward  both GEMMs twice, softmax and dropout backward
 *   message         K and V of one chunk: 2·b·(s/c)·(g·d/t)·D bytes per TP rank
 *   forward         c − 1 steps, each a message to the ring successor
 *                   overlapped with one block: exposed per step
 *                   max(0, α + message/B − block forward)
 *   backward        c − 1 steps, each the K/V message and the gradient dK/dV
 *                   message (the same size) overlapped with one block's
 *                   backward: 2(c − 1) messages, exposed per step
 *                   max(0, α + 2·message/B − block backward)
 *   activations     unfused, the c − 1 remote blocks keep their softmax
 *                   output, dropout mask and output as the local one does;
 *                   with FlashAttention they keep nothing of their own (one
 *                   set of statistics per row, below); either way the core's
 *                   bytes, like everything else, are 1/c of the unsplit
 *                   layer's
 *   recompute       full recompute re-runs the remote blocks and the forward
 *                   exchange; so does selective (the core), with either
 *                   kernel, and so does AdaPipe's proj_input unit alone
 *                   (the core's output O, which sums every block's: the
 *                   remote blocks' output part, output_s, and the exchange)
 * α and B are the scale-up fabric's when the CP group's tp·c NPUs fit in a
 * server (Megatron's rank order puts CP ranks tp apart), else the
 * scale-out's (cl_p2p_time).  The engine replays the exchange as flows
 * between the CP peers' NPUs with the same overlap (sim/engine/engine_cp.c);
 * the planners use exposed_s (cm_forward_total_s, cm_backward_total_s).
 *
 * A remote block is priced by the same attention core as the local one
 * (cm_attention_core(), costmodel_attention.c, on this rank's s/c tokens):
 * unfused, it keeps its softmax output (and dropout mask and output) like
 * the local block; with FlashAttention the blocks are merged by the online
 * softmax, so only the local block's statistics are kept (block_kept_bytes
 * 0), and selective recompute frees them and re-runs the whole ring, as
 * Megatron-Core's checkpointed core attention does.
 */
#include <math.h>
#include <string.h>

#include "costmodel_internal.h"

static cm_cp_exchange exchange(int steps, double message, double step_s, bool same_node,
                               const cl_cluster *c)
{
    double comm_s = cl_p2p_time(c, message, same_node);
    cm_cp_exchange e = {.bytes = steps * message,
                        .overlap_s = steps * step_s,
                        .exposed_s = steps * fmax(0.0, comm_s - step_s),
                        .steps = steps};
    return e;
}

void cm_cp_decoder(cm_layer *ly, const shape *x)
{
    int remote = x->cp - 1;
    if (remote < 1)
        return;
    cm_attention core; /* one (s/c)² block */
    cm_attention_core(x, &core);
    double fwd = core.forward_s;
    double bwd = core.grad_scores_s + core.grad_av_s + core.grad_softmax_s + core.grad_dropout_s;
    double kept = core.block_kept_bytes;
    double message = 2.0 * x->b * x->s * (x->g * x->d / x->t) * x->D;
    bool same_node = x->c->npus_per_node <= 0 || (long)x->t * x->cp <= x->c->npus_per_node;
    ly->cp_forward = exchange(remote, message, fwd, same_node, x->c);
    ly->cp_backward = exchange(remote, 2.0 * message, bwd, same_node, x->c);
    double rerun = remote * fwd + ly->cp_forward.exposed_s; /* a recompute of the core */
    ly->forward_s += remote * fwd;
    ly->backward_s += remote * bwd;
    ly->forward_flops += remote * 2.0 * 2.0 * x->b * x->s * x->s * x->h / x->t;
    ly->activation_bytes[RECOMPUTE_NONE] += remote * kept;
    ly->recompute_s[RECOMPUTE_SELECTIVE] += rerun;
    ly->recompute_s[RECOMPUTE_FULL] += rerun;
    for (int u = 0; u < ly->num_units; u++) {
        if (strcmp(ly->units[u].name, "core_attention") == 0) {
            ly->units[u].forward_s += rerun;
            ly->units[u].activation_bytes += remote * kept;
        } else if (strcmp(ly->units[u].name, "proj_input") == 0) {
            /* The core's output O sums every block's: re-creating it alone
             * re-runs the remote blocks' output part and the exchange. */
            ly->units[u].forward_s += remote * core.output_s + ly->cp_forward.exposed_s;
        }
    }
}
