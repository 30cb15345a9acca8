/*
 * test_memory_breakdown.c -- the per-stage memory breakdown (simrun
 * --memory, the CSV's mem_* columns, the "does not fit" error) against
 * closed-form numbers computed here from the published formulas:
 *
 *   parameters of a decoder layer (MHA, GeLU, f = 4h, LayerNorm, no
 *     biases; Narayanan et al. SC'21): 12h²/t + 2·2h (two norms replicated);
 *   bytes per parameter (Megatron-LM's distributed-optimizer table): bf16
 *     weight 2, fp32 main gradient 4, fp32 master weight + Adam m, v 12; the
 *     distributed optimizer divides the 12 by dp, ZeRO-2 also the 4, ZeRO-3
 *     also the 2 (Rajbhandari et al. SC'20);
 *   activations per layer (Korthikanti et al. 2022, Table 2): sbh(34 + 5as/h)
 *     with no recompute at t = 1, sbh/t·(34 + 5as/h) with sequence
 *     parallelism, 2sbh under full recompute; FlashAttention keeps the
 *     selective row 34sbh plus its softmax statistics, 2 fp32 per row per
 *     head, 8·b·a·s (Dao 2023);
 *   1F1B holds min(p − s, m) micro-batches on stage s (Narayanan et al.
 *     SC'21 §2.2.1), Megatron's interleaved schedule its warm-up plus one
 *     chunk forwards;
 *   workspace: 1 GiB + 3 communicators × 2 × 200 MiB.
 *
 * The case is hand-sized: 8 layers of h 1024, 16 heads, sequence 1024, p 4,
 * m 8, micro-batch 1, priced on the 910B-class reference cluster (64 GB).
 * Stage 1 holds decoders only (the embedding is pinned to stage 0, the LM
 * head to stage 3), so its figures are two layers' worth.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "costmodel.h"
#include "memory.h"
#include "reference_cluster.h"
#include "testutil.h"

#define H 1024.0
#define HEADS 16.0
#define SEQ 1024.0
#define WORKSPACE (1024.0 * 1024 * 1024 + 3 * 2 * 200.0 * 1024 * 1024)

typedef struct gpt_case {
    wl_workload w;
    cm_model cm;
    plan pl;
    int rc;
} gpt_case;

/* small GPT (h 1024, 16 heads, s 1024, 8 layers, V 32000), TP t, PP 4, DP
 * dp, m 8 micro-batches of 1 (interleaved: v 2), under Megatron's plan;
 * `extra` adds JSON keys to "training" (after a comma). */
static void gpt_build(gpt_case *g, int t, int dp, const char *schedule, const char *extra)
{
    char text[1400];
    snprintf(text, sizeof text,
             "{\"name\": \"breakdown\", \"model\": {\"num_layers\": 8, \"hidden_size\": 1024, "
             "\"num_attention_heads\": 16, \"seq_length\": 1024, \"vocab_size\": 32000}, "
             "\"training\": {\"global_batch_size\": %d, \"micro_batch_size\": 1, "
             "\"params_dtype\": \"bf16\"%s%s}, "
             "\"parallel\": {\"tensor_model_parallel_size\": %d, \"pipeline_model_parallel_size\": "
             "4, \"data_parallel_size\": %d, \"virtual_pipeline_model_parallel_size\": %d}, "
             "\"schedule\": \"%s\", \"planner\": \"megatron\"}",
             8 * dp, extra ? ", " : "", extra ? extra : "", t, dp,
             strcmp(schedule, "interleaved") == 0 ? 2 : 1, schedule);
    memset(g, 0, sizeof *g);
    np_error err;
    g->rc = test_wl_load_text(text, NULL, 0, &g->w, &err);
    cl_cluster cl = test_npu_cluster(4 * t * dp, 8);
    if (!g->rc)
        g->rc = cm_build(&g->w, &cl, 0, &g->cm, &err);
    if (!g->rc)
        g->rc = test_run_planner("megatron", &g->cm, &cl, &g->w, &g->pl, &err);
    if (g->rc)
        fprintf(stderr, "\n  breakdown case: %s: %s\n", err.key, err.text);
}

static void gpt_free(gpt_case *g)
{
    plan_free(&g->pl);
    cm_free(&g->cm);
    wl_free(&g->w);
}

/* gpt_build under 1F1B, which must succeed, and stage 1's breakdown. */
static void build_stage1(gpt_case *g, int t, int dp, const char *extra, mem_stage *st)
{
    gpt_build(g, t, dp, "1f1b", extra);
    CU_ASSERT_EQUAL_FATAL(g->rc, 0);
    mem_stage_bytes(&g->cm, &g->pl, 1, st);
}

/* Parameters of one decoder layer on one TP rank. */
static double decoder_params(int t) { return 12.0 * H * H / t + 4.0 * H; }

/* Stage 1 holds two decoder layers and nothing else. */
static void assert_stage1_is_two_decoders(const gpt_case *g)
{
    int first = g->pl.chunk_start[1], last = g->pl.chunk_start[2];
    CU_ASSERT_EQUAL(last - first, 2);
    for (int l = first; l < last; l++)
        CU_ASSERT_EQUAL(g->cm.layers[l].kind, CM_DECODER);
}

static void assert_sums(const mem_stage *st)
{
    ASSERT_REL(st->weight_bytes + st->stash_bytes + st->grad_bytes + st->optimizer_bytes,
               st->static_bytes, 1e-12);
    ASSERT_REL(st->static_bytes + st->activation_bytes + st->transient_bytes + st->workspace_bytes,
               st->total_bytes, 1e-12);
}

/* No distributed optimizer, no recompute, t = 1: weights 2P, gradients 4P,
 * optimizer 12P; activations 3 micro-batches (p − s) of 2 layers of
 * sbh(34 + 5as/h); nothing recomputed, so no transient. */
static void test_stage_breakdown_is_closed_form(void)
{
    gpt_case g;
    mem_stage st;
    build_stage1(&g, 1, 2, "\"recompute_granularity\": \"none\"", &st);
    assert_stage1_is_two_decoders(&g);
    double P = 2 * decoder_params(1), sbh = SEQ * 1 * H;
    ASSERT_REL(st.weight_bytes, 2 * P, 1e-12);
    ASSERT_REL(st.grad_bytes, 4 * P, 1e-12);
    ASSERT_REL(st.optimizer_bytes, 12 * P, 1e-12);
    CU_ASSERT_EQUAL(st.stash_bytes, 0);
    CU_ASSERT_EQUAL(st.inflight, 3);
    ASSERT_REL(st.activation_bytes, 3 * 2 * sbh * (34 + 5 * HEADS * SEQ / H), 1e-12);
    CU_ASSERT_EQUAL(st.transient_bytes, 0);
    ASSERT_REL(st.workspace_bytes, WORKSPACE, 1e-12);
    ASSERT_REL(st.capacity_bytes, 64e9, 1e-12);
    assert_sums(&st);
    /* every stage: the parts sum to the total; in flight p − s */
    for (int s = 0; s < 4; s++) {
        mem_stage_bytes(&g.cm, &g.pl, s, &st);
        assert_sums(&st);
        CU_ASSERT_EQUAL(st.inflight, 4 - s);
    }
    gpt_free(&g);
}

/* Distributed optimizer over dp 4 with t 2 and sequence parallelism: the
 * Adam state is 12P/dp, weights and gradients whole; activations
 * sbh/t·(34 + 5as/h) per layer. */
static void test_distributed_optimizer_and_sp(void)
{
    gpt_case g;
    mem_stage st;
    build_stage1(&g, 2, 4,
                 "\"use_distributed_optimizer\": true, \"sequence_parallel\": true, "
                 "\"recompute_granularity\": \"none\"",
                 &st);
    assert_stage1_is_two_decoders(&g);
    double P = 2 * decoder_params(2), sbh = SEQ * H;
    ASSERT_REL(st.weight_bytes, 2 * P, 1e-12);
    ASSERT_REL(st.grad_bytes, 4 * P, 1e-12);
    ASSERT_REL(st.optimizer_bytes, 12 * P / 4, 1e-12);
    ASSERT_REL(st.activation_bytes, 3 * 2 * sbh / 2 * (34 + 5 * HEADS * SEQ / H), 1e-12);
    assert_sums(&st);
    gpt_free(&g);
}

/* ZeRO-2 (optim_grads) divides the gradients by dp too, ZeRO-3
 * (optim_grads_params) also the weights. */
static void test_zero_levels_shard_grads_then_weights(void)
{
    double P = 2 * decoder_params(1);
    const struct {
        const char *strategy;
        double w, g, o;
    } levels[] = {{"no_shard", 2, 4, 12},
                  {"optim", 2, 4, 12.0 / 4},
                  {"optim_grads", 2, 4.0 / 4, 12.0 / 4},
                  {"optim_grads_params", 2.0 / 4, 4.0 / 4, 12.0 / 4}};
    for (int i = 0; i < 4; i++) {
        char extra[160];
        snprintf(extra, sizeof extra, "\"data_parallel_sharding_strategy\": \"%s\"",
                 levels[i].strategy);
        gpt_case g;
        mem_stage st;
        build_stage1(&g, 1, 4, extra, &st);
        ASSERT_REL(st.weight_bytes, levels[i].w * P, 1e-12);
        ASSERT_REL(st.grad_bytes, levels[i].g * P, 1e-12);
        ASSERT_REL(st.optimizer_bytes, levels[i].o * P, 1e-12);
        assert_sums(&st);
        gpt_free(&g);
    }
}

/* FlashAttention keeps no score matrix: 34sbh + 8·b·a·s per layer with no
 * recompute (dropout left at its default, its masks kept). */
static void test_flash_attention_activations(void)
{
    gpt_case g;
    mem_stage st;
    build_stage1(&g, 1, 2, "\"use_flash_attn\": true, \"recompute_granularity\": \"none\"", &st);
    double sbh = SEQ * H;
    ASSERT_REL(st.activation_bytes, 3 * 2 * (34 * sbh + 8 * HEADS * SEQ), 1e-12);
    CU_ASSERT_EQUAL(st.transient_bytes, 0);
    gpt_free(&g);
}

/* Full recompute keeps each layer's input, 2sbh; the backward at the peak
 * re-creates one layer's sbh(34 + 5as/h) less the kept input on top. */
static void test_full_recompute_transient(void)
{
    gpt_case g;
    mem_stage st;
    build_stage1(&g, 1, 2, "\"recompute_granularity\": \"full\"", &st);
    double sbh = SEQ * H, layer = sbh * (34 + 5 * HEADS * SEQ / H);
    ASSERT_REL(st.activation_bytes, 3 * 2 * 2 * sbh, 1e-12);
    ASSERT_REL(st.transient_bytes, layer - 2 * sbh, 1e-12);
    assert_sums(&st);
    gpt_free(&g);
}

/* Mixture of experts, EP 2 over DP 4 under ZeRO-3 (optim_grads_params):
 * the expert weights (E·2hf_e/(ep·t)) have their weights, gradients and
 * Adam state sharded over dp/ep = 2 replicas, the rest (attention, norms,
 * router h·E) over 4. */
static void test_moe_experts_shard_over_dp_over_ep(void)
{
    const char *text =
        "{\"name\": \"moe\", \"model\": {\"num_layers\": 8, \"hidden_size\": 1024, "
        "\"num_attention_heads\": 16, \"seq_length\": 1024, \"vocab_size\": 32000, "
        "\"num_experts\": 8, \"moe_router_topk\": 2, \"moe_ffn_hidden_size\": 2048}, "
        "\"training\": {\"global_batch_size\": 32, \"micro_batch_size\": 1, \"params_dtype\": "
        "\"bf16\", \"data_parallel_sharding_strategy\": \"optim_grads_params\"}, \"parallel\": "
        "{\"tensor_model_parallel_size\": 1, \"pipeline_model_parallel_size\": 4, "
        "\"data_parallel_size\": 4, \"expert_model_parallel_size\": 2}, \"schedule\": \"1f1b\"}";
    wl_workload w;
    cm_model cm;
    plan pl = {0};
    np_error err;
    cl_cluster cl = test_npu_cluster(16, 8);
    int rc = test_wl_load_text(text, NULL, 0, &w, &err);
    if (!rc)
        rc = cm_build(&w, &cl, 0, &cm, &err);
    if (!rc)
        rc = test_run_planner("megatron", &cm, &cl, &w, &pl, &err);
    if (rc)
        fprintf(stderr, "\n  moe case: %s: %s\n", err.key, err.text);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    double expert = 8 * 2 * H * 2048 / 2, dense = 4 * H * H + 4 * H + H * 8;
    mem_stage st;
    mem_stage_bytes(&cm, &pl, 1, &st);
    ASSERT_REL(st.weight_bytes, 2 * (2 * dense / 4 + 2 * expert / 2), 1e-12);
    ASSERT_REL(st.grad_bytes, 2 * (4 * dense / 4 + 4 * expert / 2), 1e-12);
    ASSERT_REL(st.optimizer_bytes, 2 * (12 * dense / 4 + 12 * expert / 2), 1e-12);
    plan_free(&pl);
    cm_free(&cm);
    wl_free(&w);
}

/* The "does not fit" error gives the same breakdown, from the same code:
 * stage 1 of the first case on a 1 GB device, in GB with two decimals. */
static void test_does_not_fit_names_the_parts(void)
{
    gpt_case g;
    gpt_build(&g, 1, 2, "1f1b", "\"recompute_granularity\": \"none\"");
    CU_ASSERT_EQUAL_FATAL(g.rc, 0);
    g.cm.hbm_bytes = 1e9;
    np_error err;
    np_error_clear(&err);
    CU_ASSERT_EQUAL(mem_check_fits(&g.cm, &g.pl, &err), NP_EXIT_NOFIT);
    double P = 2 * decoder_params(1), sbh = SEQ * H;
    double act = 3 * 2 * sbh * (34 + 5 * HEADS * SEQ / H);
    char want[400];
    snprintf(want, sizeof want,
             "stage 1 needs %.2f GB (weights %.2f + gradients %.2f + optimizer %.2f + "
             "activations %.2f (3 in flight) + recompute 0.00 + workspace %.2f) but has 1.00 GB",
             (18 * P + act + WORKSPACE) / 1e9, 2 * P / 1e9, 4 * P / 1e9, 12 * P / 1e9, act / 1e9,
             WORKSPACE / 1e9);
    if (!strstr(err.text, want))
        fprintf(stderr, "\n  got:  %s\n  want: %s\n", err.text, want);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, want));
    gpt_free(&g);
}

/* Interleaved, p 4, v 2, m 8, 3 layers of 10 bytes per chunk: Megatron's
 * warm-up on stage s is 2(p − s − 1) + (v − 1)p chunk forwards, and the
 * k-th forward runs chunk (k / p) mod v; at the peak the warm-up plus one
 * are held.  Each chunk row holds its share. */
static void test_interleaved_chunks_hold_their_share(void)
{
    const int p = 4, v = 2, m = 8, per_chunk = 3;
    cm_model cm;
    plan pl;
    test_uniform_model(&cm, p * v * per_chunk);
    cm.weight_bytes_per_param = 2;
    for (int l = 0; l < cm.num_layers; l++)
        cm.layers[l].params = 25; /* 50 bytes of weights of the 100 of state */
    test_chunked_plan(&pl, p, v, m, per_chunk, SCHED_INTERLEAVED);
    for (int s = 0; s < p; s++) {
        int held = 2 * (p - s - 1) + (v - 1) * p + 1, count[2] = {0, 0};
        if (held > m * v)
            held = m * v;
        for (int k = 0; k < held; k++)
            count[(k / p) % v]++;
        mem_stage st;
        mem_chunk ch[2];
        mem_stage_chunks(&cm, &pl, s, &st, ch);
        CU_ASSERT_EQUAL(st.inflight, held);
        ASSERT_REL(st.activation_bytes, held * per_chunk * 10.0, 1e-12);
        double act = 0, w = 0, o = 0;
        for (int j = 0; j < v; j++) {
            CU_ASSERT_EQUAL(ch[j].layers, per_chunk);
            CU_ASSERT_EQUAL(ch[j].inflight, count[j]);
            ASSERT_REL(ch[j].activation_bytes, count[j] * per_chunk * 10.0, 1e-12);
            ASSERT_REL(ch[j].weight_bytes, per_chunk * 50.0, 1e-12);
            act += ch[j].activation_bytes, w += ch[j].weight_bytes, o += ch[j].optimizer_bytes;
        }
        ASSERT_REL(act, st.activation_bytes, 1e-12);
        ASSERT_REL(w, st.weight_bytes, 1e-12);
        ASSERT_REL(o, st.optimizer_bytes, 1e-12);
        assert_sums(&st);
    }
    /* stage 0 by hand: forwards 0–3 and 8–10 on chunk 0, 4–7 on chunk 1 */
    mem_stage st;
    mem_chunk ch[2];
    mem_stage_chunks(&cm, &pl, 0, &st, ch);
    CU_ASSERT_EQUAL(ch[0].inflight, 7);
    CU_ASSERT_EQUAL(ch[1].inflight, 4);
    plan_free(&pl);
    cm_free(&cm);
}

/* The engine's memory tracker charges every forward's activations and
 * every recompute's working set op by op: with uniform micro-batches its
 * peak per stage is the predicted total, exactly, under 1F1B without
 * recompute and interleaved with full recompute (a transient on top). */
static void test_simulated_peak_equals_predicted(void)
{
    const struct {
        const char *schedule, *extra;
    } cases[] = {{"1f1b", "\"recompute_granularity\": \"none\""},
                 {"interleaved", "\"recompute_granularity\": \"full\""}};
    for (int i = 0; i < 2; i++) {
        gpt_case g;
        gpt_build(&g, 1, 2, cases[i].schedule, cases[i].extra);
        CU_ASSERT_EQUAL_FATAL(g.rc, 0);
        if (i == 1)
            CU_ASSERT_EQUAL(g.pl.num_chunks, 2);
        test_sim_result r;
        CU_ASSERT_EQUAL_FATAL(test_simulate_plan("platforms/test_8npu.xml", &g.cm, &g.pl, NULL, &r),
                              0);
        CU_ASSERT_EQUAL_FATAL(r.rc, 0);
        for (int s = 0; s < 4; s++) {
            mem_stage st;
            mem_stage_bytes(&g.cm, &g.pl, s, &st);
            ASSERT_REL(r.stage_peak_bytes[s], st.total_bytes, 1e-12);
            if (i == 1)
                CU_ASSERT(st.transient_bytes > 0);
        }
        gpt_free(&g);
    }
}

void register_memory_breakdown_tests(void)
{
    TEST_SUITE(
        "memory_breakdown",
        {"stage breakdown equals the closed form", test_stage_breakdown_is_closed_form},
        {"distributed optimizer and SP", test_distributed_optimizer_and_sp},
        {"ZeRO levels shard gradients, then weights", test_zero_levels_shard_grads_then_weights},
        {"FlashAttention activations", test_flash_attention_activations},
        {"full recompute transient", test_full_recompute_transient},
        {"MoE experts shard over dp/ep", test_moe_experts_shard_over_dp_over_ep},
        {"does not fit names the parts", test_does_not_fit_names_the_parts},
        {"interleaved chunks hold their share", test_interleaved_chunks_hold_their_share},
        {"simulated peak equals predicted", test_simulated_peak_equals_predicted});
}
