/*
 * np_error.h -- the one error type of npusim.
 *
 * Modelled on jansson's json_error_t: every loader and every planner that can
 * fail on user input fills one of these and returns a non-zero code; nothing in
 * planner/ or sim/ prints or exits on user input.  The CLI prints
 * np_error_format() on one line and exits with the code the error carries.
 *
 * The message names where the problem is (file, and key or line when known)
 * and what was expected, e.g.
 *   workloads/llama.json: parallel.tensor_model_parallel_size: expected a
 *   positive integer, got "eight"
 */
#ifndef NP_ERROR_H
#define NP_ERROR_H

#include <stdarg.h>

/* Process exit codes of every npusim command (documented in README.md). */
enum np_exit_code {
    NP_EXIT_OK = 0,
    NP_EXIT_USAGE = 1,    /* bad command line */
    NP_EXIT_INPUT = 2,    /* bad or missing workload / platform / plan file */
    NP_EXIT_NOFIT = 3,    /* the plan does not fit in device memory */
    NP_EXIT_INTERNAL = 4, /* simulation or output failure (e.g. cannot write CSV) */
};

typedef struct np_error {
    int code;         /* an np_exit_code; NP_EXIT_OK when no error was set */
    char source[256]; /* file name, or "<command line>" */
    char key[128];    /* dotted JSON key, XML property name, or "" */
    int line;         /* 1-based line in source, or 0 when unknown */
    char text[768];   /* what is wrong and what was expected */
} np_error;

void np_error_clear(np_error *err);

/* Sets err (when err != NULL) and returns code, so callers can write
 *   return np_error_set(err, NP_EXIT_INPUT, path, "model.hidden_size", 0, "...");
 */
int np_error_set(np_error *err, int code, const char *source, const char *key, int line,
                 const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* "source:line: key: text" with the parts that are unknown left out. */
const char *np_error_format(const np_error *err, char *buf, int size);

#endif
