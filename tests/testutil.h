/*
 * testutil.h -- helpers shared by the CUnit suites.
 *
 * Paths: tests run from the source root (CTest sets the working directory);
 * test_path() also makes them work from anywhere by prefixing the source dir.
 */
#ifndef TESTUTIL_H
#define TESTUTIL_H

#include <CUnit/CUnit.h>
#include <math.h>
#include <stddef.h>

#include "plan.h"

/* Absolute path of a file in the source tree, in a static rotating buffer. */
const char *test_path(const char *relative);

/* Relative difference |a-b| / max(|a|,|b|,tiny). */
double test_rel_diff(double a, double b);

/* Registers a suite with its tests: TEST_SUITE("name", {"case", fn}, ...). */
typedef struct test_case {
    const char *name;
    void (*fn)(void);
} test_case;
void test_add_suite(const char *name, const test_case *cases, int count);
#define TEST_SUITE(name, ...)                                                     \
    do {                                                                          \
        static const test_case cases_[] = {__VA_ARGS__};                          \
        test_add_suite(name, cases_, (int)(sizeof cases_ / sizeof cases_[0]));    \
    } while (0)

#define ASSERT_REL(actual, expected, tol)                                         \
    do {                                                                          \
        double a_ = (actual), e_ = (expected);                                    \
        if (!(test_rel_diff(a_, e_) <= (tol)))                                    \
            fprintf(stderr, "\n  %s:%d: %s = %.12g, expected %.12g (rel %.3g)\n", \
                    __FILE__, __LINE__, #actual, a_, e_, test_rel_diff(a_, e_));  \
        CU_ASSERT(test_rel_diff(a_, e_) <= (tol));                                \
    } while (0)

/* A synthetic cost model of n identical layers: F = 1, B = 2 time units,
 * 10 bytes of activations, 100 of state and a 1-byte output each, no TP. */
void test_uniform_model(cm_model *cm, int n);
/* p stages of layers_per_stage layers, m micro-batches of 1, TP = DP = 1. */
void test_uniform_plan(plan *pl, int p, int m, int layers_per_stage, schedule_kind k);

/* SimGrid runs one platform per process: a test that simulates runs
 * fn(ctx, fd) in a forked child, which writes `size` bytes of result to fd.
 * Returns 0 when the child exited 0 and delivered the result. */
int test_in_child(void (*fn)(void *ctx, int fd), void *ctx, void *result, size_t size);

/* Writes all of data to fd (for results sent from a child). */
int test_write_all(int fd, const void *data, size_t size);

/* In a child: SimGrid with npusim's configuration and no log output. */
void test_simgrid_init(void);

#endif
