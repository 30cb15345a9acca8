/*
 * sweep_internal.h -- what sweep_file.c (reading and checking the file),
 * sweep_point.c (expanding it), sweep_check.c and sweep_files.c (checking
 * the points) share.
 */
#ifndef SIM_SWEEP_INTERNAL_H
#define SIM_SWEEP_INTERNAL_H

#include <jansson.h>

#include "sweep.h"

/* Expands the checked sweep file root into s->points (sweep_load() has set
 * s->path, s->name and s->csv).  0, or an error naming the file. */
int sweep_expand(sweep *s, json_t *root, np_error *err);

/* The checks of the expanded points (sweep_check.c): workload keys that
 * exist and are set in one spelling, files no two points write
 * (sweep_check_files), no workload of "planner": "all".  0, or an error
 * naming the file. */
int sweep_check_points(const sweep *s, np_error *err);

/* path as a comparable name (sweep_files.c): made absolute against cwd, its
 * longest existing prefix with symbolic links resolved (realpath), the rest
 * appended with "." dropped and ".." folded.  malloc'd; NULL when out of
 * memory. */
char *sweep_canonical_path(const char *path, const char *cwd);

#endif
