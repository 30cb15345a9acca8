/*
 * np_json.h -- a JSON input file read whole and parsed (the plan, the sweep
 * file): np_file_read()'s checks (a regular file of bounded size, never a
 * FIFO read for ever), then jansson's parser on the text.
 *
 * The workload reader (workload.c) reads the text itself with
 * np_file_read(), as it also scans it for numbers below the smallest double
 * and for a platform given in its place.
 */
#ifndef NP_JSON_H
#define NP_JSON_H

#include <jansson.h>
#include <stddef.h>

#include "np_error.h"

/* The JSON value of the file at path (json_loadb() with `flags`), or NULL
 * with err set (NP_EXIT_INPUT, naming path): the file cannot be read ("cannot
 * read WHAT: ..."), starts with a UTF-8 byte-order mark (line 1), or is not
 * JSON (jansson's text, at its line).  err may be NULL. */
json_t *np_json_read(const char *path, const char *what, size_t max_bytes, size_t flags,
                     np_error *err);

#endif
