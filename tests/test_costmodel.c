/*
 * test_costmodel.c -- the per-layer cost model against published formulas and
 * figures: Korthikanti et al. 2022 (activation memory, Table 2 and the
 * savings quoted in section 4.3), Narayanan et al. SC'21 (FLOPs per layer),
 * Meta's Llama 3 405B parameter count, Megatron-LM's bytes-per-parameter
 * table, and hand-computed roofline and ring all-reduce times.
 *
 * The cluster and the workloads are filled by hand (no JSON loader): a
 * 910B-like NPU (313 TFLOP/s bf16, 60% matmul efficiency, 64 GB HBM at
 * 1.6 TB/s, 8 NPUs per node on a 56 GB/s scale-up fabric).
 */
#include <string.h>

#include "costmodel.h"
#include "testutil.h"

#define PEAK 313e12
#define EFF 0.6
#define HBM_BW 1.6e12
#define SCALEUP_BW 56e9
#define SCALEUP_LAT 2e-6
#define LAUNCH 1e-5

static cl_cluster npu_910b(void)
{
    cl_cluster c;
    memset(&c, 0, sizeof c);
    strcpy(c.name, "hand-made 910B-like");
    c.num_npus = 16384;
    c.npus_per_node = 8;
    c.peak_flops = PEAK;
    c.matmul_efficiency = EFF;
    c.hbm_bytes = 64e9;
    c.hbm_bandwidth_Bps = HBM_BW;
    c.scaleup_bandwidth_Bps = SCALEUP_BW;
    c.scaleup_latency_s = SCALEUP_LAT;
    c.scaleout_bandwidth_Bps = 25e9;
    c.scaleout_latency_s = 5e-6;
    c.kernel_launch_s = LAUNCH;
    return c;
}

/* What the loader fills when the file does not say (wl_set_defaults):
 * Megatron's dropout probabilities 0.1 and scatter/gather p2p on. */
static void megatron_defaults(wl_workload *w)
{
    w->model.attention_dropout = 0.1;
    w->model.hidden_dropout = 0.1;
    w->training.scatter_gather_tensors_in_pipeline = true;
}

/* GPT-3 175B as in Korthikanti et al. Table 3: 96 layers, h 12288, 96 heads,
 * s 2048, vocabulary 51200, tied embeddings, GeLU MLP of 4h. */
static wl_workload gpt3_175b(int tp, bool sp)
{
    wl_workload w;
    memset(&w, 0, sizeof w);
    strcpy(w.name, "gpt3-175b");
    strcpy(w.path, "<test gpt3-175b>");
    w.model.num_layers = 96;
    w.model.hidden_size = 12288;
    w.model.ffn_hidden_size = 4 * 12288;
    w.model.num_attention_heads = 96;
    w.model.num_query_groups = 96;
    w.model.seq_length = 2048;
    w.model.vocab_size = 51200;
    w.training.global_batch_size = 1536;
    w.training.micro_batch_size = 1;
    w.training.params_dtype = WL_BF16;
    w.training.sequence_parallel = sp;
    megatron_defaults(&w);
    w.parallel.tensor_model_parallel_size = tp;
    w.parallel.pipeline_model_parallel_size = 1;
    w.parallel.data_parallel_size = 1;
    w.parallel.virtual_pipeline_model_parallel_size = 1;
    w.schedule = SCHED_1F1B;
    return w;
}

/* Llama 3 405B (Meta, "The Llama 3 Herd of Models", Table 3): 126 layers,
 * h 16384, ffn 53248, 128 heads, 8 KV heads, vocabulary 128256, SwiGLU,
 * untied output; docs/design.md's TP8 PP16 DP128 job with SP and the
 * distributed optimizer. */
static wl_workload llama3_405b(void)
{
    wl_workload w;
    memset(&w, 0, sizeof w);
    strcpy(w.name, "llama3-405b");
    strcpy(w.path, "<test llama3-405b>");
    w.model.num_layers = 126;
    w.model.hidden_size = 16384;
    w.model.ffn_hidden_size = 53248;
    w.model.num_attention_heads = 128;
    w.model.num_query_groups = 8;
    w.model.seq_length = 8192;
    w.model.vocab_size = 128256;
    w.model.swiglu = true;
    w.model.untie_embeddings_and_output_weights = true;
    w.training.global_batch_size = 2048;
    w.training.micro_batch_size = 1;
    w.training.params_dtype = WL_BF16;
    w.training.use_distributed_optimizer = true;
    w.training.sequence_parallel = true;
    megatron_defaults(&w);
    w.parallel.tensor_model_parallel_size = 8;
    w.parallel.pipeline_model_parallel_size = 16;
    w.parallel.data_parallel_size = 128;
    w.parallel.virtual_pipeline_model_parallel_size = 1;
    w.schedule = SCHED_1F1B;
    return w;
}

static void build_ok(const wl_workload *w, int b, cm_model *cm)
{
    cl_cluster c = npu_910b();
    np_error err;
    np_error_clear(&err);
    CU_ASSERT_EQUAL_FATAL(cm_build(w, &c, b, cm, &err), 0);
}

/* ---- Korthikanti et al. 2022 ------------------------------------------ */

/* Table 2 for GPT-3 175B (s 2048, h 12288, a 96, t 8, b 1); sbh = 25,165,824,
 * 5as/h = 80, every value worked by hand from the table's rows. */
static void test_korthikanti_table2_gpt3_175b(void)
{
    double s = 2048, h = 12288, a = 96;
    /* no parallelism: sbh(34 + 80) */
    ASSERT_REL(cm_korthikanti_activation_bytes(s, 1, h, a, 1, false, RECOMPUTE_NONE), 2868903936.0,
               1e-12);
    /* TP: sbh(10 + 24/8 + 80/8) = 23 sbh */
    ASSERT_REL(cm_korthikanti_activation_bytes(s, 1, h, a, 8, false, RECOMPUTE_NONE), 578813952.0,
               1e-12);
    /* TP + SP: sbh/8 (34 + 80) = 14.25 sbh */
    ASSERT_REL(cm_korthikanti_activation_bytes(s, 1, h, a, 8, true, RECOMPUTE_NONE), 358612992.0,
               1e-12);
    /* TP + selective: sbh(10 + 3) */
    ASSERT_REL(cm_korthikanti_activation_bytes(s, 1, h, a, 8, false, RECOMPUTE_SELECTIVE),
               327155712.0, 1e-12);
    /* TP + SP + selective: 34 sbh / 8 */
    ASSERT_REL(cm_korthikanti_activation_bytes(s, 1, h, a, 8, true, RECOMPUTE_SELECTIVE),
               106954752.0, 1e-12);
    /* full recompute: 2 sbh, the layer input (sharded by 8 with SP) */
    ASSERT_REL(cm_korthikanti_activation_bytes(s, 1, h, a, 8, false, RECOMPUTE_FULL), 50331648.0,
               1e-12);
    ASSERT_REL(cm_korthikanti_activation_bytes(s, 1, h, a, 8, true, RECOMPUTE_FULL), 6291456.0,
               1e-12);
    /* linear in b */
    ASSERT_REL(cm_korthikanti_activation_bytes(s, 4, h, a, 8, false, RECOMPUTE_NONE),
               4 * 578813952.0, 1e-12);
}

/* Section 4.3: selective recompute saves 70% of the activation memory of
 * GPT-3 (5as/h = 80 of 34 + 80) and 65% of MT-NLG 530B's (h 20480, a 128,
 * s 2048: 64 of 98); the abstract's "reduces activation memory by 5x" is
 * TP + SP + selective against the TP baseline (23 / 4.25 = 5.4 for GPT-3). */
static void test_korthikanti_published_savings(void)
{
    double none = cm_korthikanti_activation_bytes(2048, 1, 12288, 96, 1, false, RECOMPUTE_NONE);
    double sel = cm_korthikanti_activation_bytes(2048, 1, 12288, 96, 1, false, RECOMPUTE_SELECTIVE);
    CU_ASSERT(fabs(1.0 - sel / none - 0.70) < 0.005);
    none = cm_korthikanti_activation_bytes(2048, 1, 20480, 128, 1, false, RECOMPUTE_NONE);
    sel = cm_korthikanti_activation_bytes(2048, 1, 20480, 128, 1, false, RECOMPUTE_SELECTIVE);
    CU_ASSERT(fabs(1.0 - sel / none - 0.65) < 0.005);
    double tp = cm_korthikanti_activation_bytes(2048, 1, 12288, 96, 8, false, RECOMPUTE_NONE);
    double best = cm_korthikanti_activation_bytes(2048, 1, 12288, 96, 8, true, RECOMPUTE_SELECTIVE);
    CU_ASSERT(tp / best >= 5.0);
}

static double unit_sum(const cm_layer *ly)
{
    double sum = 0;
    for (int u = 0; u < ly->num_units; u++)
        sum += ly->units[u].activation_bytes;
    return sum;
}

/* The per-unit accounting of a decoder layer reduces to Table 2 for an MHA,
 * GeLU, ffn = 4h model in every row (no TP; TP; TP+SP; each with none,
 * selective, full), at b = 2, and the units plus the kept layer input add up
 * to the no-recompute total. */
static void test_units_reduce_to_korthikanti_for_gpt(void)
{
    const struct {
        int t;
        bool sp;
    } cases[] = {{1, false}, {8, false}, {8, true}};
    for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        wl_workload w = gpt3_175b(cases[c].t, cases[c].sp);
        cm_model cm;
        build_ok(&w, 2, &cm);
        const cm_layer *ly = &cm.layers[1];
        CU_ASSERT_EQUAL(ly->kind, CM_DECODER);
        for (int r = 0; r < RECOMPUTE_COUNT; r++)
            ASSERT_REL(ly->activation_bytes[r],
                       cm_korthikanti_activation_bytes(2048, 2, 12288, 96, cases[c].t, cases[c].sp,
                                                       (recompute_kind)r),
                       1e-12);
        ASSERT_REL(unit_sum(ly) + ly->activation_bytes[RECOMPUTE_FULL],
                   ly->activation_bytes[RECOMPUTE_NONE], 1e-12);
        cm_free(&cm);
    }
}

/* GQA and SwiGLU (Llama 3 405B, t 8, SP, b 1, n = 8192 tokens, 1024 per
 * rank outside TP regions), worked by hand: Q,K,V = 8192·(16384 + 2·8·128)/8·2
 * = 37,748,736; FC1 output (gate and up) = 8192·2·53248/8·2 = 218,103,808;
 * FC2 input = 109,051,904; core attention = (128/8)·8192²·(2·2+1) =
 * 5,368,709,120; total with no recompute 5,934,940,160; selective
 * 566,231,040; full 1024·16384·2 = 33,554,432. */
static void test_units_generalise_to_gqa_and_swiglu(void)
{
    wl_workload w = llama3_405b();
    cm_model cm;
    build_ok(&w, 1, &cm);
    const cm_layer *ly = &cm.layers[1];
    double qkv = -1, fc1_out = -1, fc2_in = -1, core = -1;
    for (int u = 0; u < ly->num_units; u++) {
        const cm_unit *un = &ly->units[u];
        if (!strcmp(un->name, "qkv"))
            qkv = un->activation_bytes;
        if (!strcmp(un->name, "fc1_output"))
            fc1_out = un->activation_bytes;
        if (!strcmp(un->name, "fc2_input"))
            fc2_in = un->activation_bytes;
        if (!strcmp(un->name, "core_attention"))
            core = un->activation_bytes;
    }
    ASSERT_REL(qkv, 37748736.0, 1e-12);
    ASSERT_REL(fc1_out, 218103808.0, 1e-12);
    ASSERT_REL(fc2_in, 109051904.0, 1e-12);
    ASSERT_REL(core, 5368709120.0, 1e-12);
    ASSERT_REL(ly->activation_bytes[RECOMPUTE_NONE], 5934940160.0, 1e-12);
    ASSERT_REL(ly->activation_bytes[RECOMPUTE_SELECTIVE], 566231040.0, 1e-12);
    ASSERT_REL(ly->activation_bytes[RECOMPUTE_FULL], 33554432.0, 1e-12);
    cm_free(&cm);
}

/* ---- FLOPs -------------------------------------------------------------- */

/* Narayanan et al. SC'21 (section 5.1): a GPT layer's forward is
 * 24bsh² + 4bs²h FLOPs, split evenly over the t TP ranks. */
static void test_decoder_flops_are_24bsh2_plus_4bs2h(void)
{
    double b = 2, s = 2048, h = 12288;
    double expected = 24 * b * s * h * h + 4 * b * s * s * h;
    for (int t = 1; t <= 8; t *= 8) {
        wl_workload w = gpt3_175b(t, false);
        cm_model cm;
        build_ok(&w, 2, &cm);
        ASSERT_REL(cm.layers[1].forward_flops, expected / t, 1e-12);
        cm_free(&cm);
    }
}

/* Model FLOPs per micro-batch (Korthikanti et al. section 6, after Narayanan
 * et al.): 72·b·s·l·h²·(1 + s/(6h) + V/(12·l·h)) for forward + backward, i.e.
 * 3× the forward over all layers and ranks; and, the attention-score term
 * 12·b·s²·h·l aside, 6 × parameters × tokens (GPT-3 ties its embeddings). */
static void test_model_flops_match_72bslh2_and_6_params_tokens(void)
{
    double b = 1, s = 2048, h = 12288, l = 96, V = 51200;
    wl_workload w = gpt3_175b(8, true);
    cm_model cm;
    build_ok(&w, 1, &cm);
    double flops = 0, params = 0;
    for (int i = 0; i < cm.num_layers; i++) {
        flops += 3 * cm.layers[i].forward_flops * 8;
        params += cm.layers[i].params * 8;
    }
    ASSERT_REL(flops, 72 * b * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h)), 1e-12);
    /* the norms' 4h weights per layer, counted on each of the 8 ranks that
     * replicate them (4h·l·8 = 38M), have no matmul FLOPs: 2.2e-4 of the total */
    ASSERT_REL(flops - 12 * b * s * s * h * l, 6 * params * b * s, 3e-4);
    ASSERT_REL(params - 4 * h * l * 8 - 2 * h * 8, 12 * l * h * h + V * h, 1e-12);
    cm_free(&cm);
}

/* ---- parameters and optimizer state ------------------------------------ */

/* Meta publishes 405B parameters; summed over the 128 NPUs of one replica
 * (TP 8 × PP 16) our per-NPU counts give 405.9e9 (Megatron pads the
 * vocabulary to 129024).  One decoder layer per NPU, by hand:
 * (16384·18432 + 16384² + 3·16384·53248)/8 + 2·16384 (RMSNorms,
 * replicated) = 398,491,648. */
static void test_llama3_405b_has_405b_parameters(void)
{
    wl_workload w = llama3_405b();
    cm_model cm;
    build_ok(&w, 1, &cm);
    ASSERT_REL(cm.layers[1].params, 398491648.0, 1e-12);
    double total = 0;
    for (int i = 0; i < cm.num_layers; i++)
        total += cm.layers[i].params * cm.tensor_parallel;
    ASSERT_REL(total, 405e9, 0.01);
    cm_free(&cm);
}

/* Megatron-LM docs, "Distributed Optimizer": bytes per parameter. */
static void test_state_bytes_follow_megatron_table(void)
{
    /* the table itself: test_precision.c */
    wl_workload w = llama3_405b();
    cm_model cm;
    build_ok(&w, 1, &cm);
    ASSERT_REL(cm.layers[1].state_bytes, 398491648.0 * (6.0 + 12.0 / 128), 1e-12);
    ASSERT_REL(cm.layers[1].grad_bytes, 398491648.0 * 4, 1e-12);
    cm_free(&cm);
    w.training.use_distributed_optimizer = false;
    build_ok(&w, 1, &cm);
    ASSERT_REL(cm.layers[1].state_bytes, 398491648.0 * 18, 1e-12);
    cm_free(&cm);
}

/* With tied embeddings the LM head shares the word embeddings when the model
 * is on one stage; with pp > 1 Megatron keeps a copy (V·h/t) on the last
 * stage.  GPT-3: 51200·12288/8 = 78,643,200, plus the final LayerNorm 2h. */
static void test_tied_lm_head_holds_copy_only_with_pipeline(void)
{
    wl_workload w = gpt3_175b(8, false);
    cm_model cm;
    build_ok(&w, 1, &cm);
    ASSERT_REL(cm.layers[cm.num_layers - 1].params, 2 * 12288.0, 1e-12);
    ASSERT_REL(cm.layers[0].params, 78643200.0, 1e-12);
    cm_free(&cm);
    w.parallel.pipeline_model_parallel_size = 8;
    build_ok(&w, 1, &cm);
    ASSERT_REL(cm.layers[cm.num_layers - 1].params, 78643200.0 + 2 * 12288.0, 1e-12);
    cm_free(&cm);
}

/* ---- roofline, collectives, recompute ---------------------------------- */

/* A GEMV (1×16384 by 16384×16384, bf16) has 1 FLOP per byte, far below the
 * 910B-like ridge of 313e12·0.6/1.6e12 = 117 FLOP/byte: its time is its bytes
 * over HBM bandwidth.  A 8192×16384×16384 GEMM is compute-bound. */
static void test_roofline_picks_memory_bound_for_small_ops(void)
{
    cl_cluster c = npu_910b();
    double k = 16384;
    double gemv_flops = 2 * k * k, gemv_bytes = (k + k * k + k) * 2;
    ASSERT_REL(cm_roofline_s(&c, gemv_flops, gemv_bytes, EFF), gemv_bytes / HBM_BW + LAUNCH, 1e-12);
    double gemm_flops = 2 * 8192 * k * k, gemm_bytes = (8192 * k * 2 + k * k) * 2;
    ASSERT_REL(cm_roofline_s(&c, gemm_flops, gemm_bytes, EFF), gemm_flops / (PEAK * EFF) + LAUNCH,
               1e-12);
}

/* A decoder layer over a single token reads all its weights once: its forward
 * cannot be faster than (weights bytes)/bandwidth, though its FLOPs would take
 * a hundred times less (GPT-3, t 8: 12h²/8 weights of 2 bytes). */
static void test_tiny_decoder_layer_is_memory_bound(void)
{
    wl_workload w = gpt3_175b(8, false);
    w.model.seq_length = 1;
    cm_model cm;
    build_ok(&w, 1, &cm);
    double weight_bytes = 12.0 * 12288 * 12288 / 8 * 2;
    CU_ASSERT(cm.layers[1].forward_s >= weight_bytes / HBM_BW);
    CU_ASSERT(cm.layers[1].forward_flops / (PEAK * EFF) < 0.01 * weight_bytes / HBM_BW);
    cm_free(&cm);
}

/* A large layer is GEMM-bound: its forward lies between its FLOPs at the
 * matmul efficiency and that plus a quarter (elementwise traffic, launches);
 * its backward B + W is about twice the forward (Narayanan et al.). */
static void test_large_decoder_layer_is_compute_bound_and_backward_twice(void)
{
    wl_workload w = gpt3_175b(8, true);
    cm_model cm;
    build_ok(&w, 1, &cm);
    const cm_layer *ly = &cm.layers[1];
    double compute_s =
        (24.0 * 2048 * 12288.0 * 12288 + 4.0 * 2048 * 2048 * 12288) / 8 / (PEAK * EFF);
    CU_ASSERT(ly->forward_s >= compute_s);
    CU_ASSERT(ly->forward_s <= 1.25 * compute_s);
    double ratio = (ly->backward_s + ly->weight_grad_s) / ly->forward_s;
    CU_ASSERT(ratio > 1.9 && ratio < 2.2);
    CU_ASSERT(ly->weight_grad_s < ly->backward_s);
    cm_free(&cm);
}

/* Ring all-reduce of S = b·s·h·2 = 50,331,648 bytes over 8 NPUs:
 * 2·7·(2 µs + S/(8·56e9)); two per forward; SP (all-gather + reduce-scatter)
 * costs the same; TP 1 costs nothing.  Backward: what Megatron's
 * column-parallel layers do not hide behind their GEMMs (QKV: n×h by h×3h/t,
 * FC1: n×h by h×4h/t, each as long as in the forward): without SP
 * max(0, AR − QKV) + max(0, AR − FC1); with SP the two row-parallel
 * all-gathers, AR/2 each, plus max(0, AR/2 − GEMM) twice per column-parallel
 * layer (the input's re-gather behind the input-gradient GEMM, the
 * reduce-scatter behind the weight-gradient GEMM). */
static double gemm_s(double m, double k, double n)
{
    double compute = 2 * m * k * n / (PEAK * EFF), memory = (m * k + k * n + m * n) * 2 / HBM_BW;
    return (compute > memory ? compute : memory) + LAUNCH;
}

static double exposed(double comm, double gemm) { return comm > gemm ? comm - gemm : 0.0; }

/* tp_comm_overlap (Megatron-Core's --tp-comm-overlap, Transformer Engine's
 * default methods) timed step by step here, independently of the closed
 * forms in costmodel_transformer.c.  Ring exchange (the all-gathers before
 * QKV and FC1, and the backward's output-gradient all-gathers before the
 * projection's and FC2's input-gradient GEMMs): slice i of t arrives after
 * i ring steps of c = α + S/(t·B); GEMM chunk i (G/t) starts once its slice
 * is there and chunk i − 1 is done.  Pipeline with 4 splits (the
 * reduce-scatters after the projection and FC2): chunk i (G/4) follows chunk
 * i − 1; its reduce-scatter, R = (t − 1)(α + S/(4·t·B)), starts when the
 * chunk is done and the previous one has finished.  The exposed time is
 * what runs past G.  Backward's column-parallel layers as without the
 * option.  GPT-3 175B and a hidden-2048 shape at TP 8: mostly hidden, and
 * mostly exposed. */
static double ring_exchange_exposed(int t, double c, double gemm)
{
    double end = 0.0;
    for (int i = 0; i < t; i++)
        end = fmax(end, i * c) + gemm / t;
    return end - gemm;
}

static double pipeline_exposed(int k, double rs, double gemm)
{
    double gemm_end = 0.0, rs_end = 0.0;
    for (int i = 0; i < k; i++) {
        gemm_end += gemm / k;
        rs_end = fmax(rs_end, gemm_end) + rs;
    }
    return rs_end - gemm;
}

static void test_tp_comm_overlap_pipelines_each_collective_with_its_gemm(void)
{
    for (int h = 2048; h <= 12288; h += 10240) {
        wl_workload w = gpt3_175b(8, true);
        w.model.hidden_size = h;
        w.model.ffn_hidden_size = 4 * h;
        w.model.num_attention_heads = h / 128;
        w.model.num_query_groups = h / 128;
        w.training.tp_comm_overlap = true;
        cm_model cm;
        build_ok(&w, 1, &cm);
        double S = 2048.0 * h * 2, c = SCALEUP_LAT + S / (8 * SCALEUP_BW), half = 7 * c;
        double rs = 7 * (SCALEUP_LAT + S / (4 * 8 * SCALEUP_BW));
        double qkv = gemm_s(2048, h, 3.0 * h / 8), proj = gemm_s(2048, h / 8.0, h);
        double fc1 = gemm_s(2048, h, 4.0 * h / 8), fc2 = gemm_s(2048, 4.0 * h / 8, h);
        double forward = ring_exchange_exposed(8, c, qkv) + pipeline_exposed(4, rs, proj) +
                         ring_exchange_exposed(8, c, fc1) + pipeline_exposed(4, rs, fc2);
        double backward = ring_exchange_exposed(8, c, proj) + ring_exchange_exposed(8, c, fc2) +
                          2 * (exposed(half, qkv) + exposed(half, fc1));
        const cm_layer *ly = &cm.layers[1];
        ASSERT_REL(ly->tp_forward_s, forward, 1e-9);
        ASSERT_REL(ly->tp_backward_s, backward, 1e-9);
        CU_ASSERT(forward < 4 * half); /* something is hidden ... */
        CU_ASSERT(forward >= 2 * rs);  /* ... but never the last chunks' reduce-scatters */
        /* full recompute re-runs the forward with its (overlapped) collectives */
        ASSERT_REL(ly->recompute_s[RECOMPUTE_FULL], ly->forward_s + forward, 1e-12);
        cm_free(&cm);
    }
}

static void test_tp_collectives_are_two_ring_allreduces(void)
{
    double S = 2048.0 * 12288 * 2;
    double allreduce = 2 * 7 * (SCALEUP_LAT + S / (8 * SCALEUP_BW));
    for (int sp = 0; sp <= 1; sp++) {
        wl_workload w = gpt3_175b(8, sp);
        cm_model cm;
        build_ok(&w, 1, &cm);
        ASSERT_REL(cm.layers[1].tp_bytes, S, 1e-12);
        ASSERT_REL(cm.layers[1].tp_forward_s, 2 * allreduce, 1e-12);
        double qkv = gemm_s(2048, 12288, 3 * 12288 / 8), fc1 = gemm_s(2048, 12288, 4 * 12288 / 8);
        double backward =
            sp ? allreduce + 2 * (exposed(allreduce / 2, qkv) + exposed(allreduce / 2, fc1))
               : exposed(allreduce, qkv) + exposed(allreduce, fc1);
        ASSERT_REL(cm.layers[1].tp_backward_s, backward, 1e-12);
        /* Each rank sends 1/t of the hidden state: sequence-sharded with SP,
         * scattered without (Megatron's scatter/gather p2p, on by default);
         * with scatter/gather off and no SP every rank sends all of it. */
        ASSERT_REL(cm.layers[1].output_bytes, S / 8, 1e-12);
        cm_free(&cm);
        w.training.scatter_gather_tensors_in_pipeline = false;
        build_ok(&w, 1, &cm);
        ASSERT_REL(cm.layers[1].output_bytes, sp ? S / 8 : S, 1e-12);
        CU_ASSERT_EQUAL(cm.layers[1].recv_gather_s, 0.0);
        cm_free(&cm);
    }
    wl_workload w = gpt3_175b(1, false);
    cm_model cm;
    build_ok(&w, 1, &cm);
    CU_ASSERT_EQUAL(cm.layers[1].tp_forward_s, 0.0);
    CU_ASSERT_EQUAL(cm.layers[1].tp_backward_s, 0.0);
    cm_free(&cm);
}

/* Selective recompute re-runs the attention core: QKᵀ and AV, each
 * 2·b·(a/t)·s²·d FLOPs moving (2sd + s²)·2 bytes per head (b·a/t = 12 heads),
 * softmax 2·12·s²·2 bytes and dropout 12·s²·(2·2+1) bytes, 4 launches; full
 * recompute re-runs the forward with its collectives. */
static void test_recompute_costs_attention_core_or_whole_forward(void)
{
    wl_workload w = gpt3_175b(8, false);
    cm_model cm;
    build_ok(&w, 1, &cm);
    const cm_layer *ly = &cm.layers[1];
    double s = 2048, d = 128, heads = 12;
    double gemm_flops = 2 * s * s * d * heads, gemm_bytes = (2 * s * d + s * s) * 2 * heads;
    double gemm_s = fmax(gemm_flops / (PEAK * EFF), gemm_bytes / HBM_BW) + LAUNCH;
    double softmax_s = 2 * heads * s * s * 2 / HBM_BW + LAUNCH;
    double dropout_s = heads * s * s * 5 / HBM_BW + LAUNCH;
    ASSERT_REL(ly->recompute_s[RECOMPUTE_SELECTIVE], 2 * gemm_s + softmax_s + dropout_s, 1e-12);
    ASSERT_REL(ly->recompute_s[RECOMPUTE_FULL], ly->forward_s + ly->tp_forward_s, 1e-12);
    CU_ASSERT_EQUAL(ly->recompute_s[RECOMPUTE_NONE], 0.0);
    ASSERT_REL(cm_backward_total_s(ly, RECOMPUTE_FULL),
               ly->backward_s + ly->weight_grad_s + ly->tp_backward_s + ly->forward_s +
                   ly->tp_forward_s,
               1e-12);
    cm_free(&cm);
}

/* ---- layer-by-layer models ------------------------------------------------ */

static void test_custom_layers_interpolate_time_tables(void)
{
    double bs[] = {1, 2, 4}, fwd[] = {1.0, 1.5, 2.5}, bwd[] = {2.0, 3.0, 5.0};
    wl_layer_spec spec[2];
    memset(spec, 0, sizeof spec);
    strcpy(spec[0].name, "conv1");
    spec[0].params = 1000;
    spec[0].activation_bytes = 4e6;
    spec[0].output_bytes = 1e6;
    spec[0].num_time_points = 3;
    spec[0].time_batch = bs;
    spec[0].time_forward_s = fwd;
    spec[0].time_backward_s = bwd;
    strcpy(spec[1].name, "pool");
    spec[1].forward_flops = 1e12; /* per sample, no table: roofline */
    spec[1].activation_bytes = 2e6;
    spec[1].output_bytes = 5e5;
    wl_workload w = gpt3_175b(1, false);
    w.model.num_layer_specs = 2;
    w.model.layer_specs = spec;
    cm_model cm;
    build_ok(&w, 3, &cm);
    CU_ASSERT_EQUAL_FATAL(cm.num_layers, 2);
    ASSERT_REL(cm.layers[0].forward_s, 2.0, 1e-12); /* between b = 2 and 4 */
    ASSERT_REL(cm.layers[0].backward_s + cm.layers[0].weight_grad_s, 4.0, 1e-12);
    ASSERT_REL(cm.layers[0].activation_bytes[RECOMPUTE_NONE], 3 * 4e6, 1e-12);
    /* pool: 3e12 FLOPs at 60% of 313 TFLOP/s; no weights, so no W */
    ASSERT_REL(cm.layers[1].forward_s, 3e12 / (PEAK * EFF) + LAUNCH, 1e-12);
    CU_ASSERT_EQUAL(cm.layers[1].weight_grad_s, 0.0);
    /* full recompute keeps the layer input: conv1's output, 3 × 1e6 */
    ASSERT_REL(cm.layers[1].activation_bytes[RECOMPUTE_FULL], 3e6, 1e-12);
    cm_free(&cm);
    build_ok(&w, 8, &cm); /* extrapolated from the last segment: 2.5 + 4·0.5 */
    ASSERT_REL(cm.layers[0].forward_s, 4.5, 1e-12);
    cm_free(&cm);
}

static void test_build_rejects_heads_not_divisible_by_tp(void)
{
    wl_workload w = gpt3_175b(7, false);
    cl_cluster c = npu_910b();
    cm_model cm;
    np_error err;
    np_error_clear(&err);
    CU_ASSERT_EQUAL(cm_build(&w, &c, 1, &cm, &err), NP_EXIT_INPUT);
    CU_ASSERT_STRING_EQUAL(err.key, "model.num_attention_heads");
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "tensor_model_parallel_size"));
}

void register_costmodel_tests(void)
{
    TEST_SUITE(
        "costmodel", {"korthikanti_table2_gpt3_175b", test_korthikanti_table2_gpt3_175b},
        {"korthikanti_published_savings", test_korthikanti_published_savings},
        {"units_reduce_to_korthikanti_for_gpt", test_units_reduce_to_korthikanti_for_gpt},
        {"units_generalise_to_gqa_and_swiglu", test_units_generalise_to_gqa_and_swiglu},
        {"decoder_flops_are_24bsh2_plus_4bs2h", test_decoder_flops_are_24bsh2_plus_4bs2h},
        {"model_flops_match_72bslh2_and_6_params_tokens",
         test_model_flops_match_72bslh2_and_6_params_tokens},
        {"llama3_405b_has_405b_parameters", test_llama3_405b_has_405b_parameters},
        {"state_bytes_follow_megatron_table", test_state_bytes_follow_megatron_table},
        {"tied_lm_head_holds_copy_only_with_pipeline",
         test_tied_lm_head_holds_copy_only_with_pipeline},

        {"roofline_picks_memory_bound_for_small_ops",
         test_roofline_picks_memory_bound_for_small_ops},
        {"tiny_decoder_layer_is_memory_bound", test_tiny_decoder_layer_is_memory_bound},
        {"large_decoder_layer_is_compute_bound_and_backward_twice",
         test_large_decoder_layer_is_compute_bound_and_backward_twice},
        {"tp_collectives_are_two_ring_allreduces", test_tp_collectives_are_two_ring_allreduces},
        {"tp_comm_overlap_pipelines_each_collective_with_its_gemm",
         test_tp_comm_overlap_pipelines_each_collective_with_its_gemm},
        {"recompute_costs_attention_core_or_whole_forward",
         test_recompute_costs_attention_core_or_whole_forward},
        {"custom_layers_interpolate_time_tables", test_custom_layers_interpolate_time_tables},
        {"build_rejects_heads_not_divisible_by_tp", test_build_rejects_heads_not_divisible_by_tp});
}
