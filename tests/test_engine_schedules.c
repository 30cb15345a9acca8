/*
 * test_engine_schedules.c -- every pipeline schedule replayed by the engine
 * on uniform stages with free communication, against closed forms.
 *
 * Bubble ratio is engine_result.bubble_ratio = Σ_s (pipeline − busy_s) /
 * Σ_s busy_s.  With L layers per stage of forward F, input gradient B and
 * weight gradient W (per layer, seconds), the published fractions are
 *   GPipe (Huang et al. 2019)                   (p−1)/m
 *   interleaved 1F1B (Narayanan et al. SC'21)   (p−1)/(v·m)
 *   ZB-H1 (Qi et al. ICLR'24, section 2.1)      (p−1)(F+B−W) / (m(F+B+W)),
 *     under the conditions the handcrafted order reaches it: m >= p and
 *     W <= min(F, B) (schedule_zb.c);
 *   ZB-H2 (section 2.2), with the paper's T_F = T_B = T_W and m >= 2p−1:
 *     (p−1)(F+B−2W) = 0 idle inside every stage's own span (first op to last
 *     op), the paper's zero bubble; the isolated iteration the engine times
 *     also holds the parallelogram's skew, (p−1)·F, so engine bubble
 *     (p−1)F / (m(F+B+W)) = (p−1)/(3m);
 *   PipeDream, 2BW (one steady-state period, schedule_pipedream.c): the
 *     period's replay holds one forward pass of latency: (p−1)F / (m(F+B)).
 * Peak memory per stage is the schedule's published in-flight count times a
 * micro-batch's activations plus the static bytes (and, for PipeDream, its
 * extra weight versions), and equals memory.c's mem_stage_bytes() total.
 * Each simulation runs in a forked child (SimGrid holds one platform per
 * process).
 */
#include <string.h>

#include "engine.h"
#include "memory.h"
#include "planner.h"
#include "testutil.h"

#define STATE_BYTES 100.0     /* per layer: weights, gradients, optimizer */
#define ACTIVATION_BYTES 10.0 /* per layer and micro-batch */
#define PARAMS 25.0           /* per layer, 2 bytes each: 50 bytes a version */

typedef struct sched_case {
    const char *platform;
    schedule_kind schedule;
    int p, m, v, dp, layers_per_chunk;
    double forward_s, input_grad_s, weight_grad_s; /* per layer */
} sched_case;

static int layers_per_stage(const sched_case *c) { return c->v * c->layers_per_chunk; }

static void model_build(const sched_case *c, cm_model *cm, plan *pl)
{
    int layers = c->p * c->v * c->layers_per_chunk;
    test_uniform_model(cm, layers);
    cm->data_parallel = c->dp;
    cm->weight_bytes_per_param = 2;
    for (int l = 0; l < layers; l++) {
        cm_layer *ly = &cm->layers[l];
        ly->forward_s = c->forward_s;
        ly->backward_s = c->input_grad_s;
        ly->weight_grad_s = c->weight_grad_s;
        ly->state_bytes = STATE_BYTES;
        ly->params = PARAMS;
    }
    test_chunked_plan(pl, c->p, c->v, c->m, c->layers_per_chunk, c->schedule);
    pl->data_parallel = c->dp;
}

/* Simulates case c with spans recorded (for the stages' pass spans). */
static int simulate(const sched_case *c, test_sim_result *out)
{
    cm_model cm;
    plan pl;
    model_build(c, &cm, &pl);
    engine_options o;
    engine_init_options(&o);
    o.record_spans = true;
    int rc = test_simulate_plan(c->platform, &cm, &pl, &o, out);
    plan_free(&pl);
    cm_free(&cm);
    return rc ? -1 : out->rc;
}

/* Checks the bubble ratio and, when expected_pipeline_s > 0, the time to the
 * last F/B/W. */
static void check_bubble(const sched_case *c, double expected_ratio, double expected_pipeline_s)
{
    test_sim_result out;
    CU_ASSERT_EQUAL_FATAL(simulate(c, &out), 0);
    ASSERT_REL(out.bubble_ratio, expected_ratio, 1e-9);
    if (expected_pipeline_s > 0)
        ASSERT_REL(out.pipeline_s, expected_pipeline_s, 1e-9);
}

/* ---- bubbles -------------------------------------------------------------- */

static void test_gpipe_bubble_is_p_minus_1_over_m(void)
{
    const sched_case cases[] = {
        {"platforms/test_free_comm_8.xml", SCHED_GPIPE, 8, 8, 1, 1, 2, 1e-3, 2e-3, 0},
        {"platforms/test_free_comm_16.xml", SCHED_GPIPE, 4, 5, 1, 4, 1, 1e-3, 2e-3, 0},
        {"platforms/test_free_comm_32.xml", SCHED_GPIPE, 16, 24, 1, 2, 1, 1e-3, 3e-3, 0},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const sched_case *c = &cases[i];
        double stage_s = layers_per_stage(c) * (c->forward_s + c->input_grad_s);
        check_bubble(c, (c->p - 1.0) / c->m, (c->m + c->p - 1.0) * stage_s);
    }
}

/* Per chunk F/v and B/v: m(F+B) + (p−1)(F+B)/v. */
static void test_interleaved_bubble_is_p_minus_1_over_v_m(void)
{
    const sched_case cases[] = {
        {"platforms/test_free_comm_8.xml", SCHED_INTERLEAVED, 4, 8, 2, 2, 1, 1e-3, 2e-3, 0},
        {"platforms/test_free_comm_8.xml", SCHED_INTERLEAVED, 8, 8, 3, 1, 2, 1e-3, 2e-3, 0},
        {"platforms/test_free_comm_16.xml", SCHED_INTERLEAVED, 4, 12, 4, 4, 1, 2e-3, 3e-3, 0},
        {"platforms/test_free_comm_32.xml", SCHED_INTERLEAVED, 16, 32, 2, 2, 1, 1e-3, 2e-3, 0},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const sched_case *c = &cases[i];
        double p = c->p, m = c->m, v = c->v;
        double chunk_s = c->layers_per_chunk * (c->forward_s + c->input_grad_s);
        check_bubble(c, (p - 1) / (v * m), (m * v + p - 1) * chunk_s);
    }
}

/* (p−1)(F+B−W) / (m(F+B+W)) with W <= min(F, B), m >= p. */
static void test_zb_h1_bubble_is_published(void)
{
    const sched_case cases[] = {
        {"platforms/test_free_comm_8.xml", SCHED_ZB_H1, 4, 4, 1, 2, 2, 1e-3, 1e-3, 1e-3},
        {"platforms/test_free_comm_8.xml", SCHED_ZB_H1, 8, 12, 1, 1, 1, 1e-3, 2e-3, 1e-3},
        {"platforms/test_free_comm_16.xml", SCHED_ZB_H1, 8, 16, 1, 2, 2, 2e-3, 3e-3, 1e-3},
        {"platforms/test_free_comm_32.xml", SCHED_ZB_H1, 16, 20, 1, 2, 1, 1e-3, 1e-3, 0.5e-3},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const sched_case *c = &cases[i];
        double p = c->p, m = c->m, L = layers_per_stage(c);
        double f = c->forward_s, b = c->input_grad_s, w = c->weight_grad_s;
        check_bubble(c, (p - 1) * (f + b - w) / (m * (f + b + w)),
                     L * (m * (f + b + w) + (p - 1) * (f + b - w)));
    }
}

/* T_F = T_B = T_W = t per stage: no stage idles between its first and last
 * pass ((p−1)(F+B−2W) = 0), and the isolated iteration lasts 3mt + (p−1)t. */
static void test_zb_h2_has_no_bubble_inside_any_stage(void)
{
    const sched_case cases[] = {
        {"platforms/test_free_comm_8.xml", SCHED_ZB_H2, 4, 7, 1, 2, 2, 1e-3, 1e-3, 1e-3},
        {"platforms/test_free_comm_8.xml", SCHED_ZB_H2, 8, 16, 1, 1, 1, 1e-3, 1e-3, 1e-3},
        {"platforms/test_free_comm_32.xml", SCHED_ZB_H2, 16, 40, 1, 2, 1, 2e-3, 2e-3, 2e-3},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const sched_case *c = &cases[i];
        test_sim_result out;
        CU_ASSERT_EQUAL_FATAL(simulate(c, &out), 0);
        double p = c->p, m = c->m, t = layers_per_stage(c) * c->forward_s;
        for (int s = 0; s < c->p; s++) {
            ASSERT_REL(out.stage_busy_s[s], 3 * m * t, 1e-9);
            ASSERT_REL(out.stage_span_s[s], out.stage_busy_s[s], 1e-9);
        }
        ASSERT_REL(out.pipeline_s, 3 * m * t + (p - 1) * t, 1e-9);
        ASSERT_REL(out.bubble_ratio, (p - 1) / (3 * m), 1e-9);
    }
}

/* One steady-state period: m(F+B) + (p−1)F, bubble (p−1)F / (m(F+B)). */
static void test_pipedream_period_holds_one_forward_latency(void)
{
    const sched_case cases[] = {
        {"platforms/test_free_comm_8.xml", SCHED_PIPEDREAM, 4, 8, 1, 2, 2, 1e-3, 2e-3, 0},
        {"platforms/test_free_comm_8.xml", SCHED_PIPEDREAM_2BW, 8, 8, 1, 1, 1, 1e-3, 2e-3, 0},
        {"platforms/test_free_comm_16.xml", SCHED_PIPEDREAM_2BW, 4, 12, 1, 4, 1, 2e-3, 3e-3, 0},
        {"platforms/test_free_comm_32.xml", SCHED_PIPEDREAM, 16, 16, 1, 2, 1, 1e-3, 2e-3, 0},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const sched_case *c = &cases[i];
        double p = c->p, m = c->m, L = layers_per_stage(c);
        double f = c->forward_s, b = c->input_grad_s;
        check_bubble(c, (p - 1) * f / (m * (f + b)), L * (m * (f + b) + (p - 1) * f));
    }
}

/* ---- peak memory ---------------------------------------------------------- */

/* Published micro-batches held on stage s (docs/design.md, memory model; memory.c), in units of
 * one chunk's activations. */
static double published_chunks_held(const sched_case *c, int s)
{
    int p = c->p, m = c->m, v = c->v;
    int one_f_one_b = p - s < m ? p - s : m;
    switch (c->schedule) {
    case SCHED_GPIPE:
        return m;
    case SCHED_INTERLEAVED: { /* Megatron: warm-up + 1 chunk-forwards */
        int held = 2 * (p - s - 1) + (v - 1) * p + 1;
        return held < m * v ? held : m * v;
    }
    case SCHED_ZB_H1:
        return p < m ? p : m; /* held until W */
    case SCHED_ZB_H2:
        return 2 * p - 1 < m ? 2 * p - 1 : m; /* held until W */
    default:
        return one_f_one_b;
    }
}

/* Weight versions beyond the live one: PipeDream stashes one per in-flight
 * micro-batch, 2BW keeps one more (Narayanan et al. SOSP'19, ICML'21). */
static double extra_weight_versions(const sched_case *c, int s)
{
    int k = c->p - s < c->m ? c->p - s : c->m;
    if (c->schedule == SCHED_PIPEDREAM)
        return k - 1;
    return c->schedule == SCHED_PIPEDREAM_2BW ? 1 : 0;
}

static void test_peak_memory_is_static_plus_published_in_flight(void)
{
    const sched_case cases[] = {
        {"platforms/test_free_comm_8.xml", SCHED_GPIPE, 4, 6, 1, 2, 2, 1e-3, 2e-3, 0},
        {"platforms/test_free_comm_8.xml", SCHED_INTERLEAVED, 4, 8, 2, 2, 1, 1e-3, 2e-3, 0},
        {"platforms/test_free_comm_8.xml", SCHED_INTERLEAVED, 8, 8, 3, 1, 1, 1e-3, 2e-3, 0},
        {"platforms/test_free_comm_8.xml", SCHED_ZB_H1, 8, 12, 1, 1, 1, 1e-3, 2e-3, 1e-3},
        {"platforms/test_free_comm_8.xml", SCHED_ZB_H2, 4, 16, 1, 2, 2, 1e-3, 1e-3, 1e-3},
        {"platforms/test_free_comm_8.xml", SCHED_PIPEDREAM, 8, 12, 1, 1, 1, 1e-3, 2e-3, 0},
        {"platforms/test_free_comm_8.xml", SCHED_PIPEDREAM, 4, 5, 1, 2, 2, 1e-3, 2e-3, 0},
        {"platforms/test_free_comm_8.xml", SCHED_PIPEDREAM_2BW, 4, 8, 1, 2, 2, 1e-3, 2e-3, 0},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const sched_case *c = &cases[i];
        test_sim_result out;
        CU_ASSERT_EQUAL_FATAL(simulate(c, &out), 0);
        cm_model cm;
        plan pl;
        model_build(c, &cm, &pl);
        for (int s = 0; s < c->p; s++) {
            double expected =
                layers_per_stage(c) * (STATE_BYTES + extra_weight_versions(c, s) * 2 * PARAMS) +
                published_chunks_held(c, s) * c->layers_per_chunk * ACTIVATION_BYTES;
            mem_stage planned;
            mem_stage_bytes(&cm, &pl, s, &planned);
            ASSERT_REL(out.stage_peak_bytes[s], expected, 1e-12);
            ASSERT_REL(planned.total_bytes, expected, 1e-12);
        }
        plan_free(&pl);
        cm_free(&cm);
    }
}

/* ---- the workload path ---------------------------------------------------- */

/* ---- overlap_p2p_comm ----------------------------------------------------- */

/* Interleaved, p = 2, v = 2, m = 4 (m = 2p: Megatron runs every forward
 * first when m = p), one layer per chunk of forward f and backward b, on
 * test_8npu.xml with DP 4 placed pp before dp: each replica's two stages in
 * one server, so every send takes the scale-up closed form
 * tau = alpha_up + S/B_up, with no contention.  Megatron's order: stage s
 * runs 2(p-s-1) + (v-1)p warm-up forwards (4 on stage 0, 2 on stage 1),
 * then F, B pairs, then the remaining backwards; forward k runs chunk
 * (k / p) mod v of micro-batch (k / pv)p + k mod p, backward k chunk
 * v-1 - (k / p) mod v.  Every op starts at the later of its stage's last end
 * and its input's arrival (its producer's end + tau); followed op by op
 * (with 2 tau < f, the order never changes):
 *   blocking sends, each holding its sender tau: the last backward ends at
 *     9f + 9b + 13 tau;
 *   overlap_p2p_comm, the steady state's sends (stage 0's B, F pairs from
 *     its 5th forward, stage 1's from its 3rd) holding nothing except the
 *     last pair's backward send: 9f + 9b + 6 tau.
 * (The same walk for m = 2 gives the engine's 5f + 5b + 7 tau, blocking.) */
static double overlap_p2p_pipeline_s(bool overlap, double output_bytes)
{
    const sched_case c = {
        "platforms/test_8npu.xml", SCHED_INTERLEAVED, 2, 4, 2, 4, 1, 1e-3, 2e-3, 0};
    cm_model cm;
    plan pl;
    model_build(&c, &cm, &pl);
    for (int l = 0; l < cm.num_layers; l++)
        cm.layers[l].output_bytes = output_bytes;
    cm.overlap_p2p = overlap;
    engine_options o;
    engine_init_options(&o);
    np_error err;
    CU_ASSERT_EQUAL_FATAL(placement_parse("tp-cp-pp-ep-dp", "test", &o.placement, &err), 0);
    test_sim_result out;
    int rc = test_simulate_plan(c.platform, &cm, &pl, &o, &out);
    plan_free(&pl);
    cm_free(&cm);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(out.rc, 0);
    return out.pipeline_s;
}

static void test_overlap_p2p_comm_takes_sends_off_the_sender(void)
{
    double bytes = 19.6e6, f = 1e-3, b = 2e-3;
    double tau = 2e-6 + bytes / 196e9; /* test_8npu.xml: scaleup_latency_s, _bandwidth_Bps */
    ASSERT_REL(overlap_p2p_pipeline_s(false, bytes), 9 * f + 9 * b + 13 * tau, 1e-9);
    ASSERT_REL(overlap_p2p_pipeline_s(true, bytes), 9 * f + 9 * b + 6 * tau, 1e-9);
}

/* Which sends the key makes asynchronous, on the same p = 2, v = 2, m = 4
 * (the iteration above cannot tell this rule from "every send": the last
 * backward ends at the same time).  By the order above, stage 0 sends 8
 * forwards (chunks 0 and 2) and 4 backwards (chunk 2): its 4 warm-up
 * forwards' sends and its 2 cool-down backwards' block, the steady state's 4
 * forwards' and 2 backwards' (chunk 2, micro-batches 0 and 1) do not.
 * Stage 1 sends 4 forwards (chunk 1) and 8 backwards (chunks 3 and 1): its 2
 * warm-up forwards' block, its steady state's 2 forwards' and 5 of its 6
 * backwards' do not; the last steady-state backward's (chunk 3,
 * micro-batch 3, which the cool-down waits for first) and the cool-down's 2
 * block. */
static void count_sends(const sched_stage *st, int *sends, int *async)
{
    *sends = *async = 0;
    for (int i = 0; i < st->num_ops; i++)
        if (st->ops[i].kind == OP_SEND_FORWARD || st->ops[i].kind == OP_SEND_BACKWARD) {
            (*sends)++;
            *async += st->ops[i].async_send;
        }
}

static const sched_op *find_send_backward(const sched_stage *st, int chunk, int micro_batch)
{
    for (int i = 0; i < st->num_ops; i++)
        if (st->ops[i].kind == OP_SEND_BACKWARD && st->ops[i].chunk == chunk &&
            st->ops[i].micro_batch == micro_batch)
            return &st->ops[i];
    return NULL;
}

static void test_overlap_p2p_comm_makes_the_steady_state_sends_async(void)
{
    const sched_case c = {
        "platforms/test_8npu.xml", SCHED_INTERLEAVED, 2, 4, 2, 4, 1, 1e-3, 2e-3, 0};
    for (int overlap = 0; overlap <= 1; overlap++) {
        cm_model cm;
        plan pl;
        model_build(&c, &cm, &pl);
        for (int l = 0; l < cm.num_layers; l++)
            cm.layers[l].output_bytes = 1e6;
        cm.overlap_p2p = overlap;
        schedule sc = {0};
        np_error err;
        CU_ASSERT_EQUAL_FATAL(sched_build(&pl, &cm, &sc, &err), 0);
        int sends, async;
        count_sends(&sc.stages[0], &sends, &async);
        CU_ASSERT_EQUAL(sends, 12);
        CU_ASSERT_EQUAL(async, overlap ? 6 : 0);
        count_sends(&sc.stages[1], &sends, &async);
        CU_ASSERT_EQUAL(sends, 12);
        CU_ASSERT_EQUAL(async, overlap ? 7 : 0);
        const sched_op *last = find_send_backward(&sc.stages[1], 1, 3); /* chunk 3 of the model */
        const sched_op *before = find_send_backward(&sc.stages[1], 1, 2);
        CU_ASSERT_PTR_NOT_NULL_FATAL(last);
        CU_ASSERT_PTR_NOT_NULL_FATAL(before);
        CU_ASSERT_EQUAL(last->async_send, 0);
        CU_ASSERT_EQUAL(before->async_send, overlap);
        sched_free(&sc);
        plan_free(&pl);
        cm_free(&cm);
    }
}

/* Every schedule name of the workload's "schedule" key runs the whole path
 * (loader, cost model, Megatron planner, generator, engine) on a small GPT;
 * interleaved with two virtual chunks. */
typedef struct workload_outcome {
    int rc[SCHED_COUNT];
    char error[512];
    double iteration_s[SCHED_COUNT];
} workload_outcome;

static int simulate_workload(const sim_platform *pf, schedule_kind k, double *iteration_s,
                             np_error *err)
{
    char schedule_set[64];
    snprintf(schedule_set, sizeof schedule_set, "schedule=\"%s\"", wl_schedule_name(k));
    const char *overrides[] = {schedule_set, "virtual_pipeline_model_parallel_size=2"};
    test_job j;
    int rc = test_job_build(&j, &pf->cluster, "workloads/small_gpt.json", overrides,
                            k == SCHED_INTERLEAVED ? 2 : 1, "megatron", err);
    if (!rc) {
        engine_options o;
        engine_init_options(&o);
        engine_result res = {0};
        rc = engine_run(pf, &j.w, &j.cm, &j.pl, &j.sc, &o, &res, err);
        *iteration_s = res.iteration_s;
        engine_result_free(&res);
    }
    test_job_free(&j);
    return rc;
}

static void run_workload(void *ctx, int fd)
{
    (void)ctx;
    workload_outcome out;
    memset(&out, 0, sizeof out);
    np_error err;
    np_error_clear(&err);
    sim_platform pf;
    test_simgrid_init();
    int rc = platform_load(test_path("platforms/test_8npu.xml"), &pf, &err);
    for (int k = 0; k < SCHED_COUNT; k++) {
        out.rc[k] = rc ? rc : simulate_workload(&pf, (schedule_kind)k, &out.iteration_s[k], &err);
        if (out.rc[k] && !out.error[0])
            np_error_format(&err, out.error, sizeof out.error);
    }
    test_write_all(fd, &out, sizeof out);
}

static void test_every_schedule_runs_a_workload_end_to_end(void)
{
    workload_outcome out;
    CU_ASSERT_EQUAL_FATAL(test_in_child(run_workload, NULL, &out, sizeof out), 0);
    if (out.error[0])
        fprintf(stderr, "\n  %s\n", out.error);
    for (int k = 0; k < SCHED_COUNT; k++) {
        CU_ASSERT_EQUAL(out.rc[k], 0);
        CU_ASSERT(out.iteration_s[k] > 0);
    }
    /* Splitting W out of the backward shrinks the bubble: (p−1)(F+B−W)
     * against 1F1B's (p−1)(F+B+W) (Qi et al. 2024, section 2.1). */
    CU_ASSERT(out.iteration_s[SCHED_ZB_H1] < out.iteration_s[SCHED_1F1B]);
}

void register_engine_schedules_tests(void)
{
    TEST_SUITE(
        "engine_schedules",
        {"gpipe_bubble_is_p_minus_1_over_m", test_gpipe_bubble_is_p_minus_1_over_m},
        {"interleaved_bubble_is_p_minus_1_over_v_m", test_interleaved_bubble_is_p_minus_1_over_v_m},
        {"zb_h1_bubble_is_published", test_zb_h1_bubble_is_published},
        {"zb_h2_has_no_bubble_inside_any_stage", test_zb_h2_has_no_bubble_inside_any_stage},
        {"pipedream_period_holds_one_forward_latency",
         test_pipedream_period_holds_one_forward_latency},
        {"peak_memory_is_static_plus_published_in_flight",
         test_peak_memory_is_static_plus_published_in_flight},
        {"every_schedule_runs_a_workload_end_to_end",
         test_every_schedule_runs_a_workload_end_to_end},
        {"overlap_p2p_comm_takes_sends_off_the_sender",
         test_overlap_p2p_comm_takes_sends_off_the_sender},
        {"overlap_p2p_comm_makes_the_steady_state_sends_async",
         test_overlap_p2p_comm_makes_the_steady_state_sends_async});
}
