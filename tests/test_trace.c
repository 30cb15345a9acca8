/*
 * test_trace.c -- the Chrome trace writer, read back with jansson.
 *
 * A small uniform 1F1B pipeline (p = 4 stages, m = 6 micro-batches, 2
 * replicas) runs on the free-communication platform in a forked child with
 * record_spans set; the child writes two traces (all replicas, and the
 * default of replica 0 only) into a temporary directory and tries a path that
 * cannot be opened.  The parent parses the files as JSON and checks them
 * against what the schedule implies: m forward and m backward spans per
 * worker, no overlapping spans on one worker, and a memory counter whose
 * maximum is the tracker's peak.  A second case recomputes every layer so
 * that the peak lies inside a backward pass (transient bytes), where the
 * memory after each op never reaches it.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "testutil.h"
#include "trace.h"

#define MAX_PIDS 64
#define BAD_PATH "/nonexistent-npusim-dir/trace.json"

typedef struct trace_case {
    int p, m, dp, layers_per_stage;
    bool full_recompute;
} trace_case;

typedef struct trace_outcome {
    int rc, bad_rc;
    char error[512], bad_error[1200];
    test_sim_result sim; /* the run's iteration and stage peaks */
} trace_outcome;

typedef struct trace_fixture {
    trace_case c;
    char dir[64];
    int ready;
    trace_outcome out;
    json_t *all, *first; /* parsed traces: every replica; replica 0 only */
    char all_path[96], first_path[96];
} trace_fixture;

/* Uniform layers (testutil: 100 bytes of state, 10 of activations) at
 * F = 1 ms, B = 2 ms; with full recompute a layer keeps 2 bytes and
 * recomputes its forward (1 ms), rematerialising 10 − 2 = 8 bytes. */
static trace_fixture fixtures[] = {
    {.c = {4, 6, 2, 2, false}},
    {.c = {4, 6, 2, 2, true}},
};

static void build_model(const trace_case *c, cm_model *cm, plan *pl)
{
    test_uniform_model(cm, c->p * c->layers_per_stage);
    test_uniform_plan(pl, c->p, c->m, c->layers_per_stage, SCHED_1F1B);
    pl->data_parallel = c->dp;
    cm->data_parallel = c->dp;
    for (int l = 0; l < cm->num_layers; l++) {
        cm->layers[l].forward_s = 1e-3;
        cm->layers[l].backward_s = 2e-3;
        if (c->full_recompute) {
            cm->layers[l].activation_bytes[RECOMPUTE_FULL] = 2;
            cm->layers[l].recompute_s[RECOMPUTE_FULL] = 1e-3;
            pl->recompute[l] = RECOMPUTE_FULL;
        }
    }
}

static void run_trace(void *ctx, int fd)
{
    trace_fixture *fx = ctx;
    trace_outcome out;
    memset(&out, 0, sizeof out);
    np_error err;
    np_error_clear(&err);
    cm_model cm;
    plan pl;
    schedule sc = {0};
    engine_result res = {0};
    build_model(&fx->c, &cm, &pl);
    engine_options o;
    engine_init_options(&o);
    o.record_spans = true;
    out.rc = test_run_plan("platforms/test_free_comm_8.xml", &cm, &pl, &o, &sc, &res, &err);
    trace_options to;
    trace_init_options(&to);
    if (!out.rc)
        out.rc = trace_write_chrome(fx->first_path, &res, &pl, &sc, &to, &err);
    to.max_replicas = 0;
    if (!out.rc)
        out.rc = trace_write_chrome(fx->all_path, &res, &pl, &sc, &to, &err);
    if (!out.rc) {
        np_error bad;
        np_error_clear(&bad);
        out.bad_rc = trace_write_chrome(BAD_PATH, &res, &pl, &sc, &to, &bad);
        np_error_format(&bad, out.bad_error, sizeof out.bad_error);
        test_sim_summarize(&res, &pl, &out.sim);
    } else {
        np_error_format(&err, out.error, sizeof out.error);
    }
    test_write_all(fd, &out, sizeof out);
}

static void fixtures_cleanup(void)
{
    for (unsigned i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++) {
        trace_fixture *fx = &fixtures[i];
        if (!fx->ready)
            continue;
        json_decref(fx->all);
        json_decref(fx->first);
        remove(fx->all_path);
        remove(fx->first_path);
        rmdir(fx->dir);
    }
}

static json_t *load_json(const char *path)
{
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (!root)
        fprintf(stderr, "\n  %s:%d: %s\n", path, jerr.line, jerr.text);
    return root;
}

/* Runs the case once (lazily) and parses its traces. */
static trace_fixture *fixture_get(int i)
{
    static int registered;
    trace_fixture *fx = &fixtures[i];
    if (fx->ready)
        return fx->ready > 0 ? fx : NULL;
    fx->ready = -1;
    if (!registered)
        registered = atexit(fixtures_cleanup) == 0;
    strcpy(fx->dir, "/tmp/npusim_trace_XXXXXX");
    if (!mkdtemp(fx->dir))
        return NULL;
    char dir[sizeof fx->dir];
    memcpy(dir, fx->dir, sizeof dir);
    snprintf(fx->all_path, sizeof fx->all_path, "%s/all.json", dir);
    snprintf(fx->first_path, sizeof fx->first_path, "%s/first.json", dir);
    if (test_in_child(run_trace, fx, &fx->out, sizeof fx->out) != 0) {
        rmdir(fx->dir);
        return NULL;
    }
    if (fx->out.rc)
        fprintf(stderr, "\n  trace case %d: %s\n", i, fx->out.error);
    fx->ready = 1;
    if (!fx->out.rc) {
        fx->all = load_json(fx->all_path);
        fx->first = load_json(fx->first_path);
    }
    return fx;
}

static json_t *trace_events(json_t *root)
{
    json_t *ev = json_object_get(root, "traceEvents");
    return json_is_array(ev) ? ev : NULL;
}

static const char *event_ph(json_t *e) { return json_string_value(json_object_get(e, "ph")); }
static const char *event_name(json_t *e) { return json_string_value(json_object_get(e, "name")); }
static int event_pid(json_t *e) { return (int)json_integer_value(json_object_get(e, "pid")); }
static double event_number(json_t *e, const char *key)
{
    return json_number_value(json_object_get(e, key));
}

static bool is_span(json_t *e)
{
    const char *ph = event_ph(e);
    return ph && strcmp(ph, "X") == 0;
}

/* ---- tests ---------------------------------------------------------------- */

static void test_trace_is_json_with_trace_events(void)
{
    trace_fixture *fx = fixture_get(0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fx);
    CU_ASSERT_EQUAL_FATAL(fx->out.rc, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fx->all);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fx->first);
    CU_ASSERT_PTR_NOT_NULL(trace_events(fx->all));
    CU_ASSERT_PTR_NOT_NULL(trace_events(fx->first));
}

static void test_every_span_has_non_negative_duration(void)
{
    trace_fixture *fx = fixture_get(0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fx);
    json_t *ev = trace_events(fx->all);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ev);
    size_t i, spans = 0;
    json_t *e;
    json_array_foreach(ev, i, e)
    {
        if (!is_span(e))
            continue;
        spans++;
        CU_ASSERT(json_is_number(json_object_get(e, "dur")));
        CU_ASSERT(event_number(e, "dur") >= 0);
        CU_ASSERT(event_number(e, "ts") >= 0);
        /* and no span ends after the iteration */
        CU_ASSERT(event_number(e, "ts") + event_number(e, "dur") <=
                  fx->out.sim.iteration_s * 1e6 + 1e-3);
    }
    CU_ASSERT(spans > 0);
}

/* 1F1B runs every micro-batch through one forward and one backward on every
 * stage (Narayanan et al. SC'21, section 2.2.1): m of each per worker. */
static void test_each_worker_has_m_forward_and_m_backward_spans(void)
{
    trace_fixture *fx = fixture_get(0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fx);
    json_t *ev = trace_events(fx->all);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ev);
    int forward[MAX_PIDS + 1] = {0}, backward[MAX_PIDS + 1] = {0};
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e)
    {
        int pid = event_pid(e);
        const char *name = event_name(e);
        if (!is_span(e) || !name || pid < 1 || pid > MAX_PIDS)
            continue;
        if (strncmp(name, "F ", 2) == 0)
            forward[pid]++;
        else if (strncmp(name, "B ", 2) == 0)
            backward[pid]++;
    }
    int workers = fx->c.p * fx->c.dp;
    for (int pid = 1; pid <= workers; pid++) {
        CU_ASSERT_EQUAL(forward[pid], fx->c.m);
        CU_ASSERT_EQUAL(backward[pid], fx->c.m);
    }
}

typedef struct interval {
    double ts, end;
} interval;

static int interval_compare(const void *a, const void *b)
{
    double x = ((const interval *)a)->ts, y = ((const interval *)b)->ts;
    return x < y ? -1 : x > y;
}

/* A worker is one actor replaying its op list in order: its spans follow
 * each other and never overlap. */
static void test_spans_of_one_worker_do_not_overlap(void)
{
    trace_fixture *fx = fixture_get(0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fx);
    json_t *ev = trace_events(fx->all);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ev);
    size_t n = json_array_size(ev);
    interval *iv = malloc(n * sizeof *iv);
    CU_ASSERT_PTR_NOT_NULL_FATAL(iv);
    int workers = fx->c.p * fx->c.dp;
    for (int pid = 1; pid <= workers; pid++) {
        size_t k = 0, i;
        json_t *e;
        json_array_foreach(ev, i, e)
        {
            if (is_span(e) && event_pid(e) == pid) {
                iv[k].ts = event_number(e, "ts");
                iv[k].end = iv[k].ts + event_number(e, "dur");
                k++;
            }
        }
        CU_ASSERT(k > 0);
        qsort(iv, k, sizeof *iv, interval_compare);
        for (size_t j = 1; j < k; j++)
            CU_ASSERT(iv[j].ts >= iv[j - 1].end - 1e-6);
    }
    free(iv);
}

/* Largest "device memory" counter value (bytes) over the workers of stage s. */
static double stage_counter_max_bytes(json_t *root, int stage, int dp)
{
    json_t *ev = trace_events(root);
    double max_gb = -1;
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e)
    {
        const char *ph = event_ph(e), *name = event_name(e);
        int pid = event_pid(e);
        if (!ph || strcmp(ph, "C") != 0 || !name || strcmp(name, "device memory") != 0)
            continue;
        if ((pid - 1) / dp != stage)
            continue;
        double gb = json_number_value(json_object_get(json_object_get(e, "args"), "GB"));
        if (gb > max_gb)
            max_gb = gb;
    }
    return max_gb * 1e9;
}

static void check_counter_max_is_peak(int fixture)
{
    trace_fixture *fx = fixture_get(fixture);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fx);
    CU_ASSERT_EQUAL_FATAL(fx->out.rc, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fx->all);
    for (int s = 0; s < fx->c.p; s++)
        ASSERT_REL(stage_counter_max_bytes(fx->all, s, fx->c.dp), fx->out.sim.stage_peak_bytes[s],
                   1e-12);
}

static void test_memory_counter_maximum_is_tracker_peak(void) { check_counter_max_is_peak(0); }

/* With full recompute the peak is reached inside a backward pass: the stage's
 * state, min(p − s, m) micro-batches of kept inputs, and the 8 bytes the
 * recompute rematerialises (held while recompute and backward run):
 * L·100 + min(p − s, m)·L·2 + 8 for L layers per stage.  The counter must see
 * it: sampling only the memory after each op would miss the 8 bytes. */
static void test_memory_counter_sees_recompute_transient(void)
{
    check_counter_max_is_peak(1);
    trace_fixture *fx = fixture_get(1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fx);
    const trace_case *c = &fx->c;
    double L = c->layers_per_stage;
    for (int s = 0; s < c->p; s++) {
        int in_flight = c->p - s < c->m ? c->p - s : c->m;
        ASSERT_REL(stage_counter_max_bytes(fx->all, s, c->dp), L * 100 + in_flight * L * 2 + 8,
                   1e-12);
    }
}

/* By default one worker per stage (replica 0) is written; max_replicas = 0
 * writes all p·dp, each named "stage S replica D". */
static void test_default_writes_replica_zero_only(void)
{
    trace_fixture *fx = fixture_get(0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fx);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fx->first);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fx->all);
    int named_first = 0, named_all = 0, replica_zero = 0;
    size_t i;
    json_t *e;
    json_array_foreach(trace_events(fx->first), i, e)
    {
        if (strcmp(event_name(e), "process_name") != 0)
            continue;
        named_first++;
        const char *name = json_string_value(json_object_get(json_object_get(e, "args"), "name"));
        int s = -1, d = -1;
        if (name && sscanf(name, "stage %d replica %d", &s, &d) == 2 && d == 0)
            replica_zero++;
    }
    json_array_foreach(trace_events(fx->all), i, e)
    {
        if (strcmp(event_name(e), "process_name") == 0)
            named_all++;
    }
    CU_ASSERT_EQUAL(named_first, fx->c.p);
    CU_ASSERT_EQUAL(replica_zero, fx->c.p);
    CU_ASSERT_EQUAL(named_all, fx->c.p * fx->c.dp);
}

static void test_unwritable_path_is_an_error_naming_it(void)
{
    trace_fixture *fx = fixture_get(0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fx);
    CU_ASSERT_EQUAL_FATAL(fx->out.rc, 0);
    CU_ASSERT_EQUAL(fx->out.bad_rc, NP_EXIT_INTERNAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(fx->out.bad_error, BAD_PATH));
}

/* No SimGrid needed: a result without spans cannot be traced. */
static void test_run_without_spans_is_an_error(void)
{
    trace_case c = {2, 2, 1, 1, false};
    cm_model cm;
    plan pl;
    schedule sc = {0};
    build_model(&c, &cm, &pl);
    np_error err;
    np_error_clear(&err);
    CU_ASSERT_EQUAL_FATAL(sched_build(&pl, &cm, &sc, &err), 0);
    engine_result r = {0};
    trace_options o;
    trace_init_options(&o);
    CU_ASSERT_EQUAL(trace_write_chrome("/tmp/npusim-never-written.json", &r, &pl, &sc, &o, &err),
                    NP_EXIT_INTERNAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "record_spans"));
    CU_ASSERT_NOT_EQUAL(access("/tmp/npusim-never-written.json", F_OK), 0);
    sched_free(&sc);
    plan_free(&pl);
    cm_free(&cm);
}

/* ---- synthetic timelines (no SimGrid) -------------------------------------- */

/* A 2-stage, 2-micro-batch schedule and a hand-made result: stage 0 has one
 * span per op (1 ms each, memory as the tracker would leave it), stage 1
 * only its last op, as a replica folded away by --fold-dp would. */
typedef struct synthetic {
    cm_model cm;
    plan pl;
    schedule sc;
    engine_result r;
    engine_span *spans[2];
    int num_spans[2];
} synthetic;

static int synthetic_build(synthetic *x)
{
    memset(x, 0, sizeof *x);
    trace_case c = {2, 2, 1, 1, false};
    build_model(&c, &x->cm, &x->pl);
    np_error err;
    if (sched_build(&x->pl, &x->cm, &x->sc, &err))
        return -1;
    const sched_stage *st = &x->sc.stages[0];
    x->spans[0] = calloc((size_t)st->num_ops, sizeof *x->spans[0]);
    x->spans[1] = calloc(1, sizeof *x->spans[1]);
    if (!x->spans[0] || !x->spans[1])
        return -1;
    double mem = st->static_bytes + st->workspace_bytes;
    for (int i = 0; i < st->num_ops; i++) {
        mem += st->ops[i].mem_delta_bytes;
        x->spans[0][i] = (engine_span){.start_s = i * 1e-3,
                                       .end_s = (i + 1) * 1e-3,
                                       .memory_bytes = mem,
                                       .micro_batch = st->ops[i].micro_batch,
                                       .kind = st->ops[i].kind,
                                       .chunk = st->ops[i].chunk};
    }
    const sched_stage *last = &x->sc.stages[1];
    const sched_op *op = &last->ops[last->num_ops - 1];
    x->spans[1][0] = (engine_span){.start_s = 0,
                                   .end_s = 1e-3,
                                   .memory_bytes = 0,
                                   .micro_batch = op->micro_batch,
                                   .kind = op->kind};
    x->num_spans[0] = st->num_ops;
    x->num_spans[1] = 1;
    x->r.num_workers = 2;
    x->r.spans = x->spans;
    x->r.num_spans = x->num_spans;
    x->r.iteration_s = st->num_ops * 1e-3;
    return 0;
}

static void synthetic_free(synthetic *x)
{
    free(x->spans[0]);
    free(x->spans[1]);
    sched_free(&x->sc);
    plan_free(&x->pl);
    cm_free(&x->cm);
}

/* Writes x to a temporary file and parses it back. */
static json_t *synthetic_trace(synthetic *x)
{
    char path[] = "/tmp/npusim_trace_synthetic_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    close(fd);
    trace_options o;
    trace_init_options(&o);
    np_error err;
    np_error_clear(&err);
    json_t *root = NULL;
    if (trace_write_chrome(path, &x->r, &x->pl, &x->sc, &o, &err) == 0)
        root = load_json(path);
    remove(path);
    return root;
}

static int count_events(json_t *root, const char *ph, int pid)
{
    int n = 0;
    size_t i;
    json_t *e;
    json_array_foreach(trace_events(root), i, e)
    {
        if (event_pid(e) == pid && strcmp(event_ph(e), ph) == 0)
            n++;
    }
    return n;
}

static void test_partial_timeline_has_spans_but_no_memory_counter(void)
{
    synthetic x;
    CU_ASSERT_EQUAL_FATAL(synthetic_build(&x), 0);
    json_t *root = synthetic_trace(&x);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    CU_ASSERT_EQUAL(count_events(root, "X", 1), x.sc.stages[0].num_ops);
    CU_ASSERT(count_events(root, "C", 1) > 0);
    CU_ASSERT_EQUAL(count_events(root, "X", 2), 1);
    CU_ASSERT_EQUAL(count_events(root, "C", 2), 0);
    json_t *other = json_object_get(root, "otherData");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(other, "workers_written")), 2);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(other, "workers_without_memory")), 1);
    json_decref(root);
    synthetic_free(&x);
}

static void test_strings_are_json_escaped(void)
{
    synthetic x;
    CU_ASSERT_EQUAL_FATAL(synthetic_build(&x), 0);
    const char *odd = "we\"ird\\name\t\x01";
    snprintf(x.pl.planner, sizeof x.pl.planner, "%s", odd);
    json_t *root = synthetic_trace(&x);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    const char *back =
        json_string_value(json_object_get(json_object_get(root, "otherData"), "planner"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    CU_ASSERT_STRING_EQUAL(back, odd);
    json_decref(root);
    synthetic_free(&x);
}

void register_trace_tests(void)
{
    TEST_SUITE(
        "trace", {"trace_is_json_with_trace_events", test_trace_is_json_with_trace_events},
        {"every_span_has_non_negative_duration", test_every_span_has_non_negative_duration},
        {"each_worker_has_m_forward_and_m_backward_spans",
         test_each_worker_has_m_forward_and_m_backward_spans},
        {"spans_of_one_worker_do_not_overlap", test_spans_of_one_worker_do_not_overlap},
        {"memory_counter_maximum_is_tracker_peak", test_memory_counter_maximum_is_tracker_peak},
        {"memory_counter_sees_recompute_transient", test_memory_counter_sees_recompute_transient},
        {"default_writes_replica_zero_only", test_default_writes_replica_zero_only},
        {"unwritable_path_is_an_error_naming_it", test_unwritable_path_is_an_error_naming_it},
        {"run_without_spans_is_an_error", test_run_without_spans_is_an_error},
        {"partial_timeline_has_spans_but_no_memory_counter",
         test_partial_timeline_has_spans_but_no_memory_counter},
        {"strings_are_json_escaped", test_strings_are_json_escaped});
}
