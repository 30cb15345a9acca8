/*
 * platform_props.c -- the loaded hosts and links read as an NPU cluster.
 *
 * Every property of cluster.h is read on rank 0 and must be a finite number
 * in its range: bandwidths and capacities above 0, latencies and
 * kernel_launch_s from 0 (the "free communication" test platforms say 0),
 * matmul_efficiency in (0, 1], each below a ceiling far above any device
 * (docs/platform-format.md lists them), so that every duration the model
 * derives stays finite.  Every host must have the same speed and the same
 * property text as rank 0 (cluster.h: all NPUs are identical); every link's
 * bandwidth and latency must be in range too.  The scale-out figures are the
 * SimGrid route from rank 0 to rank npus_per_node (the first NPU of the next
 * node), after checking that every server reaches the others.
 *
 * The optional properties of cluster.h (gemm_efficiency_table,
 * attention_efficiency, elementwise_fusion, collective_bus_efficiency,
 * hbm_efficiency, fp8_flops) are
 * checked the same way when present and take their defaults when absent,
 * which price everything as a platform without them always did.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/host.h>
#include <simgrid/link.h>
#include <xbt/dynar.h>

#include "platform_internal.h"

typedef enum {
    PROP_POSITIVE,
    PROP_NON_NEGATIVE,
    PROP_FRACTION,
    PROP_COUNT,
    PROP_FLAG,       /* 0 or 1 (optional properties only) */
    PROP_GEMM_TABLE, /* "d1:e1,d2:e2,..." (cl_gemm_table_parse) */
} prop_range;

/* Each property has a floor (the range's kind) and a ceiling far above any
 * device, so that every time the model derives from it stays finite (a
 * latency of 1e308 s once reached SimGrid as an infinite duration).
 * Bandwidths reach 1e30 B/s: the "free communication" test platforms. */
typedef struct prop_spec {
    const char *name;
    prop_range range;
    double max;
    const char *unit;
    size_t offset; /* of the double in cl_cluster; npus_per_node is handled apart */
} prop_spec;

#define CLUSTER_FIELD(f) offsetof(cl_cluster, f)
static const prop_spec platform_props[] = {
    {"hbm_bytes", PROP_POSITIVE, 1e15, "bytes", CLUSTER_FIELD(hbm_bytes)},
    {"hbm_bandwidth_Bps", PROP_POSITIVE, 1e30, "B/s", CLUSTER_FIELD(hbm_bandwidth_Bps)},
    {"npus_per_node", PROP_COUNT, 1e6, "NPUs", 0},
    {"scaleup_bandwidth_Bps", PROP_POSITIVE, 1e30, "B/s", CLUSTER_FIELD(scaleup_bandwidth_Bps)},
    {"scaleup_latency_s", PROP_NON_NEGATIVE, 1.0, "s", CLUSTER_FIELD(scaleup_latency_s)},
    {"matmul_efficiency", PROP_FRACTION, 1.0, "", CLUSTER_FIELD(matmul_efficiency)},
    {"kernel_launch_s", PROP_NON_NEGATIVE, 1.0, "s", CLUSTER_FIELD(kernel_launch_s)},
};

/* Optional properties (cluster.h): absent means the model without them.
 * Their defaults are set in platform_read_optional(). */
static const prop_spec optional_props[] = {
    {"gemm_efficiency_table", PROP_GEMM_TABLE, 0, "", 0},
    {"attention_efficiency", PROP_FRACTION, 1.0, "", CLUSTER_FIELD(attention_efficiency)},
    {"elementwise_fusion", PROP_FLAG, 1.0, "", 0},
    {"collective_bus_efficiency", PROP_FRACTION, 1.0, "", CLUSTER_FIELD(collective_bus_efficiency)},
    {"hbm_efficiency", PROP_FRACTION, 1.0, "", CLUSTER_FIELD(hbm_efficiency)},
    {"fp8_flops", PROP_POSITIVE, 1e18, "FLOP/s", CLUSTER_FIELD(fp8_peak_flops)},
};
#define NUM_OPTIONAL_PROPS ((int)(sizeof optional_props / sizeof optional_props[0]))

/* The fabric's host properties (platform_fabric.c, docs/platform-format.md)
 * and those SimGrid's own energy plugin reads on a host. */
static const char *const fabric_props[] = {
    "npusim_port",  "nic_planes",        "nic_plane_policy", "scaleup_fabric", "cross_rail_pxn",
    "fabric_taper", "wattage_per_state", "wattage_off",      "wattage_range",
};

/* Edit distance of a and b (both under 64 characters; longer: 64). */
static int edit_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n >= 64 || m >= 64)
        return 64;
    int row[64];
    for (size_t j = 0; j <= m; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= n; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= m; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[m];
}

bool platform_prop_known(const char *name, const char **nearest)
{
    const char *names[(int)(sizeof platform_props / sizeof platform_props[0]) + NUM_OPTIONAL_PROPS +
                      sizeof fabric_props / sizeof fabric_props[0]];
    int n = 0;
    for (int i = 0; i < (int)(sizeof platform_props / sizeof platform_props[0]); i++)
        names[n++] = platform_props[i].name;
    for (int i = 0; i < NUM_OPTIONAL_PROPS; i++)
        names[n++] = optional_props[i].name;
    for (size_t i = 0; i < sizeof fabric_props / sizeof fabric_props[0]; i++)
        names[n++] = fabric_props[i];
    int best = 4; /* suggest only a name within 3 edits */
    *nearest = NULL;
    for (int i = 0; i < n; i++) {
        if (strcmp(name, names[i]) == 0)
            return true;
        int d = edit_distance(name, names[i]);
        if (d < best) {
            best = d;
            *nearest = names[i];
        }
    }
    return false;
}

/* Floors of the figures every time divides by (B/s, FLOP/s), ceilings of
 * speed and of a link's latency. */
#define MIN_BANDWIDTH_BPS 1e3
#define MAX_BANDWIDTH_BPS 1e30
#define MIN_SPEED_FLOPS 1e6
#define MAX_SPEED_FLOPS 1e21
#define MAX_LATENCY_S 1.0
#define NUM_PLATFORM_PROPS ((int)(sizeof platform_props / sizeof platform_props[0]))

/* "a positive number of at most 1e+15 bytes", for the error message. */
static void prop_expectation(const prop_spec *spec, char *buf, size_t size)
{
    const char *unit = spec->unit[0] ? " " : "";
    switch (spec->range) {
    case PROP_POSITIVE:
        snprintf(buf, size, "a positive number of at most %g%s%s", spec->max, unit, spec->unit);
        return;
    case PROP_NON_NEGATIVE:
        snprintf(buf, size, "a number from 0 to %g%s%s", spec->max, unit, spec->unit);
        return;
    case PROP_FRACTION:
        snprintf(buf, size, "a number in (0, 1]");
        return;
    case PROP_COUNT:
        snprintf(buf, size, "a positive integer of at most %g", spec->max);
        return;
    case PROP_FLAG:
        snprintf(buf, size, "0 or 1");
        return;
    case PROP_GEMM_TABLE:
        snprintf(buf, size, "MIN_DIM:EFFICIENCY pairs separated by commas");
        return;
    }
}

static int prop_in_range(double v, const prop_spec *spec)
{
    if (v > spec->max)
        return 0;
    switch (spec->range) {
    case PROP_POSITIVE:
        return v > 0;
    case PROP_NON_NEGATIVE:
        return v >= 0;
    case PROP_FRACTION:
        return v > 0;
    case PROP_COUNT:
        return v >= 1 && v == floor(v);
    case PROP_FLAG:
        return v == 0 || v == 1;
    case PROP_GEMM_TABLE:
        return 0; /* not a number: platform_read_optional() parses it */
    }
    return 0;
}

static int prop_parse_number(const char *path, const char *text, const prop_spec *spec,
                             double *value, np_error *err);

static int platform_read_prop(const char *path, sg_host_t host, const prop_spec *spec,
                              double *value, np_error *err)
{
    const char *text = sg_host_get_property_value(host, spec->name);
    if (!text)
        return np_error_set(err, NP_EXIT_INPUT, path, spec->name, 0,
                            "missing: host '%s' has no such property (expected <prop id=\"%s\" "
                            "value=\"...\"/> inside its <cluster>)",
                            sg_host_get_name(host), spec->name);
    return prop_parse_number(path, text, spec, value, err);
}

static int prop_parse_number(const char *path, const char *text, const prop_spec *spec,
                             double *value, np_error *err)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    while (isspace((unsigned char)*end))
        end++;
    if (end == text || *end || errno == ERANGE || !isfinite(v) || !prop_in_range(v, spec)) {
        char expected[96];
        prop_expectation(spec, expected, sizeof expected);
        return np_error_set(err, NP_EXIT_INPUT, path, spec->name,
                            platform_prop_line(path, spec->name), "expected %s, got \"%s\"",
                            expected, text);
    }
    *value = v;
    return 0;
}

static int platform_read_props(const char *path, sg_host_t host, cl_cluster *c, np_error *err)
{
    for (int i = 0; i < NUM_PLATFORM_PROPS; i++) {
        const prop_spec *spec = &platform_props[i];
        double v = 0;
        int rc = platform_read_prop(path, host, spec, &v, err);
        if (rc)
            return rc;
        if (spec->range == PROP_COUNT)
            c->npus_per_node = (int)v;
        else
            *(double *)((char *)c + spec->offset) = v;
    }
    return 0;
}

/* The optional properties, or their defaults: no GEMM table (every GEMM at
 * matmul_efficiency), attention at matmul_efficiency, no elementwise fusion,
 * scale-up collectives at the full link bandwidth, memory-bound kernels at
 * the full HBM bandwidth. */
static int platform_read_optional(const char *path, sg_host_t host, cl_cluster *c, np_error *err)
{
    c->gemm_table_points = 0;
    c->attention_efficiency = c->matmul_efficiency;
    c->elementwise_fusion = 0;
    c->collective_bus_efficiency = 1.0;
    c->hbm_efficiency = 1.0;
    c->fp8_peak_flops = 0.0;
    for (int i = 0; i < NUM_OPTIONAL_PROPS; i++) {
        const prop_spec *spec = &optional_props[i];
        const char *text = sg_host_get_property_value(host, spec->name);
        if (!text)
            continue;
        if (spec->range == PROP_GEMM_TABLE) {
            char why[128];
            if (cl_gemm_table_parse(text, c, why, sizeof why) != 0)
                return np_error_set(err, NP_EXIT_INPUT, path, spec->name,
                                    platform_prop_line(path, spec->name),
                                    "expected MIN_DIM:EFFICIENCY pairs separated by commas "
                                    "(e.g. \"128:0.35,2048:0.75\"): %s, got \"%s\"",
                                    why, text);
            continue;
        }
        double v = 0;
        int rc = prop_parse_number(path, text, spec, &v, err);
        if (rc)
            return rc;
        if (spec->range == PROP_FLAG)
            c->elementwise_fusion = (int)v;
        else
            *(double *)((char *)c + spec->offset) = v;
    }
    return 0;
}

/* Property `name` of host h against rank 0's (first): the same text, or
 * absent on both when optional. */
static int check_same_prop(const char *path, sg_host_t first, sg_host_t h, const char *name,
                           np_error *err)
{
    const char *a = sg_host_get_property_value(first, name);
    const char *b = sg_host_get_property_value(h, name);
    if (!a && !b)
        return 0;
    if (a && b && strcmp(a, b) == 0)
        return 0;
    return np_error_set(err, NP_EXIT_INPUT, path, name, 0,
                        "host '%s' has %s%s%s, host '%s' (rank 0) %s%s%s: "
                        "all NPUs must be identical",
                        sg_host_get_name(h), b ? "\"" : "no value", b ? b : "", b ? "\"" : "",
                        sg_host_get_name(first), a ? "\"" : "no value", a ? a : "", a ? "\"" : "");
}

/* cluster.h: all NPUs are identical.  Same speed, same property text. */
static int platform_check_uniform(const char *path, const sim_platform *p, np_error *err)
{
    sg_host_t first = p->host_of_rank[0];
    double speed = sg_host_get_speed(first);
    for (int r = 1; r < p->num_npus; r++) {
        sg_host_t h = p->host_of_rank[r];
        if (sg_host_get_speed(h) != speed)
            return np_error_set(err, NP_EXIT_INPUT, path, "speed", 0,
                                "host '%s' has speed %g FLOP/s, host '%s' (rank 0) %g: "
                                "all NPUs must be identical",
                                sg_host_get_name(h), sg_host_get_speed(h), sg_host_get_name(first),
                                speed);
        int rc = 0;
        for (int i = 0; i < NUM_PLATFORM_PROPS && !rc; i++)
            rc = check_same_prop(path, first, h, platform_props[i].name, err);
        for (int i = 0; i < NUM_OPTIONAL_PROPS && !rc; i++)
            rc = check_same_prop(path, first, h, optional_props[i].name, err);
        if (rc)
            return rc;
    }
    return 0;
}

/* Every server must be reachable: routes from NPU 0 to the first NPU of
 * every other server, and back, have links (a routing zone without them
 * would crash SimGrid in a route query or stop it mid-run).  Looked up under
 * the abort trap, at about a microsecond each. */
typedef struct route_probe {
    const sim_platform *p;
    sg_host_t *hosts;             /* [num_npus]: the NPUs, or one kind of their ports */
    int missing_from, missing_to; /* ranks of the first pair without links, or -1 */
    int probing_from, probing_to; /* the pair being looked up */
} route_probe;

static void probe_routes(void *ctx)
{
    route_probe *r = ctx;
    const sim_platform *p = r->p;
    int per_node = p->cluster.npus_per_node;
    xbt_dynar_t links = xbt_dynar_new(sizeof(sg_link_t), NULL);
    for (int n = per_node; n < p->num_npus && r->missing_from < 0; n += per_node) {
        for (int dir = 0; dir < 2 && r->missing_from < 0; dir++) {
            int from = dir ? n : 0, to = dir ? 0 : n;
            r->probing_from = from; /* survives an abort inside the query */
            r->probing_to = to;
            xbt_dynar_reset(links);
            sg_host_get_route(r->hosts[from], r->hosts[to], links);
            if (xbt_dynar_is_empty(links)) {
                r->missing_from = from;
                r->missing_to = to;
            }
        }
    }
    xbt_dynar_free(&links);
}

int platform_check_routes(const char *path, const sim_platform *p, sg_host_t *hosts, np_error *err)
{
    route_probe r = {p, hosts, -1, -1, -1, -1};
    char message[1024] = "";
    if (platform_guarded(probe_routes, &r, message, sizeof message)) {
        r.missing_from = r.probing_from; /* SimGrid failed on this route */
        r.missing_to = r.probing_to;
    }
    if (r.missing_from >= 0)
        return np_error_set(err, NP_EXIT_INPUT, path, "", 0,
                            "no network route from '%s' to '%s': every server must reach the "
                            "others",
                            sg_host_get_name(hosts[r.missing_from]),
                            sg_host_get_name(hosts[r.missing_to]));
    return 0;
}

/* A rail-optimised layout puts the NICs of one server on different leaves
 * (NIC i on rail i): the network route between NPUs 0 and 1 of server 0 is
 * then longer than the one from NPU 0 to the next server's NPU 0, which
 * shares its rail leaf.  On a fat tree with the servers in rank order they
 * share a leaf, and the first route is the shorter or equal one. */
typedef struct rail_probe {
    const sim_platform *p;
    unsigned long in_server, next_server; /* links */
} rail_probe;

static void probe_rail(void *ctx)
{
    rail_probe *r = ctx;
    const sim_platform *p = r->p;
    xbt_dynar_t links = xbt_dynar_new(sizeof(sg_link_t), NULL);
    sg_host_get_route(p->host_of_rank[0], p->host_of_rank[1], links);
    r->in_server = xbt_dynar_length(links);
    xbt_dynar_reset(links);
    sg_host_get_route(p->host_of_rank[0], p->host_of_rank[p->cluster.npus_per_node], links);
    r->next_server = xbt_dynar_length(links);
    xbt_dynar_free(&links);
}

static void detect_rails(sim_platform *p)
{
    if (p->fold_blocker[0] || p->cluster.npus_per_node < 2 ||
        p->num_npus < 2 * p->cluster.npus_per_node)
        return;
    rail_probe r = {p, 0, 0};
    char message[1024] = "";
    if (platform_guarded(probe_rail, &r, message, sizeof message) == 0 &&
        r.in_server > r.next_server)
        snprintf(p->fold_blocker, sizeof p->fold_blocker,
                 "rail-optimised (NPUs 0 and 1 of a server are %lu links apart, NPU 0 and the "
                 "next server's NPU 0 %lu)",
                 r.in_server, r.next_server);
}

/* Scale-out figures: the route from rank 0 to the first NPU of node 1. */
static int platform_read_scaleout(const char *path, sim_platform *p, np_error *err)
{
    cl_cluster *c = &p->cluster;
    if (p->num_npus <= c->npus_per_node) {
        c->scaleout_bandwidth_Bps = c->scaleup_bandwidth_Bps;
        c->scaleout_latency_s = c->scaleup_latency_s;
        return 0;
    }
    int rc = platform_check_routes(path, p, p->host_of_rank, err);
    if (rc)
        return rc;
    detect_rails(p);
    sg_host_t a = p->host_of_rank[0], b = p->host_of_rank[c->npus_per_node];
    c->scaleout_bandwidth_Bps = sg_host_get_route_bandwidth(a, b);
    c->scaleout_latency_s = sg_host_get_route_latency(a, b);
    if (!(c->scaleout_bandwidth_Bps > 0) || !isfinite(c->scaleout_bandwidth_Bps) ||
        !(c->scaleout_latency_s >= 0))
        return np_error_set(err, NP_EXIT_INPUT, path, "", 0,
                            "no usable network route between '%s' and '%s' "
                            "(bandwidth %g B/s, latency %g s)",
                            sg_host_get_name(a), sg_host_get_name(b), c->scaleout_bandwidth_Bps,
                            c->scaleout_latency_s);
    return 0;
}

/* Every link of the platform: bandwidth in [1e3, 1e30] B/s, latency in
 * [0, 1] s, both finite.  A bandwidth of 1e-300 or a latency of inf once
 * made the engine report a deadlock, or SimGrid abort on an infinite
 * duration, naming no key.  About 25K links at 16K NPUs: a millisecond. */
static int platform_check_links(const char *path, np_error *err)
{
    size_t count = sg_link_count();
    sg_link_t *links = sg_link_list();
    int rc = 0;
    for (size_t i = 0; i < count && !rc; i++) {
        double bw = sg_link_get_bandwidth(links[i]), lat = sg_link_get_latency(links[i]);
        if (!(bw >= MIN_BANDWIDTH_BPS && bw <= MAX_BANDWIDTH_BPS))
            rc = np_error_set(err, NP_EXIT_INPUT, path, "bw", 0,
                              "link '%s' has bandwidth %g B/s: expected %g to %g B/s",
                              sg_link_get_name(links[i]), bw, MIN_BANDWIDTH_BPS, MAX_BANDWIDTH_BPS);
        else if (!(lat >= 0 && lat <= MAX_LATENCY_S))
            rc = np_error_set(err, NP_EXIT_INPUT, path, "lat", 0,
                              "link '%s' has latency %g s: expected 0 to %g s",
                              sg_link_get_name(links[i]), lat, MAX_LATENCY_S);
    }
    free(links);
    return rc;
}

int platform_read_cluster(const char *path, sim_platform *p, np_error *err)
{
    cl_cluster *c = &p->cluster;
    snprintf(c->name, sizeof c->name, "%s", path);
    c->num_npus = p->num_npus;
    c->peak_flops = sg_host_get_speed(p->host_of_rank[0]);
    if (!(c->peak_flops >= MIN_SPEED_FLOPS && c->peak_flops <= MAX_SPEED_FLOPS))
        return np_error_set(err, NP_EXIT_INPUT, path, "speed", 0,
                            "host '%s' has speed %g: expected the peak FLOP/s, from %g to %g",
                            sg_host_get_name(p->host_of_rank[0]), c->peak_flops, MIN_SPEED_FLOPS,
                            MAX_SPEED_FLOPS);
    int rc = platform_read_props(path, p->host_of_rank[0], c, err);
    if (!rc)
        rc = platform_read_optional(path, p->host_of_rank[0], c, err);
    if (!rc)
        rc = platform_check_links(path, err);
    if (!rc)
        rc = platform_check_uniform(path, p, err);
    if (!rc && p->num_npus % c->npus_per_node)
        rc = np_error_set(err, NP_EXIT_INPUT, path, "npus_per_node",
                          platform_prop_line(path, "npus_per_node"),
                          "%d NPUs do not fill whole nodes of %d", p->num_npus, c->npus_per_node);
    if (!rc)
        rc = platform_read_scaleout(path, p, err);
    return rc;
}
