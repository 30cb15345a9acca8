/*
 * plan_json.c -- plans to and from JSON (see plan_json.h).
 *
 * Written with jansson's builder (into np_file's temporary file, renamed
 * onto the target once complete) and read back with a small key table; the
 * reader trusts nothing: every array length is checked against the counts
 * it implies, and the result goes through plan_check() like a planner's.
 */
#include "plan_json.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "np_file.h"
#include "np_json.h"
#include "np_sha256.h"

/* Longest prediction a plan may carry: 1e9 s, 31 years of one iteration. */
#define MAX_PREDICTED_S 1e9

/* Largest plan file read (a plan lists at most a few numbers per layer). */
#define MAX_PLAN_FILE_BYTES ((size_t)64 << 20)

static json_t *int_array(const int *values, int count)
{
    json_t *a = json_array();
    for (int i = 0; i < count; i++)
        json_array_append_new(a, json_integer(values[i]));
    return a;
}

/* The plan's decisions: what the engine replays (not the planner's name,
 * its prediction or its solver's report). */
static void add_decisions(json_t *o, const plan *pl)
{
    json_t *rc = json_array();
    for (int l = 0; l < pl->num_layers; l++)
        json_array_append_new(rc, json_string(wl_recompute_name(pl->recompute[l])));
    json_object_set_new(o, "schedule", json_string(wl_schedule_name(pl->schedule)));
    json_object_set_new(o, "num_stages", json_integer(pl->num_stages));
    json_object_set_new(o, "num_chunks", json_integer(pl->num_chunks));
    json_object_set_new(o, "num_layers", json_integer(pl->num_layers));
    json_object_set_new(o, "chunk_start",
                        int_array(pl->chunk_start, pl->num_stages * pl->num_chunks + 1));
    json_object_set_new(o, "recompute", rc);
    if (pl->recompute_units) {
        json_t *u = json_array();
        for (int l = 0; l < pl->num_layers; l++)
            json_array_append_new(u, json_integer(pl->recompute_units[l]));
        json_object_set_new(o, "recompute_units", u);
    }
    json_object_set_new(o, "micro_batch_size", json_integer(pl->micro_batch_size));
    json_object_set_new(o, "num_micro_batches", json_integer(pl->num_micro_batches));
    if (pl->micro_batch_sizes)
        json_object_set_new(o, "micro_batch_sizes",
                            int_array(pl->micro_batch_sizes, pl->num_micro_batches));
    json_object_set_new(o, "tensor_parallel", json_integer(pl->tensor_parallel));
    json_object_set_new(o, "data_parallel", json_integer(pl->data_parallel));
    json_object_set_new(o, "merak_shifted_recompute", json_boolean(pl->merak_shifted_recompute));
}

void plan_decisions_sha256(const plan *pl, char hex[NP_SHA256_HEX_SIZE])
{
    json_t *o = json_object();
    add_decisions(o, pl);
    char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    np_sha256_hex(text ? text : "", text ? strlen(text) : 0, hex);
    free(text);
    json_decref(o);
}

int plan_write_json(const char *path, const plan *pl, const char *workload_path, np_error *err)
{
    json_t *o = json_object();
    json_object_set_new(o, "planner", json_string(pl->planner));
    if (workload_path)
        json_object_set_new(o, "workload", json_string(workload_path));
    add_decisions(o, pl);
    json_object_set_new(o, "predicted_iteration_s", json_real(pl->predicted_iteration_s));
    if (pl->cost_model_sha256[0])
        json_object_set_new(o, "cost_model_sha256", json_string(pl->cost_model_sha256));
    if (pl->predicted_iteration_s > 0) { /* what the prediction priced */
        char hex[NP_SHA256_HEX_SIZE];
        plan_decisions_sha256(pl, hex);
        json_object_set_new(o, "decisions_sha256", json_string(hex));
    }
    if (pl->solver_status[0]) {
        json_object_set_new(o, "solver_status", json_string(pl->solver_status));
        json_object_set_new(o, "solver_gap", json_real(pl->solver_gap));
    }
    /* Whole or not at all (np_file.h): a failed write leaves an existing
     * plan file as it was. */
    np_file out;
    int rc_out = np_file_begin(&out, path, "--plan-out", err);
    if (!rc_out) {
        if (json_dumpf(o, out.f, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0) {
            np_file_abort(&out);
            rc_out = np_error_set(err, NP_EXIT_INTERNAL, path, "--plan-out", 0,
                                  "cannot write the plan file");
        } else {
            rc_out = np_file_commit(&out, err);
        }
    }
    json_decref(o);
    return rc_out;
}

/* ---- reading ---------------------------------------------------------- */

typedef struct reader {
    const char *path;
    json_t *root;
    np_error *err;
} reader;

static const char *const known_keys[] = {
    "planner",
    "workload",
    "schedule",
    "num_stages",
    "num_chunks",
    "num_layers",
    "chunk_start",
    "recompute",
    "recompute_units",
    "micro_batch_size",
    "num_micro_batches",
    "micro_batch_sizes",
    "tensor_parallel",
    "data_parallel",
    "merak_shifted_recompute",
    "predicted_iteration_s",
    "cost_model_sha256",
    "decisions_sha256",
    "solver_gap",
    "solver_status",
};

static int bad(reader *r, const char *key, const char *fmt, const char *detail)
{
    return np_error_set(r->err, NP_EXIT_INPUT, r->path, key, 0, fmt, detail);
}

/* A prediction prices the decisions it was made for: a plan whose
 * decisions were edited since (decisions_sha256 differs, or is missing
 * beside a prediction) keeps no prediction, and its note says why. */
static void check_decisions(reader *r, plan *pl)
{
    if (pl->predicted_iteration_s <= 0)
        return;
    json_t *sha = json_object_get(r->root, "decisions_sha256");
    char hex[NP_SHA256_HEX_SIZE];
    plan_decisions_sha256(pl, hex);
    if (json_is_string(sha) && strcmp(json_string_value(sha), hex) == 0)
        return;
    snprintf(pl->note, sizeof pl->note, "the plan's prediction (%.3f s) is not shown: %s",
             pl->predicted_iteration_s,
             sha ? "its decisions were edited after it was priced (decisions_sha256)"
                 : "the file does not say which decisions it priced (no decisions_sha256)");
    pl->predicted_iteration_s = 0;
}

static int check_known_keys(reader *r)
{
    const char *key;
    json_t *value;
    json_object_foreach(r->root, key, value)
    {
        int found = 0;
        for (size_t i = 0; i < sizeof known_keys / sizeof known_keys[0]; i++)
            found |= strcmp(key, known_keys[i]) == 0;
        if (!found)
            return bad(r, key, "unknown key%s", "");
    }
    return 0;
}

static int get_int(reader *r, const char *key, int min, int *out)
{
    json_t *v = json_object_get(r->root, key);
    if (!v)
        return bad(r, key, "missing required key%s", "");
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > 1 << 30)
        return np_error_set(r->err, NP_EXIT_INPUT, r->path, key, 0, "expected an integer >= %d",
                            min);
    *out = (int)json_integer_value(v);
    return 0;
}

static const char *get_string(reader *r, const char *key, int *rc)
{
    json_t *v = json_object_get(r->root, key);
    if (!v || !json_is_string(v)) {
        *rc = bad(r, key, v ? "expected a string%s" : "missing required key%s", "");
        return NULL;
    }
    return json_string_value(v);
}

/* An array of `count` integers >= min into out; optional arrays may be absent. */
static int get_int_array(reader *r, const char *key, int count, int min, int *out, int optional)
{
    json_t *a = json_object_get(r->root, key);
    if (!a)
        return optional ? 1 : bad(r, key, "missing required key%s", "");
    if (!json_is_array(a) || (int)json_array_size(a) != count)
        return np_error_set(r->err, NP_EXIT_INPUT, r->path, key, 0,
                            "expected an array of %d integers", count);
    for (int i = 0; i < count; i++) {
        json_t *v = json_array_get(a, i);
        if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > 1 << 30)
            return np_error_set(r->err, NP_EXIT_INPUT, r->path, key, 0,
                                "element %d: expected an integer >= %d", i, min);
        out[i] = (int)json_integer_value(v);
    }
    return 0;
}

static int read_recompute(reader *r, plan *pl)
{
    json_t *a = json_object_get(r->root, "recompute");
    if (!a || !json_is_array(a) || (int)json_array_size(a) != pl->num_layers)
        return np_error_set(r->err, NP_EXIT_INPUT, r->path, "recompute", 0,
                            "expected an array of %d recompute names", pl->num_layers);
    for (int l = 0; l < pl->num_layers; l++) {
        json_t *v = json_array_get(a, l);
        int k = json_is_string(v) ? wl_recompute_by_name(json_string_value(v)) : -1;
        if (k < 0)
            return np_error_set(r->err, NP_EXIT_INPUT, r->path, "recompute", 0,
                                "element %d: expected \"none\", \"selective\" or \"full\"", l);
        pl->recompute[l] = (recompute_kind)k;
    }
    return 0;
}

static int read_optional_arrays(reader *r, plan *pl)
{
    int rc;
    if (json_object_get(r->root, "recompute_units")) {
        int *units = malloc((size_t)pl->num_layers * sizeof *units);
        if (!units || plan_use_recompute_units(pl)) {
            free(units);
            return np_error_set(r->err, NP_EXIT_INTERNAL, r->path, "", 0, "out of memory");
        }
        rc = get_int_array(r, "recompute_units", pl->num_layers, 0, units, 1);
        for (int l = 0; rc == 0 && l < pl->num_layers; l++) {
            if (units[l] > UINT16_MAX)
                rc = np_error_set(r->err, NP_EXIT_INPUT, r->path, "recompute_units", 0,
                                  "element %d: a mask of at most 16 units, got %d", l, units[l]);
            pl->recompute_units[l] = (uint16_t)units[l];
        }
        free(units);
        if (rc)
            return rc;
    }
    if (json_object_get(r->root, "micro_batch_sizes")) {
        pl->micro_batch_sizes = malloc((size_t)pl->num_micro_batches * sizeof(int));
        if (!pl->micro_batch_sizes)
            return np_error_set(r->err, NP_EXIT_INTERNAL, r->path, "", 0, "out of memory");
        if ((rc = get_int_array(r, "micro_batch_sizes", pl->num_micro_batches, 1,
                                pl->micro_batch_sizes, 1)))
            return rc;
    }
    return 0;
}

static int read_plan(reader *r, int num_layers, plan *pl)
{
    int rc, p, v, layers;
    if ((rc = check_known_keys(r)) || (rc = get_int(r, "num_stages", 1, &p)) ||
        (rc = get_int(r, "num_chunks", 1, &v)) || (rc = get_int(r, "num_layers", 1, &layers)))
        return rc;
    if (layers != num_layers)
        return np_error_set(r->err, NP_EXIT_INPUT, r->path, "num_layers", 0,
                            "the plan has %d layers, the model it is replayed on has %d "
                            "(a plan made for another workload?)",
                            layers, num_layers);
    if ((long)p * v > num_layers)
        return np_error_set(r->err, NP_EXIT_INPUT, r->path, "num_stages", 0,
                            "%d stages x %d chunks exceed the %d layers", p, v, num_layers);
    if (plan_init(pl, p, v, layers))
        return np_error_set(r->err, NP_EXIT_INTERNAL, r->path, "", 0, "out of memory");
    const char *s = get_string(r, "planner", &rc);
    if (!s)
        return rc;
    snprintf(pl->planner, sizeof pl->planner, "%s", s);
    if (!(s = get_string(r, "schedule", &rc)))
        return rc;
    int sched = wl_schedule_by_name(s);
    if (sched < 0)
        return bad(r, "schedule", "unknown schedule '%s'", s);
    pl->schedule = (schedule_kind)sched;
    if ((rc = get_int_array(r, "chunk_start", p * v + 1, 0, pl->chunk_start, 0)) ||
        (rc = read_recompute(r, pl)) ||
        (rc = get_int(r, "micro_batch_size", 1, &pl->micro_batch_size)) ||
        (rc = get_int(r, "num_micro_batches", 1, &pl->num_micro_batches)) ||
        (rc = get_int(r, "tensor_parallel", 1, &pl->tensor_parallel)) ||
        (rc = get_int(r, "data_parallel", 1, &pl->data_parallel)) ||
        (rc = read_optional_arrays(r, pl)))
        return rc;
    json_t *shift = json_object_get(r->root, "merak_shifted_recompute");
    if (shift && !json_is_boolean(shift))
        return bad(r, "merak_shifted_recompute", "expected true or false%s", "");
    pl->merak_shifted_recompute = shift && json_is_true(shift);
    json_t *pred = json_object_get(r->root, "predicted_iteration_s");
    if (pred && !(json_is_number(pred) && json_number_value(pred) >= 0 &&
                  json_number_value(pred) <= MAX_PREDICTED_S))
        return bad(r, "predicted_iteration_s",
                   "expected a number of seconds from 0 (none) to 1e9%s", "");
    pl->predicted_iteration_s = pred ? json_number_value(pred) : 0;
    json_t *sha = json_object_get(r->root, "cost_model_sha256");
    const char *hex = sha && json_is_string(sha) ? json_string_value(sha) : NULL;
    if (sha && !(hex && strlen(hex) == 64 && strspn(hex, "0123456789abcdef") == 64))
        return bad(r, "cost_model_sha256", "expected 64 lower-case hex digits%s", "");
    snprintf(pl->cost_model_sha256, sizeof pl->cost_model_sha256, "%s", hex ? hex : "");
    /* The solver's report when the plan was made: checked, not replayed (a
     * replay solves nothing; its row's solver columns stay empty). */
    json_t *status = json_object_get(r->root, "solver_status");
    json_t *gap = json_object_get(r->root, "solver_gap");
    if (status && !json_is_string(status))
        return bad(r, "solver_status", "expected a string%s", "");
    if (gap && !(json_is_number(gap) && json_number_value(gap) >= 0))
        return bad(r, "solver_gap", "expected a number >= 0 (the MIP gap, 0.05 for 5%%)%s", "");
    if (gap && !status)
        return bad(r, "solver_gap", "a gap without a solver_status%s", "");
    if (pl->micro_batch_sizes) { /* uneven micro-batches split m of the reference size */
        long sum = 0;
        for (int i = 0; i < pl->num_micro_batches; i++)
            sum += pl->micro_batch_sizes[i];
        if (sum != (long)pl->num_micro_batches * pl->micro_batch_size)
            return np_error_set(r->err, NP_EXIT_INPUT, r->path, "micro_batch_sizes", 0,
                                "the sizes add up to %ld samples, num_micro_batches x "
                                "micro_batch_size is %d x %d = %ld: expected the same count",
                                sum, pl->num_micro_batches, pl->micro_batch_size,
                                (long)pl->num_micro_batches * pl->micro_batch_size);
    }
    rc = plan_check(pl, r->path, r->err);
    if (!rc)
        check_decisions(r, pl);
    return rc;
}

int plan_read_json(const char *path, int num_layers, plan *out, np_error *err)
{
    memset(out, 0, sizeof *out);
    json_t *root = np_json_read(path, "plan", MAX_PLAN_FILE_BYTES, JSON_REJECT_DUPLICATES, err);
    if (!root)
        return NP_EXIT_INPUT; /* err says why (np_json_read) */
    if (!json_is_object(root)) {
        json_decref(root);
        return np_error_set(err, NP_EXIT_INPUT, path, "", 0, "expected a JSON object");
    }
    reader r = {path, root, err};
    int rc = read_plan(&r, num_layers, out);
    json_decref(root);
    if (rc)
        plan_free(out);
    return rc;
}
