/*
 * test_moe_alltoallv.c -- the all-to-all with a size per pair (the MoE
 * dispatch and combine) against its α–β time on an idle flat platform.
 *
 * platforms/test_flat_4.xml gives every NPU a private 1e9 B/s, 5 µs link,
 * so a route is α = 10 µs, B = 1e9 B/s (tests/test_collectives.c explains
 * the platform).  A matrix constant along its diagonals (member i sends
 * b_{(j−i) mod N} to j) keeps the pairwise steps in lockstep: the time is
 * Σ_k (α + b_k/B) over the non-empty steps.  A matrix with one non-empty
 * pair takes that pair's α + b/B.
 *
 * The concurrent form (NCCL's grouped send/recv) starts every block at once:
 * the blocks share each NIC, so the diagonal matrix takes α + Σ_k b_k/B, and
 * a member that starts d late delays only its own blocks: d + α + Σ_k b_k/B
 * when the others are done before it starts.
 */
#include <string.h>

#include "collective_alltoallv.h"
#include "testutil.h"

#define ALPHA_S 10e-6
#define B_BPS 1e9

typedef struct v_case {
    int n;
    double matrix[16];
    double start_s[4];
    coll_algorithm algorithm; /* 0 (ring-flow) stands for the default, pairwise */
} v_case;

typedef struct v_outcome {
    int rc;
    double time_s;
} v_outcome;

static void run_case(void *ctx, int fd)
{
    const v_case *c = ctx;
    v_outcome out = {0};
    np_error err;
    sim_platform pf;
    test_simgrid_init();
    out.rc = platform_load(test_path("platforms/test_flat_4.xml"), &pf, &err);
    coll_bench_result r;
    if (!out.rc)
        out.rc = coll_bench_alltoallv(&pf, c->n, c->matrix, c->start_s,
                                      c->algorithm ? c->algorithm : COLL_PAIRWISE, &r, &err);
    out.time_s = r.time_s;
    test_write_all(fd, &out, sizeof out);
}

static double simulate(const v_case *c)
{
    v_outcome out;
    CU_ASSERT_EQUAL_FATAL(test_in_child(run_case, (void *)c, &out, sizeof out), 0);
    CU_ASSERT_EQUAL_FATAL(out.rc, 0);
    return out.time_s;
}

static void test_diagonal_matrix_takes_the_sum_of_its_steps(void)
{
    double b[4] = {0, 2e6, 0, 5e5}; /* b_k for k = (j − i) mod 4; step 2 empty */
    v_case c = {.n = 4};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            c.matrix[i * 4 + j] = i == j ? 7e6 : b[(j - i + 4) % 4]; /* own block stays */
    double expected = (ALPHA_S + 2e6 / B_BPS) + (ALPHA_S + 5e5 / B_BPS);
    ASSERT_REL(simulate(&c), expected, 1e-9);
}

static void test_one_pair_takes_its_transfer_time(void)
{
    v_case c = {.n = 4};
    c.matrix[0 * 4 + 2] = 3e6;
    ASSERT_REL(simulate(&c), ALPHA_S + 3e6 / B_BPS, 1e-9);
}

/* Uniform blocks: the pairwise all-to-all's (N−1)(α + S/(N·B)). */
static void test_uniform_matrix_equals_pairwise(void)
{
    v_case c = {.n = 4};
    for (int i = 0; i < 16; i++)
        c.matrix[i] = 1e6;
    ASSERT_REL(simulate(&c), 3 * (ALPHA_S + 1e6 / B_BPS), 1e-9);
}

static void diagonal(v_case *c, const double *b)
{
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            c->matrix[i * 4 + j] = i == j ? 7e6 : b[(j - i + 4) % 4];
}

static void test_concurrent_blocks_share_the_nics(void)
{
    double b[4] = {0, 2e6, 0, 5e5};
    v_case c = {.n = 4, .algorithm = COLL_CONCURRENT};
    diagonal(&c, b);
    ASSERT_REL(simulate(&c), ALPHA_S + (2e6 + 5e5) / B_BPS, 1e-9);
    double u[4] = {0, 1e6, 1e6, 1e6};
    diagonal(&c, u);
    ASSERT_REL(simulate(&c), ALPHA_S + 3e6 / B_BPS, 1e-9);
}

/* Member 0 starts 5 ms late, after the others' 3.01 ms exchange among
 * themselves and into its NIC: concurrent, it then sends its own blocks
 * alone, d + α + 3b/B; pairwise, the others' later steps wait for it too,
 * which can only take longer. */
static void test_a_late_member_delays_only_its_own_blocks(void)
{
    double u[4] = {0, 1e6, 1e6, 1e6};
    v_case c = {.n = 4, .start_s = {5e-3, 0, 0, 0}, .algorithm = COLL_CONCURRENT};
    diagonal(&c, u);
    double concurrent = simulate(&c);
    ASSERT_REL(concurrent, 5e-3 + ALPHA_S + 3e6 / B_BPS, 1e-9);
    c.algorithm = COLL_PAIRWISE;
    CU_ASSERT_TRUE(simulate(&c) >= concurrent * (1 - 1e-12));
}

void register_moe_alltoallv_tests(void)
{
    TEST_SUITE("moe_alltoallv",
               {"diagonal matrix takes the sum of its steps",
                test_diagonal_matrix_takes_the_sum_of_its_steps},
               {"one pair takes its transfer time", test_one_pair_takes_its_transfer_time},
               {"uniform matrix equals pairwise", test_uniform_matrix_equals_pairwise},
               {"concurrent blocks share the NICs", test_concurrent_blocks_share_the_nics},
               {"a late member delays only its own blocks",
                test_a_late_member_delays_only_its_own_blocks});
}
