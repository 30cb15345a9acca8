/*
 * platform_fabric.c -- what a platform says about its fabrics beyond the
 * NPU properties of platform_props.c:
 *
 *   - port hosts: a host with the property npusim_port="scaleup" is not an
 *     NPU but the scale-up port of the NPU whose rank ends its name
 *     (sup-<rank>), one per NPU, used when the platform's scaleup_fabric is
 *     "simulated" (transport_scaleup.c).  They are set apart before the NPUs
 *     are numbered;
 *   - scaleup_fabric ("closed_form", the default, or "simulated"),
 *     cross_rail_pxn (0, the default, or 1) and fabric_taper (a fraction in
 *     (0, 1], default 1: the fabric's most tapered tier for a fabric built of
 *     zones, where the reader cannot see a FAT_TREE's topo_parameters), each
 *     the same text on every NPU like every other property.
 * Every problem is an np_error naming the property or the host.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/host.h>

#include "platform_internal.h"

#define PORT_PROPERTY "npusim_port"

int platform_split_ports(const char *path, sg_host_t *hosts, int count, int *num_npus,
                         sg_host_t **ports, np_error *err)
{
    *ports = NULL;
    int n = 0, num_ports = 0;
    for (int i = 0; i < count; i++) { /* NPUs first, in their order; ports after */
        const char *role = sg_host_get_property_value(hosts[i], PORT_PROPERTY);
        if (role && strcmp(role, "scaleup") != 0)
            return np_error_set(err, NP_EXIT_INPUT, path, PORT_PROPERTY,
                                platform_prop_line(path, PORT_PROPERTY),
                                "host '%s': expected \"scaleup\" (a scale-up port host), got "
                                "\"%s\"",
                                sg_host_get_name(hosts[i]), role);
        if (!role && strncmp(sg_host_get_name(hosts[i]), "sup-", 4) == 0)
            return np_error_set(err, NP_EXIT_INPUT, path, PORT_PROPERTY, 0,
                                "host '%s' is named like a scale-up port (sup-<rank>) but has no "
                                "<prop id=\"%s\" value=\"scaleup\"/>",
                                sg_host_get_name(hosts[i]), PORT_PROPERTY);
        if (!role) {
            sg_host_t h = hosts[i];
            memmove(hosts + n + 1, hosts + n, (size_t)(i - n) * sizeof *hosts);
            hosts[n++] = h;
        } else {
            num_ports++;
        }
    }
    *num_npus = n;
    if (num_ports == 0)
        return 0;
    if (num_ports != n)
        return np_error_set(err, NP_EXIT_INPUT, path, PORT_PROPERTY, 0,
                            "%d scale-up port hosts for %d NPUs: expected one port per NPU "
                            "(sup-0 .. sup-%d)",
                            num_ports, n, n - 1);
    *ports = calloc((size_t)n, sizeof **ports);
    if (!*ports)
        return np_error_set(err, NP_EXIT_INTERNAL, path, "", 0, "out of memory");
    for (int i = n; i < count; i++) {
        const char *name = sg_host_get_name(hosts[i]);
        long rank = platform_rank_of_name(name);
        const char *problem = rank < 0         ? "has no NPU rank at the end of its name"
                              : rank >= n      ? "names an NPU rank out of range"
                              : (*ports)[rank] ? "is the second port of its NPU"
                                               : NULL;
        if (problem) {
            free(*ports);
            *ports = NULL;
            return np_error_set(err, NP_EXIT_INPUT, path, PORT_PROPERTY, 0,
                                "scale-up port host '%s' %s (expected sup-0 .. sup-%d, one per "
                                "NPU)",
                                name, problem, n - 1);
        }
        (*ports)[rank] = hosts[i];
    }
    return 0;
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

int platform_read_fabric(const char *path, sim_platform *p, sg_host_t *ports, double *taper,
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
    if (p->scaleup_simulated && !ports)
        return np_error_set(err, NP_EXIT_INPUT, path, "scaleup_fabric",
                            platform_prop_line(path, "scaleup_fabric"),
                            "\"simulated\" needs a scale-up port host per NPU (hosts sup-0 .. "
                            "sup-%d with <prop id=\"%s\" value=\"scaleup\"/>), the platform "
                            "has none",
                            p->num_npus - 1, PORT_PROPERTY);
    if (!p->scaleup_simulated && ports)
        return np_error_set(err, NP_EXIT_INPUT, path, "scaleup_fabric", 0,
                            "the platform has scale-up port hosts but its NPUs do not say "
                            "scaleup_fabric=\"simulated\"");
    p->scaleup_port_of_rank = ports;
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
    static const char *const names[] = {"scaleup_fabric", "cross_rail_pxn", "fabric_taper"};
    for (int i = 0; i < 3; i++) {
        int rc = same_on_every_npu(path, p, names[i], err);
        if (rc)
            return rc;
    }
    return 0;
}
