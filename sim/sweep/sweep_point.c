/*
 * sweep_point.c -- the points of a sweep: the expansion of a checked sweep
 * file (platforms x workloads x (the cartesian product of "vary", then the
 * explicit "points")), each point's simrun arguments, its canonical text and
 * run id, duplicates dropped (docs/sweeps.md, "Points and run ids").
 *
 * The canonical text of a point is a compact JSON array
 *   ["npusim-sweep-point/1", PLATFORM, WORKLOAD, [[OPTION, VALUE]...],
 *    [[KEY, VALUE]...], [FIXED OPTION...]]
 * with the options sorted by name, the --set pairs by key, the fixed options
 * in their order and every value as the text simrun is given: two points that
 * make the same simrun command have the same run id, whatever the order of
 * their keys in the file.
 */
#define _GNU_SOURCE /* asprintf */
#include <stdlib.h>
#include <string.h>

#include "np_sha256.h"
#include "sweep_internal.h"

/* An option's value as simrun is given it. */
static char *option_text(const json_t *v)
{
    if (json_is_string(v))
        return strdup(json_string_value(v));
    return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
}

/* A --set value as simrun parses it back to v (workload_override.c): a
 * string that is not JSON and does not look like JSON goes as it is
 * (gpipe), any other string JSON-quoted ("8" stays a string). */
static char *set_value_text(const json_t *v)
{
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        const char *t = s + strspn(s, " \t");
        json_t *parsed = json_loads(s, JSON_DECODE_ANY, NULL);
        bool raw = !parsed && *t && !strchr("{[\"-0123456789", *t);
        json_decref(parsed);
        if (raw)
            return strdup(s);
    }
    return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
}

typedef struct item {
    const char *key;
    const json_t *value;
} item;

static int item_cmp(const void *a, const void *b)
{
    return strcmp(((const item *)a)->key, ((const item *)b)->key);
}

/* Fills p from its items (a vary combination or an explicit point). */
static int make_point(sweep_point *p, const char *platform, const char *workload,
                      const json_t *fixed, item *items, int n)
{
    qsort(items, (size_t)n, sizeof *items, item_cmp);
    int nfixed = fixed ? (int)json_array_size(fixed) : 0;
    p->args = calloc((size_t)(nfixed + 2 * n + 1), sizeof *p->args);
    json_t *canon = json_pack("[sss[][][]]", "npusim-sweep-point/1", platform, workload);
    p->platform = strdup(platform);
    p->workload = strdup(workload);
    if (!p->args || !canon || !p->platform || !p->workload)
        goto oom;
    json_t *copts = json_array_get(canon, 3), *csets = json_array_get(canon, 4),
           *cfixed = json_array_get(canon, 5);
    for (int i = 0; i < nfixed; i++) {
        const char *a = json_string_value(json_array_get(fixed, (size_t)i));
        if (!(p->args[p->num_args++] = strdup(a)) || json_array_append_new(cfixed, json_string(a)))
            goto oom;
    }
    p->first_own_arg = p->num_args;
    for (int pass = 0; pass < 2; pass++) /* options, then --set pairs */
        for (int i = 0; i < n; i++) {
            const char *k = items[i].key;
            const json_t *v = items[i].value;
            if ((strncmp(k, "--", 2) == 0) != (pass == 0) || json_is_false(v))
                continue;
            char *text = pass == 0 ? (json_is_true(v) ? NULL : option_text(v)) : set_value_text(v);
            if (!text && !json_is_true(v))
                goto oom;
            json_t *pair = text ? json_pack("[ss]", k, text) : json_pack("[s]", k);
            int bad = !pair || json_array_append_new(pass == 0 ? copts : csets, pair);
            char *arg = NULL;
            if (!bad && pass == 1 && asprintf(&arg, "%s=%s", k, text) >= 0) {
                p->args[p->num_args++] = strdup("--set");
                p->args[p->num_args++] = arg;
            } else if (!bad && pass == 0 && strcmp(k, "--cfg") == 0 &&
                       asprintf(&arg, "--cfg=%s", text) >= 0) {
                p->args[p->num_args++] = arg;
            } else if (!bad && pass == 0 && strcmp(k, "--cfg") != 0) {
                p->args[p->num_args++] = strdup(k);
                if (text)
                    p->args[p->num_args++] = strdup(text);
            } else {
                bad = 1;
            }
            free(text);
            if (bad || !p->args[p->num_args - 1])
                goto oom;
        }
    p->canonical = json_dumps(canon, JSON_COMPACT);
    json_decref(canon);
    if (!p->canonical)
        return -1;
    sweep_run_id(p->canonical, p->run_id);
    return 0;
oom:
    json_decref(canon);
    return -1;
}

static void point_free(sweep_point *p)
{
    for (int i = 0; i < p->num_args; i++)
        free(p->args[i]);
    free(p->args);
    free(p->platform);
    free(p->workload);
    free(p->canonical);
    memset(p, 0, sizeof *p);
}

void sweep_run_id(const char *canonical, char run_id[SWEEP_RUN_ID_SIZE])
{
    char hex[NP_SHA256_HEX_SIZE];
    np_sha256_hex(canonical, strlen(canonical), hex);
    memcpy(run_id, hex, SWEEP_RUN_ID_SIZE - 1);
    run_id[SWEEP_RUN_ID_SIZE - 1] = '\0';
}

static int id_cmp(const void *a, const void *b)
{
    const sweep_point *const *x = a, *const *y = b;
    int c = strcmp((*x)->run_id, (*y)->run_id);
    return c ? c : (*x)->index - (*y)->index;
}

/* Drops every point whose run id an earlier point has, renumbering. */
static int drop_duplicates(sweep *s)
{
    sweep_point **by_id = malloc((size_t)s->num_points * sizeof *by_id);
    if (!by_id)
        return -1;
    for (int i = 0; i < s->num_points; i++)
        by_id[i] = &s->points[i];
    qsort(by_id, (size_t)s->num_points, sizeof *by_id, id_cmp);
    for (int i = 1; i < s->num_points; i++)
        if (strcmp(by_id[i]->run_id, by_id[i - 1]->run_id) == 0)
            by_id[i]->index = -1;
    free(by_id);
    int kept = 0;
    for (int i = 0; i < s->num_points; i++) {
        if (s->points[i].index < 0) {
            point_free(&s->points[i]);
            s->duplicates++;
            continue;
        }
        s->points[kept] = s->points[i];
        s->points[kept].index = kept;
        kept++;
    }
    s->num_points = kept;
    return 0;
}

int sweep_expand(sweep *s, json_t *root, np_error *err)
{
    const json_t *platforms = json_object_get(root, "platforms"),
                 *workloads = json_object_get(root, "workloads"),
                 *vary = json_object_get(root, "vary"), *points = json_object_get(root, "points"),
                 *fixed = json_object_get(root, "options");
    int nvary = vary ? (int)json_object_size(vary) : 0;
    double combos = 1;
    const char *key;
    json_t *values;
    if (vary)
        json_object_foreach((json_t *)vary, key, values) combos *= (double)json_array_size(values);
    if (!vary && points)
        combos = 0; /* only the explicit points; neither: one point per input */
    size_t nexplicit = points ? json_array_size(points) : 0;
    double per_input = combos + (double)nexplicit;
    double total =
        per_input * (double)json_array_size(platforms) * (double)json_array_size(workloads);
    if (total > SWEEP_MAX_POINTS)
        return np_error_set(err, NP_EXIT_INPUT, s->path, vary ? "vary" : "points", 0,
                            "%.0f points, more than %d", total, SWEEP_MAX_POINTS);
    s->points = calloc((size_t)total + 1, sizeof *s->points);
    item *items = calloc((size_t)nvary + 1, sizeof *items);
    const json_t **arrays = calloc((size_t)nvary + 1, sizeof *arrays);
    const char **keys = calloc((size_t)nvary + 1, sizeof *keys);
    size_t *at = calloc((size_t)nvary + 1, sizeof *at);
    int rc = !s->points || !items || !arrays || !keys || !at;
    int k = 0;
    if (vary)
        json_object_foreach((json_t *)vary, key, values) keys[k] = key, arrays[k++] = values;
    for (size_t pi = 0; !rc && pi < json_array_size(platforms); pi++)
        for (size_t wi = 0; !rc && wi < json_array_size(workloads); wi++) {
            const char *pf = json_string_value(json_array_get(platforms, pi));
            const char *wl = json_string_value(json_array_get(workloads, wi));
            for (long c = 0; !rc && c < (long)combos; c++) {
                long rest = c; /* the last key varies fastest */
                for (int i = nvary - 1; i >= 0; i--) {
                    size_t size = json_array_size(arrays[i]);
                    at[i] = (size_t)(rest % (long)size);
                    rest /= (long)size;
                    items[i] = (item){keys[i], json_array_get(arrays[i], at[i])};
                }
                sweep_point *p = &s->points[s->num_points];
                p->index = s->num_points++;
                rc = make_point(p, pf, wl, fixed, items, nvary);
            }
            for (size_t e = 0; !rc && e < nexplicit; e++) {
                json_t *obj = json_array_get(points, e), *v;
                int n = 0;
                item *own = calloc(json_object_size(obj) + 1, sizeof *own);
                if (!own) {
                    rc = -1;
                    break;
                }
                json_object_foreach(obj, key, v) own[n++] = (item){key, v};
                sweep_point *p = &s->points[s->num_points];
                p->index = s->num_points++;
                rc = make_point(p, pf, wl, fixed, own, n);
                free(own);
            }
        }
    free(items);
    free(arrays);
    free(keys);
    free(at);
    if (!rc)
        rc = drop_duplicates(s);
    if (rc)
        return np_error_set(err, NP_EXIT_INTERNAL, s->path, "", 0, "out of memory");
    return 0;
}

void sweep_free(sweep *s)
{
    for (int i = 0; i < s->num_points; i++)
        point_free(&s->points[i]);
    free(s->points);
    free(s->path);
    free(s->name);
    free(s->csv);
    memset(s, 0, sizeof *s);
}

const sweep_point *sweep_find(const sweep *s, const char *run_id)
{
    for (int i = 0; i < s->num_points; i++)
        if (strcmp(s->points[i].run_id, run_id) == 0)
            return &s->points[i];
    return NULL;
}

char **sweep_point_argv(const sweep_point *p, const char *simrun, const char *csv)
{
    char **argv = calloc((size_t)p->num_args + 9, sizeof *argv);
    if (!argv)
        return NULL;
    int n = 0;
    argv[n++] = (char *)simrun;
    argv[n++] = "--quiet";
    argv[n++] = "--run-id";
    argv[n++] = (char *)p->run_id;
    argv[n++] = "--csv";
    argv[n++] = (char *)csv;
    for (int i = 0; i < p->num_args; i++)
        argv[n++] = p->args[i];
    argv[n++] = p->platform;
    argv[n++] = p->workload;
    argv[n] = NULL;
    return argv;
}
