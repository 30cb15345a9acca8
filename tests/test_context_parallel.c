/*
 * test_context_parallel.c -- context parallelism (parallel.context_parallel_size
 * c): the cost model per CP rank, the ring exchange of K/V against its α–β
 * formula in the cost model and in the engine (platforms/test_flat_*.xml:
 * every route α = 10 µs, B = 1e9 B/s; test_flat_16_4pn.xml adds servers of 4
 * NPUs on a scale-up fabric of α_u = 2 µs, B_u = 4e9 B/s), Megatron's rank
 * order tp-cp-dp-pp, the NPU count and the op lists.
 *
 * Closed forms (costmodel_cp.c, engine_cp.c): one CP rank holds s/c tokens,
 * so every activation is 1/c of the unsplit layer's; a K/V message is
 * 2·b·(s/c)·(g·d/t)·D bytes; a pass of k messages overlapped with k attention
 * blocks exposes k·max(0, α + S/B − t_block), which the engine reaches with
 * one transfer of k·S bytes after (k − 1)·α.
 */
#include <string.h>

#include "costmodel.h"
#include "planner.h"
#include "testutil.h"

#define ALPHA_S 10e-6
#define B_BPS 1e9

/* Llama 3 405B with the overrides, priced on the 16K cluster (or c). */
static int llama_model(const char *const *set, int n, const cl_cluster *c, cm_model *cm)
{
    wl_workload w;
    np_error err;
    memset(cm, 0, sizeof *cm);
    int rc = test_wl_load_with("workloads/llama3_405b_1f1b.json", set, n, &w, &err);
    if (!rc)
        rc = cm_build(&w, c, 0, cm, &err);
    if (rc)
        fprintf(stderr, "\n  %s: %s\n", err.key, err.text);
    wl_free(&w);
    return rc;
}

static void test_activations_per_cp_rank_are_one_cth(void)
{
    cl_cluster c = test_npu_cluster(16384, 8);
    cm_model one, split;
    const char *const base[] = {"context_parallel_size=1"};
    CU_ASSERT_EQUAL_FATAL(llama_model(base, 1, &c, &one), 0);
    for (int cp = 2; cp <= 4; cp *= 2) {
        char dp[64], cps[64];
        snprintf(cps, sizeof cps, "context_parallel_size=%d", cp);
        snprintf(dp, sizeof dp, "data_parallel_size=%d", 128 / cp);
        const char *const set[] = {cps, dp};
        CU_ASSERT_EQUAL_FATAL(llama_model(set, 2, &c, &split), 0);
        CU_ASSERT_EQUAL(split.context_parallel, cp);
        CU_ASSERT_EQUAL(split.data_parallel, 128); /* gradients over DP x CP */
        for (int l = 0; l < one.num_layers; l++) {
            const cm_layer *a = &one.layers[l], *b = &split.layers[l];
            for (int r = 0; r < RECOMPUTE_COUNT; r++)
                ASSERT_REL(b->activation_bytes[r], a->activation_bytes[r] / cp, 1e-12);
            for (int u = 0; u < a->num_units; u++)
                ASSERT_REL(b->units[u].activation_bytes, a->units[u].activation_bytes / cp, 1e-12);
            ASSERT_REL(b->output_bytes, a->output_bytes / cp, 1e-12);
            ASSERT_REL(b->tp_bytes, a->tp_bytes / cp, 1e-12);
            ASSERT_REL(b->forward_flops, a->forward_flops / cp, 1e-12);
            /* Parameters are not split; their state is sharded over the same
             * 128 replicas (distributed optimizer over DP x CP). */
            ASSERT_REL(b->params, a->params, 1e-12);
            ASSERT_REL(b->state_bytes, a->state_bytes, 1e-12);
        }
        cm_free(&split);
    }
    cm_free(&one);
}

/* The exchange of one pass against k·max(0, α + S/B − t_block). */
static void check_exchange(const cm_cp_exchange *e, int steps, double message, double alpha,
                           double bandwidth)
{
    CU_ASSERT_EQUAL(e->steps, steps);
    ASSERT_REL(e->bytes, steps * message, 1e-12);
    double block = e->overlap_s / steps;
    ASSERT_REL(e->exposed_s, steps * fmax(0.0, alpha + message / bandwidth - block), 1e-12);
}

static void test_cp_exchange_is_its_alpha_beta_formula(void)
{
    /* A slow network (1e8 B/s) exposes the exchange, the 910B's NIC hides
     * it behind the attention blocks. */
    for (int slow = 0; slow <= 1; slow++) {
        cl_cluster c = test_npu_cluster(16384, 8);
        if (slow)
            c.scaleout_bandwidth_Bps = 1e8;
        for (int cp = 2; cp <= 4; cp *= 2) {
            char cps[64], dp[64];
            snprintf(cps, sizeof cps, "context_parallel_size=%d", cp);
            snprintf(dp, sizeof dp, "data_parallel_size=%d", 128 / cp);
            const char *const set[] = {cps, dp};
            cm_model cm;
            CU_ASSERT_EQUAL_FATAL(llama_model(set, 2, &c, &cm), 0);
            /* K and V of 8192/c tokens, 8 groups of 128 over TP 8, bf16 */
            double message = 2.0 * 1 * (8192.0 / cp) * (8.0 * 128 / 8) * 2;
            const cm_layer *ly = &cm.layers[1];
            CU_ASSERT_EQUAL(ly->kind, CM_DECODER);
            /* TP 8 x CP c > 8 NPUs per server: the scale-out fabric */
            check_exchange(&ly->cp_forward, cp - 1, message, c.scaleout_latency_s,
                           c.scaleout_bandwidth_Bps);
            check_exchange(&ly->cp_backward, cp - 1, 2 * message, c.scaleout_latency_s,
                           c.scaleout_bandwidth_Bps);
            CU_ASSERT(slow ? ly->cp_forward.exposed_s > 0 : ly->cp_forward.exposed_s == 0);
            /* One remote block is one FlashAttention kernel on (s/c)² per
             * head: 4·b·(s/c)²·h/t FLOPs, of which the causal kernel does
             * half (FlashAttention-2, section 4.1), at the matmul
             * efficiency (no attention_efficiency here), compute-bound
             * (its Q, K, V, O and statistics, under 40 MB, take < 25 µs at
             * 1.6e12 B/s), plus one launch. */
            double q = 8192.0 / cp, block_flops = 0.5 * 4.0 * q * q * 16384 / 8;
            ASSERT_REL(ly->cp_forward.overlap_s / (cp - 1),
                       block_flops / (c.peak_flops * c.matmul_efficiency) + c.kernel_launch_s,
                       1e-12);
            /* Selective recompute re-runs the whole ring's forward, c blocks
             * and the exposed exchange, and frees one set of statistics,
             * 8·b·(a/t)·(s/c) bytes: the remote blocks keep none of their
             * own (Megatron-Core's checkpointed core attention). */
            double block = block_flops / (c.peak_flops * c.matmul_efficiency) + c.kernel_launch_s;
            ASSERT_REL(ly->recompute_s[RECOMPUTE_SELECTIVE], cp * block + ly->cp_forward.exposed_s,
                       1e-9);
            ASSERT_REL(ly->activation_bytes[RECOMPUTE_NONE] -
                           ly->activation_bytes[RECOMPUTE_SELECTIVE],
                       8.0 * (128.0 / 8) * q, 1e-9);
            /* The core's output O alone (AdaPipe's proj_input unit) sums
             * every block's: its re-creation re-runs the ring as well. */
            ASSERT_REL(test_unit(ly, "proj_input")->forward_s,
                       cp * block + ly->cp_forward.exposed_s, 1e-9);
            ASSERT_REL(cm_forward_total_s(ly),
                       ly->forward_s + ly->tp_forward_s + ly->cp_forward.exposed_s, 1e-12);
            ASSERT_REL(cm_backward_total_s(ly, RECOMPUTE_NONE),
                       ly->backward_s + ly->weight_grad_s + ly->tp_backward_s +
                           ly->cp_backward.exposed_s,
                       1e-12);
            /* The embedding and the head have no attention. */
            CU_ASSERT_EQUAL(cm.layers[0].cp_forward.steps, 0);
            CU_ASSERT_EQUAL(cm.layers[cm.num_layers - 1].cp_backward.steps, 0);
            cm_free(&cm);
        }
    }
}

/* A synthetic model of `layers` layers (F = 1, B = 2) whose every layer
 * exchanges cp − 1 messages of fwd_message bytes per forward (each step
 * overlapping fwd_block s) and of bwd_message per backward (bwd_block). */
static void cp_model(cm_model *cm, int layers, int cp, double fwd_message, double fwd_block,
                     double bwd_message, double bwd_block)
{
    test_uniform_model(cm, layers);
    cm->context_parallel = cp;
    for (int l = 0; l < layers; l++) {
        cm_layer *ly = &cm->layers[l];
        ly->output_bytes = 0;
        ly->cp_forward = (cm_cp_exchange){
            .bytes = (cp - 1) * fwd_message, .overlap_s = (cp - 1) * fwd_block, .steps = cp - 1};
        ly->cp_backward = (cm_cp_exchange){
            .bytes = (cp - 1) * bwd_message, .overlap_s = (cp - 1) * bwd_block, .steps = cp - 1};
    }
}

/* k steps of one message each on the α–β route, overlapped with k blocks. */
static double exposed_s(int k, double alpha, double bandwidth, double message, double block)
{
    return k * fmax(0.0, alpha + message / bandwidth - block);
}

/* cp_model()'s model on one stage, 1F1B over m micro-batches, TP tp and DP
 * dp, simulated on platform into *r. */
static void simulate_cp(const char *platform, int cp, int layers, int m, int tp, int dp,
                        double fwd_msg, double fwd_block, double bwd_msg, double bwd_block,
                        test_sim_result *r)
{
    cm_model cm;
    cp_model(&cm, layers, cp, fwd_msg, fwd_block, bwd_msg, bwd_block);
    plan pl;
    test_uniform_plan(&pl, 1, m, layers, SCHED_1F1B);
    pl.tensor_parallel = tp;
    pl.data_parallel = dp;
    CU_ASSERT_EQUAL_FATAL(test_simulate_plan(platform, &cm, &pl, NULL, r), 0);
    CU_ASSERT_EQUAL_FATAL(r->rc, 0);
    plan_free(&pl);
    cm_free(&cm);
}

static void test_cp_ring_exchange_on_a_flat_platform_is_its_formula(void)
{
    /* CP 4 on the 4 NPUs of test_flat_4: each rank sends to its successor on
     * its own up-link and the successor's down-link, no link shared.  Two
     * layers per op, so an op's 2·3 = 6 steps run as one transfer. */
    const int cp = 4, layers = 2, m = 3;
    const double fwd_msg = 0.5e9, fwd_block = 0.1, bwd_msg = 0.2e9, bwd_block = 0.5;
    test_sim_result r;
    simulate_cp("platforms/test_flat_4.xml", cp, layers, m, 1, 1, fwd_msg, fwd_block, bwd_msg,
                bwd_block, &r);
    int k = layers * (cp - 1);
    double e_fwd = exposed_s(k, ALPHA_S, B_BPS, fwd_msg, fwd_block);
    double e_bwd = exposed_s(k, ALPHA_S, B_BPS, bwd_msg, bwd_block);
    CU_ASSERT(e_fwd > 2.0 && e_bwd == 0.0); /* the forward exposed, the backward hidden */
    ASSERT_REL(r.iteration_s, m * (layers * 1.0 + e_fwd + layers * 2.0 + e_bwd), 1e-9);
    /* Busy includes the exposed exchange (it is part of the layer). */
    ASSERT_REL(r.stage_busy_s[0], r.iteration_s, 1e-9);
}

static void test_cp_peers_in_a_server_use_the_scale_up_fabric(void)
{
    /* TP 2 x CP 2 x DP 4 on test_flat_16_4pn: Megatron's order tp-cp-dp-pp
     * puts the two CP ranks of a TP rank 2 NPUs apart, in one server of 4:
     * the exchange is a scale-up transfer (α_u = 2 µs, B_u = 4e9 B/s).
     * (tp-dp-cp would put them 8 apart, across servers.) */
    const int cp = 2, layers = 1, m = 2;
    const double fwd_msg = 4e9, fwd_block = 0.25, bwd_msg = 8e9, bwd_block = 1.0;
    test_sim_result r;
    simulate_cp("platforms/test_flat_16_4pn.xml", cp, layers, m, 2, 4, fwd_msg, fwd_block, bwd_msg,
                bwd_block, &r);
    double e_fwd = exposed_s(1, 2e-6, 4e9, fwd_msg, fwd_block);
    double e_bwd = exposed_s(1, 2e-6, 4e9, bwd_msg, bwd_block);
    CU_ASSERT(e_fwd > 0.5 && e_bwd > 0.5);
    ASSERT_REL(r.iteration_s, m * (1.0 + e_fwd + 2.0 + e_bwd), 1e-9);
}

static void test_a_ring_goes_at_its_slowest_edge(void)
{
    /* CP 8 x DP 2 on test_flat_16_4pn: replica 0's ring is NPUs 0..7, two
     * servers of 4, so the edges 3->4 and 7->0 cross the network (α = 10 µs,
     * 1e9 B/s: 0.2 s a forward message) and the other six stay in a server
     * (α_u = 2 µs, 4e9 B/s: 0.05 s, hidden behind the 0.1 s block).  A rank
     * forwards at each step what it received at the step before and waits
     * for its send and its receive, so the two slow edges set every rank's
     * pace: each op exposes k·max(0, d_max − block), as if every edge were
     * slow (engine_cp.c).  Replaying one message per op without the ring's
     * barrier let the ranks inside a server run micro-batches ahead of the
     * slow edges, and the iteration came out 13% short (17.67 s). */
    const int cp = 8, layers = 1, m = 4;
    const double fwd_msg = 0.2e9, fwd_block = 0.1, bwd_msg = 0.4e9, bwd_block = 0.2;
    int k = cp - 1;
    /* the blocks fit in the layer's compute (F = 1, B = 2) */
    CU_ASSERT(k * fwd_block < 1.0 && k * bwd_block < 2.0);
    test_sim_result r;
    simulate_cp("platforms/test_flat_16_4pn.xml", cp, layers, m, 1, 2, fwd_msg, fwd_block, bwd_msg,
                bwd_block, &r);
    double e_fwd = exposed_s(k, ALPHA_S, B_BPS, fwd_msg, fwd_block);
    double e_bwd = exposed_s(k, ALPHA_S, B_BPS, bwd_msg, bwd_block);
    CU_ASSERT(e_fwd > 0.5 && e_bwd > 1.0);
    CU_ASSERT(exposed_s(k, 2e-6, 4e9, fwd_msg, fwd_block) == 0.0); /* the fast edges alone */
    CU_ASSERT(exposed_s(k, 2e-6, 4e9, bwd_msg, bwd_block) == 0.0);
    ASSERT_REL(r.iteration_s, m * (1.0 + e_fwd + 2.0 + e_bwd), 1e-9);
}

static void test_the_cluster_counts_tp_cp_dp_pp(void)
{
    wl_workload w;
    np_error err;
    const char *const set[] = {"context_parallel_size=2", "data_parallel_size=64"};
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with("workloads/llama3_405b_1f1b.json", set, 2, &w, &err),
                          0);
    CU_ASSERT_EQUAL(wl_check_cluster(&w, 16384, &err), 0);
    CU_ASSERT_NOT_EQUAL(wl_check_cluster(&w, 8192, &err), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "context_parallel_size"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "= 16384 NPUs"));
    wl_free(&w);
    /* Megatron splits a sequence into 2c chunks. */
    test_expect_override_error("workloads/llama3_405b_1f1b.json", "context_parallel_size=3",
                               "parallel.context_parallel_size", "6 equal chunks");
    test_expect_override_error("workloads/vgg16.json", "context_parallel_size=2",
                               "parallel.context_parallel_size", "no sequence to split");
}

/* Every recompute op of j carries `times` forward rings of its stage's
 * layers (a one-chunk plan: stage s holds chunk s). */
static void check_recompute_rings(const test_job *j, int times)
{
    for (int s = 0; s < j->pl.num_stages; s++) {
        const sched_stage *st = &j->sc.stages[s];
        double fwd = 0;
        for (int l = j->pl.chunk_start[s]; l < j->pl.chunk_start[s + 1]; l++)
            fwd += j->cm.layers[l].cp_forward.bytes;
        int recomputes = 0;
        for (int i = 0; i < st->num_ops; i++)
            if (st->ops[i].kind == OP_RECOMPUTE) {
                recomputes++;
                ASSERT_REL(st->ops[i].cp_bytes, times * fwd, 1e-12);
            }
        CU_ASSERT(recomputes > 0);
    }
}

static void test_op_lists_carry_the_exchange_and_the_cp_gradient_sync(void)
{
    /* small_gpt: PP 4, 8 layers, now CP 2 x DP 1 on 8 NPUs. */
    cl_cluster c = test_npu_cluster(8, 8);
    const char *const set[] = {"context_parallel_size=2", "data_parallel_size=1",
                               "global_batch_size=8", "recompute_granularity=full"};
    test_job j;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(
        test_job_build(&j, &c, "workloads/small_gpt.json", set, 4, "megatron", &err), 0);
    for (int s = 0; s < j.pl.num_stages; s++) {
        const sched_stage *st = &j.sc.stages[s];
        int first = j.pl.chunk_start[s], last = j.pl.chunk_start[s + 1];
        double fwd = 0, bwd = 0, grads = 0;
        for (int l = first; l < last; l++) {
            fwd += j.cm.layers[l].cp_forward.bytes;
            bwd += j.cm.layers[l].cp_backward.bytes;
            grads += j.cm.layers[l].grad_bytes;
        }
        CU_ASSERT(fwd > 0);
        for (int i = 0; i < st->num_ops; i++) {
            const sched_op *op = &st->ops[i];
            if (op->kind == OP_FORWARD || op->kind == OP_RECOMPUTE)
                ASSERT_REL(op->cp_bytes, fwd, 1e-12);
            if (op->kind == OP_BACKWARD)
                ASSERT_REL(op->cp_bytes, bwd, 1e-12);
        }
        /* DP 1: the gradients still go round the 2 CP ranks. */
        CU_ASSERT_EQUAL(test_count_ops(st, OP_DP_ALLREDUCE), 1);
        for (int i = 0; i < st->num_ops; i++)
            if (st->ops[i].kind == OP_DP_ALLREDUCE)
                ASSERT_REL(st->ops[i].bytes, grads, 1e-12);
    }
    /* Per unit (AdaPipe): a recompute carries the ring once for the core
     * or for its output O (proj_input), twice for both, never for an
     * unrelated unit (fc1_output). */
    static const char *const picks[][2] = {{"core_attention", NULL},
                                           {"proj_input", NULL},
                                           {"core_attention", "proj_input"},
                                           {"fc1_output", NULL}};
    static const int reruns[] = {1, 1, 2, 0};
    for (int k = 0; k < 4; k++) {
        CU_ASSERT_EQUAL_FATAL(plan_use_recompute_units(&j.pl), 0);
        for (int l = 0; l < j.pl.num_layers; l++) {
            const cm_layer *ly = &j.cm.layers[l];
            for (int u = 0; u < ly->num_units; u++)
                for (int q = 0; q < 2; q++)
                    if (picks[k][q] && strcmp(ly->units[u].name, picks[k][q]) == 0)
                        j.pl.recompute_units[l] |= (uint16_t)(1u << u);
        }
        CU_ASSERT_EQUAL_FATAL(test_job_reschedule(&j, &j.cm, &err), 0);
        check_recompute_rings(&j, reruns[k]);
    }
    test_job_free(&j);
    /* TensorOpt re-chooses the layout and refuses CP. */
    const char *const ft[] = {"context_parallel_size=2", "data_parallel_size=1",
                              "global_batch_size=8"};
    CU_ASSERT_EQUAL(test_job_build(&j, &c, "workloads/small_gpt.json", ft, 3, "ft", &err),
                    NP_EXIT_INPUT);
    CU_ASSERT_STRING_EQUAL(err.key, "parallel.context_parallel_size");
    test_job_free(&j);
}

/* Selective recompute re-runs the attention core, with context parallelism
 * the whole ring: c blocks of the pass's per-step block time plus the
 * exposed forward exchange, unfused or FlashAttention alike (Megatron-Core's
 * checkpointed core attention), and every recompute op carries the ring. */
static void test_selective_recompute_carries_the_ring_with_either_kernel(void)
{
    cl_cluster c = test_npu_cluster(8, 8);
    c.scaleup_bandwidth_Bps = 1e8; /* slow enough to expose the exchange */
    for (int flash = 0; flash <= 1; flash++) {
        const char *const set[] = {"context_parallel_size=2", "data_parallel_size=1",
                                   "global_batch_size=8", "recompute_granularity=selective",
                                   flash ? "use_flash_attn=true" : "use_flash_attn=false"};
        test_job j;
        np_error err;
        CU_ASSERT_EQUAL_FATAL(
            test_job_build(&j, &c, "workloads/small_gpt.json", set, 5, "megatron", &err), 0);
        int decoders = 0;
        for (int l = 0; l < j.cm.num_layers; l++) {
            const cm_layer *ly = &j.cm.layers[l];
            if (ly->cp_forward.steps <= 0)
                continue;
            decoders++;
            double block = ly->cp_forward.overlap_s / ly->cp_forward.steps;
            CU_ASSERT(ly->cp_forward.exposed_s > 0);
            ASSERT_REL(ly->recompute_s[RECOMPUTE_SELECTIVE], 2 * block + ly->cp_forward.exposed_s,
                       1e-9);
        }
        CU_ASSERT_EQUAL(decoders, 8);
        check_recompute_rings(&j, 1);
        test_job_free(&j);
    }
}

void register_context_parallel_tests(void)
{
    TEST_SUITE(
        "context_parallel",
        {"activations per CP rank are 1/c", test_activations_per_cp_rank_are_one_cth},
        {"the exchange is its alpha-beta formula", test_cp_exchange_is_its_alpha_beta_formula},
        {"the ring exchange on a flat platform is its formula",
         test_cp_ring_exchange_on_a_flat_platform_is_its_formula},
        {"a ring goes at its slowest edge", test_a_ring_goes_at_its_slowest_edge},
        {"CP peers in a server use the scale-up fabric",
         test_cp_peers_in_a_server_use_the_scale_up_fabric},
        {"the cluster counts tp x cp x dp x pp", test_the_cluster_counts_tp_cp_dp_pp},
        {"op lists carry the exchange and the CP gradient sync",
         test_op_lists_carry_the_exchange_and_the_cp_gradient_sync},
        {"selective recompute carries the ring with either kernel",
         test_selective_recompute_carries_the_ring_with_either_kernel});
}
