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
 *
 * Concurrent, as NCCL runs it (collective_alltoall.c): every member starts
 * all its non-empty blocks at once, then waits for those it receives.  The
 * blocks share the NICs; with the diagonal matrix above it takes
 * α + Σ_k b_k/B on the same fabric, and a member late to the exchange
 * delays only its own blocks.
 */
#ifndef SIM_COLLECTIVE_ALLTOALLV_H
#define SIM_COLLECTIVE_ALLTOALLV_H

#include "collective.h"

/* Runs the all-to-all as member g->me: to_bytes[j] bytes (per TP rank) to
 * member j; its own block (j = me) never moves.  Every member calls it with
 * the same group and algorithm: COLL_CONCURRENT, else pairwise (Bruck has
 * no form with a size per pair: the engine refuses it for the replay). */
void coll_run_alltoallv(transport *t, const coll_group *g, const double *to_bytes,
                        coll_algorithm algorithm);

/* FasterMoE's smart scheduling (He et al., PPoPP'22, section 5): the
 * dispatch, the experts and the combine as one pipeline.  In step k =
 * 0..N-1 member i starts its block for i+k+1 (to_bytes), computes the chunk
 * of member i-k (compute(ctx, i-k): its own tokens at k = 0, else the block
 * received in the step before), sends that chunk's result back to it
 * (back_bytes[i-k]) and waits for the block of i-k-1; then it waits for the
 * results of its own blocks.  Transfers overlap the chunks' compute. */
typedef void (*coll_chunk_fn)(void *ctx, int from);
void coll_run_alltoallv_pipelined(transport *t, const coll_group *g, const double *to_bytes,
                                  const double *back_bytes, coll_chunk_fn compute, void *ctx);

/* One all-to-all among n members of one NPU each (NPUs 0..n−1, like
 * coll_bench_run), member i sending matrix[i·n + j] bytes to j, member i
 * starting start_s[i] seconds in (NULL: all at 0); time_s is when the last
 * member is done.  0, or NP_EXIT_USAGE when the platform is too small. */
int coll_bench_alltoallv(const sim_platform *pf, int n, const double *matrix, const double *start_s,
                         coll_algorithm algorithm, coll_bench_result *out, np_error *err);

#endif
