/*
 * moe_policy.c -- the MoE policies' decisions for one layer of one step
 * (moe_policy.h says what each policy decides and from what).
 */
#include "moe_policy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "moe.h"

static const char *const names[MOE_POLICY_COUNT] = {"none", "switch", "fastermoe", "efficientmoe"};

const double moe_policy_size_factors[MOE_POLICY_NUM_SIZES] = {0.25, 0.5, 0.75, 1.0,
                                                              1.25, 1.5, 2.0,  4.0};

const char *moe_policy_name(moe_policy_kind k)
{
    return k >= 0 && k < MOE_POLICY_COUNT ? names[k] : "?";
}

int moe_policy_find(const char *name)
{
    for (int k = 0; name && k < MOE_POLICY_COUNT; k++)
        if (strcasecmp(name, names[k]) == 0)
            return k;
    return -1;
}

void moe_policy_env_init(moe_policy_env *env)
{
    *env = (moe_policy_env){.switch_cf = MOE_SWITCH_CF, .theta = 0.9, .epsilon = 0.1, .gamma = 1.1};
}

/* Policy k's capacity factor and padding from the workload's (cf_in, pad_in). */
static void capacity_of(moe_policy_kind k, double cf_in, bool pad_in, double *cf, bool *pad)
{
    *cf = cf_in;
    *pad = pad_in;
    if (k == MOE_POLICY_SWITCH) {
        *cf = cf_in > 0 ? cf_in : MOE_SWITCH_CF;
        *pad = true;
    } else if (k == MOE_POLICY_FASTERMOE) { /* drops nothing: its replay is dropless */
        *cf = 0.0;
        *pad = false;
    }
}

void moe_policy_capacity_of(moe_policy_kind k, const wl_model *m, double *cf, bool *pad)
{
    capacity_of(k, m->moe_expert_capacity_factor, m->moe_pad_expert_input_to_capacity, cf, pad);
}

static bool has_capacity(const wl_model *m)
{
    return m->num_experts > 0 && m->moe_token_dispatcher_type == WL_MOE_ALLTOALL;
}

bool moe_policy_applied(moe_policy_kind k, const wl_model *m)
{
    double cf;
    bool pad;
    moe_policy_capacity_of(k, m, &cf, &pad);
    return !has_capacity(m) ||
           (cf == m->moe_expert_capacity_factor && pad == m->moe_pad_expert_input_to_capacity);
}

bool moe_policy_apply(moe_policy_kind k, wl_model *m)
{
    if (moe_policy_applied(k, m))
        return false;
    moe_policy_capacity_of(k, m, &m->moe_expert_capacity_factor,
                           &m->moe_pad_expert_input_to_capacity);
    return true;
}

int moe_layer_plan_init(moe_layer_plan *p, int experts, int sources)
{
    *p = (moe_layer_plan){.experts = experts};
    if (moe_route_init(&p->route, sources))
        return -1;
    p->copy = calloc((size_t)experts * sources, 1);
    p->copy_capacity = calloc((size_t)experts, sizeof *p->copy_capacity);
    if (p->copy && p->copy_capacity)
        return 0;
    moe_layer_plan_free(p);
    return -1;
}

void moe_layer_plan_free(moe_layer_plan *p)
{
    moe_route_free(&p->route);
    free(p->copy);
    free(p->copy_capacity);
    *p = (moe_layer_plan){0};
}

static void clear_plan(moe_layer_plan *p)
{
    moe_route *r = &p->route;
    int n = r->sources;
    memset(p->copy, 0, (size_t)p->experts * n);
    memset(p->copy_capacity, 0, (size_t)p->experts * sizeof *p->copy_capacity);
    for (int j = 0; j < n; j++)
        r->rows[j] = r->padding[j] = r->dropped[j] = 0.0;
    for (long i = 0; i < (long)n * n; i++)
        r->send[i] = 0.0;
    p->copies = p->shadowed = 0;
    p->pipelined = false;
    p->model_latency_s = 0.0;
}

/* With copies an expert's rows are spread: the load figures are per rank,
 * over its local experts. */
static void rank_load_figures(moe_route *r, int experts)
{
    int n = r->sources, local = experts / n;
    double all = 0.0;
    r->max_expert_rows = 0.0;
    for (int j = 0; j < n; j++) {
        all += r->rows[j];
        if (r->rows[j] / local > r->max_expert_rows)
            r->max_expert_rows = r->rows[j] / local;
    }
    r->mean_expert_rows = all / experts;
}

static double expert_load(const moe_trace *t, int step, int layer, int e)
{
    double sum = 0.0;
    for (int i = 0; i < t->sources; i++)
        sum += *moe_trace_at(t, step, layer, i, e);
    return sum;
}

/* ---- FasterMoE ------------------------------------------------------------- */

double moe_fastermoe_latency(const moe_policy_env *env, const moe_trace *t, int step, int layer,
                             const unsigned char *shadow)
{
    int n = t->sources, local = t->experts / n, count = 0;
    double *load = calloc((size_t)t->experts, sizeof *load), worst = 0.0;
    if (!load)
        abort();
    for (int e = 0; e < t->experts; e++) {
        count += shadow[e] != 0;
        for (int i = 0; i < n; i++)
            load[e] += *moe_trace_at(t, step, layer, i, e);
    }
    /* per rank k, O(E): its own experts' loads (less its own tokens, which
     * do not travel), its tokens to the others' experts, its shadowed ones */
    for (int k = 0; k < n; k++) {
        double rows = 0.0, sent = 0.0, received = 0.0;
        for (int e = 0; e < t->experts; e++) {
            double mine = *moe_trace_at(t, step, layer, k, e);
            if (shadow[e])
                rows += mine;
            else if (e / local == k)
                rows += load[e], received += load[e] - mine;
            else
                sent += mine;
        }
        double x = sent > received ? sent : received;
        double lat = 3.0 * env->comp_s * rows + 4.0 * env->feat_s * x;
        if (lat > worst)
            worst = lat;
    }
    free(load);
    return worst + count * env->shadow_s;
}

static void plan_fastermoe(const moe_policy_env *env, const moe_trace *t, int step, int layer,
                           moe_layer_plan *p)
{
    int n = t->sources, E = t->experts, local = E / n;
    unsigned char *shadow = calloc((size_t)E, 1);
    int *order = malloc((size_t)E * sizeof *order);
    double *load = malloc((size_t)E * sizeof *load);
    if (!shadow || !order || !load)
        abort();
    for (int e = 0; e < E; e++) {
        order[e] = e;
        load[e] = expert_load(t, step, layer, e);
    }
    for (int a = 1; a < E; a++) /* insertion sort, most loaded first, ties by index */
        for (int b = a; b > 0 && load[order[b]] > load[order[b - 1]]; b--) {
            int x = order[b];
            order[b] = order[b - 1];
            order[b - 1] = x;
        }
    double lat = moe_fastermoe_latency(env, t, step, layer, shadow);
    for (int a = 0; a < E && p->shadowed < env->max_copies; a++) {
        shadow[order[a]] = 1;
        double with = moe_fastermoe_latency(env, t, step, layer, shadow);
        if (!(with < lat)) {
            shadow[order[a]] = 0;
            break;
        }
        lat = with;
        p->shadowed++;
    }
    p->model_latency_s = lat;
    moe_route *r = &p->route;
    for (int e = 0; e < E; e++) {
        int owner = e / local;
        for (int i = 0; i < n; i++) {
            double c = *moe_trace_at(t, step, layer, i, e);
            int j = shadow[e] ? i : owner;
            r->send[(size_t)i * n + j] += c;
            r->rows[j] += c;
        }
        if (shadow[e])
            for (int j = 0; j < n; j++)
                if (j != owner)
                    p->copy[(size_t)e * n + j] = 1, p->copies++;
    }
    p->pipelined = true;
    free(shadow);
    free(order);
    free(load);
}

/* ---- EfficientMoE ---------------------------------------------------------- */

int moe_lpt(int n, const double *size, const int *group, int bins, double *load, int *slots,
            unsigned char *holds, int *bin_of)
{
    int *order = malloc((size_t)(n > 0 ? n : 1) * sizeof *order), unplaced = 0;
    if (!order)
        abort();
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && size[order[b]] > size[order[b - 1]]; b--) {
            int x = order[b];
            order[b] = order[b - 1];
            order[b - 1] = x;
        }
    for (int a = 0; a < n; a++) {
        int it = order[a], best = -1;
        for (int j = 0; j < bins; j++) {
            if (slots && slots[j] <= 0)
                continue;
            if (group && holds && holds[(size_t)group[it] * bins + j])
                continue;
            if (best < 0 || load[j] < load[best])
                best = j;
        }
        bin_of[it] = best;
        if (best < 0) {
            unplaced++;
            continue;
        }
        load[best] += size[it];
        if (slots)
            slots[best]--;
        if (group && holds)
            holds[(size_t)group[it] * bins + best] = 1;
    }
    free(order);
    return unplaced;
}

double moe_quantise_capacity(double c, double mean)
{
    double size = 0.0;
    for (int q = 0; q < MOE_POLICY_NUM_SIZES; q++) {
        size = ceil(moe_policy_size_factors[q] * mean);
        if (size >= c)
            return size;
    }
    return size;
}

void moe_predict_load(const moe_trace *t, int step, int layer, double theta, double *predicted)
{
    for (int e = 0; e < t->experts; e++) {
        if (step == 0) { /* the sampler: source 0's gate decisions, scaled */
            predicted[e] = (double)t->sources * *moe_trace_at(t, 0, layer, 0, e);
            continue;
        }
        double p = expert_load(t, 0, layer, e);
        for (int s = 1; s < step; s++)
            p = theta * p + (1.0 - theta) * expert_load(t, s, layer, e);
        predicted[e] = p;
    }
}

typedef struct replication {
    int *extra_group, *extra_bin; /* [E·n]: the extra shards */
    double *extra_size, *load;
    int *slots;
    unsigned char *holds;
} replication;

/* Places r[e] − 1 extra shards of each expert by LPT over the owners'
 * shards; the unplaced count.  rank loads in x->load. */
static int place(const moe_trace *t, const moe_policy_env *env, const double *pred, const int *r,
                 replication *x, int *num_extra)
{
    int n = t->sources, E = t->experts, local = E / n, k = 0;
    memset(x->holds, 0, (size_t)E * n);
    for (int j = 0; j < n; j++)
        x->load[j] = 0.0, x->slots[j] = env->max_copies;
    for (int e = 0; e < E; e++) {
        x->load[e / local] += pred[e] / r[e];
        x->holds[(size_t)e * n + e / local] = 1;
        for (int c = 1; c < r[e]; c++, k++)
            x->extra_group[k] = e, x->extra_size[k] = pred[e] / r[e];
    }
    *num_extra = k;
    return moe_lpt(k, x->extra_size, x->extra_group, n, x->load, x->slots, x->holds, x->extra_bin);
}

static void plan_efficientmoe(const moe_policy_env *env, const moe_trace *t, int step, int layer,
                              moe_layer_plan *p)
{
    int n = t->sources, E = t->experts, local = E / n, extra = 0;
    double *pred = malloc((size_t)E * sizeof *pred);
    int *r = malloc((size_t)E * sizeof *r);
    replication x = {.extra_group = malloc((size_t)E * n * sizeof(int)),
                     .extra_bin = malloc((size_t)E * n * sizeof(int)),
                     .extra_size = malloc((size_t)E * n * sizeof(double)),
                     .load = malloc((size_t)n * sizeof(double)),
                     .slots = malloc((size_t)n * sizeof(int)),
                     .holds = malloc((size_t)E * n)};
    if (!pred || !r || !x.extra_group || !x.extra_bin || !x.extra_size || !x.load || !x.slots ||
        !x.holds)
        abort();
    moe_predict_load(t, step, layer, env->theta, pred);
    double total = 0.0;
    for (int e = 0; e < E; e++)
        r[e] = 1, total += pred[e];
    for (int iter = 0; iter < E * n; iter++) {
        place(t, env, pred, r, &x, &extra);
        double worst = 0.0;
        for (int j = 0; j < n; j++)
            worst = x.load[j] > worst ? x.load[j] : worst;
        if (worst <= (1.0 + env->epsilon) * total / n)
            break;
        int hot = -1;
        for (int e = 0; e < E; e++)
            if (r[e] < n && (hot < 0 || pred[e] / r[e] > pred[hot] / r[hot]))
                hot = e;
        if (hot < 0)
            break;
        r[hot]++;
        if (place(t, env, pred, r, &x, &extra) > 0) { /* refused: no free memory */
            r[hot]--;
            place(t, env, pred, r, &x, &extra);
            break;
        }
    }
    /* holders: the owner and the bins of the extra shards */
    for (int k = 0; k < extra; k++) {
        p->copy[(size_t)x.extra_group[k] * n + x.extra_bin[k]] = 1;
        p->copies++;
    }
    double mean = (double)n * t->tokens / E;
    moe_route *rt = &p->route;
    for (int e = 0; e < E; e++) {
        double cap = moe_quantise_capacity(ceil(env->gamma * pred[e] / r[e]), mean);
        p->copy_capacity[e] = cap;
        double actual = expert_load(t, step, layer, e) / r[e];
        double kept = actual > cap ? cap / actual : 1.0;
        for (int h = 0; h < n; h++) {
            if (h != e / local && !p->copy[(size_t)e * n + h])
                continue;
            for (int i = 0; i < n; i++)
                rt->send[(size_t)i * n + h] += *moe_trace_at(t, step, layer, i, e) / r[e] * kept;
            rt->rows[h] += cap;
            rt->padding[h] += cap - actual * kept;
            rt->dropped[h] += actual * (1.0 - kept);
        }
    }
    free(pred);
    free(r);
    free(x.extra_group);
    free(x.extra_bin);
    free(x.extra_size);
    free(x.load);
    free(x.slots);
    free(x.holds);
}

int moe_policy_plan(moe_policy_kind k, const moe_policy_env *env, const moe_trace *t, int step,
                    int layer, moe_layer_plan *out)
{
    clear_plan(out);
    switch (k) {
    case MOE_POLICY_NONE:
        moe_route_layer(t, step, layer, env->capacity, env->pad, &out->route);
        return 0;
    case MOE_POLICY_SWITCH: { /* the capacity the cost model was built with (moe_policy_apply) */
        double cf;
        bool pad;
        capacity_of(k, env->switch_cf, env->pad, &cf, &pad);
        moe_route_layer(t, step, layer,
                        moe_capacity((double)t->tokens / t->topk, t->topk, t->experts, cf), pad,
                        &out->route);
        return 0;
    }
    case MOE_POLICY_FASTERMOE:
        plan_fastermoe(env, t, step, layer, out);
        break;
    case MOE_POLICY_EFFICIENTMOE:
        plan_efficientmoe(env, t, step, layer, out);
        break;
    default:
        return -1;
    }
    rank_load_figures(&out->route, t->experts);
    return 0;
}
