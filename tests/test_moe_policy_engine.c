/*
 * test_moe_policy_engine.c -- the MoE policies applied by the engine on the
 * 21B MoE of platforms/moe_32npu.xml (EP 32 = DP 32, one expert per NPU,
 * 12 MoE layers, global batch 64: two micro-batches per replica), with the
 * hand-made trace of moe_testutil.h (every source sends its 2048 tokens
 * to experts 0 and 1).
 *
 * One expert copy holds its weights in bf16 and its gradients in fp32:
 * 2·2560·10240 parameters × (2 + 4) bytes = 314,572,800 bytes.  The device
 * memory is set to the run's peak without copies plus room for 30 copies;
 * shared by the 12 MoE layers that allows ⌊30/12⌋ = 2 copies per rank and
 * layer, 24 per rank.  The engine's peak must then be the peak without
 * copies plus the fullest rank's copies, within the device memory.
 */
#include "moe_policy.h"
#include "moe_testutil.h"
#include "testutil.h"

#define COPY_BYTES (2.0 * 2560 * 10240 * 6)

typedef struct policy_outcome {
    moe_run_head head;
    double iteration_s, peak_bytes, assignments, dropped, padding, copies, copy_bytes, copy_s;
    int events, layers, experts, events_ordered, layer_order_ok;
    double load0, load1, load5;
} policy_outcome;

static void collect(const engine_result *r, void *ctx)
{
    policy_outcome *out = ctx;
    out->iteration_s = r->iteration_s;
    out->peak_bytes = r->peak_bytes;
    out->assignments = r->moe_assignments;
    out->dropped = r->moe_dropped_tokens;
    out->padding = r->moe_padding_tokens;
    out->copies = r->moe_copies;
    out->copy_bytes = r->moe_copy_bytes;
    out->copy_s = r->moe_copy_s;
    out->events = r->moe_load_num_events;
    out->layers = r->moe_load_layers;
    out->experts = r->moe_load_experts;
    if (r->moe_load_rows) {
        out->load0 = r->moe_load_rows[0];
        out->load1 = r->moe_load_rows[11 * 32 + 1];
        out->load5 = r->moe_load_rows[5 * 32 + 5];
    }
    out->events_ordered = out->layer_order_ok = 1;
    for (int i = 1; i < r->moe_load_num_events; i++) {
        const engine_moe_event *a = &r->moe_load_events[i - 1], *b = &r->moe_load_events[i];
        out->events_ordered &= b->t_s >= a->t_s;
        out->layer_order_ok &= b->layer == (a->layer + 1) % 12;
    }
}

typedef struct policy_case {
    int policy;
    double hbm_bytes; /* 0: the platform's */
    bool record;      /* record_spans: the per-expert load timeline */
} policy_case;

/* The hand-made trace at global batch 64 under c's policy, on the
 * workload as simrun gives it to the policy: with Switch's capacity factor
 * (1.25, the workload sets none) and padding (moe_policy_apply). */
static policy_outcome simulate(const policy_case *c)
{
    bool sw = c->policy == MOE_POLICY_SWITCH;
    moe_run_case run = {.sets = {"training.global_batch_size=64",
                                 "model.moe_expert_capacity_factor=1.25",
                                 "model.moe_pad_expert_input_to_capacity=true"},
                        .num_sets = sw ? 3 : 1,
                        .hot_trace = true,
                        .policy = c->policy,
                        .record = c->record,
                        .hbm_bytes = c->hbm_bytes,
                        .collect = collect,
                        .out_size = sizeof(policy_outcome)};
    policy_outcome out;
    moe_test_simulate(&run, &out);
    return out;
}

static void test_replicas_fit_the_free_memory(void)
{
    policy_case none = {.policy = MOE_POLICY_NONE};
    policy_outcome base = simulate(&none);
    CU_ASSERT_DOUBLE_EQUAL(base.copies, 0.0, 0.0);
    double hbm = base.peak_bytes + 30 * COPY_BYTES;
    for (int k = MOE_POLICY_FASTERMOE; k <= MOE_POLICY_EFFICIENTMOE; k++) {
        policy_case c = {.policy = k, .hbm_bytes = hbm};
        policy_outcome o = simulate(&c);
        CU_ASSERT(o.copy_bytes <= 24 * COPY_BYTES + 1);
        CU_ASSERT(o.peak_bytes <= hbm);
        CU_ASSERT_DOUBLE_EQUAL(o.peak_bytes, base.peak_bytes + o.copy_bytes, 1.0);
        /* whole copies */
        double held = o.copy_bytes / COPY_BYTES;
        CU_ASSERT_DOUBLE_EQUAL(held, (double)(long)(held + 0.5), 1e-9);
        if (k == MOE_POLICY_EFFICIENTMOE) {
            CU_ASSERT(o.copies > 0);
            CU_ASSERT(o.copy_s > 0); /* their broadcasts and reductions ran as flows */
        }
    }
    /* room for 11 copies: less than one per layer, none placed */
    policy_case tight = {.policy = MOE_POLICY_EFFICIENTMOE,
                         .hbm_bytes = base.peak_bytes + 11 * COPY_BYTES};
    policy_outcome t = simulate(&tight);
    CU_ASSERT_DOUBLE_EQUAL(t.copies, 0.0, 0.0);
    CU_ASSERT_DOUBLE_EQUAL(t.peak_bytes, base.peak_bytes, 1.0);
}

/* 32·4096·12·2 = 3,145,728 assignments in the iteration's forwards, every
 * one computed or dropped; Switch's capacity ⌈2048·2/32·1.25⌉ = 160 keeps
 * 2·160 per source and layer: 32·(4096 − 320)·24 = 2,899,968 dropped, and
 * pads the 30 idle experts' 32·160 rows: 30·5120·24 = 3,686,400. */
static void test_policies_count_every_assignment(void)
{
    for (int k = 0; k < MOE_POLICY_COUNT; k++) {
        policy_case c = {.policy = k};
        policy_outcome o = simulate(&c);
        CU_ASSERT_DOUBLE_EQUAL(o.assignments, 3145728.0, 0.5);
        if (k == MOE_POLICY_SWITCH) {
            CU_ASSERT_DOUBLE_EQUAL(o.dropped, 2899968.0, 0.5);
            CU_ASSERT_DOUBLE_EQUAL(o.padding, 3686400.0, 0.5);
        }
        if (k == MOE_POLICY_NONE || k == MOE_POLICY_FASTERMOE)
            CU_ASSERT_DOUBLE_EQUAL(o.dropped, 0.0, 0.0);
    }
}

/* The load timeline: replica 0 of the one stage dispatches 12 MoE layers in
 * each of its 2 forwards, in order; experts 0 and 1 get 32·2048 = 65,536
 * assignments in every layer, the others none. */
static void test_load_timeline(void)
{
    policy_case c = {.policy = MOE_POLICY_NONE, .record = true};
    policy_outcome o = simulate(&c);
    CU_ASSERT_EQUAL(o.events, 24);
    CU_ASSERT_EQUAL(o.layers, 12);
    CU_ASSERT_EQUAL(o.experts, 32);
    CU_ASSERT(o.events_ordered);
    CU_ASSERT(o.layer_order_ok);
    CU_ASSERT_DOUBLE_EQUAL(o.load0, 65536.0, 0.0);
    CU_ASSERT_DOUBLE_EQUAL(o.load1, 65536.0, 0.0);
    CU_ASSERT_DOUBLE_EQUAL(o.load5, 0.0, 0.0);
    policy_case off = {.policy = MOE_POLICY_NONE};
    CU_ASSERT_EQUAL(simulate(&off).events, 0); /* nothing kept without record_spans */
}

void register_moe_policy_engine_tests(void)
{
    TEST_SUITE("moe_policy_engine",
               {"replicas fit the free memory", test_replicas_fit_the_free_memory},
               {"policies count every assignment", test_policies_count_every_assignment},
               {"load timeline", test_load_timeline});
}
