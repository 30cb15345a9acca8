/*
 * pareto_testutil.c -- the brute-force Pareto filter (pareto_testutil.h).
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "pareto_testutil.h"

void list_add(point_list *l, double t, double m)
{
    if (l->count == l->capacity) {
        l->capacity = l->capacity ? 2 * l->capacity : 256;
        l->p = realloc(l->p, (size_t)l->capacity * sizeof *l->p);
    }
    l->p[l->count++] = (point2){t, m};
}

bool close_to(double a, double b) { return fabs(a - b) <= PARETO_TOL * fmax(fabs(a), fabs(b)); }

static bool at_most(double a, double b) { return a <= b || close_to(a, b); }

/* The definition: q dominates p when q is no worse in both coordinates and
 * not the same point. */
static bool dominated_by(point2 q, point2 p)
{
    return at_most(q.t, p.t) && at_most(q.m, p.m) && !(close_to(q.t, p.t) && close_to(q.m, p.m));
}

point_list pareto_brute(const point_list *l)
{
    point_list out = {0};
    for (int i = 0; i < l->count; i++) {
        bool keep = true;
        for (int j = 0; j < l->count && keep; j++)
            keep = !dominated_by(l->p[j], l->p[i]);
        for (int k = 0; k < out.count && keep; k++)
            keep = !(close_to(out.p[k].t, l->p[i].t) && close_to(out.p[k].m, l->p[i].m));
        if (keep)
            list_add(&out, l->p[i].t, l->p[i].m);
    }
    return out;
}

void assert_same_points(const frontier_set *f, const point_list *brute)
{
    CU_ASSERT_EQUAL(f->count, brute->count);
    for (int i = 0; i < f->count; i++) {
        bool found = false;
        for (int k = 0; k < brute->count && !found; k++)
            found = close_to(brute->p[k].t, f->points[i].time_s) &&
                    close_to(brute->p[k].m, f->points[i].memory_bytes);
        if (!found)
            fprintf(stderr, "\n  frontier point (%.12g, %.12g) is not a brute-force point\n",
                    f->points[i].time_s, f->points[i].memory_bytes);
        CU_ASSERT(found);
    }
}
