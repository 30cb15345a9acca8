/*
 * workload.c -- loading and checking workload JSON (see workload.h).
 *
 * This file drives the passes and holds what they share: the error context
 * (an error's source is the file or the command line) and wl_free().  The
 * rest is split by concept (workload_internal.h lists the files): the key
 * table (workload_keys.c), reading (workload_read.c), overrides
 * (workload_override.c), cross-key defaults and checks (workload_checks.c).
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
 *   1. json_loadb of the whole file (duplicate keys rejected; syntax errors carry the line
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
#include <stdarg.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "np_file.h"
#include "workload_internal.h"

#define CMDLINE_SOURCE "<command line>"

/* -------------------------------------------------------------- context */

/* Is key one of the n canonical keys, or inside an object one of them names? */
static bool key_among(const char *key, const char (*keys)[KEY_CAPACITY], int n)
{
    for (int i = 0; i < n; i++) {
        size_t len = strlen(keys[i]);
        if (strncmp(key, keys[i], len) == 0 &&
            (key[len] == '\0' || key[len] == '.' || key[len] == '['))
            return true;
    }
    return false;
}

/* Did the value at key (or an object containing it) come from an override? */
static bool ctx_key_overridden(const load_ctx *c, const char *key)
{
    return key_among(key, (const char(*)[KEY_CAPACITY])c->overridden, c->num_overridden);
}

const char *wl_key_source(const wl_workload *w, const char *key)
{
    return key_among(key, w->command_line_keys, w->num_command_line_keys) ? CMDLINE_SOURCE
                                                                          : w->path;
}

int wl_key_error(np_error *err, int code, const wl_workload *w, const char *key, const char *fmt,
                 ...)
{
    char text[sizeof err->text];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return np_error_set(err, code, wl_key_source(w, key), key, 0, "%s", text);
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
int wl_fail(const load_ctx *c, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const char *source = ctx_key_overridden(c, key) ? CMDLINE_SOURCE : c->path;
    int rc = ctx_fail_at(c, NP_EXIT_INPUT, source, key, fmt, ap);
    va_end(ap);
    return rc;
}

int wl_fail_cmdline(const load_ctx *c, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = ctx_fail_at(c, NP_EXIT_INPUT, CMDLINE_SOURCE, key, fmt, ap);
    va_end(ap);
    return rc;
}

int wl_fail_memory(const load_ctx *c, const char *key)
{
    return np_error_set(c->err, NP_EXIT_INTERNAL, c->path, key, 0, "out of memory");
}

/* ------------------------------------------------------------------ load */

/* True when the text starts like XML: the platform given where the workload
 * goes (simrun PLATFORM.xml WORKLOAD.json). */
static bool looks_like_xml(const char *text)
{
    while (isspace((unsigned char)*text))
        text++;
    return *text == '<';
}

static json_t *load_json(const load_ctx *c)
{
    char *text;
    size_t len;
    /* a regular file of sane size: a directory, /dev/zero or a FIFO would
     * give a misleading syntax error or block */
    if (np_file_read(c->path, "workload", WL_MAX_FILE_BYTES, &text, &len, c->err))
        return NULL;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    char token[64];
    int line = root ? wl_json_underflow(text, len, token, sizeof token) : 0;
    bool xml = !root && looks_like_xml(text), bom = !root && np_text_has_bom(text, len);
    free(text);
    if (line) {
        np_error_set(c->err, NP_EXIT_INPUT, c->path, "", line,
                     "the number %s is below the smallest double and would read as 0: write 0, "
                     "or a value of at least 1e-308",
                     token);
        json_decref(root);
        return NULL;
    }
    if (xml) {
        np_error_set(c->err, NP_EXIT_INPUT, c->path, "", 0,
                     "this looks like a platform XML file, not a workload JSON: the platform "
                     "comes first (simrun PLATFORM.xml WORKLOAD.json)");
        return NULL;
    }
    if (bom) {
        np_error_set(c->err, NP_EXIT_INPUT, c->path, "", 1, "%s", NP_BOM_TEXT);
        return NULL;
    }
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
    wl_set_defaults(out);
    np_error scratch; /* callers may pass err = NULL */
    load_ctx c = {.path = path, .err = err ? err : &scratch};
    np_error_clear(c.err);
    if (num_overrides > WL_MAX_OVERRIDES)
        return np_error_set(c.err, NP_EXIT_USAGE, CMDLINE_SOURCE, "", 0,
                            "%d overrides; expected at most %d", num_overrides, WL_MAX_OVERRIDES);
    json_t *root = load_json(&c);
    if (!root)
        return c.err->code;
    int rc = wl_apply_overrides(&c, root, overrides, num_overrides);
    c.has_layers = tree_has_layers(root);
    if (!rc)
        rc = wl_read_object(&c, root, wl_root_keys, out, "");
    if (!rc)
        rc = wl_fill_derived_defaults(&c, out);
    if (!rc)
        rc = wl_check_combinations(&c, out);
    json_decref(root);
    out->num_command_line_keys = c.num_overridden;
    for (int i = 0; i < c.num_overridden; i++)
        snprintf(out->command_line_keys[i], sizeof out->command_line_keys[i], "%s",
                 c.overridden[i]);
    free(c.overridden);
    if (rc)
        wl_free(out);
    if (rc == NP_EXIT_INPUT && num_overrides > 0 && c.err->line == 0 &&
        strcmp(c.err->source, path) == 0 && wl_file_passes(path))
        snprintf(c.err->source, sizeof c.err->source, "%s", CMDLINE_SOURCE);
    return rc;
}

bool wl_file_passes(const char *path)
{
    wl_workload alone;
    np_error e;
    int rc = wl_load(path, NULL, 0, &alone, &e);
    if (!rc)
        wl_free(&alone);
    return rc == 0;
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
