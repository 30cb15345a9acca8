/*
 * workload_internal.h -- what the files of the workload loader share (not
 * public: workload.h is the interface).
 *
 * The loader is split by concept, one file per pass or table:
 *   workload.c           wl_load() and its passes, the error context, wl_free()
 *   workload_keys.c      the key table: every key, its type, need, range and
 *                        default, and the names of the enum values
 *   workload_read.c      reading a JSON object against its table (pass 3)
 *   workload_override.c  `--set key=value` overrides written into the tree
 *                        (pass 2)
 *   workload_checks.c    defaults that depend on other keys, cross-key checks
 *                        (pass 4) and wl_check_cluster()
 * A new key is a row of workload_keys.c; a new rule between keys is a check
 * of workload_checks.c.
 */
#ifndef WORKLOAD_INTERNAL_H
#define WORKLOAD_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "workload.h"

/* Upper bound of long sizes (hidden, sequence, vocabulary, batch): far above
 * any real model, low enough that 4·hidden or batch·dp cannot overflow. */
#define MAX_LONG_SIZE (1LL << 40)
#define KEY_CAPACITY 128 /* == sizeof(np_error.key) */

/* ---------------------------------------------------------------- schema */

typedef enum key_type {
    KEY_POSITIVE_INT,       /* int in [1, INT_MAX] */
    KEY_NONNEGATIVE_INT,    /* int in [0, INT_MAX] */
    KEY_POSITIVE_LONG,      /* long in [1, MAX_LONG_SIZE] */
    KEY_NONNEGATIVE_NUMBER, /* double >= 0, integer or real in JSON */
    KEY_PROBABILITY,        /* double in [0, 1): a dropout probability */
    KEY_BOOL,
    KEY_STRING,         /* char[size]; size 0: checked, not stored */
    KEY_NAME,           /* like KEY_STRING, but must not be empty */
    KEY_ENUM,           /* string from names[], stored as its index */
    KEY_SECTION,        /* object read by children into the same record */
    KEY_LAYERS,         /* non-empty array of objects read by children */
    KEY_TIME_TABLE,     /* object read by children, then checked as a table */
    KEY_NUMBER_LIST,    /* non-empty array of numbers >= 0, stored as double* */
    KEY_MOE_LAYER_FREQ, /* int, pattern string or 0/1 array (workload_moe.c) */
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
    /* Largest value accepted for a number, an integer or the entries of a
     * number list (0: the type's own bound), and its unit for messages and
     * docs/workload-format.md.  Every bound sits far above any published
     * model or run and keeps the arithmetic after it finite and within int
     * or long; the simulation's own size is bounded separately (simrun
     * --allow-large). */
    double max;
    const char *unit;
} key_spec;

/* The tables (workload_keys.c): the top level, a layer of "model.layers" and
 * a layer's "time_table"; the sections hang below wl_root_keys. */
extern const key_spec wl_root_keys[];
extern const key_spec wl_layer_keys[];
extern const key_spec wl_time_table_keys[];
/* Names of the MoE enums, in wl_moe_dispatcher / wl_moe_balancing order. */
extern const char *const wl_moe_dispatcher_names[];
extern const char *const wl_moe_balancing_names[];

/* Index of name in names[count], -1 when absent or NULL. */
int wl_name_index(const char *const *names, int count, const char *name);
const key_spec *wl_spec_find(const key_spec *table, const char *name);
/* "name, model, training, ..." for error messages ("..." when cut). */
void wl_spec_list_names(const key_spec *table, char *buf, size_t size);
/* What to tell the writer of an unknown key `name` of table (section
 * `where`): the key it most likely misspells ("did you mean ...?"), else
 * every key of the section. */
void wl_spec_unknown_hint(const key_spec *table, const char *name, const char *where, char *buf,
                          size_t size);
/* What a value of this key must look like, for "expected ..." messages. */
void wl_spec_expected(const key_spec *k, char *buf, size_t size);
/* The defaults that do not depend on other keys. */
void wl_set_defaults(wl_workload *w);

/* -------------------------------------------------------------- context */

typedef struct load_ctx {
    const char *path;
    np_error *err;
    bool has_layers;                  /* model.layers is present */
    char (*overridden)[KEY_CAPACITY]; /* canonical keys set by overrides */
    int num_overridden;
} load_ctx;

/* An error on key: the source is the file, or the command line when the
 * value came from an override (workload.c). */
int wl_fail(const load_ctx *c, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int wl_fail_cmdline(const load_ctx *c, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int wl_fail_memory(const load_ctx *c, const char *key);

/* The first JSON number in text[0, len) (strings skipped) that is not zero
 * but reads as 0 (1e-400: below the smallest double; jansson gives 0.0
 * without an error): its line (1-based) and its text in token[token_size];
 * 0 when there is none. */
int wl_json_underflow(const char *text, size_t len, char *token, size_t token_size);

/* ---------------------------------------------------------------- passes */

/* Pass 2 (workload_override.c): writes the n "key=value" overrides into the
 * tree and records their canonical keys in c. */
int wl_apply_overrides(load_ctx *c, json_t *root, const char *const *overrides, int n);
/* Pass 3 (workload_read.c): reads every key of obj against table into
 * record; keys are "prefix.name". */
int wl_read_object(load_ctx *c, const json_t *obj, const key_spec *table, void *record,
                   const char *prefix);
/* Pass 4 (workload_checks.c): defaults that depend on other keys, then the
 * impossible combinations. */
int wl_fill_derived_defaults(const load_ctx *c, wl_workload *w);
int wl_check_combinations(const load_ctx *c, const wl_workload *w);

/* MoE (workload_moe.c): reads model.moe_layer_freq into its field; fills
 * the MoE defaults that depend on other keys and expands the layer map;
 * Megatron-LM's MoE argument checks. */
int wl_read_moe_layer_freq(const load_ctx *c, const json_t *v, wl_moe_layer_freq *field,
                           const char *key);
int wl_moe_fill_defaults(const load_ctx *c, wl_workload *w);
int wl_moe_check(const load_ctx *c, const wl_workload *w);
/* Whether the file at path loads without overrides: then an error with
 * overrides came from them, and its source is the command line (workload.c,
 * wl_check_cluster).  A file that fails on its own keeps the blame, even on
 * another key (the --set may have mended an earlier error of the file). */
bool wl_file_passes(const char *path);

/* The multi-latent attention keys: all four dimensions with
 * multi_latent_attention, none without (workload_moe.c). */
int wl_mla_check(const load_ctx *c, const wl_workload *w);

#endif
