/*
 * test_pipedream_period.c -- the asynchronous schedules (PipeDream with
 * weight stashing, PipeDream-2BW; schedule_pipedream.c) against their
 * closed form from m = p up, and refused below it.
 *
 * With p uniform stages of L layers, per layer forward F and backward B,
 * and free communication, stage s keeps k_s = p − s micro-batches in flight
 * and runs, in one steady-state period, the forward of micro-batch j and
 * the backward of micro-batch j − (k_s − 1), j = 0..m−1.  Stage s starts
 * at s·L·F (its first forward waits for stage s−1's), and its j-th backward
 * needs stage s+1's (j−1)-th, done at (s+1)·L·F + j·L(F+B), just when stage
 * s reaches it: no stage ever waits again, and the last stage ends at
 *     L·(m(F+B) + (p−1)F),   bubble (p−1)F / (m(F+B)),
 * for every m >= p (docs/planners.md, "PipeDream").  Below m = p a period
 * no longer describes the schedules (2BW's two weight versions need a
 * version to last m >= p micro-batches; PipeDream's p − s in flight exceed
 * the m the memory model charges), so sched_build() refuses it, naming the
 * counts.  Before that refusal the period's replay capped the in-flight
 * count at m and gave times that fell as m grew (small_llama on
 * test_free_comm_16.xml: PipeDream 0.059 s at m = 2, 0.061 s at m = 4).
 */
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "schedule.h"
#include "testutil.h"

typedef struct period_case {
    schedule_kind schedule;
    int p, m, layers_per_stage;
    double forward_s, backward_s; /* per layer */
} period_case;

/* Simulates c on test_free_comm_8.xml, 8/p data-parallel replicas. */
static int simulate(const period_case *c, test_sim_result *out)
{
    cm_model cm;
    plan pl;
    test_uniform_model(&cm, c->p * c->layers_per_stage);
    for (int l = 0; l < cm.num_layers; l++) {
        cm.layers[l].forward_s = c->forward_s;
        cm.layers[l].backward_s = c->backward_s;
    }
    test_uniform_plan(&pl, c->p, c->m, c->layers_per_stage, c->schedule);
    pl.data_parallel = cm.data_parallel = 8 / c->p;
    int rc = test_simulate_plan("platforms/test_free_comm_8.xml", &cm, &pl, NULL, out);
    plan_free(&pl);
    cm_free(&cm);
    return rc ? -1 : out->rc;
}

static void test_period_follows_the_closed_form_from_m_equal_p(void)
{
    const schedule_kind kinds[] = {SCHED_PIPEDREAM, SCHED_PIPEDREAM_2BW};
    const int ps[] = {1, 2, 4, 8};
    const double times[][2] = {{1e-3, 2e-3}, {2e-3, 2e-3}, {3e-3, 1e-3}};
    for (int k = 0; k < 2; k++)
        for (unsigned a = 0; a < sizeof ps / sizeof ps[0]; a++) {
            int p = ps[a];
            const int ms[] = {p, p + 1, 2 * p + 1, 3 * p};
            for (unsigned b = 0; b < sizeof ms / sizeof ms[0]; b++) {
                const double *t = times[(a + b) % 3];
                period_case c = {kinds[k], p, ms[b], 1 + (int)(b % 2), t[0], t[1]};
                test_sim_result out;
                CU_ASSERT_EQUAL_FATAL(simulate(&c, &out), 0);
                double L = c.layers_per_stage, f = c.forward_s, bw = c.backward_s, m = c.m;
                ASSERT_REL(out.pipeline_s, L * (m * (f + bw) + (p - 1) * f), 1e-9);
                ASSERT_REL(out.bubble_ratio, (p - 1) * f / (m * (f + bw)), 1e-9);
            }
        }
}

/* m = 1 .. p − 1 on 4 stages: refused (a plan that cannot run: exit 2),
 * naming m, p and the schedule's reason; 1F1B builds the same plans. */
static void test_fewer_micro_batches_than_stages_are_refused(void)
{
    const schedule_kind kinds[] = {SCHED_PIPEDREAM, SCHED_PIPEDREAM_2BW, SCHED_1F1B};
    const char *why[] = {"p - s micro-batches in flight on stage s whatever m",
                         "two weight versions"};
    for (int k = 0; k < 3; k++)
        for (int m = 1; m < 4; m++) {
            cm_model cm;
            plan pl;
            schedule sc = {0};
            np_error err;
            test_uniform_model(&cm, 4);
            test_uniform_plan(&pl, 4, m, 1, kinds[k]);
            int rc = sched_build(&pl, &cm, &sc, &err);
            if (kinds[k] == SCHED_1F1B) {
                CU_ASSERT_EQUAL(rc, 0);
            } else {
                CU_ASSERT_EQUAL(rc, NP_EXIT_INPUT);
                CU_ASSERT_STRING_EQUAL(err.key, "num_micro_batches");
                char counts[64];
                snprintf(counts, sizeof counts, "got m = %d on 4 stages", m);
                CU_ASSERT_PTR_NOT_NULL(strstr(err.text, counts));
                CU_ASSERT_PTR_NOT_NULL(strstr(err.text, wl_schedule_name(kinds[k])));
                CU_ASSERT_PTR_NOT_NULL(strstr(err.text, why[k]));
            }
            sched_free(&sc);
            plan_free(&pl);
            cm_free(&cm);
        }
}

void register_pipedream_period_tests(void)
{
    TEST_SUITE("pipedream_period",
               {"period follows the closed form from m = p",
                test_period_follows_the_closed_form_from_m_equal_p},
               {"fewer micro-batches than stages are refused",
                test_fewer_micro_batches_than_stages_are_refused});
}
