/*
 * engine_moe_dp.c -- the MoE replay with --dp-overlap (docs/moe.md,
 * "Gradient sync"): Megatron-Core's DistributedDataParallel keeps the expert
 * parameters in buffers of their own, bucketed and reduced over the
 * expert-data-parallel group as the backward makes them ready, while the
 * dense buckets go over the data-parallel group.  engine_overlap.c builds
 * both kinds of bucket (overlap_split_experts) and reduces them on the
 * communication actor; here the replayed MoE op hands its buckets over, and
 * waits for its gathered parameters, spread over its MoE layers.
 */
#include <stdlib.h>

#include "engine_moe.h"
#include "engine_moe_internal.h"
#include "moe_policy.h"

int engine_moe_dp_overlap_init(engine *e, const cm_model *cm, np_error *err)
{
    engine_moe *m = e->moe;
    /* the copies' gradients return to their owners after the backward
     * (engine_moe_copies_sync), before which an owner's expert gradients are
     * not final: an expert bucket reduced during the backward would miss
     * them.  Without expert-data-parallel replicas there is no such bucket. */
    if (m->copies > 0 && m->edp >= 2)
        return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--moe-policy", 0,
                            "policy '%s' makes %g expert copies, whose gradients reach their "
                            "owners only after the backward, while --dp-overlap reduces the "
                            "owners' expert gradients over the expert-data-parallel group "
                            "(size %d) during it: expected policy none or switch, no "
                            "--dp-overlap, or expert_model_parallel_size = data_parallel",
                            moe_policy_name(m->policy), m->copies, m->edp);
    if (overlap_split_experts(e, cm, m->edp))
        return np_error_set(err, NP_EXIT_INTERNAL, "<engine>", "", 0, "out of memory");
    return 0;
}

double engine_moe_run_op(worker *w, const sched_op *op, int gathers, int buckets)
{
    engine *e = w->eng;
    engine_moe_part parts[engine_moe_op_layers(w, op) + 1];
    int nm = engine_moe_parts(w, op, parts), waited = 0, released = 0;
    coll_group g;
    engine_moe_ep_group(e, w, &g);
    double closed_s = 0.0;
    for (int i = 0; i < nm; i++) {
        /* the buckets of the layers up to this one's end (as the dense op's
         * piece k waits for bucket k) */
        for (int need = (gathers * (i + 1) + nm - 1) / nm; waited < need; waited++)
            overlap_wait_params(w);
        engine_moe_run_layer(w, &g, &parts[i], op->kind, op->micro_batch);
        closed_s += parts[i].closed_s;
        for (int ready = buckets * (i + 1) / nm; released < ready; released++)
            sg_sem_release(w->bucket_ready);
    }
    for (; waited < gathers; waited++) /* none left: layer nm − 1 took them all */
        overlap_wait_params(w);
    for (; released < buckets; released++)
        sg_sem_release(w->bucket_ready);
    free((void *)g.members);
    return closed_s;
}

void engine_moe_edp_collective(engine *e, worker *w, op_kind kind, double bytes)
{
    if (!e->moe || e->moe->edp < 2 || bytes <= 0)
        return;
    coll_group g;
    engine_moe_edp_group(e, w, &g);
    if (kind == OP_DP_ALLREDUCE)
        engine_grad_sync(e, &g, bytes); /* an all-reduce: no distributed optimizer */
    else
        engine_group_collective(e, &g, kind, bytes);
    free((void *)g.members);
}
