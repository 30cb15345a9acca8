/*
 * test_engine.c -- the simulator against closed forms.
 *
 * Uniform stages on a free-communication platform (infinite bandwidth, zero
 * latency) must reproduce the schedules' published bubble fractions exactly,
 * and the memory tracker must see exactly the published number of
 * micro-batches in flight.  Each simulation runs in a forked child because
 * SimGrid holds one platform per process.
 */
#include "engine.h"
#include "testutil.h"

typedef struct uniform_case {
    const char *platform;
    int p, m, dp, layers_per_stage;
    schedule_kind schedule;
} uniform_case;

/* Uniform layers (testutil: 100 bytes of state, 10 of activations) at
 * realistic times, F = 1 ms and B = 2 ms, on c->dp replicas. */
static int simulate_uniform(const uniform_case *c, test_sim_result *out)
{
    cm_model cm;
    plan pl;
    test_uniform_model(&cm, c->p * c->layers_per_stage);
    test_uniform_plan(&pl, c->p, c->m, c->layers_per_stage, c->schedule);
    pl.data_parallel = cm.data_parallel = c->dp;
    for (int l = 0; l < cm.num_layers; l++) {
        cm.layers[l].forward_s = 1e-3;
        cm.layers[l].backward_s = 2e-3;
    }
    int rc = test_simulate_plan(c->platform, &cm, &pl, NULL, out);
    plan_free(&pl);
    cm_free(&cm);
    return rc;
}

static void check_uniform(const uniform_case *c)
{
    test_sim_result out;
    CU_ASSERT_EQUAL_FATAL(simulate_uniform(c, &out), 0);
    CU_ASSERT_EQUAL_FATAL(out.rc, 0);
    double p = c->p, m = c->m;
    /* GPipe and 1F1B: bubble (p−1)/m (Huang et al. 2019; Narayanan et al.
     * SC'21, section 2.2.1); iteration (m + p − 1)(F + B) per stage. */
    double per_stage_s = c->layers_per_stage * 3e-3;
    ASSERT_REL(out.bubble_ratio, (p - 1) / m, 1e-9);
    ASSERT_REL(out.pipeline_s, (m + p - 1) * per_stage_s, 1e-9);
    for (int s = 0; s < c->p; s++)
        ASSERT_REL(out.stage_bubble_ratio[s], (p - 1) / m, 1e-9);
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
        test_sim_result out;
        CU_ASSERT_EQUAL_FATAL(simulate_uniform(c, &out), 0);
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
    TEST_SUITE("engine", {"1f1b_bubble_is_p_minus_1_over_m", test_1f1b_bubble_is_p_minus_1_over_m},
               {"1f1b_peak_memory_is_weights_plus_in_flight",
                test_1f1b_peak_memory_is_weights_plus_in_flight});
}
