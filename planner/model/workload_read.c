/*
 * workload_read.c -- pass 3 of the loader: reading every JSON object of a
 * workload against its key table (workload_keys.c) into the C structs.
 *
 * A key that is not in the table is an error, never silently ignored; a
 * value of the wrong type or out of range is an error naming the dotted key
 * and what was expected.  The layers of "model.layers" and their time tables
 * are read here too, since they are tables of keys like any other object.
 */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload_internal.h"

/* ----------------------------------------------------------------- keys */

/* Keys only appear in messages: one longer than np_error.key ends in "...". */
static void key_mark_truncated(char *dst, int length)
{
    if (length >= KEY_CAPACITY)
        memcpy(dst + KEY_CAPACITY - 4, "...", 4);
}

/* "prefix.name", or "name" at the top level. */
static void key_join(char *dst, const char *prefix, const char *name)
{
    int n = snprintf(dst, KEY_CAPACITY, "%s%s%s", prefix, prefix[0] ? "." : "", name);
    key_mark_truncated(dst, n);
}

static void key_index(char *dst, const char *prefix, size_t index)
{
    int n = snprintf(dst, KEY_CAPACITY, "%s[%zu]", prefix, index);
    key_mark_truncated(dst, n);
}

/* A short rendering of a JSON value for "got ..." messages. */
static const char *json_describe(const json_t *v, char *buf, size_t size)
{
    if (json_is_object(v))
        snprintf(buf, size, "an object");
    else if (json_is_array(v) && json_array_size(v) == 0)
        snprintf(buf, size, "an empty array");
    else if (json_is_array(v))
        snprintf(buf, size, "an array of %zu entries", json_array_size(v));
    else {
        char *text = json_dumps(
            v, JSON_ENCODE_ANY | JSON_REAL_PRECISION(15)); /* -0.1, not -0.10000000000000001 */
        snprintf(buf, size, "%.80s%s", text ? text : "?", text && strlen(text) > 80 ? "..." : "");
        free(text);
    }
    return buf;
}

/* ----------------------------------------------------------- value readers */

static int fail_type(const load_ctx *c, const key_spec *k, const json_t *v, const char *key)
{
    char expected[256], got[96];
    wl_spec_expected(k, expected, sizeof expected);
    return wl_fail(c, key, "expected %s, got %s", expected, json_describe(v, got, sizeof got));
}

/* A number above the key's bound (or not finite): the error's code, else 0. */
static int number_above_max(const load_ctx *c, const key_spec *k, double x, const char *key)
{
    if (isfinite(x) && (k->max <= 0 || x <= k->max))
        return 0;
    return wl_fail(c, key, "expected a number no larger than %g%s%s, got %g", k->max,
                   k->unit && *k->unit ? " " : "", k->unit ? k->unit : "", x);
}

static int read_integer(const load_ctx *c, const key_spec *k, const json_t *v, void *field,
                        const char *key)
{
    if (!json_is_integer(v))
        return fail_type(c, k, v, key);
    json_int_t x = json_integer_value(v);
    json_int_t low = k->type == KEY_NONNEGATIVE_INT ? 0 : 1;
    json_int_t high = k->type == KEY_POSITIVE_LONG ? MAX_LONG_SIZE : INT_MAX;
    if (k->max > 0 && k->max < (double)high)
        high = (json_int_t)k->max;
    if (x < low)
        return fail_type(c, k, v, key);
    if (x > high)
        return wl_fail(c, key, "expected an integer no larger than %lld%s%s, got %lld",
                       (long long)high, k->unit && *k->unit ? " " : "", k->unit ? k->unit : "",
                       (long long)x);
    if (k->type == KEY_POSITIVE_LONG)
        *(long *)field = (long)x;
    else
        *(int *)field = (int)x;
    return 0;
}

static int read_string(const load_ctx *c, const key_spec *k, const json_t *v, void *field,
                       const char *key)
{
    if (!json_is_string(v))
        return fail_type(c, k, v, key);
    size_t length = json_string_length(v);
    if (k->type == KEY_NAME && length == 0)
        return fail_type(c, k, v, key);
    if (k->size == 0)
        return 0; /* checked, not stored (description) */
    /* A stored string reaches the terminal (the table's title) and the CSV:
     * no control characters (an escape sequence would reach the terminal
     * raw; a NUL would cut it). */
    const unsigned char *s = (const unsigned char *)json_string_value(v);
    for (size_t i = 0; i < length; i++)
        if (s[i] < 0x20 || s[i] == 0x7f)
            return wl_fail(c, key,
                           "expected printable text, got the control character 0x%02x at "
                           "position %zu",
                           s[i], i);
    if (length >= k->size)
        return wl_fail(c, key, "expected a string of at most %zu characters, got %zu", k->size - 1,
                       length);
    memcpy(field, json_string_value(v), length + 1);
    return 0;
}

static int read_enum(const load_ctx *c, const key_spec *k, const json_t *v, void *field,
                     const char *key)
{
    int index =
        json_is_string(v) ? wl_name_index(k->names, k->num_names, json_string_value(v)) : -1;
    if (index < 0)
        return fail_type(c, k, v, key);
    *(int *)field = index;
    return 0;
}

static int read_number_list(const load_ctx *c, const key_spec *k, const json_t *v, void *field,
                            const char *key)
{
    if (!json_is_array(v) || json_array_size(v) == 0)
        return fail_type(c, k, v, key);
    size_t n = json_array_size(v);
    double *values = calloc(n, sizeof *values);
    if (!values)
        return wl_fail_memory(c, key);
    *(double **)field = values; /* owned by the workload from here: wl_free frees it */
    for (size_t i = 0; i < n; i++) {
        const json_t *x = json_array_get(v, i);
        if (!json_is_number(x) || json_number_value(x) < 0) {
            char element_key[KEY_CAPACITY], got[96];
            key_index(element_key, key, i);
            return wl_fail(c, element_key, "expected a non-negative number, got %s",
                           json_describe(x, got, sizeof got));
        }
        char element_key[KEY_CAPACITY];
        key_index(element_key, key, i);
        int rc = number_above_max(c, k, json_number_value(x), element_key);
        if (rc)
            return rc;
        values[i] = json_number_value(x);
    }
    return 0;
}

static int read_layers(load_ctx *c, const key_spec *k, const json_t *v, wl_workload *w,
                       const char *key);
static int read_time_table(load_ctx *c, const key_spec *k, const json_t *v, wl_layer_spec *layer,
                           const char *key);

static int read_value(load_ctx *c, const key_spec *k, const json_t *v, void *record,
                      const char *key)
{
    void *field = (char *)record + k->offset;
    int rc;
    switch (k->type) {
    case KEY_POSITIVE_INT:
    case KEY_NONNEGATIVE_INT:
    case KEY_POSITIVE_LONG:
        return read_integer(c, k, v, field, key);
    case KEY_NONNEGATIVE_NUMBER:
        if (!json_is_number(v) || json_number_value(v) < 0)
            return fail_type(c, k, v, key);
        if ((rc = number_above_max(c, k, json_number_value(v), key)))
            return rc;
        *(double *)field = json_number_value(v);
        return 0;
    case KEY_PROBABILITY: /* [0, 1): a dropout of 1 would drop everything */
        if (!json_is_number(v) || !(json_number_value(v) >= 0 && json_number_value(v) < 1))
            return fail_type(c, k, v, key);
        *(double *)field = json_number_value(v);
        return 0;
    case KEY_BOOL:
        if (!json_is_boolean(v))
            return fail_type(c, k, v, key);
        *(bool *)field = json_is_true(v);
        return 0;
    case KEY_STRING:
    case KEY_NAME:
        return read_string(c, k, v, field, key);
    case KEY_ENUM:
        return read_enum(c, k, v, field, key);
    case KEY_SECTION:
        if (!json_is_object(v))
            return fail_type(c, k, v, key);
        return wl_read_object(c, v, k->children, record, key);
    case KEY_LAYERS:
        return read_layers(c, k, v, record, key);
    case KEY_TIME_TABLE:
        return read_time_table(c, k, v, record, key);
    case KEY_NUMBER_LIST:
        return read_number_list(c, k, v, field, key);
    case KEY_MOE_LAYER_FREQ: /* MoE hook: workload_moe.c */
        return wl_read_moe_layer_freq(c, v, field, key);
    }
    return wl_fail(c, key, "internal error: key type %d", (int)k->type);
}

/* Reads every key of obj against table into record; keys are "prefix.name". */
int wl_read_object(load_ctx *c, const json_t *obj, const key_spec *table, void *record,
                   const char *prefix)
{
    char key[KEY_CAPACITY];
    const char *name;
    const json_t *v;
    json_object_foreach((json_t *)obj, name, v)
    {
        if (!wl_spec_find(table, name)) {
            char hint[700];
            wl_spec_unknown_hint(table, name, prefix[0] ? prefix : "the top level", hint,
                                 sizeof hint);
            key_join(key, prefix, name);
            return wl_fail(c, key, "unknown key; %s", hint);
        }
    }
    for (const key_spec *k = table; k->name; k++) {
        key_join(key, prefix, k->name);
        v = json_object_get(obj, k->name);
        if (!v) {
            if (k->need == REQUIRED || (k->need == REQUIRED_UNLESS_LAYERS && !c->has_layers)) {
                char expected[256];
                wl_spec_expected(k, expected, sizeof expected);
                return wl_fail(c, key, "missing required key; expected %s", expected);
            }
            continue;
        }
        int rc = read_value(c, k, v, record, key);
        if (rc)
            return rc;
    }
    return 0;
}

static int read_layers(load_ctx *c, const key_spec *k, const json_t *v, wl_workload *w,
                       const char *key)
{
    if (!json_is_array(v) || json_array_size(v) == 0)
        return fail_type(c, k, v, key);
    size_t n = json_array_size(v);
    if (n > INT_MAX)
        return wl_fail(c, key, "expected at most %d layers, got %zu", INT_MAX, n);
    w->model.layer_specs = calloc(n, sizeof *w->model.layer_specs);
    if (!w->model.layer_specs)
        return wl_fail_memory(c, key);
    w->model.num_layer_specs = (int)n;
    for (size_t i = 0; i < n; i++) {
        char element_key[KEY_CAPACITY], got[96];
        const json_t *element = json_array_get(v, i);
        key_index(element_key, key, i);
        if (!json_is_object(element))
            return wl_fail(c, element_key, "expected a layer object, got %s",
                           json_describe(element, got, sizeof got));
        int rc = wl_read_object(c, element, k->children, &w->model.layer_specs[i], element_key);
        if (rc)
            return rc;
    }
    return 0;
}

static int read_time_table(load_ctx *c, const key_spec *k, const json_t *v, wl_layer_spec *layer,
                           const char *key)
{
    if (!json_is_object(v))
        return fail_type(c, k, v, key);
    int rc = wl_read_object(c, v, k->children, layer, key);
    if (rc)
        return rc;
    size_t n = json_array_size(json_object_get(v, "batch"));
    char column_key[KEY_CAPACITY];
    /* wl_time_table_keys[0] is batch; every other column needs its length. */
    for (const key_spec *column = k->children + 1; column->name; column++) {
        size_t length = json_array_size(json_object_get(v, column->name));
        key_join(column_key, key, column->name);
        if (length != n)
            return wl_fail(c, column_key, "expected %zu values, one per entry of %s.batch, got %zu",
                           n, key, length);
    }
    key_join(column_key, key, "batch");
    for (size_t i = 0; i < n; i++) {
        double b = layer->time_batch[i], previous = i ? layer->time_batch[i - 1] : 0;
        if (b <= previous)
            return i ? wl_fail(c, column_key,
                               "expected positive, strictly increasing micro-batch sizes, got "
                               "%g after %g at index %zu",
                               b, previous, i)
                     : wl_fail(c, column_key,
                               "expected positive, strictly increasing micro-batch sizes, got "
                               "%g at index 0",
                               b);
    }
    layer->num_time_points = (int)n;
    return 0;
}

int wl_json_underflow(const char *text, size_t len, char *token, size_t token_size)
{
    int line = 1;
    for (size_t i = 0; i < len; i++) {
        char ch = text[i];
        if (ch == '\n') {
            line++;
        } else if (ch == '"') { /* a string: numbers inside it are text */
            for (i++; i < len && text[i] != '"'; i++)
                i += text[i] == '\\';
        } else if (ch == '-' || isdigit((unsigned char)ch)) {
            size_t start = i;
            bool nonzero = false, exponent = false;
            for (; i < len && strchr("+-.eE0123456789", text[i]); i++) {
                exponent |= text[i] == 'e' || text[i] == 'E';
                nonzero |= !exponent && text[i] >= '1' && text[i] <= '9';
            }
            char buf[128];
            size_t n = i - start < sizeof buf - 1 ? i - start : sizeof buf - 1;
            memcpy(buf, text + start, n);
            buf[n] = '\0';
            i--; /* the loop's i++ moves past the token */
            if (nonzero && strtod(buf, NULL) == 0) {
                snprintf(token, token_size, "%s", buf);
                return line;
            }
        }
    }
    return 0;
}
