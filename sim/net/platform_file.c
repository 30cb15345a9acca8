/*
 * platform_file.c -- the platform file, checked before SimGrid parses it.
 *
 * SimGrid aborts on what it cannot parse (platform_trap.c catches that), but
 * some files it accepts are still wrong for us, or cost more than the
 * machine has, and are cheaper to refuse from the text:
 *   - not a regular file (a directory, /dev/zero, a FIFO that would block),
 *     or over 256 MiB: said as such;
 *   - a workload JSON given where the platform goes: a hint that the
 *     platform comes first;
 *   - a <platform> element without a version: SimGrid would print its
 *     "BIG FAT WARNING" banner and convert the file, we ask for version 4.x;
 *   - clusters whose SimGrid platform would be too large to build: every
 *     <cluster> is sized from its radical (hosts) and, for a FAT_TREE, its
 *     topo_parameters (switches and links per level, SimGrid's PGFT), and the
 *     sum is held to platform_limits.max_elements.  SimGrid builds about a
 *     million elements in 7 s and 1.2 GB here ("2;4,2;1,4;1,1000000", eight
 *     hosts but eight million links, took 56 s and 10 GB).
 * The same scan finds the fat tree's taper and the torus or dragonfly
 * clusters (the folding check needs them, and they choose how SimGrid
 * re-solves its max-min system: cluster_size).
 * The scan reads elements and attributes only outside comments; it is not a
 * validating XML parser, SimGrid remains that.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "np_file.h"
#include "platform_internal.h"
#include "sg_options.h"

#define MAX_PLATFORM_FILE_BYTES ((size_t)256 << 20)
#define MAX_FAT_TREE_LEVELS 8

void platform_init_limits(platform_limits *lim)
{
    lim->max_elements = PLATFORM_MAX_ELEMENTS;
    lim->tune_solver = 1;
}

/* ------------------------------------------------------------- the text */

/* The '>' that ends the tag at s, past any quoted attribute value. */
static const char *tag_end(const char *s)
{
    for (char quote = 0; *s; s++) {
        if (quote)
            quote = *s == quote ? 0 : quote;
        else if (*s == '"' || *s == '\'')
            quote = *s;
        else if (*s == '>')
            return s;
    }
    return NULL;
}

/* The next element tag at or after s, skipping comments, <?...?> and
 * <!DOCTYPE ...>: *tag is set to its '<' and the return value is its end
 * ('>'), or NULL when there is none (or the tag is not closed). */
static const char *next_element(const char *s, const char **tag)
{
    while ((s = strchr(s, '<')) != NULL) {
        if (strncmp(s, "<!--", 4) == 0) {
            const char *end = strstr(s + 4, "-->");
            if (!end)
                return NULL;
            s = end + 3;
        } else if (s[1] == '?' || s[1] == '!' || s[1] == '/') {
            s++;
        } else {
            *tag = s;
            return tag_end(s);
        }
    }
    return NULL;
}

/* True when the tag [tag, end) is the element `name`. */
static int tag_is(const char *tag, const char *end, const char *name)
{
    size_t n = strlen(name);
    return (size_t)(end - tag) > n && strncmp(tag + 1, name, n) == 0 &&
           (isspace((unsigned char)tag[n + 1]) || tag[n + 1] == '>' || tag[n + 1] == '/');
}

/* Copies attribute `name` of the tag [tag, end) into buf; 0 when absent. */
static int tag_attribute(const char *tag, const char *end, const char *name, char *buf, size_t size)
{
    size_t n = strlen(name);
    for (const char *s = tag; s + n + 2 < end; s++) {
        if (!isspace((unsigned char)s[0]) || strncmp(s + 1, name, n) != 0)
            continue;
        const char *q = s + 1 + n;
        while (isspace((unsigned char)*q))
            q++;
        if (*q++ != '=')
            continue;
        while (isspace((unsigned char)*q))
            q++;
        char quote = *q++;
        const char *close = (quote == '"' || quote == '\'') ? memchr(q, quote, end - q) : NULL;
        if (!close)
            return 0;
        snprintf(buf, size, "%.*s", (int)(close - q), q);
        return 1;
    }
    return 0;
}

static int line_of(const char *text, const char *at)
{
    int line = 1;
    for (const char *s = text; s < at; s++)
        line += *s == '\n';
    return line;
}

/* ---------------------------------------------------------- cluster size */

/* "1,2,3" into v[0..]; the count, or -1 on anything but positive integers. */
static int parse_list(const char *s, double *v, int max, const char **end)
{
    int n = 0;
    while (n < max) {
        char *e;
        errno = 0;
        double x = strtod(s, &e);
        if (e == s || !(x >= 1) || x != floor(x) || errno == ERANGE)
            return -1;
        v[n++] = x;
        s = e;
        if (*s != ',')
            break;
        s++;
    }
    *end = s;
    return n;
}

/* A fat tree's "L;m1..mL;w1..wL;p1..pL" (SimGrid's PGFT: a level-i switch
 * has m_i children over p_i links each, w_i parents at level i): 0 with the
 * lists filled, or -1. */
static int parse_fat_tree(const char *t, int *levels, double *m, double *w, double *p)
{
    char *e;
    long l = strtol(t, &e, 10);
    const char *s = e;
    if (e == t || l < 1 || l > MAX_FAT_TREE_LEVELS || *s != ';' ||
        parse_list(s + 1, m, MAX_FAT_TREE_LEVELS, &s) != l || *s != ';' ||
        parse_list(s + 1, w, MAX_FAT_TREE_LEVELS, &s) != l || *s != ';' ||
        parse_list(s + 1, p, MAX_FAT_TREE_LEVELS, &s) != l)
        return -1;
    *levels = (int)l;
    return 0;
}

/* Hosts, switches and links of a fat tree: Π m_i hosts; at level k,
 * Π_{i>k} m_i · Π_{i≤k} w_i switches, each node of level k−1 with w_k·p_k
 * links up. */
static double fat_tree_elements(int levels, const double *m, const double *w, const double *p)
{
    double below = 1, total = 0;
    for (int i = 0; i < levels; i++)
        below *= m[i];
    total = below; /* the hosts */
    double nodes = below;
    for (int k = 0; k < levels; k++) {
        total += nodes * w[k] * p[k]; /* links from level k up */
        nodes = nodes / m[k] * w[k];  /* switches of level k + 1 */
        total += nodes;
    }
    return total;
}

/* The smallest w_{i+1} / m_i over the levels below the top: a switch's
 * parents over its children.  The p_i parallel links of a pair count once:
 * SimGrid 3.32's FAT_TREE routing picks one of them by the destination, so
 * flows to different hosts meet on one link while its twin idles (on
 * "2;8,8;1,4;1,2", which w·p/m would call non-blocking, npu-0 -> npu-8 and
 * npu-4 -> npu-12 share a down-link, and a ring all-reduce over 64 NPUs
 * takes 1.95x its time on "2;8,8;1,8;1,1"; with --fold-dp accepted there
 * the run came out 1.1% fast). */
static double fat_tree_taper(int levels, const double *m, const double *w)
{
    double taper = 1.0;
    for (int i = 0; i + 1 < levels; i++)
        taper = fmin(taper, w[i + 1] / m[i]);
    return taper;
}

/* Hosts of a radical "0-16383" or "0-3,8,10-11"; -1 when unreadable. */
static const char *skip_space(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    return s;
}

/* A host number of a radical: decimal digits only, as SimGrid reads them. */
static double radical_number(const char *r, char **e)
{
    if (!isdigit((unsigned char)*r)) {
        *e = (char *)r;
        return 0;
    }
    return (double)strtoull(r, e, 10);
}

static double radical_hosts(const char *r)
{
    double hosts = 0;
    for (r = skip_space(r); *r; r = skip_space(r)) {
        char *e;
        double a = radical_number(r, &e), b = a;
        if (e == r)
            return -1;
        r = skip_space(e);
        if (*r == '-') {
            const char *from = skip_space(r + 1);
            b = radical_number(from, &e);
            if (e == from)
                return -1;
            r = e;
        }
        hosts += fabs(b - a) + 1;
        r = skip_space(r);
        if (*r == ',')
            r++;
        else if (*r)
            return -1;
    }
    return hosts;
}

/* The hosts the radical attribute of the tag [tag, end) lists, read whole
 * however long it is: 0 without one, -1 when it does not parse; its start
 * goes to show[show_size] for messages. */
static double tag_radical_hosts(const char *tag, const char *end, char *show, size_t show_size)
{
    size_t size = (size_t)(end - tag) + 1; /* an attribute is shorter than its tag */
    char *radical = malloc(size);
    if (!radical)
        return -1;
    double hosts = 0;
    if (tag_attribute(tag, end, "radical", radical, size)) {
        hosts = radical_hosts(radical);
        snprintf(show, show_size, "%s", radical);
    }
    free(radical);
    return hosts;
}

/* A DRAGONFLY's "g,gl;c,cl;r,rl;n" (groups and links between groups,
 * chassis per group and links, routers per chassis and links, hosts per
 * router) into v[0..6]; -1 when malformed. */
static int parse_dragonfly(const char *t, double *v)
{
    const char *s = t;
    for (int i = 0; i < 7; i++) {
        char *e;
        double x = strtod(s, &e);
        char want = i == 6 ? '\0' : (i % 2 == 0 ? ',' : ';');
        if (e == s || !(x >= 1) || x != floor(x) || x > 1e9 || *e != want)
            return -1;
        v[i] = x;
        s = e + (i < 6);
    }
    return 0;
}

/* Hosts, routers and links of a dragonfly (SimGrid's DragonflyZone: a link
 * per host, all-to-all routers in a chassis and between chassis of a group,
 * one link per pair of groups); 0 with the count, or an error. */
static int dragonfly_size(const char *path, const char *text, const char *tag, const char *params,
                          double *elements, np_error *err)
{
    double v[7];
    if (parse_dragonfly(params, v))
        return np_error_set(err, NP_EXIT_INPUT, path, "topo_parameters", line_of(text, tag),
                            "DRAGONFLY: expected \"groups,links;chassis,links;routers,links;"
                            "hosts\" with positive integers, got \"%s\"",
                            params);
    /* SimGrid 3.32 routes traffic for group g through router g of the
     * sender's chassis: with more groups than routers per chassis it reads
     * past its tables (a segmentation fault here, not an abort). */
    if (v[0] > v[4])
        return np_error_set(err, NP_EXIT_INPUT, path, "topo_parameters", line_of(text, tag),
                            "DRAGONFLY \"%s\": %g groups but %g routers per chassis; SimGrid "
                            "3.32 needs at most as many groups as routers per chassis",
                            params, v[0], v[4]);
    double routers = v[0] * v[2] * v[4], hosts = routers * v[6];
    *elements += 3 * hosts + routers + v[0] * v[2] * v[4] * (v[4] - 1) / 2 +
                 v[0] * v[4] * v[2] * (v[2] - 1) / 2 + v[0] * (v[0] - 1) / 2;
    return 0;
}

/* Size of one <cluster>: hosts plus their private links (the fat tree's
 * when it is one).  The taper of a FAT_TREE goes to scan->taper, a torus or
 * a dragonfly to scan->fold_blocker and scan->solver.
 *
 * The solver: on a fat tree, a Clos or rails every flow that crosses the
 * spine shares a link with every other such flow, so a change reaches the
 * whole system and selective update saves little or costs more (64K per-rank
 * 1F1B: 21.1 s Full, 24.8 s selective; 16K interleaved per rank: 7.5 s and
 * 7.1 s), so fat trees keep Full, with which their results were computed
 * (the modes can differ by up to 0.3%, docs/design.md).  On a torus or a
 * dragonfly a flow's links are shared with few others and selective update
 * solves a small part: the 16K Llama run (llama.json, h100 preset) took
 * 8.5 s Full and 6.0 s selective on a 16x32x32 torus, 517 s Full and 35 s
 * selective on a 16-group dragonfly (scripts/bench_solver.sh, 5 December
 * 2026, the same iteration times; SimGrid's Lazy update, 7.2 s and 27 s,
 * also updates progress lazily and is not used; docs/design.md).  But
 * SimGrid 3.32's selective update does not always reach the max-min
 * solution the full solve finds: a butterfly all-reduce on a 64-NPU
 * dragonfly (TP 8 x DP 8) took 0.0961 s selective, 0.0931 s Full (+3.3%),
 * and the exact TP fold then differed from --per-rank-flows, which it
 * matches under Full.  So selective update is taken only where Full is
 * slow: above SELECTIVE_UPDATE_MIN_HOSTS NPUs (a 4,096-NPU dragonfly Llama
 * run: 5.6 s Full, 2.8 s selective; 1,024 NPUs: 0.17 s and 0.15 s), and
 * simrun says so in a note. */
static int cluster_size(const char *path, const char *text, const char *tag, const char *end,
                        double *elements, platform_scan *scan, np_error *err)
{
    char topology[32] = "", params[256] = "", radical[64] = ""; /* its start, for show */
    tag_attribute(tag, end, "topology", topology, sizeof topology);
    int torus = strcmp(topology, "TORUS") == 0, dragonfly = strcmp(topology, "DRAGONFLY") == 0;
    if (!scan->fold_blocker[0] && (torus || dragonfly))
        snprintf(scan->fold_blocker, sizeof scan->fold_blocker,
                 "a %s (cluster topology %s, line %d)", torus ? "torus" : "dragonfly", topology,
                 line_of(text, tag));
    int has_params = tag_attribute(tag, end, "topo_parameters", params, sizeof params);
    double hosts = tag_radical_hosts(tag, end, radical, sizeof radical);
    if (hosts < 0)
        return np_error_set(err, NP_EXIT_INPUT, path, "radical", line_of(text, tag),
                            "expected host numbers or ranges (non-negative integers) separated "
                            "by commas, e.g. \"0-127\" or \"0,2,4-7\", got \"%.60s%s\"",
                            radical, strlen(radical) >= sizeof radical - 1 ? "..." : "");
    if ((torus || dragonfly) && hosts > SELECTIVE_UPDATE_MIN_HOSTS) {
        scan->solver = SOLVER_SELECTIVE;
        snprintf(scan->solver_cluster, sizeof scan->solver_cluster, "%s of %.0f NPUs",
                 torus ? "torus" : "dragonfly", hosts);
    }
    if (strcmp(topology, "FAT_TREE") == 0 && has_params) {
        int levels;
        double m[MAX_FAT_TREE_LEVELS], w[MAX_FAT_TREE_LEVELS], p[MAX_FAT_TREE_LEVELS];
        if (parse_fat_tree(params, &levels, m, w, p))
            return np_error_set(err, NP_EXIT_INPUT, path, "topo_parameters", line_of(text, tag),
                                "expected \"L;m1,..,mL;w1,..,wL;p1,..,pL\" with L from 1 to %d "
                                "and positive integers, got \"%s\"",
                                MAX_FAT_TREE_LEVELS, params);
        double leaves = 1; /* hosts: the product of the m_i */
        for (int i = 0; i < levels; i++)
            leaves *= m[i];
        if (hosts > 0 && hosts != leaves)
            return np_error_set(err, NP_EXIT_INPUT, path, "radical", line_of(text, tag),
                                "the FAT_TREE \"%s\" has %.0f hosts (the product of its "
                                "m_i), radical=\"%.60s%s\" lists %.0f: expected the same count",
                                params, leaves, radical, strlen(radical) > 60 ? "..." : "", hosts);
        *elements += fat_tree_elements(levels, m, w, p);
        scan->taper = fmin(scan->taper, fat_tree_taper(levels, m, w));
        return 0;
    }
    if (strcmp(topology, "DRAGONFLY") == 0 && has_params)
        return dragonfly_size(path, text, tag, params, elements, err);
    double per_host = 3;                  /* a host, its private link up and down */
    if (strcmp(topology, "TORUS") == 0) { /* a link per dimension and direction */
        per_host += 2;
        for (const char *c = params; *c; c++)
            per_host += *c == ',' ? 2 : 0;
    }
    if (hosts > 0)
        *elements += per_host * hosts;
    return 0;
}

/* ------------------------------------------------------------------ check */

/* A bandwidth that is not positive or a latency that is negative, in an
 * element's attribute: SimGrid throws an exception that names neither the
 * file's line nor the attribute (FatTreeZone), so the reader says it first.
 * A value that is not a number is left to SimGrid's parser, which names the
 * line. */
static int link_figures(const char *path, const char *text, const char *tag, const char *end,
                        np_error *err)
{
    static const struct {
        const char *element, *attribute;
        int latency;
    } figures[] = {{"cluster", "bw", 0},          {"cluster", "lat", 1},
                   {"cluster", "bb_bw", 0},       {"cluster", "bb_lat", 1},
                   {"cluster", "loopback_bw", 0}, {"cluster", "loopback_lat", 1},
                   {"link", "bandwidth", 0},      {"link", "latency", 1},
                   {"backbone", "bandwidth", 0},  {"backbone", "latency", 1}};
    for (size_t i = 0; i < sizeof figures / sizeof figures[0]; i++) {
        char value[128]; /* a longer figure is cut at its digits: not tested */
        if (!tag_is(tag, end, figures[i].element) ||
            !tag_attribute(tag, end, figures[i].attribute, value, sizeof value) ||
            strlen(value) >= sizeof value - 1)
            continue;
        char *rest;
        double v = strtod(value, &rest);
        if (rest == value)
            continue;
        if (figures[i].latency ? v < 0 : !(v > 0))
            return np_error_set(err, NP_EXIT_INPUT, path, figures[i].attribute, line_of(text, tag),
                                "expected a %s on <%s>, got \"%s\"",
                                figures[i].latency ? "latency of 0 or more" : "positive bandwidth",
                                figures[i].element, value);
    }
    return 0;
}

/* Every <prop> of a <cluster> or a <host> is a property npusim (or
 * SimGrid's energy plugin) reads: a misspelt optional one would otherwise
 * price the platform without it, silently.  Elements are followed on a stack
 * (closing tags pop it), so a zone's or a link's own <prop>s, and <config>'s,
 * are not taken for a host's.  A <config>'s <prop>s are SimGrid options,
 * held to the values npusim accepts (sg_options.h), as --cfg is. */
static int check_host_props(const char *path, const char *text, np_error *err)
{
    enum { DEPTH = 64, SEEN = 64 };
    char stack[DEPTH][16];
    const char *opened[DEPTH]; /* where each element on the stack starts */
    char seen[SEEN][128];      /* the ids of the current owner's props */
    const char *owner = NULL;
    int depth = 0, num_seen = 0;
    for (const char *s = text; (s = strchr(s, '<')) != NULL;) {
        if (strncmp(s, "<!--", 4) == 0) {
            const char *end = strstr(s + 4, "-->");
            if (!end)
                return 0;
            s = end + 3;
            continue;
        }
        const char *end = tag_end(s);
        if (!end)
            return 0;
        if (s[1] == '/') {
            depth -= depth > 0;
        } else if (s[1] != '?' && s[1] != '!') {
            size_t n = strcspn(s + 1, " \t\r\n/>");
            bool leaf = end[-1] == '/';
            if (n == 4 && strncmp(s + 1, "prop", 4) == 0 && depth > 0 &&
                strcmp(stack[depth - 1], "config") == 0) {
                char id[128] = "", value[256] = "", why[900];
                tag_attribute(s, end, "id", id, sizeof id);
                tag_attribute(s, end, "value", value, sizeof value);
                if (sg_option_check(id, value, why, sizeof why))
                    return np_error_set(err, NP_EXIT_INPUT, path, id, line_of(text, s),
                                        "<config>: %s", why);
            } else if (n == 4 && strncmp(s + 1, "prop", 4) == 0 && depth > 0 &&
                       (strcmp(stack[depth - 1], "cluster") == 0 ||
                        strcmp(stack[depth - 1], "host") == 0)) {
                char id[128] = "";
                const char *nearest;
                bool has_id = tag_attribute(s, end, "id", id, sizeof id);
                if (has_id && !platform_prop_known(id, &nearest))
                    return np_error_set(
                        err, NP_EXIT_INPUT, path, id, line_of(text, s),
                        "not a host property npusim reads%s%s%s (docs/platform-format.md lists "
                        "them): a misspelt optional property would silently be left out",
                        nearest ? "; did you mean " : "", nearest ? nearest : "",
                        nearest ? "?" : "");
                /* SimGrid keeps the first of two equal ids and drops the other */
                if (owner != opened[depth - 1])
                    owner = opened[depth - 1], num_seen = 0;
                for (int k = 0; has_id && k < num_seen; k++)
                    if (strcmp(seen[k], id) == 0)
                        return np_error_set(err, NP_EXIT_INPUT, path, id, line_of(text, s),
                                            "given twice on the same <%s>: expected one value",
                                            stack[depth - 1]);
                if (has_id && num_seen < SEEN)
                    snprintf(seen[num_seen++], sizeof seen[0], "%s", id);
            }
            if (!leaf && depth < DEPTH) {
                opened[depth] = s;
                snprintf(stack[depth++], sizeof stack[0], "%.*s", (int)(n < 15 ? n : 15), s + 1);
            }
        }
        s = end + 1;
    }
    return 0;
}

int platform_precheck(const char *path, const platform_limits *lim, platform_scan *scan,
                      np_error *err)
{
    scan->taper = 1.0;
    scan->fold_blocker[0] = '\0';
    scan->solver = SOLVER_FULL;
    scan->solver_cluster[0] = '\0';
    scan->file_sets_solver = 0;
    char *text;
    size_t len;
    int rc = np_file_read(path, "platform file", MAX_PLATFORM_FILE_BYTES, &text, &len, err);
    if (rc)
        return rc;
    const char *first = text;
    while (isspace((unsigned char)*first))
        first++;
    const char *tag = NULL, *end = next_element(text, &tag);
    if (*first == '{' || *first == '[')
        rc = np_error_set(err, NP_EXIT_INPUT, path, "", 0,
                          "this looks like a workload JSON file, not a platform XML: the "
                          "platform comes first (simrun PLATFORM.xml WORKLOAD.json)");
    else if (!end)
        rc = np_error_set(err, NP_EXIT_INPUT, path, "", 0,
                          "no <platform> element: the file is empty or cut short");
    else if (!tag_is(tag, end, "platform"))
        rc = np_error_set(err, NP_EXIT_INPUT, path, "", line_of(text, tag),
                          "expected a SimGrid platform: the first element must be <platform "
                          "version=\"4.1\">");
    char version[32] = "";
    if (!rc && !tag_attribute(tag, end, "version", version, sizeof version))
        rc = np_error_set(err, NP_EXIT_INPUT, path, "version", line_of(text, tag),
                          "the <platform> element has no version: expected version=\"4.1\"");
    else if (!rc && (atof(version) < 4 || atof(version) >= 5))
        rc =
            np_error_set(err, NP_EXIT_INPUT, path, "version", line_of(text, tag),
                         "expected a platform of version 4 (version=\"4.1\"), got \"%s\"", version);
    if (!rc)
        rc = check_host_props(path, text, err);
    double elements = 0;
    while (!rc && (end = next_element(end, &tag)) != NULL) {
        if ((rc = link_figures(path, text, tag, end, err)))
            break;
        char id[40];
        if (tag_is(tag, end, "prop") && tag_attribute(tag, end, "id", id, sizeof id) &&
            (strcmp(id, "network/optim") == 0 ||
             strcmp(id, "network/maxmin-selective-update") == 0))
            scan->file_sets_solver = 1; /* the platform's own setting wins */
        if (!tag_is(tag, end, "cluster"))
            continue;
        rc = cluster_size(path, text, tag, end, &elements, scan, err);
        if (!rc && elements > lim->max_elements)
            rc = np_error_set(err, NP_EXIT_INPUT, path, "topo_parameters", line_of(text, tag),
                              "the platform has at least %.3g hosts, switches and links, over "
                              "the limit of %.3g that SimGrid builds in about 15 s and 2 GB "
                              "here (--allow-large loads it anyway)",
                              elements, lim->max_elements);
    }
    free(text);
    return rc;
}

int platform_prop_line(const char *path, const char *name)
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
