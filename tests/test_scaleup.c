/*
 * test_scaleup.c -- the scale-up fabric simulated as flows, PXN, and the
 * placement of ranks on NPUs.
 *
 * test_scaleup_16.xml is test_16npu.xml (two servers of 8 910b NPUs on a
 * 2-level fat tree) with scaleup_fabric="simulated": every NPU's scale-up
 * port is one link of B_u = 196e9 B/s and α_u/2 = 1 µs into a non-blocking
 * switch, so a transfer of S bytes inside a server alone takes α_u + S/B_u,
 * which is exactly cl_p2p_time(same node), the closed form that
 * test_16npu.xml uses.  The difference is contention: k transfers through
 * one port share B_u (α_u + kS/B_u) on the simulated fabric and do not on the
 * closed form.
 *
 * All-to-all among the N = 8 NPUs of a server, S bytes per NPU (S/N to each):
 *   - pairwise exchange (collective_alltoall.c): N−1 steps of one message
 *     per port, (N−1)(α_u + S/(N·B_u)) on both platforms (idle ports);
 *   - direct, all N(N−1) messages at once: each port sends N−1 messages of
 *     S/N and receives as many, so the last arrives at α_u + (N−1)S/(N·B_u);
 *     one more message of S/N from NPU 0 to NPU 1 makes port 0's up-link
 *     (and port 1's down-link) carry N messages, saturated throughout, so
 *     the all-to-all ends at α_u + S/B_u: the bandwidth term grows by
 *     N/(N−1) = 8/7.
 * PXN (test_rail_pxn_64.xml: rail-optimised, cross_rail_pxn=1, simulated
 * scale-up): NPU 0 to NPU 9 (server 1, rail 1) goes over the scale-up fabric
 * to NPU 1 (server 0, rail 1), then along rail 1 to NPU 9 (2 links, same
 * rail leaf), both legs at once: max(α_u + S/B_u, 2λ + S/B) = 2λ + S/B since
 * B < B_u; without PXN (test_rail_64.xml) the route crosses the spine, 4λ +
 * S/B.  A second transfer 1 -> 17 (rail 1) shares NPU 1's NIC with the
 * relayed one: both take 2λ + 2S/B.
 */
#include <math.h>
#include "fabric_run.h"
#include "placement.h"

#define BU 196e9
#define AU 2e-6
#define B_NIC 25e9
#define LAT 1e-6
#define S_BYTES 100e6
#define TOL 1e-6

static double run_one(const char *platform, fab_job *j, fab_out *o)
{
    j->platform = platform;
    CU_ASSERT_FATAL(fab_run(j, o, 0) == 0);
    CU_ASSERT_FATAL(o->rc == 0);
    double last = 0;
    for (int i = 0; i < j->num_transfers; i++)
        last = o->end_s[i] > last ? o->end_s[i] : last;
    return last;
}

static void test_idle_transfer_equals_closed_form(void)
{
    fab_job j = {0};
    fab_transfer(&j, 0, 5, S_BYTES);
    fab_route(&j, 0, 5);
    fab_out sim, closed;
    double t_sim = run_one("platforms/test_scaleup_16.xml", &j, &sim);
    double t_closed = run_one("platforms/test_16npu.xml", &j, &closed);
    CU_ASSERT_EQUAL(sim.scaleup_simulated, 1);
    CU_ASSERT_EQUAL(closed.scaleup_simulated, 0);
    ASSERT_REL(t_sim, AU + S_BYTES / BU, TOL);
    ASSERT_REL(t_closed, AU + S_BYTES / BU, TOL);
    ASSERT_REL(t_sim, cl_p2p_time(&sim.cluster, S_BYTES, 1), TOL);
    /* The scale-out route of the NPUs is untouched: 2 links in the leaf. */
    CU_ASSERT_EQUAL(sim.links[0], 2);
}

static void test_two_transfers_share_a_port(void)
{
    fab_job j = {0};
    fab_transfer(&j, 0, 1, S_BYTES);
    fab_transfer(&j, 0, 2, S_BYTES);
    fab_out o;
    ASSERT_REL(run_one("platforms/test_scaleup_16.xml", &j, &o), AU + 2 * S_BYTES / BU, TOL);
    ASSERT_REL(o.end_s[0], AU + 2 * S_BYTES / BU, TOL);
    /* The closed form queues the two legs at the port (transport_scaleup.c):
     * the last arrives when the shared port's flows do, the first after one
     * leg (it held the port alone).  Until 6 December 2026 both took
     * AU + S/BU: a closed-form leg shared nothing. */
    ASSERT_REL(run_one("platforms/test_16npu.xml", &j, &o), AU + 2 * S_BYTES / BU, TOL);
    ASSERT_REL(fmin(o.end_s[0], o.end_s[1]), AU + S_BYTES / BU, TOL);
    /* ... and at a receiving port: 1->0 and 2->0 */
    fab_job r = {0};
    fab_transfer(&r, 1, 0, S_BYTES);
    fab_transfer(&r, 2, 0, S_BYTES);
    ASSERT_REL(run_one("platforms/test_scaleup_16.xml", &r, &o), AU + 2 * S_BYTES / BU, TOL);
    ASSERT_REL(run_one("platforms/test_16npu.xml", &r, &o), AU + 2 * S_BYTES / BU, TOL);
    /* Transfers through different ports do not interact: 0->1 and 2->3;
     * nor do the two directions of one port: 0->1 and 1->0. */
    fab_job k = {0};
    fab_transfer(&k, 0, 1, S_BYTES);
    fab_transfer(&k, 2, 3, S_BYTES);
    ASSERT_REL(run_one("platforms/test_scaleup_16.xml", &k, &o), AU + S_BYTES / BU, TOL);
    ASSERT_REL(run_one("platforms/test_16npu.xml", &k, &o), AU + S_BYTES / BU, TOL);
    fab_job d = {0};
    fab_transfer(&d, 0, 1, S_BYTES);
    fab_transfer(&d, 1, 0, S_BYTES);
    ASSERT_REL(run_one("platforms/test_scaleup_16.xml", &d, &o), AU + S_BYTES / BU, TOL);
    ASSERT_REL(run_one("platforms/test_16npu.xml", &d, &o), AU + S_BYTES / BU, TOL);
}

static void test_pairwise_alltoall_in_a_server_equals_closed_form(void)
{
    const int n = 8;
    double expected = (n - 1) * (AU + S_BYTES / (n * BU));
    fab_job j = {.alltoall_n = n, .alltoall_bytes = S_BYTES};
    fab_out o;
    run_one("platforms/test_scaleup_16.xml", &j, &o);
    ASSERT_REL(o.alltoall_s, expected, TOL);
    run_one("platforms/test_16npu.xml", &j, &o);
    ASSERT_REL(o.alltoall_s, expected, TOL);
}

/* Concurrent (NCCL's grouped send/recv): on the simulated fabric the N−1
 * blocks share the port and take one latency, AU + (N−1)S/(N·BU); in closed
 * form a block is a delay that shares nothing, so the port sends them one
 * after the other, as pairwise steps: (N−1)(AU + S/(N·BU)). */
static void test_concurrent_alltoall_in_a_server_shares_the_port(void)
{
    const int n = 8;
    fab_job j = {.alltoall_n = n, .alltoall_bytes = S_BYTES, .alltoall_algorithm = COLL_CONCURRENT};
    fab_out o;
    run_one("platforms/test_scaleup_16.xml", &j, &o);
    ASSERT_REL(o.alltoall_s, AU + (n - 1) * S_BYTES / (n * BU), TOL);
    run_one("platforms/test_16npu.xml", &j, &o);
    ASSERT_REL(o.alltoall_s, (n - 1) * (AU + S_BYTES / (n * BU)), TOL);
}

static void test_direct_alltoall_slows_by_n_over_n_minus_1_with_one_more_flow(void)
{
    const int n = 8;
    fab_job j = {0};
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            if (a != b)
                fab_transfer(&j, a, b, S_BYTES / n);
    fab_job k = j;
    fab_transfer(&k, 0, 1, S_BYTES / n);
    fab_out o;
    double idle = run_one("platforms/test_scaleup_16.xml", &j, &o);
    double busy = run_one("platforms/test_scaleup_16.xml", &k, &o);
    ASSERT_REL(idle, AU + (n - 1) * S_BYTES / (n * BU), TOL);
    ASSERT_REL(busy, AU + S_BYTES / BU, TOL);
    ASSERT_REL((busy - AU) / (idle - AU), (double)n / (n - 1), TOL);
}

static void test_pxn_relays_cross_rail_traffic_over_the_scale_up_fabric(void)
{
    fab_job j = {0};
    fab_transfer(&j, 0, 9, S_BYTES);
    fab_route(&j, 1, 9); /* the relay's leg */
    fab_route(&j, 0, 9); /* without PXN */
    fab_out o;
    ASSERT_REL(run_one("platforms/test_rail_pxn_64.xml", &j, &o), 2 * LAT + S_BYTES / B_NIC, TOL);
    CU_ASSERT_EQUAL(o.cross_rail_pxn, 1);
    CU_ASSERT_EQUAL(o.links[0], 2);
    CU_ASSERT_EQUAL(o.links[1], 4);
    ASSERT_REL(run_one("platforms/test_rail_64.xml", &j, &o), 4 * LAT + S_BYTES / B_NIC, TOL);
    /* Same rail: no relay, the rail leaf only. */
    fab_job same = {0};
    fab_transfer(&same, 1, 9, S_BYTES);
    ASSERT_REL(run_one("platforms/test_rail_pxn_64.xml", &same, &o), 2 * LAT + S_BYTES / B_NIC,
               TOL);
    /* The relay's NIC is shared with NPU 1's own traffic on rail 1. */
    fab_job shared = {0};
    fab_transfer(&shared, 0, 9, S_BYTES);
    fab_transfer(&shared, 1, 17, S_BYTES);
    run_one("platforms/test_rail_pxn_64.xml", &shared, &o);
    ASSERT_REL(o.end_s[0], 2 * LAT + 2 * S_BYTES / B_NIC, TOL);
    ASSERT_REL(o.end_s[1], 2 * LAT + 2 * S_BYTES / B_NIC, TOL);
}

static void test_nvl72_domain_is_one_scale_up_fabric(void)
{
    /* GB200: B_u = 900e9 B/s, α_u = 1 µs; NPUs 0 and 71 share the domain,
     * 72 is the next one (scale-out). */
    fab_job j = {0};
    fab_transfer(&j, 0, 71, S_BYTES);
    fab_out o;
    ASSERT_REL(run_one("platforms/test_nvl72_144.xml", &j, &o), 1e-6 + S_BYTES / 900e9, TOL);
    CU_ASSERT_EQUAL(o.cluster.npus_per_node, 72);
    fab_job k = {0};
    fab_transfer(&k, 0, 71, S_BYTES);
    fab_transfer(&k, 35, 71, S_BYTES); /* shares port 71's down-link */
    ASSERT_REL(run_one("platforms/test_nvl72_144.xml", &k, &o), 1e-6 + 2 * S_BYTES / 900e9, TOL);
}

/* ---- placement -------------------------------------------------------------- */

static void test_default_placement_is_megatron_order(void)
{
    placement p;
    placement_init(&p);
    const int sizes[PLACE_DIMS] = {4, 2, 3, 5}; /* tp, cp, dp, pp */
    for (int s = 0; s < 5; s++)
        for (int d = 0; d < 3; d++)
            for (int c = 0; c < 2; c++)
                for (int r = 0; r < 4; r++)
                    CU_ASSERT_EQUAL(placement_rank(&p, sizes, r, c, d, s),
                                    r + 4 * (c + 2 * (d + 3 * s)));
    placement q;
    np_error err;
    CU_ASSERT_EQUAL(placement_parse("tp-cp-ep-dp-pp", "--placement", &q, &err), 0);
    CU_ASSERT_EQUAL(memcmp(&p, &q, sizeof p), 0);
    CU_ASSERT_EQUAL(placement_parse("tp-cp-dp-pp", "--placement", &q, &err), 0);
    CU_ASSERT_EQUAL(memcmp(&p, &q, sizeof p), 0);
}

static void test_other_orders_are_bijections_in_their_digits(void)
{
    placement p;
    np_error err;
    CU_ASSERT_FATAL(placement_parse("dp-tp-pp-cp", "--placement", &p, &err) == 0);
    const int sizes[PLACE_DIMS] = {2, 3, 4, 2}; /* tp, cp, dp, pp */
    int seen[48] = {0};
    for (int s = 0; s < 2; s++)
        for (int d = 0; d < 4; d++)
            for (int c = 0; c < 3; c++)
                for (int r = 0; r < 2; r++) {
                    int rank = placement_rank(&p, sizes, r, c, d, s);
                    /* dp fastest, then tp, pp, cp */
                    CU_ASSERT_EQUAL(rank, d + 4 * (r + 2 * (s + 2 * c)));
                    CU_ASSERT_FATAL(rank >= 0 && rank < 48);
                    seen[rank]++;
                }
    for (int i = 0; i < 48; i++)
        CU_ASSERT_EQUAL(seen[i], 1);
    char name[32];
    placement_name(&p, name, sizeof name);
    CU_ASSERT_STRING_EQUAL(name, "dp-tp-pp-cp");
}

static void test_bad_orders_are_refused(void)
{
    static const char *const bad[] = {
        "tp-cp-dp",     "tp-tp-dp-pp",  "ep-tp-cp-dp-pp", "tp-cp-ep-pp-dp",
        "tp-cp-dp-pp-", "tp--cp-dp-pp", "tp-cp-dp-xx",    ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        placement p;
        np_error err;
        np_error_clear(&err);
        CU_ASSERT_EQUAL(placement_parse(bad[i], "--placement", &p, &err), NP_EXIT_USAGE);
        CU_ASSERT_STRING_EQUAL(err.key, "--placement");
        CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "expected a rank order"));
    }
}

/* The engine follows the placement: a uniform 1F1B plan, p = 4 stages, 4
 * replicas, TP 1, on test_flat_16_4pn.xml (4 servers of 4 NPUs; between
 * servers α = 10 µs and B = 1e9 B/s, inside α_u = 2 µs and B_u = 4e9 B/s).
 * Megatron's order puts the 4 replicas of a stage in one server, so every
 * pipeline send crosses servers; "pp-tp-cp-dp" puts a whole pipeline in one
 * server, so every send stays inside.  Each send costs c = α + 1/B or c_u =
 * α_u + 1/B_u (the 1-byte activations of test_uniform_model), far below F =
 * 1 ms, so the critical path is the same k sends for both, and the pipeline
 * takes T_0 + k·c: T_0 = (m + p − 1)(F + B), the closed form without
 * communication (test_engine.c).  Whatever k, (T − T_0) / (T_u − T_0) is
 * then c / c_u, to SimGrid's time precision (dates rounded to about 1e-9 s
 * against k·c_u of some 4e-5 s: 1e-4 relative). */
static void test_engine_follows_the_placement(void)
{
    const int p = 4, m = 8;
    double times[2];
    for (int k = 0; k < 2; k++) {
        cm_model cm;
        plan pl;
        test_uniform_model(&cm, p);
        test_uniform_plan(&pl, p, m, 1, SCHED_1F1B);
        pl.data_parallel = cm.data_parallel = 4;
        for (int l = 0; l < cm.num_layers; l++) {
            cm.layers[l].forward_s = 1e-3;
            cm.layers[l].backward_s = 2e-3;
        }
        engine_options o;
        engine_init_options(&o);
        np_error err;
        if (k == 1)
            CU_ASSERT_FATAL(placement_parse("pp-tp-cp-dp", "--placement", &o.placement, &err) == 0);
        test_sim_result r;
        CU_ASSERT_FATAL(test_simulate_plan("platforms/test_flat_16_4pn.xml", &cm, &pl, &o, &r) ==
                        0);
        CU_ASSERT_FATAL(r.rc == 0);
        times[k] = r.pipeline_s;
        plan_free(&pl);
        cm_free(&cm);
    }
    double c = 10e-6 + 1 / 1e9, cu = 2e-6 + 1 / 4e9, t0 = (m + p - 1) * 3e-3;
    CU_ASSERT(times[1] > t0 && times[0] > times[1]);
    ASSERT_REL((times[0] - t0) / (times[1] - t0), c / cu, 1e-4);
}

/* A TP group across servers (placement_tp_across_servers): with servers of
 * 8, TP 2 and DP 8, "dp-tp-cp-pp" puts TP rank r of replica d, stage s on
 * NPU d + 8(r + 2s): ranks 0 and 8 of a group, two servers.  With DP 4 the
 * same order gives d + 4(r + 2s): 4 apart inside one server of 8. */
static void test_tp_groups_across_servers_are_found(void)
{
    placement p;
    np_error err;
    CU_ASSERT_FATAL(placement_parse("dp-tp-cp-pp", "--placement", &p, &err) == 0);
    const int wide[PLACE_DIMS] = {2, 1, 8, 2}, narrow[PLACE_DIMS] = {2, 1, 4, 2};
    placement_split where;
    CU_ASSERT_TRUE(placement_tp_across_servers(&p, wide, 8, &where));
    CU_ASSERT_EQUAL(where.first, 0);
    CU_ASSERT_EQUAL(where.tp_rank, 1);
    CU_ASSERT_EQUAL(where.rank, 8);
    CU_ASSERT_FALSE(placement_tp_across_servers(&p, narrow, 8, NULL));
    /* Megatron's order keeps a group of tp dividing the server in it; TP 1
     * has nothing to split; TP 16 on servers of 8 is across servers in any
     * order, and priced so without the flag. */
    placement q;
    placement_init(&q);
    CU_ASSERT_FALSE(placement_tp_across_servers(&q, wide, 8, NULL));
    const int tp1[PLACE_DIMS] = {1, 1, 8, 2}, tp16[PLACE_DIMS] = {16, 1, 2, 1};
    CU_ASSERT_FALSE(placement_tp_across_servers(&p, tp1, 8, NULL));
    CU_ASSERT_FALSE(placement_tp_across_servers(&p, tp16, 8, NULL));
    /* TP 4 on servers of 6 in Megatron's order: group 1 is NPUs 4..7. */
    const int odd[PLACE_DIMS] = {4, 1, 3, 1};
    CU_ASSERT_TRUE(placement_tp_across_servers(&q, odd, 6, &where));
    CU_ASSERT_EQUAL(where.replica, 1);
    /* The engine runs such a plan when its cost model was priced across
     * servers and refuses it otherwise: test_flat_16_4pn.xml (servers of
     * 4), TP 2, DP 4, PP 2, "dp-tp-cp-pp": NPUs d + 4(r + 2s). */
    cm_model cm;
    plan pl;
    test_uniform_model(&cm, 2);
    test_uniform_plan(&pl, 2, 4, 1, SCHED_1F1B);
    pl.data_parallel = cm.data_parallel = 4;
    pl.tensor_parallel = cm.tensor_parallel = 2;
    engine_options o;
    engine_init_options(&o);
    o.placement = p;
    test_sim_result r;
    CU_ASSERT_FATAL(test_simulate_plan_quiet("platforms/test_flat_16_4pn.xml", &cm, &pl, &o, &r) ==
                    0);
    CU_ASSERT_EQUAL(r.rc, NP_EXIT_INTERNAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.error, "--placement"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.error, "across servers"));
    cm.cluster.tp_across_servers = 1;
    CU_ASSERT_FATAL(test_simulate_plan("platforms/test_flat_16_4pn.xml", &cm, &pl, &o, &r) == 0);
    CU_ASSERT_EQUAL(r.rc, 0);
    plan_free(&pl);
    cm_free(&cm);
}

/* The cost model with TP across servers: small_llama.json (TP 2) on
 * servers of 8; each decoder layer's forward runs two all-reduces of the
 * n·h·D hidden state, a ring over the 2 ranks, 2(t − 1)(α + S/(t·B)),
 * at the scale-out α and B instead of the scale-up ones (at the bus
 * efficiency). */
static void test_tp_across_servers_is_priced_on_the_scale_out_route(void)
{
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load("workloads/small_llama.json", &w, &err), 0);
    cl_cluster c = test_npu_cluster(16, 8);
    cm_model in, across;
    CU_ASSERT_EQUAL_FATAL(cm_build(&w, &c, 0, &in, &err), 0);
    c.tp_across_servers = 1;
    CU_ASSERT_EQUAL_FATAL(cm_build(&w, &c, 0, &across, &err), 0);
    int t = w.parallel.tensor_model_parallel_size;
    CU_ASSERT_EQUAL_FATAL(t, 2);
    double S = (double)w.training.micro_batch_size * w.model.seq_length * w.model.hidden_size * 2;
    double out = 2.0 * (t - 1) * (c.scaleout_latency_s + S / (t * c.scaleout_bandwidth_Bps));
    double bus = c.collective_bus_efficiency > 0 ? c.collective_bus_efficiency : 1.0;
    double up = 2.0 * (t - 1) * (c.scaleup_latency_s + S / (t * c.scaleup_bandwidth_Bps * bus));
    CU_ASSERT(out > up);
    int l = 1; /* a decoder layer (0 is the embedding) */
    CU_ASSERT_EQUAL(across.layers[l].kind, CM_DECODER);
    ASSERT_REL(across.layers[l].tp_forward_s, 2.0 * out, 1e-12);
    ASSERT_REL(in.layers[l].tp_forward_s, 2.0 * up, 1e-12);
    CU_ASSERT(across.layers[l].forward_s == in.layers[l].forward_s); /* compute unchanged */
    cm_free(&in);
    cm_free(&across);
    wl_free(&w);
}

void register_scaleup_tests(void)
{
    TEST_SUITE("scaleup",
               {"idle transfer equals the closed form", test_idle_transfer_equals_closed_form},
               {"two transfers share a port", test_two_transfers_share_a_port},
               {"pairwise all-to-all in a server equals the closed form",
                test_pairwise_alltoall_in_a_server_equals_closed_form},
               {"concurrent all-to-all in a server shares the port",
                test_concurrent_alltoall_in_a_server_shares_the_port},
               {"direct all-to-all slows by N/(N-1) with one more flow",
                test_direct_alltoall_slows_by_n_over_n_minus_1_with_one_more_flow},
               {"PXN relays cross-rail traffic over the scale-up fabric",
                test_pxn_relays_cross_rail_traffic_over_the_scale_up_fabric},
               {"an NVL72 domain is one scale-up fabric", test_nvl72_domain_is_one_scale_up_fabric},
               {"default placement is Megatron's order", test_default_placement_is_megatron_order},
               {"other orders are bijections", test_other_orders_are_bijections_in_their_digits},
               {"bad orders are refused", test_bad_orders_are_refused},
               {"the engine follows the placement", test_engine_follows_the_placement},
               {"TP groups across servers are found; the engine needs the cost model to agree",
                test_tp_groups_across_servers_are_found},
               {"TP across servers is priced on the scale-out route",
                test_tp_across_servers_is_priced_on_the_scale_out_route});
}
