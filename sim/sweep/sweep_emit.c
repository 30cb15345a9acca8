/*
 * sweep_emit.c -- sweeps run by someone else: --emit-jobs (one shell command
 * per pending point, for sh or GNU parallel) and --slurm (a Slurm job array
 * whose task i runs point i into its own CSV fragment), with the shell
 * quoting both need (docs/sweeps.md, "GNU parallel" and "Slurm").
 *
 * Every emitted command uses absolute paths and starts with `cd` to the
 * folder simsweep ran in, since the sweep file's paths are relative to it;
 * a command is `simsweep --run-point`, so a failure is recorded as the local
 * runner records it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "np_file.h"
#include "sweep.h"

void sweep_shell_quote(FILE *f, const char *s)
{
    if (*s &&
        strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:=@%+,-") ==
            strlen(s)) {
        fputs(s, f);
        return;
    }
    fputc('\'', f);
    for (; *s; s++)
        if (*s == '\'')
            fputs("'\\''", f);
        else
            fputc(*s, f);
    fputc('\'', f);
}

/* The state of every point in the CSV: st[i] for s->points[i].  The CSV's
 * header must be simrun's (*header, asked for here): the emitted commands
 * append to it (--emit-jobs), or it is merged with fragments of that header
 * (--slurm), so another header is refused before anything runs. */
static int read_states(const sweep *s, const sweep_emit_paths *paths, char **header,
                       sweep_point_state *st, np_error *err)
{
    sweep_done done;
    int rc = sweep_simrun_line(paths->simrun, "--csv-header", header, err);
    if (!rc)
        rc = sweep_done_read(paths->csv, *header, &done, err);
    for (int i = 0; !rc && i < s->num_points; i++)
        st[i] = sweep_done_state(&done, s->points[i].run_id);
    if (!rc)
        sweep_done_free(&done);
    return rc;
}

static void emit_run_point(FILE *out, const sweep_emit_paths *paths, const char *how,
                           const char *which, const char *csv_prefix, const char *csv_suffix)
{
    fputs("cd ", out);
    sweep_shell_quote(out, paths->cwd);
    fputs(" && ", out);
    sweep_shell_quote(out, paths->simsweep);
    fprintf(out, " %s %s ", how, which);
    sweep_shell_quote(out, paths->sweep_file);
    fputs(" -o ", out);
    sweep_shell_quote(out, csv_prefix);
    fputs(csv_suffix, out);
    fputs(" --simrun ", out);
    sweep_shell_quote(out, paths->simrun);
    fputc('\n', out);
}

int sweep_emit_jobs(FILE *out, const sweep *s, const sweep_emit_paths *paths, bool retry_failed,
                    np_error *err)
{
    sweep_point_state *st = calloc((size_t)s->num_points + 1, sizeof *st);
    if (!st)
        return np_error_set(err, NP_EXIT_INTERNAL, s->path, "", 0, "out of memory");
    char *header = NULL;
    int rc = np_file_check_target(paths->csv, "-o", NP_FILE_APPEND, err);
    if (!rc)
        rc = read_states(s, paths, &header, st, err);
    for (int i = 0; !rc && i < s->num_points; i++)
        if (sweep_is_pending(st[i], retry_failed))
            emit_run_point(out, paths, "--run-point", s->points[i].run_id, paths->csv, "");
    free(header);
    free(st);
    return rc;
}

/* ---- Slurm -------------------------------------------------------------- */

int sweep_make_dirs(const char *dir, np_error *err)
{
    char *p = strdup(dir);
    if (!p)
        return np_error_set(err, NP_EXIT_INTERNAL, dir, "", 0, "out of memory");
    for (char *c = p + 1;; c++) { /* mkdir -p */
        if (*c != '/' && *c != '\0')
            continue;
        char saved = *c;
        *c = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            int e = errno;
            free(p);
            return np_error_set(err, NP_EXIT_INTERNAL, dir, "", 0, "cannot create the folder: %s",
                                strerror(e));
        }
        *c = saved;
        if (!saved)
            break;
    }
    free(p);
    struct stat st; /* an existing file of that name is no folder */
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return np_error_set(err, NP_EXIT_INTERNAL, dir, "", 0,
                            "cannot create the folder: a file of that name exists");
    return 0;
}

/* "0-3,5,9-11": the indices whose pending[i] is set. */
static void array_spec(FILE *f, const bool *pending, int n)
{
    int first = 1;
    for (int i = 0; i < n; i++) {
        if (!pending[i])
            continue;
        int j = i;
        while (j + 1 < n && pending[j + 1])
            j++;
        fprintf(f, "%s%d", first ? "" : ",", i);
        if (j > i)
            fprintf(f, "-%d", j);
        first = 0;
        i = j;
    }
}

/* An #SBATCH value: double-quoted when it holds a space. */
static void sbatch_value(FILE *f, const char *s)
{
    fprintf(f, strchr(s, ' ') ? "\"%s\"" : "%s", s);
}

static int write_points(const sweep *s, const char *dir, const bool *pending, np_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/points.txt", dir);
    np_file nf;
    int rc = np_file_begin(&nf, path, "--slurm-dir", err);
    if (rc)
        return rc;
    fprintf(nf.f, "# index run_id state: simrun arguments (simsweep --slurm, %s)\n", s->path);
    for (int i = 0; i < s->num_points; i++) {
        const sweep_point *p = &s->points[i];
        fprintf(nf.f, "%d %s %s:", p->index, p->run_id, pending[i] ? "pending" : "done");
        for (int a = 0; a < p->num_args; a++) {
            fputc(' ', nf.f);
            sweep_shell_quote(nf.f, p->args[a]);
        }
        fputc(' ', nf.f);
        sweep_shell_quote(nf.f, p->platform);
        fputc(' ', nf.f);
        sweep_shell_quote(nf.f, p->workload);
        fputc('\n', nf.f);
    }
    return np_file_commit(&nf, err);
}

static int write_sbatch(const sweep *s, const sweep_emit_paths *paths, const char *dir,
                        const bool *pending, int num_pending, int max_running, np_error *err)
{
    char path[4096], frag[4096];
    snprintf(path, sizeof path, "%s/sweep.sbatch", dir);
    snprintf(frag, sizeof frag, "%s/fragments/part-", dir);
    np_file nf;
    int rc = np_file_begin(&nf, path, "--slurm-dir", err);
    if (rc)
        return rc;
    FILE *f = nf.f;
    fprintf(f, "#!/bin/sh\n");
    fprintf(f, "# Written by simsweep --slurm: %d of the %d points of %s, one array task\n",
            num_pending, s->num_points, paths->sweep_file);
    fprintf(f, "# each.  Task i runs point i of points.txt into fragments/part-i.csv; once\n"
               "# the job has ended, join the fragments into the sweep's CSV:\n#   ");
    sweep_shell_quote(f, paths->simsweep);
    fputs(" --merge ", f);
    sweep_shell_quote(f, paths->csv);
    fputc(' ', f);
    sweep_shell_quote(f, dir);
    fputs("/fragments/part-*.csv\n", f);
    fputs("#SBATCH --job-name=simsweep-", f);
    for (const char *c = s->name; *c; c++)
        fputc(strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", *c) ? *c
                                                                                              : '_',
              f);
    fputs("\n#SBATCH --array=", f);
    array_spec(f, pending, s->num_points);
    if (max_running > 0)
        fprintf(f, "%%%d", max_running);
    fputs("\n#SBATCH --output=", f);
    char out[4200];
    snprintf(out, sizeof out, "%s/slurm-%%A_%%a.out", dir);
    sbatch_value(f, out);
    fputs("\n#SBATCH --chdir=", f);
    sbatch_value(f, paths->cwd);
    fputs("\n#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=1\nexec ", f);
    sweep_shell_quote(f, paths->simsweep);
    fputs(" --run-point-index \"$SLURM_ARRAY_TASK_ID\" ", f);
    sweep_shell_quote(f, paths->sweep_file);
    fputs(" -o ", f);
    sweep_shell_quote(f, frag);
    fputs("\"$SLURM_ARRAY_TASK_ID\".csv --simrun ", f);
    sweep_shell_quote(f, paths->simrun);
    fputc('\n', f);
    return np_file_commit(&nf, err);
}

int sweep_slurm(FILE *out, const sweep *s, const sweep_emit_paths *paths, const char *dir,
                bool dry_run, bool retry_failed, int max_running, np_error *err)
{
    sweep_point_state *st = calloc((size_t)s->num_points + 1, sizeof *st);
    bool *pending = calloc((size_t)s->num_points + 1, sizeof *pending);
    int rc =
        st && pending ? 0 : np_error_set(err, NP_EXIT_INTERNAL, s->path, "", 0, "out of memory");
    char *header = NULL;
    if (!rc)
        rc = read_states(s, paths, &header, st, err);
    int num_pending = 0;
    for (int i = 0; !rc && i < s->num_points; i++) {
        /* done in the sweep's CSV, or in this point's fragment from an earlier job */
        char frag[4096];
        snprintf(frag, sizeof frag, "%s/fragments/part-%d.csv", dir, i);
        sweep_done done;
        if (sweep_is_pending(st[i], retry_failed) &&
            (rc = sweep_done_read(frag, header, &done, err)))
            break;
        if (sweep_is_pending(st[i], retry_failed)) {
            sweep_point_state f = sweep_done_state(&done, s->points[i].run_id);
            sweep_done_free(&done);
            if (f == SWEEP_OK || (f == SWEEP_FAILED && !retry_failed))
                continue;
            pending[i] = true;
            num_pending++;
        }
    }
    char fragments[4096];
    snprintf(fragments, sizeof fragments, "%s/fragments", dir);
    if (!rc && num_pending == 0)
        fprintf(stderr, "simsweep: %s: every point has a row in %s or in %s; nothing to submit\n",
                s->name, paths->csv, fragments);
    if (!rc && num_pending > 0 && !(rc = sweep_make_dirs(dir, err)) &&
        !(rc = sweep_make_dirs(fragments, err)) && !(rc = write_points(s, dir, pending, err)))
        rc = write_sbatch(s, paths, dir, pending, num_pending, max_running, err);
    char script[4096];
    snprintf(script, sizeof script, "%s/sweep.sbatch", dir);
    if (!rc && num_pending > 0 && dry_run) {
        fprintf(out, "%s\n", script);
        fprintf(stderr, "simsweep: %s: %d of %d points in %s (not submitted)\n", s->name,
                num_pending, s->num_points, script);
    } else if (!rc && num_pending > 0) {
        char *argv[] = {"sbatch", "--parsable", script, NULL}, *line = NULL, why[512];
        if (sweep_command_output(argv, &line, why, sizeof why) != 0) {
            rc =
                np_error_set(err, NP_EXIT_INTERNAL, script, "--slurm", 0, "sbatch failed: %s", why);
        } else {
            line[strcspn(line, ";")] = '\0'; /* "JOBID;CLUSTER" */
            fprintf(out, "%s\n", line);
            fprintf(stderr,
                    "simsweep: %s: submitted job %s, %d array tasks; then: simsweep "
                    "--merge %s %s/part-*.csv\n",
                    s->name, line, num_pending, paths->csv, fragments);
        }
        free(line);
    }
    free(header);
    free(st);
    free(pending);
    return rc;
}
