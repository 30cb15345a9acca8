/*
 * engine_moe.c -- replay of MoE layers: the dispatch and combine
 * all-to-alls as flows with per-pair volumes, expert compute per NPU from
 * its token load, dropped and padded tokens, and the expert gradients'
 * sync on the expert-data-parallel group (docs/moe.md, "Replay").
 *
 * Where it applies: experts with ep > 1, the alltoall dispatcher, expert TP
 * equal to TP (an EP group is then ep consecutive replicas of a stage: the
 * workers' endpoints, each TP rank exchanging with the same TP rank), no
 * context parallelism, uniform micro-batches, no --dp-overlap
 * (engine_moe_applies, engine_moe_check.c).  Elsewhere the cost model's
 * closed form stays in the ops (an EP group inside one server's TP group,
 * e.g. Mixtral's ETP 1 under TP 8, never leaves the scale-up fabric), and
 * what needs the replay (a trace, a policy, sampling, combined 1F1B) is
 * refused.
 *
 * Routing: the trace's step (engine_options.moe_trace, moe_trace_step), the
 * same matrix for every micro-batch and every EP group, its tokens checked
 * against the plan's micro-batch size and TP; without a trace,
 * balanced (every expert n_l·k/E from each source).  Capacity and padding
 * come from the workload (moe_route_layer, planner/model/moe_trace.h).
 *
 * The ops with MoE layers (forwards, backwards, recomputes, split W) run
 * their layers' all-to-alls and experts one by one (engine_moe_layer.c);
 * this file prepares the replay (routing, policies, groups, the flow
 * bound), runs the all-to-alls and the expert syncs, and collects the
 * figures.
 */
#include <stdlib.h>
#include <xbt/asserts.h>

#include "collective_alltoallv.h"
#include "engine_moe.h"
#include "engine_moe_internal.h"
#include "memory.h"
#include "moe.h"
#include "moe_policy.h"

/* Balanced routing, from the cost model: every source sends n_l·k/ep
 * (fractions kept) to every rank. */
static void balanced_route(moe_route *r, const cm_moe_cost *c, int ep, int tp, int local)
{
    for (int j = 0; j < ep; j++) { /* per TP rank: the cost model's are all-gathered over tp */
        r->rows[j] = c->expert_tokens / tp;
        r->padding[j] = c->padding_tokens / tp;
        r->dropped[j] = c->dropped_tokens / tp;
        for (int i = 0; i < ep; i++)
            r->send[(size_t)i * ep + j] = c->a2a_bytes / ep;
    }
    r->max_expert_rows = r->mean_expert_rows = c->expert_tokens / tp / local;
}

/* All-to-all flows of a replay: per simulated worker (--fold-dp K leaves
 * dp − K replicas' pipelines out), per MoE layer of its stage and
 * micro-batch replayed pair by pair, its all-to-alls (2 in the forward, 2
 * in the backward, those its recompute re-runs) of ep − 1 messages of tp
 * flows each.  With --moe-sample-mb N a worker replays N micro-batches, but
 * the witness EP group (the first of the first stage with MoE layers) all
 * of them (engine_moe_sample.c). */
static double replay_flows(const engine *e, const cm_model *cm, int ep)
{
    int m = e->pl->num_micro_batches, n = e->opt->moe_sample_mb;
    bool sampled = n > 0 && n < m;
    int first = engine_moe_first_stage(e, cm);
    double exchanges = 0.0;
    for (int l = 0; l < cm->num_layers; l++) {
        exchanges += e->fold * engine_moe_exchanges(e, cm, l, sampled ? n : m);
        if (sampled && cm->layers[l].moe.is_moe && plan_stage_of_layer(e->pl, l, NULL) == first)
            exchanges += /* the witness group's other micro-batches */
                ep * (engine_moe_exchanges(e, cm, l, m) - engine_moe_exchanges(e, cm, l, n));
    }
    return exchanges * (ep - 1) * e->tp;
}

/* A policy replayed without --moe-trace: balanced routing as a one-step
 * trace (every source's assignments spread evenly, the remainder one by one
 * from expert 0). */
static int balanced_trace(moe_trace *t, const wl_workload *w, int ep, long tokens)
{
    int E = w->model.num_experts, L = wl_moe_num_layers(&w->model);
    if (moe_trace_alloc(t, E, ep, L, 1, w->model.moe_router_topk, tokens))
        return -1;
    for (int l = 0; l < L; l++)
        for (int i = 0; i < ep; i++)
            for (int x = 0; x < E; x++)
                *moe_trace_at(t, 0, l, i, x) = (uint32_t)(tokens / E + (x < tokens % E));
    return 0;
}

/* The policy's inputs for MoE layer l of stage s (moe_policy.h): FasterMoE's
 * latency model from the cost model and the platform, the copies the free
 * memory allows. */
static void policy_env(const engine *e, const wl_workload *w, const cm_model *cm, int l,
                       double free_bytes, int moe_layers, moe_policy_env *env)
{
    const engine_moe *m = e->moe;
    const cm_moe_cost *c = &cm->layers[l].moe;
    moe_policy_env_init(env);
    env->capacity = c->capacity;
    env->pad = w->model.moe_pad_expert_input_to_capacity;
    if (w->model.moe_expert_capacity_factor > 0)
        env->switch_cf = w->model.moe_expert_capacity_factor;
    double copy = m->copy_weight_bytes + m->copy_grad_bytes;
    double per_layer = copy > 0 && free_bytes > 0 ? free_bytes / copy / moe_layers : 0.0;
    env->max_copies = per_layer > 1e6 ? 1000000 : (int)per_layer;
    double bw = e->pf->cluster.scaleout_bandwidth_Bps;
    env->comp_s = c->expert_tokens > 0 ? c->expert_forward_s * e->tp / c->expert_tokens : 0.0;
    env->feat_s = bw > 0 ? m->token_bytes / bw : 0.0;
    env->shadow_s = bw > 0 ? 2.0 * (m->ep - 1) / m->ep * copy / bw : 0.0;
}

/* Free memory of each stage (capacity − the memory model's peak) and its
 * MoE layers. */
static void stage_budget(const engine *e, const cm_model *cm, double *free_bytes, int *moe_layers)
{
    for (int s = 0; s < e->p; s++) {
        mem_stage ms;
        mem_stage_bytes(cm, e->pl, s, &ms);
        free_bytes[s] = e->pf->cluster.hbm_bytes - ms.total_bytes;
        moe_layers[s] = 0;
    }
    for (int l = 0; l < cm->num_layers; l++)
        if (cm->layers[l].moe.is_moe)
            moe_layers[plan_stage_of_layer(e->pl, l, NULL)]++;
}

static int plan_layers(engine *e, const wl_workload *w, const cm_model *cm, const moe_trace *t)
{
    engine_moe *m = e->moe;
    int ep = m->ep, k = 0, local = w->model.num_experts / ep;
    double free_bytes[e->p];
    int moe_layers[e->p];
    stage_budget(e, cm, free_bytes, moe_layers);
    for (int l = 0; l < cm->num_layers; l++) {
        const cm_moe_cost *c = &cm->layers[l].moe;
        m->moe_of_layer[l] = c->is_moe ? k : -1;
        if (!c->is_moe)
            continue;
        moe_layer_plan *pl = &m->plans[k];
        if (moe_layer_plan_init(pl, w->model.num_experts, ep))
            return -1;
        moe_route *r = &pl->route;
        int s = plan_stage_of_layer(e->pl, l, NULL);
        if (t) {
            moe_policy_env env;
            policy_env(e, w, cm, l, free_bytes[s], moe_layers[s], &env);
            moe_policy_plan(m->policy, &env, t, t == &m->balanced ? 0 : e->opt->moe_trace_step, k,
                            pl);
            for (int i = 0; i < ep * ep; i++)
                r->send[i] *= m->token_bytes;
        } else {
            balanced_route(r, c, ep, e->tp, local);
        }
        for (int x = 0; x < w->model.num_experts; x++)
            for (int j = 0; j < ep; j++)
                m->copy_bytes[(size_t)s * ep + j] +=
                    pl->copy[(size_t)x * ep + j] * (m->copy_weight_bytes + m->copy_grad_bytes);
        m->copies += pl->copies;
        /* rows per TP rank, as the cost model's expert_tokens (all-gathered
         * over etp = tp) */
        for (int j = 0; j < ep; j++)
            m->ratio[(size_t)k * ep + j] =
                c->expert_tokens > 0 ? r->rows[j] * e->tp / c->expert_tokens : 0.0;
        m->max_over_mean += r->mean_expert_rows > 0 ? r->max_expert_rows / r->mean_expert_rows : 0;
        m->max_over_mean_count++;
        k++;
    }
    return 0;
}

/* The per-expert loads of the timeline: the trace's step summed over the
 * sources, or balanced (ep·n_l·k/E per expert, `tokens` = n_l·k). */
static int load_timeline(engine_moe *m, const wl_workload *w, const moe_trace *t, int step,
                         long tokens)
{
    m->experts = w->model.num_experts;
    m->load_rows = calloc((size_t)m->num_moe * m->experts, sizeof *m->load_rows);
    if (!m->load_rows)
        return -1;
    for (int k = 0; k < m->num_moe; k++)
        for (int x = 0; x < m->experts; x++) {
            double rows = 0.0;
            if (t)
                for (int i = 0; i < m->ep; i++)
                    rows += *moe_trace_at(t, step, k, i, x);
            else
                rows = (double)m->ep * tokens / m->experts;
            m->load_rows[(size_t)k * m->experts + x] = rows;
        }
    return 0;
}

static void record_event(engine *e, worker *w, int k)
{
    engine_moe *m = e->moe;
    if (m->num_events == m->events_capacity) {
        int cap = m->events_capacity ? 2 * m->events_capacity : 64;
        engine_moe_event *grown = realloc(m->events, (size_t)cap * sizeof *grown);
        if (!grown)
            return; /* the timeline loses an event, the run goes on */
        m->events = grown;
        m->events_capacity = cap;
    }
    m->events[m->num_events++] = (engine_moe_event){engine_now(e), k, w->stage};
}

int engine_moe_prepare(engine *e, const wl_workload *w, const cm_model *cm, np_error *err)
{
    e->moe = NULL;
    e->moe_skipped_flows = 0.0;
    bool overlap = w->model.overlap_moe_expert_parallel_comm;
    char why[256];
    if (!engine_moe_applies(e, w, cm, why, sizeof why))
        return engine_moe_refuse(e, w, why, err); /* engine_moe_check.c */
    double flows = replay_flows(e, cm, w->parallel.expert_model_parallel_size);
    double bound = e->opt->moe_max_flows > 0 ? e->opt->moe_max_flows : 2e7;
    if (flows > bound) {
        e->moe_skipped_flows = flows;
        return engine_moe_refuse_over_bound(e, w, flows, err);
    }
    const moe_trace *t = e->opt->moe_trace;
    int ep = w->parallel.expert_model_parallel_size;
    /* the tokens the plan routes per NPU and micro-batch (its micro-batch
     * size and TP, not the workload's) */
    long tokens = moe_trace_tokens(w, e->pl->micro_batch_size, e->tp);
    int rc = engine_moe_check_replay(e, w, err); /* engine_moe_check.c */
    if (!rc)
        rc = engine_moe_check_policy(e, w, cm, err);
    if (rc)
        return rc;
    if (overlap && (rc = engine_moe_overlap_check(e, w, err)))
        return rc;
    engine_moe *m = calloc(1, sizeof *m);
    if (!m)
        return np_error_set(err, NP_EXIT_INTERNAL, "<engine>", "", 0, "out of memory");
    e->moe = m;
    m->ep = ep;
    m->edp = e->dp / ep;
    m->cm = cm;
    m->policy = (moe_policy_kind)e->opt->moe_policy;
    m->overlap = overlap;
    m->num_moe = wl_moe_num_layers(&w->model);
    m->token_bytes = (double)w->model.hidden_size * wl_dtype_bytes(w->training.params_dtype);
    m->flops_per_row = 2.0 * (w->model.swiglu ? 3.0 : 2.0) * (double)w->model.hidden_size *
                       (double)w->model.moe_ffn_hidden_size;
    int etp = w->parallel.expert_tensor_parallel_size > 0 ? w->parallel.expert_tensor_parallel_size
                                                          : e->tp;
    double one_expert = (w->model.swiglu ? 3.0 : 2.0) * (double)w->model.hidden_size *
                        (double)w->model.moe_ffn_hidden_size / etp;
    m->copy_weight_bytes = one_expert * wl_dtype_bytes(w->training.params_dtype);
    m->copy_grad_bytes = 0.0;
    for (int l = 0; l < cm->num_layers; l++) /* the cost model's gradient bytes per parameter */
        if (cm->layers[l].moe.is_moe && cm->layers[l].moe.expert_params > 0) {
            m->copy_grad_bytes =
                one_expert * cm->layers[l].moe.expert_grad_bytes / cm->layers[l].moe.expert_params;
            break;
        }
    m->moe_of_layer = malloc((size_t)cm->num_layers * sizeof *m->moe_of_layer);
    m->plans = calloc((size_t)m->num_moe, sizeof *m->plans);
    m->ratio = calloc((size_t)m->num_moe * ep, sizeof *m->ratio);
    m->stage_expert_grads = calloc((size_t)e->p, sizeof *m->stage_expert_grads);
    m->a2a_s = calloc((size_t)engine_num_workers(e), sizeof *m->a2a_s);
    m->a2a_exposed_s = calloc((size_t)engine_num_workers(e), sizeof *m->a2a_exposed_s);
    m->copy_s = calloc((size_t)engine_num_workers(e), sizeof *m->copy_s);
    m->copy_bytes = calloc((size_t)e->p * ep, sizeof *m->copy_bytes);
    if (!m->moe_of_layer || !m->plans || !m->ratio || !m->stage_expert_grads || !m->a2a_s ||
        !m->a2a_exposed_s || !m->copy_s || !m->copy_bytes)
        return np_error_set(err, NP_EXIT_INTERNAL, "<engine>", "", 0, "out of memory");
    if (!t && m->policy != MOE_POLICY_NONE) {
        if (balanced_trace(&m->balanced, w, ep, tokens))
            return np_error_set(err, NP_EXIT_INTERNAL, "<engine>", "", 0, "out of memory");
        t = &m->balanced;
    }
    if (plan_layers(e, w, cm, t) || engine_moe_sample_init(e, e->opt->moe_sample_mb) ||
        (overlap && engine_moe_overlap_init(e)))
        return np_error_set(err, NP_EXIT_INTERNAL, "<engine>", "", 0, "out of memory");
    if (e->overlap && (rc = engine_moe_dp_overlap_init(e, cm, err)))
        return rc;
    if (e->opt->record_spans &&
        load_timeline(m, w, t, t && t != &m->balanced ? e->opt->moe_trace_step : 0, tokens))
        return np_error_set(err, NP_EXIT_INTERNAL, "<engine>", "", 0, "out of memory");
    /* expert gradients per stage, synced over the expert-DP group instead */
    for (int s = 0; s < e->p; s++)
        for (int v = 0; v < e->pl->num_chunks; v++) {
            int chunk = v * e->p + s;
            for (int l = e->pl->chunk_start[chunk]; l < e->pl->chunk_start[chunk + 1]; l++)
                m->stage_expert_grads[s] += cm->layers[l].moe.expert_grad_bytes;
        }
    return 0;
}

void engine_moe_free(engine *e)
{
    engine_moe *m = e->moe;
    if (!m)
        return;
    engine_moe_sample_free(e);
    for (int k = 0; m->plans && k < m->num_moe; k++)
        moe_layer_plan_free(&m->plans[k]);
    free(m->plans);
    free(m->copy_s);
    free(m->copy_bytes);
    free(m->load_rows);
    free(m->events);
    moe_trace_free(&m->balanced);
    free(m->moe_of_layer);
    free(m->ratio);
    free(m->stage_expert_grads);
    free(m->a2a_s);
    free(m->a2a_exposed_s);
    free(m->steady);
    free(m);
    e->moe = NULL;
}

/* ---- the ops ---------------------------------------------------------------- */

/* The EP group of w: the ep consecutive replicas of its stage holding it. */
static void ep_group(engine *e, worker *w, int stride, int size, int first, int id, coll_group *g)
{
    const endpoint **members = malloc((size_t)size * sizeof *members);
    if (!members)
        xbt_die("npusim: out of memory building an MoE group");
    for (int i = 0; i < size; i++)
        members[i] = &engine_worker(e, w->stage, first + i * stride)->ep;
    g->members = members;
    g->size = size;
    g->me = (w->replica - first) / stride;
    g->id = id;
}

void engine_moe_ep_group(engine *e, worker *w, coll_group *g)
{
    int rank = w->replica % e->moe->ep;
    ep_group(e, w, 1, e->moe->ep, w->replica - rank, COLL_GROUP_EP_V, g);
}

void engine_moe_edp_group(engine *e, worker *w, coll_group *g)
{
    ep_group(e, w, e->moe->ep, e->moe->edp, w->replica % e->moe->ep, COLL_GROUP_EDP, g);
}

/* One all-to-all of MoE layer k: `out` (dispatch direction: source i sends
 * send[i][j] to rank j) or back (rank j returns send[i][j] to i); pair by
 * pair, or the time measured on an earlier micro-batch (--moe-sample-mb,
 * engine_moe_sample.c).  Returns the time it took. */
double engine_moe_alltoall(engine *e, worker *w, const coll_group *g, int k, bool out, int slot,
                           int micro_batch)
{
    engine_moe *m = e->moe;
    const moe_route *r = &m->plans[k].route;
    double to[g->size > 0 ? g->size : 1];
    for (int j = 0; j < g->size; j++)
        to[j] = out ? r->send[(size_t)g->me * m->ep + j] : r->send[(size_t)j * m->ep + g->me];
    double start = engine_now(e);
    if (engine_moe_sample_begin(e, w, k, slot, micro_batch)) {
        coll_run_alltoallv(&e->net, g, to, e->opt->ep_alltoall_algorithm);
        engine_moe_sample_end(e, w, k, slot);
    }
    double took = engine_now(e) - start;
    m->a2a_s[w - e->workers] += took;
    return took;
}

void engine_moe_forward_begin(engine *e, worker *w, const coll_group *g, int k, int micro_batch)
{
    engine_moe *m = e->moe;
    if (w->replica == 0 && m->load_rows)
        record_event(e, w, k);
    if (micro_batch == 0) /* the copies' weights, once per iteration */
        engine_moe_copies_on_fabric(e, w, g, k, true);
    const moe_route *r = &m->plans[k].route;
    int rank = w->replica % m->ep;
    m->dropped += r->dropped[rank] * e->tp;
    m->padding += r->padding[rank] * e->tp;
    m->assignments += (r->rows[rank] - r->padding[rank] + r->dropped[rank]) * e->tp;
}

double engine_moe_copy_bytes(const engine *e, const worker *w)
{
    return e->moe ? e->moe->copy_bytes[(size_t)w->stage * e->moe->ep + w->replica % e->moe->ep]
                  : 0.0;
}

double engine_moe_dense_grad_bytes(const engine *e, const worker *w, double bytes)
{
    if (!e->moe || e->moe->edp < 1)
        return bytes;
    double rest = bytes - e->moe->stage_expert_grads[w->stage];
    return rest > 0 ? rest : 0.0;
}

/* Expert gradients over the expert-DP group: the replicas with w's index in
 * their EP group, ep apart; the data-parallel sync's algorithm and form. */
void engine_moe_copies_sync(engine *e, worker *w)
{
    engine_moe *m = e->moe;
    /* the copies' gradients back to their owners; replicas folded away too,
     * so that the expert-DP sync starts as late as in the full run */
    if (m && m->copies > 0) {
        coll_group ep;
        engine_moe_ep_group(e, w, &ep);
        for (int l = 0; l < m->cm->num_layers; l++)
            if (m->moe_of_layer[l] >= 0 && plan_stage_of_layer(e->pl, l, NULL) == w->stage)
                engine_moe_copies_on_fabric(e, w, &ep, m->moe_of_layer[l], false);
        free((void *)ep.members);
    }
}

void engine_moe_expert_sync(engine *e, worker *w)
{
    engine_moe *m = e->moe;
    engine_moe_copies_sync(e, w);
    double bytes = m ? m->stage_expert_grads[w->stage] : 0.0;
    if (!m || m->edp < 2 || bytes <= 0)
        return;
    coll_group g;
    engine_moe_edp_group(e, w, &g);
    engine_grad_sync(e, &g, bytes);
    free((void *)g.members);
}

void engine_moe_collect(const engine *e, engine_result *out)
{
    const engine_moe *m = e->moe;
    out->moe_skipped_flows = e->moe_skipped_flows;
    if (!m)
        return;
    out->moe_replayed = true;
    double sum = 0.0, worst = 0.0, exposed = 0.0;
    int n = engine_num_workers(e), simulated = 0;
    for (int i = 0; i < n; i++) {
        if (!e->workers[i].simulated) /* folded away: stands for its representative */
            continue;
        simulated++;
        sum += m->a2a_s[i];
        if (m->a2a_s[i] > worst)
            worst = m->a2a_s[i];
        if (m->a2a_exposed_s[i] > exposed)
            exposed = m->a2a_exposed_s[i];
    }
    out->moe_alltoall_exposed_s = exposed;
    out->moe_overlap = m->overlap;
    /* the token counts were summed over the simulated replicas: each stands
     * for dp/K (--fold-dp K) */
    double scale = e->fold > 0 ? (double)e->dp / e->fold : 1.0;
    out->moe_alltoall_s = worst;
    out->moe_alltoall_mean_s = simulated > 0 ? sum / simulated : 0.0;
    out->moe_dropped_tokens = m->dropped * scale;
    out->moe_padding_tokens = m->padding * scale;
    out->moe_assignments = m->assignments * scale;
    out->moe_padding_flops = 3.0 * m->padding * scale * m->flops_per_row;
    out->moe_max_over_mean =
        m->max_over_mean_count > 0 ? m->max_over_mean / m->max_over_mean_count : 0.0;
    out->moe_policy = moe_policy_name(m->policy);
    out->moe_copies = m->copies;
    double copy_worst = 0.0, copy_bytes = 0.0;
    for (int i = 0; i < n; i++)
        copy_worst = m->copy_s[i] > copy_worst ? m->copy_s[i] : copy_worst;
    for (int i = 0; i < e->p * m->ep; i++)
        copy_bytes = m->copy_bytes[i] > copy_bytes ? m->copy_bytes[i] : copy_bytes;
    out->moe_copy_s = copy_worst;
    out->moe_copy_bytes = copy_bytes;
    engine_moe_sample_collect(e, out);
    if (m->load_rows) { /* handed over to the result */
        out->moe_load_layers = m->num_moe;
        out->moe_load_experts = m->experts;
        out->moe_load_rows = m->load_rows;
        out->moe_load_events = m->events;
        out->moe_load_num_events = m->num_events;
        e->moe->load_rows = NULL;
        e->moe->events = NULL;
    }
}
