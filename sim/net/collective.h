/*
 * collective.h -- collectives among endpoints, built from flows.
 *
 * A collective runs among a GROUP of endpoints (transport.h: tp NPUs each; for
 * the engine the data-parallel replicas of a stage, an expert-parallel group,
 * any list of pipeline workers): every member calls it with the same group,
 * kind, parameters and byte count, in the same order as every other
 * collective of that group (MPI's rule).  Every TP rank of a member runs its
 * own copy of the collective on its own NIC (rank r talks to rank r of the
 * other members), so one message between two members is one transport
 * transfer: tp SimGrid flows, or scale-up transfers when the two NPUs share a
 * server.  Contention between concurrent flows is SimGrid's max-min sharing
 * on the platform's real links.  The collectives know nothing of the engine:
 * which group to form and which algorithm to run is the caller's choice.
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
 *                     (B = L NICs when L members share a server: channels)
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
 *   concurrent        all-to-all α + (N−1)·S/(N·B): the N−1 blocks at once
 * Messages are transport transfers (transport.c) that meet their receiver in
 * collective_transport.c; the names and dispatch are collective.c;
 * collective_bench.c runs one collective on its own (tests, benchmarks).
 */
#ifndef SIM_COLLECTIVE_H
#define SIM_COLLECTIVE_H

#include <stdbool.h>
#include <stddef.h>

#include "np_error.h"
#include "platform.h"
#include "transport.h"

typedef enum coll_algorithm {
    COLL_RING_FLOW = 0,    /* one flow per ring edge carrying 2(N−1)/N·S (docs/design.md) */
    COLL_RING,             /* step-by-step ring: a flow per step to the successor */
    COLL_HIERARCHICAL,     /* intra-server RS, inter-server all-reduce, intra-server AG */
    COLL_HALVING_DOUBLING, /* recursive halving / doubling: the radix-2 butterfly */
    COLL_BUTTERFLY,        /* radix-R butterfly, R = coll_params.radix */
    COLL_PAIRWISE,         /* all-to-all: N−1 pairwise exchange steps */
    COLL_BRUCK,            /* all-to-all: ⌈log2 N⌉ steps (Bruck et al. 1997) */
    COLL_CONCURRENT,       /* all-to-all: every block at once (NCCL's grouped send/recv) */
    COLL_ALGORITHM_COUNT
} coll_algorithm;

typedef enum coll_kind {
    COLL_ALLREDUCE = 0,
    COLL_REDUCE_SCATTER,
    COLL_ALLGATHER,
    COLL_ALLTOALL,
    COLL_KIND_COUNT
} coll_kind;

/* The stages of a butterfly of n members with radix `radix`: n factorised
 * into radices of at most `radix` each where n allows (else its smallest
 * prime factor above it), into radices[COLL_BUTTERFLY_MAX_STAGES]; returns
 * their count (collective_butterfly.c; the flow estimate counts the same). */
enum { COLL_BUTTERFLY_MAX_STAGES = 64 };
int coll_butterfly_radices(int n, int radix, int *radices);

/* "ring-flow", "ring", "hierarchical", "halving-doubling", "butterfly",
 * "pairwise", "bruck", "concurrent"; by_name returns -1 when unknown. */
const char *coll_algorithm_name(coll_algorithm a);
int coll_algorithm_by_name(const char *name);
const char *coll_kind_name(coll_kind k); /* "all-reduce", "reduce-scatter", ... */
bool coll_algorithm_supports(coll_algorithm a, coll_kind k);
/* The algorithm a kind uses when asked for one it does not support:
 * ring-flow for all-reduce, reduce-scatter and all-gather, concurrent for
 * all-to-all. */
coll_algorithm coll_default_algorithm(coll_kind k);
/* Writes "ring-flow, ring, ..." (the algorithms of kind k) into buf. */
void coll_algorithm_list(coll_kind k, char *buf, size_t size);
/* 0 when a serves kind k, else NP_EXIT_USAGE: the error names `option`
 * (--dp-algorithm ...) and the accepted names.  The engine checks its
 * options with it (coll_check_options, engine.h). */
int coll_check_choice(coll_algorithm a, coll_kind k, const char *option, np_error *err);

/* The channels of a ring-flow collective (collective_ring.c).  When the n
 * members, in order, come in runs of `local` > 1 that share a server, the
 * ring runs as `local` channels (NCCL's rings, one per NIC), each carrying
 * S/local: channel rings enter a server on one member, pass its members on
 * the scale-up fabric and leave it on the member before, to the member of
 * the same position in the next server (the same rail).  Member j of server
 * k then always sends to member j+1 of its server (local−1 channels' share)
 * and to member j of server k+1 (one channel's share; the last server wraps
 * to member (j + servers) mod local of server 0), so every member's NIC
 * carries 1/local of what one ring would put on it.  local = 1 is the plain
 * ring. */
typedef struct coll_ring_peers {
    int intra_next, intra_prev; /* in the member's server; −1 when local = 1 */
    int inter_next, inter_prev; /* in the next and previous servers */
} coll_ring_peers;
/* `local` for members whose server is server(ctx, i): the length of the
 * first run of equal servers when n is a multiple of it and every run of
 * that length shares one server, else 1. */
int coll_ring_local(int n, long (*server)(const void *ctx, int i), const void *ctx);
/* Member me's peers in the channel rings of n members, `local` per server. */
void coll_ring_peers_of(int n, int local, int me, coll_ring_peers *out);

typedef struct coll_params {
    coll_algorithm algorithm;
    int radix;                      /* COLL_BUTTERFLY: R ≥ 2; < 2 means 4 */
    coll_algorithm inter_algorithm; /* COLL_HIERARCHICAL: the inter-server all-reduce */
} coll_params;

void coll_params_init(coll_params *p, coll_kind k); /* default algorithm, radix 4 */

/* A group: its members in order (a member's index is its position) and the
 * caller's index.  `id` tells apart groups that could share their first
 * member and size (a data-parallel and an expert-parallel group of the same
 * workers): the members' calls are matched on (id, first member, size), the
 * first member by address, so every member must point to the same endpoint
 * for a given position. */
typedef struct coll_group {
    const endpoint *const *members; /* [size] */
    int size;
    int me;
    int id;
} coll_group;

/* Runs one collective as member g->me, its messages carried by t; returns
 * when the member's part is done.  Called from the member's actor. */
void coll_run(transport *t, coll_kind kind, const coll_group *g, const coll_params *p,
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
