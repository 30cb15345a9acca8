/*
 * test_moe_capacity.c -- the expert capacity in the cost and memory models:
 * Switch's capacity padding (--moe-policy switch) counted exactly as the
 * workload's own padding counts it, and tokens dropped without padding left
 * out of the dispatch and the combine (Megatron-Core drops them from the
 * routing map before the permute, so they are never sent).
 *
 * The 21B MoE (workloads/moe_21b_32npu.json): h 2560, f_e 10240 without
 * SwiGLU, E 32, top-2, EP 32 = DP 32, ETP 1 (one expert per NPU), bf16
 * (D 2), 12 MoE layers of 24.  Every NPU routes n_l = 2048 tokens per
 * micro-batch: n_l·k = 4096 assignments, 128 per expert.  A capacity
 * factor cf gives C = ceil(128·cf) per expert and source, so per NPU:
 *   padded      computes and sends E·C = 32·C tokens;
 *   unpadded    computes and sends 32·min(128, C), the kept ones;
 *   dropless    4096.
 * The MoE units' bytes for T computed and S sent tokens: expert_input
 * T·h·D, expert_fc1_output and expert_act_output T·f_e·D, combine_input
 * S·h·D.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "costmodel.h"
#include "memory.h"
#include "moe.h"
#include "moe_policy.h"
#include "testutil.h"

#define WL "workloads/moe_21b_32npu.json"
#define H 2560.0
#define F 10240.0
#define D 2.0

/* The 21B MoE with sets, then policy k's keys (moe_policy_apply, as simrun
 * does before it builds the cost model), priced on 4 servers of 8. */
static void build(const char *const *sets, int n, int policy, wl_workload *w, cm_model *cm)
{
    np_error err;
    int rc = test_wl_load_with(WL, sets, n, w, &err);
    if (rc)
        fprintf(stderr, "\n  %s: %s\n", err.key, err.text);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    moe_policy_apply((moe_policy_kind)policy, &w->model);
    cl_cluster c = test_npu_cluster(32, 8);
    CU_ASSERT_EQUAL_FATAL(cm_build(w, &c, 1, cm, &err), 0);
}

static void free_both(wl_workload *w, cm_model *cm)
{
    cm_free(cm);
    wl_free(w);
}

/* ---- the policy's keys ------------------------------------------------- */

static void test_switch_keys(void)
{
    wl_workload w;
    cm_model cm;
    build(NULL, 0, MOE_POLICY_NONE, &w, &cm);
    wl_model m = w.model;
    double cf;
    bool pad;
    moe_policy_capacity_of(MOE_POLICY_SWITCH, &m, &cf, &pad);
    CU_ASSERT_DOUBLE_EQUAL(cf, 1.25, 0.0); /* Switch's default */
    CU_ASSERT(pad);
    CU_ASSERT_FALSE(moe_policy_applied(MOE_POLICY_SWITCH, &m));
    CU_ASSERT(moe_policy_apply(MOE_POLICY_SWITCH, &m));
    CU_ASSERT_DOUBLE_EQUAL(m.moe_expert_capacity_factor, 1.25, 0.0);
    CU_ASSERT(m.moe_pad_expert_input_to_capacity);
    CU_ASSERT(moe_policy_applied(MOE_POLICY_SWITCH, &m));
    CU_ASSERT_FALSE(moe_policy_apply(MOE_POLICY_SWITCH, &m)); /* already */
    /* the workload's factor is Switch's when it sets one */
    m = w.model;
    m.moe_expert_capacity_factor = 8;
    moe_policy_apply(MOE_POLICY_SWITCH, &m);
    CU_ASSERT_DOUBLE_EQUAL(m.moe_expert_capacity_factor, 8.0, 0.0);
    CU_ASSERT(m.moe_pad_expert_input_to_capacity);
    /* FasterMoE drops nothing (He et al. 2022: every token reaches its
     * expert or the expert's shadow): a workload's capacity is cleared, so
     * its cost model is the dropless one its replay runs */
    m = w.model;
    m.moe_expert_capacity_factor = 0.5;
    CU_ASSERT_FALSE(moe_policy_applied(MOE_POLICY_FASTERMOE, &m));
    CU_ASSERT(moe_policy_apply(MOE_POLICY_FASTERMOE, &m));
    CU_ASSERT_DOUBLE_EQUAL(m.moe_expert_capacity_factor, 0.0, 0.0);
    CU_ASSERT_FALSE(m.moe_pad_expert_input_to_capacity);
    /* the other policies keep the workload's keys */
    for (int k = 0; k < MOE_POLICY_COUNT; k++) {
        if (k == MOE_POLICY_SWITCH)
            continue;
        m = w.model;
        CU_ASSERT(moe_policy_applied((moe_policy_kind)k, &m));
        CU_ASSERT_FALSE(moe_policy_apply((moe_policy_kind)k, &m));
        CU_ASSERT_DOUBLE_EQUAL(m.moe_expert_capacity_factor, 0.0, 0.0);
    }
    /* a dense model is left alone */
    m = w.model;
    m.num_experts = 0;
    CU_ASSERT_FALSE(moe_policy_apply(MOE_POLICY_SWITCH, &m));
    CU_ASSERT_DOUBLE_EQUAL(m.moe_expert_capacity_factor, 0.0, 0.0);
    free_both(&w, &cm);
}

/* ---- Switch's padding in the memory model ------------------------------- */

static double unit_bytes(const cm_layer *ly, const char *name)
{
    return test_unit(ly, name)->activation_bytes;
}

/* The MoE units of layer ly against T computed and S sent tokens. */
static void expect_units(const cm_layer *ly, double T, double S)
{
    ASSERT_REL(unit_bytes(ly, "expert_input"), T * H * D, 1e-12);
    ASSERT_REL(unit_bytes(ly, "expert_fc1_output"), T * F * D, 1e-12);
    ASSERT_REL(unit_bytes(ly, "expert_act_output"), T * F * D, 1e-12);
    ASSERT_REL(unit_bytes(ly, "combine_input"), S * H * D, 1e-12);
    ASSERT_REL(ly->moe.a2a_bytes, S * H * D, 1e-12);
}

/* --moe-policy switch prices every layer as the keys cf and padding do,
 * padding included (32·C rows and 32·C tokens sent per NPU), and the
 * stage's memory is the dropless one plus the padding of 12 MoE layers
 * times the micro-batches in flight. */
static void switch_against_keys(double cf)
{
    char set_cf[64];
    snprintf(set_cf, sizeof set_cf, "model.moe_expert_capacity_factor=%.17g", cf);
    const char *keys[] = {set_cf, "model.moe_pad_expert_input_to_capacity=true"};
    wl_workload ws, wk, wd;
    cm_model cs, ck, cd;
    build(keys, cf == 1.25 ? 0 : 1, MOE_POLICY_SWITCH, &ws, &cs); /* cf 1.25: Switch's own */
    build(keys, 2, MOE_POLICY_NONE, &wk, &ck);
    build(NULL, 0, MOE_POLICY_NONE, &wd, &cd);
    double C = ceil(128.0 * cf);
    CU_ASSERT_EQUAL_FATAL(cs.num_layers, ck.num_layers);
    for (int l = 0; l < cs.num_layers; l++) {
        ASSERT_REL(cs.layers[l].activation_bytes[RECOMPUTE_NONE],
                   ck.layers[l].activation_bytes[RECOMPUTE_NONE], 1e-12);
        ASSERT_REL(cs.layers[l].forward_s, ck.layers[l].forward_s, 1e-12);
        ASSERT_REL(cs.layers[l].tp_forward_s, ck.layers[l].tp_forward_s, 1e-12);
        if (!cs.layers[l].moe.is_moe)
            continue;
        CU_ASSERT_DOUBLE_EQUAL(cs.layers[l].moe.capacity, C, 0.0);
        ASSERT_REL(cs.layers[l].moe.padding_tokens, 32 * C - 4096, 1e-12);
        expect_units(&cs.layers[l], 32 * C, 32 * C);
        expect_units(&ck.layers[l], 32 * C, 32 * C);
        expect_units(&cd.layers[l], 4096, 4096);
    }
    /* the stage's memory: Megatron's plan, one stage */
    plan pl = {0};
    cl_cluster c = test_npu_cluster(32, 8);
    CU_ASSERT_EQUAL_FATAL(test_run_planner("megatron", &ck, &c, &wk, &pl, NULL), 0);
    mem_stage ms, mk, md;
    mem_stage_bytes(&cs, &pl, 0, &ms);
    mem_stage_bytes(&ck, &pl, 0, &mk);
    mem_stage_bytes(&cd, &pl, 0, &md);
    ASSERT_REL(ms.total_bytes, mk.total_bytes, 1e-12);
    ASSERT_REL(ms.activation_bytes, mk.activation_bytes, 1e-12);
    double pad_rows = 32 * C - 4096; /* per NPU and MoE layer */
    double per_layer = pad_rows * (2 * H + 2 * F) * D;
    ASSERT_REL(ms.activation_bytes - md.activation_bytes, 12 * per_layer * ms.inflight, 1e-9);
    plan_free(&pl);
    free_both(&ws, &cs);
    free_both(&wk, &ck);
    free_both(&wd, &cd);
}

static void test_switch_memory_is_key_driven_padding(void)
{
    switch_against_keys(1.25); /* Switch's default: C = 160 */
    switch_against_keys(8);    /* C = 1024 */
}

/* At cf 1000 (C = 128,000 per expert and source) Switch's padding cannot
 * fit 64 GB, as the keys' cannot; the dropless model (what the policy was
 * priced with before) fits. */
static void test_switch_fit_check_counts_the_padding(void)
{
    const char *keys[] = {"model.moe_expert_capacity_factor=1000",
                          "model.moe_pad_expert_input_to_capacity=true"};
    wl_workload ws, wk, wd;
    cm_model cs, ck, cd;
    build(keys, 1, MOE_POLICY_SWITCH, &ws, &cs);
    build(keys, 2, MOE_POLICY_NONE, &wk, &ck);
    build(keys, 1, MOE_POLICY_NONE, &wd, &cd); /* cf 1000 unpadded: nothing dropped */
    plan pl = {0};
    cl_cluster c = test_npu_cluster(32, 8);
    CU_ASSERT_EQUAL_FATAL(test_run_planner("megatron", &cd, &c, &wd, &pl, NULL), 0);
    np_error err;
    CU_ASSERT_EQUAL(mem_check_fits(&cs, &pl, &err), NP_EXIT_NOFIT);
    CU_ASSERT_EQUAL(mem_check_fits(&ck, &pl, &err), NP_EXIT_NOFIT);
    CU_ASSERT_EQUAL(mem_check_fits(&cd, &pl, &err), 0);
    ASSERT_REL(test_largest_stage_bytes(&cs, &pl), test_largest_stage_bytes(&ck, &pl), 1e-12);
    plan_free(&pl);
    free_both(&ws, &cs);
    free_both(&wk, &ck);
    free_both(&wd, &cd);
}

/* ---- dropping without padding ------------------------------------------------ */

/* Unpadded, each NPU sends (and gets back, and computes) 32·min(128, C)
 * tokens: the all-to-all's bytes are the kept tokens × h × D, never more
 * than dropless, non-increasing as cf falls, and its time with them; the
 * padded run at the same cf sends 32·C. */
static void test_unpadded_drops_send_only_kept_tokens(void)
{
    const double cfs[] = {4, 2, 1, 0.75, 0.5, 0.3, 0.25, 0.1, 0.01, 0.0001};
    double last_bytes = INFINITY, last_s = INFINITY, dropless_s = 0;
    wl_workload w;
    cm_model cm;
    build(NULL, 0, MOE_POLICY_NONE, &w, &cm);
    dropless_s = cm.layers[1].moe.a2a_s;
    free_both(&w, &cm);
    for (size_t i = 0; i < sizeof cfs / sizeof cfs[0]; i++) {
        char set_cf[64];
        snprintf(set_cf, sizeof set_cf, "model.moe_expert_capacity_factor=%.17g", cfs[i]);
        const char *sets[] = {set_cf, "model.moe_pad_expert_input_to_capacity=true"};
        double C = ceil(128.0 * cfs[i]), kept = 32 * fmin(128.0, C);
        build(sets, 1, MOE_POLICY_NONE, &w, &cm);
        const cm_layer *ly = &cm.layers[1];
        CU_ASSERT_EQUAL_FATAL(ly->moe.is_moe, 1);
        ASSERT_REL(ly->moe.dropped_tokens, 4096 - kept, 1e-12);
        expect_units(ly, kept, kept);
        CU_ASSERT(ly->moe.a2a_bytes <= last_bytes);
        CU_ASSERT(ly->moe.a2a_s <= last_s);
        CU_ASSERT(ly->moe.a2a_s <= dropless_s);
        if (kept < 4096)
            CU_ASSERT(ly->moe.a2a_s < dropless_s);
        last_bytes = ly->moe.a2a_bytes;
        last_s = ly->moe.a2a_s;
        free_both(&w, &cm);
        build(sets, 2, MOE_POLICY_NONE, &w, &cm);
        expect_units(&cm.layers[1], 32 * C, 32 * C);
        free_both(&w, &cm);
    }
    /* 99.2% dropped (C = 1): 32 tokens sent, against 4096 dropless */
    CU_ASSERT(last_bytes <= 32 * H * D * (1 + 1e-12));
}

/* The replay of a trace routes the same bytes: a balanced trace (128 per
 * expert and source) under capacity C without padding sends
 * Σ_j send[i][j] = 32·min(128, C) from every source, the cost model's
 * a2a_bytes / (h·D) (the balanced replay sends a2a_bytes / ep per pair). */
static void test_trace_route_sends_the_cost_models_tokens(void)
{
    moe_trace t;
    CU_ASSERT_EQUAL_FATAL(moe_trace_alloc(&t, 32, 32, 12, 1, 2, 4096), 0);
    for (int l = 0; l < 12; l++)
        for (int i = 0; i < 32; i++)
            for (int e = 0; e < 32; e++)
                *moe_trace_at(&t, 0, l, i, e) = 128;
    moe_route r;
    CU_ASSERT_EQUAL_FATAL(moe_route_init(&r, 32), 0);
    const double cfs[] = {2, 1, 0.5, 0.25, 0.0001};
    for (size_t c = 0; c < sizeof cfs / sizeof cfs[0]; c++) {
        char set_cf[64];
        snprintf(set_cf, sizeof set_cf, "model.moe_expert_capacity_factor=%.17g", cfs[c]);
        const char *sets[] = {set_cf};
        wl_workload w;
        cm_model cm;
        build(sets, 1, MOE_POLICY_NONE, &w, &cm);
        const cm_moe_cost *m = &cm.layers[1].moe;
        moe_route_layer(&t, 0, 0, m->capacity, false, &r);
        for (int i = 0; i < 32; i++) {
            double sent = 0;
            for (int j = 0; j < 32; j++)
                sent += r.send[(size_t)i * 32 + j];
            ASSERT_REL(sent, 32 * fmin(128.0, ceil(128 * cfs[c])), 1e-12);
            ASSERT_REL(sent * H * D, m->a2a_bytes, 1e-12);
        }
        free_both(&w, &cm);
    }
    moe_route_free(&r);
    moe_trace_free(&t);
}

void register_moe_capacity_tests(void)
{
    TEST_SUITE("moe_capacity", {"switch keys", test_switch_keys},
               {"switch memory is key-driven padding", test_switch_memory_is_key_driven_padding},
               {"switch fit check counts the padding", test_switch_fit_check_counts_the_padding},
               {"unpadded drops send only kept tokens", test_unpadded_drops_send_only_kept_tokens},
               {"trace route sends the cost model's tokens",
                test_trace_route_sends_the_cost_models_tokens});
}
