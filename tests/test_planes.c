/*
 * test_planes.c -- the dual-plane rail fabric (Alibaba HPN, SIGCOMM 2024;
 * docs/platform-format.md, Dual-plane) against its design.
 *
 * test_rail_2plane_64.xml is test_rail_64.xml (8 servers of 8 910b NPUs, 4
 * servers per scalable unit, rail-optimised) with two NIC planes: every NIC
 * is two ports of B_p = 25e9 / 2 = 12.5e9 B/s, port 0 the NPU host on plane
 * 0, port 1 the host pl1-R on plane 1, each plane a copy of the rail fabric
 * (link latency λ = 1 µs).  Per plane, the routes are the rail design's:
 * same rail and SU 2 links, anything else 4 (through that plane's spine).
 * With CM02 a flow of S bytes alone on a route of k links takes kλ + S/B_p,
 * and n flows sharing a port's link kλ + nS/B_p (max-min).  The transport:
 *   split (the default): two flows of S/2, one per plane: kλ + S/(2·B_p),
 *     which equals one plane of NIC bandwidth 2·B_p (test_rail_64.xml);
 *   hash: the whole transfer on the plane transport_plane_hash(a, b) picks
 *     (the low bit of MurmurHash3's finaliser of a·0x9E3779B1 XOR b, written
 *     out again below): kλ + S/B_p.  By that formula 0 -> 8, 0 -> 24 and
 *     0 -> 9 go on plane 1, 0 -> 16 and 2 -> 11 on plane 0.
 */
#include <stdint.h>

#include "fabric_run.h"
#include "transport_scaleup.h"

#define BP 12.5e9 /* one port */
#define LAM 1e-6
#define S_BYTES 100e6
#define TOL 1e-6
#define DUAL "platforms/test_rail_2plane_64.xml"
#define POLICY_SPLIT "<prop id=\"nic_plane_policy\" value=\"split\"/>"
#define POLICY_HASH "<prop id=\"nic_plane_policy\" value=\"hash\"/>"

/* Runs j on `platform`, or on DUAL with `from` replaced by `to` when from is
 * given; the job must succeed. */
static void run_variant(fab_job *j, const char *from, const char *to, fab_out *o)
{
    char path[64];
    j->platform = DUAL;
    if (from) {
        CU_ASSERT_FATAL(test_write_variant(DUAL, from, to, path, sizeof path) == 0);
        j->platform = path;
    }
    int rc = fab_run(j, o, 0);
    if (from)
        unlink(path);
    CU_ASSERT_FATAL(rc == 0);
    CU_ASSERT_FATAL(o->rc == 0);
}

static void test_route_lengths_on_each_plane(void)
{
    /* NPU 8s+i is on rail i; SU 0 = servers 0-3 (NPUs 0-31). */
    static const int pairs[][3] = {{0, 8, 2}, {0, 24, 2}, {1, 9, 2}, {0, 32, 4}, {0, 1, 4}};
    for (int plane = 0; plane < 2; plane++) {
        fab_job j = {0};
        for (int i = 0; i < 5; i++)
            fab_route_on_plane(&j, pairs[i][0], pairs[i][1], plane);
        fab_out o;
        run_variant(&j, NULL, NULL, &o);
        CU_ASSERT_EQUAL(o.nic_planes, 2);
        for (int i = 0; i < 5; i++) {
            CU_ASSERT_EQUAL(o.links[i], pairs[i][2]);
            ASSERT_REL(o.route_lat[i], pairs[i][2] * LAM, 1e-12);
            ASSERT_REL(o.route_bw[i], BP, 1e-12);
        }
    }
}

static void test_reader_sees_both_ports_when_split(void)
{
    fab_job j = {0};
    fab_out o;
    run_variant(&j, NULL, NULL, &o);
    CU_ASSERT_EQUAL(o.plane_policy, PLANE_SPLIT);
    ASSERT_REL(o.cluster.scaleout_bandwidth_Bps, 2 * BP, 1e-12); /* a transfer gets both */
    ASSERT_REL(o.cluster.scaleout_latency_s, 2 * LAM, 1e-12);    /* NPU 0 -> 8: rail 0 */
    run_variant(&j, POLICY_SPLIT, POLICY_HASH, &o);
    CU_ASSERT_EQUAL(o.plane_policy, PLANE_HASH);
    ASSERT_REL(o.cluster.scaleout_bandwidth_Bps, BP, 1e-12); /* one port */
}

static void test_split_transfer_takes_s_over_two_ports(void)
{
    fab_job j = {0};
    fab_transfer(&j, 0, 8, S_BYTES);  /* same rail and SU: 2 links per plane */
    fab_transfer(&j, 3, 35, S_BYTES); /* rail 3, other SU: 4 links */
    fab_out o;
    run_variant(&j, NULL, NULL, &o);
    ASSERT_REL(o.end_s[0], 2 * LAM + S_BYTES / (2 * BP), TOL);
    ASSERT_REL(o.end_s[1], 4 * LAM + S_BYTES / (2 * BP), TOL);
    /* The same as one plane of twice the port bandwidth, for split messages. */
    j.platform = "platforms/test_rail_64.xml";
    CU_ASSERT_FATAL(fab_run(&j, &o, 0) == 0 && o.rc == 0);
    ASSERT_REL(o.end_s[0], 2 * LAM + S_BYTES / (2 * BP), TOL);
}

/* The documented hash, written from its description. */
static int plane_of(int a, int b)
{
    uint32_t h = (uint32_t)a * 2654435761u ^ (uint32_t)b;
    h = (h ^ (h >> 16)) * 0x85EBCA6Bu;
    h = (h ^ (h >> 13)) * 0xC2B2AE35u;
    return (int)((h ^ (h >> 16)) & 1);
}

static void test_the_hash_is_the_documented_one(void)
{
    static const int pairs[][3] = {{0, 8, 1}, {0, 24, 1}, {0, 9, 1}, {0, 16, 0}, {2, 11, 0}};
    for (int i = 0; i < 5; i++) {
        CU_ASSERT_EQUAL(transport_plane_hash(pairs[i][0], pairs[i][1]), pairs[i][2]);
        CU_ASSERT_EQUAL(plane_of(pairs[i][0], pairs[i][1]), pairs[i][2]);
    }
    int ones = 0; /* no structure: about half of the pairs on each plane */
    for (int a = 0; a < 64; a++)
        for (int b = 0; b < 64; b++) {
            CU_ASSERT_EQUAL(transport_plane_hash(a, b), plane_of(a, b));
            ones += plane_of(a, b);
        }
    CU_ASSERT(ones > 64 * 64 * 45 / 100 && ones < 64 * 64 * 55 / 100);
}

static void test_one_flow_on_one_plane_takes_s_over_one_port(void)
{
    fab_job j = {0};
    fab_transfer(&j, 0, 16, S_BYTES); /* plane 0, rail 0: 2 links */
    fab_transfer(&j, 2, 11, S_BYTES); /* plane 0, cross-rail: its spine, 4 links */
    fab_out o;
    run_variant(&j, POLICY_SPLIT, POLICY_HASH, &o);
    ASSERT_REL(o.end_s[0], 2 * LAM + S_BYTES / BP, TOL);
    ASSERT_REL(o.end_s[1], 4 * LAM + S_BYTES / BP, TOL);
}

static void test_two_flows_sharing_a_port(void)
{
    /* hash: 0 -> 8 and 0 -> 24 both on plane 1, sharing NPU 0's port 1. */
    fab_job j = {0};
    fab_transfer(&j, 0, 8, S_BYTES);
    fab_transfer(&j, 0, 24, S_BYTES);
    fab_out o;
    run_variant(&j, POLICY_SPLIT, POLICY_HASH, &o);
    ASSERT_REL(o.end_s[0], 2 * LAM + 2 * S_BYTES / BP, TOL);
    ASSERT_REL(o.end_s[1], 2 * LAM + 2 * S_BYTES / BP, TOL);
    /* 0 -> 16 on plane 0, 0 -> 9 on plane 1: the planes do not interact. */
    fab_job k = {0};
    fab_transfer(&k, 0, 16, S_BYTES);
    fab_transfer(&k, 0, 9, S_BYTES);
    run_variant(&k, POLICY_SPLIT, POLICY_HASH, &o);
    ASSERT_REL(o.end_s[0], 2 * LAM + S_BYTES / BP, TOL);
    ASSERT_REL(o.end_s[1], 4 * LAM + S_BYTES / BP, TOL);
    /* split: each port carries two halves, 2·(S/2)/B_p. */
    run_variant(&j, NULL, NULL, &o);
    ASSERT_REL(o.end_s[0], 2 * LAM + S_BYTES / BP, TOL);
    ASSERT_REL(o.end_s[1], 2 * LAM + S_BYTES / BP, TOL);
}

/* A ring all-reduce of S per NPU among the 4 servers of SU 0, every TP rank
 * its own ring on its rail (ring edges NPU r+8i -> r+8(i+1), 2 links), N = 4
 * steps of S/N, 2(N−1) of them: split, each message on both ports,
 * 2(N−1)(2λ + S/(N·2B_p)); hash, each message whole on one port: every
 * NPU sends one message and receives one per step, so whatever planes the
 * hash picks no two share a port (a plane is non-blocking), 2(N−1)(2λ +
 * S/(N·B_p)): half the bandwidth of the split. */
static void test_ring_allreduce_on_both_planes_or_one(void)
{
    const int n = 4;
    fab_job j = {.ring_n = n, .ring_tp = 8, .ring_bytes = S_BYTES};
    fab_out o;
    run_variant(&j, NULL, NULL, &o);
    ASSERT_REL(o.ring_s, 2 * (n - 1) * (2 * LAM + S_BYTES / (n * 2 * BP)), TOL);
    run_variant(&j, POLICY_SPLIT, POLICY_HASH, &o);
    ASSERT_REL(o.ring_s, 2 * (n - 1) * (2 * LAM + S_BYTES / (n * BP)), TOL);
}

/* PXN on the dual-plane fabric (closed-form scale-up): 0 -> 9 relays over
 * the scale-up fabric to NPU 1 (α_u + S/B_u = 2 µs + S/196e9, about 0.5 ms)
 * and crosses rail 1's leaf on both planes from NPU 1 (2λ + S/(2·B_p), 4
 * ms): the slower leg sets the time. */
static void test_pxn_relay_uses_both_planes(void)
{
    fab_job j = {0};
    fab_transfer(&j, 0, 9, S_BYTES);
    fab_out o;
    run_variant(&j, "id=\"cross_rail_pxn\" value=\"0\"", "id=\"cross_rail_pxn\" value=\"1\"", &o);
    CU_ASSERT_EQUAL(o.cross_rail_pxn, 1);
    ASSERT_REL(o.end_s[0], 2 * LAM + S_BYTES / (2 * BP), TOL);
}

static void test_malformed_planes_are_refused(void)
{
    const char *rail = "platforms/test_rail_64.xml";
    expect_refused(DUAL, "id=\"nic_planes\" value=\"2\"", "id=\"nic_planes\" value=\"3\"",
                   "nic_planes", "expected 1 or 2");
    expect_refused(DUAL, POLICY_SPLIT, "<prop id=\"nic_plane_policy\" value=\"ecmp\"/>",
                   "nic_plane_policy", "expected \"split\" or \"hash\"");
    expect_refused(DUAL, "<prop id=\"nic_planes\" value=\"2\"/>", "", "nic_planes",
                   "do not say nic_planes=\"2\"");
    expect_refused(DUAL, "<prop id=\"npusim_port\" value=\"plane1\"/>", "", "npusim_port",
                   "'pl1-0' is named like a plane-1 port");
    expect_refused(DUAL, "prefix=\"pl1-\" radical=\"0,", "prefix=\"pl1-\" radical=\"64,",
                   "npusim_port", "plane-1 port host 'pl1-64' names an NPU rank out of range");
    expect_refused(DUAL, "speed=\"1f\"\n             bw=\"12.5e9Bps\"",
                   "speed=\"1f\"\n             bw=\"10e9Bps\"", "nic_planes",
                   "the two planes must be identical");
    expect_refused(rail, "<prop id=\"cross_rail_pxn\" value=\"0\"/>",
                   "<prop id=\"cross_rail_pxn\" value=\"0\"/><prop id=\"nic_planes\" value=\"2\"/>",
                   "nic_planes", "needs a plane-1 port host per NPU");
    expect_refused(rail, "<prop id=\"cross_rail_pxn\" value=\"0\"/>",
                   "<prop id=\"cross_rail_pxn\" value=\"0\"/>" POLICY_HASH, "nic_plane_policy",
                   "one NIC plane");
}

void register_planes_tests(void)
{
    TEST_SUITE(
        "planes", {"route lengths on each plane", test_route_lengths_on_each_plane},
        {"the reader sees both ports when split", test_reader_sees_both_ports_when_split},
        {"a split transfer takes S/(2 B_port)", test_split_transfer_takes_s_over_two_ports},
        {"the hash is the documented one", test_the_hash_is_the_documented_one},
        {"one flow on one plane takes S/B_port", test_one_flow_on_one_plane_takes_s_over_one_port},
        {"two flows sharing a port", test_two_flows_sharing_a_port},
        {"a ring all-reduce on both planes or one", test_ring_allreduce_on_both_planes_or_one},
        {"a PXN relay uses both planes", test_pxn_relay_uses_both_planes},
        {"malformed planes are refused", test_malformed_planes_are_refused});
}
