/*
 * platform.c -- loading a SimGrid platform and reading it as an NPU cluster.
 *
 * Four steps, each of which turns a bad platform into an np_error:
 *   1. the file, before SimGrid sees it (platform_file.c): a regular XML
 *      file with a versioned <platform> whose clusters SimGrid can build
 *      within the limits;
 *   2. simgrid_load_platform() with SimGrid's aborts caught
 *      (platform_trap.c);
 *   3. the hosts numbered here: sg_host_list() once (it walks and sorts,
 *      slow at 16K hosts), scale-up port hosts set apart
 *      (platform_fabric.c), rank = the number at the end of each NPU's
 *      name, ranks exactly 0..N-1;
 *   4. the cluster read from the hosts and links (platform_props.c), then
 *      the fabric's own properties and scale-up ports (platform_fabric.c).
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <simgrid/host.h>
#include <xbt/config.h>

#include "platform_internal.h"

long platform_rank_of_name(const char *name)
{
    size_t len = strlen(name), start = len;
    while (start > 0 && isdigit((unsigned char)name[start - 1]))
        start--;
    if (start == len || len - start > 9)
        return -1;
    return strtol(name + start, NULL, 10);
}

static int platform_number_hosts(const char *path, sg_host_t *hosts, int count, sim_platform *out,
                                 np_error *err)
{
    out->host_of_rank = calloc((size_t)count, sizeof *out->host_of_rank);
    if (!out->host_of_rank)
        return np_error_set(err, NP_EXIT_INTERNAL, path, "", 0, "out of memory for %d hosts",
                            count);
    for (int i = 0; i < count; i++) {
        const char *name = sg_host_get_name(hosts[i]);
        long rank = platform_rank_of_name(name);
        if (rank < 0)
            return np_error_set(err, NP_EXIT_INPUT, path, "", 0,
                                "host '%s' has no rank number at the end of its name "
                                "(expected names like npu-0 .. npu-%d)",
                                name, count - 1);
        if (rank >= count)
            return np_error_set(err, NP_EXIT_INPUT, path, "", 0,
                                "host '%s' has rank %ld, but the %d hosts must be numbered 0..%d",
                                name, rank, count, count - 1);
        if (out->host_of_rank[rank])
            return np_error_set(err, NP_EXIT_INPUT, path, "", 0,
                                "hosts '%s' and '%s' both have rank %ld",
                                sg_host_get_name(out->host_of_rank[rank]), name, rank);
        out->host_of_rank[rank] = hosts[i];
    }
    out->num_npus = count; /* count hosts, all ranks distinct and < count: 0..count-1 */
    return 0;
}

/* How SimGrid re-solves its max-min system on this fabric (platform_solver),
 * set before the network model is built.  Only the first platform of a
 * process is simulated (a second load is refused): later calls do nothing. */
static void set_solver(platform_solver solver)
{
    if (solver == SOLVER_SELECTIVE && sg_host_count() == 0)
        sg_cfg_set_boolean("network/maxmin-selective-update", "yes");
}

int platform_load_with(const char *path, const platform_limits *lim, sim_platform *out,
                       np_error *err)
{
    memset(out, 0, sizeof *out);
    np_error_clear(err);
    platform_scan scan;
    int rc = platform_precheck(path, lim, &scan, err);
    bool selective = !rc && lim->tune_solver && !scan.file_sets_solver &&
                     scan.solver == SOLVER_SELECTIVE && sg_host_count() == 0;
    if (!rc && lim->tune_solver && !scan.file_sets_solver)
        set_solver(scan.solver);
    if (!rc)
        rc = platform_load_into_simgrid(path, err);
    if (rc)
        return rc;
    /* sg_host_list() aborts ("There is no host!") on an empty platform. */
    size_t count = sg_host_count();
    if (count == 0 || count > (size_t)1 << 30)
        return np_error_set(err, NP_EXIT_INPUT, path, "", 0,
                            "the platform has %zu hosts: expected 1 to 2^30 NPUs", count);
    sg_host_t *hosts = sg_host_list();
    platform_ports ports = {NULL, NULL};
    int num_npus = 0;
    rc = platform_split_ports(path, hosts, (int)count, &num_npus, &ports, err);
    if (!rc && num_npus == 0)
        rc = np_error_set(err, NP_EXIT_INPUT, path, "", 0,
                          "the platform has no NPU host, only scale-up ports");
    if (!rc)
        rc = platform_number_hosts(path, hosts, num_npus, out, err);
    free(hosts);
    if (!rc)
        rc = platform_read_cluster(path, out, err);
    if (!rc)
        rc = platform_read_fabric(path, out, &ports, &scan.taper, err); /* takes what it accepts */
    platform_ports_free(&ports);
    if (rc)
        platform_free(out);
    else {
        out->cluster.fabric_taper = scan.taper;
        if (selective)
            memcpy(out->selective_update, scan.solver_cluster, sizeof out->selective_update);
        if (scan.fold_blocker[0])
            memcpy(out->fold_blocker, scan.fold_blocker, sizeof out->fold_blocker);
        else if (!out->fold_blocker[0] && scan.taper < 1) /* 16% fast folded at 4:1 */
            snprintf(out->fold_blocker, sizeof out->fold_blocker, "a tapered fat tree (%.2g:1)",
                     1 / scan.taper);
    }
    return rc;
}

int platform_load(const char *path, sim_platform *out, np_error *err)
{
    platform_limits lim;
    platform_init_limits(&lim);
    return platform_load_with(path, &lim, out, err);
}

void platform_free(sim_platform *p)
{
    free(p->host_of_rank);
    p->host_of_rank = NULL;
    free(p->scaleup_port_of_rank);
    p->scaleup_port_of_rank = NULL;
    free(p->plane1_port_of_rank);
    p->plane1_port_of_rank = NULL;
    p->nic_planes = 1;
    p->scaleup_simulated = 0;
    p->num_npus = 0;
}
