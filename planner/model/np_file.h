/*
 * np_file.h -- output files that are written whole or not at all.
 *
 * Every file npusim writes goes through here, so that no input, no full disk
 * and no odd target destroys a file:
 *
 *   - A whole file (--trace, --plan-out, --frontier) is written to a
 *     temporary file in the target's folder and renamed onto the target only
 *     after a complete, flushed, fsync'ed and closed write:
 *
 *         np_file out;
 *         if (np_file_begin(&out, path, "--trace", err))
 *             return err->code;
 *         fprintf(out.f, ...);                  (any stdio on out.f)
 *         return np_file_commit(&out, err);     (or np_file_abort(&out))
 *
 *     A failed write leaves the target as it was and removes only the
 *     temporary file.  A symbolic link is followed: the file it names is
 *     replaced and the link stays.  The new file keeps an existing target's
 *     mode (and owner, when we may set it); a new one gets 0666 & ~umask.
 *
 *   - A record (a CSV row) is appended with np_file_append(): the file is
 *     opened O_APPEND, locked (flock, or fcntl where flock is missing), the
 *     header is added when the file is empty under the lock, and header and
 *     record go out in one write() loop of one buffer.  Concurrent writers
 *     therefore never interleave or duplicate the header, however long the
 *     row; a failed write truncates the file back to its size before it.
 *     SIGINT, SIGTERM, SIGHUP and SIGQUIT are held back during the write, so
 *     a process stopped by one of them leaves no part of a row.
 *
 * Targets refused (np_file_check_target(), also run by np_file_begin() and
 * np_file_append()): a directory, anything that is not a regular file
 * (device, FIFO, socket), a dangling symbolic link, a regular file we may not
 * write or that has no write permission bit at all (root bypasses the mode
 * bits, so a 0444 file is still treated as read-only for root), and a target
 * whose folder is missing or where we cannot create files.  A CLI calls the
 * check before simulating, so a bad output path costs no simulation time.
 *
 * Errors carry NP_EXIT_INTERNAL (the documented "output failure" exit code),
 * the path as source and the caller's key (the option, e.g. "--csv").
 *
 * This layer uses POSIX and stdio only (no SimGrid, no jansson).
 */
#ifndef NP_FILE_H
#define NP_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "np_error.h"

typedef enum np_file_mode {
    NP_FILE_REPLACE, /* the whole file is written (temporary file + rename) */
    NP_FILE_APPEND,  /* records are appended (np_file_append) */
} np_file_mode;

/* Whether path can be written in this mode without destroying anything:
 * 0, or NP_EXIT_INTERNAL with err naming path, key and the reason.  For
 * NP_FILE_REPLACE the folder must allow creating the temporary file; for
 * NP_FILE_APPEND an existing writable regular file is enough. */
int np_file_check_target(const char *path, const char *key, np_file_mode mode, np_error *err);

/* Whether paths a and b name the same file: the same device and inode when
 * both exist, else the same folder (symbolic links resolved) and name.  A
 * CLI refuses an output that is one of its inputs or another output. */
bool np_file_same(const char *a, const char *b);

/* Reads the whole of a regular file of at most max_bytes into a new
 * NUL-terminated buffer (*len bytes before the NUL; the caller frees it).
 * Anything else is refused before it is read: a directory, a device such as
 * /dev/zero, a FIFO (opened without blocking, so a reader never hangs on
 * one), and a larger file.  0, or NP_EXIT_INPUT with err naming path and
 * "cannot open WHAT: <system error>" or "cannot read WHAT: not a regular
 * file" / "larger than N MiB" / "<system error>". */
int np_file_read(const char *path, const char *what, size_t max_bytes, char **text, size_t *len,
                 np_error *err);

/* Whether text starts with a UTF-8 byte-order mark (EF BB BF), which JSON
 * does not allow: the readers say so instead of a syntax error at an
 * invisible character. */
bool np_text_has_bom(const char *text, size_t len);
#define NP_BOM_TEXT                                                                                \
    "the file starts with a UTF-8 byte-order mark (EF BB BF), which JSON does not allow: "         \
    "save it without one"

/* A whole-file write in progress. */
typedef struct np_file {
    FILE *f;         /* write here (fully buffered; setvbuf() it if wanted) */
    char *target;    /* the file replaced on commit (symbolic links resolved) */
    char *tmp;       /* the temporary file in target's folder */
    char path[1024]; /* the path as given, for messages */
    char key[64];    /* the caller's key, for messages */
} np_file;

/* Checks path (np_file_check_target, NP_FILE_REPLACE) and opens the
 * temporary file.  On failure nothing is left open or created. */
int np_file_begin(np_file *nf, const char *path, const char *key, np_error *err);

/* Flushes, fsyncs and closes the temporary file and renames it onto the
 * target (then fsyncs the folder).  On any failure the temporary file is
 * removed, the target is untouched, and err names the path.  nf is released
 * either way. */
int np_file_commit(np_file *nf, np_error *err);

/* Closes and removes the temporary file; the target is untouched.  Safe on a
 * released or zeroed np_file. */
void np_file_abort(np_file *nf);

/* Appends `len` bytes of record to path, preceded by the line header and a
 * newline (when header is not NULL) if the file is empty, as described above.  0, or
 * NP_EXIT_INTERNAL with err naming path and key. */
/* Writes one CSV field to f, quoted as RFC 4180 asks when it holds a comma,
 * a quote, a CR or an LF (quotes doubled), so that a row stays one record
 * whatever a path, a planner name or an override holds.  NULL is "". */
void np_csv_field(FILE *f, const char *s);

/* Flushes standard output at a tool's exit: a table, listing or --help that
 * did not reach its reader (TOOL > /dev/full) is an output failure, said on
 * stderr as "program: cannot write standard output: ...".  0 or
 * NP_EXIT_INTERNAL. */
int np_stdout_finish(const char *program);

/* What an appended file whose last record has no line end is told: the
 * next record would be glued to it (np_file_append, and the CSV readers'
 * checks before a run). */
#define NP_CUT_ROW_TEXT                                                                            \
    "the last row has no line end (cut short: a run stopped while writing, or an edit); a "        \
    "new row would be glued to it: complete or remove that line, or write to a new file"

/* Opens path for reading under a shared lock (released by fclose), so that
 * no record another process is appending (np_file_append holds the
 * exclusive lock while it writes) is seen half-written.  NULL as fopen. */
FILE *np_file_open_shared(const char *path);

int np_file_append(const char *path, const char *key, const char *header, const char *record,
                   size_t len, np_error *err);

#endif
