/*
 * test_engine_speed.c -- the engine's cheaper mechanisms give the times of
 * the ones they replace (docs/design.md, the engine; SimGrid facts).
 *
 * Compute ops run as sleeps of their time; engine_options.compute_as_execution
 * runs them as SimGrid executions of time × host speed flops, as the engine
 * once did.  Both must give the closed form on an idle fabric and the same
 * times where flows contend.  The closed form: one micro-batch through p
 * stages of one layer each (F, B per layer), tp = 1, every stage on its own
 * server of a flat platform (test_flat_8.xml: one private 1 GB/s link of
 * 5 µs per NPU, split duplex, no backbone).  A boundary tensor of S bytes
 * crosses two links, c = 2·5 µs + S / 1e9 B/s, and nothing else moves, so
 *   iteration = p·F + (p−1)·c + p·B + (p−1)·c.
 * Every receive of that run waits for data not yet sent (channels block a
 * receiver only on an empty queue); the runs with many micro-batches also
 * find data already posted.
 */
#include <string.h>

#include "engine.h"
#include "testutil.h"

#define FLAT8 "platforms/test_flat_8.xml"
#define LINK_LATENCY_S 5e-6
#define LINK_BPS 1e9

typedef struct speed_case {
    schedule_kind schedule;
    int p, m;
    double forward_s, backward_s, boundary_bytes;
    bool as_execution;
} speed_case;

static int simulate(const speed_case *c, test_sim_result *out)
{
    cm_model cm;
    plan pl;
    test_uniform_model(&cm, c->p);
    for (int l = 0; l < c->p; l++) {
        cm.layers[l].forward_s = c->forward_s;
        cm.layers[l].backward_s = c->backward_s;
        cm.layers[l].output_bytes = c->boundary_bytes;
    }
    test_uniform_plan(&pl, c->p, c->m, 1, c->schedule);
    engine_options o;
    engine_init_options(&o);
    o.record_spans = true;
    o.compute_as_execution = c->as_execution;
    int rc = test_simulate_plan(FLAT8, &cm, &pl, &o, out);
    plan_free(&pl);
    cm_free(&cm);
    return rc ? -1 : out->rc;
}

static double boundary_s(double bytes) { return 2 * LINK_LATENCY_S + bytes / LINK_BPS; }

/* One micro-batch, both ways of computing: the closed form above. */
static void test_sleep_and_execution_give_the_closed_form(void)
{
    const double bytes[] = {0, 1e3, 1e6, 5e7};
    for (int k = 0; k < (int)(sizeof bytes / sizeof bytes[0]); k++)
        for (int as_exec = 0; as_exec < 2; as_exec++) {
            speed_case c = {SCHED_1F1B, 8, 1, 1e-3, 2e-3, bytes[k], as_exec};
            test_sim_result out;
            CU_ASSERT_EQUAL_FATAL(simulate(&c, &out), 0);
            double comm = bytes[k] > 0 ? boundary_s(bytes[k]) : 0;
            double expected = c.p * (c.forward_s + c.backward_s) + 2 * (c.p - 1) * comm;
            ASSERT_REL(out.iteration_s, expected, 1e-12);
            ASSERT_REL(out.pipeline_s, expected, 1e-12);
        }
}

/* Many micro-batches: stages send and receive at once and flows share the
 * NPUs' links, so there is no simple closed form; the two ways of
 * computing must still agree to rounding on every figure, for every
 * schedule. */
static void test_sleep_and_execution_agree_under_contention(void)
{
    const schedule_kind kinds[] = {SCHED_GPIPE, SCHED_1F1B, SCHED_ZB_H1, SCHED_ZB_H2};
    for (int k = 0; k < (int)(sizeof kinds / sizeof kinds[0]); k++) {
        test_sim_result a, b;
        speed_case c = {kinds[k], 8, 16, 1e-3, 2e-3, 2e6, false};
        CU_ASSERT_EQUAL_FATAL(simulate(&c, &a), 0);
        c.as_execution = true;
        CU_ASSERT_EQUAL_FATAL(simulate(&c, &b), 0);
        ASSERT_REL(a.iteration_s, b.iteration_s, 1e-12);
        ASSERT_REL(a.pipeline_s, b.pipeline_s, 1e-12);
        ASSERT_REL(a.bubble_ratio, b.bubble_ratio, 1e-9);
        for (int s = 0; s < c.p; s++) {
            ASSERT_REL(a.stage_busy_s[s], b.stage_busy_s[s], 1e-12);
            ASSERT_REL(a.stage_span_s[s], b.stage_span_s[s], 1e-12);
        }
        /* Communication is really there: the first micro-batch's round trip
         * alone crosses 2(p−1) boundaries. */
        CU_ASSERT(a.iteration_s >= c.p * 3e-3 + 2 * (c.p - 1) * boundary_s(2e6) - 1e-12);
    }
}

/* Channels: a receiver blocks only on an empty queue.  GPipe on two stages
 * of one layer, the second twice as slow (F, B = 1, 1 ms and 2, 2 ms), free
 * communication: stage 1 finds micro-batches 1..m−1 already queued when it
 * asks for them, stage 0 finds its gradients' queue empty and blocks.  The
 * slow stage paces both directions:
 *   pipeline = F0 + m·(F1 + B1) + B0. */
static void test_queued_and_awaited_receives_give_the_closed_form(void)
{
    const int m_values[] = {1, 4, 9};
    for (int k = 0; k < 3; k++) {
        int m = m_values[k];
        cm_model cm;
        plan pl;
        test_uniform_model(&cm, 2);
        cm.data_parallel = 4;
        double f[2] = {1e-3, 2e-3};
        for (int l = 0; l < 2; l++) {
            cm.layers[l].forward_s = f[l];
            cm.layers[l].backward_s = f[l];
        }
        test_uniform_plan(&pl, 2, m, 1, SCHED_GPIPE);
        pl.data_parallel = 4;
        test_sim_result out;
        CU_ASSERT_EQUAL_FATAL(
            test_simulate_plan("platforms/test_free_comm_8.xml", &cm, &pl, NULL, &out), 0);
        CU_ASSERT_EQUAL_FATAL(out.rc, 0);
        ASSERT_REL(out.pipeline_s, f[0] + m * 2 * f[1] + f[0], 1e-9);
        plan_free(&pl);
        cm_free(&cm);
    }
}

void register_engine_speed_tests(void)
{
    TEST_SUITE(
        "engine_speed",
        {"sleep_and_execution_give_the_closed_form", test_sleep_and_execution_give_the_closed_form},
        {"sleep_and_execution_agree_under_contention",
         test_sleep_and_execution_agree_under_contention},
        {"queued_and_awaited_receives_give_the_closed_form",
         test_queued_and_awaited_receives_give_the_closed_form});
}
