/*
 * moe_trace.c -- reading, writing and checking MoE token traces
 * (docs/moe-trace-format.md).
 *
 * The reader is strict, like the workload loader: an unknown or repeated
 * header key, a header value out of range, a row before the header is
 * complete, a row index out of range, a repeated row, a count that is not a
 * non-negative integer, a row that does not sum to `tokens`, a count above
 * tokens/topk (an expert sees a token once), a missing row, or a line over
 * 64 KiB is an error naming the file, the line and what was expected.
 */
#include "moe_trace.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "moe.h"
#include "np_file.h"

#define LINE_MAX_BYTES 65536
#define MAGIC "npusim-moe-trace"

void moe_trace_free(moe_trace *t)
{
    free(t->counts);
    t->counts = NULL;
}

int moe_trace_alloc(moe_trace *t, int experts, int sources, int layers, int steps, int topk,
                    long tokens)
{
    *t = (moe_trace){.experts = experts,
                     .sources = sources,
                     .layers = layers,
                     .steps = steps,
                     .topk = topk,
                     .tokens = tokens};
    if (experts < 1 || sources < 1 || layers < 1 || steps < 1)
        return -1;
    double n = (double)experts * sources * layers * steps;
    if (n > MOE_TRACE_MAX_COUNTS)
        return -1;
    t->counts = calloc((size_t)n, sizeof *t->counts);
    return t->counts ? 0 : -1;
}

/* ---- reading ------------------------------------------------------------- */

typedef struct reader {
    const char *path;
    np_error *err;
    int line;
    moe_trace *t;
    unsigned char *seen; /* one per row */
} reader;

static int bad(reader *r, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int bad(reader *r, const char *key, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return np_error_set(r->err, NP_EXIT_INPUT, r->path, key, r->line, "%s", text);
}

/* Reads a non-negative integer token at *p; -1 when there is none. */
static int read_long(const char **p, long *out)
{
    while (**p == ' ' || **p == '\t')
        (*p)++;
    if (!isdigit((unsigned char)**p))
        return -1;
    errno = 0;
    char *end;
    long v = strtol(*p, &end, 10);
    if (errno ||
        (*end && *end != ' ' && *end != '\t' && *end != '\n' && *end != '\r' && *end != '#'))
        return -1;
    *p = end;
    *out = v;
    return 0;
}

static bool at_end(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
        p++;
    return *p == '\0' || *p == '#';
}

typedef struct header_key {
    const char *name;
    long max;
} header_key;

static const header_key header_keys[] = {
    {"experts", 65536}, {"sources", 1048576}, {"layers", 10000},
    {"steps", 1000000}, {"topk", 65536},      {"tokens", 1L << 40},
};
#define NUM_HEADER_KEYS 6

static int read_header_line(reader *r, const char *p, long *values, bool *given)
{
    char name[32];
    int n = 0;
    while (isalpha((unsigned char)*p) && n < 31)
        name[n++] = *p++;
    name[n] = '\0';
    for (int k = 0; k < NUM_HEADER_KEYS; k++) {
        if (strcmp(name, header_keys[k].name) != 0)
            continue;
        long v;
        if (given[k])
            return bad(r, name, "the header key is given twice");
        if (read_long(&p, &v) || !at_end(p) || v < 1 || v > header_keys[k].max)
            return bad(r, name, "expected an integer in [1, %ld]", header_keys[k].max);
        values[k] = v;
        given[k] = true;
        return 0;
    }
    return bad(r, name,
               "unknown header key; expected a row (step layer source counts...) or "
               "one of experts, sources, layers, steps, topk, tokens");
}

static int start_rows(reader *r, const long *v, const bool *given)
{
    for (int k = 0; k < NUM_HEADER_KEYS; k++)
        if (!given[k])
            return bad(r, header_keys[k].name, "missing: the header gives it before the first row");
    if (moe_trace_alloc(r->t, (int)v[0], (int)v[1], (int)v[2], (int)v[3], (int)v[4], v[5]))
        return bad(r, "", "trace too large or out of memory: %ld counts (at most %ld)",
                   v[0] * v[1] * v[2] * v[3], (long)MOE_TRACE_MAX_COUNTS);
    if (r->t->topk > r->t->experts)
        return bad(r, "topk", "%d exceeds experts (%d)", r->t->topk, r->t->experts);
    long rows = (long)r->t->steps * r->t->layers * r->t->sources;
    r->seen = calloc((size_t)rows, 1);
    return r->seen ? 0 : bad(r, "", "out of memory");
}

static int read_row(reader *r, const char *p)
{
    moe_trace *t = r->t;
    long idx[3];
    const char *names[3] = {"step", "layer", "source"};
    long limits[3] = {t->steps, t->layers, t->sources};
    for (int i = 0; i < 3; i++) {
        if (read_long(&p, &idx[i]))
            return bad(r, "", "row: expected the %s index, a non-negative integer", names[i]);
        if (idx[i] >= limits[i])
            return np_error_set(r->err, NP_EXIT_INPUT, r->path, names[i], r->line,
                                "%ld is out of range: expected 0 to %ld", idx[i], limits[i] - 1);
    }
    long row = (idx[0] * t->layers + idx[1]) * t->sources + idx[2];
    if (r->seen[row])
        return np_error_set(r->err, NP_EXIT_INPUT, r->path, "", r->line,
                            "row step %ld layer %ld source %ld is given twice", idx[0], idx[1],
                            idx[2]);
    r->seen[row] = 1;
    long sum = 0, limit = t->tokens / t->topk;
    uint32_t *c = moe_trace_at(t, (int)idx[0], (int)idx[1], (int)idx[2], 0);
    for (int e = 0; e < t->experts; e++) {
        long v;
        if (read_long(&p, &v))
            return np_error_set(r->err, NP_EXIT_INPUT, r->path, "", r->line,
                                "expert %d: expected a non-negative integer count (%d counts "
                                "per row, one per expert)",
                                e, t->experts);
        if (v > limit)
            return np_error_set(r->err, NP_EXIT_INPUT, r->path, "", r->line,
                                "expert %d: %ld tokens, but a source sends an expert at most "
                                "tokens/topk = %ld (top-k picks distinct experts)",
                                e, v, limit);
        c[e] = (uint32_t)v;
        sum += v;
    }
    if (!at_end(p))
        return np_error_set(r->err, NP_EXIT_INPUT, r->path, "", r->line,
                            "more than %d counts: expected one per expert", t->experts);
    if (sum != t->tokens)
        return np_error_set(r->err, NP_EXIT_INPUT, r->path, "tokens", r->line,
                            "the row sums to %ld, expected tokens = %ld", sum, t->tokens);
    return 0;
}

static int check_complete(reader *r)
{
    moe_trace *t = r->t;
    long rows = (long)t->steps * t->layers * t->sources;
    for (long i = 0; i < rows; i++)
        if (!r->seen[i])
            return np_error_set(r->err, NP_EXIT_INPUT, r->path, "", 0,
                                "row step %ld layer %ld source %ld is missing (%ld rows "
                                "expected: steps x layers x sources)",
                                i / ((long)t->layers * t->sources), i / t->sources % t->layers,
                                i % t->sources, rows);
    return 0;
}

static int read_lines(reader *r, FILE *f, char *buf)
{
    long v[NUM_HEADER_KEYS] = {0};
    bool given[NUM_HEADER_KEYS] = {false};
    bool magic = false;
    while (fgets(buf, LINE_MAX_BYTES, f)) {
        r->line++;
        size_t len = strlen(buf); /* up to a NUL byte, which fgets keeps */
        if (!strchr(buf, '\n') && !feof(f))
            return len + 1 < LINE_MAX_BYTES - 1
                       ? bad(r, "", "a NUL byte at column %zu: expected text", len + 1)
                       : bad(r, "", "line longer than %d bytes", LINE_MAX_BYTES - 1);
        const char *p = buf;
        while (*p == ' ' || *p == '\t')
            p++;
        if (at_end(p))
            continue;
        if (!magic) {
            long version;
            const char *q = p + strlen(MAGIC);
            if (strncmp(p, MAGIC, strlen(MAGIC)) != 0 || read_long(&q, &version) || version != 1 ||
                !at_end(q))
                return bad(r, "",
                           "not an npusim MoE trace: expected \"" MAGIC " 1\" as the first line");
            magic = true;
            continue;
        }
        int rc;
        if (isalpha((unsigned char)*p))
            rc = r->t->counts ? bad(r, "", "header key after the rows: the header comes first")
                              : read_header_line(r, p, v, given);
        else {
            rc = r->t->counts ? 0 : start_rows(r, v, given);
            if (!rc)
                rc = read_row(r, p);
        }
        if (rc)
            return rc;
    }
    if (ferror(f))
        return bad(r, "", "read error");
    if (!r->t->counts)
        return bad(r, "", "%s", magic ? "no rows" : "empty file");
    return check_complete(r);
}

int moe_trace_read(const char *path, moe_trace *out, np_error *err)
{
    *out = (moe_trace){0};
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return np_error_set(err, NP_EXIT_INPUT, path, "", 0, "%s, expected a trace file",
                            S_ISDIR(st.st_mode) ? "a directory" : "not a regular file");
    FILE *f = fopen(path, "r");
    if (!f)
        return np_error_set(err, NP_EXIT_INPUT, path, "", 0, "cannot open: %s", strerror(errno));
    char *buf = malloc(LINE_MAX_BYTES);
    reader r = {.path = path, .err = err, .t = out};
    int rc = buf ? read_lines(&r, f, buf) : bad(&r, "", "out of memory");
    free(buf);
    free(r.seen);
    fclose(f);
    if (rc)
        moe_trace_free(out);
    else
        np_error_clear(err);
    out->path = rc ? NULL : path;
    return rc;
}

/* ---- writing ------------------------------------------------------------- */

int moe_trace_write(const char *path, const char *option, const moe_trace *t, np_error *err)
{
    np_file out;
    if (np_file_begin(&out, path, option, err))
        return err->code;
    fprintf(out.f, MAGIC " 1\n# per step, MoE layer and source rank: token-expert assignments to "
                         "each expert (docs/moe-trace-format.md)\n");
    fprintf(out.f, "experts %d\nsources %d\nlayers %d\nsteps %d\ntopk %d\ntokens %ld\n", t->experts,
            t->sources, t->layers, t->steps, t->topk, t->tokens);
    for (int s = 0; s < t->steps; s++)
        for (int l = 0; l < t->layers; l++)
            for (int r = 0; r < t->sources; r++) {
                fprintf(out.f, "%d %d %d", s, l, r);
                const uint32_t *c = moe_trace_at(t, s, l, r, 0);
                for (int e = 0; e < t->experts; e++)
                    fprintf(out.f, " %u", c[e]);
                fputc('\n', out.f);
            }
    return np_file_commit(&out, err);
}

/* ---- statistics ------------------------------------------------------------ */

void moe_trace_stats_of(const moe_trace *t, int step, int layer, moe_trace_stats *out)
{
    double first = 0.0, second = 0.0, total = 0.0;
    for (int e = 0; e < t->experts; e++) {
        double load = 0.0;
        for (int r = 0; r < t->sources; r++)
            load += *moe_trace_at(t, step, layer, r, e);
        total += load;
        if (load > first) {
            second = first;
            first = load;
        } else if (load > second) {
            second = load;
        }
    }
    out->top2_share = total > 0 ? (first + second) / total : 0.0;
    out->max_over_mean = total > 0 ? first / (total / t->experts) : 0.0;
}

/* ---- one layer's routing ------------------------------------------------------- */

int moe_route_init(moe_route *r, int sources)
{
    *r = (moe_route){.sources = sources};
    r->rows = calloc((size_t)sources, sizeof *r->rows);
    r->padding = calloc((size_t)sources, sizeof *r->padding);
    r->dropped = calloc((size_t)sources, sizeof *r->dropped);
    r->send = calloc((size_t)sources * sources, sizeof *r->send);
    if (r->rows && r->padding && r->dropped && r->send)
        return 0;
    moe_route_free(r);
    return -1;
}

void moe_route_free(moe_route *r)
{
    free(r->rows);
    free(r->padding);
    free(r->dropped);
    free(r->send);
    *r = (moe_route){0};
}

void moe_route_layer(const moe_trace *t, int step, int layer, double capacity, bool pad,
                     moe_route *r)
{
    int n = t->sources, local = t->experts / n;
    bool capped = capacity > 0;
    pad = pad && capped;
    for (int j = 0; j < n; j++)
        r->rows[j] = r->padding[j] = r->dropped[j] = 0.0;
    for (long i = 0; i < (long)n * n; i++)
        r->send[i] = 0.0;
    r->max_expert_rows = 0.0;
    double all_rows = 0.0;
    for (int e = 0; e < t->experts; e++) {
        int j = e / local;
        double kept_sum = 0.0;
        for (int i = 0; i < n; i++) {
            double c = *moe_trace_at(t, step, layer, i, e);
            double kept = capped && c > capacity ? capacity : c;
            kept_sum += kept;
            r->dropped[j] += c - kept;
            r->send[(size_t)i * n + j] += pad ? capacity : kept;
        }
        double rows = pad ? n * capacity : kept_sum;
        r->rows[j] += rows;
        r->padding[j] += rows - kept_sum;
        all_rows += rows;
        if (rows > r->max_expert_rows)
            r->max_expert_rows = rows;
    }
    r->mean_expert_rows = all_rows / t->experts;
}

/* ---- against a workload --------------------------------------------------- */

long moe_trace_tokens(const wl_workload *w, int micro_batch_size, int tensor_parallel)
{
    int t = tensor_parallel > 0 ? tensor_parallel : 1;
    int cp = w->parallel.context_parallel_size > 1 ? w->parallel.context_parallel_size : 1;
    long n = (long)micro_batch_size * w->model.seq_length / cp;
    if (w->training.sequence_parallel && t > 1)
        n /= t;
    return n * w->model.moe_router_topk;
}

long moe_trace_workload_tokens(const wl_workload *w)
{
    return moe_trace_tokens(w, w->training.micro_batch_size,
                            w->parallel.tensor_model_parallel_size);
}

int moe_trace_check_workload(const moe_trace *t, const wl_workload *w, const char *source,
                             np_error *err)
{
    const wl_model *m = &w->model;
    struct {
        const char *key;
        long trace, workload;
        const char *what;
    } rows[] = {
        {"experts", t->experts, m->num_experts, "model.num_experts"},
        {"sources", t->sources, w->parallel.expert_model_parallel_size,
         "parallel.expert_model_parallel_size"},
        {"layers", t->layers, wl_moe_num_layers(m), "the workload's MoE layers"},
        {"topk", t->topk, m->moe_router_topk, "model.moe_router_topk"},
    };
    if (m->num_experts <= 0)
        return np_error_set(err, NP_EXIT_INPUT, source, "", 0,
                            "a token trace needs an MoE workload (model.num_experts is 0)");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i].trace != rows[i].workload)
            return np_error_set(err, NP_EXIT_INPUT, source, rows[i].key, 0,
                                "%ld in the trace, but %s is %ld", rows[i].trace, rows[i].what,
                                rows[i].workload);
    return 0;
}

int moe_trace_check_plan(const moe_trace *t, const wl_workload *w, int micro_batch_size,
                         int tensor_parallel, const char *planner, const char *source,
                         np_error *err)
{
    long plan = moe_trace_tokens(w, micro_batch_size, tensor_parallel);
    if (t->tokens == plan)
        return 0;
    int cp = w->parallel.context_parallel_size > 1 ? w->parallel.context_parallel_size : 1;
    char how[160], cut[64] = "", who[80] = "the plan";
    if (planner && planner[0])
        snprintf(who, sizeof who, "planner %s's plan", planner);
    if (cp > 1)
        snprintf(cut, sizeof cut, " / cp %d", cp);
    if (w->training.sequence_parallel && tensor_parallel > 1)
        snprintf(cut + strlen(cut), sizeof cut - strlen(cut), " / tp %d with SP", tensor_parallel);
    snprintf(how, sizeof how, "%d samples x %ld tokens%s, x topk %d", micro_batch_size,
             w->model.seq_length, cut, w->model.moe_router_topk);
    return np_error_set(err, NP_EXIT_INPUT, source, "tokens", 0,
                        "%ld assignments per NPU and micro-batch in the trace, but %s "
                        "(micro_batch_size %d, tensor_parallel %d) routes %ld (%s): expected a "
                        "trace of that plan's micro-batch",
                        t->tokens, who, micro_batch_size, tensor_parallel, plan, how);
}
