/*
 * test_mla_costmodel.c -- multi-head latent attention in the cost model
 * (costmodel_mla.c), in closed form on the DeepSeek-V3-class model
 * (workloads/deepseek_v3_class.json: h 7168, 128 heads, r_q 1536, r_kv 512,
 * d_n 128, d_r 64, d_v 128, s 4096, bf16 D = 2, micro-batch 1; decoder layer
 * 0 is dense with a SwiGLU FFN of 18432).  Every expected value is written
 * out from the DeepSeek-V2 paper's projections (arXiv 2405.04434, section
 * 2.1), not taken from the program.  The NPU is test_npu_cluster()'s 910B
 * (313 TFLOP/s, HBM 1.6 TB/s, 10 µs launch).
 */
#include <math.h>
#include <string.h>

#include "costmodel.h"
#include "testutil.h"

#define PEAK 313e12
#define HBM_BW 1.6e12
#define LAUNCH 10e-6

static const double H = 7168, A = 128, S = 4096, FFN = 18432;
static const double RQ = 1536, RKV = 512, DN = 128, DR = 64, DV = 128;

static int build(const char *const *set, int n, cm_model *cm, np_error *err)
{
    wl_workload w;
    cl_cluster c = test_npu_cluster(128, 8);
    c.attention_efficiency = 0.6;
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with("workloads/deepseek_v3_class.json", set, n, &w, err),
                          0);
    int rc = cm_build(&w, &c, 1, cm, err);
    wl_free(&w);
    return rc;
}

/* MLA's attention parameters per layer, the hand count of docs/moe.md:
 * queries 7168·1536 + 1536 + 1536·128·192 = 48,760,320, keys and values
 * 7168·576 + 512 + 512·128·256 = 20,906,496, output 128·128·7168 =
 * 117,440,512: 187,107,328.  At TP 2 the down projections and their norms
 * (7168·1536 + 1536 + 7168·576 + 512 = 15,140,864) stay whole on every rank
 * and the rest (171,966,464) is halved: 101,124,096.  A dense layer adds its
 * two RMSNorms (2h) and the SwiGLU MLP 3·h·ffn / t. */
static void test_mla_parameters_per_rank(void)
{
    cm_model cm;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(build(NULL, 0, &cm, &err), 0);
    ASSERT_REL(cm.layers[1].params, 187107328.0 + 2 * H + 3 * H * FFN, 1e-15);
    cm_free(&cm);
    const char *const tp2[] = {"tensor_model_parallel_size=2", "data_parallel_size=512",
                               "sequence_parallel=true"};
    CU_ASSERT_EQUAL_FATAL(build(tp2, 3, &cm, &err), 0);
    ASSERT_REL(cm.layers[1].params, 101124096.0 + 2 * H + 3 * H * FFN / 2, 1e-15);
    cm_free(&cm);
}

/* Model FLOPs of the dense layer, forward, one sample of 4096 tokens:
 * 2·n per projection weight (187,105,280 without the two norms' 2,048),
 * the core's QKᵀ and AV 2s²·a·(d_qk + d_v) = 2·4096²·128·320, and the MLP
 * 2·n·3·h·ffn. */
static void test_mla_model_flops(void)
{
    cm_model cm;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(build(NULL, 0, &cm, &err), 0);
    double expected = 2 * S * 187105280.0 + 2 * S * S * A * (DN + DR + DV) + 2 * S * 3 * H * FFN;
    ASSERT_REL(cm.layers[1].forward_flops, expected, 1e-15);
    cm_free(&cm);
}

/* What the projections and the core keep: the down projections' outputs and
 * their normalised forms (2·1536 + 2·512 + 64 per token) and Q, K, V of the
 * 128 heads (128·(192 + 192 + 128)), in bf16; the core's output 128·128 per
 * token; FlashAttention's statistics b·a·s·8 bytes. */
static void test_mla_kept_bytes(void)
{
    cm_model cm;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(build(NULL, 0, &cm, &err), 0);
    const cm_layer *ly = &cm.layers[1];
    ASSERT_REL(test_unit(ly, "qkv")->activation_bytes,
               S * (2 * RQ + 2 * RKV + DR + A * (2 * (DN + DR) + DV)) * 2, 1e-15);
    ASSERT_REL(test_unit(ly, "proj_input")->activation_bytes, S * A * DV * 2, 1e-15);
    ASSERT_REL(test_unit(ly, "core_attention")->activation_bytes, A * S * 8, 1e-15);
    cm_free(&cm);
}

/* The FlashAttention kernel with MLA's head sizes: 2s²·a·(d_qk + d_v)
 * FLOPs, half of them for the causal mask (FlashAttention-2, section 4.1),
 * at the attention efficiency (0.6 here) against Q and K of
 * n·a·192, V and O of n·a·128 elements and the statistics. */
static void test_mla_flash_kernel_time(void)
{
    cm_model cm;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(build(NULL, 0, &cm, &err), 0);
    double flops = 0.5 * 2 * S * S * A * (DN + DR + DV);
    double bytes = S * A * (2 * (DN + DR) + 2 * DV) * 2 + A * S * 8;
    double expected = fmax(flops / (PEAK * 0.6), bytes / HBM_BW) + LAUNCH;
    ASSERT_REL(test_unit(&cm.layers[1], "core_attention")->forward_s, expected, 1e-12);
    cm_free(&cm);
}

/* Context parallelism's K/V ring is MHA's: with MLA it is refused, naming
 * the key. */
static void test_mla_with_context_parallelism_is_refused(void)
{
    cm_model cm;
    np_error err;
    const char *const cp[] = {"context_parallel_size=2", "data_parallel_size=512",
                              "expert_model_parallel_size=2"};
    int rc = build(cp, 3, &cm, &err);
    CU_ASSERT_NOT_EQUAL(rc, 0);
    if (rc == 0) {
        cm_free(&cm);
        return;
    }
    CU_ASSERT_PTR_NOT_NULL(strstr(err.key, "context_parallel_size"));
}

void register_mla_costmodel_tests(void)
{
    TEST_SUITE("mla_costmodel", {"parameters per rank", test_mla_parameters_per_rank},
               {"model FLOPs", test_mla_model_flops}, {"kept bytes", test_mla_kept_bytes},
               {"FlashAttention kernel time", test_mla_flash_kernel_time},
               {"refused with context parallelism", test_mla_with_context_parallelism_is_refused});
}
