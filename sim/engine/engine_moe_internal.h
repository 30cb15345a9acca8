/*
 * engine_moe_internal.h -- what the MoE replay's files (engine_moe*.c)
 * share: its state and its steps.  Not a public interface.
 */
#ifndef SIM_ENGINE_MOE_INTERNAL_H
#define SIM_ENGINE_MOE_INTERNAL_H

#include "collective.h"
#include "engine_internal.h"
#include "moe_policy.h"

enum { COLL_GROUP_EP_V = 3, COLL_GROUP_EDP = 4 };

/* The exchanges of one MoE layer in one micro-batch (engine_moe_sample.c):
 * forward dispatch and combine, backward combine's and dispatch's
 * gradients, the recompute's dispatch and combine (FasterMoE's pipelined
 * exchange uses the first of its pass). */
enum {
    ENGINE_MOE_SLOT_FORWARD = 0,
    ENGINE_MOE_SLOT_BACKWARD = 2,
    ENGINE_MOE_SLOT_RECOMPUTE = 4,
    ENGINE_MOE_SLOTS = 6
};
typedef struct engine_moe_sample engine_moe_sample;

typedef struct engine_moe {
    int ep, edp, num_moe;
    double token_bytes;    /* h·D */
    double flops_per_row;  /* 2·mats·h·f_e: one assignment through one expert */
    int *moe_of_layer;     /* [cm layers]: MoE index, or −1 */
    moe_layer_plan *plans; /* [num_moe]: the replayed step under the policy */
    moe_policy_kind policy;
    moe_trace balanced;       /* a policy without --moe-trace: balanced routing as a trace */
    double copy_weight_bytes; /* one expert copy's weights per TP rank */
    double copy_grad_bytes;   /* and its gradients */
    double *copy_bytes;       /* [p·ep]: copies held by rank j of stage s */
    double *copy_s;           /* [workers]: broadcasts and reductions of copies */
    double copies;
    double *load_rows; /* [num_moe·experts] with record_spans: the timeline's loads */
    int experts;
    engine_moe_event *events;
    int num_events, events_capacity;
    double *ratio;              /* [num_moe·ep]: rows of rank j / balanced rows */
    double *stage_expert_grads; /* [p]: expert gradient bytes of a stage */
    const cm_model *cm;
    engine_moe_sample *sample; /* --moe-sample-mb: NULL replays every micro-batch */
    /* accounting */
    double *a2a_s;         /* [workers] */
    double *a2a_exposed_s; /* [workers]: the part no compute overlapped */
    bool overlap;          /* model.overlap_moe_expert_parallel_comm (engine_moe_overlap.c) */
    bool *steady;          /* [p] with overlap: the stage has a steady 1F1B phase */
    double dropped, padding, assignments, max_over_mean;
    int max_over_mean_count;
} engine_moe;

/* ---- engine_moe_check.c ---- */

/* Whether the run replays its MoE layers; if not, why[] says which
 * condition fails (docs/moe.md, "When it applies"). */
bool engine_moe_applies(const engine *e, const wl_workload *w, const cm_model *cm, char *why,
                        size_t size);
/* A run without the replay (`why`), or over the flow bound: refuses what
 * needs the replay (combined 1F1B, --moe-sample-mb, a policy, a routing
 * trace) naming the option or key; 0 when nothing does. */
int engine_moe_refuse(const engine *e, const wl_workload *w, const char *why, np_error *err);
int engine_moe_refuse_over_bound(const engine *e, const wl_workload *w, double flows,
                                 np_error *err);
/* What a replayed run must also satisfy: an all-to-all algorithm with a
 * volume per pair (not bruck), and the routing trace against the plan
 * simulated: its step, its tokens per NPU and micro-batch
 * (moe_trace_check_plan). */
int engine_moe_check_replay(const engine *e, const wl_workload *w, np_error *err);
/* A policy's capacity (moe_policy_capacity_of) must be the one the workload
 * and the cost model's source have (moe_policy_apply before cm_build): else
 * NP_EXIT_INTERNAL, a caller's mistake, not a silent memory model without
 * the policy's padding. */
int engine_moe_check_policy(const engine *e, const wl_workload *w, const cm_model *cm,
                            np_error *err);

/* The copies of MoE layer k on the fabric, among the EP group g: their
 * weights broadcast (broadcast) or their gradients reduced to the owners
 * (engine_moe_copies.c). */
void engine_moe_copies_on_fabric(engine *e, worker *w, const coll_group *g, int k, bool broadcast);
/* FasterMoE's pipelined dispatch, experts (expert_s on this rank) and
 * combine of MoE layer k. */
void engine_moe_pipelined(engine *e, worker *w, const coll_group *g, int k, double expert_s);

/* ---- engine_moe_layer.c ---- */

/* One MoE layer of a replayed op (forward, backward, recompute or split W),
 * in the order the op runs them (backward and W: descending): its MoE index
 * k, the all-to-alls it runs (out: the dispatch direction, first; back: the
 * other, after the experts), this rank's experts (balanced time × rows /
 * balanced rows), its share of the op's other work (attention, dense and
 * shared MLPs, TP collectives: the op's time less the closed-form
 * all-to-alls and balanced experts, split evenly over the op's MoE
 * layers), and the closed form of its all-to-alls the op's time holds. */
typedef struct engine_moe_part {
    int k;
    bool out, back;
    double expert_s, other_s, closed_s;
} engine_moe_part;

/* MoE layers of op's chunk on w's stage; parts[] holds as many. */
int engine_moe_op_layers(const worker *w, const sched_op *op);
/* Fills parts[] for op (the MoE layers it does work in); returns their
 * number. */
int engine_moe_parts(const worker *w, const sched_op *op, engine_moe_part *parts);
/* The all-to-alls of MoE layer l (0 if not one) in the plan's first
 * `micro_batches` micro-batches: forward, backward and what its recompute
 * re-runs where it is not skipped. */
double engine_moe_exchanges(const engine *e, const cm_model *cm, int l, int micro_batches);
/* w's EP group (members: the workers' endpoints; free g->members). */
void engine_moe_ep_group(engine *e, worker *w, coll_group *g);
/* w's expert-data-parallel group: the edp replicas of its stage with its
 * index in their EP group, ep apart (free g->members). */
void engine_moe_edp_group(engine *e, worker *w, coll_group *g);
/* --dp-overlap (engine_moe_dp.c): refuses what the overlap cannot do with
 * the replay (expert copies of a policy), then splits the overlap's buckets
 * into dense and expert ones (overlap_split_experts).  0 or an
 * np_exit_code. */
int engine_moe_dp_overlap_init(engine *e, const cm_model *cm, np_error *err);
/* One all-to-all of MoE layer k (dispatch direction when out, else back),
 * slot as engine_moe_sample_begin's; counted in a2a_s, not as exposed;
 * returns the time it took. */
double engine_moe_alltoall(engine *e, worker *w, const coll_group *g, int k, bool out, int slot,
                           int micro_batch);
/* What the forward of MoE layer k does before its dispatch: the load
 * timeline's event, the copies' broadcast (micro-batch 0), and the token
 * tallies (dropped, padding, assignments). */
void engine_moe_forward_begin(engine *e, worker *w, const coll_group *g, int k, int micro_batch);

/* Runs one MoE layer of an op of `kind` on its own: its other work, then
 * dispatch, experts, combine (or their gradients in that order; or what a
 * recompute re-runs of them), or FasterMoE's pipelined exchange; the
 * all-to-alls are all exposed. */
void engine_moe_run_layer(worker *w, const coll_group *g, const engine_moe_part *part, int kind,
                          int micro_batch);

/* 0, or NP_EXIT_USAGE naming model.overlap_moe_expert_parallel_comm when
 * combined 1F1B cannot apply to the run (engine_moe_overlap.c). */
int engine_moe_overlap_check(const engine *e, const wl_workload *w, np_error *err);
/* Fills m->steady from the op lists; 0, or -1 out of memory. */
int engine_moe_overlap_init(engine *e);

/* Micro-batch sampling (engine_moe_sample.c).  init: 0, or −1 out of
 * memory; no sampling when mb ≤ 0 or mb ≥ the micro-batches.  begin: true
 * when the caller replays the exchange and then calls end; false when it has
 * waited the measured time instead. */
int engine_moe_sample_init(engine *e, int mb);
/* The first stage that holds an MoE layer of cm (the witness EP groups'
 * stage), 0 when none does. */
int engine_moe_first_stage(const engine *e, const cm_model *cm);
void engine_moe_sample_free(engine *e);
bool engine_moe_sample_begin(engine *e, worker *w, int k, int slot, int micro_batch);
void engine_moe_sample_end(engine *e, worker *w, int k, int slot);
void engine_moe_sample_collect(const engine *e, engine_result *out);

#endif
