/*
 * platform_fabric.c -- what a platform says about its fabrics beyond the
 * NPU properties of platform_props.c:
 *
 *   - port hosts: a host with the property npusim_port="scaleup" is not an
 *     NPU but the scale-up port of the NPU whose rank ends its name
 *     (sup-<rank>), one per NPU, used when the platform's scaleup_fabric is
 *     "simulated" (transport_scaleup.c); one with npusim_port="plane1" is the
 *     second NIC port of a dual-plane platform (pl1-<rank>, transport.c).
 *     They are set apart before the NPUs are numbered;
 *   - scaleup_fabric ("closed_form", the default, or "simulated"),
 *     cross_rail_pxn (0, the default, or 1) and fabric_taper (a fraction in
 *     (0, 1], default 1: the fabric's most tapered tier for a fabric built of
 *     zones, where the reader cannot see a FAT_TREE's topo_parameters), each
 *     the same text on every NPU like every other property;
 *   - dual-plane NICs: nic_planes ("1", the default, or "2") and
 *     nic_plane_policy ("split", the default, or "hash"), and the plane-1
 *     port hosts (npusim_port="plane1", pl1-<rank>), one per NPU, whose
 *     fabric must reach every server with plane 0's route figures.
 * Every problem is an np_error naming the property or the host.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <simgrid/host.h>

#include "platform_internal.h"

#define PORT_PROPERTY "npusim_port"

/* The kinds of port hosts: the value of their npusim_port property and the
 * prefix of their names (<prefix><rank>). */
enum { PORT_SCALEUP = 0, PORT_PLANE1, PORT_KINDS };
static const char *const port_role[PORT_KINDS] = {"scaleup", "plane1"};
static const char *const port_prefix[PORT_KINDS] = {"sup-", "pl1-"};
static const char *const port_what[PORT_KINDS] = {"scale-up port", "plane-1 port"};

static int port_kind(const char *role)
{
    for (int k = 0; k < PORT_KINDS; k++)
        if (strcmp(role, port_role[k]) == 0)
            return k;
    return -1;
}

/* ports[rank] for the port hosts of one kind among hosts[0..count) (the
 * non-NPU hosts), one per NPU. */
static int index_ports(const char *path, sg_host_t *hosts, int count, int kind, int n,
                       sg_host_t **ports, np_error *err)
{
    int num = 0;
    for (int i = 0; i < count; i++)
        num += port_kind(sg_host_get_property_value(hosts[i], PORT_PROPERTY)) == kind;
    if (num == 0)
        return 0;
    if (num != n)
        return np_error_set(err, NP_EXIT_INPUT, path, PORT_PROPERTY, 0,
                            "%d %s hosts for %d NPUs: expected one port per NPU (%s0 .. %s%d)", num,
                            port_what[kind], n, port_prefix[kind], port_prefix[kind], n - 1);
    *ports = calloc((size_t)n, sizeof **ports);
    if (!*ports)
        return np_error_set(err, NP_EXIT_INTERNAL, path, "", 0, "out of memory");
    for (int i = 0; i < count; i++) {
        if (port_kind(sg_host_get_property_value(hosts[i], PORT_PROPERTY)) != kind)
            continue;
        const char *name = sg_host_get_name(hosts[i]);
        long rank = platform_rank_of_name(name);
        const char *problem = rank < 0         ? "has no NPU rank at the end of its name"
                              : rank >= n      ? "names an NPU rank out of range"
                              : (*ports)[rank] ? "is the second port of its NPU"
                                               : NULL;
        if (problem)
            return np_error_set(err, NP_EXIT_INPUT, path, PORT_PROPERTY, 0,
                                "%s host '%s' %s (expected %s0 .. %s%d, one per NPU)",
                                port_what[kind], name, problem, port_prefix[kind],
                                port_prefix[kind], n - 1);
        (*ports)[rank] = hosts[i];
    }
    return 0;
}

void platform_ports_free(platform_ports *ports)
{
    free(ports->scaleup);
    free(ports->plane1);
    ports->scaleup = ports->plane1 = NULL;
}

int platform_split_ports(const char *path, sg_host_t *hosts, int count, int *num_npus,
                         platform_ports *ports, np_error *err)
{
    ports->scaleup = ports->plane1 = NULL;
    int n = 0;
    for (int i = 0; i < count; i++) { /* NPUs first, in their order; ports after */
        const char *name = sg_host_get_name(hosts[i]);
        const char *role = sg_host_get_property_value(hosts[i], PORT_PROPERTY);
        if (role && port_kind(role) < 0)
            return np_error_set(err, NP_EXIT_INPUT, path, PORT_PROPERTY,
                                platform_prop_line(path, PORT_PROPERTY),
                                "host '%s': expected \"scaleup\" (a scale-up port host) or "
                                "\"plane1\" (a plane-1 NIC port host), got \"%s\"",
                                name, role);
        for (int k = 0; !role && k < PORT_KINDS; k++)
            if (strncmp(name, port_prefix[k], strlen(port_prefix[k])) == 0)
                return np_error_set(err, NP_EXIT_INPUT, path, PORT_PROPERTY, 0,
                                    "host '%s' is named like a %s (%s<rank>) but has no "
                                    "<prop id=\"%s\" value=\"%s\"/>",
                                    name, port_what[k], port_prefix[k], PORT_PROPERTY,
                                    port_role[k]);
        if (!role) {
            sg_host_t h = hosts[i];
            memmove(hosts + n + 1, hosts + n, (size_t)(i - n) * sizeof *hosts);
            hosts[n++] = h;
        }
    }
    *num_npus = n;
    int rc = index_ports(path, hosts + n, count - n, PORT_SCALEUP, n, &ports->scaleup, err);
    if (!rc)
        rc = index_ports(path, hosts + n, count - n, PORT_PLANE1, n, &ports->plane1, err);
    if (rc)
        platform_ports_free(ports);
    return rc;
}

/* Property `name` on every NPU with rank 0's text (or absent on all). */
static int same_on_every_npu(const char *path, const sim_platform *p, const char *name,
                             np_error *err)
{
    const char *a = sg_host_get_property_value(p->host_of_rank[0], name);
    for (int r = 1; r < p->num_npus; r++) {
        const char *b = sg_host_get_property_value(p->host_of_rank[r], name);
        if ((!a && !b) || (a && b && strcmp(a, b) == 0))
            continue;
        return np_error_set(err, NP_EXIT_INPUT, path, name, 0,
                            "host '%s' has %s%s%s, host '%s' (rank 0) %s%s%s: all NPUs must "
                            "be identical",
                            sg_host_get_name(p->host_of_rank[r]), b ? "\"" : "no value", b ? b : "",
                            b ? "\"" : "", sg_host_get_name(p->host_of_rank[0]),
                            a ? "\"" : "no value", a ? a : "", a ? "\"" : "");
    }
    return 0;
}

static int read_flag(const char *path, const char *name, const char *text, int *out, np_error *err)
{
    char *end;
    long v = strtol(text, &end, 10);
    while (isspace((unsigned char)*end))
        end++;
    if (end == text || *end || (v != 0 && v != 1))
        return np_error_set(err, NP_EXIT_INPUT, path, name, platform_prop_line(path, name),
                            "expected 0 or 1, got \"%s\"", text);
    *out = (int)v;
    return 0;
}

/* nic_planes (1 or 2), nic_plane_policy and the plane-1 ports: plane 1
 * must reach every server like plane 0, with the same route figures (the
 * transport splits a transfer in equal halves), and a split transfer gets
 * both planes' bandwidth, which is what the planners see. */
static int read_planes(const char *path, sim_platform *p, platform_ports *ports, np_error *err)
{
    sg_host_t first = p->host_of_rank[0];
    const char *planes = sg_host_get_property_value(first, "nic_planes");
    const char *policy = sg_host_get_property_value(first, "nic_plane_policy");
    p->nic_planes = 1;
    p->plane_policy = PLANE_SPLIT;
    if (planes) {
        char *end;
        long v = strtol(planes, &end, 10);
        while (isspace((unsigned char)*end))
            end++;
        if (end == planes || *end || (v != 1 && v != 2))
            return np_error_set(err, NP_EXIT_INPUT, path, "nic_planes",
                                platform_prop_line(path, "nic_planes"),
                                "expected 1 or 2 (ports per NIC, each on its own plane), got "
                                "\"%s\"",
                                planes);
        p->nic_planes = (int)v;
    }
    if (policy && strcmp(policy, "hash") == 0)
        p->plane_policy = PLANE_HASH;
    else if (policy && strcmp(policy, "split") != 0)
        return np_error_set(err, NP_EXIT_INPUT, path, "nic_plane_policy",
                            platform_prop_line(path, "nic_plane_policy"),
                            "expected \"split\" or \"hash\", got \"%s\"", policy);
    if (p->nic_planes == 2 && !ports->plane1)
        return np_error_set(err, NP_EXIT_INPUT, path, "nic_planes",
                            platform_prop_line(path, "nic_planes"),
                            "\"2\" needs a plane-1 port host per NPU (hosts pl1-0 .. pl1-%d with "
                            "<prop id=\"%s\" value=\"plane1\"/>), the platform has none",
                            p->num_npus - 1, PORT_PROPERTY);
    if (p->nic_planes != 2 && ports->plane1)
        return np_error_set(err, NP_EXIT_INPUT, path, "nic_planes", 0,
                            "the platform has plane-1 port hosts but its NPUs do not say "
                            "nic_planes=\"2\"");
    if (policy && p->nic_planes != 2)
        return np_error_set(err, NP_EXIT_INPUT, path, "nic_plane_policy",
                            platform_prop_line(path, "nic_plane_policy"),
                            "given, but the NPUs have one NIC plane (nic_planes=\"2\" expected)");
    p->plane1_port_of_rank = ports->plane1;
    ports->plane1 = NULL;
    if (p->nic_planes == 1 || p->num_npus <= p->cluster.npus_per_node)
        return 0;
    int rc = platform_check_routes(path, p, p->plane1_port_of_rank, err);
    if (rc)
        return rc;
    cl_cluster *c = &p->cluster;
    sg_host_t a = p->plane1_port_of_rank[0], b = p->plane1_port_of_rank[c->npus_per_node];
    double bw = sg_host_get_route_bandwidth(a, b), lat = sg_host_get_route_latency(a, b);
    if (bw != c->scaleout_bandwidth_Bps || lat != c->scaleout_latency_s)
        return np_error_set(err, NP_EXIT_INPUT, path, "nic_planes", 0,
                            "plane 1's route from '%s' to '%s' has %g B/s and %g s, plane 0's "
                            "(from '%s' to '%s') %g B/s and %g s: the two planes must be "
                            "identical",
                            sg_host_get_name(a), sg_host_get_name(b), bw, lat,
                            sg_host_get_name(p->host_of_rank[0]),
                            sg_host_get_name(p->host_of_rank[c->npus_per_node]),
                            c->scaleout_bandwidth_Bps, c->scaleout_latency_s);
    if (p->plane_policy == PLANE_SPLIT) /* a transfer gets both ports */
        c->scaleout_bandwidth_Bps *= 2;
    return 0;
}

int platform_read_fabric(const char *path, sim_platform *p, platform_ports *ports, double *taper,
                         np_error *err)
{
    sg_host_t first = p->host_of_rank[0];
    const char *mode = sg_host_get_property_value(first, "scaleup_fabric");
    p->scaleup_simulated = 0;
    if (mode && strcmp(mode, "simulated") == 0)
        p->scaleup_simulated = 1;
    else if (mode && strcmp(mode, "closed_form") != 0)
        return np_error_set(err, NP_EXIT_INPUT, path, "scaleup_fabric",
                            platform_prop_line(path, "scaleup_fabric"),
                            "expected \"closed_form\" or \"simulated\", got \"%s\"", mode);
    if (p->scaleup_simulated && !ports->scaleup)
        return np_error_set(err, NP_EXIT_INPUT, path, "scaleup_fabric",
                            platform_prop_line(path, "scaleup_fabric"),
                            "\"simulated\" needs a scale-up port host per NPU (hosts sup-0 .. "
                            "sup-%d with <prop id=\"%s\" value=\"scaleup\"/>), the platform "
                            "has none",
                            p->num_npus - 1, PORT_PROPERTY);
    if (!p->scaleup_simulated && ports->scaleup)
        return np_error_set(err, NP_EXIT_INPUT, path, "scaleup_fabric", 0,
                            "the platform has scale-up port hosts but its NPUs do not say "
                            "scaleup_fabric=\"simulated\"");
    p->scaleup_port_of_rank = ports->scaleup;
    ports->scaleup = NULL;
    const char *pxn = sg_host_get_property_value(first, "cross_rail_pxn");
    p->cross_rail_pxn = 0;
    if (pxn && read_flag(path, "cross_rail_pxn", pxn, &p->cross_rail_pxn, err))
        return err->code;
    const char *t = sg_host_get_property_value(first, "fabric_taper");
    if (t) {
        char *end;
        errno = 0;
        double v = strtod(t, &end);
        while (isspace((unsigned char)*end))
            end++;
        if (end == t || *end || errno == ERANGE || !(v > 0 && v <= 1))
            return np_error_set(err, NP_EXIT_INPUT, path, "fabric_taper",
                                platform_prop_line(path, "fabric_taper"),
                                "expected a number in (0, 1] (up-link over down-link capacity "
                                "of the most tapered tier), got \"%s\"",
                                t);
        *taper = fmin(*taper, v);
    }
    static const char *const names[] = {"scaleup_fabric", "cross_rail_pxn", "fabric_taper",
                                        "nic_planes", "nic_plane_policy"};
    for (int i = 0; i < 5; i++) {
        int rc = same_on_every_npu(path, p, names[i], err);
        if (rc)
            return rc;
    }
    return read_planes(path, p, ports, err);
}
