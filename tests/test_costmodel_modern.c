/*
 * test_costmodel_modern.c -- the cost model of "train models the way they are
 * trained today", in closed form: FlashAttention-2's activation bytes and
 * kernel times, dropout probabilities of 0, Megatron's scatter/gather
 * pipeline p2p and its all-gather where the schedule and the planners'
 * prediction charge it, and the optional platform efficiencies (GEMM
 * efficiency by shape, elementwise fusion, collective bus efficiency).
 *
 * The job is GPT-3 175B (workloads/gpt3_175b_128.json: s 2048, h 12288, 96
 * heads of d = 128, f = 4h, bf16 D = 2, b 1) at TP t = 8; the NPU is
 * test_npu_cluster()'s 910B (313 TFLOP/s at 70%, HBM 1.6 TB/s, 10 µs launch,
 * scale-up 196 GB/s and 2 µs).  Notation: sbh = 2048·12288 = 25,165,824;
 * E = b·(a/t)·s² = 12·2048² score elements per rank.
 */
#include <math.h>
#include <string.h>

#include "costmodel.h"
#include "predict.h"
#include "schedule.h"
#include "testutil.h"

#define PEAK 313e12
#define EFF 0.7
#define HBM_BW 1.6e12
#define LAUNCH 10e-6
#define UP_BW 196e9
#define UP_LAT 2e-6

static const double S = 2048, H = 12288, T = 8, D = 2;
#define SBH (2048.0 * 12288.0)
#define E_SCORES (12.0 * 2048.0 * 2048.0)
/* FlashAttention's statistics: b·(a/t)·s rows of 2 fp32, 12·2048·8 bytes. */
#define STATS (12.0 * 2048.0 * 8.0)

/* The roofline of docs/design.md, written out. */
static double roofline(double flops, double bytes, double eff)
{
    return fmax(flops / (PEAK * eff), bytes / HBM_BW) + LAUNCH;
}
static double memop(double bytes) { return roofline(0, bytes, 1); }

/* Decoder layer 1 of GPT-3 on the 910B cluster c with the overrides. */
static void build(const char *const *set, int n, const cl_cluster *c, cm_model *cm)
{
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with("workloads/gpt3_175b_128.json", set, n, &w, &err), 0);
    CU_ASSERT_EQUAL_FATAL(cm_build(&w, c, 1, cm, &err), 0);
    wl_free(&w);
}

/* ---- FlashAttention ------------------------------------------------------- */

/* Korthikanti's per-layer bytes with TP + SP are sbh/t·(34 + 5as/h); the
 * 5as/h term is the s×s core (softmax output 2as²b, dropout mask as²b,
 * dropout output 2as²b) that FlashAttention never writes.  What it keeps
 * instead is the softmax statistics.  So: 34·sbh/t + STATS =
 * 34·3,145,728 + 196,608 = 107,151,360 bytes; Korthikanti's TP row without
 * the term, sbh(10 + 24/t) + STATS, without SP.  Selective recompute
 * (Megatron-Core checkpoints the core attention whatever its kernel) frees
 * the statistics, leaving Korthikanti's selective row 34·sbh/t exactly; full
 * keeps the input. */
static void test_flash_keeps_korthikanti_without_the_score_term(void)
{
    cl_cluster c = test_npu_cluster(128, 8);
    const char *const sp[] = {"use_flash_attn=true"};
    cm_model cm;
    build(sp, 1, &c, &cm);
    const cm_layer *ly = &cm.layers[1];
    ASSERT_REL(ly->activation_bytes[RECOMPUTE_NONE], 34.0 * SBH / T + STATS, 1e-12);
    ASSERT_REL(ly->activation_bytes[RECOMPUTE_NONE], 107151360.0, 1e-12);
    ASSERT_REL(ly->activation_bytes[RECOMPUTE_NONE] - STATS,
               cm_korthikanti_activation_bytes(S, 1, H, 96, 8, true, RECOMPUTE_SELECTIVE), 1e-12);
    ASSERT_REL(ly->activation_bytes[RECOMPUTE_SELECTIVE],
               cm_korthikanti_activation_bytes(S, 1, H, 96, 8, true, RECOMPUTE_SELECTIVE), 1e-12);
    ASSERT_REL(ly->activation_bytes[RECOMPUTE_SELECTIVE], 34.0 * SBH / T, 1e-12);
    ASSERT_REL(ly->activation_bytes[RECOMPUTE_FULL], 2.0 * SBH / T, 1e-12);
    ASSERT_REL(test_unit(ly, "core_attention")->activation_bytes, STATS, 1e-12);
    cm_free(&cm);

    const char *const tp[] = {"use_flash_attn=true", "sequence_parallel=false"};
    build(tp, 2, &c, &cm);
    ASSERT_REL(cm.layers[1].activation_bytes[RECOMPUTE_NONE], SBH * (10.0 + 24.0 / T) + STATS,
               1e-12);
    cm_free(&cm);
}

/* The kernel: forward half of 4bs²h/t (the causal mask: the kernel skips
 * the blocks above the diagonal), 12,884,901,888 FLOPs, at the attention
 * efficiency against Q, K, V in and O out (4 · 2048·1536·2 bytes) plus the
 * statistics; backward 2.5 times the FLOPs against Q, K, V, O, dO in and dQ,
 * dK, dV out (8 tensors) plus the statistics.  It replaces the unfused core:
 * QKᵀ and AV (b·a/t = 12 products of 2048×128 by 128×2048, and 2048×2048 by
 * 2048×128), softmax (2E·D), dropout (E(2D+1)); backward both GEMMs twice,
 * softmax 3E·D, dropout E(2D+1). */
static void test_flash_kernel_times_replace_the_unfused_core(void)
{
    cl_cluster c = test_npu_cluster(128, 8);
    c.attention_efficiency = 0.6;
    /* causal: half the s×s work (FlashAttention-2, section 4.1) */
    double flops = 0.5 * 4.0 * S * S * H / T, q = S * H / T * D, stats = STATS;
    double fwd = roofline(flops, 4.0 * q + stats, 0.6);
    double bwd = roofline(2.5 * flops, 8.0 * q + stats, 0.6);
    double gemm_flops = 2.0 * S * 128 * S * 12;
    double scores = roofline(gemm_flops, (S * 128 * 2 + S * S) * D * 12, EFF);
    double av = roofline(gemm_flops, (S * S + S * 128 * 2) * D * 12, EFF);
    double softmax = memop(2.0 * E_SCORES * D), dropout = memop(E_SCORES * (2.0 * D + 1));
    double unfused_fwd = scores + softmax + dropout + av;
    double unfused_bwd = 2.0 * scores + 2.0 * av + memop(3.0 * E_SCORES * D) + dropout;

    const char *const flash[] = {"use_flash_attn=true"};
    cm_model f, u;
    build(flash, 1, &c, &f);
    build(NULL, 0, &c, &u);
    ASSERT_REL(test_unit(&f.layers[1], "core_attention")->forward_s, fwd, 1e-12);
    ASSERT_REL(test_unit(&u.layers[1], "core_attention")->forward_s, unfused_fwd, 1e-12);
    /* Selective recompute re-runs the core's forward, the kernel or the
     * unfused passes (Megatron-Core's checkpointed core attention). */
    ASSERT_REL(f.layers[1].recompute_s[RECOMPUTE_SELECTIVE], fwd, 1e-12);
    ASSERT_REL(u.layers[1].recompute_s[RECOMPUTE_SELECTIVE], unfused_fwd, 1e-12);
    ASSERT_REL(f.layers[1].forward_s - u.layers[1].forward_s, fwd - unfused_fwd, 1e-9);
    ASSERT_REL(f.layers[1].backward_s - u.layers[1].backward_s, bwd - unfused_bwd, 1e-9);
    /* The model FLOPs (MFU) do not count the kernel's recomputation. */
    ASSERT_REL(f.layers[1].forward_flops, u.layers[1].forward_flops, 1e-15);
    cm_free(&f);
    cm_free(&u);
}

/* ---- dropout probabilities of 0 ------------------------------------------ */

/* With FlashAttention (no attention mask either way) hidden_dropout 0
 * removes exactly the two hidden masks, 2·sbh/t: 32·sbh/t + STATS.  Unfused,
 * attention_dropout 0 removes the core's mask and dropout output,
 * 3as²b/t = 3·E: sbh/t·(34 + 2as/h), 2as/h = 32; both at 0 leave
 * sbh/t·(32 + 2as/h).  Times: the dropout passes go, forward and backward,
 * 2·memop(sbh/t·(2D+1)) + memop(E(2D+1)) each. */
static void test_dropout_zero_removes_exactly_the_masks(void)
{
    cl_cluster c = test_npu_cluster(128, 8);
    cm_model base, flash0, attn0, both0;
    const char *const f0[] = {"use_flash_attn=true", "hidden_dropout=0"};
    const char *const a0[] = {"attention_dropout=0"};
    const char *const b0[] = {"attention_dropout=0", "hidden_dropout=0"};
    build(NULL, 0, &c, &base);
    build(f0, 2, &c, &flash0);
    build(a0, 1, &c, &attn0);
    build(b0, 2, &c, &both0);
    ASSERT_REL(flash0.layers[1].activation_bytes[RECOMPUTE_NONE], 32.0 * SBH / T + STATS, 1e-12);
    ASSERT_REL(base.layers[1].activation_bytes[RECOMPUTE_NONE] -
                   attn0.layers[1].activation_bytes[RECOMPUTE_NONE],
               3.0 * E_SCORES, 1e-12);
    ASSERT_REL(attn0.layers[1].activation_bytes[RECOMPUTE_NONE], SBH / T * (34.0 + 32.0), 1e-12);
    ASSERT_REL(both0.layers[1].activation_bytes[RECOMPUTE_NONE], SBH / T * (32.0 + 32.0), 1e-12);
    CU_ASSERT_EQUAL(test_unit(&both0.layers[1], "attn_dropout_mask")->activation_bytes, 0.0);
    CU_ASSERT_EQUAL(test_unit(&both0.layers[1], "mlp_dropout_mask")->activation_bytes, 0.0);
    double passes = 2.0 * memop(SBH / T * (2.0 * D + 1)) + memop(E_SCORES * (2.0 * D + 1));
    ASSERT_REL(base.layers[1].forward_s - both0.layers[1].forward_s, passes, 1e-9);
    ASSERT_REL(base.layers[1].backward_s - both0.layers[1].backward_s, passes, 1e-9);
    cm_free(&base);
    cm_free(&flash0);
    cm_free(&attn0);
    cm_free(&both0);
}

/* ---- scatter/gather pipeline p2p ------------------------------------------ */

/* Without SP each of the t ranks sends n·h·D/t = 2048·12288·2/8 = 6,291,456
 * bytes, and the receiver all-gathers S = n·h·D over its 8 ranks on the
 * scale-up fabric: (t−1)(α + S/(t·B)), B the link bandwidth times the bus
 * efficiency.  With SP the state is already sharded: no gather.  Off, every
 * rank sends all of S. */
static void test_scatter_gather_sends_a_slice_and_gathers_it(void)
{
    cl_cluster c = test_npu_cluster(128, 8);
    double bytes = S * H * D;
    const char *const nosp[] = {"sequence_parallel=false"};
    const char *const off[] = {"sequence_parallel=false",
                               "scatter_gather_tensors_in_pipeline=false"};
    cm_model cm;
    build(nosp, 1, &c, &cm);
    ASSERT_REL(cm.layers[1].output_bytes, 6291456.0, 1e-12);
    ASSERT_REL(cm.layers[1].output_bytes, bytes / T, 1e-12);
    ASSERT_REL(cm.layers[1].recv_gather_s, 7.0 * (UP_LAT + bytes / (8.0 * UP_BW)), 1e-12);
    ASSERT_REL(cm.layers[0].recv_gather_s, cm.layers[1].recv_gather_s, 1e-12); /* embedding */
    cm_free(&cm);
    c.collective_bus_efficiency = 0.8;
    build(nosp, 1, &c, &cm);
    ASSERT_REL(cm.layers[1].recv_gather_s, 7.0 * (UP_LAT + bytes / (8.0 * UP_BW * 0.8)), 1e-12);
    cm_free(&cm);
    build(off, 2, &c, &cm);
    ASSERT_REL(cm.layers[1].output_bytes, bytes, 1e-12);
    CU_ASSERT_EQUAL(cm.layers[1].recv_gather_s, 0.0);
    cm_free(&cm);
    build(NULL, 0, &c, &cm); /* SP */
    ASSERT_REL(cm.layers[1].output_bytes, bytes / T, 1e-12);
    CU_ASSERT_EQUAL(cm.layers[1].recv_gather_s, 0.0);
    cm_free(&cm);
}

/* Two stages of 49 layers: stage 1's forward receives layer 48's output and
 * all-gathers it inside its forward op; stage 0's backward all-gathers the
 * gradient it receives; nothing where nothing is received.  The planners'
 * prediction charges the same: 2·c_s + g_s with g_s one gather per stage. */
static void test_the_receiver_pays_the_gather(void)
{
    cl_cluster c = test_npu_cluster(128, 8);
    const char *const nosp[] = {"sequence_parallel=false"};
    cm_model cm;
    build(nosp, 1, &c, &cm);
    CU_ASSERT_EQUAL_FATAL(cm.num_layers, 98);
    plan pl;
    test_uniform_plan(&pl, 2, 2, 49, SCHED_1F1B);
    schedule sc;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(sched_build(&pl, &cm, &sc, &err), 0);
    double tp_f[2] = {0, 0}, tp_b[2] = {0, 0}, gather = cm.layers[48].recv_gather_s;
    for (int l = 0; l < 98; l++) {
        tp_f[l / 49] += cm.layers[l].tp_forward_s;
        tp_b[l / 49] += cm.layers[l].tp_backward_s;
    }
    CU_ASSERT(gather > 0);
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < sc.stages[s].num_ops; i++) {
            const sched_op *op = &sc.stages[s].ops[i];
            if (op->kind == OP_FORWARD)
                ASSERT_REL(op->comm_s, tp_f[s] + (s == 1 ? gather : 0.0), 1e-12);
            if (op->kind == OP_BACKWARD)
                ASSERT_REL(op->comm_s, tp_b[s] + (s == 0 ? gather : 0.0), 1e-12);
            if (op->kind == OP_SEND_FORWARD || op->kind == OP_RECV_FORWARD)
                ASSERT_REL(op->bytes, S * H * D / T, 1e-12);
        }
    pl.tensor_parallel = 8;
    for (int s = 0; s < 2; s++)
        ASSERT_REL(predict_stage_comm_s(&cm, &c, &pl, s, PREDICT_SENDS_SCALEOUT),
                   2.0 * predict_boundary_s(&cm, &c, &pl, s, PREDICT_SENDS_SCALEOUT) + gather,
                   1e-12);
    ASSERT_REL(predict_boundary_s(&cm, &c, &pl, 0, PREDICT_SENDS_SCALEOUT),
               4e-6 + S * H * D / T / 25e9, 1e-12); /* the slice over the NIC */
    sched_free(&sc);
    plan_free(&pl);
    cm_free(&cm);
}

/* ---- platform efficiencies -------------------------------------------------- */

/* "128:0.35,512:0.6,2048:0.75,8192:0.8": the table at its points, the
 * log-midpoints 256 (0.35 + 0.25/2 = 0.475) and 1024 (0.675), 64 and 16384
 * clamped to the ends; a GEMM takes the value at its smallest dimension. */
static void test_gemm_efficiency_interpolates_in_log_dimension(void)
{
    cl_cluster c = test_npu_cluster(8, 8);
    char why[128];
    CU_ASSERT_EQUAL(cm_gemm_efficiency(&c, 8192, 128, 8192), EFF); /* no table */
    CU_ASSERT_EQUAL_FATAL(
        cl_gemm_table_parse("128:0.35, 512:0.6,2048:0.75,8192:0.8", &c, why, sizeof why), 0);
    CU_ASSERT_EQUAL(c.gemm_table_points, 4);
    ASSERT_REL(cm_gemm_table_efficiency(&c, 128), 0.35, 1e-12);
    ASSERT_REL(cm_gemm_table_efficiency(&c, 512), 0.6, 1e-12);
    ASSERT_REL(cm_gemm_table_efficiency(&c, 2048), 0.75, 1e-12);
    ASSERT_REL(cm_gemm_table_efficiency(&c, 8192), 0.8, 1e-12);
    ASSERT_REL(cm_gemm_table_efficiency(&c, 256), 0.475, 1e-12);
    ASSERT_REL(cm_gemm_table_efficiency(&c, 1024), 0.675, 1e-12);
    ASSERT_REL(cm_gemm_table_efficiency(&c, 64), 0.35, 1e-12);
    ASSERT_REL(cm_gemm_table_efficiency(&c, 16384), 0.8, 1e-12);
    ASSERT_REL(cm_gemm_efficiency(&c, 8192, 128, 8192), 0.35, 1e-12);
    /* 1536 lies log(3)/log(4) of the way from 512 to 2048. */
    ASSERT_REL(cm_gemm_efficiency(&c, 4096, 12288, 1536), 0.6 + 0.15 * log(3.0) / log(4.0), 1e-12);
    const char *bad[] = {"",    "128:0.5,64:0.6", "128:1.5",         "128:0",  "128:0.5,",
                         "128", "a:0.5",          "128:0.5;256:0.6", "0.5:0.5"};
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cl_cluster before = c;
        CU_ASSERT_EQUAL(cl_gemm_table_parse(bad[i], &c, why, sizeof why), -1);
        CU_ASSERT_EQUAL(c.gemm_table_points, before.gemm_table_points);
    }
}

/* The table prices the GEMMs of a layer: the QKV projection of GPT-3 on one
 * rank, [2048×12288]·[12288×4608], has smallest dimension 2048 (no SP, so
 * the qkv unit is the GEMM alone, without SP's all-gather). */
static void test_gemm_table_prices_each_gemm_by_its_shape(void)
{
    cl_cluster c = test_npu_cluster(128, 8);
    char why[128];
    CU_ASSERT_EQUAL_FATAL(cl_gemm_table_parse("2048:0.5", &c, why, sizeof why), 0);
    const char *const nosp[] = {"sequence_parallel=false"};
    cm_model cm;
    build(nosp, 1, &c, &cm);
    double n = 4608, flops = 2.0 * S * H * n, bytes = (S * H + H * n + S * n) * D;
    ASSERT_REL(test_unit(&cm.layers[1], "qkv")->forward_s, roofline(flops, bytes, 0.5), 1e-12);
    cm_free(&cm);
}

/* Fusion turns dropout (x in, y and a 1-byte mask out) then the residual add
 * (2 in, 1 out) into one pass (x and the residual in, the sum and the mask
 * out), after the projection and after FC2; the backward is unchanged. */
static void test_elementwise_fusion_makes_dropout_add_one_pass(void)
{
    cl_cluster c = test_npu_cluster(128, 8);
    cm_model plain, fused;
    build(NULL, 0, &c, &plain);
    c.elementwise_fusion = 1;
    build(NULL, 0, &c, &fused);
    double hl = SBH / T;
    double saved =
        2.0 * (memop(hl * (2.0 * D + 1)) + memop(3.0 * hl * D) - memop(hl * (3.0 * D + 1)));
    ASSERT_REL(plain.layers[1].forward_s - fused.layers[1].forward_s, saved, 1e-9);
    ASSERT_REL(plain.layers[1].backward_s, fused.layers[1].backward_s, 1e-15);
    cm_free(&plain);
    cm_free(&fused);
}

/* hbm_efficiency scales the bandwidth of memory-bound work only: a pure
 * memory operator takes bytes/(bw·e), a compute-bound one is unchanged, the
 * bias-dropout-add fusion saves its passes at bw·e, and the memory-bound
 * Adam step (launches apart) takes 1/e as long. */
static void test_hbm_efficiency_prices_memory_bound_work(void)
{
    cl_cluster c = test_npu_cluster(128, 8), half = c;
    half.hbm_efficiency = 0.5;
    ASSERT_REL(cm_roofline_s(&half, 0, 1e9, EFF), 1e9 / (0.5 * HBM_BW) + LAUNCH, 1e-12);
    ASSERT_REL(cm_roofline_s(&half, 1e15, 1e3, EFF), 1e15 / (PEAK * EFF) + LAUNCH, 1e-12);
    cm_model one, plain, fused;
    build(NULL, 0, &c, &one);
    build(NULL, 0, &half, &plain);
    half.elementwise_fusion = 1;
    build(NULL, 0, &half, &fused);
    double hl = SBH / T, slow = 0.5 * HBM_BW;
    double saved = 2.0 * ((hl * (2.0 * D + 1) + 3.0 * hl * D - hl * (3.0 * D + 1)) / slow + LAUNCH);
    ASSERT_REL(plain.layers[1].forward_s - fused.layers[1].forward_s, saved, 1e-9);
    ASSERT_REL(cm_optimizer_step_s(&plain, 1, 2) - LAUNCH,
               2.0 * (cm_optimizer_step_s(&one, 1, 2) - LAUNCH), 1e-12);
    CU_ASSERT_TRUE(plain.layers[1].forward_s > one.layers[1].forward_s);
    cm_free(&one);
    cm_free(&plain);
    cm_free(&fused);
}

/* A cluster whose optional properties are at their documented defaults
 * (no table, attention at matmul_efficiency, no fusion, bus and HBM
 * efficiency 1:
 * what the platform reader fills when a platform does not give them) prices
 * every layer exactly as one where they are unset, which is the model before
 * they existed. */
static void test_defaults_price_as_before(void)
{
    cl_cluster unset = test_npu_cluster(128, 8), defaults = unset;
    defaults.attention_efficiency = defaults.matmul_efficiency;
    defaults.collective_bus_efficiency = 1.0;
    defaults.hbm_efficiency = 1.0;
    const char *const sets[][2] = {{"sequence_parallel=true", "use_flash_attn=false"},
                                   {"sequence_parallel=false", "use_flash_attn=true"}};
    for (int k = 0; k < 2; k++) {
        cm_model a, b;
        build(sets[k], 2, &unset, &a);
        build(sets[k], 2, &defaults, &b);
        CU_ASSERT_EQUAL_FATAL(a.num_layers, b.num_layers);
        CU_ASSERT_EQUAL(memcmp(a.layers, b.layers, (size_t)a.num_layers * sizeof *a.layers), 0);
        cm_free(&a);
        cm_free(&b);
    }
}

void register_costmodel_modern_tests(void)
{
    TEST_SUITE(
        "costmodel_modern",
        {"flash keeps Korthikanti without the score term",
         test_flash_keeps_korthikanti_without_the_score_term},
        {"flash kernel times replace the unfused core",
         test_flash_kernel_times_replace_the_unfused_core},
        {"dropout zero removes exactly the masks", test_dropout_zero_removes_exactly_the_masks},
        {"scatter/gather sends a slice and gathers it",
         test_scatter_gather_sends_a_slice_and_gathers_it},
        {"the receiver pays the gather", test_the_receiver_pays_the_gather},
        {"GEMM efficiency interpolates in log dimension",
         test_gemm_efficiency_interpolates_in_log_dimension},
        {"GEMM table prices each GEMM by its shape", test_gemm_table_prices_each_gemm_by_its_shape},
        {"elementwise fusion makes dropout-add one pass",
         test_elementwise_fusion_makes_dropout_add_one_pass},
        {"HBM efficiency prices memory-bound work", test_hbm_efficiency_prices_memory_bound_work},
        {"defaults price as before", test_defaults_price_as_before});
}
