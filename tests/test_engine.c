/*
 * test_engine.c -- the simulator against closed forms.
 *
 * Uniform stages on a free-communication platform (infinite bandwidth, zero
 * latency) must reproduce the schedules' published bubble fractions exactly,
 * and the memory tracker must see exactly the published number of
 * micro-batches in flight.  Each simulation runs in a forked child because
 * SimGrid holds one platform per process.
 */
#include <string.h>

#include "engine.h"
#include "memory.h"
#include "testutil.h"

#define MAX_STAGES 32

typedef struct uniform_case {
    const char *platform;
    int p, m, dp, layers_per_stage;
    schedule_kind schedule;
} uniform_case;

typedef struct uniform_outcome {
    int rc;
    char error[512];
    double bubble_ratio, pipeline_s;
    double stage_bubble[MAX_STAGES];
    double stage_peak_bytes[MAX_STAGES];
} uniform_outcome;

static void run_uniform(void *ctx, int fd)
{
    const uniform_case *c = ctx;
    uniform_outcome out;
    memset(&out, 0, sizeof out);
    np_error err;
    np_error_clear(&err);
    sim_platform pf;
    cm_model cm;
    plan pl;
    schedule sc = {0};
    engine_result res = {0};
    wl_workload w;
    memset(&w, 0, sizeof w);
    w.training.global_batch_size = (long)c->m * c->dp;
    w.training.micro_batch_size = 1;
    test_simgrid_init();
    out.rc = platform_load(test_path(c->platform), &pf, &err);
    if (!out.rc) {
        test_uniform_model(&cm, c->p * c->layers_per_stage);
        test_uniform_plan(&pl, c->p, c->m, c->layers_per_stage, c->schedule);
        pl.data_parallel = c->dp;
        cm.data_parallel = c->dp;
        /* Scale to realistic times: F = 1 ms, B = 2 ms per layer. */
        for (int l = 0; l < cm.num_layers; l++) {
            cm.layers[l].forward_s = 1e-3;
            cm.layers[l].backward_s = 2e-3;
        }
        out.rc = sched_build(&pl, &cm, &sc, &err);
    }
    if (!out.rc) {
        engine_options o;
        engine_init_options(&o);
        out.rc = engine_run(&pf, &w, &cm, &pl, &sc, &o, &res, &err);
    }
    if (!out.rc) {
        out.bubble_ratio = res.bubble_ratio;
        out.pipeline_s = res.pipeline_s;
        for (int s = 0; s < c->p && s < MAX_STAGES; s++) {
            out.stage_bubble[s] = res.stages[s].bubble_ratio;
            out.stage_peak_bytes[s] = res.stages[s].peak_bytes;
        }
    } else {
        np_error_format(&err, out.error, sizeof out.error);
    }
    test_write_all(fd, &out, sizeof out);
}

static void check_uniform(const uniform_case *c)
{
    uniform_outcome out;
    CU_ASSERT_EQUAL_FATAL(test_in_child(run_uniform, (void *)c, &out, sizeof out), 0);
    if (out.rc)
        fprintf(stderr, "\n  %s p=%d m=%d: %s\n", c->platform, c->p, c->m, out.error);
    CU_ASSERT_EQUAL_FATAL(out.rc, 0);
    double p = c->p, m = c->m;
    /* GPipe and 1F1B: bubble (p−1)/m (Huang et al. 2019; Narayanan et al.
     * SC'21, section 2.2.1); iteration (m + p − 1)(F + B) per stage. */
    double per_stage_s = c->layers_per_stage * 3e-3;
    ASSERT_REL(out.bubble_ratio, (p - 1) / m, 1e-9);
    ASSERT_REL(out.pipeline_s, (m + p - 1) * per_stage_s, 1e-9);
    for (int s = 0; s < c->p; s++)
        ASSERT_REL(out.stage_bubble[s], (p - 1) / m, 1e-9);
}

static void test_1f1b_bubble_is_p_minus_1_over_m(void)
{
    const uniform_case cases[] = {
        {"platforms/test_free_comm_8.xml", 8, 8, 1, 2, SCHED_1F1B},
        {"platforms/test_free_comm_8.xml", 4, 16, 2, 3, SCHED_1F1B},
        {"platforms/test_free_comm_8.xml", 8, 3, 1, 1, SCHED_1F1B},
        {"platforms/test_free_comm_16.xml", 4, 5, 4, 2, SCHED_1F1B},
        {"platforms/test_free_comm_32.xml", 16, 32, 2, 1, SCHED_1F1B},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_uniform(&cases[i]);
}

/* The tracker's peak on stage s is the stage's weights + min(p − s, m)
 * micro-batches of activations: with layers of 100 bytes of state and 10 of
 * activations, (100 + 10·min(p − s, m))·layers_per_stage. */
static void test_1f1b_peak_memory_is_weights_plus_in_flight(void)
{
    const uniform_case cases[] = {
        {"platforms/test_free_comm_8.xml", 8, 4, 1, 2, SCHED_1F1B},
        {"platforms/test_free_comm_8.xml", 4, 16, 2, 3, SCHED_1F1B},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const uniform_case *c = &cases[i];
        uniform_outcome out;
        CU_ASSERT_EQUAL_FATAL(test_in_child(run_uniform, (void *)c, &out, sizeof out), 0);
        CU_ASSERT_EQUAL_FATAL(out.rc, 0);
        for (int s = 0; s < c->p; s++) {
            int in_flight = c->p - s < c->m ? c->p - s : c->m;
            ASSERT_REL(out.stage_peak_bytes[s], (100.0 + 10.0 * in_flight) * c->layers_per_stage,
                       1e-12);
        }
    }
}

void register_engine_tests(void)
{
    TEST_SUITE("engine",
               {"1f1b_bubble_is_p_minus_1_over_m", test_1f1b_bubble_is_p_minus_1_over_m},
               {"1f1b_peak_memory_is_weights_plus_in_flight",
                test_1f1b_peak_memory_is_weights_plus_in_flight});
}
