/*
 * workload.c -- loading and checking workload JSON (see workload.h).
 *
 * The loader is driven by one schema: a tree of key_spec tables, one per JSON
 * object (top level, "model", "training", "parallel", a layer of
 * "model.layers", a layer's "time_table").  Each entry names a key, its type,
 * whether it is required and where its value goes in the C struct.  The same
 * tables serve three purposes, so they cannot drift apart:
 *   - reading: every key of every object is looked up; a key that is not in
 *     the table is an error, never silently ignored;
 *   - error messages: the expected type and the list of known keys come from
 *     the table;
 *   - overrides: "key=value" paths are resolved and checked against it.
 *
 * Loading runs in four passes over the JSON tree:
 *   1. json_load_file (duplicate keys rejected; syntax errors carry the line
 *      and, in the text, the column);
 *   2. overrides are written into the tree, so an override is held to exactly
 *      the same rules as the file;
 *   3. every object is read against its table: unknown keys, wrong types,
 *      missing required keys, out-of-range values;
 *   4. defaults that depend on other keys are filled and impossible
 *      combinations are rejected (Megatron-LM's own argument checks).
 * An error on a key whose value came from an override carries the source
 * "<command line>"; everything else carries the file name.  jansson does not
 * keep the line of each value, so only syntax errors have a line number.
 *
 * Decisions where the brief left room:
 *   - ffn_hidden_size defaults to 4·hidden_size, or, with swiglu, to Megatron's
 *     int(4·h·2/3 / 64)·64 (megatron/training/arguments.py), so that a
 *     SwiGLU model keeps about the parameters of its 4h counterpart.
 *   - Layer-by-layer models ("model.layers" present): num_layers defaults to
 *     the number of listed layers and must equal it when given; hidden_size,
 *     num_attention_heads, seq_length and vocab_size become optional.  Absent
 *     Transformer sizes stay 0 (consumers test num_layer_specs > 0 first);
 *     seq_length defaults to 1 so that a sample counts as one token.
 *   - Every numeric field of a layer is required (0 is allowed, e.g. the
 *     params of a pooling layer); time_table is optional and, when given,
 *     needs batch, forward_s and backward_s of equal length with batch
 *     strictly increasing and positive.
 *   - MoE keys of a dense model (num_experts 0) are type-checked and kept but
 *     mean nothing; moe_router_topk defaults to 2 only when num_experts > 0.
 *     A dense model needs expert_model_parallel_size 1; an MoE model needs
 *     ep to divide both num_experts and data_parallel_size (Megatron carves
 *     expert parallelism out of data parallelism).
 *   - sequence_parallel at tp 1 is accepted and turned off, as Megatron does.
 *   - hidden_size must be a multiple of num_attention_heads (Megatron's check
 *     when kv_channels is not given; we have no kv_channels key).
 *   - Interleaved needs pp >= 2 as well as vpp >= 2.  Its m % pp == 0 rule
 *     lives in wl_check_cluster, as the header promises.
 *   - "planner" is any non-empty name: the planner registry checks it.
 *   - Integer keys take JSON integers only: 8.0 is a wrong type, not 8.
 *   - A bare override key that is a top-level key means that key; otherwise
 *     it must name a key of exactly one of model, training, parallel.  Keys of
 *     a layer exist once per layer, so a bare layer key is ambiguous; layers
 *     are addressed as model.layers[3].params or model.layers.3.params.
 */
#include "workload.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMDLINE_SOURCE "<command line>"
/* Upper bound of long sizes (hidden, sequence, vocabulary, batch): far above
 * any real model, low enough that 4·hidden or batch·dp cannot overflow. */
#define MAX_LONG_SIZE (1LL << 40)
#define KEY_CAPACITY 128 /* == sizeof(np_error.key) */

/* ---------------------------------------------------------------- names */

static const char *const schedule_names[SCHED_COUNT] = {
    "gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "pipedream", "pipedream-2bw",
};
static const char *const recompute_names[RECOMPUTE_COUNT] = {"none", "selective", "full"};
static const char *const dtype_names[] = {"bf16", "fp16", "fp32"};
#define DTYPE_COUNT 3

/* Enum fields are stored through an int pointer by the generic reader. */
_Static_assert(sizeof(schedule_kind) == sizeof(int), "enum must be int-sized");
_Static_assert(sizeof(recompute_kind) == sizeof(int), "enum must be int-sized");
_Static_assert(sizeof(wl_dtype) == sizeof(int), "enum must be int-sized");

static int name_index(const char *const *names, int count, const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < count; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

const char *wl_schedule_name(schedule_kind s)
{
    return (s >= 0 && s < SCHED_COUNT) ? schedule_names[s] : "unknown";
}

int wl_schedule_by_name(const char *name) { return name_index(schedule_names, SCHED_COUNT, name); }

const char *wl_recompute_name(recompute_kind r)
{
    return (r >= 0 && r < RECOMPUTE_COUNT) ? recompute_names[r] : "unknown";
}

int wl_recompute_by_name(const char *name)
{
    return name_index(recompute_names, RECOMPUTE_COUNT, name);
}

const char *wl_dtype_name(wl_dtype d)
{
    return (d >= 0 && d < DTYPE_COUNT) ? dtype_names[d] : "unknown";
}

double wl_dtype_bytes(wl_dtype d)
{
    switch (d) {
    case WL_BF16:
    case WL_FP16:
        return 2.0;
    case WL_FP32:
        return 4.0;
    }
    return 0.0;
}

int wl_num_micro_batches(const wl_workload *w)
{
    long per_step = (long)w->training.micro_batch_size * w->parallel.data_parallel_size;
    if (per_step <= 0)
        return 0;
    return (int)(w->training.global_batch_size / per_step);
}

void wl_free(wl_workload *w)
{
    if (!w)
        return;
    for (int i = 0; i < w->model.num_layer_specs && w->model.layer_specs; i++) {
        wl_layer_spec *l = &w->model.layer_specs[i];
        free(l->time_batch);
        free(l->time_forward_s);
        free(l->time_backward_s);
    }
    free(w->model.layer_specs);
    w->model.layer_specs = NULL;
    w->model.num_layer_specs = 0;
}

/* --------------------------------------------------------------- schema */

typedef enum key_type {
    KEY_POSITIVE_INT,       /* int in [1, INT_MAX] */
    KEY_NONNEGATIVE_INT,    /* int in [0, INT_MAX] */
    KEY_POSITIVE_LONG,      /* long in [1, MAX_LONG_SIZE] */
    KEY_NONNEGATIVE_NUMBER, /* double >= 0, integer or real in JSON */
    KEY_BOOL,
    KEY_STRING,      /* char[size]; size 0: checked, not stored */
    KEY_NAME,        /* like KEY_STRING, but must not be empty */
    KEY_ENUM,        /* string from names[], stored as its index */
    KEY_SECTION,     /* object read by children into the same record */
    KEY_LAYERS,      /* non-empty array of objects read by children */
    KEY_TIME_TABLE,  /* object read by children, then checked as a table */
    KEY_NUMBER_LIST, /* non-empty array of numbers >= 0, stored as double* */
} key_type;

typedef enum key_need { OPTIONAL = 0, REQUIRED, REQUIRED_UNLESS_LAYERS } key_need;

typedef struct key_spec {
    const char *name; /* NULL ends a table */
    key_type type;
    key_need need;
    size_t offset; /* of the field in the record the table fills */
    size_t size;   /* capacity of a string field */
    const struct key_spec *children;
    const char *const *names; /* KEY_ENUM */
    int num_names;
} key_spec;

#define W_OFF(f) offsetof(wl_workload, f)
#define W_SIZE(f) sizeof(((wl_workload *)0)->f)
#define L_OFF(f) offsetof(wl_layer_spec, f)
#define L_SIZE(f) sizeof(((wl_layer_spec *)0)->f)

/* Table entries: a scalar, a string of capacity sz, an enum, a nested object. */
// clang-format off
#define SCALAR(n, t, nd, off) {.name = n, .type = t, .need = nd, .offset = off}
#define STRING(n, t, nd, off, sz) {.name = n, .type = t, .need = nd, .offset = off, .size = sz}
#define ENUM(n, nd, off, list, count)                                              \
    {.name = n, .type = KEY_ENUM, .need = nd, .offset = off, .names = list, .num_names = count}
#define NESTED(n, t, nd, table) {.name = n, .type = t, .need = nd, .children = table}
#define END {.name = NULL}
// clang-format on

static const key_spec time_table_keys[] = {
    SCALAR("batch", KEY_NUMBER_LIST, REQUIRED, L_OFF(time_batch)), /* first: see below */
    SCALAR("forward_s", KEY_NUMBER_LIST, REQUIRED, L_OFF(time_forward_s)),
    SCALAR("backward_s", KEY_NUMBER_LIST, REQUIRED, L_OFF(time_backward_s)),
    END,
};

static const key_spec layer_keys[] = {
    STRING("name", KEY_NAME, REQUIRED, L_OFF(name), L_SIZE(name)),
    SCALAR("forward_flops", KEY_NONNEGATIVE_NUMBER, REQUIRED, L_OFF(forward_flops)),
    SCALAR("params", KEY_NONNEGATIVE_NUMBER, REQUIRED, L_OFF(params)),
    SCALAR("activation_bytes", KEY_NONNEGATIVE_NUMBER, REQUIRED, L_OFF(activation_bytes)),
    SCALAR("output_bytes", KEY_NONNEGATIVE_NUMBER, REQUIRED, L_OFF(output_bytes)),
    NESTED("time_table", KEY_TIME_TABLE, OPTIONAL, time_table_keys),
    END,
};

static const key_spec model_keys[] = {
    SCALAR("num_layers", KEY_POSITIVE_INT, REQUIRED_UNLESS_LAYERS, W_OFF(model.num_layers)),
    SCALAR("hidden_size", KEY_POSITIVE_LONG, REQUIRED_UNLESS_LAYERS, W_OFF(model.hidden_size)),
    SCALAR("ffn_hidden_size", KEY_POSITIVE_LONG, OPTIONAL, W_OFF(model.ffn_hidden_size)),
    SCALAR("num_attention_heads", KEY_POSITIVE_INT, REQUIRED_UNLESS_LAYERS,
           W_OFF(model.num_attention_heads)),
    SCALAR("num_query_groups", KEY_POSITIVE_INT, OPTIONAL, W_OFF(model.num_query_groups)),
    SCALAR("seq_length", KEY_POSITIVE_LONG, REQUIRED_UNLESS_LAYERS, W_OFF(model.seq_length)),
    SCALAR("vocab_size", KEY_POSITIVE_LONG, REQUIRED_UNLESS_LAYERS, W_OFF(model.vocab_size)),
    SCALAR("swiglu", KEY_BOOL, OPTIONAL, W_OFF(model.swiglu)),
    SCALAR("untie_embeddings_and_output_weights", KEY_BOOL, OPTIONAL,
           W_OFF(model.untie_embeddings_and_output_weights)),
    SCALAR("num_experts", KEY_NONNEGATIVE_INT, OPTIONAL, W_OFF(model.num_experts)),
    SCALAR("moe_router_topk", KEY_POSITIVE_INT, OPTIONAL, W_OFF(model.moe_router_topk)),
    SCALAR("moe_ffn_hidden_size", KEY_POSITIVE_LONG, OPTIONAL, W_OFF(model.moe_ffn_hidden_size)),
    SCALAR("moe_expert_capacity_factor", KEY_NONNEGATIVE_NUMBER, OPTIONAL,
           W_OFF(model.moe_expert_capacity_factor)),
    STRING("moe_token_trace", KEY_STRING, OPTIONAL, W_OFF(model.moe_token_trace),
           W_SIZE(model.moe_token_trace)),
    NESTED("layers", KEY_LAYERS, OPTIONAL, layer_keys),
    END,
};

static const key_spec training_keys[] = {
    SCALAR("global_batch_size", KEY_POSITIVE_LONG, REQUIRED, W_OFF(training.global_batch_size)),
    SCALAR("micro_batch_size", KEY_POSITIVE_INT, OPTIONAL, W_OFF(training.micro_batch_size)),
    ENUM("params_dtype", OPTIONAL, W_OFF(training.params_dtype), dtype_names, DTYPE_COUNT),
    SCALAR("use_distributed_optimizer", KEY_BOOL, OPTIONAL,
           W_OFF(training.use_distributed_optimizer)),
    SCALAR("sequence_parallel", KEY_BOOL, OPTIONAL, W_OFF(training.sequence_parallel)),
    ENUM("recompute_granularity", OPTIONAL, W_OFF(training.recompute_granularity), recompute_names,
         RECOMPUTE_COUNT),
    END,
};

static const key_spec parallel_keys[] = {
    SCALAR("tensor_model_parallel_size", KEY_POSITIVE_INT, REQUIRED,
           W_OFF(parallel.tensor_model_parallel_size)),
    SCALAR("pipeline_model_parallel_size", KEY_POSITIVE_INT, REQUIRED,
           W_OFF(parallel.pipeline_model_parallel_size)),
    SCALAR("data_parallel_size", KEY_POSITIVE_INT, REQUIRED, W_OFF(parallel.data_parallel_size)),
    SCALAR("virtual_pipeline_model_parallel_size", KEY_POSITIVE_INT, OPTIONAL,
           W_OFF(parallel.virtual_pipeline_model_parallel_size)),
    SCALAR("expert_model_parallel_size", KEY_POSITIVE_INT, OPTIONAL,
           W_OFF(parallel.expert_model_parallel_size)),
    END,
};

static const key_spec root_keys[] = {
    STRING("name", KEY_NAME, REQUIRED, W_OFF(name), W_SIZE(name)),
    STRING("description", KEY_STRING, OPTIONAL, 0, 0), /* checked, not stored */
    NESTED("model", KEY_SECTION, REQUIRED, model_keys),
    NESTED("training", KEY_SECTION, REQUIRED, training_keys),
    NESTED("parallel", KEY_SECTION, REQUIRED, parallel_keys),
    ENUM("schedule", OPTIONAL, W_OFF(schedule), schedule_names, SCHED_COUNT),
    STRING("planner", KEY_NAME, OPTIONAL, W_OFF(planner), W_SIZE(planner)),
    END,
};

static const key_spec *spec_find(const key_spec *table, const char *name)
{
    for (const key_spec *k = table; k && k->name; k++)
        if (strcmp(k->name, name) == 0)
            return k;
    return NULL;
}

/* "name, model, training, ..." for error messages. */
static void spec_list_names(const key_spec *table, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    for (const key_spec *k = table; k->name && n < size; k++)
        n += snprintf(buf + n, size - n, "%s%s", n ? ", " : "", k->name);
}

/* What a value of this key must look like, for "expected ..." messages. */
static void spec_expected(const key_spec *k, char *buf, size_t size)
{
    switch (k->type) {
    case KEY_POSITIVE_INT:
    case KEY_POSITIVE_LONG:
        snprintf(buf, size, "a positive integer");
        return;
    case KEY_NONNEGATIVE_INT:
        snprintf(buf, size, "a non-negative integer");
        return;
    case KEY_NONNEGATIVE_NUMBER:
        snprintf(buf, size, "a non-negative number");
        return;
    case KEY_BOOL:
        snprintf(buf, size, "true or false");
        return;
    case KEY_STRING:
        snprintf(buf, size, "a string");
        return;
    case KEY_NAME:
        snprintf(buf, size, "a non-empty string");
        return;
    case KEY_SECTION:
    case KEY_TIME_TABLE:
        snprintf(buf, size, "an object");
        return;
    case KEY_LAYERS:
        snprintf(buf, size, "a non-empty array of layer objects");
        return;
    case KEY_NUMBER_LIST:
        snprintf(buf, size, "a non-empty array of non-negative numbers");
        return;
    case KEY_ENUM:
        break;
    }
    size_t n = snprintf(buf, size, "one of");
    for (int i = 0; i < k->num_names && n < size; i++)
        n += snprintf(buf + n, size - n, "%s \"%s\"", i ? "," : "", k->names[i]);
}

/* -------------------------------------------------------------- context */

typedef struct load_ctx {
    const char *path;
    np_error *err;
    bool has_layers;                  /* model.layers is present */
    char (*overridden)[KEY_CAPACITY]; /* canonical keys set by overrides */
    int num_overridden;
} load_ctx;

/* Did the value at key (or an object containing it) come from an override? */
static bool ctx_key_overridden(const load_ctx *c, const char *key)
{
    for (int i = 0; i < c->num_overridden; i++) {
        size_t n = strlen(c->overridden[i]);
        if (strncmp(key, c->overridden[i], n) == 0 &&
            (key[n] == '\0' || key[n] == '.' || key[n] == '['))
            return true;
    }
    return false;
}

static int ctx_fail_at(const load_ctx *c, int code, const char *source, const char *key,
                       const char *fmt, va_list ap)
{
    char text[sizeof c->err->text];
    vsnprintf(text, sizeof text, fmt, ap);
    return np_error_set(c->err, code, source, key, 0, "%s", text);
}

/* An error on key: the source is the file, or the command line when the
 * value came from an override. */
static int fail(const load_ctx *c, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail_cmdline(const load_ctx *c, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(const load_ctx *c, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const char *source = ctx_key_overridden(c, key) ? CMDLINE_SOURCE : c->path;
    int rc = ctx_fail_at(c, NP_EXIT_INPUT, source, key, fmt, ap);
    va_end(ap);
    return rc;
}

static int fail_cmdline(const load_ctx *c, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = ctx_fail_at(c, NP_EXIT_INPUT, CMDLINE_SOURCE, key, fmt, ap);
    va_end(ap);
    return rc;
}

static int fail_memory(const load_ctx *c, const char *key)
{
    return np_error_set(c->err, NP_EXIT_INTERNAL, c->path, key, 0, "out of memory");
}

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
        char *text = json_dumps(v, JSON_ENCODE_ANY);
        snprintf(buf, size, "%.80s%s", text ? text : "?", text && strlen(text) > 80 ? "..." : "");
        free(text);
    }
    return buf;
}

/* ----------------------------------------------------------- value readers */

static int fail_type(const load_ctx *c, const key_spec *k, const json_t *v, const char *key)
{
    char expected[256], got[96];
    spec_expected(k, expected, sizeof expected);
    return fail(c, key, "expected %s, got %s", expected, json_describe(v, got, sizeof got));
}

static int read_integer(const load_ctx *c, const key_spec *k, const json_t *v, void *field,
                        const char *key)
{
    if (!json_is_integer(v))
        return fail_type(c, k, v, key);
    json_int_t x = json_integer_value(v);
    json_int_t low = k->type == KEY_NONNEGATIVE_INT ? 0 : 1;
    json_int_t high = k->type == KEY_POSITIVE_LONG ? MAX_LONG_SIZE : INT_MAX;
    if (x < low)
        return fail_type(c, k, v, key);
    if (x > high)
        return fail(c, key, "expected an integer no larger than %lld, got %lld", (long long)high,
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
    if (length >= k->size)
        return fail(c, key, "expected a string of at most %zu characters, got %zu", k->size - 1,
                    length);
    memcpy(field, json_string_value(v), length + 1);
    return 0;
}

static int read_enum(const load_ctx *c, const key_spec *k, const json_t *v, void *field,
                     const char *key)
{
    int index = json_is_string(v) ? name_index(k->names, k->num_names, json_string_value(v)) : -1;
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
        return fail_memory(c, key);
    *(double **)field = values; /* owned by the workload from here: wl_free frees it */
    for (size_t i = 0; i < n; i++) {
        const json_t *x = json_array_get(v, i);
        if (!json_is_number(x) || json_number_value(x) < 0) {
            char element_key[KEY_CAPACITY], got[96];
            key_index(element_key, key, i);
            return fail(c, element_key, "expected a non-negative number, got %s",
                        json_describe(x, got, sizeof got));
        }
        values[i] = json_number_value(x);
    }
    return 0;
}

static int read_object(load_ctx *c, const json_t *obj, const key_spec *table, void *record,
                       const char *prefix);
static int read_layers(load_ctx *c, const key_spec *k, const json_t *v, wl_workload *w,
                       const char *key);
static int read_time_table(load_ctx *c, const key_spec *k, const json_t *v, wl_layer_spec *layer,
                           const char *key);

static int read_value(load_ctx *c, const key_spec *k, const json_t *v, void *record,
                      const char *key)
{
    void *field = (char *)record + k->offset;
    switch (k->type) {
    case KEY_POSITIVE_INT:
    case KEY_NONNEGATIVE_INT:
    case KEY_POSITIVE_LONG:
        return read_integer(c, k, v, field, key);
    case KEY_NONNEGATIVE_NUMBER:
        if (!json_is_number(v) || json_number_value(v) < 0)
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
        return read_object(c, v, k->children, record, key);
    case KEY_LAYERS:
        return read_layers(c, k, v, record, key);
    case KEY_TIME_TABLE:
        return read_time_table(c, k, v, record, key);
    case KEY_NUMBER_LIST:
        return read_number_list(c, k, v, field, key);
    }
    return fail(c, key, "internal error: key type %d", (int)k->type);
}

/* Reads every key of obj against table into record; keys are "prefix.name". */
static int read_object(load_ctx *c, const json_t *obj, const key_spec *table, void *record,
                       const char *prefix)
{
    char key[KEY_CAPACITY];
    const char *name;
    const json_t *v;
    json_object_foreach((json_t *)obj, name, v)
    {
        if (!spec_find(table, name)) {
            char known[512];
            spec_list_names(table, known, sizeof known);
            key_join(key, prefix, name);
            return fail(c, key, "unknown key; the keys of %s are: %s",
                        prefix[0] ? prefix : "the top level", known);
        }
    }
    for (const key_spec *k = table; k->name; k++) {
        key_join(key, prefix, k->name);
        v = json_object_get(obj, k->name);
        if (!v) {
            if (k->need == REQUIRED || (k->need == REQUIRED_UNLESS_LAYERS && !c->has_layers)) {
                char expected[256];
                spec_expected(k, expected, sizeof expected);
                return fail(c, key, "missing required key; expected %s", expected);
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
        return fail(c, key, "expected at most %d layers, got %zu", INT_MAX, n);
    w->model.layer_specs = calloc(n, sizeof *w->model.layer_specs);
    if (!w->model.layer_specs)
        return fail_memory(c, key);
    w->model.num_layer_specs = (int)n;
    for (size_t i = 0; i < n; i++) {
        char element_key[KEY_CAPACITY], got[96];
        const json_t *element = json_array_get(v, i);
        key_index(element_key, key, i);
        if (!json_is_object(element))
            return fail(c, element_key, "expected a layer object, got %s",
                        json_describe(element, got, sizeof got));
        int rc = read_object(c, element, k->children, &w->model.layer_specs[i], element_key);
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
    int rc = read_object(c, v, k->children, layer, key);
    if (rc)
        return rc;
    size_t n = json_array_size(json_object_get(v, "batch"));
    char column_key[KEY_CAPACITY];
    /* time_table_keys[0] is batch; every other column needs its length. */
    for (const key_spec *column = k->children + 1; column->name; column++) {
        size_t length = json_array_size(json_object_get(v, column->name));
        key_join(column_key, key, column->name);
        if (length != n)
            return fail(c, column_key, "expected %zu values, one per entry of %s.batch, got %zu", n,
                        key, length);
    }
    key_join(column_key, key, "batch");
    for (size_t i = 0; i < n; i++) {
        double b = layer->time_batch[i], previous = i ? layer->time_batch[i - 1] : 0;
        if (b <= previous)
            return fail(c, column_key,
                        "expected positive, strictly increasing micro-batch sizes, got %g "
                        "after %g at index %zu",
                        b, previous, i);
    }
    layer->num_time_points = (int)n;
    return 0;
}

/* ------------------------------------------------- defaults and combinations */

static void set_defaults(wl_workload *w)
{
    w->training.micro_batch_size = 1;
    w->training.params_dtype = WL_BF16;
    w->training.recompute_granularity = RECOMPUTE_NONE;
    w->parallel.virtual_pipeline_model_parallel_size = 1;
    w->parallel.expert_model_parallel_size = 1;
    w->schedule = SCHED_1F1B;
    snprintf(w->planner, sizeof w->planner, "megatron");
}

/* Defaults that depend on other keys; 0 marks a key the file did not give. */
static int fill_derived_defaults(const load_ctx *c, wl_workload *w)
{
    wl_model *m = &w->model;
    if (m->num_layer_specs > 0) {
        if (m->num_layers == 0)
            m->num_layers = m->num_layer_specs;
        else if (m->num_layers != m->num_layer_specs)
            return fail(c, "model.num_layers",
                        "expected the number of entries of model.layers (%d), got %d",
                        m->num_layer_specs, m->num_layers);
        if (m->seq_length == 0)
            m->seq_length = 1;
    }
    if (m->ffn_hidden_size == 0 && m->hidden_size > 0)
        /* Megatron: int((4h·2/3) / 64)·64 for SwiGLU, which is (h/24)·64. */
        m->ffn_hidden_size = m->swiglu ? (m->hidden_size / 24) * 64 : 4 * m->hidden_size;
    if (m->num_query_groups == 0)
        m->num_query_groups = m->num_attention_heads;
    if (m->moe_router_topk == 0 && m->num_experts > 0)
        m->moe_router_topk = 2;
    if (m->moe_ffn_hidden_size == 0)
        m->moe_ffn_hidden_size = m->ffn_hidden_size;
    if (w->parallel.tensor_model_parallel_size == 1)
        w->training.sequence_parallel = false; /* as Megatron does */
    return 0;
}

static int check_attention(const load_ctx *c, const wl_workload *w)
{
    const wl_model *m = &w->model;
    int tp = w->parallel.tensor_model_parallel_size;
    if (m->num_attention_heads == 0)
        return 0; /* a layer-by-layer model without attention sizes */
    if (m->num_attention_heads % m->num_query_groups != 0)
        return fail(c, "model.num_query_groups",
                    "expected a divisor of model.num_attention_heads (%d), got %d",
                    m->num_attention_heads, m->num_query_groups);
    if (m->hidden_size % m->num_attention_heads != 0)
        return fail(c, "model.hidden_size",
                    "expected a multiple of model.num_attention_heads (%d), got %ld",
                    m->num_attention_heads, m->hidden_size);
    if (m->num_attention_heads % tp != 0)
        return fail(c, "model.num_attention_heads",
                    "expected a multiple of parallel.tensor_model_parallel_size (%d), got %d", tp,
                    m->num_attention_heads);
    if (m->num_query_groups % tp != 0)
        return fail(c, "model.num_query_groups",
                    "expected a multiple of parallel.tensor_model_parallel_size (%d), got %d", tp,
                    m->num_query_groups);
    return 0;
}

static int check_batch(const load_ctx *c, const wl_workload *w)
{
    long mbs = w->training.micro_batch_size, dp = w->parallel.data_parallel_size;
    long gbs = w->training.global_batch_size;
    if (gbs % (mbs * dp) != 0)
        return fail(c, "training.global_batch_size",
                    "expected a multiple of training.micro_batch_size x "
                    "parallel.data_parallel_size = %ld x %ld = %ld, got %ld",
                    mbs, dp, mbs * dp, gbs);
    if (gbs / (mbs * dp) > INT_MAX)
        return fail(c, "training.global_batch_size",
                    "expected at most %d micro-batches per pipeline, got %ld", INT_MAX,
                    gbs / (mbs * dp));
    return 0;
}

static int check_pipeline(const load_ctx *c, const wl_workload *w)
{
    int pp = w->parallel.pipeline_model_parallel_size;
    int vpp = w->parallel.virtual_pipeline_model_parallel_size;
    int layers = w->model.num_layers;
    const char *vpp_key = "parallel.virtual_pipeline_model_parallel_size";
    if (pp > layers)
        return fail(c, "parallel.pipeline_model_parallel_size",
                    "expected at most model.num_layers (%d) stages, got %d", layers, pp);
    if (w->schedule != SCHED_INTERLEAVED) {
        if (vpp > 1)
            return fail(c, vpp_key,
                        "expected 1 unless schedule is \"interleaved\" "
                        "(schedule is \"%s\"), got %d",
                        wl_schedule_name(w->schedule), vpp);
        return 0;
    }
    if (vpp < 2)
        return fail(c, vpp_key, "schedule \"interleaved\" needs at least 2, got %d", vpp);
    if (pp < 2)
        return fail(c, "parallel.pipeline_model_parallel_size",
                    "schedule \"interleaved\" needs at least 2 stages, got %d", pp);
    long chunks = (long)pp * vpp;
    if (layers % chunks != 0)
        return fail(c, "model.num_layers",
                    "schedule \"interleaved\" needs a multiple of "
                    "parallel.pipeline_model_parallel_size x %s = %d x %d = %ld, got %d",
                    vpp_key, pp, vpp, chunks, layers);
    return 0;
}

static int check_experts(const load_ctx *c, const wl_workload *w)
{
    const wl_model *m = &w->model;
    int ep = w->parallel.expert_model_parallel_size, dp = w->parallel.data_parallel_size;
    const char *ep_key = "parallel.expert_model_parallel_size";
    if (m->num_experts == 0) {
        if (ep != 1)
            return fail(c, ep_key, "expected 1 for a dense model (model.num_experts is 0), got %d",
                        ep);
        return 0;
    }
    if (m->num_experts % ep != 0)
        return fail(c, "model.num_experts", "expected a multiple of %s (%d), got %d", ep_key, ep,
                    m->num_experts);
    if (dp % ep != 0)
        return fail(c, ep_key, "expected a divisor of parallel.data_parallel_size (%d), got %d", dp,
                    ep);
    if (m->moe_router_topk > m->num_experts)
        return fail(c, "model.moe_router_topk", "expected at most model.num_experts (%d), got %d",
                    m->num_experts, m->moe_router_topk);
    return 0;
}

static int check_combinations(const load_ctx *c, const wl_workload *w)
{
    int rc = check_attention(c, w);
    if (!rc)
        rc = check_batch(c, w);
    if (!rc)
        rc = check_pipeline(c, w);
    if (!rc)
        rc = check_experts(c, w);
    return rc;
}

/* ------------------------------------------------------------- overrides */

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
    if (spec_find(root_keys, name))
        return 0;
    const char *section = NULL;
    int matches = 0;
    char candidates[256] = "";
    for (const key_spec *k = root_keys; k->name; k++) {
        if (k->type != KEY_SECTION || !spec_find(k->children, name))
            continue;
        section = k->name;
        size_t used = strlen(candidates);
        snprintf(candidates + used, sizeof candidates - used, "%s%s.%s", matches ? ", " : "",
                 k->name, name);
        matches++;
    }
    if (matches > 1)
        return fail_cmdline(c, key, "ambiguous key; write one of %s", candidates);
    if (matches == 0 && (spec_find(layer_keys, name) || spec_find(time_table_keys, name)))
        return fail_cmdline(c, key,
                            "ambiguous key: every entry of model.layers has one; write "
                            "model.layers[N].%s",
                            name);
    if (matches == 0)
        return fail_cmdline(c, key,
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
    const key_spec *table = root_keys, *spec = NULL;
    for (int i = 0; i < p->num_steps; i++) {
        const path_step *s = &p->steps[i];
        char where[KEY_CAPACITY];
        path_format(p, i, where, sizeof where);
        if (s->index >= 0) {
            if (!spec || spec->type != KEY_LAYERS)
                return fail_cmdline(c, key, "unknown key: %s cannot be indexed", where);
            table = spec->children; /* a layer */
            spec = NULL;
            continue;
        }
        if (spec && spec->type == KEY_LAYERS)
            return fail_cmdline(c, key, "unknown key: %s is an array; write %s[N].%s", where, where,
                                s->name);
        if (!table)
            return fail_cmdline(c, key, "unknown key: %s has no keys", where);
        spec = spec_find(table, s->name);
        if (!spec) {
            char known[512];
            spec_list_names(table, known, sizeof known);
            return fail_cmdline(c, key, "unknown key \"%s\"; the keys of %s are: %s", s->name,
                                i ? where : "the top level", known);
        }
        bool has_children = spec->type == KEY_SECTION || spec->type == KEY_TIME_TABLE;
        table = has_children ? spec->children : NULL;
    }
    return 0;
}

/* The override's value: a JSON literal, or else the text as a JSON string. */
static json_t *override_value(const char *text)
{
    json_error_t jerr;
    json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
    return v ? v : json_string(text);
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
            fail_memory(c, key);
            return NULL;
        }
    }
    if (!child || (next_is_index ? !json_is_array(child) : !json_is_object(child))) {
        char where[KEY_CAPACITY];
        path_format(p, i + 1, where, sizeof where);
        fail_cmdline(c, key, "cannot set: %s is %s in the file, expected %s", where,
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
            return fail_cmdline(c, key, "index %ld out of range: the array has %zu entries",
                                last->index, json_array_size(cur));
        }
        return json_array_set_new(cur, last->index, value) ? fail_memory(c, key) : 0;
    }
    return json_object_set_new(cur, last->name, value) ? fail_memory(c, key) : 0;
}

static int apply_override(load_ctx *c, json_t *root, const char *text)
{
    const char *equals = text ? strchr(text, '=') : NULL;
    char key[KEY_CAPACITY];
    if (!equals || equals == text)
        return fail_cmdline(c, text ? text : "", "expected key=value");
    snprintf(key, sizeof key, "%.*s", (int)(equals - text), text);
    override_path p;
    if (path_parse(key, &p))
        return fail_cmdline(c, key,
                            "malformed key; expected a dotted key such as "
                            "parallel.data_parallel_size or model.layers[0].params");
    int rc = p.num_steps == 1 && p.steps[0].index < 0 ? path_resolve_bare(c, &p, key) : 0;
    if (!rc)
        rc = path_check_schema(c, &p, key);
    if (rc)
        return rc;
    json_t *value = override_value(equals + 1);
    if (!value)
        return fail_cmdline(c, key, "value is not valid UTF-8");
    path_format(&p, p.num_steps, p.canonical, sizeof p.canonical);
    rc = tree_set(c, root, &p, value, key);
    if (!rc)
        snprintf(c->overridden[c->num_overridden++], KEY_CAPACITY, "%s", p.canonical);
    return rc;
}

static int apply_overrides(load_ctx *c, json_t *root, const char *const *overrides, int n)
{
    if (n <= 0)
        return 0;
    c->overridden = calloc((size_t)n, sizeof *c->overridden);
    if (!c->overridden)
        return fail_memory(c, "");
    for (int i = 0; i < n; i++) {
        int rc = apply_override(c, root, overrides[i]);
        if (rc)
            return rc;
    }
    return 0;
}

/* ------------------------------------------------------------------ load */

static json_t *load_json(const load_ctx *c)
{
    json_error_t jerr;
    json_t *root = json_load_file(c->path, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        if (jerr.line > 0)
            np_error_set(c->err, NP_EXIT_INPUT, c->path, "", jerr.line,
                         "syntax error at column %d: %s", jerr.column, jerr.text);
        else
            np_error_set(c->err, NP_EXIT_INPUT, c->path, "", 0, "cannot read: %s", jerr.text);
        return NULL;
    }
    if (!json_is_object(root)) {
        np_error_set(c->err, NP_EXIT_INPUT, c->path, "", 0,
                     "expected a JSON object at the top level, got an array");
        json_decref(root);
        return NULL;
    }
    return root;
}

static bool tree_has_layers(const json_t *root)
{
    return json_object_get(json_object_get(root, "model"), "layers") != NULL;
}

int wl_load(const char *path, const char *const *overrides, int num_overrides, wl_workload *out,
            np_error *err)
{
    np_error_clear(err);
    if (!out)
        return np_error_set(err, NP_EXIT_INTERNAL, path, "", 0, "no workload to fill");
    memset(out, 0, sizeof *out);
    if (!path || !path[0])
        return np_error_set(err, NP_EXIT_INPUT, "", "", 0, "no workload file given");
    snprintf(out->path, sizeof out->path, "%s", path);
    set_defaults(out);
    np_error scratch; /* callers may pass err = NULL */
    load_ctx c = {.path = path, .err = err ? err : &scratch};
    np_error_clear(c.err);
    json_t *root = load_json(&c);
    if (!root)
        return c.err->code;
    int rc = apply_overrides(&c, root, overrides, num_overrides);
    c.has_layers = tree_has_layers(root);
    if (!rc)
        rc = read_object(&c, root, root_keys, out, "");
    if (!rc)
        rc = fill_derived_defaults(&c, out);
    if (!rc)
        rc = check_combinations(&c, out);
    json_decref(root);
    free(c.overridden);
    if (rc)
        wl_free(out);
    return rc;
}

/* --------------------------------------------------------------- cluster */

int wl_check_cluster(const wl_workload *w, int num_npus, np_error *err)
{
    if (num_npus <= 0)
        return np_error_set(err, NP_EXIT_INPUT, w->path, "parallel", 0,
                            "expected a platform with at least one NPU, got %d", num_npus);
    const wl_parallel *p = &w->parallel;
    long long tp = p->tensor_model_parallel_size, pp = p->pipeline_model_parallel_size;
    long long dp = p->data_parallel_size, needed = tp * pp * dp;
    if (needed != num_npus)
        return np_error_set(err, NP_EXIT_INPUT, w->path, "parallel", 0,
                            "tensor_model_parallel_size x pipeline_model_parallel_size x "
                            "data_parallel_size = %lld x %lld x %lld = %lld NPUs, but the "
                            "platform has %d",
                            tp, pp, dp, needed, num_npus);
    int m = wl_num_micro_batches(w);
    if (w->schedule == SCHED_INTERLEAVED && m % pp != 0)
        /* Megatron's interleaved schedule runs micro-batches in groups of p. */
        return np_error_set(err, NP_EXIT_INPUT, w->path, "training.global_batch_size", 0,
                            "schedule \"interleaved\" needs the number of micro-batches, "
                            "global_batch_size / (micro_batch_size x data_parallel_size) = "
                            "%ld / (%d x %d) = %d, to be a multiple of "
                            "parallel.pipeline_model_parallel_size (%lld)",
                            w->training.global_batch_size, w->training.micro_batch_size,
                            p->data_parallel_size, m, pp);
    np_error_clear(err);
    return 0;
}
