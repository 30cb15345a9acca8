/*
 * engine_fold.c -- fold: the light actors of replicas folded away
 * (--fold-dp K).
 *
 * With folding only K data-parallel replicas run their pipelines; replica d
 * is represented by replica d mod K.  Every other replica still joins its
 * stage's collectives, through a light actor that starts each one when its
 * representative does (fold_release_replicas), so collective traffic and its
 * contention stay on the fabric (the gradient sync, and sharded data
 * parallelism's gathers and reduce-scatters of every pass); it then runs the
 * optimizer step that follows them.  With context parallelism every CP rank
 * of a simulated replica represents the same CP rank of the folded ones.  With
 * expert parallelism K is a multiple of ep, so whole EP groups fold: their
 * all-to-alls are not simulated, their expert-DP gradient sync is, with its
 * real flows.  engine_check_fold() refuses runs whose replicas are not
 * symmetric.
 */
#include "engine_internal.h"
#include "engine_moe.h"

int engine_check_fold(const wl_workload *w, const plan *pl, int fold_dp, np_error *err)
{
    const char *src = "<command line>";
    int dp = pl->data_parallel;
    if (fold_dp == 0 || fold_dp == dp)
        return 0;
    if (fold_dp < 0 || fold_dp > dp || dp % fold_dp != 0)
        return np_error_set(err, NP_EXIT_USAGE, src, "--fold-dp", 0,
                            "cannot fold %d data-parallel replicas to %d: K must divide the "
                            "data-parallel size so that every simulated replica stands for the "
                            "same number of others",
                            dp, fold_dp);
    int ep = w->parallel.expert_model_parallel_size;
    if (w->model.num_experts > 0 && ep > 1 && fold_dp % ep != 0)
        /* Whole EP groups fold: replica d and its representative d mod K then
         * hold the same EP rank, and a simulated EP group exchanges tokens
         * only with simulated replicas. */
        return np_error_set(err, NP_EXIT_USAGE, src, "--fold-dp", 0,
                            "cannot fold %d data-parallel replicas to %d: expert parallelism "
                            "(ep = %d) exchanges tokens within groups of %d replicas, so K must "
                            "be a multiple of %d for whole EP groups to fold",
                            dp, fold_dp, ep, ep, ep);
    if (pl->schedule == SCHED_PIPEDREAM)
        return np_error_set(err, NP_EXIT_USAGE, src, "--fold-dp", 0,
                            "cannot fold: asynchronous PipeDream has no per-iteration "
                            "data-parallel synchronisation to keep replicas in lockstep");
    wl_dp_sharding s = w->training.data_parallel_sharding_strategy;
    if (s >= WL_SHARD_OPTIM_GRADS && s < WL_SHARD_COUNT)
        /* Measured (GPT-3 175B, dgx_a100_1024.xml, TP 8 PP 8 DP 16): 1F1B
         * ZeRO-2 exact, interleaved (v = 2) ZeRO-3 folded 7.4% fast: the
         * representative's ring edges miss the folded replicas'
         * stage-to-stage flows on shared links (docs/design.md, Folding). */
        return np_error_set(err, NP_EXIT_USAGE, src, "--fold-dp", 0,
                            "cannot fold: data_parallel_sharding_strategy \"%s\" runs its "
                            "collectives during the pipeline, where the folded replicas' missing "
                            "pipeline traffic would share the NICs with them",
                            wl_sharding_name(s));
    return 0;
}

/* A representative starts the collective of the replicas it stands for. */
void fold_release_replicas(worker *w)
{
    engine *e = w->eng;
    for (int d = w->replica + e->fold; d < e->dp; d += e->fold)
        sg_sem_release(engine_cp_worker(e, w->stage, d, w->cp_rank)->collective_start);
}

/* A replica folded away joins every bucket's all-reduce when its
 * representative starts it. */
static void folded_replica_buckets(worker *w)
{
    const overlap_plan *ov = &w->eng->overlap[w->stage];
    for (int b = 0; b < ov->num_buckets; b++) {
        sg_sem_acquire(w->collective_start);
        engine_dp_allreduce(w->eng, w, ov->bucket_bytes[b]);
    }
}

/* A replica folded away: it joins its stage's collectives, each when its
 * representative reaches it, as it would in lockstep, and runs the
 * optimizer step that follows them; its pipeline ops are not simulated. */
void fold_replica_main(int argc, char **argv)
{
    worker *w = sg_actor_self_get_data();
    const sched_stage *st = &w->eng->sc->stages[w->stage];
    for (int i = 0; i < st->num_ops; i++) {
        const sched_op *op = &st->ops[i];
        if (op->kind == OP_DP_ALLREDUCE && w->eng->overlap) {
            folded_replica_buckets(w);
        } else if (op->kind == OP_DP_ALLREDUCE) {
            sg_sem_acquire(w->collective_start);
            double start = engine_now(w->eng);
            /* as its representative: the dense gradients over the DP group,
             * the expert gradients over the expert-DP group (engine_moe.c) */
            engine_dp_allreduce(w->eng, w, engine_moe_dense_grad_bytes(w->eng, w, op->bytes));
            engine_moe_expert_sync(w->eng, w);
            w->dp_comm_s += engine_now(w->eng) - start;
        } else if (op->kind == OP_PARAM_GATHER || op->kind == OP_GRAD_REDUCE_SCATTER) {
            sg_sem_acquire(w->collective_start);
            double start = engine_now(w->eng);
            engine_dp_collective(w->eng, w, (op_kind)op->kind, op->bytes);
            w->dp_comm_s += engine_now(w->eng) - start;
        } else if (op->kind == OP_OPTIMIZER) {
            worker_run_compute(w, op, i, 1);
        }
    }
    w->end_s = engine_now(w->eng);
    worker_linger(w);
}
