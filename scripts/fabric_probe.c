/*
 * fabric_probe.c -- loads one platform with npusim's reader and prints what
 * a fabric benchmark needs: load time, peak RSS, and the route (links,
 * bandwidth, latency) between pairs of NPU ranks.  Built and run by
 * scripts/bench_fabrics.sh (not part of the CMake build):
 *   fabric_probe PLATFORM.xml [A:B ...]
 * prints "load_s=... cpu_s=... rss_kb=... npus=... per_node=..." (cpu_s: the
 * process's CPU time so far, start-up included) then, per pair,
 * "route A B links=L bw=... lat=...".
 */
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <xbt/dynar.h>

#include "platform.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: fabric_probe PLATFORM.xml [A:B ...]\n");
        return 2;
    }
    int sg_argc = 1;
    char *sg_argv[] = {argv[0], "--log=root.thresh:critical", NULL};
    sg_argc = 2;
    simgrid_init(&sg_argc, sg_argv);
    double t = now_s();
    sim_platform pf;
    np_error err;
    platform_limits lim;
    platform_init_limits(&lim);
    if (platform_load_with(argv[1], &lim, &pf, &err)) {
        char buf[1024];
        np_error_format(&err, buf, sizeof buf);
        fprintf(stderr, "fabric_probe: %s\n", buf);
        return 2;
    }
    double load = now_s() - t;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = ru.ru_utime.tv_sec + 1e-6 * ru.ru_utime.tv_usec + ru.ru_stime.tv_sec +
                 1e-6 * ru.ru_stime.tv_usec;
    printf("load_s=%.3f cpu_s=%.3f rss_kb=%ld npus=%d per_node=%d\n", load, cpu, ru.ru_maxrss,
           pf.num_npus, pf.cluster.npus_per_node);
    for (int i = 2; i < argc; i++) {
        int a, b;
        if (sscanf(argv[i], "%d:%d", &a, &b) != 2 || a < 0 || b < 0 || a >= pf.num_npus ||
            b >= pf.num_npus) {
            fprintf(stderr, "fabric_probe: bad pair '%s'\n", argv[i]);
            return 2;
        }
        xbt_dynar_t links = xbt_dynar_new(sizeof(sg_link_t), NULL);
        sg_host_get_route(pf.host_of_rank[a], pf.host_of_rank[b], links);
        printf("route %d %d links=%lu bw=%g lat=%g\n", a, b, xbt_dynar_length(links),
               sg_host_get_route_bandwidth(pf.host_of_rank[a], pf.host_of_rank[b]),
               sg_host_get_route_latency(pf.host_of_rank[a], pf.host_of_rank[b]));
        xbt_dynar_free(&links);
    }
    platform_free(&pf);
    return 0;
}
