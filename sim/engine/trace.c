/*
 * trace.c -- Chrome trace writer (see trace.h).
 *
 * Format: Google's "Trace Event Format" (the JSON object form, with a
 * "traceEvents" array), as documented for chrome://tracing and read by
 * Perfetto's JSON importer.  Events used:
 *   "M" metadata: process_name / process_sort_index / thread_name;
 *   "X" complete events: ts and dur in microseconds;
 *   "C" counters: one series per process, args {"GB": value}.
 *
 * Design choices:
 *   - Streaming fprintf into a 1 MiB stdio buffer, no JSON DOM: a full 16K-NPU
 *     trace is a few hundred thousand events and is written in well under a
 *     second.  The stream is a temporary file that np_file_commit() renames
 *     onto the target only once it is complete (np_file.h), so a failed
 *     write leaves the target as it was and never removes it.  Every string (op names, worker
 * names, planner name) goes through trace_string(), which escapes quotes, backslashes and control
 *     characters as JSON requires.
 *   - Times are printed from integer nanoseconds ("%lld.%03lld" µs), so that
 *     ts + dur of one event is exactly the rounded end and events that touch
 *     in the simulation never overlap in the file by a rounding error.
 *   - One process per worker (pid = s·dp + d + 1) rather than one thread per
 *     worker: counters are process-scoped in both viewers, so each worker's
 *     memory curve sits right under its op track.
 *   - The memory counter is rebuilt from the schedule: engine_span keeps the
 *     memory after an op, but the tracker (engine.c, mem_acquire) allocates
 *     positive deltas and transients when the op starts and frees them when
 *     it ends.  So each op contributes two samples: at its start,
 *     before + max(delta, 0) + transient (added in the tracker's order, so the
 *     maximum equals its peak bit for bit), and at its end, the span's
 *     memory_bytes.  Unchanged values are not repeated.
 *   - A worker whose spans do not replay its schedule op for op (a replica
 *     that --fold-dp left unsimulated records only its optimizer step, or
 *     nothing) is written with the spans it has and no memory counter, since
 *     its memory cannot be rebuilt; a worker with no span is left out.
 *     otherData counts both ("workers_written", "workers_without_memory"),
 *     so the omission is visible in the file.
 */
#include "trace.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "np_file.h"

#define TRACE_BUFFER_BYTES (1 << 20)

void trace_init_options(trace_options *o)
{
    memset(o, 0, sizeof *o);
    o->max_replicas = 1;
}

/* A JSON string literal: escapes '"', '\\' and bytes below 0x20 (RFC 8259,
 * section 7); other bytes, UTF-8 included, pass through. */
static void trace_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        switch (*c) {
        case '"':
            fputs("\\\"", f);
            break;
        case '\\':
            fputs("\\\\", f);
            break;
        case '\n':
            fputs("\\n", f);
            break;
        case '\r':
            fputs("\\r", f);
            break;
        case '\t':
            fputs("\\t", f);
            break;
        default:
            if (*c < 0x20)
                fprintf(f, "\\u%04x", *c);
            else
                fputc(*c, f);
        }
    }
    fputc('"', f);
}

/* Seconds as microseconds with three decimals, from integer nanoseconds. */
static long long trace_ns(double t_s) { return t_s > 0 ? llround(t_s * 1e9) : 0; }

static void trace_us(FILE *f, long long ns) { fprintf(f, "%lld.%03lld", ns / 1000, ns % 1000); }

static const char *trace_category(op_kind k)
{
    switch (k) {
    case OP_FORWARD:
    case OP_BACKWARD:
    case OP_WEIGHT_GRAD:
    case OP_RECOMPUTE:
        return "compute";
    case OP_SEND_FORWARD:
    case OP_RECV_FORWARD:
    case OP_SEND_BACKWARD:
    case OP_RECV_BACKWARD:
        return "p2p";
    case OP_DP_ALLREDUCE:
    case OP_ALLTOALL:
    case OP_PARAM_GATHER:
    case OP_GRAD_REDUCE_SCATTER:
        return "collective";
    case OP_OPTIMIZER:
    case OP_KIND_COUNT:
        break;
    }
    return "optimizer";
}

/* "F mb3", "B mb3 c1" (chunk shown only with virtual stages), "optimizer". */
static void trace_span_name(char *buf, size_t size, const engine_span *sp, int num_chunks)
{
    const char *op = sched_op_name((op_kind)sp->kind);
    if (sp->micro_batch < 0)
        snprintf(buf, size, "%s", op);
    else if (num_chunks > 1)
        snprintf(buf, size, "%s mb%d c%d", op, (int)sp->micro_batch, (int)sp->chunk);
    else
        snprintf(buf, size, "%s mb%d", op, (int)sp->micro_batch);
}

typedef struct trace_writer {
    FILE *f;
    int first; /* no event written yet (no comma needed) */
    int workers, workers_without_memory;
} trace_writer;

static void trace_event_open(trace_writer *t)
{
    fputs(t->first ? "\n" : ",\n", t->f);
    t->first = 0;
}

static void trace_metadata(trace_writer *t, int pid, const char *name)
{
    trace_event_open(t);
    fprintf(
        t->f,
        "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":", pid);
    trace_string(t->f, name);
    fputs("}}", t->f);
    trace_event_open(t);
    fprintf(t->f,
            "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"tid\":0,"
            "\"args\":{\"sort_index\":%d}}",
            pid, pid);
    trace_event_open(t);
    fprintf(t->f,
            "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":1,\"args\":{\"name\":", pid);
    trace_string(t->f, name);
    fputs("}}", t->f);
}

static void trace_memory(trace_writer *t, int pid, long long ns, double bytes, double *last)
{
    if (bytes == *last)
        return;
    *last = bytes;
    trace_event_open(t);
    fprintf(t->f, "{\"ph\":\"C\",\"name\":\"device memory\",\"pid\":%d,\"tid\":1,\"ts\":", pid);
    trace_us(t->f, ns);
    fprintf(t->f, ",\"args\":{\"GB\":%.15g}}", bytes / 1e9);
}

static void trace_span(trace_writer *t, int pid, const engine_span *sp, int num_chunks)
{
    char name[96];
    trace_span_name(name, sizeof name, sp, num_chunks);
    long long start = trace_ns(sp->start_s), end = trace_ns(sp->end_s);
    if (end < start)
        end = start;
    trace_event_open(t);
    fputs("{\"ph\":\"X\",\"name\":", t->f);
    trace_string(t->f, name);
    fprintf(t->f, ",\"cat\":\"%s\",\"pid\":%d,\"tid\":1,\"ts\":", trace_category((op_kind)sp->kind),
            pid);
    trace_us(t->f, start);
    fputs(",\"dur\":", t->f);
    trace_us(t->f, end - start);
    fprintf(t->f, ",\"args\":{\"micro_batch\":%d,\"chunk\":%d}}", (int)sp->micro_batch,
            (int)sp->chunk);
}

/* Whether worker (s, d)'s spans replay its schedule op for op, as the
 * memory samples need.  A replica that --fold-dp left unsimulated has few or
 * no spans. */
static int trace_replays(const engine_span *spans, int n, const sched_stage *st)
{
    if (n != st->num_ops)
        return 0;
    for (int i = 0; i < n; i++)
        if (spans[i].kind != st->ops[i].kind)
            return 0;
    return 1;
}

/* The spans, then the memory samples, of worker (s, d); a worker without
 * spans is left out.  Counts the workers written and those whose memory
 * could not be rebuilt. */
static void trace_worker(trace_writer *t, const engine_result *r, const plan *pl,
                         const sched_stage *st, int s, int d)
{
    int index = s * pl->data_parallel + d, pid = index + 1;
    const engine_span *spans = r->spans[index];
    int n = r->num_spans[index];
    if (n == 0 || !spans)
        return;
    t->workers++;
    char name[64];
    snprintf(name, sizeof name, "stage %d replica %d", s, d);
    trace_metadata(t, pid, name);
    for (int i = 0; i < n; i++)
        trace_span(t, pid, &spans[i], pl->num_chunks);
    if (!trace_replays(spans, n, st)) {
        t->workers_without_memory++;
        return;
    }
    double before = st->static_bytes + st->workspace_bytes, last = NAN;
    /* MoE hook: expert copies (engine_moe.c) held all iteration, in the first
     * span's memory but not in the stage's static bytes */
    double held = spans[0].memory_bytes - st->ops[0].mem_delta_bytes - before;
    if (held > 0.5)
        before += held;
    trace_memory(t, pid, trace_ns(spans[0].start_s), before, &last);
    for (int i = 0; i < n; i++) {
        const sched_op *op = &st->ops[i];
        double during = before; /* engine.c mem_acquire, same order of additions */
        if (op->mem_delta_bytes > 0)
            during += op->mem_delta_bytes;
        during += op->mem_transient_bytes;
        trace_memory(t, pid, trace_ns(spans[i].start_s), during, &last);
        trace_memory(t, pid, trace_ns(spans[i].end_s), spans[i].memory_bytes, &last);
        before = spans[i].memory_bytes;
    }
}

/* The per-expert load timeline of the MoE replay: in the process of replica
 * 0 of each stage, a counter "expert E load" per expert, set at each MoE
 * layer's dispatch to the assignments routed to expert E in that layer. */
static void trace_moe_loads(trace_writer *t, const engine_result *r, const plan *pl)
{
    for (int i = 0; i < r->moe_load_num_events; i++) {
        const engine_moe_event *ev = &r->moe_load_events[i];
        int index = ev->stage * pl->data_parallel;
        if (index >= r->num_workers || !r->num_spans[index])
            continue;
        for (int x = 0; x < r->moe_load_experts; x++) {
            trace_event_open(t);
            fprintf(t->f,
                    "{\"ph\":\"C\",\"name\":\"expert %d load\",\"pid\":%d,\"tid\":1,\"ts\":", x,
                    index + 1);
            trace_us(t->f, trace_ns(ev->t_s));
            fprintf(t->f, ",\"args\":{\"assignments\":%.15g}}",
                    r->moe_load_rows[(size_t)ev->layer * r->moe_load_experts + x]);
        }
    }
}

/* The timeline must be there and match the plan's shape. */
static int trace_check(const char *path, const engine_result *r, const plan *pl, const schedule *sc,
                       np_error *err)
{
    int p = pl->num_stages, dp = pl->data_parallel;
    if (!r->spans || !r->num_spans)
        return np_error_set(err, NP_EXIT_INTERNAL, path, "", 0,
                            "no timeline recorded: run the engine with "
                            "engine_options.record_spans set");
    if (r->num_workers != p * dp || sc->num_stages != p)
        return np_error_set(err, NP_EXIT_INTERNAL, path, "", 0,
                            "timeline has %d workers and %d schedule stages, expected %d x %d "
                            "(stages x replicas)",
                            r->num_workers, sc->num_stages, p, dp);
    return 0;
}

int trace_write_chrome(const char *path, const engine_result *r, const plan *pl, const schedule *sc,
                       const trace_options *o, np_error *err)
{
    int dp = pl->data_parallel;
    int replicas = o->max_replicas <= 0 || o->max_replicas > dp ? dp : o->max_replicas;
    int rc = trace_check(path, r, pl, sc, err);
    if (rc)
        return rc;
    np_file out;
    if ((rc = np_file_begin(&out, path, "--trace", err)))
        return rc;
    FILE *f = out.f;
    setvbuf(f, NULL, _IOFBF, TRACE_BUFFER_BYTES);

    trace_writer t = {.f = f, .first = 1};
    fputs("{\"traceEvents\":[", f);
    for (int s = 0; s < pl->num_stages; s++)
        for (int d = 0; d < replicas; d++)
            trace_worker(&t, r, pl, &sc->stages[s], s, d);
    trace_moe_loads(&t, r, pl); /* MoE hook: per-expert load timeline */
    fputs("\n],\n\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"npusim\",\"planner\":",
          f);
    trace_string(f, pl->planner);
    fputs(",\"schedule\":", f);
    trace_string(f, wl_schedule_name(pl->schedule));
    fprintf(f,
            ",\"iteration_s\":%.9g,\"stages\":%d,\"replicas\":%d,\"replicas_written\":%d,"
            "\"workers_written\":%d,\"workers_without_memory\":%d}}\n",
            r->iteration_s, pl->num_stages, dp, replicas, t.workers, t.workers_without_memory);

    /* Written whole or not at all: a truncated JSON file would only mislead a
     * viewer, and the target is never removed (np_file.h). */
    return np_file_commit(&out, err);
}
