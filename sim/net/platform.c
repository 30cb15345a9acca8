/*
 * platform.c -- loading a SimGrid platform and reading it as an NPU cluster.
 *
 * Three steps, each of which turns a bad platform into an np_error:
 *
 * 1. Before SimGrid sees the file: it must open for reading and be a regular
 *    file ("cannot open platform file: <strerror>").
 *
 * 2. simgrid_load_platform() inside an abort trap.  SimGrid 3.32 does not
 *    return on a bad platform: an XML syntax error, an unparsable number
 *    ("speed=\"fast\""), an unknown attribute or an inconsistent fat tree
 *    throw a C++ exception that nothing in C can catch; SimGrid's terminate
 *    handler logs it ("Parse error at FILE:LINE: ...", or a CRITICAL line
 *    plus a backtrace for xbt_die) and calls abort(): exit status 134, a core
 *    dump where enabled (measured on this machine).  Rather than re-implement
 *    SimGrid's parser in a pre-check, which would drift from what SimGrid
 *    accepts, the load runs with SIGABRT caught and stderr redirected to a
 *    temporary file.  On success the captured text is replayed to stderr
 *    unchanged.  On abort the handler siglongjmp()s back here; the first
 *    error line SimGrid logged becomes the np_error (file and line taken from
 *    "Parse error at FILE:LINE:"), so the user sees one line and exit code 2.
 *    The price: after a failed load SimGrid's state is half-built, so the
 *    process must exit (every caller does; a second platform_load() in one
 *    process is refused anyway -- SimGrid holds one platform per process).
 *    The xbt_exception log category, which logs only that last message, is
 *    set to show errors even under --log=root.thresh:critical.
 *
 * 3. Reading the cluster: sg_host_list() once (it walks and sorts, slow at
 *    16K hosts), rank = the number at the end of each host name, ranks must be
 *    exactly 0..N-1; every property of cluster.h is read on rank 0 and must
 *    be a number in range (bandwidths, capacities and npus_per_node > 0,
 *    latencies and kernel_launch_s >= 0 so that "free communication" test
 *    platforms can say 0, matmul_efficiency in (0, 1]); every host must have
 *    the same speed and the same property text as rank 0 (cluster.h: all
 *    NPUs are identical).  The scale-out figures are the SimGrid route from
 *    rank 0 to rank npus_per_node (the first NPU of the next node).
 */
#define _GNU_SOURCE
#include "platform.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <xbt/dynar.h>
#include <xbt/log.h>

/* ---------------------------------------------------------------- checks */

static int platform_check_file(const char *path, np_error *err)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return np_error_set(err, NP_EXIT_INPUT, path, "", 0, "cannot open platform file: %s",
                            strerror(errno));
    struct stat st;
    int is_regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    close(fd);
    if (!is_regular)
        return np_error_set(err, NP_EXIT_INPUT, path, "", 0,
                            "cannot read platform file: not a regular file");
    return 0;
}

/* ------------------------------------------------------------ abort trap */

typedef struct abort_trap {
    struct sigaction old_action;
    struct sigaction old_segv_action; /* SimGrid dereferences a missing route */
    int saved_stderr_fd;              /* -1 when stderr is not redirected */
    FILE *capture;
} abort_trap;

static sigjmp_buf trap_jump;
static volatile sig_atomic_t trap_armed;
static abort_trap *trap_active; /* for the atexit hook */

static void trap_on_abort(int sig)
{
    if (trap_armed) {
        trap_armed = 0;
        siglongjmp(trap_jump, 1);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Restores stderr and SIGABRT; replays the captured text when asked. */
static void trap_end(abort_trap *t, int replay)
{
    trap_armed = 0;
    trap_active = NULL;
    sigaction(SIGABRT, &t->old_action, NULL);
    sigaction(SIGSEGV, &t->old_segv_action, NULL);
    if (t->saved_stderr_fd < 0)
        return;
    fflush(stderr);
    dup2(t->saved_stderr_fd, STDERR_FILENO);
    close(t->saved_stderr_fd);
    t->saved_stderr_fd = -1;
    if (replay) {
        char buf[4096];
        size_t n;
        rewind(t->capture);
        while ((n = fread(buf, 1, sizeof buf, t->capture)) > 0)
            fwrite(buf, 1, n, stderr);
    }
}

/* If SimGrid exit()s instead of aborting, its message must not stay in the
 * temporary file. */
static void trap_at_exit(void)
{
    if (trap_active)
        trap_end(trap_active, 1);
}

static void trap_begin(abort_trap *t)
{
    static int at_exit_registered;
    if (!at_exit_registered)
        at_exit_registered = atexit(trap_at_exit) == 0;
    t->saved_stderr_fd = -1;
    fflush(stderr);
    t->capture = tmpfile();
    if (t->capture) {
        t->saved_stderr_fd = dup(STDERR_FILENO);
        if (t->saved_stderr_fd < 0 || dup2(fileno(t->capture), STDERR_FILENO) < 0) {
            if (t->saved_stderr_fd >= 0)
                close(t->saved_stderr_fd);
            t->saved_stderr_fd = -1;
        }
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = trap_on_abort;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGABRT, &sa, &t->old_action);
    sigaction(SIGSEGV, &sa, &t->old_segv_action);
    trap_active = t;
}

static void trap_close(abort_trap *t)
{
    if (t->capture)
        fclose(t->capture);
    t->capture = NULL;
}

/* The text after "[category/ERROR] " or "[category/CRITICAL] " on the first
 * such line that says something ("Exiting now." does not). */
static int trap_first_error(abort_trap *t, char *out, size_t size)
{
    char line[2048];
    out[0] = '\0';
    if (!t->capture)
        return 0;
    rewind(t->capture);
    while (fgets(line, sizeof line, t->capture)) {
        const char *mark = strstr(line, "/ERROR] ");
        if (!mark)
            mark = strstr(line, "/CRITICAL] ");
        if (!mark)
            continue;
        const char *text = strstr(mark, "] ") + 2;
        if (strncmp(text, "Exiting now.", 12) == 0)
            continue;
        snprintf(out, size, "%s", text);
        out[strcspn(out, "\r\n")] = '\0';
        return 1;
    }
    return 0;
}

/* "Parse error at FILE:LINE: TEXT" -> line and TEXT; otherwise line 0. */
static int simgrid_message_to_error(const char *path, const char *message, np_error *err)
{
    static const char prefix[] = "Parse error at ";
    if (!message[0])
        return np_error_set(err, NP_EXIT_INPUT, path, "", 0,
                            "SimGrid rejected the platform (it logged no message)");
    if (strncmp(message, prefix, sizeof prefix - 1) == 0) {
        for (const char *p = strchr(message, ':'); p; p = strchr(p + 1, ':')) {
            char *end;
            long line = strtol(p + 1, &end, 10);
            if (end > p + 1 && isdigit((unsigned char)p[1]) && end[0] == ':' && end[1] == ' ')
                return np_error_set(err, NP_EXIT_INPUT, path, "", (int)line, "%s", end + 2);
        }
    }
    return np_error_set(err, NP_EXIT_INPUT, path, "", 0, "%s", message);
}

int platform_guarded(void (*fn)(void *ctx), void *ctx, char *message, size_t size)
{
    xbt_log_control_set("xbt_exception.thresh:error");
    abort_trap trap;
    trap_begin(&trap);
    if (sigsetjmp(trap_jump, 1) == 0) {
        trap_armed = 1;
        fn(ctx);
        trap_end(&trap, 1);
        trap_close(&trap);
        return 0;
    }
    trap_first_error(&trap, message, size);
    trap_end(&trap, 0);
    trap_close(&trap);
    return 1;
}

static void load_platform(void *path) { simgrid_load_platform(path); }

static int platform_load_into_simgrid(const char *path, np_error *err)
{
    static int loads;
    if (loads++)
        return np_error_set(err, NP_EXIT_INTERNAL, path, "", 0,
                            "SimGrid holds one platform per process; one was already loaded");
    char message[1024];
    if (platform_guarded(load_platform, (void *)path, message, sizeof message) == 0)
        return 0;
    return simgrid_message_to_error(path, message, err);
}

/* ----------------------------------------------------------------- ranks */

/* The number at the end of a host name, or -1 when there is none (or it
 * has more digits than a rank can). */
static long rank_of_name(const char *name)
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
        long rank = rank_of_name(name);
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

/* ------------------------------------------------------------ properties */

typedef enum { PROP_POSITIVE, PROP_NON_NEGATIVE, PROP_FRACTION, PROP_COUNT } prop_range;

typedef struct prop_spec {
    const char *name;
    prop_range range;
    size_t offset; /* of the double in cl_cluster; npus_per_node is handled apart */
} prop_spec;

#define CLUSTER_FIELD(f) offsetof(cl_cluster, f)
static const prop_spec platform_props[] = {
    {"hbm_bytes", PROP_POSITIVE, CLUSTER_FIELD(hbm_bytes)},
    {"hbm_bandwidth_Bps", PROP_POSITIVE, CLUSTER_FIELD(hbm_bandwidth_Bps)},
    {"npus_per_node", PROP_COUNT, 0},
    {"scaleup_bandwidth_Bps", PROP_POSITIVE, CLUSTER_FIELD(scaleup_bandwidth_Bps)},
    {"scaleup_latency_s", PROP_NON_NEGATIVE, CLUSTER_FIELD(scaleup_latency_s)},
    {"matmul_efficiency", PROP_FRACTION, CLUSTER_FIELD(matmul_efficiency)},
    {"kernel_launch_s", PROP_NON_NEGATIVE, CLUSTER_FIELD(kernel_launch_s)},
};
#define NUM_PLATFORM_PROPS ((int)(sizeof platform_props / sizeof platform_props[0]))

/* Line of the first <prop ... id="name" in the file, 0 if not found: SimGrid
 * does not keep where a property came from. */
static int prop_line(const char *path, const char *name)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char needle[160], line[4096];
    snprintf(needle, sizeof needle, "\"%s\"", name);
    int number = 0, found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        number++;
        found = strstr(line, needle) && strstr(line, "prop");
    }
    fclose(f);
    return found ? number : 0;
}

static const char *prop_expectation(prop_range range)
{
    switch (range) {
    case PROP_POSITIVE:
        return "a positive number";
    case PROP_NON_NEGATIVE:
        return "a number >= 0";
    case PROP_FRACTION:
        return "a number in (0, 1]";
    case PROP_COUNT:
        return "a positive integer";
    }
    return "a number";
}

static int prop_in_range(double v, prop_range range)
{
    switch (range) {
    case PROP_POSITIVE:
        return v > 0;
    case PROP_NON_NEGATIVE:
        return v >= 0;
    case PROP_FRACTION:
        return v > 0 && v <= 1;
    case PROP_COUNT:
        return v >= 1 && v <= 1e9 && v == floor(v);
    }
    return 0;
}

static int platform_read_prop(const char *path, sg_host_t host, const prop_spec *spec,
                              double *value, np_error *err)
{
    const char *text = sg_host_get_property_value(host, spec->name);
    if (!text)
        return np_error_set(err, NP_EXIT_INPUT, path, spec->name, 0,
                            "missing: host '%s' has no such property (expected <prop id=\"%s\" "
                            "value=\"...\"/> inside its <cluster>)",
                            sg_host_get_name(host), spec->name);
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    while (isspace((unsigned char)*end))
        end++;
    if (end == text || *end || errno == ERANGE || !isfinite(v) || !prop_in_range(v, spec->range))
        return np_error_set(err, NP_EXIT_INPUT, path, spec->name, prop_line(path, spec->name),
                            "expected %s, got \"%s\"", prop_expectation(spec->range), text);
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
        for (int i = 0; i < NUM_PLATFORM_PROPS; i++) {
            const char *name = platform_props[i].name;
            const char *a = sg_host_get_property_value(first, name);
            const char *b = sg_host_get_property_value(h, name);
            if (!b || strcmp(a, b) != 0)
                return np_error_set(err, NP_EXIT_INPUT, path, name, 0,
                                    "host '%s' has %s%s%s, host '%s' (rank 0) \"%s\": "
                                    "all NPUs must be identical",
                                    sg_host_get_name(h), b ? "\"" : "no value", b ? b : "",
                                    b ? "\"" : "", sg_host_get_name(first), a);
        }
    }
    return 0;
}

/* Every server must be reachable: routes from NPU 0 to the first NPU of
 * every other server, and back, have links (a routing zone without them
 * would crash SimGrid in a route query or stop it mid-run).  Looked up under
 * the abort trap, at about a microsecond each. */
typedef struct route_probe {
    sim_platform *p;
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
            sg_host_get_route(p->host_of_rank[from], p->host_of_rank[to], links);
            if (xbt_dynar_is_empty(links)) {
                r->missing_from = from;
                r->missing_to = to;
            }
        }
    }
    xbt_dynar_free(&links);
}

static int platform_check_routes(const char *path, sim_platform *p, np_error *err)
{
    route_probe r = {p, -1, -1, -1, -1};
    char message[1024] = "";
    if (platform_guarded(probe_routes, &r, message, sizeof message)) {
        r.missing_from = r.probing_from; /* SimGrid failed on this route */
        r.missing_to = r.probing_to;
    }
    if (r.missing_from >= 0)
        return np_error_set(err, NP_EXIT_INPUT, path, "", 0,
                            "no network route from '%s' to '%s': every server must reach the "
                            "others",
                            sg_host_get_name(p->host_of_rank[r.missing_from]),
                            sg_host_get_name(p->host_of_rank[r.missing_to]));
    return 0;
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
    int rc = platform_check_routes(path, p, err);
    if (rc)
        return rc;
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

static int platform_read_cluster(const char *path, sim_platform *p, np_error *err)
{
    cl_cluster *c = &p->cluster;
    snprintf(c->name, sizeof c->name, "%s", path);
    c->num_npus = p->num_npus;
    c->peak_flops = sg_host_get_speed(p->host_of_rank[0]);
    if (!(c->peak_flops >= 1e6) || isinf(c->peak_flops))
        return np_error_set(err, NP_EXIT_INPUT, path, "speed", 0,
                            "host '%s' has speed %g: expected the peak FLOP/s (at least 1e6)",
                            sg_host_get_name(p->host_of_rank[0]), c->peak_flops);
    int rc = platform_read_props(path, p->host_of_rank[0], c, err);
    if (!rc)
        rc = platform_check_uniform(path, p, err);
    if (!rc && p->num_npus % c->npus_per_node)
        rc = np_error_set(err, NP_EXIT_INPUT, path, "npus_per_node",
                          prop_line(path, "npus_per_node"), "%d NPUs do not fill whole nodes of %d",
                          p->num_npus, c->npus_per_node);
    if (!rc)
        rc = platform_read_scaleout(path, p, err);
    return rc;
}

/* ------------------------------------------------------------------ API */

/* The taper of a FAT_TREE cluster, read from its topo_parameters
 * "L;m1..mL;w1..wL;p1..pL" (SimGrid's PGFT: a level-i switch has m_i children
 * over p_i links each and w_{i+1} parents over p_{i+1} links): the smallest
 * (w_{i+1}·p_{i+1}) / (m_i·p_i) over the levels below the top.  1 for any
 * other fabric, or when the attribute cannot be read. */
static int parse_list(const char *s, int *v, int max, const char **end)
{
    int n = 0;
    while (n < max) {
        char *e;
        long x = strtol(s, &e, 10);
        if (e == s || x <= 0)
            return -1;
        v[n++] = (int)x;
        s = e;
        if (*s != ',')
            break;
        s++;
    }
    *end = s;
    return n;
}

static double fat_tree_taper(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 1.0;
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *t = strstr(text, "topo_parameters=\"");
    if (!strstr(text, "FAT_TREE") || !t)
        return 1.0;
    t += strlen("topo_parameters=\"");
    int levels = atoi(t), m[8], w[8], p[8];
    const char *s = strchr(t, ';');
    if (levels < 1 || levels > 8 || !s || parse_list(s + 1, m, 8, &s) != levels || *s != ';' ||
        parse_list(s + 1, w, 8, &s) != levels || *s != ';' || parse_list(s + 1, p, 8, &s) != levels)
        return 1.0;
    double taper = 1.0;
    for (int i = 0; i + 1 < levels; i++) {
        double ratio = (double)w[i + 1] * p[i + 1] / ((double)m[i] * p[i]);
        if (ratio < taper)
            taper = ratio;
    }
    return taper;
}

int platform_load(const char *path, sim_platform *out, np_error *err)
{
    memset(out, 0, sizeof *out);
    np_error_clear(err);
    int rc = platform_check_file(path, err);
    if (!rc)
        rc = platform_load_into_simgrid(path, err);
    if (rc)
        return rc;
    size_t count = sg_host_count();
    sg_host_t *hosts = sg_host_list();
    if (count == 0 || count > (size_t)1 << 30)
        rc = np_error_set(err, NP_EXIT_INPUT, path, "", 0, "the platform has %zu hosts", count);
    else
        rc = platform_number_hosts(path, hosts, (int)count, out, err);
    free(hosts);
    if (!rc)
        rc = platform_read_cluster(path, out, err);
    if (rc)
        platform_free(out);
    else
        out->cluster.fabric_taper = fat_tree_taper(path);
    return rc;
}

void platform_free(sim_platform *p)
{
    free(p->host_of_rank);
    p->host_of_rank = NULL;
    p->num_npus = 0;
}
