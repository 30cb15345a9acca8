/*
 * sweep.h -- simsweep's library: research sweeps of simrun runs, from one
 * laptop to a Slurm cluster (docs/sweeps.md).
 *
 * A sweep file (JSON) names platforms, workloads, the simrun options and
 * workload keys to vary, and fixed options; it expands to points, each one
 * simrun command with a run id derived from what the point is.  simsweep runs
 * points as simrun processes (it never links the engine: this layer uses
 * planner/model only, for np_error, np_file and np_sha256), each appending
 * its own CSV row under the file's lock, and records the points that fail.
 *
 *   sweep_file.c   reading and checking the sweep file; simrun's options
 *   sweep_point.c  expanding it into points, their arguments, canonical text
 *                  and run ids
 *   sweep_check.c  the checks of the points before any runs (workload keys,
 *                  spellings, "planner": "all")
 *   sweep_files.c  the files of a sweep: none written by two of the points and
 *                  simsweep, none written while another reads it
 *   sweep_csv.c    the RFC 4180 reader, the finished-points index, --merge
 *   sweep_lock.c   one sweep at a time per output CSV (CSV.lock)
 *   sweep_row.c    the rows simsweep writes for failed points
 *   sweep_run.c    running points as child processes: the local runner,
 *                  one point (--run-point), signals and progress
 *   sweep_emit.c   shell quoting, --emit-jobs and --slurm
 *
 * Exit codes of simsweep (SWEEP_EXIT_*, besides np_exit_code's 1, 2 and 4).
 */
#ifndef SIM_SWEEP_H
#define SIM_SWEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "np_error.h"

enum {
    SWEEP_EXIT_FAILED = 3,        /* some points failed; their rows say why */
    SWEEP_EXIT_INTERRUPTED = 130, /* SIGINT or SIGTERM: finished rows kept */
    SWEEP_RUN_ID_SIZE = 17,       /* 16 hex digits and NUL */
    SWEEP_MAX_POINTS = 1000000,   /* an expansion larger than this is refused */
};

/* ---- sweep_file.c, sweep_point.c ------------------------------------------------------- */

/* How simrun takes an argument that starts with "--". */
typedef enum sweep_option_kind {
    SWEEP_OPT_UNKNOWN = 0,
    SWEEP_OPT_VALUE,   /* "--schedule NAME": the value is the next argument */
    SWEEP_OPT_FLAG,    /* "--dp-overlap" */
    SWEEP_OPT_JOINED,  /* "--cfg=NAME:VALUE", "--log=...": one argument */
    SWEEP_OPT_MANAGED, /* --csv, --quiet, --run-id, ...: simsweep sets them */
} sweep_option_kind;

/* The kind of simrun argument arg (for "--cfg" alone: SWEEP_OPT_JOINED). */
sweep_option_kind sweep_option_kind_of(const char *arg);

/* One point: a simrun command and its identity. */
typedef struct sweep_point {
    int index; /* in the expansion, from 0 (--run-point-index, Slurm's task id) */
    char run_id[SWEEP_RUN_ID_SIZE];
    char *platform, *workload; /* as written in the sweep file */
    /* simrun's options for the point: the sweep's fixed "options", then the
     * point's own options sorted by name, then its "--set KEY=VALUE" pairs
     * sorted by key (later ones win in simrun, so the point's own values
     * override fixed ones). */
    char **args;
    int num_args;
    int first_own_arg; /* args[first_own_arg...] are the point's own */
    char *canonical;   /* the text whose SHA-256 gives run_id */
} sweep_point;

typedef struct sweep {
    char *path; /* the sweep file, as given */
    char *name; /* "name", or the file's base name without .json */
    char *csv;  /* "csv", or NULL */
    sweep_point *points;
    int num_points;
    int duplicates; /* points dropped: an earlier one had the same run id */
} sweep;

/* Reads and checks the sweep file and expands its points (platform-major,
 * then workload, then the cartesian product of "vary" with its last key
 * varying fastest, then "points" in order).  0, or NP_EXIT_INPUT with err
 * naming the file and the key; *s is then empty.  Free with sweep_free(). */
int sweep_load(const char *path, sweep *s, np_error *err);
void sweep_free(sweep *s);

/* What simsweep itself reads and writes for a run, besides the sweep file,
 * its platforms, workloads and the points' own files (sweep_files.c). */
typedef struct sweep_files {
    const char *csv;       /* the output CSV, or NULL (--dry-run without one) */
    const char *csv_key;   /* where the CSV was named: "-o" or "csv" */
    const char *slurm_dir; /* --slurm-dir (or its default), or NULL */
    const char *simrun;    /* the simrun executable (a name without '/' is not checked) */
    const char *simsweep;  /* simsweep's executable, or NULL */
} sweep_files;

/* Refuses a sweep where one file is written by two of: the points
 * (--trace, --plan-out, --frontier; one point's own files are simrun's to
 * check) and simsweep (the CSV, CSV.lock, and in --slurm-dir sweep.sbatch,
 * points.txt, fragments/part-I.csv and its lock, Slurm's slurm-*.out), or
 * written by one and read by another (the sweep file, the platforms and
 * workloads, --plan, --moe-trace, a workload's model.moe_token_trace,
 * simrun, simsweep).  Files are the same by canonical name (symbolic links
 * resolved) or, when they exist, by device and inode.  f may be NULL (the
 * sweep file's own files only: sweep_load() checks those).  0, or an error
 * naming the sweep file and the point's option (NP_EXIT_INPUT), or the file
 * simsweep would write and its option (-o, --slurm-dir: NP_EXIT_USAGE). */
int sweep_check_files(const sweep *s, const sweep_files *f, np_error *err);

/* The point with this run id, or NULL. */
const sweep_point *sweep_find(const sweep *s, const char *run_id);

/* The run id of a canonical text: the first 16 hex digits of its SHA-256. */
void sweep_run_id(const char *canonical, char run_id[SWEEP_RUN_ID_SIZE]);

/* The simrun command of a point, NULL-terminated (free() the array only; it
 * points into p): SIMRUN --quiet --run-id ID --csv CSV ARGS... PLATFORM
 * WORKLOAD.  NULL when out of memory. */
char **sweep_point_argv(const sweep_point *p, const char *simrun, const char *csv);

/* ---- sweep_csv.c -------------------------------------------------------- */

typedef struct csv_record {
    char **fields;
    int num_fields;
    const char *raw; /* the record's bytes in the file, line end included */
    size_t raw_len;
    int line; /* 1-based line where it starts */
} csv_record;

typedef struct csv_table {
    char *text; /* the whole file, as read */
    size_t len;
    char *fields;  /* the unquoted fields, at their offsets in text */
    char **header; /* the first record's fields (NULL for an empty file) */
    int num_columns;
    const char *header_raw; /* the header line in text */
    size_t header_len;      /* its bytes, line end excluded */
    csv_record *records;
    int num_records;
    bool bom; /* the text starts with a UTF-8 byte-order mark, skipped */
} csv_table;

/* Parses RFC 4180 text (quoted fields with commas, doubled quotes, CR and
 * LF; CRLF or LF line ends; empty lines skipped; a leading UTF-8 byte-order
 * mark, as Excel saves a CSV, skipped and said in t->bom).  Takes ownership of text
 * (malloc'd, one byte past len writable).  Every record must have the
 * header's column count and end with a line end: a last line without one is
 * a partial row (a writer killed mid-write), an error naming the line.
 * 0, or NP_EXIT_INPUT with err naming source and line. */
int csv_parse(const char *source, char *text, size_t len, csv_table *t, np_error *err);

/* csv_parse() of the file at path, read under a shared lock (appenders hold
 * the exclusive one, so no row is seen half-written).  A missing file is an
 * empty table with *missing set (missing may be NULL). */
int csv_read(const char *path, csv_table *t, bool *missing, np_error *err);

/* The index of column name, or -1. */
int csv_column(const csv_table *t, const char *name);
void csv_free(csv_table *t);

/* What a CSV already holds for a sweep: run id -> whether some row of it is
 * "ok" (else only "failed" rows). */
typedef struct sweep_done {
    struct sweep_done_entry {
        char *run_id;
        bool ok;
    } * entries;
    int count;
} sweep_done;

typedef enum sweep_point_state { SWEEP_NEW = 0, SWEEP_FAILED, SWEEP_OK } sweep_point_state;

/* Reads the finished run ids of a CSV (a missing or empty file has none).
 * When header is not NULL (rows will be appended) an existing header must
 * equal it, without a byte-order mark.  0, or NP_EXIT_INPUT naming the file
 * (no run_id column, another header, a byte-order mark, a partial last row, a
 * malformed record). */
int sweep_done_read(const char *path, const char *header, sweep_done *d, np_error *err);

/* Whether a row may be appended to path under header: a missing or empty
 * file, or one whose first line is header (no byte-order mark).  Reads the
 * first line only, under a shared lock.  0, or NP_EXIT_INPUT naming the file
 * (NP_EXIT_INTERNAL when it cannot be read). */
int sweep_check_header(const char *path, const char *header, np_error *err);
sweep_point_state sweep_done_state(const sweep_done *d, const char *run_id);
void sweep_done_free(sweep_done *d);

/* Whether a point in this state is run: new ones always, failed ones with
 * --retry-failed. */
bool sweep_is_pending(sweep_point_state st, bool retry_failed);

/* --merge: OUT (when it exists) and the fragments joined under one header
 * (written without a byte-order mark), one row per result: per run id, its
 * "ok" rows, one per planner and MoE policy (--planner all, --moe-policy all
 * write several under one run id), else its first "failed" row; in the order
 * run ids first appear; written whole or not at all (np_file).
 * Every file must have the same header; empty files are skipped.  *kept and
 * *dropped (may be NULL) count the rows.  0, NP_EXIT_INPUT or
 * NP_EXIT_INTERNAL. */
int sweep_merge(const char *out, const char *const *fragments, int num_fragments, int *kept,
                int *dropped, np_error *err);

/* ---- sweep_lock.c ------------------------------------------------------- */

/* A lock on an output CSV against a second sweep running into it: a flock on
 * CSV.lock (left in place), exclusive for the local runner and --merge (its
 * pid written in the file), shared for --run-point jobs. */
typedef struct sweep_lock {
    int fd; /* -1 when not held */
    char *path;
    bool exclusive;
} sweep_lock;

/* Takes the lock without waiting.  0, or NP_EXIT_INTERNAL naming csv and
 * whoever holds it (a simsweep and its pid, or --run-point jobs). */
int sweep_lock_take(sweep_lock *l, const char *csv, bool exclusive, np_error *err);
void sweep_lock_release(sweep_lock *l);

/* ---- sweep_row.c -------------------------------------------------------- */

/* The value simrun writes in column `name` for a run that does not give the
 * option ("ring-flow" for dp_algorithm, "0" for fold_dp, ...), or NULL for
 * a column without one. */
const char *sweep_column_default(const char *name);

/* The row simsweep appends for a point that failed: the identity columns
 * (platform, workload, planner and schedule when given, overrides, run_id,
 * the option columns, plan_file and plan_sha256, cfg, simulator_version)
 * filled from the point's arguments, status "failed", exit_code and error,
 * every result column empty.  header is simrun's (--csv-header), version
 * its simulator_version.  The row ends with '\n'; free() it; NULL when out of
 * memory. */
char *sweep_failure_row(const char *header, const sweep_point *p, const char *version,
                        int exit_code, const char *error, size_t *len);

/* ---- sweep_run.c -------------------------------------------------------- */

typedef struct sweep_run_options {
    const char *simrun; /* the simrun executable */
    const char *csv;    /* the output CSV */
    int jobs;           /* simultaneous simrun processes */
    bool quiet;         /* no progress, no failure lines */
    bool retry_failed;  /* re-run points whose rows are all "failed" */
} sweep_run_options;

/* Runs argv (argv[0] searched in PATH when it has no '/') to its end: 0 with
 * *out the first line of its standard output (malloc'd), or -1 with why
 * saying what went wrong (its first line on stderr, or its exit). */
int sweep_command_output(char *const argv[], char **out, char *why, size_t why_size);

/* The first line of `simrun ARG`'s standard output (--csv-header,
 * --version), malloc'd.  0, or NP_EXIT_INTERNAL naming the executable. */
int sweep_simrun_line(const char *simrun, const char *arg, char **line, np_error *err);

/* Runs the pending points of s, o->jobs at a time, until all have run or a
 * SIGINT/SIGTERM stops it (then the signal is forwarded to the running
 * points, which are waited for).  Returns the exit code: 0 every point has
 * an "ok" row, SWEEP_EXIT_FAILED some have only "failed" ones,
 * SWEEP_EXIT_INTERRUPTED, or an np_exit_code with err set. */
int sweep_run_local(const sweep *s, const sweep_run_options *o, np_error *err);

/* Runs one point (--run-point, --run-point-index) unless the CSV already
 * holds an "ok" row for it, recording a failure as sweep_run_local() does.
 * Returns 0, SWEEP_EXIT_FAILED (recorded), SWEEP_EXIT_INTERRUPTED, or an
 * np_exit_code with err set. */
int sweep_run_point(const sweep *s, const sweep_point *p, const sweep_run_options *o,
                    np_error *err);

/* ---- sweep_emit.c ------------------------------------------------------- */

/* s single-quoted for sh when it holds anything but [A-Za-z0-9_./:=@%+,-]. */
void sweep_shell_quote(FILE *f, const char *s);

/* Absolute paths the emitted commands use. */
typedef struct sweep_emit_paths {
    const char *simsweep, *simrun, *sweep_file, *csv, *cwd;
} sweep_emit_paths;

/* mkdir -p dir.  0, or NP_EXIT_INTERNAL naming the folder. */
int sweep_make_dirs(const char *dir, np_error *err);

/* --emit-jobs: one line per pending point, "cd CWD && SIMSWEEP --run-point
 * ID SWEEP -o CSV --simrun SIMRUN", every word quoted for sh. */
int sweep_emit_jobs(FILE *out, const sweep *s, const sweep_emit_paths *paths, bool retry_failed,
                    np_error *err);

/* --slurm: writes DIR/sweep.sbatch (a job array of the pending points, task i
 * running --run-point-index i into DIR/fragments/part-i.csv), DIR/points.txt
 * and DIR/fragments/; submits it with sbatch unless dry_run and prints the
 * job id on out.  max_running > 0 limits the simultaneous tasks (%N). */
int sweep_slurm(FILE *out, const sweep *s, const sweep_emit_paths *paths, const char *dir,
                bool dry_run, bool retry_failed, int max_running, np_error *err);

#endif
