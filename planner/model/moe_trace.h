/*
 * moe_trace.h -- MoE token traces: how many tokens each source rank of an
 * expert-parallel group sends to each expert, per training step and per MoE
 * layer (docs/moe-trace-format.md), and a seeded generator of realistic
 * routing (Zipf-skewed expert popularity, hot experts drifting from step to
 * step).
 *
 * Counts are token-expert assignments of one micro-batch of one source
 * rank: a source routing n tokens to k experts each has n·k assignments,
 * at most n of them to one expert (top-k picks k distinct experts).
 */
#ifndef MOE_TRACE_H
#define MOE_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "np_error.h"
#include "workload.h"

/* Largest trace held in memory: steps·layers·sources·experts counts. */
#define MOE_TRACE_MAX_COUNTS (1L << 27)

typedef struct moe_trace {
    int experts, sources, layers, steps, topk;
    long tokens;      /* assignments per row: every row sums to it */
    uint32_t *counts; /* [step][layer][source][expert] */
    /* For messages, borrowed (the caller's strings outlive the trace): the
     * file (moe_trace_read sets it; NULL for a trace made in memory), and
     * where the run was given it, as np_error's source and key: e.g.
     * "<command line>" and "--moe-trace", or the workload file and
     * "model.moe_token_trace" (NULL: the caller did not say). */
    const char *path, *named_in, *named_key;
} moe_trace;

/* Reads a trace file (strict: every error names the file, the line and the
 * header key or what is wrong).  0 or an np_exit_code. */
int moe_trace_read(const char *path, moe_trace *out, np_error *err);
/* Writes t to path (through np_file: a temporary file renamed into place);
 * an error names `option`, the caller's option that gave the path. */
int moe_trace_write(const char *path, const char *option, const moe_trace *t, np_error *err);
void moe_trace_free(moe_trace *t);
/* Allocates a zeroed trace of the given shape; -1 when too large or out of
 * memory. */
int moe_trace_alloc(moe_trace *t, int experts, int sources, int layers, int steps, int topk,
                    long tokens);
/* The count of (step, layer, source, expert). */
static inline uint32_t *moe_trace_at(const moe_trace *t, int step, int layer, int source,
                                     int expert)
{
    long i = (((long)step * t->layers + layer) * t->sources + source) * t->experts + expert;
    return &t->counts[i];
}
/* Checks that t fits workload w in what no plan changes: experts =
 * num_experts, sources = ep, layers = the MoE layers, topk.  0 or
 * NP_EXIT_INPUT naming `source` (the trace file) and the header key.  The
 * tokens depend on the plan: moe_trace_check_plan. */
int moe_trace_check_workload(const moe_trace *t, const wl_workload *w, const char *source,
                             np_error *err);
/* Checks t's tokens against the plan simulated: a plan of micro-batches of
 * micro_batch_size samples on tensor_parallel ranks routes
 * moe_trace_tokens(w, micro_batch_size, tensor_parallel) assignments per
 * source and micro-batch.  0 or NP_EXIT_INPUT naming `source` (the trace
 * file), key "tokens", the trace's figure and the plan's (`planner` names
 * the plan in the message). */
int moe_trace_check_plan(const moe_trace *t, const wl_workload *w, int micro_batch_size,
                         int tensor_parallel, const char *planner, const char *source,
                         np_error *err);
/* Assignments per source rank and micro-batch at micro-batch size b on t
 * tensor-parallel ranks: (b·s/cp/t with SP and t > 1, else b·s/cp) · topk. */
long moe_trace_tokens(const wl_workload *w, int micro_batch_size, int tensor_parallel);
/* moe_trace_tokens at the workload's own micro_batch_size and TP. */
long moe_trace_workload_tokens(const wl_workload *w);

/* Load of one (step, layer) summed over the sources: the share of the
 * assignments the two most loaded experts take, and the most loaded
 * expert's load over the mean. */
typedef struct moe_trace_stats {
    double top2_share, max_over_mean;
} moe_trace_stats;
void moe_trace_stats_of(const moe_trace *t, int step, int layer, moe_trace_stats *out);

/* ---- one layer's routing as the replay sees it (moe_trace.c) ------------- */

/* What the trace's (step, layer) makes of an EP group of `sources` ranks,
 * each holding local = experts/sources consecutive experts (expert e on
 * rank e / local), under a capacity of C tokens per expert and source
 * (0: none) and Megatron's padding to it:
 *   kept c' = min(c, C) of each count c (all of it without C), dropped
 *   c − c'; with padding each source sends exactly C per expert, so an
 *   expert computes sources·C rows, padding = sources·C − Σ c'.
 * Per destination rank j: rows[j] its experts compute (padding included),
 * padding[j], dropped[j]; send[i·sources + j] the tokens source i sends to
 * rank j (C·local when padded).  Every assignment is kept or dropped:
 * Σ_j (rows[j] − padding[j] + dropped[j]) = sources·tokens. */
typedef struct moe_route {
    int sources;
    double *rows, *padding, *dropped;         /* [sources] */
    double *send;                             /* [sources·sources] */
    double max_expert_rows, mean_expert_rows; /* over all experts, padding included */
} moe_route;
int moe_route_init(moe_route *r, int sources);
void moe_route_free(moe_route *r);
/* Fills r for (step, layer) of t; r->sources must equal t->sources. */
void moe_route_layer(const moe_trace *t, int step, int layer, double capacity, bool pad,
                     moe_route *r);

/* ---- generator (moe_trace_gen.c) ----------------------------------------- */

/* Expert popularity follows Zipf's law p_r ∝ 1/r^s over popularity ranks
 * r = 1..E; which expert holds rank r is a permutation per layer that
 * drifts each step (every rank swaps with a uniformly drawn rank with
 * probability `drift`).  Each source draws its `tokens` assignments as a
 * multinomial over p; an expert over the per-source limit tokens/topk gives
 * its excess to the others in proportion to p.  top2_share > 0 chooses s
 * so that the two most popular experts hold that share once capped
 * (moe_zipf_capped; bisection). */
typedef struct moe_trace_params {
    int experts, sources, layers, steps, topk;
    long tokens;
    double zipf_s;     /* exponent; ignored when top2_share > 0 */
    double top2_share; /* in (2/E, 2/topk]; 0: use zipf_s */
    double drift;      /* [0, 1] */
    uint64_t seed;
} moe_trace_params;
/* Zipf probabilities of the popularity ranks, p[0] the hottest. */
void moe_zipf_probabilities(int experts, double s, double *p);
/* The expected share of each rank once every expert is held to 1/topk of
 * the assignments (an expert sees a token once): the ranks above the cap
 * are set to it and the rest scaled up (water-filling). */
void moe_zipf_capped(int experts, double s, int topk, double *q);
/* The exponent whose two hottest experts hold `share` of the capped
 * distribution (bisection); -1 when share is outside (2/E, min(1, 2/topk))
 * or no exponent up to 100 reaches it. */
double moe_zipf_for_top2(int experts, int topk, double share);
/* Generates a trace; 0, or -1 with why[] naming the bad parameter. */
int moe_trace_generate(const moe_trace_params *p, moe_trace *out, char *why, size_t why_size);

#endif
