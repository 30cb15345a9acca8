/*
 * sg_options.c -- the SimGrid configuration options npusim accepts
 * (sg_options.h): each with the values that give a valid run.  Names and
 * defaults are SimGrid 3.32's (`--help` of any SimGrid program lists them).
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sg_options.h"

typedef enum {
    OPT_CHOICE,  /* one of `choices` ("|"-separated) */
    OPT_BOOLEAN, /* as SimGrid reads a boolean */
    OPT_NUMBER,  /* a finite number in [min, max] */
    OPT_INTEGER, /* an integer in [min, max] */
} opt_kind;

typedef struct {
    const char *name;
    opt_kind kind;
    const char *choices;
    double min, max;
    const char *why; /* why the range, for the message */
} sg_option;

/* The smallest stack npusim's actors are run with in its tests (the
 * default it sets, engine.c); 4 KiB overflows them. */
enum { MIN_STACK_KIB = 64, MAX_STACK_KIB = 1 << 20 };

static const sg_option options[] = {
    {"network/model", OPT_CHOICE, "CM02|LV08|IB|SMPI", 0, 0,
     "a fluid model with links (Constant has none, ns-3 is not built in)"},
    {"network/optim", OPT_CHOICE, "Full|Lazy", 0, 0, ""},
    {"network/maxmin-selective-update", OPT_BOOLEAN, NULL, 0, 0, ""},
    {"network/crosstraffic", OPT_BOOLEAN, NULL, 0, 0, ""},
    {"network/TCP-gamma", OPT_NUMBER, NULL, 0, 1e30, "0 means no TCP window bound"},
    {"network/latency-factor", OPT_NUMBER, NULL, 0, 1e6, "a factor on every link latency"},
    {"network/bandwidth-factor", OPT_NUMBER, NULL, 1e-6, 1e6,
     "a factor on every link bandwidth: 0 makes every transfer endless"},
    {"network/weight-S", OPT_NUMBER, NULL, 0, 1e30, ""},
    {"network/loopback-bw", OPT_NUMBER, NULL, 1e3, 1e30, "bytes per second, as a link's"},
    {"network/loopback-lat", OPT_NUMBER, NULL, 0, 1, "seconds, as a link's"},
    {"cpu/optim", OPT_CHOICE, "Full|Lazy|TI", 0, 0, ""},
    {"cpu/maxmin-selective-update", OPT_BOOLEAN, NULL, 0, 0, ""},
    {"host/model", OPT_CHOICE, "default|compound|ptask_L07", 0, 0, ""},
    {"surf/precision", OPT_NUMBER, NULL, 1e-15, 1e-9,
     "seconds, at most SimGrid's default: a coarser one rounds the microsecond latencies and "
     "the event times; 1 turns a 26 s iteration into 31 s"},
    {"maxmin/precision", OPT_NUMBER, NULL, 1e-9, 1e-5,
     "at most SimGrid's default (a coarser one leaves flows without a share) and at least "
     "1e-9 (1e-10 crashed the solver on a butterfly all-reduce on a dragonfly)"},
    {"maxmin/concurrency-limit", OPT_INTEGER, NULL, -1, -1,
     "-1, no limit: a limit would queue flows the schedule expects to run"},
    {"contexts/factory", OPT_CHOICE, "raw|ucontext|boost|thread", 0, 0, ""},
    {"contexts/stack-size", OPT_INTEGER, NULL, MIN_STACK_KIB, MAX_STACK_KIB,
     "KiB: npusim's actors are run and tested with 64 KiB stacks; 4 KiB overflows them"},
    {"contexts/guard-size", OPT_INTEGER, NULL, 1, 64,
     "memory pages below each stack, at least 1 so that an overflow stops the run"},
    {"contexts/nthreads", OPT_INTEGER, NULL, 1, 1,
     "SimGrid's activity creation is not thread-safe, and npusim's actors share "
     "state, so parallel contexts crash a run"},
};
enum { NUM_OPTIONS = sizeof options / sizeof options[0] };

const char *sg_options_accepted(void)
{
    static char list[1024];
    if (!list[0])
        for (int i = 0; i < NUM_OPTIONS; i++) {
            size_t n = strlen(list);
            snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", options[i].name);
        }
    return list;
}

static bool in_choices(const char *choices, const char *value)
{
    size_t len = strlen(value);
    for (const char *p = choices; *p;) {
        size_t n = strcspn(p, "|");
        if (n == len && strncmp(p, value, n) == 0)
            return true;
        p += n + (p[n] == '|');
    }
    return false;
}

static bool is_boolean(const char *v)
{
    static const char *words[] = {"yes", "no", "on", "off", "true", "false", "1", "0"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcasecmp(v, words[i]) == 0)
            return true;
    return false;
}

static int range_error(const sg_option *o, const char *value, char *why, size_t size)
{
    const char *what = o->kind == OPT_INTEGER ? "an integer" : "a number";
    bool said = o->why[0] != '\0';
    if (o->min == o->max)
        snprintf(why, size, "expected %g%s%s%s, got \"%s\"", o->min, said ? " (" : "", o->why,
                 said ? ")" : "", value);
    else
        snprintf(why, size, "expected %s from %g to %g%s%s%s, got \"%s\"", what, o->min, o->max,
                 said ? " (" : "", o->why, said ? ")" : "", value);
    return -1;
}

int sg_option_check(const char *name, const char *value, char *why, size_t size)
{
    const sg_option *o = NULL;
    for (int i = 0; i < NUM_OPTIONS && !o; i++)
        if (strcmp(options[i].name, name) == 0)
            o = &options[i];
    if (!o) {
        snprintf(why, size,
                 "not a SimGrid option npusim accepts; accepted: %s (docs/design.md, "
                 "\"SimGrid options\")",
                 sg_options_accepted());
        return -1;
    }
    switch (o->kind) {
    case OPT_CHOICE:
        if (!in_choices(o->choices, value)) {
            snprintf(why, size, "expected one of %s%s%s, got \"%s\"", o->choices,
                     o->why[0] ? ": " : "", o->why, value);
            return -1;
        }
        return 0;
    case OPT_BOOLEAN:
        if (!is_boolean(value)) {
            snprintf(why, size, "expected yes or no (on/off, true/false, 1/0), got \"%s\"", value);
            return -1;
        }
        return 0;
    case OPT_NUMBER:
    case OPT_INTEGER: {
        char *end;
        double v = strtod(value, &end);
        bool integer = o->kind == OPT_INTEGER;
        if (end == value || *end != '\0' || !isfinite(v) || (integer && v != floor(v)) ||
            v < o->min || v > o->max)
            return range_error(o, value, why, size);
        return 0;
    }
    }
    return 0;
}

/* The next setting of text at *p, split at `separators` as SimGrid and
 * xbt split theirs, into buf: false when none is left. */
static bool next_setting(const char **p, const char *separators, char *buf, size_t size)
{
    *p += strspn(*p, separators);
    if (!**p)
        return false;
    size_t n = strcspn(*p, separators);
    snprintf(buf, size, "%.*s", (int)n, *p);
    *p += n;
    return true;
}

int sg_options_check_cfg(const char *cfg, np_error *err)
{
    char setting[512];
    for (const char *p = cfg; next_setting(&p, " \t\n,", setting, sizeof setting);) {
        char *colon = strchr(setting, ':');
        if (!colon)
            return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--cfg", 0,
                                "\"%s\": expected NAME:VALUE", setting);
        *colon = '\0';
        char why[900];
        if (sg_option_check(setting, colon + 1, why, sizeof why))
            return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--cfg", 0, "%s: %s", setting,
                                why);
    }
    return 0;
}

int sg_log_check(const char *log, np_error *err)
{
    static const char *levels[] = {"trace",   "debug", "verbose",  "info",
                                   "warning", "error", "critical", "none"};
    char setting[256];
    for (const char *p = log; next_setting(&p, " \t\n", setting, sizeof setting);) {
        char *colon = strchr(setting, ':');
        char *dot = colon ? memchr(setting, '.', (size_t)(colon - setting)) : NULL;
        while (dot && memchr(dot + 1, '.', (size_t)(colon - dot - 1)))
            dot = memchr(dot + 1, '.', (size_t)(colon - dot - 1)); /* the last dot names the key */
        if (!colon || !dot || strncmp(dot + 1, "thres", 5) != 0 ||
            strspn(dot + 6, "hold") != (size_t)(colon - dot - 6))
            return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--log", 0,
                                "\"%s\": expected CATEGORY.thres:LEVEL (a log threshold; "
                                "appenders, which write files, and layouts are not accepted)",
                                setting);
        bool known = false;
        for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++)
            known |= strcasecmp(colon + 1, levels[i]) == 0;
        if (!known)
            return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--log", 0,
                                "\"%s\": expected a level, one of trace, debug, verbose, info, "
                                "warning, error, critical",
                                setting);
    }
    return 0;
}
