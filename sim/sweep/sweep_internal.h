/*
 * sweep_internal.h -- what sweep_file.c (reading and checking) and
 * sweep_point.c (expanding) share.
 */
#ifndef SIM_SWEEP_INTERNAL_H
#define SIM_SWEEP_INTERNAL_H

#include <jansson.h>

#include "sweep.h"

/* Expands the checked sweep file root into s->points (sweep_load() has set
 * s->path, s->name and s->csv).  0, or an error naming the file. */
int sweep_expand(sweep *s, json_t *root, np_error *err);

#endif
