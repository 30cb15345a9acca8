/*
 * moe_testutil.h -- the shared fixture of the engine-level MoE tests
 * (test_moe_engine.c, test_moe_policy_engine.c): the 21B MoE of
 * workloads/moe_21b_32npu.json on platforms/moe_32npu.xml (EP 32 = DP 32,
 * one expert per NPU, 12 MoE layers), run in a child process, with or
 * without the hand-made hot trace.
 */
#ifndef NPUSIM_MOE_TESTUTIL_H
#define NPUSIM_MOE_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "engine.h"
#include "moe_trace.h"

/* The hand-made trace: one step, 32 experts, 32 sources, 12 layers, topk 2,
 * 4096 assignments per source; every source sends its 2048 tokens to both
 * experts 0 and 1 in every layer (the top-2 at 100%).  0 on success. */
int moe_test_hot_trace(moe_trace *t);

/* moe_trace_generate(p, t), asserted (fatally) to succeed; prints the
 * generator's reason otherwise. */
void moe_test_generate(const moe_trace_params *p, moe_trace *t);

/* What every outcome starts with (the first member of the test's struct). */
typedef struct moe_run_head {
    int rc;
    char error[256];
    bool replayed; /* engine_result.moe_replayed */
    /* The schedule's recompute time of stage 0 (one replica): the sum of
     * its recompute ops' closed-form times. */
    double closed_recompute_s;
    /* The cost model's balanced expert weight-gradient time, summed over
     * the MoE layers (one micro-batch). */
    double expert_weight_grad_s;
    /* The schedule's backward (B) ops of stage 0 (one replica): the sum of
     * their closed-form compute and TP times. */
    double closed_backward_s;
} moe_run_head;

/* One engine run. */
typedef struct moe_run_case {
    const char *sets[8]; /* workload overrides, "key=value" */
    int num_sets;
    bool hot_trace;   /* replay moe_test_hot_trace, else balanced (no trace) */
    int policy;       /* engine_options.moe_policy (0: none) */
    bool record;      /* engine_options.record_spans */
    double hbm_bytes; /* > 0: replaces the platform's device memory */
    /* > 0: the plan recomputes these MoE units (bit CM_MOE_UNIT_*) of every
     * MoE layer and nothing else (AdaPipe's unit recompute) */
    unsigned moe_units;
    /* Copies what the test checks from the engine's result into out (a
     * struct of out_size bytes starting with a moe_run_head); also called
     * after a failure, with the zeroed result. */
    void (*collect)(const engine_result *r, void *out);
    size_t out_size;
} moe_run_case;

/* Runs c in a child process and fills out (c->out_size bytes); asserts,
 * fatally, that the run succeeded (printing its error otherwise) and that
 * the MoE layers were replayed. */
void moe_test_simulate(const moe_run_case *c, void *out);
/* Runs c likewise but asserts only that the child reported: out's head
 * holds the run's exit code and error (a refusal under test). */
void moe_test_try(const moe_run_case *c, void *out);

#endif
