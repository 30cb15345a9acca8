/*
 * engine_moe_overlap.c -- combined 1F1B: one micro-batch's expert-parallel
 * all-to-alls travel while another micro-batch computes
 * (model.overlap_moe_expert_parallel_comm, Megatron-Core's
 * --overlap-moe-expert-parallel-comm, after the forward/backward chunk pairs
 * of DeepSeek-V3's DualPipe; docs/moe.md, "Overlapping the all-to-alls").
 *
 * In the steady state of 1F1B and interleaved 1F1B a stage runs a forward
 * F(x) and, after only its send and the receive of an output gradient, a
 * backward B(y) of another micro-batch (without pipeline stages, B(k) and
 * then F(k+1)).  The two are independent, so they run as one merged op: the
 * second one's input (and B's recompute) first, then the MoE layers of F (in
 * order) paired with those of B (in reverse order), then the first one's
 * send.  Each pair runs in four phases, a compute on the NPU beside an
 * all-to-all on the fabric, each phase ending when both have:
 *
 *   1  F's attention and other work     beside  B's combine gradient
 *   2  B's experts (backward)            beside  F's dispatch
 *   3  F's experts                      beside  B's dispatch gradient
 *   4  B's attention and other work     beside  F's combine
 *
 * which keeps each micro-batch's own chain (attention, dispatch, experts,
 * combine, and its reverse) in order.  A phase lasts max(compute, all-to-all);
 * the part of the all-to-all beyond the compute is its exposed time.  The
 * compute is an execution on the worker's NPU started before the all-to-all
 * and waited after it (nothing else computes on that NPU).  An op with more
 * MoE layers than its partner runs the rest on their own; a recompute runs
 * on its own before the merged op (its all-to-alls replayed, exposed).
 * Not modelled: the NPU cores an all-to-all takes from the compute beside
 * it (DeepSeek dedicates 20 of the H800's 132 SMs to communication), and
 * Megatron's --delay-wgrad-compute.
 *
 * The last stage of plain 1F1B with stages runs F(k) and B(k), one
 * micro-batch, one after the other (find_pair says why it cannot pair B(k)
 * with F(k+1)); interleaved 1F1B has warm-up forwards on every stage, which
 * is why Megatron asks for it when PP > 1.
 */
#include <simgrid/exec.h>
#include <simgrid/host.h>
#include <stdlib.h>

#include "engine_moe.h"
#include "engine_moe_internal.h"

/* Combined 1F1B's rules: a schedule with a steady 1F1B phase (interleaved
 * when there are stages), and not FasterMoE (its pipelined exchange
 * overlaps the experts already). */
int engine_moe_overlap_check(const engine *e, const wl_workload *w, np_error *err)
{
    const char *key = "model.overlap_moe_expert_parallel_comm";
    if (e->pl->schedule != SCHED_1F1B && e->pl->schedule != SCHED_INTERLEAVED)
        return wl_key_error(err, NP_EXIT_USAGE, w, key,
                            "pairs the forward and backward of a 1F1B steady state: expected "
                            "schedule 1f1b or interleaved, got %s, or false",
                            wl_schedule_name(e->pl->schedule));
    /* Megatron-Core's rule, and measured here: with stages, plain 1F1B's
     * merged op holds each forward's output until a backward has run, and
     * the pipeline serialises (PP 2 on moe_32npu.xml: 0.87 s to 1.14 s) */
    if (e->pl->schedule == SCHED_1F1B && e->p > 1)
        return wl_key_error(err, NP_EXIT_USAGE, w, key,
                            "with %d pipeline stages needs the interleaved schedule (Megatron's "
                            "rule: plain 1F1B's merged op holds each forward's output until a "
                            "backward has run, and the stages serialise): expected schedule "
                            "interleaved, 1 stage, or false",
                            e->p);
    if (e->overlap)
        return wl_key_error(err, NP_EXIT_USAGE, w, key,
                            "is not modelled with --dp-overlap: the merged forward and backward "
                            "would have to hand over gradient buckets and wait for parameter "
                            "gathers part-way: expected false, or no --dp-overlap");
    if (e->opt->moe_policy == MOE_POLICY_FASTERMOE)
        return wl_key_error(err, NP_EXIT_USAGE, w, key,
                            "is not modelled with FasterMoE's pipelined exchange "
                            "(--moe-policy fastermoe), which overlaps the experts itself: "
                            "expected false");
    return 0;
}

int engine_moe_overlap_init(engine *e)
{
    engine_moe *m = e->moe;
    m->steady = calloc((size_t)e->p, sizeof *m->steady);
    if (!m->steady)
        return -1;
    for (int s = 0; s < e->p; s++) {
        const sched_stage *st = &e->sc->stages[s];
        int forwards = 0, before_backward = -1;
        for (int i = 0; i < st->num_ops; i++) {
            if (st->ops[i].kind == OP_BACKWARD && before_backward < 0)
                before_backward = forwards;
            forwards += st->ops[i].kind == OP_FORWARD;
        }
        m->steady[s] = before_backward >= 0 && before_backward < forwards;
    }
    return 0;
}

/* Whether ops[i] pairs with the next compute op ops[*j]: a replayed forward
 * and a replayed backward of another micro-batch, with only sends and
 * receives between them.  The forward comes first; the backward may come
 * first only without pipeline stages (Megatron's combined 1F1B without
 * pipelining pairs F(k+1) with B(k)): with stages, the last one's B(k)
 * merged with F(k+1) would wait for F(k+1)'s input, which the stage before
 * sends after its own merged op, which waits for B(k)'s gradient.  And only
 * in a steady state: a stage whose warm-up holds every forward (m·v at most
 * its warm-up count) has its last forward next to its first backward, and
 * merging them would make every stage wait for both neighbours (found with
 * a dependency model of the merged lists: no deadlock for p 2 to 16, v 2 to
 * 4, m from p to 8p once warm-up-only stages pair nothing). */
static bool find_pair(const worker *w, const sched_stage *st, int i, int *j)
{
    const sched_op *a = &st->ops[i];
    bool forward_first = a->kind == OP_FORWARD;
    if (!forward_first && (a->kind != OP_BACKWARD || w->eng->p > 1))
        return false;
    if (forward_first && !w->eng->moe->steady[w->stage])
        return false;
    if (!engine_moe_replays(w, a))
        return false;
    for (int n = i + 1; n < st->num_ops; n++) {
        const sched_op *o = &st->ops[n];
        switch ((op_kind)o->kind) {
        case OP_SEND_FORWARD:
        case OP_RECV_FORWARD:
        case OP_SEND_BACKWARD:
        case OP_RECV_BACKWARD:
            continue;
        case OP_FORWARD:
        case OP_BACKWARD:
            if (o->kind == a->kind || o->micro_batch == a->micro_batch || !engine_moe_replays(w, o))
                return false;
            *j = n;
            return true;
        case OP_RECOMPUTE: /* the backward's, when it comes second: run before */
            if (!forward_first || o->micro_batch == a->micro_batch)
                return false;
            continue;
        default: /* a collective, an optimizer step */
            return false;
        }
    }
    return false;
}

/* compute_s on the worker's NPU beside one all-to-all of MoE layer k. */
static void phase(worker *w, const coll_group *g, double compute_s, int k, bool out, int slot,
                  int micro_batch)
{
    engine *e = w->eng;
    double start = engine_now(e);
    sg_exec_t x = NULL;
    if (compute_s > 0) {
        x = sg_actor_exec_init(compute_s * sg_host_get_speed(w->ep.hosts[0]));
        sg_exec_start(x);
        e->net.activities++;
    }
    engine_moe_alltoall(e, w, g, k, out, slot, micro_batch);
    if (x)
        sg_exec_wait(x);
    double exposed = engine_now(e) - start - compute_s;
    e->moe->a2a_exposed_s[w - e->workers] += exposed > 0 ? exposed : 0.0;
}

/* Returns the closed form of the all-to-alls f and b hold. */
static double run_merged(worker *w, const sched_op *f, const sched_op *b)
{
    engine *e = w->eng;
    engine_moe_part pf[engine_moe_op_layers(w, f) + 1], pb[engine_moe_op_layers(w, b) + 1];
    int nf = engine_moe_parts(w, f, pf), nb = engine_moe_parts(w, b, pb);
    coll_group g;
    engine_moe_ep_group(e, w, &g);
    int mf = f->micro_batch, mb = b->micro_batch;
    double closed_s = 0.0;
    for (int i = 0; i < nf || i < nb; i++) {
        closed_s += (i < nf ? pf[i].closed_s : 0.0) + (i < nb ? pb[i].closed_s : 0.0);
        if (i >= nb) {
            engine_moe_run_layer(w, &g, &pf[i], OP_FORWARD, mf);
            continue;
        }
        if (i >= nf) {
            engine_moe_run_layer(w, &g, &pb[i], OP_BACKWARD, mb);
            continue;
        }
        int kf = pf[i].k, kb = pb[i].k;
        engine_moe_forward_begin(e, w, &g, kf, mf);
        int fs = ENGINE_MOE_SLOT_FORWARD, bs = ENGINE_MOE_SLOT_BACKWARD;
        phase(w, &g, pf[i].other_s, kb, true, bs, mb);       /* B: combine's gradient */
        phase(w, &g, pb[i].expert_s, kf, true, fs, mf);      /* F: dispatch */
        phase(w, &g, pf[i].expert_s, kb, false, bs + 1, mb); /* B: dispatch's gradient */
        phase(w, &g, pb[i].other_s, kf, false, fs + 1, mf);  /* F: combine */
    }
    free((void *)g.members);
    return closed_s;
}

int engine_moe_overlap_step(worker *w, const sched_stage *st, int i)
{
    int j;
    if (!w->eng->moe->overlap || !find_pair(w, st, i, &j))
        return 0;
    const sched_op *ops = st->ops;
    bool forward_first = ops[i].kind == OP_FORWARD;
    int needed = forward_first ? OP_RECV_BACKWARD : OP_RECV_FORWARD;
    for (int n = i + 1; n < j; n++) /* the second op's input, its recompute */
        if (ops[n].kind == needed)
            worker_run_op(w, &ops[n]);
        else if (ops[n].kind == OP_RECOMPUTE)
            worker_run_compute(w, &ops[n], n, 1);
    const sched_op *f = forward_first ? &ops[i] : &ops[j], *b = forward_first ? &ops[j] : &ops[i];
    double start_s = engine_now(w->eng), exposed_s = engine_moe_exposed_s(w);
    double closed_s = run_merged(w, f, b);
    worker_account_merged(w, &ops[i], &ops[j], start_s, engine_now(w->eng));
    /* their communication: the replayed all-to-alls, not their closed form */
    w->tp_comm_s += engine_moe_exposed_s(w) - exposed_s - closed_s;
    for (int n = i + 1; n < j; n++) /* the first op's output, a later op's input */
        if (ops[n].kind != needed && ops[n].kind != OP_RECOMPUTE)
            worker_run_op(w, &ops[n]);
    return j - i + 1;
}
