/*
 * collective_alltoallv.h -- all-to-all with a size per pair (MPI's
 * alltoallv): the MoE token dispatch and combine, whose volumes come from a
 * routing trace (docs/moe.md).
 *
 * Pairwise exchange as collective_alltoall.c runs it: in step k = 1..N−1
 * member i sends its block for i+k (to_bytes[i+k]) and waits for the one
 * from i−k.  An empty block starts nothing and arrives at once.  When every
 * member's step-k block has the same size b_k (a matrix constant along its
 * diagonals, to_bytes of member i at j = b_{(j−i) mod N}) the members move
 * in lockstep and, on an idle fabric of latency α and bandwidth B with one
 * NIC per NPU, the whole takes Σ_k (α + b_k/B) (b_k = 0: nothing);
 * tests/test_moe_alltoallv.c checks it.
 */
#ifndef SIM_COLLECTIVE_ALLTOALLV_H
#define SIM_COLLECTIVE_ALLTOALLV_H

#include "collective.h"

/* Runs the all-to-all as member g->me: to_bytes[j] bytes (per TP rank) to
 * member j; its own block (j = me) never moves.  Every member calls it with
 * the same group. */
void coll_run_alltoallv(transport *t, const coll_group *g, const double *to_bytes);

/* One all-to-all among n members of one NPU each (NPUs 0..n−1, like
 * coll_bench_run), member i sending matrix[i·n + j] bytes to j; time_s is
 * when the last member is done.  0, or NP_EXIT_USAGE when the platform is
 * too small. */
int coll_bench_alltoallv(const sim_platform *pf, int n, const double *matrix,
                         coll_bench_result *out, np_error *err);

#endif
