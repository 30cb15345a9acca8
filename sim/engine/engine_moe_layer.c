/*
 * engine_moe_layer.c -- the MoE layers of one replayed op (docs/moe.md,
 * "Replay"): what each op does in each MoE layer of its chunk, and running
 * it.
 *
 * A forward runs, per MoE layer in order: its share of the op's other work,
 * the dispatch all-to-all, the experts at this NPU's rows, the combine
 * all-to-all.  A backward runs the layers in reverse: its other work, the
 * combine's gradient, the experts' backward (with their weight gradient
 * when the op holds W), the dispatch's gradient.  A split W op (ZB-H1,
 * ZB-H2) runs the experts' weight gradient.  A recompute re-runs what the
 * plan drops, in forward order: under full recompute the whole layer, both
 * all-to-alls included (Megatron's checkpointed layer holds its token
 * dispatcher); under AdaPipe units, the dispatch when it drops
 * expert_input, FC1 and the activation when it drops their outputs, FC2
 * and the combine when it drops combine_input; selective recompute touches
 * no MoE part.
 *
 * The other work is the op's compute + TP time less, per MoE layer, the
 * closed-form all-to-alls the op holds (a2a_s each) and the balanced expert
 * time; the experts at the trace's load are the balanced time scaled by
 * rows / balanced rows (linear in rows: the grouped GEMMs' per-expert
 * launch and weight reads are not separated).
 */
#include "engine_moe.h"
#include "engine_moe_internal.h"
#include "step_order.h"

/* What the plan's recompute re-runs of MoE layer l (whose costs are c):
 * as layer_work. */
static void recompute_work(const plan *pl, const cm_moe_cost *c, int l, bool *out, bool *back,
                           double *expert_s)
{
    if (pl->recompute_units) {
        unsigned bits = pl->recompute_units[l] >> c->first_unit;
        *out = bits & (1u << CM_MOE_UNIT_EXPERT_INPUT);
        *back = bits & (1u << CM_MOE_UNIT_COMBINE_INPUT);
        *expert_s = (bits & (1u << CM_MOE_UNIT_FC1_OUTPUT) ? c->expert_fc1_s : 0.0) +
                    (bits & (1u << CM_MOE_UNIT_ACT_OUTPUT) ? c->expert_act_s : 0.0) +
                    (*back ? c->expert_fc2_s : 0.0);
    } else if (pl->recompute[l] == RECOMPUTE_FULL) {
        *out = *back = true;
        *expert_s = c->expert_forward_s;
    }
}

/* What op does in MoE layer l: the all-to-alls it runs (dispatch
 * direction, and back) and its balanced expert time.  False when it does
 * nothing there. */
static bool layer_work(const engine *e, const cm_model *cm, const sched_op *op, int l, bool *out,
                       bool *back, double *expert_s)
{
    const cm_moe_cost *c = &cm->layers[l].moe;
    const plan *pl = e->pl;
    *out = *back = false;
    *expert_s = 0.0;
    if (!c->is_moe)
        return false;
    switch ((op_kind)op->kind) {
    case OP_FORWARD:
        *out = *back = true;
        *expert_s = c->expert_forward_s;
        break;
    case OP_BACKWARD: /* with the experts' W unless the schedule split it off */
        *out = *back = true;
        *expert_s = c->expert_backward_s + (op->weight_grad_split ? 0.0 : c->expert_weight_grad_s);
        break;
    case OP_WEIGHT_GRAD:
        *expert_s = c->expert_weight_grad_s;
        break;
    case OP_RECOMPUTE:
        recompute_work(pl, c, l, out, back, expert_s);
        break;
    default:
        break;
    }
    return *out || *back || *expert_s > 0;
}

double engine_moe_exchanges(const engine *e, const cm_model *cm, int l, int micro_batches)
{
    const cm_moe_cost *c = &cm->layers[l].moe;
    if (!c->is_moe)
        return 0.0;
    bool out = false, back = false;
    double expert_s = 0.0;
    recompute_work(e->pl, c, l, &out, &back, &expert_s);
    int s = plan_stage_of_layer(e->pl, l, NULL), recomputing = 0;
    for (int i = 0; i < micro_batches; i++) /* Merak's shifted recompute skips some */
        recomputing += !sched_skips_recompute(e->pl, s, i);
    return 4.0 * micro_batches + (double)(out + back) * recomputing;
}

bool engine_moe_replays(const worker *w, const sched_op *op)
{
    const engine *e = w->eng;
    if (!e->moe)
        return false;
    int k = op->chunk * e->p + w->stage;
    bool out, back;
    double expert_s;
    for (int l = e->pl->chunk_start[k]; l < e->pl->chunk_start[k + 1]; l++)
        if (e->moe->moe_of_layer[l] >= 0 &&
            layer_work(e, e->moe->cm, op, l, &out, &back, &expert_s))
            return true;
    return false;
}

int engine_moe_op_layers(const worker *w, const sched_op *op)
{
    const engine *e = w->eng;
    int chunk = op->chunk * e->p + w->stage, n = 0;
    for (int l = e->pl->chunk_start[chunk]; l < e->pl->chunk_start[chunk + 1]; l++)
        n += e->moe->moe_of_layer[l] >= 0;
    return n;
}

int engine_moe_parts(const worker *w, const sched_op *op, engine_moe_part *parts)
{
    const engine *e = w->eng;
    const engine_moe *m = e->moe;
    int chunk = op->chunk * e->p + w->stage;
    int first = e->pl->chunk_start[chunk], last = e->pl->chunk_start[chunk + 1];
    bool reverse = op->kind == OP_BACKWARD || op->kind == OP_WEIGHT_GRAD;
    int rank = w->replica % m->ep, nm = 0;
    double other = op->compute_s + op->comm_s;
    for (int i = 0; i < last - first; i++) {
        int l = reverse ? last - 1 - i : first + i;
        engine_moe_part *p = &parts[nm];
        double balanced;
        if (!layer_work(e, m->cm, op, l, &p->out, &p->back, &balanced))
            continue;
        p->k = m->moe_of_layer[l];
        p->closed_s = (p->out + p->back) * m->cm->layers[l].moe.a2a_s;
        p->expert_s = balanced * m->ratio[(size_t)p->k * m->ep + rank];
        other -= p->closed_s + balanced;
        nm++;
    }
    other = other > 0 && nm > 0 ? other / nm : 0.0;
    for (int i = 0; i < nm; i++)
        parts[i].other_s = other;
    return nm;
}

double engine_moe_exposed_s(const worker *w)
{
    return w->eng->moe->a2a_exposed_s[w - w->eng->workers];
}

/* An all-to-all nothing overlaps: all of it is exposed. */
static void alltoall(engine *e, worker *w, const coll_group *g, int k, bool out, int slot,
                     int micro_batch)
{
    e->moe->a2a_exposed_s[w - e->workers] +=
        engine_moe_alltoall(e, w, g, k, out, slot, micro_batch);
}

void engine_moe_run_layer(worker *w, const coll_group *g, const engine_moe_part *part, int kind,
                          int micro_batch)
{
    engine *e = w->eng;
    engine_moe *m = e->moe;
    int k = part->k;
    int slot = kind == OP_FORWARD     ? ENGINE_MOE_SLOT_FORWARD
               : kind == OP_RECOMPUTE ? ENGINE_MOE_SLOT_RECOMPUTE
                                      : ENGINE_MOE_SLOT_BACKWARD;
    worker_execute(w, part->other_s);
    if (kind == OP_FORWARD)
        engine_moe_forward_begin(e, w, g, k, micro_batch);
    if (!m->plans[k].pipelined || !part->out || !part->back) {
        if (part->out) /* dispatch, or combine's gradient */
            alltoall(e, w, g, k, true, slot, micro_batch);
        worker_execute(w, part->expert_s);
        if (part->back) /* combine, or dispatch's gradient */
            alltoall(e, w, g, k, false, slot + 1, micro_batch);
        return;
    }
    double start = engine_now(e);
    if (engine_moe_sample_begin(e, w, k, slot, micro_batch)) {
        engine_moe_pipelined(e, w, g, k, part->expert_s);
        engine_moe_sample_end(e, w, k, slot);
    } else { /* the measured time holds this rank's experts */
        double a2a = engine_now(e) - start - part->expert_s;
        m->a2a_s[w - e->workers] += a2a > 0 ? a2a : 0.0;
    }
    double exposed = engine_now(e) - start - part->expert_s;
    m->a2a_exposed_s[w - e->workers] += exposed > 0 ? exposed : 0.0;
}
