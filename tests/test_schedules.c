/*
 * test_schedules.c -- the op lists of GPipe, interleaved 1F1B, ZB-H1, ZB-H2,
 * PipeDream and PipeDream-2BW, checked without simulating: op counts, order,
 * in-flight micro-batches against each schedule's published definition,
 * sched_check(), and memory.c's in-flight counts and stage bytes against a
 * walk of the op lists' memory deltas.
 *
 * Synthetic model (testutil.h): identical layers of 10 activation bytes and
 * 100 state bytes; F = 1, B = 2 time units; W = 1 where a schedule splits it.
 */
#include <stdlib.h>
#include <string.h>

#include "memory.h"
#include "schedule.h"
#include "testutil.h"

#define ACTIVATION_BYTES 10.0

/* W = 1 per layer, so that the schedules that split it have a W to place. */
static void build(test_built_schedule *b, int p, int m, int v, int layers_per_chunk,
                  schedule_kind kind)
{
    test_build_schedule(b, p, m, v, layers_per_chunk, 1.0, kind);
}

static int min_int(int a, int b) { return a < b ? a : b; }

/* Largest number of (chunk, micro-batch) pairs forwarded and not yet past
 * op kind `until` (OP_BACKWARD or OP_WEIGHT_GRAD). */
static int max_held(const sched_stage *st, op_kind until)
{
    int live = 0, peak = 0;
    for (int i = 0; i < st->num_ops; i++) {
        if (st->ops[i].kind == OP_FORWARD && ++live > peak)
            peak = live;
        if (st->ops[i].kind == until)
            live--;
    }
    return peak;
}

/* Peak of the bytes the op list declares (allocations at op start, frees at
 * op end, transients while running) on top of what the stage starts with
 * beyond weights: the engine tracker's rule (sim/engine/engine.c). */
static void walk_memory(const sched_stage *st, double start_bytes, double *peak_held,
                        double *peak_total)
{
    double held = start_bytes;
    *peak_held = *peak_total = held;
    for (int i = 0; i < st->num_ops; i++) {
        const sched_op *op = &st->ops[i];
        if (op->mem_delta_bytes > 0)
            held += op->mem_delta_bytes;
        if (held > *peak_held)
            *peak_held = held;
        if (held + op->mem_transient_bytes > *peak_total)
            *peak_total = held + op->mem_transient_bytes;
        if (op->mem_delta_bytes < 0)
            held += op->mem_delta_bytes;
    }
}

/* Bytes a stage starts with beyond memory.c's static bytes (PipeDream's
 * resident activations of the previous period). */
static double resident_bytes(const test_built_schedule *b, int s)
{
    mem_stage ms;
    mem_stage_bytes(&b->cm, &b->pl, s, &ms);
    return b->sc.stages[s].static_bytes - ms.static_bytes;
}

#define MAX_CHUNKS 4

/* Micro-batches each chunk holds when the stage first reaches its largest
 * number held, walking the op list's memory deltas (a forward allocates, the
 * op that frees is the one with a negative delta: B, or W when split). */
static void held_per_chunk_at_peak(const test_built_schedule *b, int s, int held[MAX_CHUNKS])
{
    const sched_stage *st = &b->sc.stages[s];
    int live[MAX_CHUNKS] = {0};
    int total = (int)(resident_bytes(b, s) / ACTIVATION_BYTES + 0.5), peak = -1;
    live[0] = total;
    for (int i = 0; i < st->num_ops; i++) {
        const sched_op *op = &st->ops[i];
        if (op->mem_delta_bytes > 0) {
            live[op->chunk]++;
            if (++total > peak) {
                peak = total;
                memcpy(held, live, sizeof live);
            }
        }
        if (op->mem_delta_bytes < 0) {
            live[op->chunk]--;
            total--;
        }
    }
}

/* ---- GPipe ---------------------------------------------------------------- */

/* Huang et al. 2019, figure 2c: every forward precedes every backward. */
static void test_gpipe_runs_all_forwards_before_any_backward(void)
{
    test_built_schedule b;
    build(&b, 4, 6, 1, 2, SCHED_GPIPE);
    CU_ASSERT_EQUAL_FATAL(b.rc, 0);
    for (int s = 0; s < 4; s++) {
        const sched_stage *st = &b.sc.stages[s];
        CU_ASSERT_EQUAL(test_count_ops(st, OP_FORWARD), 6);
        CU_ASSERT_EQUAL(test_count_ops(st, OP_BACKWARD), 6);
        int last_forward = -1, first_backward = st->num_ops;
        for (int i = 0; i < st->num_ops; i++) {
            if (st->ops[i].kind == OP_FORWARD)
                last_forward = i;
            if (st->ops[i].kind == OP_BACKWARD && i < first_backward)
                first_backward = i;
        }
        CU_ASSERT(last_forward < first_backward);
        CU_ASSERT_EQUAL(test_count_ops(st, OP_RECV_FORWARD), s == 0 ? 0 : 6);
        CU_ASSERT_EQUAL(test_count_ops(st, OP_SEND_BACKWARD), s == 0 ? 0 : 6);
    }
    test_built_schedule_free(&b);
}

/* GPipe holds all m micro-batches on every stage (docs/design.md, memory model). */
static void test_gpipe_holds_m_micro_batches_on_every_stage(void)
{
    test_built_schedule b;
    build(&b, 4, 7, 1, 1, SCHED_GPIPE);
    CU_ASSERT_EQUAL_FATAL(b.rc, 0);
    for (int s = 0; s < 4; s++)
        CU_ASSERT_EQUAL(max_held(&b.sc.stages[s], OP_BACKWARD), 7);
    test_built_schedule_free(&b);
}

/* ---- interleaved 1F1B ----------------------------------------------------- */

/* m·v chunk-forwards and chunk-backwards per stage, m per chunk; chunk 0 of
 * stage 0 receives nothing and the last chunk of the last stage sends
 * nothing forward; every other chunk boundary is a transfer. */
static void test_interleaved_runs_m_passes_per_chunk(void)
{
    const int p = 4, m = 8, v = 3;
    test_built_schedule b;
    build(&b, p, m, v, 1, SCHED_INTERLEAVED);
    CU_ASSERT_EQUAL_FATAL(b.rc, 0);
    for (int s = 0; s < p; s++) {
        const sched_stage *st = &b.sc.stages[s];
        int per_chunk[3] = {0};
        for (int i = 0; i < st->num_ops; i++)
            if (st->ops[i].kind == OP_BACKWARD)
                per_chunk[st->ops[i].chunk]++;
        for (int j = 0; j < v; j++)
            CU_ASSERT_EQUAL(per_chunk[j], m);
        CU_ASSERT_EQUAL(test_count_ops(st, OP_FORWARD), m * v);
        CU_ASSERT_EQUAL(test_count_ops(st, OP_RECV_FORWARD), s == 0 ? (v - 1) * m : v * m);
        CU_ASSERT_EQUAL(test_count_ops(st, OP_SEND_FORWARD), s == p - 1 ? (v - 1) * m : v * m);
        CU_ASSERT_EQUAL(test_count_ops(st, OP_RECV_BACKWARD), s == p - 1 ? (v - 1) * m : v * m);
        CU_ASSERT_EQUAL(test_count_ops(st, OP_SEND_BACKWARD), s == 0 ? (v - 1) * m : v * m);
    }
    test_built_schedule_free(&b);
}

/* Megatron-LM's warm-up: stage s runs 2(p−s−1) + (v−1)p chunk-forwards
 * before its first chunk-backward (capped at m·v), then one of each. */
static void test_interleaved_warms_up_like_megatron(void)
{
    const int cases[][3] = {{4, 8, 2}, {4, 4, 2}, {2, 6, 3}, {8, 16, 2}};
    for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int p = cases[c][0], m = cases[c][1], v = cases[c][2];
        test_built_schedule b;
        build(&b, p, m, v, 1, SCHED_INTERLEAVED);
        CU_ASSERT_EQUAL_FATAL(b.rc, 0);
        for (int s = 0; s < p; s++) {
            const sched_stage *st = &b.sc.stages[s];
            int forwards = 0;
            for (int i = 0; i < st->num_ops && st->ops[i].kind != OP_BACKWARD; i++)
                forwards += st->ops[i].kind == OP_FORWARD;
            CU_ASSERT_EQUAL(forwards, min_int(2 * (p - s - 1) + (v - 1) * p + 1, m * v));
        }
        test_built_schedule_free(&b);
    }
}

/* Stage 0 holds (1 + (p−1)/(p·v)) × its layers' activations of one
 * micro-batch times p (Narayanan et al. SC'21, section 2.2.2; docs/design.md, memory model):
 * p = 4, v = 2, one layer of 10 bytes per chunk: 4·(1 + 3/8)·2·10 = 110. */
static void test_interleaved_first_stage_peak_is_published_fraction(void)
{
    const int p = 4, m = 8, v = 2;
    test_built_schedule b;
    build(&b, p, m, v, 1, SCHED_INTERLEAVED);
    CU_ASSERT_EQUAL_FATAL(b.rc, 0);
    double held, total;
    walk_memory(&b.sc.stages[0], 0.0, &held, &total);
    double stage_bytes = v * ACTIVATION_BYTES;
    ASSERT_REL(held, p * (1.0 + (p - 1.0) / (p * v)) * stage_bytes, 1e-12);
    test_built_schedule_free(&b);
}

/* ---- zero bubble ---------------------------------------------------------- */

/* Every micro-batch gets one F, one B without the weight gradient and one W,
 * and its W comes after its B. */
static void test_zb_splits_every_backward_into_b_and_w(void)
{
    const schedule_kind kinds[] = {SCHED_ZB_H1, SCHED_ZB_H2};
    for (int k = 0; k < 2; k++) {
        const int p = 4, m = 9;
        test_built_schedule b;
        build(&b, p, m, 1, 2, kinds[k]);
        CU_ASSERT_EQUAL_FATAL(b.rc, 0);
        for (int s = 0; s < p; s++) {
            const sched_stage *st = &b.sc.stages[s];
            int seen_b[9] = {0}, seen_w[9] = {0};
            for (int i = 0; i < st->num_ops; i++) {
                const sched_op *op = &st->ops[i];
                if (op->kind == OP_BACKWARD) {
                    CU_ASSERT_DOUBLE_EQUAL(op->compute_s, 2 * 2.0, 1e-12); /* B only */
                    CU_ASSERT_EQUAL(op->weight_grad_split, 1);             /* and says so */
                    seen_b[op->micro_batch]++;
                }
                if (op->kind == OP_WEIGHT_GRAD) {
                    CU_ASSERT_DOUBLE_EQUAL(op->compute_s, 2 * 1.0, 1e-12);
                    CU_ASSERT_EQUAL(seen_b[op->micro_batch], 1);
                    seen_w[op->micro_batch]++;
                }
            }
            for (int i = 0; i < m; i++)
                CU_ASSERT_EQUAL(seen_w[i], 1);
            CU_ASSERT_EQUAL(test_count_ops(st, OP_FORWARD), m);
        }
        test_built_schedule_free(&b);
    }
}

/* Every other schedule keeps W inside B: no backward is marked split, and
 * it carries the weight gradient's time, (2 + 1) per layer of its chunk
 * (2 layers per chunk; interleaved runs v = 2 chunks of 2 on each stage). */
static void test_unsplit_backwards_hold_their_weight_grad(void)
{
    const schedule_kind kinds[] = {SCHED_GPIPE, SCHED_1F1B, SCHED_INTERLEAVED, SCHED_PIPEDREAM,
                                   SCHED_PIPEDREAM_2BW};
    for (int k = 0; k < 5; k++) {
        test_built_schedule b;
        int v = kinds[k] == SCHED_INTERLEAVED ? 2 : 1;
        build(&b, 4, 8, v, 2, kinds[k]);
        CU_ASSERT_EQUAL_FATAL(b.rc, 0);
        for (int s = 0; s < 4; s++) {
            const sched_stage *st = &b.sc.stages[s];
            CU_ASSERT_EQUAL(test_count_ops(st, OP_BACKWARD), 8 * v); /* one per chunk and mb */
            CU_ASSERT_EQUAL(test_count_ops(st, OP_WEIGHT_GRAD), 0);
            for (int i = 0; i < st->num_ops; i++)
                if (st->ops[i].kind == OP_BACKWARD) {
                    CU_ASSERT_EQUAL(st->ops[i].weight_grad_split, 0);
                    CU_ASSERT_DOUBLE_EQUAL(st->ops[i].compute_s, 2 * (2.0 + 1.0), 1e-12);
                }
        }
        test_built_schedule_free(&b);
    }
}

/* ZB-H1 (Qi et al. ICLR'24, section 2.1): 1F1B's forwards-ahead, min(p−s, m)
 * forwarded and not yet B'd, and the same number held until W on every
 * worker, min(p, m). */
static void test_zb_h1_keeps_1f1b_in_flight_and_p_held_everywhere(void)
{
    const int cases[][2] = {{4, 8}, {4, 3}, {8, 8}, {8, 20}, {1, 3}};
    for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int p = cases[c][0], m = cases[c][1];
        test_built_schedule b;
        build(&b, p, m, 1, 1, SCHED_ZB_H1);
        CU_ASSERT_EQUAL_FATAL(b.rc, 0);
        for (int s = 0; s < p; s++) {
            CU_ASSERT_EQUAL(max_held(&b.sc.stages[s], OP_BACKWARD), min_int(p - s, m));
            CU_ASSERT_EQUAL(max_held(&b.sc.stages[s], OP_WEIGHT_GRAD), min_int(p, m));
        }
        test_built_schedule_free(&b);
    }
}

/* ZB-H2 (Qi et al. section 2.2): stage s runs 2(p−s)−1 forwards before its
 * first B, 2p − 1 on the first worker, and holds up to 2p − 1 until W. */
static void test_zb_h2_first_stage_holds_2p_minus_1(void)
{
    const int cases[][2] = {{4, 8}, {4, 16}, {8, 15}, {8, 40}, {4, 5}};
    for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int p = cases[c][0], m = cases[c][1];
        test_built_schedule b;
        build(&b, p, m, 1, 1, SCHED_ZB_H2);
        CU_ASSERT_EQUAL_FATAL(b.rc, 0);
        for (int s = 0; s < p; s++) {
            CU_ASSERT_EQUAL(max_held(&b.sc.stages[s], OP_BACKWARD), min_int(2 * (p - s) - 1, m));
            CU_ASSERT_EQUAL(max_held(&b.sc.stages[s], OP_WEIGHT_GRAD), min_int(2 * p - 1, m));
        }
        test_built_schedule_free(&b);
    }
}

/* ---- PipeDream ------------------------------------------------------------ */

/* One steady-state period: every micro-batch 0..m−1 is forwarded once and
 * backwarded once on every stage; PipeDream updates after each backward,
 * 2BW once. */
static void test_pipedream_period_covers_each_micro_batch_once(void)
{
    const schedule_kind kinds[] = {SCHED_PIPEDREAM, SCHED_PIPEDREAM_2BW};
    for (int k = 0; k < 2; k++) {
        const int p = 4, m = 6;
        test_built_schedule b;
        build(&b, p, m, 1, 1, kinds[k]);
        for (int l = 0; l < b.cm.num_layers; l++)
            b.cm.layers[l].params = 1e9;
        b.cm.hbm_bandwidth_Bps = 1e12;
        b.cm.optimizer_bytes_per_param = 16;
        sched_free(&b.sc);
        b.rc = sched_build(&b.pl, &b.cm, &b.sc, &b.err);
        CU_ASSERT_EQUAL_FATAL(b.rc, 0);
        for (int s = 0; s < p; s++) {
            const sched_stage *st = &b.sc.stages[s];
            int forwards[6] = {0}, backwards[6] = {0};
            for (int i = 0; i < st->num_ops; i++) {
                if (st->ops[i].kind == OP_FORWARD)
                    forwards[st->ops[i].micro_batch]++;
                if (st->ops[i].kind == OP_BACKWARD)
                    backwards[st->ops[i].micro_batch]++;
            }
            for (int i = 0; i < m; i++) {
                CU_ASSERT_EQUAL(forwards[i], 1);
                CU_ASSERT_EQUAL(backwards[i], 1);
            }
            CU_ASSERT_EQUAL(test_count_ops(st, OP_OPTIMIZER), kinds[k] == SCHED_PIPEDREAM ? m : 1);
            /* m transfers per channel and iteration, carried ones included */
            CU_ASSERT_EQUAL(test_count_ops(st, OP_SEND_BACKWARD), s == 0 ? 0 : m);
            CU_ASSERT_EQUAL(test_count_ops(st, OP_RECV_BACKWARD), s == p - 1 ? 0 : m);
        }
        test_built_schedule_free(&b);
    }
}

/* No flush: the stage starts with the min(p−s, m) − 1 micro-batches of the
 * previous period resident and reaches the 1F1B count min(p−s, m), which is
 * p − s (m < p is refused: test_pipedream_period.c). */
static void test_pipedream_holds_1f1b_in_flight_in_steady_state(void)
{
    const int cases[][2] = {{4, 8}, {4, 5}, {8, 8}, {1, 4}};
    for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int p = cases[c][0], m = cases[c][1];
        test_built_schedule b;
        build(&b, p, m, 1, 1, SCHED_PIPEDREAM);
        CU_ASSERT_EQUAL_FATAL(b.rc, 0);
        for (int s = 0; s < p; s++) {
            int k = min_int(p - s, m);
            CU_ASSERT_DOUBLE_EQUAL(resident_bytes(&b, s), (k - 1) * ACTIVATION_BYTES, 1e-9);
            double held, total;
            walk_memory(&b.sc.stages[s], resident_bytes(&b, s), &held, &total);
            ASSERT_REL(held, k * ACTIVATION_BYTES, 1e-12);
        }
        test_built_schedule_free(&b);
    }
}

/* ---- all schedules -------------------------------------------------------- */

static const schedule_kind every_schedule[] = {
    SCHED_GPIPE, SCHED_1F1B,      SCHED_INTERLEAVED,   SCHED_ZB_H1,
    SCHED_ZB_H2, SCHED_PIPEDREAM, SCHED_PIPEDREAM_2BW,
};
#define NUM_SCHEDULES ((int)(sizeof every_schedule / sizeof every_schedule[0]))

/* The asynchronous schedules, which sched_build() refuses below m = p
 * (test_pipedream_period.c). */
static bool is_async(schedule_kind k) { return k == SCHED_PIPEDREAM || k == SCHED_PIPEDREAM_2BW; }

/* sched_check() accepts every generator's lists (FIFO order per channel, no
 * deadlock) over a grid of p, m and v (PipeDream's from m = p). */
static void test_every_schedule_passes_check(void)
{
    for (int k = 0; k < NUM_SCHEDULES; k++)
        for (int p = 1; p <= 8; p++)
            for (int m = 1; m <= 3 * p + 1; m++) {
                int v = every_schedule[k] == SCHED_INTERLEAVED ? 2 + (m % 2) : 1;
                if ((every_schedule[k] == SCHED_INTERLEAVED && m % p != 0) ||
                    (is_async(every_schedule[k]) && m < p))
                    continue;
                test_built_schedule b;
                build(&b, p, m, v, 1, every_schedule[k]);
                CU_ASSERT_EQUAL(b.rc, 0);
                if (!b.rc)
                    CU_ASSERT_EQUAL(sched_check(&b.sc, &b.err), 0);
                test_built_schedule_free(&b);
            }
}

/* memory.c's mem_inflight() (published counts) equals the walk of the op
 * list: per chunk at the stage's activation peak. */
static void test_mem_inflight_equals_op_list_walk(void)
{
    const int cases[][3] = {{4, 8, 2}, {4, 4, 2}, {8, 3, 1}, {8, 16, 3}, {2, 6, 2}, {1, 2, 2}};
    for (int k = 0; k < NUM_SCHEDULES; k++)
        for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            schedule_kind kind = every_schedule[k];
            int p = cases[c][0], m = cases[c][1];
            int v = kind == SCHED_INTERLEAVED ? cases[c][2] : 1;
            if ((kind == SCHED_INTERLEAVED && m % p != 0) || (is_async(kind) && m < p))
                continue;
            test_built_schedule b;
            build(&b, p, m, v, 1, kind);
            CU_ASSERT_EQUAL_FATAL(b.rc, 0);
            for (int s = 0; s < p; s++) {
                int held[MAX_CHUNKS];
                held_per_chunk_at_peak(&b, s, held);
                for (int j = 0; j < v; j++)
                    CU_ASSERT_EQUAL(held[j], mem_inflight(kind, p, s, m, v, j));
            }
            test_built_schedule_free(&b);
        }
}

/* With full recompute (2 of 10 bytes kept, 8 rebuilt before the backward),
 * mem_stage_bytes()'s activations + transient equal the op-list walk: what
 * the planners budget is what the engine's tracker will see. */
static void test_mem_stage_bytes_equals_op_list_walk_with_recompute(void)
{
    for (int k = 0; k < NUM_SCHEDULES; k++) {
        schedule_kind kind = every_schedule[k];
        int p = 4, m = 8, v = kind == SCHED_INTERLEAVED ? 2 : 1;
        test_built_schedule b;
        build(&b, p, m, v, 2, kind);
        for (int l = 0; l < b.cm.num_layers; l++) {
            b.cm.layers[l].activation_bytes[RECOMPUTE_FULL] = 2;
            b.cm.layers[l].recompute_s[RECOMPUTE_FULL] = 1;
            b.pl.recompute[l] = RECOMPUTE_FULL;
        }
        sched_free(&b.sc);
        b.rc = sched_build(&b.pl, &b.cm, &b.sc, &b.err);
        CU_ASSERT_EQUAL_FATAL(b.rc, 0);
        for (int s = 0; s < p; s++) {
            mem_stage ms;
            mem_stage_bytes(&b.cm, &b.pl, s, &ms);
            double held, total;
            walk_memory(&b.sc.stages[s], resident_bytes(&b, s), &held, &total);
            ASSERT_REL(ms.activation_bytes, held, 1e-12);
            ASSERT_REL(ms.activation_bytes + ms.transient_bytes, total, 1e-12);
        }
        test_built_schedule_free(&b);
    }
}

void register_schedules_tests(void)
{
    TEST_SUITE(
        "schedules",
        {"gpipe_runs_all_forwards_before_any_backward",
         test_gpipe_runs_all_forwards_before_any_backward},
        {"gpipe_holds_m_micro_batches_on_every_stage",
         test_gpipe_holds_m_micro_batches_on_every_stage},
        {"interleaved_runs_m_passes_per_chunk", test_interleaved_runs_m_passes_per_chunk},
        {"interleaved_warms_up_like_megatron", test_interleaved_warms_up_like_megatron},
        {"interleaved_first_stage_peak_is_published_fraction",
         test_interleaved_first_stage_peak_is_published_fraction},
        {"zb_splits_every_backward_into_b_and_w", test_zb_splits_every_backward_into_b_and_w},
        {"unsplit_backwards_hold_their_weight_grad", test_unsplit_backwards_hold_their_weight_grad},
        {"zb_h1_keeps_1f1b_in_flight_and_p_held_everywhere",
         test_zb_h1_keeps_1f1b_in_flight_and_p_held_everywhere},
        {"zb_h2_first_stage_holds_2p_minus_1", test_zb_h2_first_stage_holds_2p_minus_1},
        {"pipedream_period_covers_each_micro_batch_once",
         test_pipedream_period_covers_each_micro_batch_once},
        {"pipedream_holds_1f1b_in_flight_in_steady_state",
         test_pipedream_holds_1f1b_in_flight_in_steady_state},
        {"every_schedule_passes_check", test_every_schedule_passes_check},
        {"mem_inflight_equals_op_list_walk", test_mem_inflight_equals_op_list_walk},
        {"mem_stage_bytes_equals_op_list_walk_with_recompute",
         test_mem_stage_bytes_equals_op_list_walk_with_recompute});
}
