/* testutil.c -- see testutil.h. */
#include "testutil.h"

#include <stdio.h>

const char *test_path(const char *relative)
{
    static char bufs[8][1024];
    static int next;
    char *b = bufs[next++ % 8];
    snprintf(b, sizeof bufs[0], "%s/%s", NPUSIM_SOURCE_DIR, relative);
    return b;
}

double test_rel_diff(double a, double b)
{
    double scale = fmax(fmax(fabs(a), fabs(b)), 1e-300);
    return fabs(a - b) / scale;
}

void test_add_suite(const char *name, const test_case *cases, int count)
{
    CU_pSuite suite = CU_add_suite(name, NULL, NULL);
    for (int i = 0; i < count; i++)
        CU_add_test(suite, cases[i].name, cases[i].fn);
}
