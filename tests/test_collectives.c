/*
 * test_collectives.c -- every collective algorithm against its α–β formula.
 *
 * The platforms platforms/test_flat_{4,8,16}.xml give every NPU one private
 * full-duplex link of 1e9 B/s and 5 µs, so a route between two NPUs is two
 * links: latency α = 10 µs, bandwidth B = 1e9 B/s, and the only links two
 * flows can share are a sender's up-link and a receiver's down-link (check the
 * XML).  test_flat_16_4pn.xml is the same fabric with 4 NPUs per server and a
 * scale-up fabric of α_u = 2 µs, B_u = 4e9 B/s.  Each simulation runs in a
 * forked child (SimGrid holds one platform per process) through
 * coll_bench_run(), which runs one collective among N workers on NPUs 0..N−1.
 *
 * The formulas (derived in each test's comment; collective_*.c derive the
 * same from the algorithms) come from the α–β model of Hockney (1994) as used
 * by Thakur, Rabenseifner & Gropp, IJHPCA 2005.  S is one NPU's vector.
 */
#include <string.h>

#include "collective.h"
#include "testutil.h"

#define ALPHA_S 10e-6
#define B_BPS 1e9
#define MAX_RUNS 8

typedef struct bench_batch {
    const char *platform;
    int count;
    coll_bench_spec specs[MAX_RUNS];
} bench_batch;

typedef struct bench_outcome {
    int rc;
    char error[512];
    coll_bench_result results[MAX_RUNS];
} bench_outcome;

static void run_batch(void *ctx, int fd)
{
    const bench_batch *b = ctx;
    bench_outcome out;
    memset(&out, 0, sizeof out);
    np_error err;
    np_error_clear(&err);
    sim_platform pf;
    test_simgrid_init();
    out.rc = platform_load(test_path(b->platform), &pf, &err);
    for (int i = 0; !out.rc && i < b->count; i++)
        out.rc = coll_bench_run(&pf, &b->specs[i], &out.results[i], &err);
    if (out.rc)
        np_error_format(&err, out.error, sizeof out.error);
    test_write_all(fd, &out, sizeof out);
}

static coll_bench_spec spec_of(coll_kind kind, coll_algorithm a, int n, double bytes)
{
    coll_bench_spec s;
    coll_bench_init_spec(&s);
    s.kind = kind;
    s.params.algorithm = a;
    s.group_size = n;
    s.bytes = bytes;
    return s;
}

/* Simulates the batch; times[i] is the simulated time of specs[i]. */
static int simulate(const bench_batch *b, double *times)
{
    bench_outcome out;
    if (test_in_child(run_batch, (void *)b, &out, sizeof out) != 0) {
        fprintf(stderr, "\n  %s: the simulation child failed\n", b->platform);
        return -1;
    }
    if (out.rc) {
        fprintf(stderr, "\n  %s: %s\n", b->platform, out.error);
        return -1;
    }
    for (int i = 0; i < b->count; i++)
        times[i] = out.results[i].time_s;
    return 0;
}

/* The group sizes tested: one platform each. */
static const struct {
    const char *platform;
    int n;
} flat[] = {
    {"platforms/test_flat_4.xml", 4},
    {"platforms/test_flat_8.xml", 8},
    {"platforms/test_flat_16.xml", 16},
};
#define NUM_FLAT ((int)(sizeof flat / sizeof flat[0]))
static const double sizes_bytes[] = {1e6, 48e6};
#define NUM_SIZES ((int)(sizeof sizes_bytes / sizeof sizes_bytes[0]))

typedef double (*formula_fn)(int n, double bytes);

/* Runs (kind, a) for every flat platform and size; checks against f. */
static void check_flat(coll_kind kind, coll_algorithm a, int radix, formula_fn f)
{
    for (int p = 0; p < NUM_FLAT; p++) {
        bench_batch b = {.platform = flat[p].platform, .count = NUM_SIZES};
        for (int i = 0; i < NUM_SIZES; i++) {
            b.specs[i] = spec_of(kind, a, flat[p].n, sizes_bytes[i]);
            b.specs[i].params.radix = radix;
        }
        double t[MAX_RUNS];
        CU_ASSERT_EQUAL_FATAL(simulate(&b, t), 0);
        for (int i = 0; i < NUM_SIZES; i++)
            ASSERT_REL(t[i], f(flat[p].n, sizes_bytes[i]), 1e-6);
    }
}

static double log_base(int n, int r)
{
    int m = 0;
    while (n > 1) {
        n /= r;
        m++;
    }
    return m;
}

/* ---- all-reduce ------------------------------------------------------------ */

/* Ring, step by step: 2(N−1) steps (N−1 reduce-scatter, N−1 all-gather); in
 * each, every member sends S/N to its successor over its own up-link and the
 * successor's down-link, which no other flow uses in that step: α + S/(N·B). */
static double ring_allreduce_s(int n, double s)
{
    return 2.0 * (n - 1) * (ALPHA_S + s / (n * B_BPS));
}

static void test_ring_allreduce_is_2_n_minus_1_steps(void)
{
    check_flat(COLL_ALLREDUCE, COLL_RING, 0, ring_allreduce_s);
}

/* Flow-level ring: one flow of 2(N−1)/N·S per ring edge (α + 2(N−1)S/(N·B))
 * then (2N−3)·α of the remaining steps' latencies: the step ring's time. */
static void test_ring_flow_allreduce_matches_step_ring_formula(void)
{
    check_flat(COLL_ALLREDUCE, COLL_RING_FLOW, 0, ring_allreduce_s);
}

/* Recursive halving then doubling: log2 N stages each way; stage j sends one
 * message of S/2^(j+1) (halving) and the doubling mirrors it, so the bytes
 * per direction sum to S(1/2 + 1/4 + … + 1/N) = (N−1)/N·S:
 * 2·log2(N)·α + 2(N−1)/N·S/B. */
static double halving_doubling_s(int n, double s)
{
    return 2.0 * log_base(n, 2) * ALPHA_S + 2.0 * (n - 1) / n * s / B_BPS;
}

static void test_halving_doubling_allreduce_is_2_log2_n_latencies(void)
{
    check_flat(COLL_ALLREDUCE, COLL_HALVING_DOUBLING, 0, halving_doubling_s);
}

/* Radix-R butterfly, N = R^m: stage j sends R−1 messages of S/R^(j+1) at
 * once; they share the sender's up-link (and each receiver's down-link takes
 * R−1 such flows), so each runs at B/(R−1) and the stage lasts
 * α + (R−1)·S/(R^(j+1)·B).  Summed over j < m: (R−1)·S/B·(1/R + … + 1/R^m)
 * = (1 − 1/N)·S/B.  All-reduce = both phases:
 *   2·log_R(N)·α + 2(N−1)/N·S/B. */
static double butterfly4_s(int n, double s)
{
    return 2.0 * log_base(n, 4) * ALPHA_S + 2.0 * (n - 1) / n * s / B_BPS;
}

static void test_butterfly_radix4_allreduce_is_2_log4_n_latencies(void)
{
    /* N = 4, 16 are powers of 4; N = 8 = 4·2 runs radices 4 then 2: two
     * stages, the same bandwidth term (see the mixed-radix test). */
    bench_batch b = {.platform = "platforms/test_flat_16.xml", .count = 4};
    b.specs[0] = spec_of(COLL_ALLREDUCE, COLL_BUTTERFLY, 4, 1e6);
    b.specs[1] = spec_of(COLL_ALLREDUCE, COLL_BUTTERFLY, 4, 48e6);
    b.specs[2] = spec_of(COLL_ALLREDUCE, COLL_BUTTERFLY, 16, 1e6);
    b.specs[3] = spec_of(COLL_ALLREDUCE, COLL_BUTTERFLY, 16, 48e6);
    double t[MAX_RUNS];
    CU_ASSERT_EQUAL_FATAL(simulate(&b, t), 0);
    for (int i = 0; i < b.count; i++)
        ASSERT_REL(t[i], butterfly4_s(b.specs[i].group_size, b.specs[i].bytes), 1e-6);
}

/* Mixed radix: stage j of radix r_j sends r_j − 1 messages of
 * S/(r_0·…·r_j) sharing the NIC: α + (r_j − 1)·S/(r_0·…·r_j·B); the sum
 * telescopes to (N−1)/N·S/B for any factorisation.  N = 12 with R = 4 runs
 * radices 4, 3; N = 16 with R = 8 runs 8, 2; N = 6 with R = 4 runs 3, 2:
 * two stages each, so 2·2·α + 2(N−1)/N·S/B. */
static void test_butterfly_mixed_radix_keeps_ring_bandwidth_term(void)
{
    bench_batch b = {.platform = "platforms/test_flat_16.xml", .count = 3};
    b.specs[0] = spec_of(COLL_ALLREDUCE, COLL_BUTTERFLY, 12, 24e6);
    b.specs[1] = spec_of(COLL_ALLREDUCE, COLL_BUTTERFLY, 16, 24e6);
    b.specs[1].params.radix = 8;
    b.specs[2] = spec_of(COLL_ALLREDUCE, COLL_BUTTERFLY, 6, 24e6);
    double t[MAX_RUNS];
    CU_ASSERT_EQUAL_FATAL(simulate(&b, t), 0);
    for (int i = 0; i < b.count; i++) {
        double n = b.specs[i].group_size;
        ASSERT_REL(t[i], 4 * ALPHA_S + 2 * (n - 1) / n * 24e6 / B_BPS, 1e-6);
    }
}

/* Hierarchical on 4 servers of 4 NPUs (test_flat_16_4pn.xml): reduce-scatter
 * inside each server, L−1 = 3 scale-up steps of S/4 (α_u + S/(4·B_u) each);
 * the 4 members of a server then run 4 independent flow rings across the
 * M = 4 servers on S/4 bytes, 2(M−1)(α + S/(4·M·B)), on private links; then
 * 3 more scale-up steps.  8 members (servers 0 and 1): L = 4, M = 2. */
static void test_hierarchical_allreduce_is_two_scaleup_rings_and_an_inter_ring(void)
{
    const double alpha_u = 2e-6, b_u = 4e9, s = 32e6;
    bench_batch b = {.platform = "platforms/test_flat_16_4pn.xml", .count = 3};
    b.specs[0] = spec_of(COLL_ALLREDUCE, COLL_HIERARCHICAL, 16, s);
    b.specs[1] = spec_of(COLL_ALLREDUCE, COLL_HIERARCHICAL, 8, s);
    /* Halving-doubling across the 4 servers: 2·2·α + 2·3/4·(S/4)/B. */
    b.specs[2] = spec_of(COLL_ALLREDUCE, COLL_HIERARCHICAL, 16, s);
    b.specs[2].params.inter_algorithm = COLL_HALVING_DOUBLING;
    double t[MAX_RUNS];
    CU_ASSERT_EQUAL_FATAL(simulate(&b, t), 0);
    const int l = 4;
    double intra = 2.0 * (l - 1) * (alpha_u + s / (l * b_u));
    ASSERT_REL(t[0], intra + 2.0 * 3 * (ALPHA_S + s / (16 * B_BPS)), 1e-6);
    ASSERT_REL(t[1], intra + 2.0 * 1 * (ALPHA_S + s / (8 * B_BPS)), 1e-6);
    ASSERT_REL(t[2], intra + 4 * ALPHA_S + 2.0 * 3 / 4 * (s / l) / B_BPS, 1e-6);
}

/* A ring over servers of several members (test_flat_16_4pn.xml: 4 NPUs per
 * server).  The step ring is one ring: it mixes fast scale-up edges with slow
 * NIC edges and can only be bounded: at most the slow edge's pace
 * 2(N−1)(α + S/(N·B)), at least the 2(N−1) chunks of S/N every slow edge
 * carries at B.  The flow ring runs L = 4 channels of S/L (NCCL's rings, one
 * per NIC; collective.h): every member sends 1/L of its 2(N−1)/N·S to the
 * next server on its own NIC (α + 2(N−1)/N·S/(L·B)) and the rest to its
 * successor in the server on the scale-up fabric (α_u + (L−1)/L·2(N−1)/N·S/B_u,
 * shorter here), then waits 2N−3 step latencies, each the mean of a channel
 * ring's edges, λ = ((L−1)·α_u + α)/L (the steps pipeline around the ring):
 *   α + 2(N−1)/N·S/(L·B) + (2N−3)·λ,
 * the ring formula with the server's L NICs and the channel's mean latency.  Runs of unequal length
 * (6 members: 4 + 2) keep one ring at the slow edge's pace; TP 2 (8 members of 2 NPUs, 2 per
 * server) gives each TP rank's channels L = 2. */
static void test_ring_over_servers_runs_a_channel_per_nic(void)
{
    const double s = 32e6;
    bench_batch b = {.platform = "platforms/test_flat_16_4pn.xml", .count = 5};
    b.specs[0] = spec_of(COLL_ALLREDUCE, COLL_RING, 16, s);
    b.specs[1] = spec_of(COLL_ALLREDUCE, COLL_RING_FLOW, 16, s);
    b.specs[2] = spec_of(COLL_ALLREDUCE, COLL_RING_FLOW, 8, s);
    b.specs[3] = spec_of(COLL_ALLREDUCE, COLL_RING_FLOW, 6, s);
    b.specs[4] = spec_of(COLL_ALLREDUCE, COLL_RING_FLOW, 8, s);
    b.specs[4].tp = 2;
    double t[MAX_RUNS];
    CU_ASSERT_EQUAL_FATAL(simulate(&b, t), 0);
    CU_ASSERT(t[0] <= ring_allreduce_s(16, s) * (1 + 1e-6));
    CU_ASSERT(t[0] >= 2.0 * 15 * s / (16 * B_BPS));
    const double alpha_u = 2e-6, l4 = (3 * alpha_u + ALPHA_S) / 4, l2 = (alpha_u + ALPHA_S) / 2;
    ASSERT_REL(t[1], ALPHA_S + 2.0 * 15 / 16 * s / (4 * B_BPS) + 29 * l4, 1e-6);
    ASSERT_REL(t[2], ALPHA_S + 2.0 * 7 / 8 * s / (4 * B_BPS) + 13 * l4, 1e-6);
    ASSERT_REL(t[3], ring_allreduce_s(6, s), 1e-6);
    ASSERT_REL(t[4], ALPHA_S + 2.0 * 7 / 8 * s / (2 * B_BPS) + 13 * l2, 1e-6);
}

/* The channel rings' peers, checked by walking them: for every channel c,
 * starting at member c of server 0, L−1 moves to the successor in the
 * server and then one to the next server visit all n members once and come
 * back; across the L channels every member leaves its server exactly once
 * (its NIC carries one channel); and a member's peer in the next server has
 * its position (the same rail) except on the wrap to server 0. */
static void test_channel_ring_peers_form_one_ring_per_channel(void)
{
    const int shapes[][2] = {{1, 5}, {4, 1}, {4, 4}, {2, 3}, {8, 3}, {8, 16}, {3, 4}};
    for (size_t x = 0; x < sizeof shapes / sizeof shapes[0]; x++) {
        int local = shapes[x][0], servers = shapes[x][1], n = local * servers;
        int leaves[128] = {0};
        for (int c = 0; c < local; c++) {
            int seen[128] = {0}, me = c, moves = 0;
            do {
                coll_ring_peers p;
                coll_ring_peers_of(n, local, me, &p);
                CU_ASSERT_FALSE(seen[me]);
                seen[me] = 1;
                moves++;
                bool leave = local == 1 || moves % local == 0;
                int next = leave ? p.inter_next : p.intra_next;
                coll_ring_peers q;
                coll_ring_peers_of(n, local, next, &q);
                CU_ASSERT_EQUAL(leave ? q.inter_prev : q.intra_prev, me);
                if (leave && servers > 1) {
                    leaves[me]++;
                    CU_ASSERT_NOT_EQUAL(next / local, me / local);
                    if (me / local + 1 < servers)
                        CU_ASSERT_EQUAL(next % local, me % local);
                }
                me = next;
            } while (me != c && moves <= n);
            CU_ASSERT_EQUAL(moves, n);
        }
        for (int m = 0; servers > 1 && m < n; m++)
            CU_ASSERT_EQUAL(leaves[m], 1);
    }
}

static long server_of_rank(const void *ctx, int i) { return ((const long *)ctx)[i]; }

/* Members per server: runs of equal length that divide n, else 1. */
static void test_channel_ring_local_needs_equal_runs(void)
{
    const long even[] = {0, 0, 0, 1, 1, 1, 2, 2, 2}, uneven[] = {0, 0, 0, 0, 1, 1};
    const long split[] = {0, 0, 1, 1, 0, 0}, alone[] = {0, 1, 2, 3};
    CU_ASSERT_EQUAL(coll_ring_local(9, server_of_rank, even), 3);
    CU_ASSERT_EQUAL(coll_ring_local(6, server_of_rank, uneven), 1);
    CU_ASSERT_EQUAL(coll_ring_local(6, server_of_rank, split), 2); /* runs, not servers */
    CU_ASSERT_EQUAL(coll_ring_local(4, server_of_rank, alone), 1);
    CU_ASSERT_EQUAL(coll_ring_local(3, server_of_rank, even), 3); /* one server */
}

/* With one member per server (1 NPU per node) hierarchical is its
 * inter-server algorithm alone: the ring formula. */
static void test_hierarchical_with_one_member_per_server_is_the_inter_ring(void)
{
    check_flat(COLL_ALLREDUCE, COLL_HIERARCHICAL, 0, ring_allreduce_s);
}

/* Every TP rank runs its own ring on its own NIC: 4 members × 2 NPUs on
 * 8 NPUs are two disjoint rings, each at the one-rank time. */
static void test_tp_ranks_run_their_rings_in_parallel(void)
{
    bench_batch b = {.platform = "platforms/test_flat_8.xml", .count = 2};
    b.specs[0] = spec_of(COLL_ALLREDUCE, COLL_RING, 4, 8e6);
    b.specs[0].tp = 2;
    b.specs[1] = spec_of(COLL_ALLREDUCE, COLL_RING_FLOW, 4, 8e6);
    b.specs[1].tp = 2;
    double t[MAX_RUNS];
    CU_ASSERT_EQUAL_FATAL(simulate(&b, t), 0);
    ASSERT_REL(t[0], ring_allreduce_s(4, 8e6), 1e-6);
    ASSERT_REL(t[1], ring_allreduce_s(4, 8e6), 1e-6);
}

/* ---- reduce-scatter and all-gather ---------------------------------------- */

/* Ring: N−1 steps of one S/N chunk to the successor: (N−1)(α + S/(N·B)).
 * The flow ring sends the N−1 chunks in one flow, α + (N−1)S/(N·B), then
 * waits (N−2)·α: the same. */
static double ring_half_s(int n, double s) { return (n - 1) * (ALPHA_S + s / (n * B_BPS)); }

static void test_ring_reduce_scatter_is_n_minus_1_steps(void)
{
    check_flat(COLL_REDUCE_SCATTER, COLL_RING, 0, ring_half_s);
    check_flat(COLL_REDUCE_SCATTER, COLL_RING_FLOW, 0, ring_half_s);
}

static void test_ring_allgather_is_n_minus_1_steps(void)
{
    check_flat(COLL_ALLGATHER, COLL_RING, 0, ring_half_s);
    check_flat(COLL_ALLGATHER, COLL_RING_FLOW, 0, ring_half_s);
}

/* Halving (reduce-scatter) or doubling (all-gather) alone: one phase of the
 * all-reduce above, log2(N)·α + (N−1)/N·S/B. */
static double halving_s(int n, double s)
{
    return log_base(n, 2) * ALPHA_S + (double)(n - 1) / n * s / B_BPS;
}

static void test_recursive_halving_reduce_scatter_is_log2_n_latencies(void)
{
    check_flat(COLL_REDUCE_SCATTER, COLL_HALVING_DOUBLING, 0, halving_s);
}

static void test_recursive_doubling_allgather_is_log2_n_latencies(void)
{
    check_flat(COLL_ALLGATHER, COLL_HALVING_DOUBLING, 0, halving_s);
}

/* ---- all-to-all ------------------------------------------------------------ */

/* Pairwise: step k sends the S/N block for i+k and receives the one from
 * i−k; one flow out of and into every NIC: N−1 steps of α + S/(N·B). */
static void test_pairwise_alltoall_is_n_minus_1_steps(void)
{
    check_flat(COLL_ALLTOALL, COLL_PAIRWISE, 0, ring_half_s);
}

/* Concurrent (NCCL's grouped send/recv): the N−1 blocks leave at once and
 * share the NIC: one latency, then (N−1)·S/(N·B). */
static double concurrent_s(int n, double s) { return ALPHA_S + (n - 1) * s / (n * B_BPS); }

static void test_concurrent_alltoall_is_one_latency(void)
{
    check_flat(COLL_ALLTOALL, COLL_CONCURRENT, 0, concurrent_s);
}

/* Bruck: step k (2^k < N) sends, to i + 2^k, the blocks whose index has bit
 * k set; counted here by brute force over the N block indices.  One flow per
 * NIC per step: Σ_k (α + c_k·S/(N·B)) = log2(N)·(α + S/(2B)) for N = 2^m. */
static double bruck_s(int n, double s)
{
    double t = 0;
    for (int k = 0; (1 << k) < n; k++) {
        int blocks = 0;
        for (int j = 0; j < n; j++)
            blocks += (j >> k) & 1;
        t += ALPHA_S + blocks * s / (n * B_BPS);
    }
    return t;
}

static void test_bruck_alltoall_is_ceil_log2_n_steps(void)
{
    check_flat(COLL_ALLTOALL, COLL_BRUCK, 0, bruck_s);
    ASSERT_REL(bruck_s(16, 1e6), 4 * (ALPHA_S + 1e6 / (2 * B_BPS)), 1e-12);
}

/* N not a power of two: N = 6 on 8 NPUs, N = 12 on 16: ⌈log2 N⌉ = 3, 4 steps
 * carrying c = (3, 2, 2) and (6, 6, 4, 4) blocks. */
static void test_bruck_alltoall_handles_n_not_a_power_of_two(void)
{
    bench_batch b8 = {.platform = "platforms/test_flat_8.xml", .count = 1};
    b8.specs[0] = spec_of(COLL_ALLTOALL, COLL_BRUCK, 6, 6e6);
    bench_batch b16 = {.platform = "platforms/test_flat_16.xml", .count = 1};
    b16.specs[0] = spec_of(COLL_ALLTOALL, COLL_BRUCK, 12, 12e6);
    double t8[MAX_RUNS], t16[MAX_RUNS];
    CU_ASSERT_EQUAL_FATAL(simulate(&b8, t8), 0);
    CU_ASSERT_EQUAL_FATAL(simulate(&b16, t16), 0);
    ASSERT_REL(t8[0], 3 * ALPHA_S + 7 * 1e6 / B_BPS, 1e-6);
    ASSERT_REL(t16[0], 4 * ALPHA_S + 20 * 1e6 / B_BPS, 1e-6);
}

/* ---- contention ------------------------------------------------------------ */

typedef struct flows_case {
    int count;
    int src[4], dst[4];
    double bytes;
} flows_case;

typedef struct flows_outcome {
    int rc;
    double time_s[2]; /* one flow alone, then all of them */
} flows_outcome;

static void run_flows(void *ctx, int fd)
{
    const flows_case *c = ctx;
    flows_outcome out = {0};
    np_error err;
    sim_platform pf;
    coll_bench_result one, all;
    test_simgrid_init();
    out.rc = platform_load(test_path("platforms/test_flat_4.xml"), &pf, &err);
    if (!out.rc)
        out.rc = coll_bench_flows(&pf, 1, c->src, c->dst, c->bytes, &one, &err);
    if (!out.rc)
        out.rc = coll_bench_flows(&pf, c->count, c->src, c->dst, c->bytes, &all, &err);
    out.time_s[0] = one.time_s;
    out.time_s[1] = all.time_s;
    test_write_all(fd, &out, sizeof out);
}

/* A flow alone takes α + S/B; two flows sharing one link get B/2 each
 * (max-min fairness) once their common latency α has elapsed: α + 2S/B, so
 * the transfer part takes exactly twice as long. */
static void check_two_flows_share(const flows_case *c)
{
    flows_outcome out;
    CU_ASSERT_EQUAL_FATAL(test_in_child(run_flows, (void *)c, &out, sizeof out), 0);
    CU_ASSERT_EQUAL_FATAL(out.rc, 0);
    ASSERT_REL(out.time_s[0], ALPHA_S + c->bytes / B_BPS, 1e-6);
    ASSERT_REL(out.time_s[1] - ALPHA_S, 2 * (out.time_s[0] - ALPHA_S), 1e-6);
}

static void test_two_flows_into_one_npu_take_twice_as_long(void)
{
    flows_case c = {.count = 2, .src = {0, 1}, .dst = {2, 2}, .bytes = 50e6};
    check_two_flows_share(&c); /* share NPU 2's down-link */
}

static void test_two_flows_out_of_one_npu_take_twice_as_long(void)
{
    flows_case c = {.count = 2, .src = {0, 0}, .dst = {1, 3}, .bytes = 50e6};
    check_two_flows_share(&c); /* share NPU 0's up-link */
}

/* Full duplex: 0 → 1 and 1 → 0 use different links and do not slow down. */
static void test_opposite_flows_do_not_share(void)
{
    flows_case c = {.count = 2, .src = {0, 1}, .dst = {1, 0}, .bytes = 50e6};
    flows_outcome out;
    CU_ASSERT_EQUAL_FATAL(test_in_child(run_flows, (void *)&c, &out, sizeof out), 0);
    CU_ASSERT_EQUAL_FATAL(out.rc, 0);
    ASSERT_REL(out.time_s[1], ALPHA_S + c.bytes / B_BPS, 1e-6);
}

/* ---- names and options ----------------------------------------------------- */

static void test_algorithm_names_round_trip(void)
{
    for (int a = 0; a < COLL_ALGORITHM_COUNT; a++)
        CU_ASSERT_EQUAL(coll_algorithm_by_name(coll_algorithm_name(a)), a);
    CU_ASSERT_EQUAL(coll_algorithm_by_name("halving-doubling"), COLL_HALVING_DOUBLING);
    CU_ASSERT_EQUAL(coll_algorithm_by_name("ring-flow"), COLL_RING_FLOW);
    CU_ASSERT_EQUAL(coll_algorithm_by_name("Ring"), COLL_RING); /* any case */
    CU_ASSERT_EQUAL(coll_algorithm_by_name("HALVING-DOUBLING"), COLL_HALVING_DOUBLING);
    CU_ASSERT_EQUAL(coll_algorithm_by_name("rin"), -1);
    CU_ASSERT_EQUAL(coll_algorithm_by_name(""), -1);
    CU_ASSERT_EQUAL(coll_algorithm_by_name(NULL), -1);
}

static void test_alltoall_algorithms_do_not_reduce(void)
{
    CU_ASSERT_FALSE(coll_algorithm_supports(COLL_PAIRWISE, COLL_ALLREDUCE));
    CU_ASSERT_FALSE(coll_algorithm_supports(COLL_BRUCK, COLL_REDUCE_SCATTER));
    CU_ASSERT_FALSE(coll_algorithm_supports(COLL_CONCURRENT, COLL_ALLGATHER));
    CU_ASSERT_FALSE(coll_algorithm_supports(COLL_RING, COLL_ALLTOALL));
    CU_ASSERT_TRUE(coll_algorithm_supports(COLL_BUTTERFLY, COLL_ALLGATHER));
    CU_ASSERT_TRUE(coll_algorithm_supports(COLL_HIERARCHICAL, COLL_ALLREDUCE));
    char names[256];
    coll_algorithm_list(COLL_ALLTOALL, names, sizeof names);
    CU_ASSERT_STRING_EQUAL(names, "pairwise, bruck, concurrent");
}

static void test_check_options_names_the_bad_option(void)
{
    engine_options o;
    memset(&o, 0, sizeof o);
    o.dp_algorithm = COLL_BRUCK;
    o.ep_alltoall_algorithm = COLL_PAIRWISE;
    np_error err;
    np_error_clear(&err);
    CU_ASSERT_EQUAL(coll_check_options(&o, &err), NP_EXIT_USAGE);
    CU_ASSERT_STRING_EQUAL(err.key, "--dp-algorithm");
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "halving-doubling"));
    o.dp_algorithm = COLL_BUTTERFLY;
    o.dp_radix = 1;
    CU_ASSERT_EQUAL(coll_check_options(&o, &err), NP_EXIT_USAGE);
    CU_ASSERT_STRING_EQUAL(err.key, "--dp-radix");
    o.dp_radix = 8;
    CU_ASSERT_EQUAL(coll_check_options(&o, &err), 0);
}

void register_collectives_tests(void)
{
    TEST_SUITE(
        "collectives",
        {"ring_allreduce_is_2_n_minus_1_steps", test_ring_allreduce_is_2_n_minus_1_steps},
        {"ring_flow_allreduce_matches_step_ring_formula",
         test_ring_flow_allreduce_matches_step_ring_formula},
        {"halving_doubling_allreduce_is_2_log2_n_latencies",
         test_halving_doubling_allreduce_is_2_log2_n_latencies},
        {"butterfly_radix4_allreduce_is_2_log4_n_latencies",
         test_butterfly_radix4_allreduce_is_2_log4_n_latencies},
        {"butterfly_mixed_radix_keeps_ring_bandwidth_term",
         test_butterfly_mixed_radix_keeps_ring_bandwidth_term},
        {"hierarchical_allreduce_is_two_scaleup_rings_and_an_inter_ring",
         test_hierarchical_allreduce_is_two_scaleup_rings_and_an_inter_ring},
        {"hierarchical_with_one_member_per_server_is_the_inter_ring",
         test_hierarchical_with_one_member_per_server_is_the_inter_ring},
        {"ring_over_servers_runs_a_channel_per_nic", test_ring_over_servers_runs_a_channel_per_nic},
        {"channel_ring_peers_form_one_ring_per_channel",
         test_channel_ring_peers_form_one_ring_per_channel},
        {"channel_ring_local_needs_equal_runs", test_channel_ring_local_needs_equal_runs},
        {"tp_ranks_run_their_rings_in_parallel", test_tp_ranks_run_their_rings_in_parallel},
        {"ring_reduce_scatter_is_n_minus_1_steps", test_ring_reduce_scatter_is_n_minus_1_steps},
        {"ring_allgather_is_n_minus_1_steps", test_ring_allgather_is_n_minus_1_steps},
        {"recursive_halving_reduce_scatter_is_log2_n_latencies",
         test_recursive_halving_reduce_scatter_is_log2_n_latencies},
        {"recursive_doubling_allgather_is_log2_n_latencies",
         test_recursive_doubling_allgather_is_log2_n_latencies},
        {"pairwise_alltoall_is_n_minus_1_steps", test_pairwise_alltoall_is_n_minus_1_steps},
        {"bruck_alltoall_is_ceil_log2_n_steps", test_bruck_alltoall_is_ceil_log2_n_steps},
        {"concurrent_alltoall_is_one_latency", test_concurrent_alltoall_is_one_latency},
        {"bruck_alltoall_handles_n_not_a_power_of_two",
         test_bruck_alltoall_handles_n_not_a_power_of_two},
        {"two_flows_into_one_npu_take_twice_as_long",
         test_two_flows_into_one_npu_take_twice_as_long},
        {"two_flows_out_of_one_npu_take_twice_as_long",
         test_two_flows_out_of_one_npu_take_twice_as_long},
        {"opposite_flows_do_not_share", test_opposite_flows_do_not_share},
        {"algorithm_names_round_trip", test_algorithm_names_round_trip},
        {"alltoall_algorithms_do_not_reduce", test_alltoall_algorithms_do_not_reduce},
        {"check_options_names_the_bad_option", test_check_options_names_the_bad_option});
}
