/*
 * simsweep.c -- the simsweep command line: reads the options, loads the
 * sweep file and hands over to the runner (sweep_run.c), the job emitters
 * (sweep_emit.c) or --merge (sweep_csv.c).  docs/sweeps.md is its manual.
 *
 *   simsweep [-j N] [-o OUT.csv] [--simrun PATH] [--retry-failed] SWEEP.json
 *   simsweep --dry-run | --emit-jobs | --slurm ... SWEEP.json
 *   simsweep --run-point ID | --run-point-index I SWEEP.json -o OUT.csv
 *   simsweep --merge OUT.csv FRAGMENT.csv...
 */
#define _GNU_SOURCE /* asprintf */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "np_file.h"
#include "sweep.h"

static const char usage_text[] =
    "usage: simsweep [options] SWEEP.json\n"
    "       simsweep --merge OUT.csv FRAGMENT.csv...\n"
    "\n"
    "Runs every point of a sweep file (docs/sweeps.md) as a simrun process, each\n"
    "appending one row to the sweep's CSV; points that already have a row there\n"
    "are skipped, so an interrupted sweep is resumed by running it again.\n"
    "\n"
    "options:\n"
    "  -j N, --jobs N     simultaneous simrun processes (default: the online cores);\n"
    "                     with --slurm, the most array tasks running at once\n"
    "  -o FILE            the CSV (default: the sweep file's \"csv\"); its folder is\n"
    "                     created when missing\n"
    "  --simrun PATH      the simrun to run (default: the one beside simsweep)\n"
    "  --retry-failed     also run the points whose rows say \"failed\"\n"
    "  --quiet            no progress and no failure lines on stderr\n"
    "  --dry-run          list the points (run id, state, arguments) and stop\n"
    "  --emit-jobs        print one shell command per pending point, for sh or GNU\n"
    "                     parallel: simsweep --emit-jobs s.json | parallel -j8\n"
    "  --slurm            write DIR/sweep.sbatch (a job array, task i runs point i\n"
    "                     into DIR/fragments/part-i.csv) and DIR/points.txt, submit it\n"
    "                     with sbatch and print the job id\n"
    "  --slurm-dry-run    the same without submitting (prints the script's path)\n"
    "  --slurm-dir DIR    where (default: the CSV's name with .slurm for .csv)\n"
    "  --run-point ID     run the point of that run id (what --emit-jobs prints)\n"
    "  --run-point-index I  run point I, from 0 (what a Slurm array task runs)\n"
    "  --merge OUT FRAG...  join CSV fragments and OUT into OUT, one header, one row\n"
    "                     per result (a point's ok rows over its failed ones)\n"
    "  -h, --help         this text\n"
    "\n"
    "One sweep runs into a CSV at a time (a lock on CSV.lock): a second one refuses.\n"
    "\n"
    "exit codes: 0 every point has an ok row; 1 bad command line; 2 bad sweep file\n"
    "or CSV; 3 some points failed (their rows say why); 4 output failure (no row for\n"
    "the points it hit), the CSV busy with another sweep, or simrun cannot be run;\n"
    "130 interrupted (SIGINT, SIGTERM): the finished rows are kept.\n";

typedef enum mode { RUN, DRY_RUN, EMIT_JOBS, SLURM, RUN_POINT, RUN_POINT_INDEX, MERGE } mode;

typedef struct args {
    mode mode;
    int jobs;
    const char *out, *simrun, *slurm_dir, *point;
    int point_index; /* --run-point-index */
    bool quiet, retry_failed, slurm_dry_run;
    const char *sweep_file;
    const char **files; /* --merge's fragments */
    int num_files;
    const char **positional; /* free() it */
} args;

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "simsweep: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (simsweep --help lists the options)\n");
    return NP_EXIT_USAGE;
}

static int set_mode(args *a, mode m, const char *option)
{
    if (a->mode != RUN && a->mode != m)
        return usage_error("%s cannot be combined with another mode", option);
    a->mode = m;
    return 0;
}

static int parse_count(const char *text, const char *option, int min, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (!*text || *end || errno || v < min || v > INT_MAX) {
        fprintf(stderr, "simsweep: %s expects an integer >= %d, got '%s'\n", option, min, text);
        return NP_EXIT_USAGE;
    }
    *out = (int)v;
    return 0;
}

/* -1 to go on, or an exit code. */
static int parse_args(int argc, char **argv, args *a)
{
    const char **positional = a->positional = calloc((size_t)argc, sizeof *positional);
    int npos = 0, rc = -1;
    if (!positional)
        return NP_EXIT_INTERNAL;
    for (int i = 1; i < argc && rc < 0; i++) {
        const char *o = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = !strcmp(o, "-j") || !strcmp(o, "--jobs") || !strcmp(o, "-o") ||
                     !strcmp(o, "--simrun") || !strcmp(o, "--slurm-dir") ||
                     !strcmp(o, "--run-point") || !strcmp(o, "--run-point-index");
        if (takes && !value) {
            rc = usage_error("%s expects a value", o);
            break;
        }
        if (takes)
            i++;
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) { /* as simrun */
            fputs(usage_text, stdout);
            rc = 0;
        } else if (!strcmp(o, "-j") || !strcmp(o, "--jobs")) {
            rc = parse_count(value, o, 1, &a->jobs) ? NP_EXIT_USAGE : -1;
        } else if (!strncmp(o, "-j", 2) && o[2]) {
            rc = parse_count(o + 2, "-j", 1, &a->jobs) ? NP_EXIT_USAGE : -1;
        } else if (!strcmp(o, "-o")) {
            a->out = value;
        } else if (!strcmp(o, "--simrun")) {
            a->simrun = value;
        } else if (!strcmp(o, "--slurm-dir")) {
            a->slurm_dir = value;
        } else if (!strcmp(o, "--quiet")) {
            a->quiet = true;
        } else if (!strcmp(o, "--retry-failed")) {
            a->retry_failed = true;
        } else if (!strcmp(o, "--dry-run")) {
            rc = set_mode(a, DRY_RUN, o) ? NP_EXIT_USAGE : -1;
        } else if (!strcmp(o, "--emit-jobs")) {
            rc = set_mode(a, EMIT_JOBS, o) ? NP_EXIT_USAGE : -1;
        } else if (!strcmp(o, "--slurm")) {
            rc = set_mode(a, SLURM, o) ? NP_EXIT_USAGE : -1;
        } else if (!strcmp(o, "--slurm-dry-run")) {
            a->slurm_dry_run = true;
            rc = set_mode(a, SLURM, o) ? NP_EXIT_USAGE : -1;
        } else if (!strcmp(o, "--run-point")) {
            a->point = value;
            rc = set_mode(a, RUN_POINT, o) ? NP_EXIT_USAGE : -1;
        } else if (!strcmp(o, "--run-point-index")) {
            a->point = value;
            rc = set_mode(a, RUN_POINT_INDEX, o) || parse_count(value, o, 0, &a->point_index)
                     ? NP_EXIT_USAGE
                     : -1;
        } else if (!strcmp(o, "--merge")) {
            rc = set_mode(a, MERGE, o) ? NP_EXIT_USAGE : -1;
        } else if (o[0] == '-' && o[1]) {
            rc = usage_error("unknown option '%s'", o);
        } else {
            positional[npos++] = o;
        }
    }
    if (rc < 0 && a->mode == MERGE && npos < 1)
        rc = usage_error("%s", "--merge expects OUT.csv and the fragments to join");
    else if (rc < 0 && a->mode == MERGE) {
        a->out = positional[0];
        a->files = positional + 1;
        a->num_files = npos - 1;
    } else if (rc < 0 && npos != 1)
        rc = usage_error("%s", npos ? "expected one sweep file" : "expected SWEEP.json");
    else if (rc < 0)
        a->sweep_file = positional[0];
    return rc;
}

/* An absolute form of path (relative ones joined to cwd), malloc'd. */
static char *absolute(const char *path, const char *cwd)
{
    char *s;
    if (path[0] == '/')
        return strdup(path);
    while (path[0] == '.' && path[1] == '/')
        path += 2;
    return asprintf(&s, "%s/%s", cwd, path) < 0 ? NULL : s;
}

/* The folder of path, created when missing (the CSV's). */
static int make_parent(const char *path, np_error *err)
{
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path)
        return 0;
    char *dir = strndup(path, (size_t)(slash - path));
    int rc = dir ? sweep_make_dirs(dir, err)
                 : np_error_set(err, NP_EXIT_INTERNAL, path, "", 0, "out of memory");
    free(dir);
    return rc;
}

static int dry_run(const sweep *s, const char *csv, bool retry_failed, np_error *err)
{
    sweep_done done = {0};
    int rc = csv ? sweep_done_read(csv, NULL, &done, err) : 0, pending = 0;
    static const char *const names[] = {"pending", "failed", "ok"};
    for (int i = 0; !rc && i < s->num_points; i++) {
        const sweep_point *p = &s->points[i];
        sweep_point_state st = sweep_done_state(&done, p->run_id);
        pending += sweep_is_pending(st, retry_failed);
        printf("%s %d %s:", p->run_id, p->index, names[st]);
        for (int k = p->first_own_arg; k < p->num_args; k++) {
            putchar(' ');
            sweep_shell_quote(stdout, p->args[k]);
        }
        printf(" %s %s\n", p->platform, p->workload);
    }
    if (!rc)
        fprintf(stderr, "simsweep: %s: %d points (%d duplicates dropped), %d to run%s%s\n", s->name,
                s->num_points, s->duplicates, pending, csv ? " into " : "", csv ? csv : "");
    sweep_done_free(&done);
    return rc;
}

static int run(args *a, np_error *err)
{
    if (a->mode == MERGE) {
        int kept = 0, dropped = 0;
        sweep_lock lock = {.fd = -1};
        int rc = make_parent(a->out, err);
        if (!rc) /* rows appended to OUT while it is merged would be lost */
            rc = sweep_lock_take(&lock, a->out, true, err);
        if (!rc)
            rc = sweep_merge(a->out, a->files, a->num_files, &kept, &dropped, err);
        sweep_lock_release(&lock);
        if (!rc && !a->quiet)
            fprintf(stderr, "simsweep: %s: %d rows (%d duplicate rows dropped)\n", a->out, kept,
                    dropped);
        return rc;
    }
    sweep s;
    int rc = sweep_load(a->sweep_file, &s, err);
    if (rc)
        return rc;
    char cwd[PATH_MAX], self[PATH_MAX], *simrun = NULL, *sweep_abs = NULL, *csv_abs = NULL;
    char *slurm_dir = NULL;
    const char *csv = a->out ? a->out : s.csv;
    if (!getcwd(cwd, sizeof cwd) || !realpath("/proc/self/exe", self))
        rc = np_error_set(err, NP_EXIT_INTERNAL, "simsweep", "", 0,
                          "cannot find the current folder or simsweep's own path: %s",
                          strerror(errno));
    else if (!csv && a->mode != DRY_RUN)
        rc = np_error_set(err, NP_EXIT_USAGE, a->sweep_file, "csv", 0,
                          "no output CSV: give -o FILE or \"csv\" in the sweep file");
    if (!rc && a->simrun)
        simrun = strchr(a->simrun, '/') ? absolute(a->simrun, cwd) : strdup(a->simrun);
    else if (!rc && asprintf(&simrun, "%.*s/simrun", (int)(strrchr(self, '/') - self), self) < 0)
        simrun = NULL;
    if (!rc && csv) {
        sweep_abs = realpath(a->sweep_file, NULL);
        csv_abs = absolute(csv, cwd);
        if (!a->slurm_dir) {
            size_t n = strlen(csv_abs);
            n -= n > 4 && !strcmp(csv_abs + n - 4, ".csv") ? 4 : 0;
            if (asprintf(&slurm_dir, "%.*s.slurm", (int)n, csv_abs) < 0)
                slurm_dir = NULL;
        } else {
            slurm_dir = absolute(a->slurm_dir, cwd);
        }
        if (!simrun || !sweep_abs || !csv_abs || !slurm_dir)
            rc = np_error_set(err, NP_EXIT_INTERNAL, a->sweep_file, "", 0, "out of memory");
    }
    sweep_run_options ro = {.simrun = simrun,
                            .csv = csv,
                            .jobs = a->jobs > 0 ? a->jobs : (int)sysconf(_SC_NPROCESSORS_ONLN),
                            .quiet = a->quiet,
                            .retry_failed = a->retry_failed};
    if (ro.jobs < 1)
        ro.jobs = 1;
    sweep_emit_paths paths = {self, simrun, sweep_abs, csv_abs, cwd};
    /* no point writes simsweep's files (the CSV, its lock, --slurm-dir's) or
     * the sweep's inputs, and --slurm writes none of them: before anything
     * runs or is written, in every mode (a --run-point job's -o is a Slurm
     * fragment or the CSV, checked with its folder when it was emitted) */
    bool job = a->mode == RUN_POINT || a->mode == RUN_POINT_INDEX;
    sweep_files files = {.csv = csv,
                         .csv_key = a->out ? "-o" : "csv",
                         .slurm_dir = job ? NULL : slurm_dir,
                         .simrun = simrun,
                         .simsweep = self};
    if (!rc)
        rc = sweep_check_files(&s, &files, err);
    if (!rc && a->mode != DRY_RUN && a->mode != SLURM)
        rc = make_parent(csv, err);
    if (rc)
        ;
    else if (a->mode == DRY_RUN)
        rc = dry_run(&s, csv, a->retry_failed, err);
    else if (a->mode == EMIT_JOBS)
        rc = sweep_emit_jobs(stdout, &s, &paths, a->retry_failed, err);
    else if (a->mode == SLURM)
        rc = sweep_slurm(stdout, &s, &paths, slurm_dir, a->slurm_dry_run, a->retry_failed, a->jobs,
                         err);
    else if (a->mode == RUN)
        rc = sweep_run_local(&s, &ro, err);
    else {
        const sweep_point *p = NULL;
        if (a->mode == RUN_POINT)
            p = sweep_find(&s, a->point);
        else if (a->point_index < s.num_points)
            p = &s.points[a->point_index];
        if (p)
            rc = sweep_run_point(&s, p, &ro, err);
        else
            rc = np_error_set(err, NP_EXIT_INPUT, a->sweep_file, "", 0,
                              "no point %s %s among its %d (has the sweep file changed?)",
                              a->mode == RUN_POINT ? "has run id" : "has index", a->point,
                              s.num_points);
    }
    free(simrun);
    free(sweep_abs);
    free(csv_abs);
    free(slurm_dir);
    sweep_free(&s);
    return rc;
}

/* Standard output at exit: np_stdout_finish (np_file.h). */
static int finish_stdout(void) { return np_stdout_finish("simsweep"); }

int main(int argc, char **argv)
{
    args a = {0};
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0) {
        free(a.positional);
        int out = finish_stdout(); /* --help > /dev/full */
        return rc ? rc : out;
    }
    np_error err;
    np_error_clear(&err);
    rc = run(&a, &err);
    free(a.positional);
    if (rc && err.code) {
        char buf[1400];
        fprintf(stderr, "simsweep: %s\n", np_error_format(&err, buf, sizeof buf));
    }
    int out = finish_stdout();
    return rc ? rc : out;
}
