/*
 * test_fabrics.c -- the scale-out fabrics of platforms/fabrics.py against
 * their designs: route lengths (links) between chosen NPUs, one flow and two
 * flows sharing a bottleneck at their α–β times, a 4:1 tier making a
 * cross-pod shift four times slower, and malformed fabrics refused with a
 * clear error.
 *
 * Figures of the 910b preset (platforms/presets.py): NIC B = 25e9 B/s, link
 * latency λ = 1 µs; gb200: B = 50e9 B/s, λ = 0.5 µs.  A route of k links has
 * latency kλ, and with CM02 (no correction factors) a flow of S bytes alone
 * on it takes kλ + S/B; n flows sharing one link (max-min) take kλ + nS/B.
 * The route lengths are the designs' (docs/platform-format.md, Fabrics):
 *   3-tier Clos   same leaf 2, same pod 4 (leaf up, leaf down), across pods 6
 *   rail          same rail and SU 2 (the rail leaf), else 4 (through a spine)
 *   torus 4x4x4   one link per hop, shortest way round each ring: 0 -> 42
 *                 = (2,2,2) is 6 hops
 *   dragonfly     4 groups, 2 chassis, 4 routers, 2 hosts per router:
 *                 same router 2 (host links), same chassis 3 (+ a green
 *                 link), other chassis 3 (+ a black link), other group 4
 *                 (host, green to the router wired to that group, blue, host)
 */
#include <stdlib.h>
#include <unistd.h>

#include "fabric_run.h"

#define B_910B 25e9
#define LAT_910B 1e-6
#define S_BYTES 100e6
#define TOL 1e-6

static void expect_links(const char *platform, const int (*pairs)[3], int n)
{
    fab_job j = {.platform = platform};
    for (int i = 0; i < n; i++)
        fab_route(&j, pairs[i][0], pairs[i][1]);
    fab_out o;
    CU_ASSERT_FATAL(fab_run(&j, &o, 0) == 0);
    CU_ASSERT_FATAL(o.rc == 0);
    for (int i = 0; i < n; i++) {
        if (o.links[i] != pairs[i][2])
            fprintf(stderr, "\n  %s: route %d -> %d has %d links, expected %d\n", platform,
                    pairs[i][0], pairs[i][1], o.links[i], pairs[i][2]);
        CU_ASSERT_EQUAL(o.links[i], pairs[i][2]);
        ASSERT_REL(o.route_lat[i], pairs[i][2] * LAT_910B, 1e-12);
    }
}

static void test_clos3_route_lengths(void)
{
    /* 8 hosts per leaf, 2 leaves per pod: 0..7 leaf 0, 8..15 leaf 1 (pod 0),
     * 16.. pod 1. */
    static const int pairs[][3] = {{0, 1, 2},  {0, 7, 2},  {0, 8, 4}, {9, 0, 4},
                                   {0, 16, 6}, {0, 63, 6}, {40, 3, 6}};
    expect_links("platforms/test_clos3_64.xml", pairs, 7);
}

static void test_rail_route_lengths(void)
{
    /* 8 NPUs per server, 4 servers per SU: NPU 8s+i is on rail i. */
    static const int pairs[][3] = {{0, 8, 2}, {0, 24, 2}, {1, 9, 2}, {0, 32, 4},
                                   {0, 1, 4}, {0, 9, 4},  {63, 7, 4}};
    expect_links("platforms/test_rail_64.xml", pairs, 7);
}

static void test_torus_route_lengths(void)
{
    static const int pairs[][3] = {{0, 1, 1}, {0, 3, 1}, {0, 2, 2}, {0, 16, 1}, {0, 42, 6}};
    expect_links("platforms/test_torus_64.xml", pairs, 5);
}

static void test_dragonfly_route_lengths(void)
{
    /* rank = ((group·2 + chassis)·4 + router)·2 + host. */
    static const int pairs[][3] = {{0, 1, 2}, {0, 2, 3}, {0, 8, 3}, {0, 16, 4}};
    expect_links("platforms/test_dragonfly_64.xml", pairs, 4);
}

/* One flow alone, then two flows sharing a bottleneck, on each fabric:
 * kλ + S/B and kλ + 2S/B. */
typedef struct flow_case {
    const char *platform;
    int a, b;       /* the single flow */
    int a2, b2;     /* the second flow, sharing a link with the first */
    int links;      /* of both routes */
    double bw, lat; /* NIC and link figures of the preset */
} flow_case;

static void expect_flow_times(const flow_case *c)
{
    fab_job one = {.platform = c->platform};
    fab_transfer(&one, c->a, c->b, S_BYTES);
    fab_job two = one;
    fab_transfer(&two, c->a2, c->b2, S_BYTES);
    fab_out o1, o2;
    CU_ASSERT_FATAL(fab_run(&one, &o1, 0) == 0 && o1.rc == 0);
    CU_ASSERT_FATAL(fab_run(&two, &o2, 0) == 0 && o2.rc == 0);
    ASSERT_REL(o1.end_s[0], c->links * c->lat + S_BYTES / c->bw, TOL);
    ASSERT_REL(o2.end_s[0], c->links * c->lat + 2 * S_BYTES / c->bw, TOL);
    ASSERT_REL(o2.end_s[1], c->links * c->lat + 2 * S_BYTES / c->bw, TOL);
}

static void test_one_and_two_flows_on_every_fabric(void)
{
    static const flow_case cases[] = {
        /* across pods; the second leaves the same NIC for another pod */
        {"platforms/test_clos3_64.xml", 0, 16, 0, 40, 6, B_910B, LAT_910B},
        /* same rail and SU; two flows from NPU 0's NIC */
        {"platforms/test_rail_64.xml", 0, 8, 0, 16, 2, B_910B, LAT_910B},
        /* cross-rail (and cross-server) through the spine */
        {"platforms/test_rail_64.xml", 0, 9, 0, 10, 4, B_910B, LAT_910B},
        /* neighbours on the torus (0 -> 16: next in the third ring, another
         * server): twice the same link */
        {"platforms/test_torus_64.xml", 0, 16, 0, 16, 1, B_910B, LAT_910B},
        /* other group; the second from the other host of the same router
         * shares the receiver's link */
        {"platforms/test_dragonfly_64.xml", 0, 16, 1, 16, 4, B_910B, LAT_910B},
        /* GB200 NVL72 domains on a Clos: across the two pods */
        {"platforms/test_nvl72_144.xml", 0, 72, 1, 72, 6, 50e9, 0.5e-6},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_flow_times(&cases[i]);
}

/* test_clos3_64.xml: 4 pods of 16 NICs, leaves 1:1, pod tier 4:1 (each
 * pod's up-link carries 16·B/4).  Every NIC sending to the NIC 16 ranks on
 * (the next pod): 16 flows share each pod up-link, B/4 each, so the shift
 * takes 6λ + 4S/B against 6λ + S/B for one flow alone. */
static void test_oversubscription_4_to_1_slows_a_cross_pod_shift_4x(void)
{
    fab_job j = {.platform = "platforms/test_clos3_64.xml"};
    for (int i = 0; i < 64; i++)
        fab_transfer(&j, i, (i + 16) % 64, S_BYTES);
    fab_out o;
    CU_ASSERT_FATAL(fab_run(&j, &o, 0) == 0 && o.rc == 0);
    double last = 0;
    for (int i = 0; i < 64; i++)
        last = o.end_s[i] > last ? o.end_s[i] : last;
    ASSERT_REL(last, 6 * LAT_910B + 4 * S_BYTES / B_910B, TOL);
    ASSERT_REL(o.end_s[0], 6 * LAT_910B + 4 * S_BYTES / B_910B, TOL);
    ASSERT_REL(o.cluster.fabric_taper, 0.25, 1e-12);
    /* The same shift inside the pods (i -> i xor 8: the other leaf) crosses
     * only 1:1 leaf up-links: S/B. */
    fab_job k = {.platform = "platforms/test_clos3_64.xml"};
    for (int i = 0; i < 64; i++)
        fab_transfer(&k, i, i ^ 8, S_BYTES);
    CU_ASSERT_FATAL(fab_run(&k, &o, 0) == 0 && o.rc == 0);
    ASSERT_REL(o.end_s[0], 4 * LAT_910B + S_BYTES / B_910B, TOL);
}

/* ---- malformed fabrics ------------------------------------------------------ */

static void test_malformed_fabrics_are_refused(void)
{
    const char *df = "platforms/test_dragonfly_64.xml", *su = "platforms/test_scaleup_16.xml";
    /* SimGrid 3.32 would read past its router tables (a segfault) */
    expect_refused(df, "topo_parameters=\"4,1;2,1;4,1;2\"", "topo_parameters=\"8,1;2,1;4,1;1\"",
                   "topo_parameters", "routers per chassis");
    expect_refused(df, "topo_parameters=\"4,1;2,1;4,1;2\"", "topo_parameters=\"4,1;2;4,1;2\"",
                   "topo_parameters", "DRAGONFLY: expected");
    expect_refused(su, "value=\"simulated\"", "value=\"yes\"", "scaleup_fabric",
                   "\"closed_form\" or \"simulated\"");
    expect_refused(su, "<prop id=\"npusim_port\" value=\"scaleup\"/>", "", "npusim_port",
                   "'sup-0' is named like a scale-up port");
    expect_refused("platforms/test_16npu.xml", "<prop id=\"npus_per_node\" value=\"8\"/>",
                   "<prop id=\"npus_per_node\" value=\"8\"/><prop id=\"scaleup_fabric\" "
                   "value=\"simulated\"/>",
                   "scaleup_fabric", "needs a scale-up port host per NPU");
    expect_refused(su, "<prop id=\"scaleup_fabric\" value=\"simulated\"/>", "", "scaleup_fabric",
                   "do not say scaleup_fabric");
    expect_refused(su, "prefix=\"sup-\" radical=\"0-15\"", "prefix=\"sup-\" radical=\"0-14\"",
                   "npusim_port", "15 scale-up port hosts for 16 NPUs");
    expect_refused(su, "prefix=\"sup-\" radical=\"0-15\"", "prefix=\"sup-\" radical=\"1-16\"",
                   "npusim_port", "'sup-16' names an NPU rank out of range");
    expect_refused(su, "<prop id=\"npusim_port\" value=\"scaleup\"/>",
                   "<prop id=\"npusim_port\" value=\"nvlink\"/>", "npusim_port",
                   "expected \"scaleup\"");
    expect_refused("platforms/test_rail_64.xml", "id=\"cross_rail_pxn\" value=\"0\"",
                   "id=\"cross_rail_pxn\" value=\"2\"", "cross_rail_pxn", "expected 0 or 1");
    expect_refused("platforms/test_clos3_64.xml", "id=\"fabric_taper\" value=\"0.25\"",
                   "id=\"fabric_taper\" value=\"4\"", "fabric_taper",
                   "expected a number in (0, 1]");
}

void register_fabrics_tests(void)
{
    TEST_SUITE("fabrics", {"3-tier Clos route lengths", test_clos3_route_lengths},
               {"rail-optimised route lengths", test_rail_route_lengths},
               {"torus route lengths", test_torus_route_lengths},
               {"dragonfly route lengths", test_dragonfly_route_lengths},
               {"one and two flows on every fabric", test_one_and_two_flows_on_every_fabric},
               {"4:1 oversubscription slows a cross-pod shift 4x",
                test_oversubscription_4_to_1_slows_a_cross_pod_shift_4x},
               {"malformed fabrics are refused", test_malformed_fabrics_are_refused});
}
