/*
 * cli_output.c -- what simrun writes and how it fails: standard output and
 * its write errors (simrun > /dev/full is an output failure), the paths of
 * the output files (--csv, --trace, --plan-out, --frontier; one per planner
 * under --planner all), their checks before anything is simulated, and the
 * one-line error on stderr.
 *
 * Output files never destroy anything (np_file.h): every output path is
 * checked before the simulation starts (a missing or unwritable folder, a
 * directory, a device or a read-only file is refused, naming the option; so
 * is a --csv file whose header is not this simrun's), a
 * whole file is written to a temporary file renamed into place once
 * complete, and a CSV row is appended whole under a lock.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "np_file.h"
#include "planner.h"
#include "report.h"

/* An output file of one planner's run: "out/x.json" when one planner runs,
 * "out/x.NAME.json" for each planner of --planner all. */
const char *output_path(const char *base, const char *planner, int several, char *buf, int size)
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

void flush_stdout(void)
{
    errno = 0;
    if (fflush(stdout) != 0 && !stdout_errno)
        stdout_errno = errno ? errno : EIO;
}

/* Flushes standard output at exit: a table that did not reach its reader
 * (simrun > /dev/full) is an output failure, said on stderr. */
int finish_stdout(void)
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

/* The files a run reads and writes, by option, for the check that no output
 * is an input or another output: the paths as given, and the names
 * output_path() makes under --planner all (in names[]). */
enum { MAX_FILES = 64, NAME_SIZE = 1024 };
typedef struct file_list {
    int count, inputs;    /* the first `inputs` are read */
    const char *too_long; /* the option whose per-planner name did not fit */
    const char *path[MAX_FILES];
    const char *key[MAX_FILES];
    char names[MAX_FILES][NAME_SIZE];
} file_list;

static void list_file(file_list *l, const char *path, const char *key)
{
    if (path && l->count < MAX_FILES) {
        l->path[l->count] = path;
        l->key[l->count++] = key;
    }
}

/* base's name for one planner of --planner all (several), kept in l. */
static void list_output(file_list *l, const char *base, const char *planner, int several,
                        const char *key)
{
    if (!base || l->count >= MAX_FILES)
        return;
    char *buf = l->names[l->count];
    const char *path = output_path(base, planner, several, buf, NAME_SIZE);
    if (path == buf && strlen(base) + strlen(planner) + 2 >= NAME_SIZE && !l->too_long)
        l->too_long = key;
    list_file(l, path, key);
}

/* An output that is one of the run's inputs, or another output, would
 * destroy it (or lose one of the two results): refused, naming both. */
static int check_distinct(const file_list *l, np_error *err)
{
    if (l->too_long)
        return np_error_set(err, NP_EXIT_USAGE, "<command line>", l->too_long, 0,
                            "with --planner all each planner's file name would be %d bytes or "
                            "more: expected a shorter path",
                            NAME_SIZE);
    for (int i = l->inputs; i < l->count; i++)
        for (int j = 0; j < i; j++)
            if (np_file_same(l->path[i], l->path[j]) &&
                /* a plan re-saved: read whole before it is written */
                !(strcmp(l->key[i], "--plan-out") == 0 &&
                  strcmp(l->key[j], "the --plan file") == 0))
                return np_error_set(err, NP_EXIT_USAGE, "<command line>", l->key[i], 0,
                                    "%s is also %s%s: %s; give each output a file of its own",
                                    l->path[i], j < l->inputs ? "" : "the file of ", l->key[j],
                                    j < l->inputs ? "writing it would destroy the input"
                                                  : "one result would replace the other");
    return 0;
}

/* Every output of the run, checked before anything is simulated
 * (np_file_check_target): --csv is appended to; --frontier, --plan-out and
 * --trace are replaced, the last two once per planner under --planner all
 * (several), as output_path() names them.  No output may be an input (the
 * platform, the workload, --plan, --moe-trace or moe_trace, the routing
 * trace the workload names) or another output; --plan-out may be --plan
 * (the plan is read whole before it is written: a plan re-saved). */
int check_outputs(const cli *c, const char *moe_trace, int several, np_error *err)
{
    int rc;
    static file_list files; /* 64 KiB of names: off the stack */
    memset(&files, 0, sizeof files);
    list_file(&files, c->platform_path, "the platform");
    list_file(&files, c->workload_path, "the workload");
    list_file(&files, c->plan_in, "the --plan file");
    list_file(&files, c->moe_trace_path, "the --moe-trace file");
    list_file(&files, moe_trace, "the workload's model.moe_token_trace");
    files.inputs = files.count;
    list_file(&files, c->csv_path, "--csv");
    list_file(&files, c->frontier_path, "--frontier");
    const char *bases[2] = {c->plan_out, c->trace_path}, *keys[2] = {"--plan-out", "--trace"};
    int n = 1;
    const planner_desc *all = several ? planner_all(&n) : NULL;
    for (int b = 0; b < 2; b++)
        for (int i = 0; bases[b] && i < n; i++)
            list_output(&files, bases[b], all ? all[i].name : "", several, keys[b]);
    if ((rc = check_distinct(&files, err)))
        return rc;
    for (int i = files.inputs; i < files.count; i++) {
        bool csv = strcmp(files.key[i], "--csv") == 0;
        if ((rc = np_file_check_target(files.path[i], files.key[i],
                                       csv ? NP_FILE_APPEND : NP_FILE_REPLACE, err)))
            return rc;
        /* rows are appended under the file's own header: a file of an older
         * simrun (fewer columns), or one whose last row was cut, is refused
         * before anything is simulated */
        if (csv && (rc = report_csv_check_header(files.path[i], err)))
            return rc;
    }
    return 0;
}

int fail(const np_error *err)
{
    char buf[1400];
    fprintf(stderr, "simrun: %s\n", np_error_format(err, buf, sizeof buf));
    return err->code ? err->code : NP_EXIT_INTERNAL;
}

int cli_frontier(const cli *c, const job *j, frontier *fr, np_error *err)
{
    cli_progress_say(c, "simrun: frontier over every device count…");
    /* the frontier tries every TP size in Megatron's order, inside servers */
    cl_cluster megatron_order = j->pf.cluster;
    megatron_order.tp_across_servers = 0;
    megatron_order.dp_ring_local = 0; /* and its data-parallel channels */
    int rc = frontier_sweep(&j->w, &megatron_order, j->cm.zero_overlap, fr, err);
    cli_progress_clear(c);
    return rc;
}
