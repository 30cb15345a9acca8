/* testutil.c -- see testutil.h. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine.h"
#include "memory.h"
#include "planner.h"

const char *test_path(const char *relative)
{
    static char bufs[8][1024];
    static int next;
    if (relative[0] == '/') /* already absolute: a file a test wrote */
        return relative;
    char *b = bufs[next++ % 8];
    snprintf(b, sizeof bufs[0], "%s/%s", NPUSIM_SOURCE_DIR, relative);
    return b;
}

double test_rel_diff(double a, double b)
{
    double scale = fmax(fmax(fabs(a), fabs(b)), 1e-300);
    return fabs(a - b) / scale;
}

void test_add_suite(const char *name, const test_case *cases, int count)
{
    CU_pSuite suite = CU_add_suite(name, NULL, NULL);
    for (int i = 0; i < count; i++)
        CU_add_test(suite, cases[i].name, cases[i].fn);
}

int test_in_child(void (*fn)(void *ctx, int fd), void *ctx, void *result, size_t size)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(fds[0]);
        fn(ctx, fds[1]);
        close(fds[1]);
        _exit(0);
    }
    close(fds[1]);
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fds[0], (char *)result + got, size - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return got == size && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

void test_simgrid_init(void)
{
    static char arg0[] = "npusim_tests";
    static char *argv[] = {arg0, NULL};
    int argc = 1;
    np_error err;
    if (engine_simgrid_init(&argc, argv, &err) != 0)
        _exit(3); /* the child's failure shows in test_in_child's result */
}

int test_write_all(int fd, const void *data, size_t size)
{
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, (const char *)data + done, size - done);
        if (n <= 0)
            return -1;
        done += (size_t)n;
    }
    return 0;
}

void test_uniform_model(cm_model *cm, int n)
{
    memset(cm, 0, sizeof *cm);
    cm->num_layers = n;
    cm->layers = calloc((size_t)n, sizeof *cm->layers);
    cm->micro_batch_size = 1;
    cm->tensor_parallel = 1;
    cm->data_parallel = 1;
    cm->hbm_bytes = 1e12;
    cm->hbm_bandwidth_Bps = 1e30;
    for (int l = 0; l < n; l++) {
        cm_layer *ly = &cm->layers[l];
        ly->kind = CM_CUSTOM;
        ly->forward_s = 1;
        ly->backward_s = 2;
        for (int r = 0; r < RECOMPUTE_COUNT; r++)
            ly->activation_bytes[r] = 10;
        ly->state_bytes = 100;
        ly->output_bytes = 1;
    }
}

void test_uniform_plan(plan *pl, int p, int m, int layers_per_stage, schedule_kind k)
{
    test_chunked_plan(pl, p, 1, m, layers_per_stage, k);
}

void test_chunked_plan(plan *pl, int p, int v, int m, int layers_per_chunk, schedule_kind k)
{
    plan_init(pl, p, v, p * v * layers_per_chunk);
    for (int c = 0; c <= p * v; c++)
        pl->chunk_start[c] = c * layers_per_chunk;
    pl->schedule = k;
    pl->micro_batch_size = 1;
    pl->num_micro_batches = m;
    pl->tensor_parallel = 1;
    pl->data_parallel = 1;
}

void test_build_schedule(test_built_schedule *b, int p, int m, int v, int layers_per_chunk,
                         double weight_grad_s, schedule_kind k)
{
    memset(b, 0, sizeof *b);
    test_uniform_model(&b->cm, p * v * layers_per_chunk);
    for (int l = 0; l < b->cm.num_layers; l++)
        b->cm.layers[l].weight_grad_s = weight_grad_s;
    test_chunked_plan(&b->pl, p, v, m, layers_per_chunk, k);
    b->rc = sched_build(&b->pl, &b->cm, &b->sc, &b->err);
    if (b->rc)
        fprintf(stderr, "\n  %s p=%d m=%d v=%d: %s\n", wl_schedule_name(k), p, m, v, b->err.text);
}

void test_built_schedule_free(test_built_schedule *b)
{
    sched_free(&b->sc);
    plan_free(&b->pl);
    cm_free(&b->cm);
}

int test_count_ops(const sched_stage *st, op_kind k)
{
    int n = 0;
    for (int i = 0; i < st->num_ops; i++)
        n += st->ops[i].kind == k;
    return n;
}

/* xorshift64* (Vigna 2016): uniform in [lo, hi) from 53 bits; a constant
 * range draws nothing. */
static double random_draw(uint64_t *state, test_range r)
{
    if (r.lo == r.hi)
        return r.lo;
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    uint64_t x = *state * 2685821657736338717ULL;
    return r.lo + (r.hi - r.lo) * (double)(x >> 11) / 9007199254740992.0;
}

void test_random_model(cm_model *cm, int num_layers, uint64_t seed, const test_random_spec *spec)
{
    uint64_t st = seed * 0x9E3779B97F4A7C15ULL + spec->stream;
    memset(cm, 0, sizeof *cm);
    cm->num_layers = num_layers;
    cm->layers = calloc((size_t)num_layers, sizeof *cm->layers);
    cm->micro_batch_size = 1;
    cm->tensor_parallel = cm->data_parallel = 1;
    cm->workspace_bytes = spec->workspace_bytes;
    cm_unit table[CM_MAX_UNITS];
    double unit_input_bytes = 5;
    for (int u = 0; u < spec->units; u++) {
        table[u].forward_s = random_draw(&st, (test_range){0.05, 1.0});
        table[u].activation_bytes = random_draw(&st, (test_range){2, 30});
        unit_input_bytes += table[u].activation_bytes;
    }
    double state_total = 0, activation_total = 0;
    for (int l = 0; l < num_layers; l++) {
        cm_layer *ly = &cm->layers[l];
        bool edge = l == 0 || (spec->lm_head && l == num_layers - 1);
        ly->kind = l == 0 ? CM_EMBEDDING : edge ? CM_LM_HEAD : CM_DECODER;
        ly->forward_s = random_draw(&st, (test_range){0.5, 2.0});
        ly->backward_s = random_draw(&st, (test_range){0.5, 3.0});
        ly->weight_grad_s = random_draw(&st, (test_range){0.0, 1.0});
        double none = edge              ? random_draw(&st, spec->edge_activation_bytes)
                      : spec->units > 0 ? unit_input_bytes
                                        : random_draw(&st, spec->decoder_activation_bytes);
        ly->activation_bytes[RECOMPUTE_NONE] = none;
        ly->activation_bytes[RECOMPUTE_SELECTIVE] = edge ? none : spec->selective_kept * none;
        ly->activation_bytes[RECOMPUTE_FULL] = edge ? none : spec->full_kept * none;
        ly->recompute_s[RECOMPUTE_SELECTIVE] = spec->selective_cost * ly->forward_s;
        ly->recompute_s[RECOMPUTE_FULL] = spec->full_cost * ly->forward_s;
        if (!edge && spec->units > 0) {
            ly->num_units = spec->units;
            memcpy(ly->units, table, (size_t)spec->units * sizeof table[0]);
        }
        ly->state_bytes = random_draw(&st, spec->state_bytes);
        ly->grad_bytes = random_draw(&st, spec->grad_bytes);
        ly->output_bytes = random_draw(&st, spec->output_bytes);
        state_total += ly->state_bytes;
        activation_total += none;
    }
    cm->hbm_bytes = cm->workspace_bytes + state_total / 2 +
                    random_draw(&st, spec->memory_slack) * activation_total;
}

void test_pipeline_workload(wl_workload *w, int p, int m, schedule_kind sched)
{
    memset(w, 0, sizeof *w);
    strcpy(w->path, "test.json");
    w->parallel.pipeline_model_parallel_size = p;
    w->parallel.tensor_model_parallel_size = 1;
    w->parallel.data_parallel_size = 1;
    w->parallel.virtual_pipeline_model_parallel_size = 1;
    w->training.micro_batch_size = 1;
    w->training.global_batch_size = m;
    w->schedule = sched;
}

cl_cluster test_scaleout_cluster(double bandwidth_Bps, double latency_s)
{
    cl_cluster c;
    memset(&c, 0, sizeof c);
    c.npus_per_node = 1;
    c.scaleout_bandwidth_Bps = bandwidth_Bps;
    c.scaleout_latency_s = latency_s;
    return c;
}

cl_cluster test_two_level_cluster(int num_npus, int npus_per_node, double out_Bps, double out_s,
                                  double up_Bps, double up_s)
{
    cl_cluster c = test_scaleout_cluster(out_Bps, out_s);
    c.num_npus = num_npus;
    c.npus_per_node = npus_per_node;
    c.scaleup_bandwidth_Bps = up_Bps;
    c.scaleup_latency_s = up_s;
    return c;
}

double test_largest_stage_bytes(const cm_model *cm, const plan *pl)
{
    double most = 0;
    for (int s = 0; s < pl->num_stages; s++) {
        mem_stage st;
        mem_stage_bytes(cm, pl, s, &st);
        most = fmax(most, st.total_bytes);
    }
    return most;
}

int test_run_planner(const char *name, const cm_model *cm, const cl_cluster *c,
                     const wl_workload *w, plan *out, np_error *err)
{
    planner_options o;
    planner_init_options(&o, w);
    np_error ignored;
    return planner_run(planner_find(name), cm, c, w, &o, out, err ? err : &ignored);
}

int test_run_plan(const char *platform, const cm_model *cm, const plan *pl, const engine_options *o,
                  schedule *sc, engine_result *res, np_error *err)
{
    wl_workload w;
    memset(&w, 0, sizeof w);
    w.training.micro_batch_size = pl->micro_batch_size;
    w.training.global_batch_size =
        (long)pl->num_micro_batches * pl->micro_batch_size * pl->data_parallel;
    engine_options defaults;
    engine_init_options(&defaults);
    sim_platform pf;
    test_simgrid_init();
    int rc = platform_load(test_path(platform), &pf, err);
    if (!rc)
        rc = sched_build(pl, cm, sc, err);
    if (!rc)
        rc = engine_run(&pf, &w, cm, pl, sc, o ? o : &defaults, res, err);
    return rc;
}

static bool is_pass(int kind)
{
    return kind == OP_FORWARD || kind == OP_BACKWARD || kind == OP_WEIGHT_GRAD ||
           kind == OP_RECOMPUTE;
}

/* First pass start to last pass end of one worker (0 without spans). */
static double worker_span_s(const engine_result *r, int worker)
{
    double first = -1, last = 0;
    for (int i = 0; r->num_spans && i < r->num_spans[worker]; i++) {
        const engine_span *sp = &r->spans[worker][i];
        if (!is_pass(sp->kind))
            continue;
        if (first < 0)
            first = sp->start_s;
        last = sp->end_s;
    }
    return first < 0 ? 0 : last - first;
}

/* The summed length of a worker's F/B/W/recompute spans. */
static double worker_pass_time_s(const engine_result *r, int worker)
{
    double sum = 0;
    for (int i = 0; r->num_spans && i < r->num_spans[worker]; i++)
        if (is_pass(r->spans[worker][i].kind))
            sum += r->spans[worker][i].end_s - r->spans[worker][i].start_s;
    return sum;
}

void test_sim_summarize(const engine_result *res, const plan *pl, test_sim_result *out)
{
    out->iteration_s = res->iteration_s;
    out->pipeline_s = res->pipeline_s;
    out->activities = res->activities;
    out->tp_fold = res->tp_fold;
    out->bubble_ratio = res->bubble_ratio;
    for (int s = 0; s < pl->num_stages && s < TEST_MAX_STAGES; s++) {
        out->stage_bubble_ratio[s] = res->stages[s].bubble_ratio;
        out->stage_busy_s[s] = res->stages[s].busy_s;
        out->stage_peak_bytes[s] = res->stages[s].peak_bytes;
        out->stage_dp_comm_s[s] = res->stages[s].dp_comm_s;
        out->stage_span_s[s] = worker_span_s(res, s * pl->data_parallel);
        out->stage_pass_time_s[s] = worker_pass_time_s(res, s * pl->data_parallel);
    }
}

typedef struct sim_job {
    const char *platform;
    const cm_model *cm;
    const plan *pl;
    const engine_options *o;
} sim_job;

static void sim_child(void *ctx, int fd)
{
    const sim_job *job = ctx;
    test_sim_result out;
    memset(&out, 0, sizeof out);
    schedule sc = {0};
    engine_result res = {0};
    np_error err;
    np_error_clear(&err);
    out.rc = test_run_plan(job->platform, job->cm, job->pl, job->o, &sc, &res, &err);
    if (!out.rc)
        test_sim_summarize(&res, job->pl, &out);
    else
        np_error_format(&err, out.error, sizeof out.error);
    test_write_all(fd, &out, sizeof out);
}

int test_simulate_plan_quiet(const char *platform, const cm_model *cm, const plan *pl,
                             const engine_options *o, test_sim_result *out)
{
    sim_job job = {platform, cm, pl, o};
    return test_in_child(sim_child, &job, out, sizeof *out) != 0 ? -1 : 0;
}

int test_simulate_plan(const char *platform, const cm_model *cm, const plan *pl,
                       const engine_options *o, test_sim_result *out)
{
    if (test_simulate_plan_quiet(platform, cm, pl, o, out) != 0)
        return -1;
    if (out->rc)
        fprintf(stderr, "\n  %s %s p=%d m=%d: %s\n", platform, wl_schedule_name(pl->schedule),
                pl->num_stages, pl->num_micro_batches, out->error);
    return 0;
}

int test_job_build(test_job *j, const cl_cluster *cluster, const char *workload,
                   const char *const *overrides, int num_overrides, const char *planner,
                   np_error *err)
{
    memset(j, 0, sizeof *j);
    int rc = wl_load(test_path(workload), overrides, num_overrides, &j->w, err);
    if (!rc)
        rc = cm_build(&j->w, cluster, 0, &j->cm, err);
    if (!rc)
        rc = test_run_planner(planner, &j->cm, cluster, &j->w, &j->pl, err);
    if (!rc)
        rc = sched_build(&j->pl, &j->cm, &j->sc, err);
    return rc;
}

int test_job_reschedule(test_job *j, const cm_model *cm, np_error *err)
{
    sched_free(&j->sc);
    return sched_build(&j->pl, cm, &j->sc, err);
}

void test_job_free(test_job *j)
{
    sched_free(&j->sc);
    plan_free(&j->pl);
    cm_free(&j->cm);
    wl_free(&j->w);
}

/* ------------------------------------------------------ workload loading */

int test_wl_load(const char *relative, wl_workload *w, np_error *err)
{
    return wl_load(test_path(relative), NULL, 0, w, err);
}

int test_wl_load_with(const char *relative, const char *const *overrides, int n, wl_workload *w,
                      np_error *err)
{
    return wl_load(test_path(relative), overrides, n, w, err);
}

int test_wl_load_text(const char *text, const char *const *overrides, int n, wl_workload *w,
                      np_error *err)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/npusim_wl_XXXXXX.json");
    int fd = mkstemps(path, 5);
    CU_ASSERT_FATAL(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    int rc = wl_load(path, overrides, n, w, err);
    unlink(path);
    return rc;
}

void test_expect_bad_input(const char *file, const char *key, const char *text)
{
    char relative[256];
    snprintf(relative, sizeof relative, "tests/bad_input/%s", file);
    wl_workload w;
    np_error err;
    int rc = test_wl_load(relative, &w, &err);
    CU_ASSERT_EQUAL(rc, NP_EXIT_INPUT);
    CU_ASSERT_EQUAL(err.code, NP_EXIT_INPUT);
    CU_ASSERT_STRING_EQUAL(err.key, key);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, text));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.source, file));
    if (strcmp(err.key, key) != 0 || !strstr(err.text, text))
        fprintf(stderr, "\n  %s: key \"%s\", text \"%s\"\n", file, err.key, err.text);
    CU_ASSERT_PTR_NULL(w.model.layer_specs); /* nothing left to free */
    wl_free(&w);
}

void test_expect_override_error(const char *file, const char *override, const char *key,
                                const char *text)
{
    const char *const set[] = {override};
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL(test_wl_load_with(file, set, 1, &w, &err), NP_EXIT_INPUT);
    CU_ASSERT_STRING_EQUAL(err.source, "<command line>");
    CU_ASSERT_STRING_EQUAL(err.key, key);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, text));
    if (strcmp(err.key, key) != 0 || !strstr(err.text, text))
        fprintf(stderr, "\n  %s: key \"%s\", text \"%s\"\n", override, err.key, err.text);
    wl_free(&w);
}

const cm_unit *test_unit(const cm_layer *ly, const char *name)
{
    for (int u = 0; u < ly->num_units; u++)
        if (!strcmp(ly->units[u].name, name))
            return &ly->units[u];
    CU_FAIL("no such unit");
    return &ly->units[0];
}

int test_write_variant(const char *relative, const char *from, const char *to, char *buf,
                       size_t size)
{
    FILE *f = fopen(test_path(relative), "r");
    if (!f)
        return -1;
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    char *at = strstr(text, from);
    if (!at)
        return -1;
    snprintf(buf, size, "/tmp/npusim_variant_XXXXXX");
    int fd = mkstemp(buf);
    if (fd < 0)
        return -1;
    FILE *out = fdopen(fd, "w");
    if (!out) {
        close(fd);
        return -1;
    }
    fprintf(out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    fclose(out);
    return 0;
}
