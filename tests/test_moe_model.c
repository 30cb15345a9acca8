/*
 * test_moe_model.c -- MoE in the model layer: the layer map, parameter
 * counts of the shipped MoE workloads against their published totals, the
 * experts' memory and the MoE layer's cost against closed forms, and the
 * MoE keys' errors.
 *
 * Published figures: Mixtral 8x7B 46.7B total / 12.9B active (Mistral AI,
 * "Mixtral of experts" announcement and Jiang et al. 2024); DeepSeek-V3
 * 671B total / 37B activated (DeepSeek-V3 Technical Report, abstract).
 */
#include <math.h>
#include <string.h>

#include "costmodel.h"
#include "moe.h"
#include "testutil.h"

static void load(const char *file, const char *const *set, int n, wl_workload *w)
{
    np_error err;
    int rc = test_wl_load_with(file, set, n, w, &err);
    if (rc)
        fprintf(stderr, "\n  %s: %s: %s\n", file, err.key, err.text);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
}

/* ---- layer map ---------------------------------------------------------- */

static void test_layer_freq_integer_marks_every_nth_layer(void)
{
    wl_workload w;
    load("workloads/moe_21b_32npu.json", NULL, 0, &w);
    for (int l = 0; l < 24; l++)
        CU_ASSERT_EQUAL(wl_moe_is_moe_layer(&w.model, l), l % 2 == 0);
    CU_ASSERT_EQUAL(wl_moe_num_layers(&w.model), 12);
    wl_free(&w);
}

static void test_layer_freq_pattern_is_expanded(void)
{
    const char *set[] = {"model.moe_layer_freq=([1]*3+[0]*1)*6"};
    wl_workload w;
    load("workloads/moe_21b_32npu.json", set, 1, &w);
    for (int l = 0; l < 24; l++)
        CU_ASSERT_EQUAL(wl_moe_is_moe_layer(&w.model, l), l % 4 != 3);
    wl_free(&w);
    const char *array[] = {
        "model.moe_layer_freq=[0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1]"};
    load("workloads/moe_21b_32npu.json", array, 1, &w);
    for (int l = 0; l < 24; l++)
        CU_ASSERT_EQUAL(wl_moe_is_moe_layer(&w.model, l), l % 2 == 1);
    wl_free(&w);
}

static void test_deepseek_pattern_has_three_dense_layers(void)
{
    wl_workload w;
    load("workloads/deepseek_v3_class.json", NULL, 0, &w);
    for (int l = 0; l < 61; l++)
        CU_ASSERT_EQUAL(wl_moe_is_moe_layer(&w.model, l), l >= 3);
    wl_free(&w);
}

static void test_pattern_errors_name_the_key(void)
{
    const char *file = "workloads/moe_21b_32npu.json";
    test_expect_override_error(file, "model.moe_layer_freq=([0]*3+[1]*5)", "model.moe_layer_freq",
                               "8 entries, expected one per decoder layer");
    test_expect_override_error(file, "model.moe_layer_freq=([0]*3+[2]*21)", "model.moe_layer_freq",
                               "expected 0 or 1 at character");
    test_expect_override_error(file, "model.moe_layer_freq=([0]*3+[1]*21", "model.moe_layer_freq",
                               "expected ')'");
    test_expect_override_error(file, "model.moe_layer_freq=0", "model.moe_layer_freq",
                               "expected an integer in [1, 10000]");
    test_expect_override_error(file, "model.moe_layer_freq=true", "model.moe_layer_freq",
                               "expected a positive integer, a 0/1 list expression");
}

/* Multi-latent attention needs its four dimensions, and they need it. */
static void mla_error(const char *file, const char *override, const char *key, const char *text)
{
    const char *set[] = {override};
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL(test_wl_load_with(file, set, 1, &w, &err), NP_EXIT_INPUT);
    CU_ASSERT_STRING_EQUAL(err.key, key);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, text));
    wl_free(&w);
}

static void test_mla_key_checks(void)
{
    mla_error("workloads/moe_21b_32npu.json", "model.multi_latent_attention=true",
              "model.kv_lora_rank", "multi_latent_attention is true: expected a positive integer");
    mla_error("workloads/moe_21b_32npu.json", "model.v_head_dim=128", "model.v_head_dim",
              "expected model.multi_latent_attention true");
    mla_error("workloads/small_gpt.json", "model.q_lora_rank=64", "model.q_lora_rank",
              "expected model.multi_latent_attention true");
    test_expect_override_error("workloads/deepseek_v3_class.json", "model.qk_head_dim=0",
                               "model.qk_head_dim", "");
}

/* ---- parameter counts ---------------------------------------------------- */

static void test_mixtral_counts_match_published_totals(void)
{
    wl_workload w;
    load("workloads/mixtral_8x7b.json", NULL, 0, &w);
    moe_params p;
    moe_count_params(&w, &p);
    ASSERT_REL(p.total, 46.7e9, 0.01);
    ASSERT_REL(p.active, 12.9e9, 0.01);
    /* One expert: 3 · 4096 · 14336 (SwiGLU). */
    CU_ASSERT_DOUBLE_EQUAL(p.one_expert, 3.0 * 4096 * 14336, 0.5);
    wl_free(&w);
}

static void test_deepseek_class_counts(void)
{
    wl_workload w;
    load("workloads/deepseek_v3_class.json", NULL, 0, &w);
    moe_params p;
    moe_count_params(&w, &p);
    ASSERT_REL(p.total, 671e9, 0.01);
    /* Routed experts from the released config: 58 MoE layers x 256 experts x
     * 3 x 7168 x 2048. */
    CU_ASSERT_DOUBLE_EQUAL(p.routed_experts, 58.0 * 256 * 3 * 7168 * 2048, 1.0);
    /* Multi-latent attention from the released config: q 7168·1536 +
     * 1536·128·192, kv 7168·576 + 512·128·256, out 128·128·7168, the LoRA
     * norms 1536 + 512: 187,107,328 per layer, plus two RMSNorms of 7168. */
    double mla = 7168.0 * 1536 + 1536.0 * 128 * 192 + 7168.0 * 576 + 512.0 * 128 * 256 +
                 128.0 * 128 * 7168 + 1536 + 512;
    CU_ASSERT_DOUBLE_EQUAL(mla, 187107328.0, 0.0);
    CU_ASSERT_DOUBLE_EQUAL(p.attention, 61.0 * (mla + 2 * 7168) + 7168, 1.0);
    ASSERT_REL(p.total, 671e9, 0.001);
    /* Active, by hand: embedding and head 2·129280·7168, attention as above,
     * 3 dense MLPs 3·7168·18432, 58 MoE layers of router 7168·256, shared
     * expert and 8 routed experts of 3·7168·2048: 37.55B, 1.5% above the
     * published (rounded) 37B. */
    double active = 2.0 * 129280 * 7168 + 61.0 * (mla + 2 * 7168) + 7168 + 3.0 * 3 * 7168 * 18432 +
                    58.0 * (7168.0 * 256 + 9.0 * 3 * 7168 * 2048);
    ASSERT_REL(p.active, active, 1e-12);
    ASSERT_REL(p.active, 37e9, 0.015);
    wl_free(&w);
}

static void test_21b_counts_closed_form(void)
{
    wl_workload w;
    load("workloads/moe_21b_32npu.json", NULL, 0, &w);
    moe_params p;
    moe_count_params(&w, &p);
    double h = 2560, f = 10240, V = 50257;
    double per_layer = 4 * h * h + 2 * 2 * h;    /* attention, two LayerNorms */
    double dense = 12 * 2 * h * f;               /* 12 dense MLPs */
    double moe = 12 * (32 * 2 * h * f + h * 32); /* 12 MoE layers: experts, router */
    double total = V * h + 24 * per_layer + 2 * h + dense + moe;
    ASSERT_REL(p.total, total, 1e-12);
    ASSERT_REL(p.total, 21.5e9, 0.01);
    ASSERT_REL(p.active, total - 12 * 30 * 2 * h * f, 1e-12);
    wl_free(&w);
}

/* ---- memory ------------------------------------------------------------- */

/* 21B: E 32, EP 32 over DP 32 (TP 1): one expert per NPU, edp = 32/32 = 1,
 * so expert state is not sharded: 2 + 4 + 12 = 18 bytes per parameter;
 * with EP 8 edp = 4 and the distributed optimizer gives 6 + 12/4 = 9. */
static void test_expert_memory_closed_forms(void)
{
    wl_workload w;
    load("workloads/moe_21b_32npu.json", NULL, 0, &w);
    moe_expert_memory m;
    moe_expert_memory_of(&w, &m);
    double one = 2.0 * 2560 * 10240;
    ASSERT_REL(m.params, one, 1e-12);
    ASSERT_REL(m.state_bytes, 18.0 * one, 1e-12);
    ASSERT_REL(m.grad_bytes, 4.0 * one, 1e-12);
    wl_free(&w);
    const char *set[] = {"parallel.expert_model_parallel_size=8"};
    load("workloads/moe_21b_32npu.json", set, 1, &w);
    moe_layout ml;
    moe_layout_of(&w, &ml);
    CU_ASSERT_EQUAL(ml.edp, 4);
    CU_ASSERT_EQUAL(ml.local_experts, 4);
    moe_expert_memory_of(&w, &m);
    ASSERT_REL(m.state_bytes, 4 * one * 9.0, 1e-12);
    wl_free(&w);
}

/* Mixtral's layout: TP 8, DP 512, EP 8, ETP 1: edp = 8·512/8 = 512. */
static void test_expert_dp_group_follows_megatron(void)
{
    wl_workload w;
    load("workloads/mixtral_8x7b.json", NULL, 0, &w);
    moe_layout ml;
    moe_layout_of(&w, &ml);
    CU_ASSERT_EQUAL(ml.edp, 512);
    CU_ASSERT_EQUAL(ml.local_experts, 1);
    wl_free(&w);
}

/* ---- the MoE layer in the cost model ---------------------------------- */

static void build(wl_workload *w, cm_model *cm, int npus_per_node)
{
    cl_cluster c = test_npu_cluster(32, npus_per_node);
    np_error err;
    CU_ASSERT_EQUAL_FATAL(cm_build(w, &c, 1, cm, &err), 0);
}

static void test_moe_layer_state_and_flops(void)
{
    wl_workload w;
    load("workloads/moe_21b_32npu.json", NULL, 0, &w);
    cm_model cm;
    build(&w, &cm, 8);
    const cm_layer *moe = &cm.layers[1], *dense = &cm.layers[2];
    CU_ASSERT_EQUAL(moe->moe.is_moe, 1);
    CU_ASSERT_EQUAL(dense->moe.is_moe, 0);
    double h = 2560, f = 10240, n = 2048, E = 32;
    double attn = 4 * h * h + 2 * 2 * h;
    /* dense layer: attention + MLP; MoE layer: attention, router, 1 expert */
    ASSERT_REL(dense->params, attn + 2 * h * f, 1e-12);
    ASSERT_REL(moe->params, attn + h * E + 2 * h * f, 1e-12);
    /* state: dense at 6 + 12/32 (distributed optimizer over DP 32), the
     * expert at 18 (edp 1) */
    ASSERT_REL(moe->state_bytes, (attn + h * E) * (6 + 12.0 / 32) + 2 * h * f * 18, 1e-12);
    /* model FLOPs: attention (flash counts QKᵀ and AV) + router + k = 2
     * experts per token */
    double attention_flops = 2 * n * h * 3 * h + 4 * n * n * h + 2 * n * h * h;
    ASSERT_REL(moe->forward_flops, attention_flops + 2 * n * h * E + 2 * n * 2 * 2 * h * f, 1e-12);
    /* balanced: every NPU computes n·k assignments, no padding, no drops */
    ASSERT_REL(moe->moe.expert_tokens, n * 2, 1e-12);
    CU_ASSERT_EQUAL(moe->moe.dropped_tokens, 0.0);
    cm_free(&cm);
    wl_free(&w);
}

/* Capacity C = ceil(n·k/E·cf) per source and expert; padded, each expert
 * computes ep·C rows; cf < 1 drops n·k − ep·C of its n·k·ep/E... per NPU. */
static void test_capacity_padding_and_drops(void)
{
    const char *pad[] = {"model.moe_expert_capacity_factor=1.3",
                         "model.moe_pad_expert_input_to_capacity=true"};
    wl_workload w;
    load("workloads/moe_21b_32npu.json", pad, 2, &w);
    cm_model cm;
    build(&w, &cm, 8);
    const cm_moe_cost *m = &cm.layers[1].moe;
    double C = ceil(2048.0 * 2 / 32 * 1.3); /* 167 */
    CU_ASSERT_DOUBLE_EQUAL(m->capacity, C, 0.0);
    CU_ASSERT_DOUBLE_EQUAL(m->expert_tokens, 32 * C, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(m->padding_tokens, 32 * C - 4096, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(m->dropped_tokens, 0.0, 0.0);
    /* padded all-to-all: C tokens to each of the E experts */
    ASSERT_REL(m->a2a_bytes, 32 * C * 2560 * 2, 1e-12);
    cm_free(&cm);
    wl_free(&w);
    const char *drop[] = {"model.moe_expert_capacity_factor=0.5"};
    load("workloads/moe_21b_32npu.json", drop, 1, &w);
    build(&w, &cm, 8);
    m = &cm.layers[1].moe;
    C = ceil(2048.0 * 2 / 32 * 0.5); /* 64 */
    CU_ASSERT_DOUBLE_EQUAL(m->expert_tokens, 32 * C, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(m->dropped_tokens, 4096 - 32 * C, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(m->padding_tokens, 0.0, 0.0);
    cm_free(&cm);
    wl_free(&w);
}

/* The all-to-all over EP 32 on 4 servers of 8, S = n·k·h·D, blocks of
 * b = S/32: 7 over the scale-up fabric and 24 over the NIC per member
 * (test_npu_cluster: 196 GB/s, 2 us; 25 GB/s, 4 us), by algorithm:
 *   concurrent  max(7(α_up + b/B_up), α_out + 24b/B_out)
 *   pairwise    7(α_up + b/B_up) + 24(α_out + b/B_out)
 *   bruck       Σ_k (α_out + c_k·b/B_out), c = 16,16,16,16,16 for 32
 * and, with the group inside one server (32 NPUs per server), bruck on
 * the scale-up fabric. */
static double a2a_of(wl_workload *w, cl_alltoall a, int npus_per_node, const cm_layer *copy)
{
    cl_cluster c = test_npu_cluster(32, npus_per_node);
    c.ep_alltoall = a;
    cm_model cm;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(cm_build(w, &c, 1, &cm, &err), 0);
    double t = cm.layers[1].moe.a2a_s;
    ASSERT_REL(cm.layers[1].moe.a2a_bytes, copy->moe.a2a_bytes, 1e-12);
    /* two all-to-alls in forward and two in backward, on top of no TP */
    ASSERT_REL(cm.layers[1].tp_forward_s, 2 * t, 1e-12);
    ASSERT_REL(cm.layers[1].tp_backward_s, 2 * t, 1e-12);
    CU_ASSERT_EQUAL(cm.layers[2].tp_forward_s, 0.0);
    cm_free(&cm);
    return t;
}

static void test_alltoall_closed_form(void)
{
    wl_workload w;
    load("workloads/moe_21b_32npu.json", NULL, 0, &w);
    cm_model cm;
    build(&w, &cm, 8);
    cl_cluster c = test_npu_cluster(32, 8);
    double S = 2048.0 * 2 * 2560 * 2, b = S / 32;
    ASSERT_REL(cm.layers[1].moe.a2a_bytes, S, 1e-12);
    double up = 7 * (c.scaleup_latency_s + b / c.scaleup_bandwidth_Bps);
    double nic = c.scaleout_latency_s + 24 * b / c.scaleout_bandwidth_Bps;
    CU_ASSERT(nic > up);                            /* the NIC's term is the longer here */
    ASSERT_REL(cm.layers[1].moe.a2a_s, nic, 1e-12); /* the default: concurrent */
    ASSERT_REL(a2a_of(&w, CL_A2A_CONCURRENT, 8, &cm.layers[1]), nic, 1e-12);
    ASSERT_REL(a2a_of(&w, CL_A2A_PAIRWISE, 8, &cm.layers[1]),
               up + 24 * (c.scaleout_latency_s + b / c.scaleout_bandwidth_Bps), 1e-12);
    ASSERT_REL(a2a_of(&w, CL_A2A_BRUCK, 8, &cm.layers[1]),
               5 * (c.scaleout_latency_s + 16 * b / c.scaleout_bandwidth_Bps), 1e-12);
    ASSERT_REL(a2a_of(&w, CL_A2A_BRUCK, 32, &cm.layers[1]),
               5 * (c.scaleup_latency_s + 16 * b / c.scaleup_bandwidth_Bps), 1e-12);
    /* inside one server concurrent and pairwise both send 31 blocks one
     * after the other on the port */
    double all_up = 31 * (c.scaleup_latency_s + b / c.scaleup_bandwidth_Bps);
    ASSERT_REL(a2a_of(&w, CL_A2A_CONCURRENT, 32, &cm.layers[1]), all_up, 1e-12);
    ASSERT_REL(a2a_of(&w, CL_A2A_PAIRWISE, 32, &cm.layers[1]), all_up, 1e-12);
    cm_free(&cm);
    wl_free(&w);
}

/* An MoE layer without a shared expert has no dense MLP, so no MLP
 * collectives: Mixtral (TP 8 with SP, ETP 1) keeps the attention's
 * all-gather and reduce-scatter, one all-reduce's worth, half of what the
 * same model's dense layer (num_experts 0: a 14,336-wide MLP) has in its
 * forward, plus the dispatcher's all-to-alls.  Backward: the projection's
 * all-gather and what QKV's GEMMs do not hide, between one and three
 * all-gathers. */
static void test_moe_layer_without_shared_expert_has_no_mlp_collectives(void)
{
    wl_workload w, d;
    load("workloads/mixtral_8x7b.json", NULL, 0, &w);
    const char *dense[] = {"model.num_experts=0", "parallel.expert_model_parallel_size=1",
                           "parallel.expert_tensor_parallel_size=8"};
    load("workloads/mixtral_8x7b.json", dense, 3, &d);
    cm_model cm, cd;
    build(&w, &cm, 8);
    build(&d, &cd, 8);
    const cm_layer *ly = &cm.layers[1], *dl = &cd.layers[1];
    double comm = 2.0 * (ly->moe.a2a_s + ly->moe.etp_gather_s);
    double allreduce = dl->tp_forward_s / 2.0, half = allreduce / 2.0;
    CU_ASSERT(comm > 0.0);
    ASSERT_REL(ly->tp_forward_s - comm, allreduce, 1e-9);
    CU_ASSERT(ly->tp_backward_s - comm >= half * (1 - 1e-9));
    CU_ASSERT(ly->tp_backward_s - comm <= 3 * half * (1 + 1e-9));
    cm_free(&cm);
    cm_free(&cd);
    wl_free(&w);
    wl_free(&d);
}

/* ---- MoE argument checks (Megatron-LM's) ------------------------------ */

static void test_moe_argument_checks(void)
{
    const char *file = "workloads/moe_21b_32npu.json";
    test_expect_override_error(file, "model.moe_pad_expert_input_to_capacity=true",
                               "model.moe_pad_expert_input_to_capacity",
                               "moe_expert_capacity_factor");
    const char *two[] = {"model.moe_expert_capacity_factor=1.0",
                         "model.moe_token_dispatcher_type=allgather"};
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL(test_wl_load_with(file, two, 2, &w, &err), NP_EXIT_INPUT);
    CU_ASSERT_STRING_EQUAL(err.key, "model.moe_expert_capacity_factor");
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "\"alltoall\" token dispatcher only"));
    wl_free(&w);
    const char *etp[] = {"parallel.expert_tensor_parallel_size=3"};
    CU_ASSERT_EQUAL(test_wl_load_with(file, etp, 1, &w, &err), NP_EXIT_INPUT);
    CU_ASSERT_STRING_EQUAL(err.key, "parallel.expert_model_parallel_size");
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "data_parallel_size (32), got 32 x 3"));
    wl_free(&w);
    test_expect_override_error(file, "model.moe_token_dispatcher_type=flex",
                               "model.moe_token_dispatcher_type",
                               "one of \"allgather\", \"alltoall\"");
    const char *tp[] = {"parallel.tensor_model_parallel_size=2", "parallel.data_parallel_size=16",
                        "parallel.expert_model_parallel_size=16"};
    CU_ASSERT_EQUAL(test_wl_load_with(file, tp, 3, &w, &err), NP_EXIT_INPUT);
    CU_ASSERT_STRING_EQUAL(err.key, "training.sequence_parallel");
    wl_free(&w);
}

void register_moe_model_tests(void)
{
    TEST_SUITE(
        "moe_model",
        {"layer freq integer marks every nth layer", test_layer_freq_integer_marks_every_nth_layer},
        {"MoE layer without shared expert has no MLP collectives",
         test_moe_layer_without_shared_expert_has_no_mlp_collectives},
        {"layer freq pattern is expanded", test_layer_freq_pattern_is_expanded},
        {"deepseek pattern has three dense layers", test_deepseek_pattern_has_three_dense_layers},
        {"pattern errors name the key", test_pattern_errors_name_the_key},
        {"mixtral counts match published totals", test_mixtral_counts_match_published_totals},
        {"deepseek class counts", test_deepseek_class_counts},
        {"MLA key checks", test_mla_key_checks},
        {"21b counts closed form", test_21b_counts_closed_form},
        {"expert memory closed forms", test_expert_memory_closed_forms},
        {"expert dp group follows megatron", test_expert_dp_group_follows_megatron},
        {"moe layer state and flops", test_moe_layer_state_and_flops},
        {"capacity padding and drops", test_capacity_padding_and_drops},
        {"alltoall closed form", test_alltoall_closed_form},
        {"moe argument checks", test_moe_argument_checks});
}
