/*
 * engine_overlap_comm.c -- overlap, during the run (--dp-overlap): the
 * worker's side of the buckets and gathers engine_overlap.c plans (its head
 * says what they model), and the communication actors that reduce and
 * gather them; with the MoE replay, the expert buckets over the
 * expert-data-parallel group (engine_moe_dp.c).
 */
#include <stdio.h>

#include "engine_internal.h"
#include "engine_moe.h"

/* ---- the communication actor ----------------------------------------------- */

void overlap_worker_init(worker *w)
{
    w->bucket_ready = sg_sem_init(0);
    w->buckets_done = sg_sem_init(0);
    w->params_ready = sg_sem_init(0);
    w->params_launch = sg_sem_init(0);
    w->zero_rs_done = sg_sem_init(0);
    w->zero_ag_done = sg_sem_init(0);
}

void overlap_worker_destroy(worker *w)
{
    if (!w->bucket_ready)
        return;
    sg_sem_destroy(w->bucket_ready);
    sg_sem_destroy(w->buckets_done);
    sg_sem_destroy(w->params_ready);
    sg_sem_destroy(w->params_launch);
    sg_sem_destroy(w->zero_rs_done);
    sg_sem_destroy(w->zero_ag_done);
}

static const overlap_plan *plan_of(const worker *w)
{
    return w->eng->overlap && w->simulated ? &w->eng->overlap[w->stage] : NULL;
}

int overlap_before_op(worker *w, int i)
{
    const overlap_plan *ov = plan_of(w);
    if (!ov || !ov->gathers_at_op)
        return 0;
    if (ov->zero && w->eng->sc->stages[w->stage].ops[i].kind == OP_OPTIMIZER)
        overlap_zero_drain(w);
    for (int k = 0; k < ov->launches_at_op[i]; k++)
        sg_sem_release(w->params_launch);
    return ov->gathers_at_op[i];
}

bool overlap_starts_block(const worker *w, int i)
{
    const overlap_plan *ov = plan_of(w);
    if (ov && ov->zero && w->eng->sc->stages[w->stage].ops[i].kind == OP_OPTIMIZER)
        return true; /* the reduce-scatters are drained first */
    return ov && ov->gathers_at_op && (ov->gathers_at_op[i] > 0 || ov->launches_at_op[i] > 0);
}

/* Waits on sem once; the wait is data-parallel time. */
static void wait_dp(worker *w, sg_sem_t sem)
{
    double start = engine_now(w->eng);
    sg_sem_acquire(sem);
    w->dp_comm_s += engine_now(w->eng) - start;
}

bool overlap_zero_op(worker *w, const sched_op *op)
{
    const overlap_plan *ov = plan_of(w);
    if (!ov || !ov->zero)
        return false;
    if (overlap_is_pass_gather(op)) {
        wait_dp(w, w->zero_ag_done);
        return true;
    }
    if (op->kind != OP_GRAD_REDUCE_SCATTER) {
        /* ZeRO-2's gather of the update: the communication actor ran it at
         * the iteration's start, the previous step's in a steady state */
        overlap_zero_drain(w);
        return true;
    }
    if (w->zero_rs_launched > w->zero_rs_waited) { /* the previous one frees its buffer */
        wait_dp(w, w->zero_rs_done);
        w->zero_rs_waited++;
    }
    w->zero_rs_launched++;
    sg_sem_release(w->bucket_ready);
    return true;
}

void overlap_zero_drain(worker *w)
{
    const overlap_plan *ov = plan_of(w);
    if (!ov || !ov->zero)
        return;
    for (; w->zero_rs_waited < w->zero_rs_launched; w->zero_rs_waited++)
        wait_dp(w, w->zero_rs_done);
}

int overlap_num_actors(const engine *e)
{
    if (!e->overlap)
        return 0;
    int n = 0;
    for (int s = 0; s < e->p; s++)
        n += e->fold * e->cp * (1 + (e->overlap[s].zero_gathers > 0));
    return n;
}

void overlap_wait_params(worker *w) { wait_dp(w, w->params_ready); }

/* ZeRO-3 with --dp-overlap: the per-pass parameter gathers of a worker, in
 * its op list's order, each once it is launched. */
static void zero_gather_main(int argc, char **argv)
{
    worker *w = sg_actor_self_get_data();
    const overlap_plan *ov = &w->eng->overlap[w->stage];
    for (int n = 0; n < ov->zero_gathers; n++) {
        if (ov->gather_waits[n])
            sg_sem_acquire(w->params_launch);
        engine_dp_collective(w->eng, w, OP_PARAM_GATHER, ov->gather_bytes[n]);
        sg_sem_release(w->zero_ag_done);
    }
    worker_linger(w);
}

/* The parameter buckets of the previous step's update, chunk by chunk, each
 * chunk once it is launched (distributed optimizer, ZeRO-2). */
static void gather_update(worker *w, const overlap_plan *ov)
{
    for (int n = 0; n < ov->num_gather_chunks; n++) {
        if (ov->gather_waits[n])
            sg_sem_acquire(w->params_launch);
        int nd = ov->gather_buckets[n];
        int ne = ov->gather_expert_buckets ? ov->gather_expert_buckets[n] : 0;
        for (int jd = 0, je = 0; jd + je < nd + ne;) {
            if (cm_dp_expert_bucket_next(jd, nd, je, ne)) { /* MoE: expert-DP group */
                engine_moe_edp_collective(w->eng, w, OP_PARAM_GATHER, ov->gather_expert_bytes[n]);
                je++;
            } else {
                fold_release_replicas(w);
                engine_dp_collective(w->eng, w, OP_PARAM_GATHER, ov->gather_bytes[n]);
                jd++;
            }
            sg_sem_release(w->params_ready);
        }
    }
}

/* ZeRO-2/3 with --dp-overlap: ZeRO-2's gather of the update, then the
 * reduce-scatters of a worker, in its op list's order, each once the worker
 * hands it over; ZeRO-3's gathers on an actor of their own. */
static void zero_comm_main(worker *w)
{
    engine *e = w->eng;
    const sched_stage *st = &e->sc->stages[w->stage];
    if (e->overlap[w->stage].zero_gathers == 0)
        gather_update(w, &e->overlap[w->stage]);
    else {
        char name[64];
        snprintf(name, sizeof name, "stage%d-dp%d-cp%d-params", w->stage, w->replica, w->cp_rank);
        sg_actor_t a = sg_actor_init(name, w->ep.hosts[0]);
        sg_actor_set_data(a, w);
        sg_actor_start(a, zero_gather_main, 0, NULL);
    }
    for (int i = 0; i < st->num_ops; i++) {
        if (st->ops[i].kind != OP_GRAD_REDUCE_SCATTER)
            continue;
        sg_sem_acquire(w->bucket_ready);
        engine_dp_collective(e, w, OP_GRAD_REDUCE_SCATTER, st->ops[i].bytes);
        sg_sem_release(w->zero_rs_done);
    }
    worker_linger(w);
}

/* --dp-overlap: gathers the parameter buckets (distributed optimizer), then
 * reduces each gradient bucket as soon as the worker's backward has made it
 * ready, while the worker computes on (ZeRO-2/3: zero_comm_main). */
void overlap_comm_main(int argc, char **argv)
{
    worker *w = sg_actor_self_get_data();
    engine *e = w->eng;
    const overlap_plan *ov = &e->overlap[w->stage];
    if (ov->zero) {
        zero_comm_main(w);
        return;
    }
    bool sharded = e->opt->dp_param_gather_ratio > 0;
    if (sharded)
        gather_update(w, ov);
    for (int b = 0; b < ov->num_buckets; b++) {
        sg_sem_acquire(w->bucket_ready);
        if (ov->bucket_expert && ov->bucket_expert[b]) { /* MoE: expert-DP group */
            engine_moe_edp_collective(e, w, sharded ? OP_GRAD_REDUCE_SCATTER : OP_DP_ALLREDUCE,
                                      ov->bucket_bytes[b]);
            continue;
        }
        fold_release_replicas(w);
        if (sharded)
            engine_dp_collective(e, w, OP_GRAD_REDUCE_SCATTER, ov->bucket_bytes[b]);
        else
            engine_dp_allreduce(e, w, ov->bucket_bytes[b]);
    }
    sg_sem_release(w->buckets_done);
    worker_linger(w);
}
