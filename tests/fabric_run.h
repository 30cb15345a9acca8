/*
 * fabric_run.h -- one platform loaded in a forked child (SimGrid holds one
 * platform per process), asked for routes and timed transfers: shared by
 * test_fabrics.c, test_scaleup.c and test_planes.c (static functions, included
 * once by each), and malformed variants of a shipped platform refused.
 */
#ifndef FABRIC_RUN_H
#define FABRIC_RUN_H

#include <simgrid/host.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <xbt/dynar.h>

#include "collective.h"
#include "platform.h"
#include "testutil.h"
#include "transport_bench.h"

#define FAB_MAX_ROUTES 8
#define FAB_MAX_TRANSFERS 96

typedef struct fab_job {
    const char *platform; /* relative to the source root, or absolute */
    int num_routes;
    int route_src[FAB_MAX_ROUTES], route_dst[FAB_MAX_ROUTES];
    int route_plane[FAB_MAX_ROUTES]; /* 1: between the NPUs' plane-1 ports (nic_planes=2) */
    int num_transfers;
    int src[FAB_MAX_TRANSFERS], dst[FAB_MAX_TRANSFERS];
    double bytes[FAB_MAX_TRANSFERS];
    int alltoall_n;                    /* > 0: then an all-to-all among NPUs 0..n-1 */
    coll_algorithm alltoall_algorithm; /* 0 (ring-flow, not an all-to-all): pairwise */
    double alltoall_bytes;             /* S per NPU */
    int ring_n, ring_tp; /* > 0: then a step-by-step ring all-reduce among ring_n members */
    double ring_bytes;   /* of ring_tp NPUs each (members on NPUs 0..n·tp−1), S per NPU */
} fab_job;

typedef struct fab_out {
    int rc;
    np_error err;
    cl_cluster cluster;
    int scaleup_simulated, cross_rail_pxn, nic_planes, plane_policy;
    int links[FAB_MAX_ROUTES];
    double route_lat[FAB_MAX_ROUTES], route_bw[FAB_MAX_ROUTES];
    double end_s[FAB_MAX_TRANSFERS];
    double alltoall_s, ring_s;
} fab_out;

static void fab_child(void *ctx, int fd)
{
    const fab_job *j = ctx;
    fab_out o;
    memset(&o, 0, sizeof o);
    test_simgrid_init();
    sim_platform pf;
    const char *path = j->platform[0] == '/' ? j->platform : test_path(j->platform);
    o.rc = platform_load(path, &pf, &o.err);
    if (!o.rc) {
        o.cluster = pf.cluster;
        o.scaleup_simulated = pf.scaleup_simulated;
        o.cross_rail_pxn = pf.cross_rail_pxn;
        o.nic_planes = pf.nic_planes;
        o.plane_policy = pf.plane_policy;
        xbt_dynar_t links = xbt_dynar_new(sizeof(sg_link_t), NULL);
        for (int i = 0; i < j->num_routes; i++) {
            sg_host_t *hosts = j->route_plane[i] ? pf.plane1_port_of_rank : pf.host_of_rank;
            if (!hosts) {
                o.links[i] = -1;
                continue;
            }
            sg_host_t a = hosts[j->route_src[i]], b = hosts[j->route_dst[i]];
            xbt_dynar_reset(links);
            sg_host_get_route(a, b, links);
            o.links[i] = (int)xbt_dynar_length(links);
            o.route_lat[i] = sg_host_get_route_latency(a, b);
            o.route_bw[i] = sg_host_get_route_bandwidth(a, b);
        }
        xbt_dynar_free(&links);
        if (j->num_transfers)
            o.rc =
                transport_bench(&pf, j->num_transfers, j->src, j->dst, j->bytes, o.end_s, &o.err);
        if (!o.rc && j->alltoall_n > 0) {
            coll_bench_spec s;
            coll_bench_init_spec(&s);
            s.kind = COLL_ALLTOALL;
            s.params.algorithm = j->alltoall_algorithm ? j->alltoall_algorithm : COLL_PAIRWISE;
            s.group_size = j->alltoall_n;
            s.bytes = j->alltoall_bytes;
            coll_bench_result r;
            o.rc = coll_bench_run(&pf, &s, &r, &o.err);
            o.alltoall_s = r.time_s;
        }
        if (!o.rc && j->ring_n > 0) {
            coll_bench_spec s;
            coll_bench_init_spec(&s);
            s.kind = COLL_ALLREDUCE;
            s.params.algorithm = COLL_RING;
            s.group_size = j->ring_n;
            s.tp = j->ring_tp;
            s.bytes = j->ring_bytes;
            coll_bench_result r;
            o.rc = coll_bench_run(&pf, &s, &r, &o.err);
            o.ring_s = r.time_s;
        }
    }
    test_write_all(fd, &o, sizeof o);
}

/* Runs j; 0 when the child delivered *o (o->rc says whether the load and
 * the transfers succeeded; a failure is printed unless quiet). */
static int fab_run(const fab_job *j, fab_out *o, int quiet)
{
    if (test_in_child(fab_child, (void *)j, o, sizeof *o) != 0) {
        fprintf(stderr, "\n  %s: the simulation child failed\n", j->platform);
        return -1;
    }
    if (o->rc && !quiet) {
        char buf[1024];
        np_error_format(&o->err, buf, sizeof buf);
        fprintf(stderr, "\n  %s: %s\n", j->platform, buf);
    }
    return 0;
}

static void fab_route(fab_job *j, int a, int b)
{
    j->route_src[j->num_routes] = a;
    j->route_dst[j->num_routes++] = b;
}

static inline void fab_route_on_plane(fab_job *j, int a, int b, int plane)
{
    j->route_plane[j->num_routes] = plane;
    fab_route(j, a, b);
}

static void fab_transfer(fab_job *j, int a, int b, double bytes)
{
    j->src[j->num_transfers] = a;
    j->dst[j->num_transfers] = b;
    j->bytes[j->num_transfers++] = bytes;
}

/* ---- malformed variants of a shipped platform ------------------------------ */

static inline void expect_refused(const char *relative, const char *from, const char *to,
                                  const char *key, const char *text)
{
    char path[64];
    CU_ASSERT_FATAL(test_write_variant(relative, from, to, path, sizeof path) == 0);
    fab_job j = {.platform = path};
    fab_out o;
    CU_ASSERT_FATAL(fab_run(&j, &o, 1) == 0);
    unlink(path);
    CU_ASSERT_EQUAL(o.rc, NP_EXIT_INPUT);
    if (strcmp(o.err.key, key) != 0 || !strstr(o.err.text, text))
        fprintf(stderr, "\n  variant '%s': key '%s', text '%s'\n", to, o.err.key, o.err.text);
    CU_ASSERT_STRING_EQUAL(o.err.key, key);
    CU_ASSERT_PTR_NOT_NULL(strstr(o.err.text, text));
}

#endif
