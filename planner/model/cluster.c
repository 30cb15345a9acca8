/* cluster.c -- alpha-beta estimates on a cl_cluster and the parser of the
 * optional gemm_efficiency_table property (see cluster.h). */
#include "cluster.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

long cl_bruck_blocks(int n, int k)
{
    long period = 2L << k, half = 1L << k;
    long rest = n % period - half;
    return n / period * half + (rest > 0 ? rest : 0);
}

double cl_p2p_time(const cl_cluster *c, double bytes, int same_node)
{
    if (same_node)
        return c->scaleup_latency_s + bytes / c->scaleup_bandwidth_Bps;
    return c->scaleout_latency_s + bytes / c->scaleout_bandwidth_Bps;
}

/* Reads one number at *p (strtod syntax, spaces around it); advances *p. */
static int read_number(const char **p, double *out)
{
    char *end;
    errno = 0;
    *out = strtod(*p, &end);
    if (end == *p || errno == ERANGE || !isfinite(*out))
        return -1;
    while (isspace((unsigned char)*end))
        end++;
    *p = end;
    return 0;
}

int cl_gemm_table_parse(const char *text, cl_cluster *c, char *why, size_t why_size)
{
    double dims[CL_GEMM_TABLE_MAX], effs[CL_GEMM_TABLE_MAX];
    int n = 0;
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    if (!*p) {
        snprintf(why, why_size, "an empty table");
        return -1;
    }
    while (*p) {
        if (n == CL_GEMM_TABLE_MAX) {
            snprintf(why, why_size, "more than %d points", CL_GEMM_TABLE_MAX);
            return -1;
        }
        double d, e;
        if (read_number(&p, &d) || *p != ':') {
            snprintf(why, why_size, "point %d: expected MIN_DIM:EFFICIENCY", n + 1);
            return -1;
        }
        p++;
        while (isspace((unsigned char)*p))
            p++;
        if (read_number(&p, &e) || (*p && *p != ',')) {
            snprintf(why, why_size, "point %d: expected MIN_DIM:EFFICIENCY", n + 1);
            return -1;
        }
        if (!(d >= 1 && d <= 1e9) || (n > 0 && !(d > dims[n - 1]))) {
            snprintf(why, why_size,
                     "point %d: dimension %g: expected 1 to 1e9, larger than the one before", n + 1,
                     d);
            return -1;
        }
        if (!(e > 0 && e <= 1)) {
            snprintf(why, why_size, "point %d: efficiency %g: expected a number in (0, 1]", n + 1,
                     e);
            return -1;
        }
        dims[n] = d;
        effs[n] = e;
        n++;
        if (*p == ',') {
            p++;
            while (isspace((unsigned char)*p))
                p++;
            if (!*p) {
                snprintf(why, why_size, "a trailing comma");
                return -1;
            }
        }
    }
    for (int i = 0; i < n; i++) {
        c->gemm_table_min_dim[i] = dims[i];
        c->gemm_table_efficiency[i] = effs[i];
    }
    c->gemm_table_points = n;
    return 0;
}
