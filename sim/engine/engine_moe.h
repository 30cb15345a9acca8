/*
 * engine_moe.h -- the engine's replay of MoE layers (engine_moe.c): the
 * hooks engine.c, engine_worker.c and engine_metrics.c call.  Not a public
 * interface.
 */
#ifndef SIM_ENGINE_MOE_H
#define SIM_ENGINE_MOE_H

#include "engine_internal.h"

/* Sets e->moe when the run replays its MoE layers (engine_moe.c says when),
 * else leaves it NULL.  0 or an np_exit_code. */
int engine_moe_prepare(engine *e, const wl_workload *w, const cm_model *cm, np_error *err);
void engine_moe_free(engine *e);
/* True for an op that does MoE work in its chunk (a forward, a backward,
 * a split W, a recompute that re-runs part of an MoE layer), replayed
 * (engine_moe_layer.c). */
bool engine_moe_replays(const worker *w, const sched_op *op);
/* Runs such an op: its other work, all-to-alls and experts per MoE layer
 * (engine_moe_dp.c).  With --dp-overlap, the op's `gathers` parameter
 * buckets are waited for and its `buckets` gradient buckets handed over
 * spread over its MoE layers, as the dense op's equal pieces do.  Returns
 * the closed form of the all-to-alls the op's time holds, which the replay
 * replaced. */
double engine_moe_run_op(worker *w, const sched_op *op, int gathers, int buckets);
/* What w's replayed all-to-alls have left exposed so far. */
double engine_moe_exposed_s(const worker *w);
/* One bucket of the overlap's expert gradients or parameters over w's
 * expert-data-parallel group (kind: OP_DP_ALLREDUCE, OP_GRAD_REDUCE_SCATTER
 * or OP_PARAM_GATHER). */
void engine_moe_edp_collective(engine *e, worker *w, op_kind kind, double bytes);
/* Combined 1F1B (model.overlap_moe_expert_parallel_comm,
 * engine_moe_overlap.c): when op i of st, a forward (or, without pipeline
 * stages, a backward), pairs with a backward (a forward) of another
 * micro-batch after it, runs both merged with the ops between them and
 * returns how many ops it ran; else 0. */
int engine_moe_overlap_step(worker *w, const sched_stage *st, int i);
/* The data-parallel sync's bytes without the stage's expert gradients
 * (bytes itself when nothing is replayed), and the expert gradients' own
 * sync over the expert-data-parallel group. */
double engine_moe_dense_grad_bytes(const engine *e, const worker *w, double bytes);
void engine_moe_expert_sync(engine *e, worker *w);
/* Its first part alone: the policy's expert copies' gradients back to their
 * owners over the EP group (with --dp-overlap, where the expert-data-parallel
 * sync is the communication actor's). */
void engine_moe_copies_sync(engine *e, worker *w);
/* Memory of the expert copies (shadows, replicas) w's rank holds: weights
 * and gradients, for the whole iteration. */
double engine_moe_copy_bytes(const engine *e, const worker *w);
/* The MoE fields of the result. */
void engine_moe_collect(const engine *e, engine_result *out);

#endif
