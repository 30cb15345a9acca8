/*
 * test_memory.c -- in-flight micro-batches and stage memory against the
 * schedules' published counts (GPipe, 1F1B, Megatron's interleaved warm-up,
 * Zero Bubble's ZB-H1/H2, PipeDream's weight stashing) and hand-summed bytes.
 *
 * The cost model and the plans are filled by hand: uniform layers whose bytes
 * make every expected total easy to add up in a comment.
 */
#include <stdlib.h>
#include <string.h>

#include "memory.h"
#include "schedule.h"
#include "testutil.h"

#define MAX_LAYERS 16

/* Layers of 1 GB state, 1e8 params, activations 1e8 (none), 4e7
 * (selective), 1e7 (full) bytes per micro-batch. */
typedef struct fixture {
    cm_model cm;
    cm_layer layers[MAX_LAYERS];
    plan pl;
    int chunk_start[MAX_LAYERS + 1];
    recompute_kind recompute[MAX_LAYERS];
} fixture;

static void fixture_init(fixture *f, int num_layers, int p, int v, int m, schedule_kind sched,
                         recompute_kind r)
{
    memset(f, 0, sizeof *f);
    for (int l = 0; l < num_layers; l++) {
        cm_layer *ly = &f->layers[l];
        ly->kind = CM_DECODER;
        ly->params = 1e8;
        ly->state_bytes = 1e9;
        ly->activation_bytes[RECOMPUTE_NONE] = 1e8;
        ly->activation_bytes[RECOMPUTE_SELECTIVE] = 4e7;
        ly->activation_bytes[RECOMPUTE_FULL] = 1e7;
        f->recompute[l] = r;
    }
    f->cm.num_layers = num_layers;
    f->cm.layers = f->layers;
    f->cm.micro_batch_size = 1;
    f->cm.tensor_parallel = 1;
    f->cm.data_parallel = 1;
    f->cm.workspace_bytes = 2e9;
    f->cm.hbm_bytes = 64e9;
    f->cm.weight_bytes_per_param = 2;
    strcpy(f->pl.planner, "test");
    f->pl.schedule = sched;
    f->pl.num_stages = p;
    f->pl.num_chunks = v;
    f->pl.num_layers = num_layers;
    f->pl.num_micro_batches = m;
    f->pl.micro_batch_size = 1;
    f->pl.tensor_parallel = 1;
    f->pl.data_parallel = 1;
    f->pl.chunk_start = f->chunk_start;
    f->pl.recompute = f->recompute;
    for (int k = 0; k <= p * v; k++)
        f->chunk_start[k] = k * num_layers / (p * v);
}

/* ---- in-flight counts ---------------------------------------------------- */

/* 1F1B (Narayanan et al. SC'21): min(p − s, m) on stage s. */
static void test_inflight_1f1b_is_min_p_minus_s_m(void)
{
    const double m8[] = {4, 3, 2, 1}, m2[] = {2, 2, 2, 1};
    for (int s = 0; s < 4; s++) {
        CU_ASSERT_EQUAL(mem_inflight(SCHED_1F1B, 4, s, 8, 1, 0), m8[s]);
        CU_ASSERT_EQUAL(mem_inflight(SCHED_1F1B, 4, s, 2, 1, 0), m2[s]);
        CU_ASSERT_EQUAL(mem_inflight(SCHED_PIPEDREAM, 4, s, 8, 1, 0), m8[s]);
    }
}

/* ZB-H1 (Qi et al. 2024, section 2.1): "all workers maintain the same number
 * of in-flight micro-batches", p, the 1F1B peak of the first stage: a
 * micro-batch's activations stay until its delayed W, which needs the layer
 * inputs.  Capped at m. */
static void test_inflight_zb_h1_is_p_on_every_stage(void)
{
    for (int s = 0; s < 4; s++) {
        CU_ASSERT_EQUAL(mem_inflight(SCHED_ZB_H1, 4, s, 8, 1, 0), 4);
        CU_ASSERT_EQUAL(mem_inflight(SCHED_ZB_H1, 4, s, 3, 1, 0), 3);
    }
}

/* GPipe runs every forward before the first backward: m on every stage. */
static void test_inflight_gpipe_is_m(void)
{
    for (int s = 0; s < 4; s++)
        CU_ASSERT_EQUAL(mem_inflight(SCHED_GPIPE, 4, s, 6, 1, 0), 6);
}

/* ZB-H2 (Qi et al. 2024, section 2.2): 2p − 1 micro-batches in flight on
 * the first worker; the later workers hold theirs until their delayed W
 * passes too, so every stage peaks at 2p − 1 (7 for p = 4), capped at m. */
static void test_inflight_zb_h2_is_2p_minus_1_on_first_stage(void)
{
    for (int s = 0; s < 4; s++)
        CU_ASSERT_EQUAL(mem_inflight(SCHED_ZB_H2, 4, s, 16, 1, 0), 7);
    CU_ASSERT_EQUAL(mem_inflight(SCHED_ZB_H2, 4, 0, 5, 1, 0), 5);
}

/* Megatron interleaved, p 4, v 2, m 8.  Stage 0 warms up with 2·3 + 1·4 = 10
 * chunk-forwards, so 11 are in flight: forwards 0–3 and 8–10 run chunk 0,
 * 4–7 chunk 1 -> 7 and 4.  Stage 3: 0 + 4 warm-up, 5 in flight: 4 and 1.
 * BMPipe's α agrees: p + max(0, p−2s−1) on chunk 0, p + min(0, p−2s−1) on
 * the last chunk. */
static void test_inflight_interleaved_follows_megatron_warmup(void)
{
    CU_ASSERT_EQUAL(mem_inflight(SCHED_INTERLEAVED, 4, 0, 8, 2, 0), 7);
    CU_ASSERT_EQUAL(mem_inflight(SCHED_INTERLEAVED, 4, 0, 8, 2, 1), 4);
    CU_ASSERT_EQUAL(mem_inflight(SCHED_INTERLEAVED, 4, 3, 8, 2, 0), 4);
    CU_ASSERT_EQUAL(mem_inflight(SCHED_INTERLEAVED, 4, 3, 8, 2, 1), 1);
    /* stage 1: 2·2 + 4 = 8 warm-up, 9: chunk 0 gets forwards 0–3 and 8 */
    CU_ASSERT_EQUAL(mem_inflight(SCHED_INTERLEAVED, 4, 1, 8, 2, 0), 5);
    CU_ASSERT_EQUAL(mem_inflight(SCHED_INTERLEAVED, 4, 1, 8, 2, 1), 4);
    /* m = 4: stage 0's warm-up (10) is capped at m·v = 8, everything in flight */
    CU_ASSERT_EQUAL(mem_inflight(SCHED_INTERLEAVED, 4, 0, 4, 2, 0), 4);
    CU_ASSERT_EQUAL(mem_inflight(SCHED_INTERLEAVED, 4, 0, 4, 2, 1), 4);
}

/* docs/design.md, memory model: interleaved stage 0 holds (1 + (p−1)/(p·v)) of its layers'
 * worth of micro-batches, i.e. p·v + p − 1 chunk-micro-batches
 * (p 8, v 4: 39). */
static void test_interleaved_stage0_holds_1_plus_p_minus_1_over_pv(void)
{
    int p = 8, v = 4;
    double chunks = 0;
    for (int c = 0; c < v; c++)
        chunks += mem_inflight(SCHED_INTERLEAVED, p, 0, 64, v, c);
    ASSERT_REL(chunks / v / p, 1.0 + (p - 1.0) / (p * v), 1e-12);
}

/* ---- stage bytes -------------------------------------------------------- */

/* p 2, 4 layers, 1F1B, m 8, full recompute.  Stage 0: static 2 × 1 GB;
 * 2 micro-batches × 2 layers × 1e7 kept; the recompute of one layer
 * rebuilds 1e8 − 1e7; workspace 2 GB.  Stage 1: one micro-batch. */
static void test_stage_bytes_1f1b_full_recompute(void)
{
    fixture f;
    fixture_init(&f, 4, 2, 1, 8, SCHED_1F1B, RECOMPUTE_FULL);
    mem_stage st;
    mem_stage_bytes(&f.cm, &f.pl, 0, &st);
    ASSERT_REL(st.static_bytes, 2e9, 1e-12);
    ASSERT_REL(st.activation_bytes, 4e7, 1e-12);
    ASSERT_REL(st.transient_bytes, 9e7, 1e-12);
    ASSERT_REL(st.workspace_bytes, 2e9, 1e-12);
    ASSERT_REL(st.total_bytes, 2e9 + 4e7 + 9e7 + 2e9, 1e-12);
    ASSERT_REL(st.capacity_bytes, 64e9, 1e-12);
    mem_stage_bytes(&f.cm, &f.pl, 1, &st);
    ASSERT_REL(st.activation_bytes, 2e7, 1e-12);
}

/* No recompute: no transient; GPipe holds all m = 8: 8 × 2 × 1e8. */
static void test_stage_bytes_gpipe_holds_every_micro_batch(void)
{
    fixture f;
    fixture_init(&f, 4, 2, 1, 8, SCHED_GPIPE, RECOMPUTE_NONE);
    mem_stage st;
    mem_stage_bytes(&f.cm, &f.pl, 1, &st);
    ASSERT_REL(st.activation_bytes, 1.6e9, 1e-12);
    CU_ASSERT_EQUAL(st.transient_bytes, 0.0);
}

/* Micro-batches of 1, 2, 3, 2 samples under GPipe: 8 samples' worth. */
static void test_stage_bytes_scale_with_micro_batch_sizes(void)
{
    fixture f;
    int sizes[] = {1, 2, 3, 2};
    fixture_init(&f, 4, 2, 1, 4, SCHED_GPIPE, RECOMPUTE_NONE);
    f.pl.micro_batch_sizes = sizes;
    mem_stage st;
    mem_stage_bytes(&f.cm, &f.pl, 0, &st);
    ASSERT_REL(st.activation_bytes, 8 * 2e8, 1e-12);
}

/* Interleaved p 2, v 2, m 4, 8 layers (2 per chunk), no recompute.  Stage 0
 * warms up 2·1 + 2 = 4 chunk-forwards: 5 in flight × 2 layers × 1e8. */
static void test_stage_bytes_interleaved_counts_chunk_micro_batches(void)
{
    fixture f;
    fixture_init(&f, 8, 2, 2, 4, SCHED_INTERLEAVED, RECOMPUTE_NONE);
    mem_stage st;
    mem_stage_bytes(&f.cm, &f.pl, 0, &st);
    ASSERT_REL(st.static_bytes, 4e9, 1e-12);
    ASSERT_REL(st.activation_bytes, 5 * 2e8, 1e-12);
    double pairs = mem_inflight(SCHED_INTERLEAVED, 2, 0, 4, 2, 0) +
                   mem_inflight(SCHED_INTERLEAVED, 2, 0, 4, 2, 1);
    CU_ASSERT_EQUAL(pairs, 5);
}

/* PipeDream stashes one weight version per in-flight micro-batch beyond the
 * live one: stage 0 of 2 (2 in flight) adds 2 layers × 1e8 params × 2 bytes;
 * the last stage (1 in flight) none.  2BW keeps one extra version anywhere. */
static void test_pipedream_stashes_weight_versions(void)
{
    fixture f;
    fixture_init(&f, 4, 2, 1, 8, SCHED_PIPEDREAM, RECOMPUTE_NONE);
    mem_stage st;
    mem_stage_bytes(&f.cm, &f.pl, 0, &st);
    ASSERT_REL(st.static_bytes, 2e9 + 4e8, 1e-12);
    mem_stage_bytes(&f.cm, &f.pl, 1, &st);
    ASSERT_REL(st.static_bytes, 2e9, 1e-12);
    f.pl.schedule = SCHED_PIPEDREAM_2BW;
    mem_stage_bytes(&f.cm, &f.pl, 1, &st);
    ASSERT_REL(st.static_bytes, 2e9 + 4e8, 1e-12);
}

/* Merak's shifted recompute (last p − s micro-batches of stage s skip
 * recompute): stage 0 of 2, m 4, full recompute.  After the last forward
 * micro-batches 2 and 3 are in flight and both keep everything:
 * 2 × 2 layers × 1e8; nothing is recomputed on top of that peak. */
static void test_merak_shift_keeps_full_activations_of_last_micro_batches(void)
{
    fixture f;
    fixture_init(&f, 4, 2, 1, 4, SCHED_1F1B, RECOMPUTE_FULL);
    f.pl.merak_shifted_recompute = true;
    mem_stage st;
    mem_stage_bytes(&f.cm, &f.pl, 0, &st);
    ASSERT_REL(st.activation_bytes, 4e8, 1e-12);
    CU_ASSERT_EQUAL(st.transient_bytes, 0.0);
}

/* The peak of stage s walked op by op over the schedule's own op list (an
 * op allocates its positive delta and its transient when it starts, frees
 * them when it ends: schedule.h), independent of memory.c's replay. */
static double op_list_peak(const schedule *sc, int s)
{
    const sched_stage *st = &sc->stages[s];
    double held = st->static_bytes + st->workspace_bytes, peak = held;
    for (int i = 0; i < st->num_ops; i++) {
        const sched_op *op = &st->ops[i];
        held += (op->mem_delta_bytes > 0 ? op->mem_delta_bytes : 0) + op->mem_transient_bytes;
        if (held > peak)
            peak = held;
        held -= op->mem_transient_bytes;
        if (op->mem_delta_bytes < 0)
            held += op->mem_delta_bytes;
    }
    return peak;
}

/* mem_stage_bytes() is what the planners trust; it must equal the op lists
 * the simulator replays, for every schedule, with and without Merak's shift
 * (p = 3, m = 5, 6 layers; interleaved v = 2 with m = 6) -- except ZB with
 * the shift, where it may only over-count. */
static void test_stage_bytes_equal_the_op_lists_for_every_schedule(void)
{
    const schedule_kind scheds[] = {SCHED_GPIPE, SCHED_1F1B,      SCHED_INTERLEAVED,  SCHED_ZB_H1,
                                    SCHED_ZB_H2, SCHED_PIPEDREAM, SCHED_PIPEDREAM_2BW};
    for (unsigned k = 0; k < sizeof scheds / sizeof scheds[0]; k++) {
        for (int shift = 0; shift < 2; shift++) {
            fixture f;
            bool inter = scheds[k] == SCHED_INTERLEAVED;
            fixture_init(&f, 6, 3, inter ? 2 : 1, inter ? 6 : 5, scheds[k], RECOMPUTE_FULL);
            f.pl.merak_shifted_recompute = shift;
            for (int l = 0; l < 6; l++) {
                f.layers[l].forward_s = 1;
                f.layers[l].backward_s = 2;
                f.layers[l].weight_grad_s = 1;
                f.layers[l].recompute_s[RECOMPUTE_FULL] = 1;
                f.layers[l].output_bytes = 1;
            }
            schedule sc = {0};
            np_error err;
            CU_ASSERT_EQUAL_FATAL(sched_build(&f.pl, &f.cm, &sc, &err), 0);
            for (int s = 0; s < 3; s++) {
                mem_stage st;
                mem_stage_bytes(&f.cm, &f.pl, s, &st);
                double walked = op_list_peak(&sc, s);
                bool zb = scheds[k] == SCHED_ZB_H1 || scheds[k] == SCHED_ZB_H2;
                if (zb && shift) {
                    /* memory.c replays ZB with 1F1B's frees at B: with the
                     * shift's uneven micro-batches that over-counts, never
                     * under-counts (the safe side for a fit check). */
                    CU_ASSERT(st.total_bytes >= walked * (1 - 1e-12));
                    continue;
                }
                if (test_rel_diff(st.total_bytes, walked) > 1e-12)
                    fprintf(stderr, "\n  %s shift %d stage %d: memory.c %.6g, op list %.6g\n",
                            wl_schedule_name(scheds[k]), shift, s, st.total_bytes, walked);
                ASSERT_REL(st.total_bytes, walked, 1e-12);
            }
            sched_free(&sc);
        }
    }
}

/* ---- the fit check -------------------------------------------------------- */

/* Capacity 4 GB: stage 0 needs 2 + 0.04 + 0.09 + 2 = 4.13 GB, stage 1
 * 2 + 0.02 + 0.09 + 2 = 4.11 GB; both are reported with their bytes. */
static void test_check_fits_reports_stages_that_do_not_fit(void)
{
    fixture f;
    fixture_init(&f, 4, 2, 1, 8, SCHED_1F1B, RECOMPUTE_FULL);
    f.cm.hbm_bytes = 4e9;
    np_error err;
    np_error_clear(&err);
    CU_ASSERT_EQUAL(mem_check_fits(&f.cm, &f.pl, &err), NP_EXIT_NOFIT);
    CU_ASSERT_EQUAL(err.code, NP_EXIT_NOFIT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "does not fit"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "stage 0 needs 4.13 GB"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "stage 1 needs 4.11 GB"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "has 4.00 GB"));
    f.cm.hbm_bytes = 4.12e9; /* now only stage 0 is too big */
    np_error_clear(&err);
    CU_ASSERT_EQUAL(mem_check_fits(&f.cm, &f.pl, &err), NP_EXIT_NOFIT);
    CU_ASSERT_PTR_NULL(strstr(err.text, "stage 1"));
    f.cm.hbm_bytes = 64e9;
    np_error_clear(&err);
    CU_ASSERT_EQUAL(mem_check_fits(&f.cm, &f.pl, &err), 0);
    CU_ASSERT_EQUAL(err.code, NP_EXIT_OK);
}

void register_memory_tests(void)
{
    TEST_SUITE(
        "memory",
        {"stage_bytes_equal_the_op_lists_for_every_schedule",
         test_stage_bytes_equal_the_op_lists_for_every_schedule},
        {"inflight_1f1b_is_min_p_minus_s_m", test_inflight_1f1b_is_min_p_minus_s_m},
        {"inflight_zb_h1_is_p_on_every_stage", test_inflight_zb_h1_is_p_on_every_stage},
        {"inflight_gpipe_is_m", test_inflight_gpipe_is_m},
        {"inflight_zb_h2_is_2p_minus_1_on_first_stage",
         test_inflight_zb_h2_is_2p_minus_1_on_first_stage},
        {"inflight_interleaved_follows_megatron_warmup",
         test_inflight_interleaved_follows_megatron_warmup},
        {"interleaved_stage0_holds_1_plus_p_minus_1_over_pv",
         test_interleaved_stage0_holds_1_plus_p_minus_1_over_pv},
        {"stage_bytes_1f1b_full_recompute", test_stage_bytes_1f1b_full_recompute},
        {"stage_bytes_gpipe_holds_every_micro_batch",
         test_stage_bytes_gpipe_holds_every_micro_batch},
        {"stage_bytes_scale_with_micro_batch_sizes", test_stage_bytes_scale_with_micro_batch_sizes},
        {"stage_bytes_interleaved_counts_chunk_micro_batches",
         test_stage_bytes_interleaved_counts_chunk_micro_batches},
        {"pipedream_stashes_weight_versions", test_pipedream_stashes_weight_versions},
        {"merak_shift_keeps_full_activations_of_last_micro_batches",
         test_merak_shift_keeps_full_activations_of_last_micro_batches},
        {"check_fits_reports_stages_that_do_not_fit",
         test_check_fits_reports_stages_that_do_not_fit});
}
