/*
 * sweep_file.c -- the sweep file: reading it with every key checked
 * (docs/sweeps.md, "The sweep file"), and the table of simrun's options the
 * checks, the failure rows and the runner share.
 *
 * As in the workload loader, a key that is not known, a value of the wrong
 * type and a duplicate key are errors naming the file and the dotted key;
 * nothing is ignored.  Platform and workload files must exist (paths are
 * relative to the current folder, as simrun's arguments are).  The points
 * are made by sweep_point.c.
 */
#define _GNU_SOURCE /* asprintf */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "np_json.h"
#include "workload.h"
#include "sweep_internal.h"

/* Largest sweep file read (an explicit point list of a million points is
 * well under it). */
#define MAX_SWEEP_FILE_BYTES ((size_t)256 << 20)

/* simrun's options (sim/cli, simrun --help), by how they take their value;
 * the ones a sweep may not give say why.  A value that is a file (--plan,
 * --moe-trace) is passed as written: relative to the folder simsweep runs
 * in, as simrun's arguments are. */
static const struct {
    const char *name;
    sweep_option_kind kind;
    const char *refused; /* SWEEP_OPT_MANAGED: why a sweep cannot give it */
} options[] = {
    {"--planner", SWEEP_OPT_VALUE, NULL},
    {"--schedule", SWEEP_OPT_VALUE, NULL},
    {"--plan", SWEEP_OPT_VALUE, NULL},
    {"--plan-out", SWEEP_OPT_VALUE, NULL},
    {"--frontier", SWEEP_OPT_VALUE, NULL},
    {"--trace", SWEEP_OPT_VALUE, NULL},
    {"--trace-replicas", SWEEP_OPT_VALUE, NULL},
    {"--dp-algorithm", SWEEP_OPT_VALUE, NULL},
    {"--dp-inter-algorithm", SWEEP_OPT_VALUE, NULL},
    {"--dp-radix", SWEEP_OPT_VALUE, NULL},
    {"--ep-alltoall-algorithm", SWEEP_OPT_VALUE, NULL},
    {"--dp-bucket-bytes", SWEEP_OPT_VALUE, NULL},
    {"--fold-dp", SWEEP_OPT_VALUE, NULL},
    {"--placement", SWEEP_OPT_VALUE, NULL},
    {"--moe-policy", SWEEP_OPT_VALUE, NULL},
    {"--moe-trace", SWEEP_OPT_VALUE, NULL},
    {"--moe-trace-step", SWEEP_OPT_VALUE, NULL},
    {"--moe-sample-mb", SWEEP_OPT_VALUE, NULL},
    {"--set", SWEEP_OPT_VALUE, NULL}, /* in "options" only: vary workload keys instead */
    {"--dp-overlap", SWEEP_OPT_FLAG, NULL},
    {"--per-rank-flows", SWEEP_OPT_FLAG, NULL},
    {"--shifted-recompute", SWEEP_OPT_FLAG, NULL},
    {"--allow-large", SWEEP_OPT_FLAG, NULL},
    {"--ignore-memory", SWEEP_OPT_FLAG, NULL},
    {"--cfg", SWEEP_OPT_JOINED, NULL},
    {"--log", SWEEP_OPT_JOINED, NULL},
    {"--csv", SWEEP_OPT_MANAGED, "simsweep sets --csv itself (the sweep's \"csv\" or -o)"},
    {"--quiet", SWEEP_OPT_MANAGED, "simsweep sets --quiet itself"},
    {"--run-id", SWEEP_OPT_MANAGED, "simsweep sets --run-id itself (the point's run id)"},
    {"--memory", SWEEP_OPT_MANAGED,
     "--memory prints a table and simsweep runs simrun with --quiet, which refuses it; the "
     "CSV's mem_* columns hold the fullest stage's memory"},
    {"--stages", SWEEP_OPT_MANAGED,
     "--stages prints a table and simsweep runs simrun with --quiet, which refuses it; the CSV "
     "holds the run's totals (a point's stages: simrun --stages on its own)"},
    {"--progress", SWEEP_OPT_MANAGED,
     "simsweep runs simrun with --quiet, which shows no progress; simsweep reports its own"},
    {"--csv-header", SWEEP_OPT_MANAGED, "--csv-header prints the header and runs nothing"},
    {"--version", SWEEP_OPT_MANAGED, "--version prints simrun's version and runs nothing"},
    {"--help", SWEEP_OPT_MANAGED, "--help prints simrun's usage and runs nothing"},
};
#define NUM_OPTIONS (int)(sizeof options / sizeof options[0])

/* The entry of arg ("--name" or "--name=VALUE"), or -1. */
static int option_index(const char *arg)
{
    size_t n = strcspn(arg, "=");
    for (int i = 0; i < NUM_OPTIONS; i++)
        if (strlen(options[i].name) == n && strncmp(arg, options[i].name, n) == 0)
            return i;
    return -1;
}

sweep_option_kind sweep_option_kind_of(const char *arg)
{
    int i = option_index(arg);
    if (i < 0)
        return SWEEP_OPT_UNKNOWN;
    return arg[strcspn(arg, "=")] == '=' && options[i].kind != SWEEP_OPT_JOINED ? SWEEP_OPT_UNKNOWN
                                                                                : options[i].kind;
}

/* Why a sweep may not give arg (a SWEEP_OPT_MANAGED option). */
static const char *refusal(const char *arg)
{
    int i = option_index(arg);
    return i >= 0 && options[i].refused ? options[i].refused : "simsweep sets it itself";
}

/* "--planner, --schedule, ..., --cfg": the options a point can set, for the
 * error naming an unknown one. */
static const char *settable_options(void)
{
    static char list[1024];
    if (!list[0])
        for (int i = 0; i < NUM_OPTIONS; i++)
            if ((options[i].kind == SWEEP_OPT_VALUE || options[i].kind == SWEEP_OPT_FLAG ||
                 strcmp(options[i].name, "--cfg") == 0) &&
                strcmp(options[i].name, "--set") != 0)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                         list[0] ? ", " : "", options[i].name);
    return list;
}

/* Option values that make simrun write more than one row: a point is one. */
static const char *many_rows(const char *option, const char *value)
{
    if (strcasecmp(value, "all") != 0) /* simrun matches names in any case */
        return NULL;
    if (strcmp(option, "--planner") == 0)
        return "--planner all writes one row per planner, a point is one row: vary "
               "\"--planner\" over the planners' names";
    if (strcmp(option, "--moe-policy") == 0)
        return "--moe-policy all writes one row per policy, a point is one row: vary "
               "\"--moe-policy\" over the policies' names";
    return NULL;
}

static const char *const top_keys[] = {"name",      "description", "csv",    "platforms",
                                       "workloads", "vary",        "points", "options"};
#define NUM_TOP_KEYS (int)(sizeof top_keys / sizeof top_keys[0])

/* ---- errors ------------------------------------------------------------- */

#define FAIL(err, path, key, ...) np_error_set((err), NP_EXIT_INPUT, (path), (key), 0, __VA_ARGS__)

static const char *describe(const json_t *v, char *buf, size_t size)
{
    if (json_is_object(v))
        return "an object";
    if (json_is_array(v))
        return "an array";
    if (json_is_null(v))
        return "null";
    char *text = json_dumps(v, JSON_ENCODE_ANY);
    snprintf(buf, size, "%.60s%s", text ? text : "?", text && strlen(text) > 60 ? "..." : "");
    free(text);
    return buf;
}

static int fail_type(np_error *err, const char *path, const char *key, const char *expected,
                     const json_t *v)
{
    char got[80];
    return FAIL(err, path, key, "expected %s, got %s", expected, describe(v, got, sizeof got));
}

/* ---- checking values ---------------------------------------------------- */

static bool is_scalar(const json_t *v)
{
    return json_is_string(v) || json_is_number(v) || json_is_boolean(v);
}

/* A workload key as --set takes it: dotted or bare, no '=', no spaces. */
static bool valid_workload_key(const char *k)
{
    if (!*k || *k == '-' || strlen(k) > 200)
        return false;
    for (const char *c = k; *c; c++)
        if (*c == '=' || (unsigned char)*c <= ' ')
            return false;
    return true;
}

/* The value v of key (a point's "--option" or workload key), at `where`. */
static int check_point_value(const char *path, const char *where, const char *key, const json_t *v,
                             np_error *err)
{
    if (strncmp(key, "--", 2) != 0) {
        if (!valid_workload_key(key))
            return FAIL(err, path, where,
                        "not a simrun option (\"--name\") nor a workload key as --set takes it");
        if (!is_scalar(v))
            return fail_type(err, path, where, "a string, number or boolean", v);
        if (strcmp(key, "planner") == 0 && json_is_string(v) &&
            !strcasecmp(json_string_value(v), "all")) /* simrun matches names in any case */
            return FAIL(err, path, where,
                        "planner \"all\" writes one row per planner, a point is one row: "
                        "vary \"--planner\" over the planners' names");
        return 0;
    }
    sweep_option_kind kind = strchr(key, '=') ? SWEEP_OPT_UNKNOWN : sweep_option_kind_of(key);
    if (kind == SWEEP_OPT_JOINED && strcmp(key, "--cfg") != 0)
        kind = SWEEP_OPT_UNKNOWN; /* --log: logging, not a point's identity */
    if (kind == SWEEP_OPT_MANAGED)
        return FAIL(err, path, where, "%s", refusal(key));
    if (kind == SWEEP_OPT_UNKNOWN || strcmp(key, "--set") == 0)
        return FAIL(err, path, where,
                    "not a simrun option a point can set; expected one of %s, or a workload key",
                    settable_options());
    if (kind == SWEEP_OPT_FLAG && !json_is_boolean(v))
        return fail_type(err, path, where, "true or false (a flag)", v);
    if (kind != SWEEP_OPT_FLAG && !(json_is_string(v) || json_is_number(v) || json_is_false(v)))
        return fail_type(err, path, where, "a string or a number (or false to omit it)", v);
    const char *why = json_is_string(v) ? many_rows(key, json_string_value(v)) : NULL;
    if (why)
        return FAIL(err, path, where, "%s", why);
    return 0;
}

static int check_file_list(const char *path, const char *key, const json_t *v, np_error *err)
{
    if (!json_is_array(v) || json_array_size(v) == 0)
        return fail_type(err, path, key, "a non-empty array of file names", v);
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        char where[64];
        snprintf(where, sizeof where, "%s[%zu]", key, i);
        if (!json_is_string(e) || !*json_string_value(e))
            return fail_type(err, path, where, "a file name", e);
        struct stat st;
        if (stat(json_string_value(e), &st) != 0 || !S_ISREG(st.st_mode))
            return FAIL(err, path, where,
                        "'%s' is not a readable file (paths are relative to "
                        "the current folder)",
                        json_string_value(e));
    }
    return 0;
}

/* "options": simrun arguments as simrun parses them. */
static int check_fixed_options(const char *path, const json_t *v, np_error *err)
{
    if (!json_is_array(v))
        return fail_type(err, path, "options", "an array of strings", v);
    size_t n = json_array_size(v);
    for (size_t i = 0; i < n; i++) {
        char where[64];
        snprintf(where, sizeof where, "options[%zu]", i);
        const json_t *e = json_array_get(v, i);
        if (!json_is_string(e))
            return fail_type(err, path, where, "a string", e);
        const char *a = json_string_value(e);
        sweep_option_kind kind = strncmp(a, "--", 2) == 0 ? sweep_option_kind_of(a) : 0;
        if (kind == SWEEP_OPT_MANAGED)
            return FAIL(err, path, where, "%s", refusal(a));
        if (kind == SWEEP_OPT_UNKNOWN)
            return FAIL(err, path, where,
                        "'%s' is not a simrun option (\"options\" holds options and their "
                        "values; platforms and workloads have their own keys)",
                        a);
        if (kind == SWEEP_OPT_JOINED && !strchr(a, '='))
            return FAIL(err, path, where, "write %s=VALUE as one string", a);
        if (kind != SWEEP_OPT_VALUE)
            continue;
        if (++i >= n || !json_is_string(json_array_get(v, i)))
            return FAIL(err, path, where, "%s takes a value: the next string of the array", a);
        const char *value = json_string_value(json_array_get(v, i));
        snprintf(where, sizeof where, "options[%zu]", i);
        const char *why = many_rows(a, value);
        if (why)
            return FAIL(err, path, where, "%s", why);
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)strcspn(value, "="), value);
        if (strcmp(a, "--set") == 0 && (!strchr(value, '=') || !valid_workload_key(key)))
            return FAIL(err, path, where,
                        "--set takes KEY=VALUE (a workload key as docs/workload-format.md names "
                        "it, then '='), got '%s'",
                        value);
        if (strcmp(a, "--set") == 0 &&
            (strcasecmp(value, "planner=all") == 0 || strcasecmp(value, "planner=\"all\"") == 0))
            return FAIL(err, path, where,
                        "planner all writes one row per planner, a point is "
                        "one row: vary \"--planner\" over the planners' names");
    }
    return 0;
}

static int check_vary(const char *path, const json_t *vary, np_error *err)
{
    if (!json_is_object(vary))
        return fail_type(err, path, "vary", "an object of KEY: [values]", vary);
    const char *key;
    json_t *values;
    json_object_foreach((json_t *)vary, key, values)
    {
        char where[300];
        snprintf(where, sizeof where, "vary.%s", key);
        if (json_is_array(values) && json_array_size(values) == 0)
            return FAIL(err, path, where, "expected a non-empty array of values, got []");
        if (!json_is_array(values))
            return fail_type(err, path, where, "a non-empty array of values", values);
        size_t i;
        json_t *v;
        json_array_foreach(values, i, v)
        {
            snprintf(where, sizeof where, "vary.%s[%zu]", key, i);
            int rc = check_point_value(path, where, key, v, err);
            if (rc)
                return rc;
        }
    }
    return 0;
}

static int check_points(const char *path, const json_t *points, np_error *err)
{
    if (json_is_array(points) && json_array_size(points) == 0)
        return FAIL(err, path, "points", "expected a non-empty array of objects, got []");
    if (!json_is_array(points))
        return fail_type(err, path, "points", "an array of objects", points);
    size_t i;
    json_t *pt;
    json_array_foreach(points, i, pt)
    {
        char where[300];
        snprintf(where, sizeof where, "points[%zu]", i);
        if (!json_is_object(pt))
            return fail_type(err, path, where, "an object of KEY: value", pt);
        const char *key;
        json_t *v;
        json_object_foreach(pt, key, v)
        {
            snprintf(where, sizeof where, "points[%zu].%s", i, key);
            int rc = check_point_value(path, where, key, v, err);
            if (rc)
                return rc;
        }
    }
    return 0;
}

static int check_top(const char *path, json_t *root, np_error *err)
{
    if (!json_is_object(root))
        return fail_type(err, path, "", "an object at the top level", root);
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        int known = 0;
        for (int i = 0; i < NUM_TOP_KEYS; i++)
            known |= strcmp(key, top_keys[i]) == 0;
        if (!known)
            return FAIL(err, path, key,
                        "unknown key; expected one of name, description, csv, "
                        "platforms, workloads, vary, points, options");
    }
    const char *strings[] = {"name", "description", "csv"};
    for (int i = 0; i < 3; i++) {
        v = json_object_get(root, strings[i]);
        if (v && (!json_is_string(v) || (i != 1 && !*json_string_value(v))))
            return fail_type(err, path, strings[i], "a non-empty string", v);
    }
    if ((v = json_object_get(root, "name")) && strlen(json_string_value(v)) > 127)
        return FAIL(err, path, "name", "at most 127 characters");
    int rc;
    if (!json_object_get(root, "platforms"))
        return FAIL(err, path, "platforms", "missing; expected an array of platform files");
    if (!json_object_get(root, "workloads"))
        return FAIL(err, path, "workloads", "missing; expected an array of workload files");
    if ((rc = check_file_list(path, "platforms", json_object_get(root, "platforms"), err)) ||
        (rc = check_file_list(path, "workloads", json_object_get(root, "workloads"), err)))
        return rc;
    if ((v = json_object_get(root, "vary")) && (rc = check_vary(path, v, err)))
        return rc;
    if ((v = json_object_get(root, "points")) && (rc = check_points(path, v, err)))
        return rc;
    if ((v = json_object_get(root, "options")) && (rc = check_fixed_options(path, v, err)))
        return rc;
    return 0;
}

/* ---- the API ------------------------------------------------------------ */

int sweep_load(const char *path, sweep *s, np_error *err)
{
    memset(s, 0, sizeof *s);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return np_error_set(err, NP_EXIT_INPUT, path, "", 0,
                            "is a directory; expected a sweep file (JSON)");
    json_t *root =
        np_json_read(path, "sweep file", MAX_SWEEP_FILE_BYTES, JSON_REJECT_DUPLICATES, err);
    if (!root)
        return NP_EXIT_INPUT; /* err says why (np_json_read) */
    s->path = strdup(path);
    int rc = check_top(path, root, err);
    if (!rc) {
        const json_t *name = json_object_get(root, "name"), *csv = json_object_get(root, "csv");
        if (name) {
            s->name = strdup(json_string_value(name));
        } else {
            const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
            size_t n = strlen(base);
            if (n > 5 && strcmp(base + n - 5, ".json") == 0)
                n -= 5;
            s->name = strndup(base, n);
        }
        s->csv = csv ? strdup(json_string_value(csv)) : NULL;
        rc = sweep_expand(s, root, err);
        if (!rc)
            rc = sweep_check_points(s, err);
    }
    json_decref(root);
    if (rc)
        sweep_free(s);
    return rc;
}
