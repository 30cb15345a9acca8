/*
 * engine.h -- replaying a schedule on a SimGrid platform.
 *
 * One SimGrid actor per pipeline worker: the TP group that holds stage s of
 * data-parallel replica d (an NPU when TP = 1).  The actor sits on the NPU of
 * TP rank 0 and replays its stage's op list:
 *   - compute ops (F, B, W, recompute, optimizer) are SimGrid executions on
 *     that NPU lasting the op's compute + TP-collective time (TP collectives
 *     run on the scale-up fabric, which the XML fat tree cannot describe);
 *   - a send starts one flow per TP rank, from that rank's NPU to the same
 *     rank of the peer stage, on the fat tree (or a scale-up transfer when
 *     both NPUs share a server); the receiver waits for all of them;
 *   - the data-parallel all-reduce runs as flows between the replicas' NPUs
 *     (collective.h), so it contends with pipeline traffic on the fabric.
 * A memory tracker follows every allocation the op list declares and keeps
 * each worker's peak.  Metrics are derived from per-worker accounting at the
 * end of the run; nothing is sampled.
 *
 * SimGrid allows one platform per process; engine_run() may be called several
 * times on it (each run starts at the current simulated clock).
 */
#ifndef SIM_ENGINE_H
#define SIM_ENGINE_H

#include <stdbool.h>

#include "collective.h"
#include "costmodel.h"
#include "moe_trace.h"
#include "placement.h"
#include "plan.h"
#include "platform.h"
#include "schedule.h"
#include "workload.h"

/* The collective algorithms (coll_algorithm) and their names are
 * collective.h's. */
typedef struct engine_options {
    coll_algorithm dp_algorithm;
    int dp_radix;                         /* R of COLL_BUTTERFLY; < 2 means 4 */
    coll_algorithm dp_inter_algorithm;    /* inter-server all-reduce of COLL_HIERARCHICAL */
    coll_algorithm ep_alltoall_algorithm; /* expert-parallel all-to-all */
    bool record_spans;                    /* keep per-op spans for a timeline (--trace) */
    placement placement; /* rank order of the workers' NPUs (--placement, placement.h) */
    /* Symmetry folding (--fold-dp K): simulate the pipelines of K data-parallel
     * replicas only; replica d is represented by replica d mod K, and every
     * other replica joins each collective through a light actor that starts its
     * flows when its representative does, so collective traffic and its
     * contention stay on the fabric.  0 (or dp) runs every replica. */
    int fold_dp;
    /* Gradient all-reduce bucketed and overlapped with the backward pass
     * (Megatron's overlap_grad_reduce, --dp-overlap): a chunk's gradients
     * are final during its last backward (its last W under zero-bubble); they
     * are cut into buckets of dp_bucket_bytes, each ready once its share of
     * that pass has run, and reduced by a communication actor while the NPU
     * computes.  The iteration's all-reduce op then only waits for what is
     * left. */
    /* Distributed optimizer (Megatron's use_distributed_optimizer): > 0 makes
     * the gradient sync a reduce-scatter of the gradients followed by an
     * all-gather of the parameters, whose bytes are this ratio of the
     * gradients' (bf16 parameters of fp32 gradients: 0.5; of bf16 ones: 1).
     * 0: all-reduce. */
    double dp_param_gather_ratio;
    bool dp_overlap;
    double dp_bucket_bytes; /* 0: Megatron's default, max(40M, 1M·dp) gradients */
    /* Progress (simrun's progress line; engine_progress.c): when set, called
     * with the simulated seconds since the run's start every progress_step_s
     * simulated seconds (≤ 0: 10 ms) while the run goes on, from a light
     * actor that starts no activity; NULL: no actor. */
    /* MoE replay (engine_moe.c): the routing trace and the step replayed;
     * NULL: balanced routing. */
    const moe_trace *moe_trace;
    int moe_trace_step;
    /* Above this many all-to-all flows (estimated) the MoE layers are not
     * replayed: their closed form stays in the ops.  0: 2e7 (about as long
     * as simrun's default bound on a run); INFINITY: always replay. */
    double moe_max_flows;
    /* MoE micro-batch sampling (--moe-sample-mb N, engine_moe_sample.c): the
     * all-to-alls of micro-batches ≥ N wait the time their EP group measured
     * on the first N, except in one witness EP group; 0 replays them all. */
    int moe_sample_mb;
    /* The MoE policy (moe_policy_kind, planner/model/moe_policy.h): 0, none,
     * replays the workload's own capacity and padding. */
    int moe_policy;
    void (*progress)(double simulated_s, void *ctx);
    void *progress_ctx;
    double progress_step_s;
    /* Compute ops as SimGrid executions of time × host speed flops on the
     * NPU, as the engine once ran them, instead of sleeps of their time
     * (docs/design.md, the engine: compute).  Only one execution ever runs on
     * an NPU at a time, so both last exactly the op's time (tests compare
     * them); the sleep costs fewer instructions. */
    bool compute_as_execution;
    /* One SimGrid flow per TP rank for every transfer (--per-rank-flows),
     * instead of the exact TP fold's one flow per TP group where the fabric
     * treats a group's ranks alike (engine_symmetry.c, docs/design.md): the
     * times are the same, the fold starts 1/tp of the flows. */
    bool per_rank_flows;
    /* Check the run and return before simulating: the options, the fold,
     * the MoE replay and its policy (simrun's --moe-policy all checks every
     * policy before it writes a row). */
    bool check_only;
} engine_options;

void engine_init_options(engine_options *o);

/* Checks the collective choices of o (each a valid algorithm for its
 * collective, a radix ≥ 2 or the default); the error names the option
 * (--dp-algorithm ...) and the accepted names.  0 or NP_EXIT_USAGE. */
int coll_check_options(const engine_options *o, np_error *err);

/* 0 when the run can be folded to K replicas, else NP_EXIT_USAGE with the
 * reason the replicas are not symmetric. */
int engine_check_fold(const wl_workload *w, const plan *pl, int fold_dp, np_error *err);

/* One timeline span of a worker. */
typedef struct engine_span {
    double start_s, end_s;
    double memory_bytes; /* device memory when the span ends */
    int32_t micro_batch;
    uint8_t kind; /* op_kind */
    uint8_t chunk;
} engine_span;

/* One MoE layer's dispatch in a forward of replica 0 of a stage (the
 * per-expert load timeline of --trace). */
typedef struct engine_moe_event {
    double t_s;
    int layer, stage; /* the MoE layer (0-based among the MoE layers) */
} engine_moe_event;

typedef struct engine_stage_metrics {
    double busy_s;        /* compute + TP collectives of F/B/W/recompute (slowest replica) */
    double recompute_s;   /* of which recompute */
    double tp_comm_s;     /* of which TP collectives */
    double bubble_ratio;  /* (pipeline time − busy) / busy */
    double p2p_exposed_s; /* time blocked on data in flight between stages */
    double dp_comm_s;     /* data-parallel all-reduce, exposed */
    double peak_bytes;    /* device memory peak (largest over replicas) */
    double capacity_bytes;
} engine_stage_metrics;

typedef struct engine_result {
    double iteration_s;    /* first op start to last op end, all workers */
    double pipeline_s;     /* to the end of the last F/B/W: the flush */
    double bubble_ratio;   /* Σ_s (pipeline − busy_s) / Σ_s busy_s */
    double exposed_comm_s; /* mean over stages of TP + exposed p2p + DP time */
    double peak_bytes;     /* largest device peak */
    double peak_fraction;  /* peak_bytes / capacity */
    double mfu;            /* model FLOPs / (iteration · NPUs · peak) */
    double tokens_per_s;
    double wall_s;   /* host seconds spent in the simulation */
    long activities; /* SimGrid executions and flows started */
    int tp_fold;     /* TP ranks each network flow stood for: tp (the exact TP fold) or 1 */
    /* MoE replay (engine_moe.c), when moe_replayed: the all-to-all time of
     * the slowest worker and the mean over workers; token-expert assignments of the iteration's
     * forwards, all NPUs: routed, dropped, padding; the padding's FLOPs
     * (forward and backward); the hottest expert's rows over the mean,
     * averaged over the MoE layers. */
    bool moe_replayed;
    double moe_skipped_flows; /* > 0: not replayed, this many flows estimated */
    double moe_alltoall_s, moe_alltoall_mean_s;
    /* the most any worker waited on its all-to-alls beyond the compute that
     * overlapped them (all of it without model.overlap_moe_expert_parallel_comm,
     * but for FasterMoE's pipelined experts); whether they overlapped */
    double moe_alltoall_exposed_s;
    bool moe_overlap;
    double moe_assignments, moe_dropped_tokens, moe_padding_tokens, moe_padding_flops;
    double moe_max_over_mean;
    const char *moe_policy; /* its name (static) */
    double moe_copies;      /* expert copies (shadows, replicas) over the MoE layers */
    double moe_copy_s;      /* their broadcasts and gradient reductions, slowest worker */
    double moe_copy_bytes;  /* their memory on the fullest rank (in peak_bytes) */
    /* --moe-sample-mb N (engine_moe_sample.c): N, and the all-to-alls (per
     * simulated worker) replayed pair by pair and waited out at the measured
     * time; the witness EP group is replicas 0 to ep − 1 of stage
     * moe_witness_stage.  0s without sampling. */
    int moe_sample_mb, moe_witness_stage;
    double moe_replayed_exchanges, moe_sampled_exchanges;
    /* With record_spans: the per-expert load timeline.  moe_load_rows[k·
     * moe_load_experts + e] is the assignments routed to expert e in MoE
     * layer k by all sources per micro-batch (the replayed step, before any
     * drop or copy); one event per MoE layer dispatch.  NULL without. */
    int moe_load_layers, moe_load_experts, moe_load_num_events;
    double *moe_load_rows;
    engine_moe_event *moe_load_events;
    int num_stages;
    engine_stage_metrics *stages; /* [num_stages] */
    /* Timeline, when options.record_spans: spans of worker (s, d) are
     * spans[s·dp + d][0 .. num_spans[s·dp + d]). */
    int num_workers;
    engine_span **spans;
    int *num_spans;
} engine_result;

int engine_run(const sim_platform *pf, const wl_workload *w, const cm_model *cm, const plan *pl,
               const schedule *sc, const engine_options *o, engine_result *out, np_error *err);
void engine_result_free(engine_result *r);

/* ---- engine_estimate.c: a run's size before its op lists exist ------------ */

/* What a run of pl (with options o, on cluster c) will cost, in closed form
 * from the plan's sizes (p, v, m, tp, dp, the replicas --fold-dp simulates)
 * and its schedule: the ops of its op lists (one list per stage, shared by
 * the replicas), the SimGrid activities the engine will start (what
 * engine_result.activities then says), and the bytes the op lists and the
 * engine will hold.  The counts are doubles: they may exceed any int. */
typedef struct engine_estimate {
    double compute_ops; /* F, B, W, recompute and optimizer ops, all stages */
    double p2p_ops;     /* sends and receives, all stages */
    double sends;       /* stage-to-stage sends of one pipeline (as many receives) */
    double ops;         /* every op of the op lists */
    double max_stage_ops;
    int largest_stage;            /* the stage holding max_stage_ops */
    double executions;            /* SimGrid executions */
    double p2p_activities;        /* flows and sleeps of the stage-to-stage sends */
    double collective_activities; /* flows and sleeps of the gradient syncs */
    int tp_fold;                  /* as engine_result.tp_fold (platform estimates only) */
    double activities;            /* the sum of the three */
    double op_list_bytes;         /* the schedule's op lists */
    double engine_bytes;          /* workers, actors, channels, timeline */
    double bytes;                 /* op_list_bytes + engine_bytes */
} engine_estimate;

/* cm may be NULL (then --dp-overlap counts one bucket per chunk); pl's
 * arrays may be NULL (then no recompute ops are counted).  On the cluster
 * alone the fabric is taken as one NIC plane, a closed-form scale-up and no
 * PXN; engine_estimate_platform() reads them from the loaded platform (a
 * dual-plane split NIC posts two flows per network leg, a simulated scale-up
 * fabric a flow per same-server part, PXN a scale-up leg before a
 * cross-rail one), as the transport does (transport.c). */
void engine_estimate_run(const cl_cluster *c, const cm_model *cm, const plan *pl,
                         const engine_options *o, engine_estimate *out);
void engine_estimate_platform(const sim_platform *pf, const cm_model *cm, const plan *pl,
                              const engine_options *o, engine_estimate *out);

/* ---- engine_bound.c: the bound on a run's size ---------------------------- */

/* Above max_activities or max_bytes a caller refuses to build the op lists.
 * INFINITY lifts a bound. */
typedef struct engine_limits {
    double max_activities;
    double max_bytes;
} engine_limits;

/* 5e7 activities (about 10 minutes at ~100K activities per second) and the
 * machine's memory, MemTotal of /proc/meminfo (INFINITY when unreadable). */
void engine_init_limits(engine_limits *l);

/* 0 when e is within l, else NP_EXIT_INPUT with err naming source and key:
 *   "<what>: about 3.2e+10 SimGrid activities and 1.9 TB, over the limit of
 *   5e+07 activities (--allow-large runs it anyway)".
 * A stage of more than 2^30 ops is refused whatever l says: an op list
 * cannot hold it. */
int engine_check_estimate(const engine_estimate *e, const engine_limits *l, const char *source,
                          const char *key, const char *what, np_error *err);

/* "1.9 TB", "512 MB": bytes in decimal units, two significant digits. */
void engine_format_bytes(double bytes, char *buf, int size);

/* Starts SimGrid for this process with npusim's configuration
 * (docs/design.md, SimGrid facts: CM02, no cross-traffic, no TCP window cap)
 * and quiet logs.  Call once, before platform_load().  A --cfg or --log
 * SimGrid rejects is an np_error (NP_EXIT_USAGE), not an abort. */
int engine_simgrid_init(int *argc, char **argv, np_error *err);

#endif
