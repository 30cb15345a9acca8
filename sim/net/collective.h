/*
 * collective.h -- collectives among pipeline workers, built from flows.
 *
 * A collective runs among a GROUP of workers (the data-parallel replicas of a
 * stage, an expert-parallel group, any list): every member calls it with the
 * same group, kind, parameters and byte count, in the same order as every
 * other collective of that group (MPI's rule).  A worker holds tp NPUs; every
 * TP rank runs its own copy of the collective on its own NIC (rank r talks to
 * rank r of the other members), so one message between two members is tp
 * SimGrid flows, or scale-up transfers when the two NPUs share a server.
 * Contention between concurrent flows is SimGrid's max-min sharing on the
 * platform's real links.
 *
 * Sizes: `bytes` is S, the whole vector of one NPU: the all-reduce input, the
 * reduce-scatter input (each member ends with S/N), the all-gather output
 * (each member starts with S/N), the all-to-all send buffer (S/N to each
 * member, itself included).  The reduction arithmetic is not timed (no γ
 * term): a collective costs its messages only.
 *
 * Algorithms and their cost on an idle fabric where every route has latency
 * α and bandwidth B, each NPU one NIC (derivations in the algorithm files):
 *   ring-flow         all-reduce 2(N−1)(α + S/(N·B)), N flows   collective_ring.c
 *   ring              all-reduce 2(N−1)(α + S/(N·B)), 2N(N−1) flows
 *                     RS, AG     (N−1)(α + S/(N·B))
 *   halving-doubling  all-reduce 2·log2(N)·α + 2(N−1)/N·S/B     collective_butterfly.c
 *   butterfly         all-reduce 2·log_R(N)·α + 2(N−1)/N·S/B (radix R)
 *                     RS, AG     log_R(N)·α + (N−1)/N·S/B
 *   hierarchical      intra-server RS, inter-server all-reduce of S/L among
 *                     the servers, intra-server AG             collective_hierarchical.c
 *   pairwise          all-to-all (N−1)(α + S/(N·B))             collective_alltoall.c
 *   bruck             all-to-all Σ_k (α + c_k·S/(N·B)), k < ⌈log2 N⌉,
 *                     c_k = #{j < N : bit k of j set}  (N/2 when N = 2^m)
 * The transport that carries the messages is collective_transport.c; the
 * names, groups and dispatch are collective.c; collective_bench.c runs one
 * collective on its own (tests, benchmarks).
 */
#ifndef SIM_COLLECTIVE_H
#define SIM_COLLECTIVE_H

#include <stdbool.h>
#include <stddef.h>

#include "engine.h"
#include "np_error.h"
#include "platform.h"

typedef enum coll_kind {
    COLL_ALLREDUCE = 0,
    COLL_REDUCE_SCATTER,
    COLL_ALLGATHER,
    COLL_ALLTOALL,
    COLL_KIND_COUNT
} coll_kind;

/* "ring-flow", "ring", "hierarchical", "halving-doubling", "butterfly",
 * "pairwise", "bruck"; by_name returns -1 when unknown. */
const char *coll_algorithm_name(coll_algorithm a);
int coll_algorithm_by_name(const char *name);
const char *coll_kind_name(coll_kind k); /* "all-reduce", "reduce-scatter", ... */
bool coll_algorithm_supports(coll_algorithm a, coll_kind k);
/* The algorithm a kind uses when asked for one it does not support:
 * ring-flow for all-reduce, reduce-scatter and all-gather, pairwise for
 * all-to-all. */
coll_algorithm coll_default_algorithm(coll_kind k);
/* Writes "ring-flow, ring, ..." (the algorithms of kind k) into buf. */
void coll_algorithm_list(coll_kind k, char *buf, size_t size);
/* Checks the collective choices of o (each a valid algorithm for its
 * collective, a radix ≥ 2 or the default); the error names the option
 * (--dp-algorithm ...) and the accepted names.  0 or NP_EXIT_USAGE. */
int coll_check_options(const engine_options *o, np_error *err);

typedef struct coll_params {
    coll_algorithm algorithm;
    int radix;                      /* COLL_BUTTERFLY: R ≥ 2; < 2 means 4 */
    coll_algorithm inter_algorithm; /* COLL_HIERARCHICAL: the inter-server all-reduce */
} coll_params;

void coll_params_init(coll_params *p, coll_kind k); /* default algorithm, radix 4 */

/* A group: its members in order (a member's index is its position) and the
 * caller's index.  `id` tells apart groups that could share their first
 * member and size (a DP group and an EP group of the same replicas): the
 * members' calls are matched on (id, first member, size). */
struct worker;
struct engine;
typedef struct coll_group {
    struct worker **members; /* [size] */
    int size;
    int me;
    int id;
} coll_group;

enum { COLL_GROUP_DP = 1, COLL_GROUP_EP = 2 };

/* The data-parallel group of w: workers (w.stage, d), d = 0..dp−1.  The
 * member array is allocated; coll_group_free releases it. */
int coll_group_dp(struct engine *e, struct worker *w, coll_group *g);
/* The expert-parallel group of w: the ep_size consecutive replicas of its
 * stage that hold it (ep_size divides dp). */
int coll_group_ep(struct engine *e, struct worker *w, int ep_size, coll_group *g);
void coll_group_free(coll_group *g);

/* Runs one collective as member g->me; returns when the member's part is
 * done.  Called from the member's actor. */
void coll_run(struct engine *e, coll_kind kind, const coll_group *g, const coll_params *p,
              double bytes);

/* ---- collective_bench.c: one collective on its own ------------------------ */

/* num_groups groups of group_size members, each member tp NPUs, laid out in
 * Megatron's rank order like the engine's workers: member d of group s holds
 * ranks r + tp·(d + group_size·s), r < tp (group s = pipeline stage s).  One
 * actor per member; all start together and run one collective. */
typedef struct coll_bench_spec {
    coll_kind kind;
    coll_params params;
    int group_size; /* N */
    int tp;         /* NPUs per member, ≥ 1 */
    int num_groups; /* groups running concurrently, ≥ 1 */
    double bytes;   /* S per NPU */
} coll_bench_spec;

typedef struct coll_bench_result {
    double time_s;   /* simulated: start to the last member's end */
    double wall_s;   /* host seconds */
    long activities; /* SimGrid flows and sleeps started */
} coll_bench_result;

void coll_bench_init_spec(coll_bench_spec *s); /* all-reduce, N 2, tp 1, 1 group, 1 MB */
/* 0, or NP_EXIT_USAGE when the groups need more NPUs than pf has. */
int coll_bench_run(const sim_platform *pf, const coll_bench_spec *s, coll_bench_result *out,
                   np_error *err);
/* Starts num_flows flows of `bytes` at once, flow i from NPU src_ranks[i] to
 * dst_ranks[i] (the way the collectives start theirs), and times them:
 * time_s is when the last one ends. */
int coll_bench_flows(const sim_platform *pf, int num_flows, const int *src_ranks,
                     const int *dst_ranks, double bytes, coll_bench_result *out, np_error *err);

#endif
