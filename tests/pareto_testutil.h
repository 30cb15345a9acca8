/*
 * pareto_testutil.h -- the brute-force Pareto filter the frontier tests
 * check TensorOpt's frontier tracking against (test_frontier.c,
 * test_frontier_job.c): points (time, memory), the O(n²) definition of
 * dominance, and a comparison of a frontier set with a brute-force list.
 */
#ifndef NPUSIM_PARETO_TESTUTIL_H
#define NPUSIM_PARETO_TESTUTIL_H

#include <stdbool.h>

#include "frontier.h"

#define PARETO_TOL 1e-9 /* relative: points this close are the same point */

typedef struct point2 {
    double t, m;
} point2;

typedef struct point_list {
    int count, capacity;
    point2 *p;
} point_list;

void list_add(point_list *l, double t, double m);
/* a and b within PARETO_TOL of the larger */
bool close_to(double a, double b);
/* Non-dominated points of l, one per group of equal points. */
point_list pareto_brute(const point_list *l);
/* Every point of the frontier set is one of the brute-force points and the
 * counts are equal (CUnit assertions). */
void assert_same_points(const frontier_set *f, const point_list *brute);

#endif
