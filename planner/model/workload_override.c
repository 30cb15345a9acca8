/*
 * workload_override.c -- pass 2 of the loader: `simrun --set key=value`
 * overrides, written into the JSON tree before it is read, so that an
 * override is held to exactly the same rules as the file.
 *
 * A key is dotted ("parallel.data_parallel_size"), bare when the bare name
 * belongs to one section only ("data_parallel_size"), or addresses a layer
 * ("model.layers[3].params", "model.layers.3.params").  The path is checked
 * against the key table (workload_keys.c) before anything is written, and
 * its canonical form is recorded so that a later error on that key names the
 * command line as its source.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload_internal.h"

#define MAX_PATH_STEPS 8

typedef struct path_step {
    char name[64];
    long index; /* >= 0: an array index step; -1: a key step */
} path_step;

typedef struct override_path {
    path_step steps[MAX_PATH_STEPS];
    int num_steps;
    char canonical[KEY_CAPACITY]; /* "model.layers[3].params" */
} override_path;

static int path_push(override_path *p, const char *name, size_t length, long index)
{
    if (p->num_steps == MAX_PATH_STEPS || length >= sizeof p->steps[0].name)
        return -1;
    path_step *s = &p->steps[p->num_steps++];
    memcpy(s->name, name, length);
    s->name[length] = '\0';
    s->index = index;
    return 0;
}

/* Reads a run of digits as an index; returns its length, 0 when none. */
static size_t parse_index(const char *s, long *index)
{
    size_t n = strspn(s, "0123456789");
    if (n == 0 || n > 9)
        return 0;
    *index = strtol(s, NULL, 10);
    return n;
}

/* Splits "model.layers[3].params" or "model.layers.3.params" into steps:
 *   key       := component ("." component)*
 *   component := (name | digits) ("[" digits "]")*   (digits: not first) */
static int path_parse(const char *key, override_path *p)
{
    const char *s = key;
    p->num_steps = 0;
    for (;;) {
        long index;
        size_t n = strcspn(s, ".[]");
        if (n == 0)
            return -1;
        bool is_index = p->num_steps > 0 && parse_index(s, &index) == n;
        if (path_push(p, s, is_index ? 0 : n, is_index ? index : -1))
            return -1;
        s += n;
        while (*s == '[') {
            size_t digits = parse_index(s + 1, &index);
            if (digits == 0 || s[1 + digits] != ']' || path_push(p, "", 0, index))
                return -1;
            s += digits + 2;
        }
        if (*s == '\0')
            return 0;
        if (*s != '.')
            return -1;
        s++;
    }
}

/* The first num_steps steps as "model.layers[3].params". */
static void path_format(const override_path *p, int num_steps, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < num_steps && n < size; i++) {
        if (p->steps[i].index >= 0)
            n += snprintf(buf + n, size - n, "[%ld]", p->steps[i].index);
        else
            n += snprintf(buf + n, size - n, "%s%s", i ? "." : "", p->steps[i].name);
    }
}

/* A bare key: a top-level key, or a key of exactly one section. */
static int path_resolve_bare(const load_ctx *c, override_path *p, const char *key)
{
    const char *name = p->steps[0].name;
    if (wl_spec_find(wl_root_keys, name))
        return 0;
    const char *section = NULL;
    int matches = 0;
    char candidates[256] = "";
    for (const key_spec *k = wl_root_keys; k->name; k++) {
        if (k->type != KEY_SECTION || !wl_spec_find(k->children, name))
            continue;
        section = k->name;
        size_t used = strlen(candidates);
        snprintf(candidates + used, sizeof candidates - used, "%s%s.%s", matches ? ", " : "",
                 k->name, name);
        matches++;
    }
    if (matches > 1)
        return wl_fail_cmdline(c, key, "ambiguous key; write one of %s", candidates);
    if (matches == 0 &&
        (wl_spec_find(wl_layer_keys, name) || wl_spec_find(wl_time_table_keys, name)))
        return wl_fail_cmdline(c, key,
                               "ambiguous key: every entry of model.layers has one; write "
                               "model.layers[N].%s",
                               name);
    if (matches == 0)
        return wl_fail_cmdline(c, key,
                               "unknown key; expected a top-level key, a key of model, training "
                               "or parallel, or a dotted key such as parallel.data_parallel_size");
    memmove(&p->steps[1], &p->steps[0], sizeof p->steps[0]);
    snprintf(p->steps[0].name, sizeof p->steps[0].name, "%s", section);
    p->steps[0].index = -1;
    p->num_steps = 2;
    return 0;
}

/* Checks the path against the schema: every key exists where it is used. */
static int path_check_schema(const load_ctx *c, const override_path *p, const char *key)
{
    const key_spec *table = wl_root_keys, *spec = NULL;
    for (int i = 0; i < p->num_steps; i++) {
        const path_step *s = &p->steps[i];
        char where[KEY_CAPACITY];
        path_format(p, i, where, sizeof where);
        if (s->index >= 0) {
            if (!spec || spec->type != KEY_LAYERS)
                return wl_fail_cmdline(c, key, "unknown key: %s cannot be indexed", where);
            table = spec->children; /* a layer */
            spec = NULL;
            continue;
        }
        if (spec && spec->type == KEY_LAYERS)
            return wl_fail_cmdline(c, key, "unknown key: %s is an array; write %s[N].%s", where,
                                   where, s->name);
        if (!table)
            return wl_fail_cmdline(c, key, "unknown key: %s has no keys", where);
        spec = wl_spec_find(table, s->name);
        if (!spec) {
            char hint[700];
            wl_spec_unknown_hint(table, s->name, i ? where : "the top level", hint, sizeof hint);
            return wl_fail_cmdline(c, key, "unknown key \"%s\"; %s", s->name, hint);
        }
        bool has_children = spec->type == KEY_SECTION || spec->type == KEY_TIME_TABLE;
        table = has_children ? spec->children : NULL;
    }
    return 0;
}

/* Text that a JSON reader would take for a number, an object, an array or a
 * quoted string: its failure to parse is a mistake to report, not a word. */
static bool looks_like_json(const char *text)
{
    while (*text == ' ' || *text == '\t')
        text++;
    return strchr("{[\"-0123456789", *text) != NULL && *text != '\0';
}

/* The override's value: a JSON literal, or else a bare word as a JSON
 * string (--set schedule=gpipe).  Text that starts like a number, object,
 * array or quoted string must parse: 18446744073709551616 is an integer out
 * of range and {"a":1,"a":2} a duplicate key, not the strings they spell.
 * Returns 0 with *out set, or the error's code. */
static int override_value(const load_ctx *c, const char *key, const char *text, json_t **out)
{
    json_error_t jerr;
    *out = json_loads(text, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
    char token[64];
    if (*out && wl_json_underflow(text, strlen(text), token, sizeof token)) {
        json_decref(*out);
        *out = NULL;
        return wl_fail_cmdline(c, key,
                               "the number %s is below the smallest double and would read as 0: "
                               "write 0, or a value of at least 1e-308",
                               token);
    }
    if (*out)
        return 0;
    if (looks_like_json(text))
        return wl_fail_cmdline(c, key, "value is not valid JSON: %s", jerr.text);
    *out = json_string(text);
    return *out ? 0 : wl_fail_cmdline(c, key, "value is not valid UTF-8");
}

/* The container that step i descends into; a missing object is created, a
 * missing array (model.layers) or array entry cannot be. */
static json_t *tree_child(const load_ctx *c, json_t *cur, const override_path *p, int i,
                          const char *key)
{
    const path_step *s = &p->steps[i];
    bool next_is_index = p->steps[i + 1].index >= 0;
    json_t *child = s->index >= 0 ? json_array_get(cur, s->index) : json_object_get(cur, s->name);
    if (!child && s->index < 0 && !next_is_index) {
        child = json_object();
        if (!child || json_object_set_new(cur, s->name, child)) {
            wl_fail_memory(c, key);
            return NULL;
        }
    }
    if (!child || (next_is_index ? !json_is_array(child) : !json_is_object(child))) {
        char where[KEY_CAPACITY];
        path_format(p, i + 1, where, sizeof where);
        wl_fail_cmdline(c, key, "cannot set: %s is %s in the file, expected %s", where,
                        child ? "of another type" : "missing",
                        next_is_index ? "an array" : "an object");
        return NULL;
    }
    return child;
}

/* Writes value (consumed) at the path in the tree. */
static int tree_set(const load_ctx *c, json_t *root, const override_path *p, json_t *value,
                    const char *key)
{
    json_t *cur = root;
    for (int i = 0; i + 1 < p->num_steps && cur; i++)
        cur = tree_child(c, cur, p, i, key);
    if (!cur) {
        json_decref(value);
        return c->err ? c->err->code : NP_EXIT_INPUT;
    }
    const path_step *last = &p->steps[p->num_steps - 1];
    if (last->index >= 0) {
        if ((size_t)last->index >= json_array_size(cur)) {
            json_decref(value);
            return wl_fail_cmdline(c, key, "index %ld out of range: the array has %zu entries",
                                   last->index, json_array_size(cur));
        }
        return json_array_set_new(cur, last->index, value) ? wl_fail_memory(c, key) : 0;
    }
    return json_object_set_new(cur, last->name, value) ? wl_fail_memory(c, key) : 0;
}

static int apply_override(load_ctx *c, json_t *root, const char *text)
{
    const char *equals = text ? strchr(text, '=') : NULL;
    char key[KEY_CAPACITY];
    if (!equals || equals == text)
        return wl_fail_cmdline(c, text ? text : "", "expected key=value");
    snprintf(key, sizeof key, "%.*s", (int)(equals - text), text);
    override_path p;
    if (path_parse(key, &p))
        return wl_fail_cmdline(c, key,
                               "malformed key; expected a dotted key such as "
                               "parallel.data_parallel_size or model.layers[0].params");
    int rc = p.num_steps == 1 && p.steps[0].index < 0 ? path_resolve_bare(c, &p, key) : 0;
    if (!rc)
        rc = path_check_schema(c, &p, key);
    if (rc)
        return rc;
    json_t *value;
    if ((rc = override_value(c, key, equals + 1, &value)))
        return rc;
    path_format(&p, p.num_steps, p.canonical, sizeof p.canonical);
    rc = tree_set(c, root, &p, value, key);
    if (!rc)
        snprintf(c->overridden[c->num_overridden++], KEY_CAPACITY, "%s", p.canonical);
    return rc;
}

int wl_apply_overrides(load_ctx *c, json_t *root, const char *const *overrides, int n)
{
    if (n <= 0)
        return 0;
    c->overridden = calloc((size_t)n, sizeof *c->overridden);
    if (!c->overridden)
        return wl_fail_memory(c, "");
    for (int i = 0; i < n; i++) {
        int rc = apply_override(c, root, overrides[i]);
        if (rc)
            return rc;
    }
    return 0;
}
