/*
 * engine_bound.c -- the bound on a run's size that simrun holds the estimate
 * (engine_estimate.c) to, and how a refusal reads (engine.h).
 *
 * A run costs host time in proportion to the SimGrid activities it starts,
 * about 100K per second on this machine (docs/design.md, SimGrid facts).
 * The bound (engine_init_limits): 5e7 activities, about 10 minutes at that
 * rate, and the machine's memory (MemTotal of /proc/meminfo).  An op list
 * indexes its ops with an int that doubles, so no stage may hold more than
 * 2^30 ops, bound or not.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"

#define MAX_STAGE_OPS (1 << 30) /* sched_push() doubles an int capacity */
#define DEFAULT_MAX_ACTIVITIES 5e7

/* MemTotal of /proc/meminfo in bytes, INFINITY when it cannot be read. */
static double mem_total_bytes(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return INFINITY;
    char line[256];
    double kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemTotal: %lf kB", &kib) == 1)
            break;
    fclose(f);
    return kib > 0 ? kib * 1024 : INFINITY;
}

void engine_init_limits(engine_limits *l)
{
    l->max_activities = DEFAULT_MAX_ACTIVITIES;
    l->max_bytes = mem_total_bytes();
}

void engine_format_bytes(double bytes, char *buf, int size)
{
    static const char *units[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
    int u = 0;
    while (bytes >= 1000 && u < (int)(sizeof units / sizeof units[0]) - 1) {
        bytes /= 1000;
        u++;
    }
    snprintf(buf, size, bytes < 10 && u > 0 ? "%.1f %s" : "%.0f %s", bytes, units[u]);
}

int engine_check_estimate(const engine_estimate *e, const engine_limits *l, const char *source,
                          const char *key, const char *what, np_error *err)
{
    bool too_long = e->activities > l->max_activities;
    bool too_big = e->bytes > l->max_bytes;
    bool unlistable = e->max_stage_ops > MAX_STAGE_OPS;
    if (!too_long && !too_big && !unlistable)
        return 0;
    char bytes[32], limit_bytes[32], over[200] = "";
    engine_format_bytes(e->bytes, bytes, sizeof bytes);
    if (too_long)
        snprintf(over, sizeof over, ", over the limit of %.2g activities", l->max_activities);
    if (too_big) {
        engine_format_bytes(l->max_bytes, limit_bytes, sizeof limit_bytes);
        snprintf(over + strlen(over), sizeof over - strlen(over),
                 "%s the %s of memory of this machine (MemTotal)", too_long ? " and" : ", over",
                 limit_bytes);
    }
    if (unlistable)
        /* sched_push() doubles an int capacity: no --allow-large helps */
        return np_error_set(err, NP_EXIT_INPUT, source, key, 0,
                            "%s: about %.2g SimGrid activities and %s%s; stage %d's op list "
                            "would hold %.3g ops, more than the %d an op list can hold, so it "
                            "cannot run even with --allow-large",
                            what, e->activities, bytes, over, e->largest_stage, e->max_stage_ops,
                            MAX_STAGE_OPS);
    return np_error_set(err, NP_EXIT_INPUT, source, key, 0,
                        "%s: about %.2g SimGrid activities and %s%s (--allow-large runs it "
                        "anyway)",
                        what, e->activities, bytes, over);
}
