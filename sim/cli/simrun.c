/*
 * simrun.c -- the npusim command line.
 *
 *   simrun [options] PLATFORM.xml WORKLOAD.json
 *
 * Loads the workload (cheap, so bad input fails before SimGrid starts), then
 * the platform, builds the cost model, runs the planner, generates the
 * schedule, replays it on SimGrid and reports.  Every user error is one line
 * on stderr naming the file and key, with an exit code from np_exit_code.
 *
 * Output files never destroy anything (np_file.h): every output path is
 * checked before the simulation starts (a missing or unwritable folder, a
 * directory, a device or a read-only file is refused, naming the option), a
 * whole file is written to a temporary file renamed into place once
 * complete, and a CSV row is appended whole under a lock.  A failed write
 * on standard output (simrun > /dev/full) is an output failure too.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collective.h"
#include "engine.h"
#include "memory.h"
#include "frontier.h"
#include "np_file.h"
#include "plan_json.h"
#include "planner.h"
#include "report.h"
#include "schedule.h"
#include "trace.h"

#define MAX_OVERRIDES 64
#define MAX_SIMGRID_ARGS 64

static const char usage_text[] =
    "usage: simrun [options] PLATFORM.xml WORKLOAD.json\n"
    "\n"
    "Simulates one training iteration of WORKLOAD on the cluster described by\n"
    "PLATFORM (a SimGrid XML platform) and prints iteration time, tokens/s, MFU,\n"
    "pipeline bubble, device memory and exposed communication.\n"
    "\n"
    "options:\n"
    "  --set KEY=VALUE    override a workload key before it is checked (repeatable);\n"
    "                     KEY is dotted (parallel.data_parallel_size) or bare\n"
    "                     (data_parallel_size); VALUE is a JSON literal or a string\n"
    "  --planner NAME     planner to run (default: the workload's \"planner\");\n"
    "                     NAME is one of: %s;\n"
    "                     \"all\" simulates every planner's plan and prints one table\n"
    "                     (speed-up is relative to the first row, Megatron's, which\n"
    "                     then takes the fastest uniform recompute that fits)\n"
    "  --plan-out FILE    write the plan as JSON (with --planner all: FILE.NAME.json\n"
    "                     for each planner)\n"
    "  --plan FILE        replay a saved plan instead of running a planner\n"
    "  --frontier FILE    also write TensorOpt's Pareto frontier of (iteration time,\n"
    "                     memory per NPU) over TP/PP/DP, micro-batch and recompute, for\n"
    "                     1, 2, 4, ... NPUs up to the platform's, as CSV\n"
    "  --schedule NAME    pipeline schedule (default: the workload's \"schedule\")\n"
    "  --csv FILE         append one result row to FILE (header written if new)\n"
    "  --trace FILE       write the timeline as a Chrome trace (Perfetto, chrome://tracing)\n"
    "  --trace-replicas N data-parallel replicas per stage in the trace (default 1; \"all\")\n"
    "  --dp-algorithm A   data-parallel all-reduce: %s\n"
    "                     (default ring-flow)\n"
    "  --dp-inter-algorithm A  between-servers part of \"hierarchical\" (default ring-flow)\n"
    "  --dp-radix R       radix of \"butterfly\" (default 4)\n"
    "  --ep-alltoall-algorithm A  expert-parallel all-to-all: %s (default pairwise)\n"
    "  --dp-overlap       bucket the gradient all-reduce and overlap it with the backward\n"
    "                     (Megatron's overlap_grad_reduce)\n"
    "  --dp-bucket-bytes N  bucket size for --dp-overlap (default Megatron's:\n"
    "                     max(40M, 1M x DP) fp32 gradients)\n"
    "  --shifted-recompute  Merak's shifted critical path on any plan: the last p-s\n"
    "                     micro-batches of stage s skip recompute, the last stage never\n"
    "                     recomputes (checked against memory)\n"
    "  --fold-dp K        simulate the pipelines of K data-parallel replicas only; the\n"
    "                     others join every collective, so its traffic stays on the fabric;\n"
    "                     exact on non-blocking fat trees (refused, with the reason, on\n"
    "                     tapered ones and where replicas are not symmetric)\n"
    "  --stages           also print the per-stage table\n"
    "  --quiet            print nothing on success (use with --csv)\n"
    "  --help             this text\n"
    "  --cfg=NAME:VALUE   passed to SimGrid (e.g. --cfg=network/model:LV08)\n"
    "\n"
    "output files (--csv, --trace, --plan-out, --frontier) are checked before the\n"
    "simulation: a missing folder, a directory, a device or a read-only file is\n"
    "refused.  Whole files are replaced only once completely written; CSV rows are\n"
    "appended whole under a lock, fields quoted as RFC 4180 says.\n"
    "\n"
    "exit codes: 0 success; 1 bad command line; 2 bad or missing input file\n"
    "(workload, platform); 3 the plan does not fit in device memory;\n"
    "4 simulation or output failure (also a refused output path, or standard\n"
    "output that cannot be written).\n";

typedef struct cli {
    const char *platform_path;
    const char *workload_path;
    const char *overrides[MAX_OVERRIDES];
    int num_overrides;
    const char *planner;
    const char *schedule;
    const char *csv_path;
    const char *plan_in;
    const char *plan_out;
    const char *trace_path;
    const char *frontier_path;
    const char *trace_replicas; /* "all" or a count, for --trace */
    const char *fold_dp;
    const char *dp_algorithm, *dp_inter_algorithm, *dp_radix, *ep_alltoall_algorithm;
    const char *dp_bucket_bytes;
    int dp_overlap;
    int shifted_recompute;
    int stages, quiet;
    int fold_dp_replicas;   /* parsed --fold-dp */
    engine_options engine;  /* parsed collective options */
    int trace_max_replicas; /* parsed --trace-replicas */
    char *simgrid_argv[MAX_SIMGRID_ARGS];
    int simgrid_argc;
} cli;

static void print_usage(FILE *out)
{
    char names[256] = "";
    int n;
    const planner_desc *all = planner_all(&n);
    for (int i = 0; i < n; i++) {
        strncat(names, all[i].name, sizeof names - strlen(names) - 1);
        if (i + 1 < n)
            strncat(names, ", ", sizeof names - strlen(names) - 1);
    }
    char allreduce[128], alltoall[64];
    coll_algorithm_list(COLL_ALLREDUCE, allreduce, sizeof allreduce);
    coll_algorithm_list(COLL_ALLTOALL, alltoall, sizeof alltoall);
    fprintf(out, usage_text, names, allreduce, alltoall);
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "simrun: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (simrun --help lists the options)\n");
    return NP_EXIT_USAGE;
}

/* A positive integer option value; 0 or an exit code after a usage error. */
static int parse_count(const char *text, const char *option, int *out)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || v < 1 || v > 1 << 30) {
        fprintf(stderr, "simrun: %s expects a positive integer, got '%s'\n", option, text);
        return NP_EXIT_USAGE;
    }
    *out = (int)v;
    return 0;
}

/* An algorithm name for option `option`, or a usage error. */
static int parse_algorithm(const char *name, const char *option, coll_kind kind,
                           coll_algorithm *out)
{
    int a = coll_algorithm_by_name(name);
    if (a < 0 || !coll_algorithm_supports((coll_algorithm)a, kind)) {
        char names[128];
        coll_algorithm_list(kind, names, sizeof names);
        fprintf(stderr, "simrun: %s: unknown %s algorithm '%s', expected one of: %s\n", option,
                coll_kind_name(kind), name, names);
        return NP_EXIT_USAGE;
    }
    *out = (coll_algorithm)a;
    return 0;
}

static int parse_collectives(cli *c)
{
    engine_init_options(&c->engine);
    if (c->dp_algorithm &&
        parse_algorithm(c->dp_algorithm, "--dp-algorithm", COLL_ALLREDUCE, &c->engine.dp_algorithm))
        return NP_EXIT_USAGE;
    if (c->dp_inter_algorithm && parse_algorithm(c->dp_inter_algorithm, "--dp-inter-algorithm",
                                                 COLL_ALLREDUCE, &c->engine.dp_inter_algorithm))
        return NP_EXIT_USAGE;
    if (c->ep_alltoall_algorithm &&
        parse_algorithm(c->ep_alltoall_algorithm, "--ep-alltoall-algorithm", COLL_ALLTOALL,
                        &c->engine.ep_alltoall_algorithm))
        return NP_EXIT_USAGE;
    if (c->dp_radix && parse_count(c->dp_radix, "--dp-radix", &c->engine.dp_radix))
        return NP_EXIT_USAGE;
    c->engine.dp_overlap = c->dp_overlap;
    if (c->dp_bucket_bytes) {
        char *end;
        double v = strtod(c->dp_bucket_bytes, &end);
        if (*c->dp_bucket_bytes == '\0' || *end != '\0' || !(v >= 1) || isinf(v)) {
            fprintf(stderr, "simrun: --dp-bucket-bytes expects a size in bytes >= 1, got '%s'\n",
                    c->dp_bucket_bytes);
            return NP_EXIT_USAGE;
        }
        c->engine.dp_bucket_bytes = v;
    }
    return 0;
}

/* Where the value of option a goes, or NULL when a takes no value. */
static const char **value_option(cli *c, const char *a)
{
    if (strcmp(a, "--planner") == 0)
        return &c->planner;
    if (strcmp(a, "--schedule") == 0)
        return &c->schedule;
    if (strcmp(a, "--csv") == 0)
        return &c->csv_path;
    if (strcmp(a, "--plan") == 0)
        return &c->plan_in;
    if (strcmp(a, "--trace") == 0)
        return &c->trace_path;
    if (strcmp(a, "--frontier") == 0)
        return &c->frontier_path;
    if (strcmp(a, "--trace-replicas") == 0)
        return &c->trace_replicas;
    if (strcmp(a, "--fold-dp") == 0)
        return &c->fold_dp;
    if (strcmp(a, "--dp-algorithm") == 0)
        return &c->dp_algorithm;
    if (strcmp(a, "--dp-inter-algorithm") == 0)
        return &c->dp_inter_algorithm;
    if (strcmp(a, "--dp-radix") == 0)
        return &c->dp_radix;
    if (strcmp(a, "--ep-alltoall-algorithm") == 0)
        return &c->ep_alltoall_algorithm;
    if (strcmp(a, "--dp-bucket-bytes") == 0)
        return &c->dp_bucket_bytes;
    if (strcmp(a, "--plan-out") == 0)
        return &c->plan_out;
    return NULL;
}

/* Returns -1 to continue, or an exit code. */
static int parse_args(int argc, char **argv, cli *c)
{
    const char *positional[2];
    int npos = 0;
    c->simgrid_argv[c->simgrid_argc++] = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **target;
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            print_usage(stdout);
            return NP_EXIT_OK;
        } else if (strncmp(a, "--cfg=", 6) == 0 || strncmp(a, "--log=", 6) == 0) {
            if (c->simgrid_argc == MAX_SIMGRID_ARGS)
                return usage_error("too many SimGrid options (at most %s)", "63");
            c->simgrid_argv[c->simgrid_argc++] = argv[i];
        } else if (strcmp(a, "--set") == 0) {
            if (!value)
                return usage_error("option %s needs KEY=VALUE", a);
            if (!strchr(value, '='))
                return usage_error("--set expects KEY=VALUE, got '%s'", value);
            if (c->num_overrides == MAX_OVERRIDES)
                return usage_error("too many --set options (at most %s)", "64");
            c->overrides[c->num_overrides++] = value;
            i++;
        } else if ((target = value_option(c, a))) {
            if (!value)
                return usage_error("option %s needs a value", a);
            *target = value;
            i++;
        } else if (strcmp(a, "--stages") == 0) {
            c->stages = 1;
        } else if (strcmp(a, "--dp-overlap") == 0) {
            c->dp_overlap = 1;
        } else if (strcmp(a, "--shifted-recompute") == 0) {
            c->shifted_recompute = 1;
        } else if (strcmp(a, "--quiet") == 0) {
            c->quiet = 1;
        } else if (a[0] == '-' && a[1] != '\0') {
            return usage_error("unknown option '%s'", a);
        } else if (npos < 2) {
            positional[npos++] = a;
        } else {
            return usage_error("unexpected argument '%s'", a);
        }
    }
    if (npos < 2)
        return usage_error("%s", "expected PLATFORM.xml and WORKLOAD.json");
    if (c->fold_dp && parse_count(c->fold_dp, "--fold-dp", &c->fold_dp_replicas))
        return NP_EXIT_USAGE;
    if (parse_collectives(c))
        return NP_EXIT_USAGE;
    c->trace_max_replicas = 1;
    if (c->trace_replicas && strcmp(c->trace_replicas, "all") == 0)
        c->trace_max_replicas = 0;
    else if (c->trace_replicas &&
             parse_count(c->trace_replicas, "--trace-replicas", &c->trace_max_replicas))
        return NP_EXIT_USAGE;
    c->platform_path = positional[0];
    c->workload_path = positional[1];
    c->simgrid_argv[c->simgrid_argc] = NULL;
    return -1;
}

static int fail(const np_error *err)
{
    char buf[1400];
    fprintf(stderr, "simrun: %s\n", np_error_format(err, buf, sizeof buf));
    return err->code ? err->code : NP_EXIT_INTERNAL;
}

/* The --set assignments joined by ';', whole (malloc'd; NULL when out of
 * memory): the CSV's overrides column. */
static char *join_overrides(const cli *c)
{
    size_t size = 1;
    for (int i = 0; i < c->num_overrides; i++)
        size += strlen(c->overrides[i]) + 1;
    char *buf = malloc(size), *end = buf;
    if (!buf)
        return NULL;
    *end = '\0';
    for (int i = 0; i < c->num_overrides; i++) {
        size_t n = strlen(c->overrides[i]);
        if (i)
            *end++ = ';';
        memcpy(end, c->overrides[i], n + 1);
        end += n;
    }
    return buf;
}

/* What every planner's run shares: the workload, the platform and the cost
 * model of the workload's own parallel configuration. */
typedef struct job {
    wl_workload w;
    sim_platform pf;
    cm_model cm;
    char *overrides;             /* join_overrides() */
    double baseline_iteration_s; /* the first successful run, for speed-ups */
    int rows;
    int several; /* --planner all: output files get the planner's name */
} job;

/* An output file of one planner's run: "out/x.json" when one planner runs,
 * "out/x.NAME.json" for each planner of --planner all. */
static const char *output_path(const char *base, const char *planner, int several, char *buf,
                               int size)
{
    if (!base || !several)
        return base;
    const char *dot = strrchr(base, '.');
    const char *slash = strrchr(base, '/');
    int stem = dot && (!slash || dot > slash) ? (int)(dot - base) : (int)strlen(base);
    snprintf(buf, size, "%.*s.%s%s", stem, base, planner, stem < (int)strlen(base) ? dot : "");
    return buf;
}

/* Standard output's first write error (an errno), 0 while none. */
static int stdout_errno;

static void flush_stdout(void)
{
    errno = 0;
    if (fflush(stdout) != 0 && !stdout_errno)
        stdout_errno = errno ? errno : EIO;
}

/* Flushes standard output at exit: a table that did not reach its reader
 * (simrun > /dev/full) is an output failure, said on stderr. */
static int finish_stdout(void)
{
    flush_stdout();
    int e = stdout_errno;
    if (!e && ferror(stdout))
        e = EIO;
    if (!e)
        return 0;
    fprintf(stderr, "simrun: cannot write standard output: %s\n", strerror(e));
    return NP_EXIT_INTERNAL;
}

/* Every output of the run, checked before anything is simulated
 * (np_file_check_target): --csv is appended to; --frontier, --plan-out and
 * --trace are replaced, the last two once per planner under --planner all
 * (several), as output_path() names them. */
static int check_outputs(const cli *c, int several, np_error *err)
{
    int rc;
    if (c->csv_path && (rc = np_file_check_target(c->csv_path, "--csv", NP_FILE_APPEND, err)))
        return rc;
    if (c->frontier_path &&
        (rc = np_file_check_target(c->frontier_path, "--frontier", NP_FILE_REPLACE, err)))
        return rc;
    const char *bases[2] = {c->plan_out, c->trace_path}, *keys[2] = {"--plan-out", "--trace"};
    int n = 1;
    const planner_desc *all = several ? planner_all(&n) : NULL;
    for (int b = 0; b < 2; b++)
        for (int i = 0; bases[b] && i < n; i++) {
            char buf[1024];
            const char *path =
                output_path(bases[b], all ? all[i].name : NULL, several, buf, sizeof buf);
            if ((rc = np_file_check_target(path, keys[b], NP_FILE_REPLACE, err)))
                return rc;
        }
    return 0;
}

/* Simulates one plan and reports it (table row, CSV row, plan file, trace). */
static int simulate_and_report(const cli *c, job *j, plan *pl, np_error *err)
{
    char path[1024];
    const char *plan_out = output_path(c->plan_out, pl->planner, j->several, path, sizeof path);
    cm_model own = {0};
    const cm_model *cm;
    schedule sc = {0};
    engine_result res = {0};
    int rc = planner_cost_model_for(&j->w, &j->pf.cluster, &j->cm, pl, &own, &cm, err);
    if (!rc && plan_out)
        rc = plan_write_json(plan_out, pl, c->workload_path, err);
    if (!rc)
        rc = sched_build(pl, cm, &sc, err);
    if (!rc) {
        engine_options eo = c->engine;
        eo.record_spans = c->trace_path != NULL;
        if (j->w.training.use_distributed_optimizer)
            eo.dp_param_gather_ratio = wl_dtype_bytes(j->w.training.params_dtype) /
                                       cm_grad_bytes_per_param(j->w.training.params_dtype);
        eo.fold_dp = c->fold_dp_replicas;
        rc = engine_run(&j->pf, &j->w, cm, pl, &sc, &eo, &res, err);
    }
    if (!rc && c->trace_path) {
        trace_options to;
        trace_init_options(&to);
        to.max_replicas = c->trace_max_replicas;
        if (c->fold_dp_replicas && (to.max_replicas == 0 || to.max_replicas > c->fold_dp_replicas))
            to.max_replicas = c->fold_dp_replicas; /* folded-away replicas have no timeline */
        rc = trace_write_chrome(
            output_path(c->trace_path, pl->planner, j->several, path, sizeof path), &res, pl, &sc,
            &to, err);
    }
    if (!rc) {
        report_row row = {.platform = c->platform_path,
                          .workload = c->workload_path,
                          .w = &j->w,
                          .pl = pl,
                          .r = &res,
                          .capacity_bytes = j->pf.cluster.hbm_bytes,
                          .num_npus = j->pf.num_npus,
                          .overrides = j->overrides};
        if (c->csv_path)
            rc = report_csv_append(c->csv_path, &row, err);
        if (!j->baseline_iteration_s)
            j->baseline_iteration_s = res.iteration_s;
        if (!c->quiet) {
            if (j->rows++ == 0) {
                report_print_header(stdout, &row);
                report_print_table_head(stdout);
            }
            report_print_table_row(stdout, &row, j->baseline_iteration_s);
            if (c->stages)
                report_print_stages(stdout, &row);
            flush_stdout();
        }
    }
    engine_result_free(&res);
    sched_free(&sc);
    if (cm == &own)
        cm_free(&own);
    return rc;
}

/* --shifted-recompute (Merak, TPDS'23): the schedules skip recompute for the
 * last p−s micro-batches of stage s (sched_skips_recompute) and the last
 * stage keeps every activation.  The plan must still fit. */
static int shift_recompute(const job *j, plan *pl, np_error *err)
{
    int p = pl->num_stages;
    pl->merak_shifted_recompute = true;
    pl->predicted_iteration_s = 0; /* the planner priced the plan unshifted */
    for (int l = 0; l < pl->num_layers; l++)
        if (plan_stage_of_layer(pl, l, NULL) == p - 1)
            pl->recompute[l] = RECOMPUTE_NONE;
    if (pl->recompute_units)
        for (int l = 0; l < pl->num_layers; l++)
            if (plan_stage_of_layer(pl, l, NULL) == p - 1)
                pl->recompute_units[l] = 0;
    cm_model own;
    const cm_model *cm;
    int rc = planner_cost_model_for(&j->w, &j->pf.cluster, &j->cm, pl, &own, &cm, err);
    if (!rc)
        rc = mem_check_fits(cm, pl, err);
    if (cm == &own)
        cm_free(&own);
    return rc;
}

static int run_planner(const cli *c, job *j, const planner_desc *pd, np_error *err)
{
    planner_options po;
    planner_init_options(&po, &j->w);
    /* In a comparison every planner picks its own recompute; the Megatron
     * baseline is then the fastest of none, selective and full that fits. */
    if (j->several)
        po.recompute = -1;
    plan pl = {0};
    int rc = planner_run(pd, &j->cm, &j->pf.cluster, &j->w, &po, &pl, err);
    if (!rc && c->shifted_recompute)
        rc = shift_recompute(j, &pl, err);
    if (!rc)
        rc = simulate_and_report(c, j, &pl, err);
    plan_free(&pl);
    return rc;
}

/* --planner all: every planner on the same platform; one that fails (does
 * not fit, does not apply to this model) is reported and the others go on. */
static int run_all_planners(const cli *c, job *j, np_error *err)
{
    int n, first_rc = 0, successes = 0;
    const planner_desc *all = planner_all(&n);
    j->several = 1;
    for (int i = 0; i < n; i++) {
        np_error one;
        np_error_clear(&one);
        int rc = run_planner(c, j, &all[i], &one);
        if (rc == 0) {
            successes++;
            continue;
        }
        if (rc == NP_EXIT_INTERNAL) { /* SimGrid's state is lost: stop here */
            *err = one;
            return rc;
        }
        char buf[1400];
        fprintf(stderr, "simrun: planner %s: %s\n", all[i].name,
                np_error_format(&one, buf, sizeof buf));
        if (!first_rc) {
            first_rc = rc;
            *err = one;
        }
    }
    if (successes)
        return 0;
    return first_rc;
}

static int load_inputs(cli *c, job *j, np_error *err)
{
    /* --schedule X is the override schedule="X", applied with the others so
     * that the loader checks it together with them (e.g. interleaved and
     * --set virtual_pipeline_model_parallel_size=2). */
    const char *overrides[MAX_OVERRIDES + 1];
    char schedule_override[80];
    int n = 0;
    if (c->schedule) {
        if (wl_schedule_by_name(c->schedule) < 0)
            return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--schedule", 0,
                                "unknown schedule '%s'", c->schedule);
        snprintf(schedule_override, sizeof schedule_override, "schedule=\"%s\"", c->schedule);
        overrides[n++] = schedule_override;
    }
    for (int i = 0; i < c->num_overrides; i++)
        overrides[n++] = c->overrides[i];
    int rc = wl_load(c->workload_path, overrides, n, &j->w, err);
    if (rc)
        return rc;
    const char *name = c->planner ? c->planner : j->w.planner;
    if (!c->plan_in && strcmp(name, "all") != 0 && !planner_find(name))
        return np_error_set(err, c->planner ? NP_EXIT_USAGE : NP_EXIT_INPUT,
                            c->planner ? "<command line>" : c->workload_path,
                            c->planner ? "--planner" : "planner", 0, "unknown planner '%s'", name);
    if ((rc = check_outputs(c, !c->plan_in && strcmp(name, "all") == 0, err)))
        return rc;
    if ((rc = engine_simgrid_init(&c->simgrid_argc, c->simgrid_argv, err)))
        return rc;
    if ((rc = platform_load(c->platform_path, &j->pf, err)))
        return rc;
    if ((rc = wl_check_cluster(&j->w, j->pf.num_npus, err)))
        return rc;
    if (!(j->overrides = join_overrides(c)))
        return np_error_set(err, NP_EXIT_INTERNAL, "<command line>", "--set", 0, "out of memory");
    return cm_build(&j->w, &j->pf.cluster, 0, &j->cm, err);
}

static int write_frontier(const cli *c, job *j, np_error *err)
{
    frontier fr;
    int rc = frontier_sweep(&j->w, &j->pf.cluster, &fr, err);
    if (!rc)
        rc = frontier_write_csv(c->frontier_path, &fr, err);
    frontier_free(&fr);
    return rc;
}

/* A saved plan must train the workload's batch (tokens/s and the CSV come
 * from it), name only recompute units its layers have, and fit in memory
 * under its own cost model. */
static int check_saved_plan(const cli *c, const job *j, plan *pl, np_error *err)
{
    long samples = (long)pl->num_micro_batches * pl->micro_batch_size;
    if (pl->micro_batch_sizes) {
        samples = 0;
        for (int i = 0; i < pl->num_micro_batches; i++)
            samples += pl->micro_batch_sizes[i];
    }
    if (samples * pl->data_parallel != j->w.training.global_batch_size)
        return np_error_set(err, NP_EXIT_INPUT, c->plan_in, "num_micro_batches", 0,
                            "the plan trains %ld samples per pipeline x %d replicas = %ld per "
                            "iteration, the workload's global_batch_size is %ld",
                            samples, pl->data_parallel, samples * pl->data_parallel,
                            j->w.training.global_batch_size);
    cm_model own;
    const cm_model *cm;
    int rc = planner_cost_model_for(&j->w, &j->pf.cluster, &j->cm, pl, &own, &cm, err);
    for (int l = 0; !rc && pl->recompute_units && l < pl->num_layers; l++)
        if (pl->recompute_units[l] >> cm->layers[l].num_units)
            rc = np_error_set(err, NP_EXIT_INPUT, c->plan_in, "recompute_units", 0,
                              "layer %d (%s) has %d recomputable units, the mask 0x%x names "
                              "others",
                              l, cm->layers[l].name, cm->layers[l].num_units,
                              pl->recompute_units[l]);
    if (!rc)
        rc = mem_check_fits(cm, pl, err);
    if (cm == &own)
        cm_free(&own);
    return rc;
}

static int run_job(cli *c, job *j, np_error *err)
{
    int rc = load_inputs(c, j, err);
    if (rc)
        return rc;
    if (c->frontier_path && (rc = write_frontier(c, j, err)))
        return rc;
    if (c->plan_in) {
        plan pl;
        if ((rc = plan_read_json(c->plan_in, j->cm.num_layers, &pl, err)))
            return rc;
        if (!(rc = check_saved_plan(c, j, &pl, err)) &&
            !(rc = c->shifted_recompute ? shift_recompute(j, &pl, err) : 0))
            rc = simulate_and_report(c, j, &pl, err);
        plan_free(&pl);
        return rc;
    }
    const char *name = c->planner ? c->planner : j->w.planner;
    if (strcmp(name, "all") == 0)
        return run_all_planners(c, j, err);
    return run_planner(c, j, planner_find(name), err);
}

int main(int argc, char **argv)
{
    cli c = {0};
    int rc = parse_args(argc, argv, &c);
    if (rc >= 0) {
        int out = finish_stdout(); /* --help > /dev/full */
        return rc ? rc : out;
    }
    job j;
    memset(&j, 0, sizeof j);
    np_error err;
    np_error_clear(&err);
    rc = run_job(&c, &j, &err);
    cm_free(&j.cm);
    platform_free(&j.pf);
    wl_free(&j.w);
    free(j.overrides);
    rc = rc ? fail(&err) : 0;
    int out = finish_stdout();
    return rc ? rc : out;
}
