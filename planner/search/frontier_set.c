/*
 * frontier_set.c -- Pareto sets of (time, memory) points and their algebra
 * (frontier.h, part 1): prune, union and the Pareto-sum.
 *
 * Sets.  A frontier is pruned by sorting on time and keeping strictly
 * decreasing memory (O(n log n)); the Pareto-sum enumerates the |A|·|B| pairs
 * and prunes.  Comparisons use a relative tolerance of 1e-9, so that the same
 * sum taken in two orders is one point, not two.
 */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontier.h"

void frontier_set_init(frontier_set *f) { memset(f, 0, sizeof *f); }

void frontier_set_free(frontier_set *f)
{
    free(f->points);
    memset(f, 0, sizeof *f);
}

int frontier_set_add(frontier_set *f, double time_s, double memory_bytes, int left, int right)
{
    if (f->count == f->capacity) {
        int cap = f->capacity ? 2 * f->capacity : 16;
        frontier_point *pts = realloc(f->points, (size_t)cap * sizeof *pts);
        if (!pts)
            return -1;
        f->points = pts;
        f->capacity = cap;
    }
    f->points[f->count++] = (frontier_point){time_s, memory_bytes, left, right};
    return 0;
}

static bool near_equal(double a, double b)
{
    return fabs(a - b) <= FRONTIER_TOLERANCE * fmax(fabs(a), fabs(b));
}

static bool no_greater(double a, double b) { return a <= b || near_equal(a, b); }

bool frontier_dominates(const frontier_point *q, const frontier_point *p)
{
    if (!no_greater(q->time_s, p->time_s) || !no_greater(q->memory_bytes, p->memory_bytes))
        return false;
    return !(near_equal(q->time_s, p->time_s) && near_equal(q->memory_bytes, p->memory_bytes));
}

static int point_compare(const void *a, const void *b)
{
    const frontier_point *x = a, *y = b;
    if (x->time_s != y->time_s)
        return x->time_s < y->time_s ? -1 : 1;
    if (x->memory_bytes != y->memory_bytes)
        return x->memory_bytes < y->memory_bytes ? -1 : 1;
    return 0;
}

static bool set_sorted(const frontier_set *f)
{
    for (int i = 1; i < f->count; i++)
        if (point_compare(&f->points[i - 1], &f->points[i]) > 0)
            return false;
    return true;
}

void frontier_prune(frontier_set *f)
{
    if (f->count < 2)
        return;
    if (!set_sorted(f)) /* sums with one point and merged unions already are */
        qsort(f->points, (size_t)f->count, sizeof *f->points, point_compare);
    int kept = 0;
    for (int i = 0; i < f->count; i++) {
        frontier_point p = f->points[i];
        if (kept) {
            const frontier_point *last = &f->points[kept - 1];
            if (no_greater(last->memory_bytes, p.memory_bytes))
                continue; /* as fast or faster, with no more memory */
        }
        /* p has strictly less memory; a kept point of (nearly) the same time
         * is dominated by it. */
        while (kept && near_equal(f->points[kept - 1].time_s, p.time_s))
            kept--;
        f->points[kept++] = p;
    }
    f->count = kept;
}

static void set_move(frontier_set *dst, frontier_set *src)
{
    free(dst->points);
    *dst = *src;
    frontier_set_init(src);
}

/* Appends the points of a and b, merged in order when both are sorted (the
 * usual case: pruned frontiers), so that the prune needs no sort. */
static int union_points(const frontier_set *a, const frontier_set *b, frontier_set *tmp)
{
    bool merge = set_sorted(a) && set_sorted(b);
    int i = 0, j = 0;
    while (i < a->count || j < b->count) {
        bool from_a = j == b->count;
        if (!from_a && i < a->count)
            from_a = !merge || point_compare(&a->points[i], &b->points[j]) <= 0;
        const frontier_point *p = from_a ? &a->points[i++] : &b->points[j++];
        if (frontier_set_add(tmp, p->time_s, p->memory_bytes, p->left, p->right))
            return -1;
    }
    return 0;
}

int frontier_union(const frontier_set *a, const frontier_set *b, frontier_set *out)
{
    frontier_set tmp;
    frontier_set_init(&tmp);
    if (union_points(a, b, &tmp)) {
        frontier_set_free(&tmp);
        return -1;
    }
    frontier_prune(&tmp);
    set_move(out, &tmp);
    return 0;
}

int frontier_sum(const frontier_set *a, const frontier_set *b, frontier_set *out)
{
    frontier_set tmp;
    frontier_set_init(&tmp);
    for (int i = 0; i < a->count; i++)
        for (int j = 0; j < b->count; j++) {
            const frontier_point *p = &a->points[i], *q = &b->points[j];
            if (frontier_set_add(&tmp, p->time_s + q->time_s, p->memory_bytes + q->memory_bytes, i,
                                 j)) {
                frontier_set_free(&tmp);
                return -1;
            }
        }
    frontier_prune(&tmp);
    set_move(out, &tmp);
    return 0;
}
