/*
 * sweep_row.c -- the row simsweep appends for a point whose simrun failed
 * (docs/csv-format.md, "Failed points").
 *
 * It has simrun's header (asked with simrun --csv-header, so the two never
 * disagree) and says what the point was as a successful row would: the
 * identity columns are read from the point's simrun arguments the way simrun
 * reads them (a later option wins), the options not given take the values
 * simrun writes for their defaults, status is "failed", exit_code and error
 * (simrun's first line on stderr) say why, and every result column is empty.
 */
#define _GNU_SOURCE /* asprintf */
#include <stdlib.h>
#include <string.h>

#include "np_file.h"
#include "np_sha256.h"
#include "sweep.h"

/* What simrun writes for an option that is not given (sim/engine's
 * engine_init_options(); a unit test compares the two). */
static const struct {
    const char *column, *value;
} defaults[] = {
    {"dp_algorithm", "ring-flow"},
    {"dp_inter_algorithm", "ring-flow"},
    {"ep_alltoall_algorithm", "concurrent"},
    {"dp_radix", "4"},
    {"fold_dp", "0"},
    {"dp_overlap", "0"},
    {"dp_bucket_bytes", "0"},
    {"shifted_recompute", "0"},
    {"placement", "tp-cp-dp-pp"},
    {"moe_trace_step", "0"},
    {"moe_policy", "none"},
    {"moe_sample_mb", "0"},
    {"ignore_memory", "0"},
};
#define NUM_DEFAULTS (int)(sizeof defaults / sizeof defaults[0])

/* simrun options whose value is a column of the same meaning. */
static const struct {
    const char *option, *column;
} option_columns[] = {
    {"--planner", "planner"},
    {"--schedule", "schedule"},
    {"--dp-algorithm", "dp_algorithm"},
    {"--dp-inter-algorithm", "dp_inter_algorithm"},
    {"--ep-alltoall-algorithm", "ep_alltoall_algorithm"},
    {"--dp-radix", "dp_radix"},
    {"--fold-dp", "fold_dp"},
    {"--dp-bucket-bytes", "dp_bucket_bytes"},
    {"--plan", "plan_file"},
    {"--dp-overlap", "dp_overlap"},
    {"--shifted-recompute", "shifted_recompute"},
    {"--placement", "placement"},
    {"--moe-trace", "moe_trace"},
    {"--moe-trace-step", "moe_trace_step"},
    {"--moe-policy", "moe_policy"},
    {"--moe-sample-mb", "moe_sample_mb"},
    {"--ignore-memory", "ignore_memory"},
};
#define NUM_OPTION_COLUMNS (int)(sizeof option_columns / sizeof option_columns[0])

const char *sweep_column_default(const char *name)
{
    for (int i = 0; i < NUM_DEFAULTS; i++)
        if (strcmp(defaults[i].column, name) == 0)
            return defaults[i].value;
    return NULL;
}

/* A growing "a;b;c" list. */
static int join(char **list, const char *item)
{
    char *s;
    if (asprintf(&s, "%s%s%s", *list ? *list : "", *list ? ";" : "", item) < 0)
        return -1;
    free(*list);
    *list = s;
    return 0;
}

/* The identity of a point as its columns, read from its arguments. */
typedef struct identity {
    const char *value[NUM_OPTION_COLUMNS]; /* by option_columns, NULL: not given */
    char *overrides, *cfg;
    char sha[NP_SHA256_HEX_SIZE], trace_sha[NP_SHA256_HEX_SIZE];
    char placement[64]; /* --placement as simrun writes it */
} identity;

/* --placement's order as simrun's column has it (placement_name(): the four
 * dimensions, without the optional "ep", which only says where the expert
 * groups lie): "tp-cp-ep-dp-pp" is written "tp-cp-dp-pp".  Any other text is
 * kept as given. */
static const char *placement_column(const char *order, char *buf, size_t size)
{
    size_t n = 0;
    for (const char *w = order;; w++) {
        size_t len = strcspn(w, "-");
        if (len == 0 || n + len + 2 > size) /* "tp--cp", "tp-", "": simrun refuses it */
            return order;
        if (!(len == 2 && strncmp(w, "ep", 2) == 0))
            n += (size_t)snprintf(buf + n, size - n, "%s%.*s", n ? "-" : "", (int)len, w);
        w += len;
        if (!*w)
            break;
    }
    return n ? buf : order;
}

static int read_identity(const sweep_point *p, identity *id)
{
    memset(id, 0, sizeof *id);
    for (int i = 0; i < p->num_args; i++) {
        const char *a = p->args[i];
        sweep_option_kind kind = sweep_option_kind_of(a);
        const char *value = kind == SWEEP_OPT_VALUE && i + 1 < p->num_args ? p->args[++i] : NULL;
        if (strcmp(a, "--set") == 0 && value) {
            if (join(&id->overrides, value))
                return -1;
        } else if (strncmp(a, "--cfg=", 6) == 0) {
            if (join(&id->cfg, a + 6))
                return -1;
        }
        for (int k = 0; k < NUM_OPTION_COLUMNS; k++)
            if (strcmp(a, option_columns[k].option) == 0)
                id->value[k] = kind == SWEEP_OPT_FLAG ? "1" : value;
    }
    for (int k = 0; k < NUM_OPTION_COLUMNS; k++) { /* an unreadable file: no hash */
        if (id->value[k] && strcmp(option_columns[k].column, "placement") == 0)
            id->value[k] = placement_column(id->value[k], id->placement, sizeof id->placement);
        if (id->value[k] && strcmp(option_columns[k].column, "plan_file") == 0)
            (void)np_sha256_file(id->value[k], id->sha);
        if (id->value[k] && strcmp(option_columns[k].column, "moe_trace") == 0)
            (void)np_sha256_file(id->value[k], id->trace_sha);
    }
    return 0;
}

static const char *column_value(const char *name, const sweep_point *p, const identity *id,
                                const char *version, const char *exit_code, const char *error)
{
    static const struct {
        const char *column;
        int which;
    } fixed[] = {{"platform", 0},
                 {"workload", 1},
                 {"run_id", 2},
                 {"overrides", 3},
                 {"cfg", 4},
                 {"plan_sha256", 5},
                 {"simulator_version", 6},
                 {"status", 7},
                 {"exit_code", 8},
                 {"error", 9},
                 {"moe_trace_sha256", 10}};
    for (int i = 0; i < (int)(sizeof fixed / sizeof fixed[0]); i++) {
        if (strcmp(name, fixed[i].column) != 0)
            continue;
        switch (fixed[i].which) {
        case 0:
            return p->platform;
        case 1:
            return p->workload;
        case 2:
            return p->run_id;
        case 3:
            return id->overrides ? id->overrides : "";
        case 4:
            return id->cfg ? id->cfg : "";
        case 5:
            return id->sha;
        case 6:
            return version;
        case 7:
            return "failed";
        case 8:
            return exit_code;
        case 9:
            return error;
        default:
            return id->trace_sha;
        }
    }
    for (int k = 0; k < NUM_OPTION_COLUMNS; k++)
        if (strcmp(name, option_columns[k].column) == 0)
            return id->value[k] ? id->value[k] : sweep_column_default(name);
    return NULL; /* a result column: empty */
}

char *sweep_failure_row(const char *header, const sweep_point *p, const char *version,
                        int exit_code, const char *error, size_t *len)
{
    identity id;
    char *names = strdup(header), *buf = NULL;
    FILE *f = names && !read_identity(p, &id) ? open_memstream(&buf, len) : NULL;
    if (f) {
        char code[16];
        snprintf(code, sizeof code, "%d", exit_code);
        int column = 0;
        for (char *save = NULL, *name = strtok_r(names, ",", &save); name;
             name = strtok_r(NULL, ",", &save)) {
            if (column++)
                fputc(',', f);
            np_csv_field(f, column_value(name, p, &id, version, code, error));
        }
        fputc('\n', f);
        int bad = ferror(f);
        if (fclose(f) != 0 || bad) {
            free(buf);
            buf = NULL;
        }
    }
    if (names && f) {
        free(id.overrides);
        free(id.cfg);
    }
    free(names);
    return buf;
}
