/*
 * test_precision.c -- the gradient and optimizer dtypes (training.
 * grad_reduce_in_bf16 and Megatron's precision-aware optimizer): bytes per
 * parameter in closed form from the dtypes' sizes, the cost model's layers,
 * the memory breakdown, the data-parallel reduction's bytes and buckets, and
 * the loader's rules.
 *
 * Closed forms, bf16 weights (2 bytes), per parameter: the gradient 4 (fp32,
 * Megatron's default) or 2 (grad_reduce_in_bf16, or main_grads_dtype bf16);
 * the sharded optimizer state S = master + exp_avg + exp_avg_sq, the master
 * 4 (fp32), 2 (fp16, or an fp32 master kept as the 16-bit remainder of the
 * bf16 weight: Transformer Engine's FusedAdam store_param_remainders), the
 * moments 4, 2 or 1 (fp8).  NeMo's recipes with distributed_fused_adam,
 * grad_sync_dtype bf16 and dtype bf16 keep 2 + 2 + (2 + 2 + 2)/n.
 */
#include <math.h>
#include <string.h>

#include "costmodel.h"
#include "engine.h"
#include "engine_internal.h"
#include "memory.h"
#include "moe.h"
#include "testutil.h"

static cm_precision precision_with(wl_training t)
{
    cm_precision p;
    cm_precision_of(&t, &p);
    return p;
}

/* Megatron-LM docs, "Distributed Optimizer": bytes per parameter of each
 * parameter dtype, and Adam's traffic (read the gradient, read and write
 * master and moments, write the weight; fp32 reads the weight, its own
 * master: 4 + 2·8 + 2·4). */
static void test_the_defaults_follow_megatrons_table(void)
{
    cm_precision p_bf16 = cm_dtype_precision(WL_BF16), p_fp16 = cm_dtype_precision(WL_FP16),
                 p_fp32 = cm_dtype_precision(WL_FP32);
    ASSERT_REL(cm_state_bytes_per_param(&p_bf16, false, 128), 18.0, 1e-12);
    ASSERT_REL(cm_state_bytes_per_param(&p_bf16, true, 128), 6.0 + 12.0 / 128, 1e-12);
    ASSERT_REL(cm_state_bytes_per_param(&p_fp16, false, 8), 20.0, 1e-12);
    ASSERT_REL(cm_state_bytes_per_param(&p_fp16, true, 8), 6.0, 1e-12);
    ASSERT_REL(cm_state_bytes_per_param(&p_fp32, false, 4), 16.0, 1e-12);
    ASSERT_REL(cm_state_bytes_per_param(&p_fp32, true, 4), 10.0, 1e-12);
    ASSERT_REL(cm_optimizer_bytes_per_param(&p_bf16), 4 + 2 * 12 + 2, 1e-15);
    ASSERT_REL(cm_optimizer_bytes_per_param(&p_fp16), 2 + 2 * 12 + 2, 1e-15);
    ASSERT_REL(cm_optimizer_bytes_per_param(&p_fp32), 4 + 2 * 8 + 2 * 4, 1e-15);
    /* and a model built by hand reads as bf16's */
    cm_precision p = cm_model_precision(NULL);
    ASSERT_REL(cm_sharded_bytes(&p), 12.0, 1e-15);
}

static void test_bytes_per_param_of_each_precision(void)
{
    wl_training base = {.params_dtype = WL_BF16, .store_param_remainders = true};
    /* Megatron's default: 2 + 4 replicated, 4 + 4 + 4 sharded */
    cm_precision p = precision_with(base);
    ASSERT_REL(cm_replicated_bytes(&p), 6.0, 1e-15);
    ASSERT_REL(cm_sharded_bytes(&p), 12.0, 1e-15);
    ASSERT_REL(cm_optimizer_bytes_per_param(&p), 4 + 2 * 12 + 2, 1e-15);
    /* the store_param_remainders default means nothing without the
     * precision-aware optimizer */
    CU_ASSERT_FALSE(p.remainders);

    wl_training t = base;
    t.grad_reduce_in_bf16 = true;
    p = precision_with(t);
    ASSERT_REL(p.grad, 2.0, 1e-15);
    ASSERT_REL(cm_state_bytes_per_param(&p, true, 8), 2 + 2 + 12 / 8.0, 1e-15);
    ASSERT_REL(cm_optimizer_bytes_per_param(&p), 2 + 2 * 12 + 2, 1e-15);

    t = base;
    t.use_precision_aware_optimizer = true;
    t.main_grads_dtype = WL_STATE_BF16; /* a bf16 gradient without grad_reduce_in_bf16 */
    p = precision_with(t);
    ASSERT_REL(p.grad, 2.0, 1e-15);
    /* the fp32 master of a bf16 weight as its low 16 bits */
    ASSERT_REL(p.main_param, 2.0, 1e-15);
    CU_ASSERT_TRUE(p.remainders);

    /* NeMo's bf16 optimizer state with bf16 gradients over 2 replicas */
    t.grad_reduce_in_bf16 = true;
    t.exp_avg_dtype = t.exp_avg_sq_dtype = WL_STATE_BF16;
    p = precision_with(t);
    ASSERT_REL(cm_sharded_bytes(&p), 6.0, 1e-15);
    ASSERT_REL(cm_state_bytes_per_param(&p, true, 2), 2 + 2 + 6 / 2.0, 1e-15);
    /* Adam reads the weight (the master's high half) and writes it */
    ASSERT_REL(cm_optimizer_bytes_per_param(&p), 2 + 2 * 6 + 2 * 2, 1e-15);
    ASSERT_REL(cm_sharded_state_bytes_per_param(&p, WL_SHARD_OPTIM_GRADS, 4), 2 + (2 + 6) / 4.0,
               1e-15);

    t.store_param_remainders = false; /* the whole fp32 master */
    p = precision_with(t);
    ASSERT_REL(p.main_param, 4.0, 1e-15);
    ASSERT_REL(cm_optimizer_bytes_per_param(&p), 2 + 2 * 8 + 2, 1e-15);

    t.main_params_dtype = WL_STATE_FP16;
    t.exp_avg_dtype = WL_STATE_FP8;
    t.exp_avg_sq_dtype = WL_STATE_FP8;
    t.grad_reduce_in_bf16 = false;
    t.main_grads_dtype = WL_STATE_FP32;
    p = precision_with(t);
    ASSERT_REL(cm_replicated_bytes(&p), 6.0, 1e-15);
    ASSERT_REL(cm_sharded_bytes(&p), 2 + 1 + 1, 1e-15);
    ASSERT_REL(cm_optimizer_bytes_per_param(&p), 4 + 2 * 4 + 2, 1e-15);
}

/* GPT-3 175B on 128 NPUs (TP 8, PP 8, DP 2, the distributed optimizer) with
 * the overrides, planned by Megatron's rule. */
static int gpt_job(test_job *j, const char *const *sets, int n)
{
    cl_cluster c = test_npu_cluster(128, 8);
    np_error err;
    int rc = test_job_build(j, &c, "workloads/gpt3_175b_128.json", sets, n, "megatron", &err);
    if (rc)
        fprintf(stderr, "\n  %s: %s\n", err.key, err.text);
    return rc;
}

static double stage_op_bytes(const sched_stage *st, op_kind k)
{
    double bytes = 0;
    for (int i = 0; i < st->num_ops; i++)
        if (st->ops[i].kind == k)
            bytes += st->ops[i].bytes;
    return bytes;
}

static void test_the_model_memory_and_sync_follow_the_precision(void)
{
    const char *const nemo[] = {"training.grad_reduce_in_bf16=true",
                                "training.use_precision_aware_optimizer=true",
                                "training.exp_avg_dtype=bf16", "training.exp_avg_sq_dtype=bf16"};
    test_job fp32, bf16;
    CU_ASSERT_EQUAL_FATAL(gpt_job(&fp32, NULL, 0), 0);
    CU_ASSERT_EQUAL_FATAL(gpt_job(&bf16, nemo, 4), 0);
    CU_ASSERT_EQUAL_FATAL(bf16.cm.num_layers, fp32.cm.num_layers);
    for (int l = 0; l < bf16.cm.num_layers; l++) {
        const cm_layer *a = &fp32.cm.layers[l], *b = &bf16.cm.layers[l];
        ASSERT_REL(b->params, a->params, 1e-15);
        ASSERT_REL(a->state_bytes, a->params * (6 + 12 / 2.0), 1e-12);
        ASSERT_REL(b->state_bytes, b->params * (4 + 6 / 2.0), 1e-12);
        ASSERT_REL(b->grad_bytes, b->params * 2, 1e-12);
        /* the forward is the same: only the state's dtypes changed (the
         * embedding's backward scatter-adds into 2-byte gradient rows) */
        ASSERT_REL(cm_forward_total_s(b), cm_forward_total_s(a), 1e-12);
    }
    for (int s = 0; s < bf16.pl.num_stages; s++) {
        double params = 0;
        for (int l = bf16.pl.chunk_start[s]; l < bf16.pl.chunk_start[s + 1]; l++)
            params += bf16.cm.layers[l].params;
        mem_stage a, b;
        mem_stage_bytes(&fp32.cm, &fp32.pl, s, &a);
        mem_stage_bytes(&bf16.cm, &bf16.pl, s, &b);
        ASSERT_REL(b.weight_bytes, params * 2, 1e-12);
        ASSERT_REL(b.grad_bytes, params * 2, 1e-12);
        ASSERT_REL(b.optimizer_bytes, params * 6 / 2.0, 1e-12);
        ASSERT_REL(a.total_bytes - b.total_bytes, params * (2 + 6 / 2.0), 1e-9);
        ASSERT_REL(b.activation_bytes, a.activation_bytes, 1e-15);
        /* the data-parallel reduction moves the bf16 gradients */
        ASSERT_REL(stage_op_bytes(&bf16.sc.stages[s], OP_DP_ALLREDUCE), params * 2, 1e-12);
        ASSERT_REL(stage_op_bytes(&fp32.sc.stages[s], OP_DP_ALLREDUCE), params * 4, 1e-12);
    }
    /* Megatron's bucket counts parameters, max(40M, 1M·dp): the same
     * parameters per bucket whatever the gradient's dtype */
    ASSERT_REL(cm_dp_bucket_bytes(&bf16.cm, 0, 2), 2 * 40e6, 1e-15);
    ASSERT_REL(cm_dp_bucket_bytes(&fp32.cm, 0, 2), 4 * 40e6, 1e-15);
    ASSERT_REL(cm_dp_param_buckets(&bf16.cm, 100e6, cm_dp_bucket_bytes(&bf16.cm, 0, 2)), 3.0,
               1e-15);
    ASSERT_REL(cm_dp_param_buckets(&fp32.cm, 100e6, cm_dp_bucket_bytes(&fp32.cm, 0, 2)), 3.0,
               1e-15);
    /* the optimizer step: memory-bound Adam over 1/dp of the stage's
     * parameters, one launch per layer */
    int last = bf16.pl.chunk_start[1];
    double p0 = 0;
    for (int l = 0; l < last; l++)
        p0 += fp32.cm.layers[l].params;
    ASSERT_REL(cm_optimizer_step_s(&fp32.cm, 0, last),
               p0 / 2 * 30 / fp32.cm.hbm_bandwidth_Bps + last * fp32.cm.kernel_launch_s, 1e-12);
    ASSERT_REL(cm_optimizer_step_s(&bf16.cm, 0, last) - last * bf16.cm.kernel_launch_s,
               (cm_optimizer_step_s(&fp32.cm, 0, last) - last * fp32.cm.kernel_launch_s) *
                   (2 + 2 * 6 + 2 * 2) / 30.0,
               1e-12);
    test_job_free(&fp32);
    test_job_free(&bf16);
}

/* The same bytes reach ZeRO-2's per-pass reduce-scatters and the MoE expert
 * state: GPT-3 175B under optim_grads over DP 2 with bf16 gradients holds
 * 2 + (2 + 12)/2 bytes per parameter and reduce-scatters 2 per parameter;
 * the 21B MoE at EP 8 (expert-data-parallel group of 32/8 = 4) with NeMo's
 * bf16 state holds 2 + 2 + 6/4 per expert parameter. */
static void test_zero2_and_the_experts_follow_the_precision(void)
{
    const char *const zero2[] = {"training.data_parallel_sharding_strategy=optim_grads",
                                 "training.grad_reduce_in_bf16=true"};
    test_job j;
    CU_ASSERT_EQUAL_FATAL(gpt_job(&j, zero2, 2), 0);
    for (int l = 0; l < j.cm.num_layers; l++) {
        const cm_layer *ly = &j.cm.layers[l];
        ASSERT_REL(ly->state_bytes, ly->params * (2 + (2 + 12) / 2.0), 1e-12);
        ASSERT_REL(ly->zero_reduce_bytes, ly->params * 2, 1e-12);
    }
    test_job_free(&j);
    const char *const moe[] = {"parallel.expert_model_parallel_size=8",
                               "training.grad_reduce_in_bf16=true",
                               "training.use_precision_aware_optimizer=true",
                               "training.exp_avg_dtype=bf16", "training.exp_avg_sq_dtype=bf16"};
    wl_workload w;
    np_error err;
    for (int k = 0; k < 2; k++) {
        int rc = test_wl_load_with("workloads/moe_21b_32npu.json", moe, k ? 5 : 1, &w, &err);
        if (rc)
            fprintf(stderr, "\n  %s: %s\n", err.key, err.text);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        moe_expert_memory ex;
        moe_expert_memory_of(&w, &ex);
        CU_ASSERT_TRUE(ex.params > 0);
        ASSERT_REL(ex.state_bytes, ex.params * (k ? 2 + 2 + 6 / 4.0 : 2 + 4 + 12 / 4.0), 1e-12);
        ASSERT_REL(ex.grad_bytes, ex.params * (k ? 2 : 4), 1e-12);
        wl_free(&w);
    }
}

/* The engine's gradient buckets under --dp-overlap (overlap_build): Megatron's
 * default bucket of max(40M, 1M·dp) parameters, so a stage's P parameters
 * make ceil(P_chunk / 40M) buckets per chunk whatever the gradient's dtype,
 * each of G bytes per parameter. */
static void test_the_engines_buckets_count_parameters(void)
{
    const char *const bf16_set[] = {"training.grad_reduce_in_bf16=true"};
    test_job fp32, bf16;
    CU_ASSERT_EQUAL_FATAL(gpt_job(&fp32, NULL, 0), 0);
    CU_ASSERT_EQUAL_FATAL(gpt_job(&bf16, bf16_set, 1), 0);
    test_job *jobs[2] = {&fp32, &bf16};
    const double grad[2] = {4, 2};
    for (int k = 0; k < 2; k++) {
        test_job *j = jobs[k];
        engine_options o;
        engine_init_options(&o);
        o.dp_overlap = true;
        engine e = {.pl = &j->pl, .sc = &j->sc, .opt = &o, .tp = 8, .dp = 2, .p = 8, .cp = 1};
        e.fold = e.dp;
        np_error err;
        CU_ASSERT_EQUAL_FATAL(overlap_build(&e, &j->cm, &err), 0);
        for (int s = 0; s < 8; s++) {
            double params = 0, bytes = 0, want = 0;
            for (int l = j->pl.chunk_start[s]; l < j->pl.chunk_start[s + 1]; l++)
                params += j->cm.layers[l].params;
            want = ceil(params / 40e6);
            for (int b = 0; b < e.overlap[s].num_buckets; b++)
                bytes += e.overlap[s].bucket_bytes[b];
            CU_ASSERT_EQUAL(e.overlap[s].num_buckets, (int)want);
            ASSERT_REL(bytes, params * grad[k], 1e-12);
        }
        overlap_free(&e);
    }
    test_job_free(&fp32);
    test_job_free(&bf16);
}

static void test_the_loader_keeps_megatrons_rules(void)
{
    const char *f = "workloads/gpt3_175b_128.json";
    test_expect_override_error(f, "training.exp_avg_dtype=bf16", "training.exp_avg_dtype",
                               "needs training.use_precision_aware_optimizer");
    test_expect_override_error(f, "training.main_grads_dtype=fp8", "training.main_grads_dtype",
                               "expected \"fp32\" or \"bf16\"");
    test_expect_override_error(f, "training.main_params_dtype=bf16", "training.main_params_dtype",
                               "expected \"fp32\" or \"fp16\"");
    test_expect_override_error(f, "training.exp_avg_sq_dtype=fp64", "training.exp_avg_sq_dtype",
                               "fp8");
    const char *const need_aware[] = {"main_grads_dtype=bf16", "main_params_dtype=fp16",
                                      "exp_avg_sq_dtype=fp8"};
    for (int i = 0; i < 3; i++) {
        char set[64], key[64];
        snprintf(set, sizeof set, "training.%s", need_aware[i]);
        snprintf(key, sizeof key, "training.%.*s", (int)strcspn(need_aware[i], "="), need_aware[i]);
        test_expect_override_error(f, set, key, "needs training.use_precision_aware_optimizer");
    }
    /* gpt3_175b_128.json runs the distributed optimizer; without it */
    const char *const no_dist[] = {"training.use_distributed_optimizer=false",
                                   "training.use_precision_aware_optimizer=true"};
    wl_workload w;
    np_error err;
    CU_ASSERT_NOT_EQUAL(test_wl_load_with(f, no_dist, 2, &w, &err), 0);
    CU_ASSERT_STRING_EQUAL(err.key, "training.use_precision_aware_optimizer");
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "needs training.use_distributed_optimizer"));
    const char *const fp16[] = {"training.params_dtype=fp16", "training.grad_reduce_in_bf16=true"};
    CU_ASSERT_NOT_EQUAL(test_wl_load_with(f, fp16, 2, &w, &err), 0);
    CU_ASSERT_STRING_EQUAL(err.key, "training.grad_reduce_in_bf16");
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "needs training.params_dtype \"bf16\""));
    const char *const fp16_aware[] = {"training.params_dtype=fp16",
                                      "training.use_precision_aware_optimizer=true"};
    CU_ASSERT_NOT_EQUAL(test_wl_load_with(f, fp16_aware, 2, &w, &err), 0);
    CU_ASSERT_STRING_EQUAL(err.key, "training.use_precision_aware_optimizer");
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "modelled for training.params_dtype \"bf16\" only"));
    const char *const ok[] = {"training.use_precision_aware_optimizer=true",
                              "training.main_params_dtype=fp16", "training.exp_avg_dtype=fp8",
                              "training.store_param_remainders=false"};
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with(f, ok, 4, &w, &err), 0);
    CU_ASSERT_EQUAL(w.training.main_params_dtype, WL_STATE_FP16);
    CU_ASSERT_EQUAL(w.training.exp_avg_dtype, WL_STATE_FP8);
    CU_ASSERT_FALSE(w.training.store_param_remainders);
    wl_free(&w);
}

void register_precision_tests(void)
{
    TEST_SUITE("precision",
               {"the defaults follow Megatron's table", test_the_defaults_follow_megatrons_table},
               {"bytes per parameter of each precision", test_bytes_per_param_of_each_precision},
               {"the model, memory and sync follow the precision",
                test_the_model_memory_and_sync_follow_the_precision},
               {"the engine's buckets count parameters", test_the_engines_buckets_count_parameters},
               {"ZeRO-2 and the experts follow the precision",
                test_zero2_and_the_experts_follow_the_precision},
               {"the loader keeps Megatron's rules", test_the_loader_keeps_megatrons_rules});
}
