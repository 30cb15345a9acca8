/*
 * planner.h -- the one interface every planner implements.
 *
 * A planner is a function from (cost model, cluster, workload, options) to a
 * plan.  It never simulates, parses or prints; it may fail with an np_error
 * (typically NP_EXIT_NOFIT when no plan fits in memory).  planner_run() wraps
 * every planner the same way: it times it, checks the plan it returns and
 * records its name.
 */
#ifndef PLANNER_H
#define PLANNER_H

#include "cluster.h"
#include "costmodel.h"
#include "np_error.h"
#include "plan.h"
#include "workload.h"

typedef struct planner_options {
    schedule_kind schedule; /* schedule the plan must use */
    int num_chunks;         /* v, for interleaved */
    int recompute;          /* a recompute_kind for every layer, or -1: the planner chooses */
    double time_limit_s;    /* for search-based planners (the ILP) */
    /* planner_run() leaves the finished plan's "does not fit" check to its
     * caller (simrun, which may waive it: --ignore-memory); a planner's own
     * choices still keep to the device's memory */
    bool skip_memory_check;
} planner_options;

/* Defaults taken from the workload: its schedule, virtual chunks and
 * recompute granularity; 10 s time limit (GLPK's glp_init_iocp() style). */
void planner_init_options(planner_options *o, const wl_workload *w);

typedef int (*planner_fn)(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                          const planner_options *o, plan *out, np_error *err);

typedef enum planner_split_use {
    /* chooses its own cut points; planner_run() notes it in the plan */
    PLANNER_SPLIT_OWN = 0,
    /* partitions as Megatron does: takes the split (planner_split_partition()) */
    PLANNER_SPLIT_TAKEN,
    /* re-chooses pp and partitions each candidate as Megatron does: the split
     * at every pp where it holds, the other pp skipped (TensorOpt) */
    PLANNER_SPLIT_TAKEN_PER_PP,
} planner_split_use;

typedef struct planner_desc {
    const char *name;
    const char *summary;
    planner_fn run;
    /* What the planner does with Megatron's fixed pipeline split when the
     * workload sets it (planner_split.c). */
    planner_split_use split;
} planner_desc;

const planner_desc *planner_find(const char *name); /* NULL when unknown */
const planner_desc *planner_all(int *count);

int planner_run(const planner_desc *d, const cm_model *cm, const cl_cluster *c,
                const wl_workload *w, const planner_options *o, plan *out, np_error *err);

/* The planners. */
int planner_megatron(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                     const planner_options *o, plan *out, np_error *err);
/* TensorOpt frontier tracking (planner_frontier.c, frontier.h): chooses tp, pp,
 * dp, micro-batch size and per-layer recompute, so its plan's sizes may differ
 * from the workload's (and from cm's); ignores o->recompute. */
int planner_frontier(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                     const planner_options *o, plan *out, np_error *err);
int planner_bmpipe(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                   const planner_options *o, plan *out, np_error *err);
/* BMPipe's ILP in a chosen form (planner_bmpipe.c): AUTO takes the
 * integer-count form when the layers between the first and the last are
 * identical, else the binary form; COUNTS on other layers is an error. */
typedef enum bmpipe_form {
    BMPIPE_FORM_AUTO = 0,
    BMPIPE_FORM_BINARY,
    BMPIPE_FORM_COUNTS
} bmpipe_form;
int planner_bmpipe_form(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                        const planner_options *o, bmpipe_form form, plan *out, np_error *err);

/* PipeDream, AdaPipe and Merak (planner_pipedream.c, planner_adapipe.c,
 * planner_merak.c) choose their own recompute and ignore o->recompute. */
int planner_pipedream(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                      const planner_options *o, plan *out, np_error *err);
int planner_adapipe(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                    const planner_options *o, plan *out, np_error *err);
int planner_merak(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                  const planner_options *o, plan *out, np_error *err);
/* PipeDream's DP alone: A(L, p), the time per micro-batch of the slowest
 * stage of the best partition of cm's layers over p workers with stages
 * replicated on up to max_replicas workers, under recompute r, every stage
 * fitting memory (INFINITY when none does; c NULL: free communication).
 * stages[p] receives *num_stages stages in model order, each layers
 * [first, last) on `replicas` workers.  Returns 0, or -1 when out of memory. */
typedef struct pipedream_stage {
    int first, last, replicas;
} pipedream_stage;
int planner_pipedream_dp(const cm_model *cm, const cl_cluster *c, schedule_kind sched, int p, int m,
                         recompute_kind r, int max_replicas, pipedream_stage *stages,
                         int *num_stages, double *bottleneck_s);
/* Merak's fraction of recomputed layers on stage k of p (TPDS'23):
 * 1 − (1−r0)(p−1)/(p−1−k) clamped to [0, 1] for k < p−1, 0 on the last. */
double planner_merak_ratio(int p, int k, double r0);

/* CSIMD and its GPipe baselines (planner_csimd.c): cut points and
 * micro-batch sizes (plan.micro_batch_sizes) under schedule "gpipe". */
int planner_csimd(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                  const planner_options *o, plan *out, np_error *err);
int planner_mbpp_random(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                        const planner_options *o, plan *out, np_error *err);
int planner_mbpp_even(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                      const planner_options *o, plan *out, np_error *err);

/* The cost model a plan runs on: base when the plan keeps the workload's
 * parallel sizes and micro-batch size, else one built into *own for the
 * plan's own (TensorOpt's frontier chooses them).  *out points at the one to
 * use; cm_free(own) afterwards when *out == own. */
int planner_cost_model_for(const wl_workload *w, const cl_cluster *c, const cm_model *base,
                           const plan *pl, cm_model *own, const cm_model **out, np_error *err);

/* Megatron's uniform partition (planner_megatron.c) of cm's layers over the
 * plan's p·v model chunks: decoder (and custom) layers split evenly, the
 * embedding with the first chunk, the LM head with the last, the extra
 * layers of an uneven split one each on the chunks after the first.  Merak
 * shards its stages the same way. */
void planner_uniform_partition(const cm_model *cm, plan *pl);

/* The partition Megatron and Merak use (planner_split.c): Megatron's fixed
 * split when the workload sets decoder_first/last_pipeline_num_layers or
 * account_for_embedding/loss_in_pipeline_split (pipeline_split.h), else
 * planner_uniform_partition().  0 or an np_exit_code naming the key. */
int planner_split_partition(const cm_model *cm, const wl_workload *w, plan *pl, np_error *err);

/* Planners that choose their own cut points accept Megatron's fixed split
 * keys and ignore them: the keys describe the baseline's layout, while the
 * embedding and the loss stay on the first and last stage through the cost
 * model's layer array.  Writes the one-sentence note planner_run() puts in
 * such a plan (nothing when no key is set or the planner takes the split;
 * planner_split.c). */
void planner_note_own_split(const planner_desc *d, const wl_workload *w, plan *pl);
/* Planners that re-choose tp, pp and dp refuse context parallelism, with an
 * error naming the key (planner_split.c).  0 when it does not apply. */
int planner_refuse_context_parallel(const char *name, const wl_workload *w, np_error *err);

/* Fills the fields every planner sets the same way from the workload:
 * micro-batching, TP, DP, schedule. */
void planner_plan_basics(plan *pl, const wl_workload *w, const planner_options *o);

/* Checks of the planners that place one model chunk per stage (PipeDream,
 * AdaPipe, Merak), named `name` in the message: the schedule is not
 * interleaved; the model has at least one layer per stage.  0 or
 * NP_EXIT_INPUT. */
int planner_require_one_chunk(const char *name, const wl_workload *w, const planner_options *o,
                              np_error *err);
int planner_require_layer_per_stage(const char *name, const cm_model *cm, const wl_workload *w,
                                    np_error *err);

/* Runs a planner's body on a zeroed *out and releases the plan on every
 * error, so that a failed planner leaves nothing to free (plan_free() on it
 * stays harmless). */
int planner_call_clean(planner_fn body, const cm_model *cm, const cl_cluster *c,
                       const wl_workload *w, const planner_options *o, plan *out, np_error *err);

#endif
