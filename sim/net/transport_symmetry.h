/*
 * transport_symmetry.h -- one flow for the tp flows of a TP group (the exact
 * TP fold; transport_symmetry.c has the argument, docs/design.md the figures).
 *
 * A transfer between two TP groups posts one flow per TP rank, rank r to
 * rank r, all of the same size and at the same instant.  Where the platform
 * treats the tp ranks alike (each rank's route is links of its own plus links
 * every rank's route shares) the max-min fair rates of those tp flows are
 * equal at every instant, so simulating rank 0's flow alone, on shared links
 * of 1/tp of their bandwidth, gives every flow the time it would have had.
 * This module checks that condition on the routes of every pair of groups
 * that exchange data (once per pair), labels each link it meets, and scales
 * the shared ones.
 */
#ifndef SIM_TRANSPORT_SYMMETRY_H
#define SIM_TRANSPORT_SYMMETRY_H

#include <stdbool.h>
#include <stddef.h>

#include "transport.h"

typedef struct tp_symmetry tp_symmetry;

/* A checker for groups of tp NPUs; NULL when out of memory. */
tp_symmetry *tp_symmetry_new(int tp);

/* Whether the flows of a transfer from `from` to `to` on t's fabric (its
 * legs as transport_start would post them) are tp copies of rank 0's: the
 * same number of legs and the same scale-up wait for every rank, and for
 * each leg a route of links shared by all tp ranks' routes plus links of the
 * rank's own, those being the same rank's own links in every pair checked,
 * matched one to one with rank 0's (equal bandwidth, latency and sharing).
 * The labels found are kept, so later pairs must agree with them.  A pair
 * already checked costs a hash look-up.  false with the reason in why. */
bool tp_symmetry_check(tp_symmetry *s, transport *t, const endpoint *from, const endpoint *to,
                       char *why, size_t why_size);

/* From now on the shared links found (those so far and later ones) carry
 * 1/tp of their bandwidth, when they are shared (not FATPIPE). */
void tp_symmetry_apply(tp_symmetry *s);

/* Frees s and gives the links it scaled their bandwidth back. */
void tp_symmetry_free(tp_symmetry *s);

#endif
