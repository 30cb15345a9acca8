/*
 * transport_bench.h -- transfers on their own, through the transport (tests
 * and benchmarks of the fabrics: tests/test_fabrics.c, test_scaleup.c).
 */
#ifndef SIM_TRANSPORT_BENCH_H
#define SIM_TRANSPORT_BENCH_H

#include "np_error.h"
#include "platform.h"

/* Starts n transfers at once, transfer i of bytes[i] from NPU src[i] to NPU
 * dst[i], each from its own actor through transport_start() (so the
 * platform's scale-up fabric and PXN apply, unlike coll_bench_flows()), and
 * runs the simulation until all have arrived: end_s[i] is when transfer i
 * arrived, from the common start.  0, or NP_EXIT_USAGE on a bad rank. */
int transport_bench(const sim_platform *pf, int n, const int *src, const int *dst,
                    const double *bytes, double *end_s, np_error *err);

#endif
