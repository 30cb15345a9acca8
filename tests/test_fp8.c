/*
 * test_fp8.c -- FP8 training (training.fp8_format, costmodel_fp8.c) in
 * closed form, on GPT-3 175B (workloads/gpt3_175b_128.json: s 2048, h 12288,
 * 96 heads, f = 4h, bf16 D = 2, b 1, TP t = 8 with sequence parallelism) on
 * test_npu_cluster()'s NPU (313 TFLOP/s at 70%, HBM 1.6 TB/s, 10 us launch)
 * given an FP8 peak of twice its bf16 one.
 */
#include <math.h>
#include <string.h>

#include "costmodel.h"
#include "memory.h"
#include "testutil.h"

#define PEAK 313e12
#define FP8_PEAK (2.0 * PEAK)
#define EFF 0.7
#define HBM_BW 1.6e12
#define LAUNCH 10e-6

static const double N = 2048, H = 12288, T = 8, D = 2;
#define SBH (2048.0 * 12288.0)
/* FlashAttention's statistics: b·(a/t)·s rows of 2 fp32 (test_costmodel_modern.c). */
#define STATS (12.0 * 2048.0 * 8.0)

static double memop(double bytes) { return bytes / HBM_BW + LAUNCH; }

/* A GEMM [m×k]·[k×n] written out: FP8 operands in, a bf16 output. */
static double fp8_gemm(double m, double k, double n)
{
    return fmax(2.0 * m * k * n / (FP8_PEAK * EFF), ((m * k + k * n) * 1.0 + m * n * D) / HBM_BW) +
           LAUNCH;
}
static double bf16_gemm(double m, double k, double n)
{
    return fmax(2.0 * m * k * n / (PEAK * EFF), (m * k + k * n + m * n) * D / HBM_BW) + LAUNCH;
}

static cl_cluster fp8_cluster(void)
{
    cl_cluster c = test_npu_cluster(128, 8);
    c.fp8_peak_flops = FP8_PEAK;
    return c;
}

static void build(const char *format, const cl_cluster *c, cm_model *cm)
{
    char set[64];
    snprintf(set, sizeof set, "fp8_format=%s", format);
    const char *const sets[] = {set, "use_flash_attn=true"};
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with("workloads/gpt3_175b_128.json", sets, 2, &w, &err), 0);
    CU_ASSERT_EQUAL_FATAL(cm_build(&w, c, 1, cm, &err), 0);
    wl_free(&w);
}

/* The weight-gradient pass is the four linear GEMMs once: QKV [n×h]·[h×3h/t],
 * the projection [n×h/t]·[h/t×h], FC1 [n×h]·[h×4h/t], FC2 [n×4h/t]·[4h/t×h],
 * each on the FP8 peak; without FP8 the same four on the bf16 one. */
static void test_the_linear_gemms_run_on_the_fp8_peak(void)
{
    cl_cluster c = fp8_cluster();
    cm_model fp8, bf16;
    build("hybrid", &c, &fp8);
    build("none", &c, &bf16);
    double f = 4.0 * H;
    ASSERT_REL(fp8.layers[1].weight_grad_s,
               fp8_gemm(N, H, 3.0 * H / T) + fp8_gemm(N, H / T, H) + fp8_gemm(N, H, f / T) +
                   fp8_gemm(N, f / T, H),
               1e-12);
    ASSERT_REL(bf16.layers[1].weight_grad_s,
               bf16_gemm(N, H, 3.0 * H / T) + bf16_gemm(N, H / T, H) + bf16_gemm(N, H, f / T) +
                   bf16_gemm(N, f / T, H),
               1e-12);
    /* compute-bound at these sizes: half the time less four launches' worth */
    CU_ASSERT(fp8.layers[1].weight_grad_s < 0.51 * bf16.layers[1].weight_grad_s + 4 * LAUNCH);
    /* e4m3 and hybrid differ in the gradients' format only, not in time */
    cm_model e4m3;
    build("e4m3", &c, &e4m3);
    ASSERT_REL(e4m3.layers[1].forward_s, fp8.layers[1].forward_s, 1e-15);
    ASSERT_REL(e4m3.layers[1].backward_s, fp8.layers[1].backward_s, 1e-15);
    /* the LM head stays bf16 */
    ASSERT_REL(fp8.layers[fp8.num_layers - 1].forward_s, bf16.layers[bf16.num_layers - 1].forward_s,
               1e-15);
    cm_free(&fp8);
    cm_free(&bf16);
    cm_free(&e4m3);
}

/* Forward: the four GEMMs swapped, plus two casts (the projection's input,
 * n·h/t values, and FC2's, n·4h/t), each reading D bytes and writing 2 per
 * value.  Backward: the four GEMMs swapped, plus a cast of every linear
 * layer's output gradient: QKV's n·3h/t, the projection's n·h, FC1's n·4h/t,
 * FC2's n·h. */
static void test_casts_add_what_transformer_engine_moves(void)
{
    cl_cluster c = fp8_cluster();
    cm_model fp8, bf16;
    build("hybrid", &c, &fp8);
    build("none", &c, &bf16);
    double gemm_gain = bf16.layers[1].weight_grad_s - fp8.layers[1].weight_grad_s;
    double f = 4.0 * H, cast = D + 2.0;
    double forward_casts = memop(N * H / T * cast) + memop(N * f / T * cast);
    double backward_casts = memop(N * 3.0 * H / T * cast) + memop(N * H * cast) +
                            memop(N * f / T * cast) + memop(N * H * cast);
    ASSERT_REL(fp8.layers[1].forward_s, bf16.layers[1].forward_s - gemm_gain + forward_casts,
               1e-12);
    ASSERT_REL(fp8.layers[1].backward_s, bf16.layers[1].backward_s - gemm_gain + backward_casts,
               1e-12);
    cm_free(&fp8);
    cm_free(&bf16);
}

/* With SP and FlashAttention a layer keeps 34·sbh/t (+ the statistics,
 * test_costmodel_modern.c).  FP8 keeps the four linear inputs in 1 byte
 * instead of 2: QKV's and FC1's (sbh/t each, the norms' outputs), the
 * projection's (sbh/t) and FC2's (4·sbh/t), 7·sbh/t less: 27·sbh/t. */
static void test_fp8_keeps_27_sbh_over_t(void)
{
    cl_cluster c = fp8_cluster();
    cm_model fp8;
    build("hybrid", &c, &fp8);
    ASSERT_REL(fp8.layers[1].activation_bytes[RECOMPUTE_NONE], 27.0 * SBH / T + STATS, 1e-12);
    ASSERT_REL(fp8.layers[1].activation_bytes[RECOMPUTE_SELECTIVE], 27.0 * SBH / T, 1e-12);
    ASSERT_REL(fp8.layers[1].activation_bytes[RECOMPUTE_FULL], 2.0 * SBH / T, 1e-12);
    cm_free(&fp8);
}

/* Transformer Engine's cached FP8 weights and transposes: 2 bytes per
 * parameter of the linear layers, 12h²/t of a GPT-3 layer (the norms' 4h
 * are not), counted as weights in the memory breakdown. */
static void test_the_fp8_weight_cache_counts_as_weights(void)
{
    cl_cluster c = fp8_cluster();
    cm_model fp8, bf16;
    build("hybrid", &c, &fp8);
    build("none", &c, &bf16);
    double cache = 2.0 * 12.0 * H * H / T;
    ASSERT_REL(fp8.layers[1].fp8_weight_cache_bytes, cache, 1e-12);
    ASSERT_REL(fp8.layers[1].state_bytes - bf16.layers[1].state_bytes, cache, 1e-9);
    CU_ASSERT_EQUAL(bf16.layers[1].fp8_weight_cache_bytes, 0.0);
    double w8, g8, o8, w16, g16, o16;
    mem_layer_state(&fp8, 1, &w8, &g8, &o8);
    mem_layer_state(&bf16, 1, &w16, &g16, &o16);
    ASSERT_REL(w8 - w16, cache, 1e-9);
    ASSERT_REL(g8, g16, 1e-12);
    ASSERT_REL(o8, o16, 1e-9);
    cm_free(&fp8);
    cm_free(&bf16);
}

/* FP8 parameters (fp8_param_gather): the FP8 weight and its transpose take
 * the bf16 weight's 2 bytes, so no cache beside them; the fp32 master is
 * whole, 4 bytes, where remainders kept 2 (no bf16 half to complete it);
 * the parameter gathers move 1 byte per parameter, ZeRO-3's per layer
 * included: 12h^2/t + 4h parameters of a GPT layer. */
static void test_fp8_parameters_are_gathered_in_one_byte(void)
{
    cl_cluster c = fp8_cluster();
    const char *const base[] = {"fp8_format=hybrid",
                                "use_flash_attn=true",
                                "use_distributed_optimizer=true",
                                "use_precision_aware_optimizer=true",
                                "data_parallel_sharding_strategy=optim_grads_params",
                                "data_parallel_size=2",
                                "global_batch_size=16"};
    const char *with[8];
    for (int i = 0; i < 7; i++)
        with[i] = base[i];
    with[7] = "fp8_param_gather=true";
    wl_workload w;
    np_error err;
    cm_model cached, params;
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with("workloads/gpt3_175b_128.json", base, 7, &w, &err), 0);
    CU_ASSERT_EQUAL_FATAL(cm_build(&w, &c, 1, &cached, &err), 0);
    wl_free(&w);
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with("workloads/gpt3_175b_128.json", with, 8, &w, &err), 0);
    CU_ASSERT_EQUAL_FATAL(cm_build(&w, &c, 1, &params, &err), 0);
    wl_free(&w);
    double layer_params = 12.0 * H * H / T + 4.0 * H;
    ASSERT_REL(cached.layers[1].params, layer_params, 1e-12);
    CU_ASSERT_EQUAL(params.layers[1].fp8_weight_cache_bytes, 0.0);
    CU_ASSERT(cached.precision.remainders);
    CU_ASSERT_DOUBLE_EQUAL(cached.precision.main_param, 2.0, 0.0);
    CU_ASSERT_FALSE(params.precision.remainders);
    CU_ASSERT_DOUBLE_EQUAL(params.precision.main_param, 4.0, 0.0);
    CU_ASSERT_DOUBLE_EQUAL(cm_model_gather_bytes(&cached), 2.0, 0.0);
    CU_ASSERT_DOUBLE_EQUAL(cm_model_gather_bytes(&params), 1.0, 0.0);
    ASSERT_REL(cached.layers[1].zero_gather_bytes, 2.0 * layer_params, 1e-12);
    ASSERT_REL(params.layers[1].zero_gather_bytes, 1.0 * layer_params, 1e-12);
    cm_free(&cached);
    cm_free(&params);
    /* Megatron's rules: FP8 training, and the distributed optimizer */
    const char *const no_fp8[] = {"fp8_param_gather=true", "use_distributed_optimizer=true"};
    CU_ASSERT_NOT_EQUAL(test_wl_load_with("workloads/gpt3_175b_128.json", no_fp8, 2, &w, &err), 0);
    CU_ASSERT_STRING_EQUAL(err.key, "training.fp8_param_gather");
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "needs training.fp8_format"));
    const char *const no_dist[] = {"fp8_param_gather=true", "fp8_format=e4m3",
                                   "use_distributed_optimizer=false"};
    CU_ASSERT_NOT_EQUAL(test_wl_load_with("workloads/gpt3_175b_128.json", no_dist, 3, &w, &err), 0);
    CU_ASSERT_STRING_EQUAL(err.key, "training.fp8_param_gather");
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "use_distributed_optimizer"));
}

/* A platform without fp8_flops (the A100) cannot price FP8 GEMMs, and
 * Megatron runs FP8 only in bf16 or fp16 training: both refused, naming the
 * key. */
static void test_fp8_is_refused_where_it_cannot_run(void)
{
    cl_cluster c = test_npu_cluster(128, 8); /* no fp8_flops */
    const char *const sets[] = {"fp8_format=hybrid"};
    wl_workload w;
    np_error err;
    cm_model cm;
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with("workloads/gpt3_175b_128.json", sets, 1, &w, &err), 0);
    CU_ASSERT_NOT_EQUAL(cm_build(&w, &c, 1, &cm, &err), 0);
    CU_ASSERT_STRING_EQUAL(err.key, "training.fp8_format");
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "gives no fp8_flops"));
    wl_free(&w);
    const char *const fp32[] = {"fp8_format=e4m3", "params_dtype=fp32"};
    CU_ASSERT_NOT_EQUAL(test_wl_load_with("workloads/gpt3_175b_128.json", fp32, 2, &w, &err), 0);
    CU_ASSERT_STRING_EQUAL(err.key, "training.fp8_format");
    const char *const bad[] = {"fp8_format=e5m2"};
    CU_ASSERT_NOT_EQUAL(test_wl_load_with("workloads/gpt3_175b_128.json", bad, 1, &w, &err), 0);
    CU_ASSERT_STRING_EQUAL(err.key, "training.fp8_format");
}

void register_fp8_tests(void)
{
    TEST_SUITE(
        "fp8", {"the linear GEMMs run on the FP8 peak", test_the_linear_gemms_run_on_the_fp8_peak},
        {"casts add what Transformer Engine moves", test_casts_add_what_transformer_engine_moves},
        {"FP8 keeps 27 sbh/t", test_fp8_keeps_27_sbh_over_t},
        {"the FP8 weight cache counts as weights", test_the_fp8_weight_cache_counts_as_weights},
        {"FP8 parameters are gathered in one byte", test_fp8_parameters_are_gathered_in_one_byte},
        {"FP8 is refused where it cannot run", test_fp8_is_refused_where_it_cannot_run});
}
