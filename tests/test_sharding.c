/*
 * test_sharding.c -- data-parallel sharding
 * (training.data_parallel_sharding_strategy): bytes per parameter of every
 * level in closed form, the cost model's per-layer ZeRO-2/3 collectives and
 * working set, the op lists (gathers and reduce-scatters around every pass),
 * the engine's collectives on a flat platform (platforms/test_flat_4.xml:
 * every route α = 10 µs, B = 1e9 B/s) and the loader's rules.
 *
 * Closed forms (costmodel_sharding.c): bf16 18, 6 + 12/n, 2 + 16/n, 18/n
 * bytes per parameter over n replicas; a ZeRO-3 all-gather of a layer's
 * D·P bytes of parameters brings each rank (n−1)/n·D·P and takes the ring
 * time (n−1)·α + (n−1)/n·D·P/B.
 */
#include <string.h>

#include "costmodel.h"
#include "csimd_internal.h"
#include "planner.h"
#include "predict.h"
#include "testutil.h"

#define ALPHA_S 10e-6
#define B_BPS 1e9

static void test_bytes_per_param_of_every_level(void)
{
    const int ns[] = {1, 2, 8, 128};
    cm_precision p_bf16 = cm_dtype_precision(WL_BF16), p_fp16 = cm_dtype_precision(WL_FP16),
                 p_fp32 = cm_dtype_precision(WL_FP32);
    for (int i = 0; i < 4; i++) {
        double n = ns[i];
        /* bf16 (fp32 main gradients): R = 6, S = 12, D = 2 */
        ASSERT_REL(cm_sharded_state_bytes_per_param(&p_bf16, WL_SHARD_NO_SHARD, ns[i]), 18.0,
                   1e-15);
        ASSERT_REL(cm_sharded_state_bytes_per_param(&p_bf16, WL_SHARD_OPTIM, ns[i]), 6 + 12 / n,
                   1e-15);
        ASSERT_REL(cm_sharded_state_bytes_per_param(&p_bf16, WL_SHARD_OPTIM_GRADS, ns[i]),
                   2 + 16 / n, 1e-15);
        ASSERT_REL(cm_sharded_state_bytes_per_param(&p_bf16, WL_SHARD_OPTIM_GRADS_PARAMS, ns[i]),
                   18 / n, 1e-15);
        /* fp16: R = 4, S = 16, D = 2 */
        ASSERT_REL(cm_sharded_state_bytes_per_param(&p_fp16, WL_SHARD_OPTIM_GRADS, ns[i]),
                   2 + 18 / n, 1e-15);
        ASSERT_REL(cm_sharded_state_bytes_per_param(&p_fp16, WL_SHARD_OPTIM_GRADS_PARAMS, ns[i]),
                   20 / n, 1e-15);
        /* fp32: R = 8, S = 8, D = 4 */
        ASSERT_REL(cm_sharded_state_bytes_per_param(&p_fp32, WL_SHARD_OPTIM_GRADS, ns[i]),
                   4 + 12 / n, 1e-15);
        ASSERT_REL(cm_sharded_state_bytes_per_param(&p_fp32, WL_SHARD_OPTIM_GRADS_PARAMS, ns[i]),
                   16 / n, 1e-15);
        /* no_shard and optim are Megatron's table, as before */
        for (int d = WL_BF16; d <= WL_FP32; d++) {
            cm_precision pd = cm_dtype_precision((wl_dtype)d);
            ASSERT_REL(cm_sharded_state_bytes_per_param(&pd, WL_SHARD_NO_SHARD, ns[i]),
                       cm_state_bytes_per_param(&pd, false, ns[i]), 1e-15);
            ASSERT_REL(cm_sharded_state_bytes_per_param(&pd, WL_SHARD_OPTIM, ns[i]),
                       cm_state_bytes_per_param(&pd, true, ns[i]), 1e-15);
        }
    }
}

static const char *const level_names[] = {"no_shard", "optim", "optim_grads", "optim_grads_params"};

/* GPT-3 175B on 128 A100-class NPUs (TP 8, PP 8, DP 2) at one level. */
static int gpt_model(int level, const cl_cluster *c, cm_model *cm)
{
    char set[96];
    snprintf(set, sizeof set, "data_parallel_sharding_strategy=%s", level_names[level]);
    const char *const sets[] = {set, "use_distributed_optimizer=false"};
    wl_workload w;
    np_error err;
    int rc = test_wl_load_with("workloads/gpt3_175b_128.json", sets, level == 0 ? 2 : 1, &w, &err);
    if (!rc) {
        CU_ASSERT_EQUAL(w.training.use_distributed_optimizer, level > 0);
        rc = cm_build(&w, c, 0, cm, &err);
    }
    if (rc)
        fprintf(stderr, "\n  %s: %s\n", err.key, err.text);
    wl_free(&w);
    return rc;
}

static void test_the_model_holds_each_levels_bytes(void)
{
    cl_cluster c = test_npu_cluster(128, 8);
    cm_model cm[4];
    for (int level = 0; level < 4; level++)
        CU_ASSERT_EQUAL_FATAL(gpt_model(level, &c, &cm[level]), 0);
    const double bpp[4] = {18, 6 + 12 / 2.0, 2 + 16 / 2.0, 18 / 2.0};
    double largest = 0;
    for (int l = 0; l < cm[0].num_layers; l++) {
        double params = cm[0].layers[l].params;
        largest = fmax(largest, params);
        for (int level = 0; level < 4; level++)
            ASSERT_REL(cm[level].layers[l].state_bytes, params * bpp[level], 1e-12);
    }
    /* ZeRO's unsharded layer is reserved: grads (4 B) for ZeRO-2, parameters
     * (2 B) and grads for ZeRO-3; nothing for the others. */
    ASSERT_REL(cm[1].workspace_bytes, cm[0].workspace_bytes, 1e-15);
    ASSERT_REL(cm[2].workspace_bytes, cm[0].workspace_bytes + 4 * largest, 1e-12);
    ASSERT_REL(cm[3].workspace_bytes, cm[0].workspace_bytes + 6 * largest, 1e-12);
    for (int level = 0; level < 4; level++)
        cm_free(&cm[level]);
}

static void test_zero3_gathers_a_layers_parameters_per_pass(void)
{
    cl_cluster c = test_npu_cluster(128, 8);
    cm_model cm;
    CU_ASSERT_EQUAL_FATAL(gpt_model(3, &c, &cm), 0);
    const int d = 2; /* TP 8 x DP 2 > 8 NPUs per server: the scale-out fabric */
    double reduce_prefix[cm.num_layers + 1];
    reduce_prefix[0] = 0.0;
    for (int l = 0; l < cm.num_layers; l++) {
        const cm_layer *ly = &cm.layers[l];
        double gathered = ly->params * 2.0; /* bf16 */
        ASSERT_REL(ly->zero_gather_bytes, gathered, 1e-15);
        ASSERT_REL(ly->zero_reduce_bytes, ly->params * 4.0, 1e-15);
        /* each rank receives (d−1)/d of the layer's parameters */
        double volume = gathered * (d - 1) / d;
        double gather_s = (d - 1) * c.scaleout_latency_s + volume / c.scaleout_bandwidth_Bps;
        double reduce_s = (d - 1) * c.scaleout_latency_s +
                          ly->zero_reduce_bytes * (d - 1) / d / c.scaleout_bandwidth_Bps;
        ASSERT_REL(ly->zero_forward_s, gather_s, 1e-12);
        ASSERT_REL(ly->zero_backward_s, gather_s + reduce_s, 1e-12);
        reduce_prefix[l + 1] = reduce_prefix[l] + reduce_s;
    }
    /* The prediction prices them per pass and drops the end-of-iteration
     * sync: the tail is the stage's last reduce-scatter, which the engine
     * runs after the last backward's send, and the optimizer step. */
    plan pl;
    wl_workload w;
    np_error err;
    const char *const set[] = {"data_parallel_sharding_strategy=optim_grads_params"};
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with("workloads/gpt3_175b_128.json", set, 1, &w, &err), 0);
    CU_ASSERT_EQUAL_FATAL(test_run_planner("megatron", &cm, &c, &w, &pl, &err), 0);
    const cm_layer *ly = &cm.layers[5];
    ASSERT_REL(predict_layer_s(&cm, &pl, 5, false),
               cm_forward_total_s(ly) + cm_backward_total_s(ly, pl.recompute[5]), 1e-12);
    for (int s = 0; s < pl.num_stages; s++) {
        int first = pl.chunk_start[s], last = pl.chunk_start[s + 1];
        ASSERT_REL(predict_stage_tail_s(&cm, &c, &pl, s),
                   reduce_prefix[last] - reduce_prefix[first] +
                       cm_optimizer_step_s(&cm, first, last),
                   1e-12);
    }
    plan_free(&pl);
    wl_free(&w);
    cm_free(&cm);
}

/* The ops of kind k of stage st, and the bytes they carry. */
static double op_bytes(const sched_stage *st, op_kind k, int *count)
{
    double bytes = 0;
    *count = 0;
    for (int i = 0; i < st->num_ops; i++)
        if (st->ops[i].kind == k)
            bytes += st->ops[i].bytes, (*count)++;
    return bytes;
}

static void test_op_lists_gather_and_reduce_scatter_every_pass(void)
{
    cl_cluster c = test_npu_cluster(8, 8);
    const char *schedules[] = {"1f1b", "zb-h1"};
    for (int level = 2; level <= 3; level++) {
        for (int k = 0; k < 2; k++) {
            char set[96], sched[32];
            snprintf(set, sizeof set, "data_parallel_sharding_strategy=%s", level_names[level]);
            snprintf(sched, sizeof sched, "schedule=\"%s\"", schedules[k]);
            const char *const sets[] = {set, sched};
            test_job j;
            np_error err;
            int rc = test_job_build(&j, &c, "workloads/small_gpt.json", sets, 2, "megatron", &err);
            if (rc)
                fprintf(stderr, "\n  %s %s: %s: %s\n", set, sched, err.key, err.text);
            CU_ASSERT_EQUAL_FATAL(rc, 0);
            int m = j.pl.num_micro_batches, n;
            for (int s = 0; s < j.pl.num_stages; s++) {
                const sched_stage *st = &j.sc.stages[s];
                double params = 0, grads = 0;
                for (int l = j.pl.chunk_start[s]; l < j.pl.chunk_start[s + 1]; l++)
                    params += j.cm.layers[l].params * 2, grads += j.cm.layers[l].grad_bytes;
                CU_ASSERT_EQUAL(test_count_ops(st, OP_DP_ALLREDUCE), 0);
                ASSERT_REL(op_bytes(st, OP_GRAD_REDUCE_SCATTER, &n), m * grads, 1e-12);
                CU_ASSERT_EQUAL(n, m);
                double gathered = op_bytes(st, OP_PARAM_GATHER, &n);
                /* ZeRO-3: before every forward and every backward; ZeRO-2:
                 * once, after the optimizer */
                CU_ASSERT_EQUAL(n, level == 3 ? 2 * m : 1);
                ASSERT_REL(gathered, level == 3 ? 2 * m * params : params, 1e-12);
                /* a reduce-scatter follows the pass that completes the
                 * gradients: W under zero-bubble, else B (then its send) */
                for (int i = 0; i < st->num_ops; i++) {
                    if (st->ops[i].kind != OP_GRAD_REDUCE_SCATTER)
                        continue;
                    int prev = st->ops[i - 1].kind == OP_SEND_BACKWARD ? i - 2 : i - 1;
                    CU_ASSERT_EQUAL(st->ops[prev].kind, k ? OP_WEIGHT_GRAD : OP_BACKWARD);
                }
            }
            test_job_free(&j);
        }
    }
}

/* A synthetic ZeRO-3 model: `layers` layers (F = 1, B = 2) of
 * gather_bytes of parameters and reduce_bytes of gradients each. */
static void zero3_model(cm_model *cm, int layers, double gather_bytes, double reduce_bytes)
{
    test_uniform_model(cm, layers);
    cm->sharding = WL_SHARD_OPTIM_GRADS_PARAMS;
    for (int l = 0; l < layers; l++) {
        cm->layers[l].output_bytes = 0;
        cm->layers[l].zero_gather_bytes = gather_bytes;
        cm->layers[l].zero_reduce_bytes = reduce_bytes;
    }
}

/* Ring all-gather or reduce-scatter of S among n NPUs on the flat fabric:
 * the volume (n−1)/n·S at B after (n−1) latencies. */
static double ring_half_s(int n, double bytes)
{
    return (n - 1) * ALPHA_S + (n - 1) * bytes / n / B_BPS;
}

static void test_zero3_collectives_on_a_flat_platform(void)
{
    const int dp = 4, layers = 2, m = 3;
    const double gather = 40e6, reduce = 80e6;
    cm_model cm;
    zero3_model(&cm, layers, gather, reduce);
    plan pl;
    test_uniform_plan(&pl, 1, m, layers, SCHED_1F1B);
    pl.data_parallel = dp;
    test_sim_result r;
    CU_ASSERT_EQUAL_FATAL(test_simulate_plan("platforms/test_flat_4.xml", &cm, &pl, NULL, &r), 0);
    CU_ASSERT_EQUAL_FATAL(r.rc, 0);
    double per_mb = layers * 1.0 + layers * 2.0 + 2 * ring_half_s(dp, layers * gather) +
                    ring_half_s(dp, layers * reduce);
    ASSERT_REL(r.iteration_s, m * per_mb, 1e-9);
    /* --dp-overlap takes them off the worker's stream (test_zero_overlap.c):
     * the first gather (nothing before it to hide behind) and the last
     * reduce-scatter stay exposed, the others hide behind 3 s of compute. */
    engine_options o;
    engine_init_options(&o);
    o.dp_overlap = true;
    cm.zero_overlap = true;
    CU_ASSERT_EQUAL_FATAL(test_simulate_plan("platforms/test_flat_4.xml", &cm, &pl, &o, &r), 0);
    CU_ASSERT_EQUAL_FATAL(r.rc, 0);
    ASSERT_REL(r.iteration_s,
               ring_half_s(dp, layers * gather) + m * layers * 3.0 +
                   ring_half_s(dp, layers * reduce),
               1e-9);
    plan_free(&pl);
    cm_free(&cm);
}

/* The layers of the pipeline cases below: F = 1 s, B = 2 s (the uniform
 * model), no boundary tensor and no parameters, ZeRO-2 (gather_bytes 0) or
 * ZeRO-3 over dp replicas, priced as cm_sharding_layer() would on the flat
 * fabric. */
static void zero_pipeline_model(cm_model *cm, int layers, int dp, double reduce_bytes,
                                double gather_bytes, bool overlap)
{
    test_uniform_model(cm, layers);
    cm->sharding = gather_bytes > 0 ? WL_SHARD_OPTIM_GRADS_PARAMS : WL_SHARD_OPTIM_GRADS;
    cm->data_parallel = dp;
    cm->zero_overlap = overlap;
    cm->micro_batch_size = 1;
    double g = gather_bytes > 0 ? ring_half_s(dp, gather_bytes) : 0.0;
    for (int l = 0; l < layers; l++) {
        cm_layer *ly = &cm->layers[l];
        ly->output_bytes = ly->params = 0;
        ly->zero_reduce_bytes = reduce_bytes;
        ly->zero_gather_bytes = gather_bytes;
        ly->zero_forward_s = g;
        ly->zero_backward_s = g + ring_half_s(dp, reduce_bytes);
    }
}

/* Two stages of zero_pipeline_model()'s layers with ZeRO-2 over dp
 * replicas on the flat platform, m micro-batches of schedule k, run by the
 * engine (--dp-overlap as overlap): the iteration time, *cm and *pl left for
 * the caller to price and free. */
static double simulate_two_stages(schedule_kind k, int m, int dp, double reduce_bytes, bool overlap,
                                  cm_model *cm, plan *pl)
{
    zero_pipeline_model(cm, 2, dp, reduce_bytes, 0.0, overlap);
    test_uniform_plan(pl, 2, m, 1, k);
    pl->data_parallel = dp;
    engine_options o;
    engine_init_options(&o);
    o.dp_overlap = overlap;
    test_sim_result res;
    CU_ASSERT_EQUAL(test_simulate_plan("platforms/test_flat_4.xml", cm, pl, &o, &res), 0);
    CU_ASSERT_EQUAL(res.rc, 0);
    return res.rc ? -1.0 : res.iteration_s;
}

/* Blocking ZeRO-2 on two stages of one layer each (F = 1 s, B = 2 s, no
 * boundary tensor, no parameters to gather after the step), DP 2 on the
 * flat platform: the engine runs each micro-batch's reduce-scatter, r, after
 * the backward's send (schedule_parallel.c), so it holds the stage but not
 * the gradient on its way upstream.  By hand, p = 2: 1F1B takes
 * 2(F + B) + (m − 1)(F + B + r) + r (the fill and drain without r, the
 * steady state with it, the last one after the last backward); GPipe,
 * backward last micro-batch first, (m + 1)(F + B) + m·r (stage 1's
 * backwards r apart, stage 0 following each at once).  A prediction that
 * counts r on the pipeline's chain is p·r too long. */
static void test_blocking_reduce_scatters_are_off_the_pipeline_chain(void)
{
    const int dp = 2, m = 4;
    const double reduce = 400e6, r = ring_half_s(dp, reduce), F = 1.0, B = 2.0;
    const double want_1f1b = 2 * (F + B) + (m - 1) * (F + B + r) + r;
    const double want_gpipe = (m + 1) * (F + B) + m * r;
    for (int k = 0; k < 2; k++) {
        cm_model cm;
        plan pl;
        double t =
            simulate_two_stages(k ? SCHED_GPIPE : SCHED_1F1B, m, dp, reduce, false, &cm, &pl);
        ASSERT_REL(t, k ? want_gpipe : want_1f1b, 1e-9);
        if (!k) {
            cl_cluster c = test_npu_cluster(4, 1);
            ASSERT_REL(predict_1f1b_iteration_s(&cm, &c, &pl, PREDICT_SENDS_RANK_ORDER), want_1f1b,
                       1e-12);
        } else { /* CSIMD's recurrence on the same stages */
            const double fwd[] = {F, F, F, F, F, F, F, F}, bwd[] = {B, B, B, B, B, B, B, B};
            const double comm[8] = {0}, after[] = {r, r};
            const csimd_zero zero = {.after_s = after};
            ASSERT_REL(csimd_gpipe_makespan_s(2, m, fwd, bwd, comm, &zero, NULL), want_gpipe,
                       1e-12);
        }
        plan_free(&pl);
        cm_free(&cm);
    }
}

/* CSIMD's prediction (csimd_predict_s(), on a planning context of the
 * model) of the two GPipe stages above, ZeRO-2 blocking and overlapped, and
 * the engine's run of them.  Overlapped, a reduce-scatter (r < B) hides
 * behind the next backward and only stage 0's last one is exposed:
 * (m + 1)(F + B) + r; blocking (m + 1)(F + B) + m·r as above. */
static void test_csimd_prices_zero2_as_the_engine_runs_it(void)
{
    const int dp = 2, m = 4;
    const double reduce = 400e6, r = ring_half_s(dp, reduce), F = 1.0, B = 2.0;
    for (int overlap = 0; overlap < 2; overlap++) {
        double want = (m + 1) * (F + B) + (overlap ? r : m * r);
        cm_model cm;
        plan pl;
        ASSERT_REL(simulate_two_stages(SCHED_GPIPE, m, dp, reduce, overlap, &cm, &pl), want, 1e-9);
        cl_cluster c = test_npu_cluster(4, 1); /* no boundary tensor: free sends */
        c.scaleup_latency_s = c.scaleout_latency_s = 0.0;
        csimd_ctx *x;
        CU_ASSERT_EQUAL_FATAL(csimd_context_new(&cm, &c, 2, dp, m, m, RECOMPUTE_NONE, &x), 0);
        const int start[] = {0, 1, 2}, sizes[] = {1, 1, 1, 1};
        ASSERT_REL(csimd_predict_s(x, start, sizes), want, 1e-12);
        csimd_context_free(x);
        plan_free(&pl);
        cm_free(&cm);
    }
}

/* Interleaved 1F1B with v chunks of one layer per stage, the same F, B, as
 * above and, blocking, ZeRO-2's reduce-scatter r after each chunk's
 * backward or ZeRO-3's gathers g before each chunk's forward and backward
 * as well.  The steady state repeats F + B + 2g + r per chunk and
 * micro-batch, the fill and drain cross the other p − 1 stages one chunk at
 * a time, without the reduce-scatters, which follow the sends:
 *   T = (p − 1)(F + B + 2g) + m·v·(F + B + 2g + r),
 * the prediction's max S + (Σ S' − max S')/v + (m − 1)·max S with
 * S = v(F + B + 2g + r), S' = v(F + B + 2g).  The engine runs exactly this
 * while r ≤ F + B; beyond, the reduce-scatters pace the fill too
 * (p = 4, v = 2, m = 8, r = 4 s: 124 s against 121 s). */
static void test_interleaved_zero_in_closed_form(void)
{
    const int dp = 2, shapes[][3] = {{2, 2, 4}, {2, 3, 4}, {4, 2, 8}, {4, 3, 8}};
    const double F = 1.0, B = 2.0, reduce = 400e6, r = ring_half_s(dp, reduce);
    for (int zero3 = 0; zero3 < 2; zero3++)
        for (int i = 0; i < 4; i++) {
            int p = shapes[i][0], v = shapes[i][1], m = shapes[i][2];
            double gather = zero3 ? 300e6 : 0.0, g = zero3 ? ring_half_s(dp, gather) : 0.0;
            cm_model cm;
            zero_pipeline_model(&cm, p * v, dp, reduce, gather, false);
            plan pl;
            test_chunked_plan(&pl, p, v, m, 1, SCHED_INTERLEAVED);
            pl.data_parallel = dp;
            double want = (p - 1) * (F + B + 2 * g) + m * v * (F + B + 2 * g + r);
            test_sim_result res;
            CU_ASSERT_EQUAL_FATAL(test_simulate_plan(p == 2 ? "platforms/test_flat_4.xml"
                                                            : "platforms/test_flat_8.xml",
                                                     &cm, &pl, NULL, &res),
                                  0);
            CU_ASSERT_EQUAL_FATAL(res.rc, 0);
            ASSERT_REL(res.iteration_s, want, 1e-9);
            cl_cluster c = test_npu_cluster(2 * p, 1);
            ASSERT_REL(predict_interleaved_iteration_s(&cm, &c, &pl, PREDICT_SENDS_RANK_ORDER),
                       want, 1e-12);
            plan_free(&pl);
            cm_free(&cm);
        }
}

/* Overlapped ZeRO-2 whose reduce-scatters outlast the compute (r = 4 s
 * per one-layer chunk against F + B = 3 s), interleaved: stage 0's first
 * backward ends after micro-batch 0's forward through the p·v chunks and
 * the backwards of the last row of chunks on the p stages (no boundary
 * tensor), p·v·F + p·B; from then its stream is busy to the end, m·v
 * reduce-scatters back to back (the worker waits for the previous one
 * before it hands the next over), the last one ending the iteration (no
 * parameters: no step, no gather of the update):
 *   T = p·v·F + p·B + m·v·r.
 * Pricing the stream as the steady state of the 1F1B-style path alone
 * gives (p − 1)(F + B) + r + m·v·r, short by p(v − 1)F + F + B − r (1 to
 * 3 s here).  Where other stages' streams hold stage 0's backwards back (p = 4,
 * m = 8) the engine takes longer than this bound (docs/planners.md). */
static void test_stream_bound_zero2_starts_at_the_first_backward(void)
{
    const int dp = 2, shapes[][3] = {{2, 2, 4}, {2, 3, 4}, {2, 2, 8}, {4, 2, 4}};
    const double F = 1.0, B = 2.0, reduce = 8000e6, r = ring_half_s(dp, reduce);
    CU_ASSERT_DOUBLE_EQUAL(r, 4.0, 1e-3); /* the stream outlasts F + B */
    for (int i = 0; i < 4; i++) {
        int p = shapes[i][0], v = shapes[i][1], m = shapes[i][2];
        cm_model cm;
        zero_pipeline_model(&cm, p * v, dp, reduce, 0.0, true);
        plan pl;
        test_chunked_plan(&pl, p, v, m, 1, SCHED_INTERLEAVED);
        pl.data_parallel = dp;
        engine_options o;
        engine_init_options(&o);
        o.dp_overlap = true;
        test_sim_result res;
        CU_ASSERT_EQUAL_FATAL(
            test_simulate_plan(p == 2 ? "platforms/test_flat_4.xml" : "platforms/test_flat_8.xml",
                               &cm, &pl, &o, &res),
            0);
        CU_ASSERT_EQUAL_FATAL(res.rc, 0);
        double want = p * v * F + p * B + m * v * r;
        ASSERT_REL(res.iteration_s, want, 1e-6);
        cl_cluster c = test_npu_cluster(2 * p, 1);
        ASSERT_REL(predict_interleaved_iteration_s(&cm, &c, &pl, PREDICT_SENDS_RANK_ORDER), want,
                   1e-6);
        plan_free(&pl);
        cm_free(&cm);
    }
}

static void test_the_loader_keeps_the_levels_consistent(void)
{
    test_expect_override_error("workloads/llama3_405b_1f1b.json",
                               "data_parallel_sharding_strategy=no_shard",
                               "training.data_parallel_sharding_strategy",
                               "contradicts training.use_distributed_optimizer");
    const char *const zb[] = {"schedule=pipedream", "data_parallel_sharding_strategy=optim_grads"};
    wl_workload w;
    np_error err;
    CU_ASSERT_NOT_EQUAL(test_wl_load_with("workloads/small_gpt.json", zb, 2, &w, &err), 0);
    CU_ASSERT_STRING_EQUAL(err.key, "training.data_parallel_sharding_strategy");
    const char *const z3[] = {"data_parallel_sharding_strategy=optim_grads_params"};
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with("workloads/small_gpt.json", z3, 1, &w, &err), 0);
    CU_ASSERT_TRUE(w.training.use_distributed_optimizer);
    wl_free(&w);
}

void register_sharding_tests(void)
{
    TEST_SUITE(
        "sharding", {"bytes per parameter of every level", test_bytes_per_param_of_every_level},
        {"the model holds each level's bytes", test_the_model_holds_each_levels_bytes},
        {"ZeRO-3 gathers a layer's parameters per pass",
         test_zero3_gathers_a_layers_parameters_per_pass},
        {"op lists gather and reduce-scatter every pass",
         test_op_lists_gather_and_reduce_scatter_every_pass},
        {"ZeRO-3 collectives on a flat platform", test_zero3_collectives_on_a_flat_platform},
        {"blocking reduce-scatters are off the pipeline's chain",
         test_blocking_reduce_scatters_are_off_the_pipeline_chain},
        {"interleaved ZeRO-2/3 in closed form", test_interleaved_zero_in_closed_form},
        {"stream-bound ZeRO-2 starts at the first backward",
         test_stream_bound_zero2_starts_at_the_first_backward},
        {"CSIMD prices ZeRO-2 as the engine runs it",
         test_csimd_prices_zero2_as_the_engine_runs_it},
        {"the loader keeps the levels consistent", test_the_loader_keeps_the_levels_consistent});
}
