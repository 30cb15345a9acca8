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

/* Every output of the run, checked before anything is simulated
 * (np_file_check_target): --csv is appended to; --frontier, --plan-out and
 * --trace are replaced, the last two once per planner under --planner all
 * (several), as output_path() names them. */
int check_outputs(const cli *c, int several, np_error *err)
{
    int rc;
    if (c->csv_path && (rc = np_file_check_target(c->csv_path, "--csv", NP_FILE_APPEND, err)))
        return rc;
    /* rows are appended under the file's own header: a file of an older
     * simrun (fewer columns) is refused before anything is simulated */
    if (c->csv_path && (rc = report_csv_check_header(c->csv_path, err)))
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

int fail(const np_error *err)
{
    char buf[1400];
    fprintf(stderr, "simrun: %s\n", np_error_format(err, buf, sizeof buf));
    return err->code ? err->code : NP_EXIT_INTERNAL;
}
