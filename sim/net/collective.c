/*
 * collective.c -- algorithm names, groups, and the dispatch to the
 * algorithm files (see collective.h for the algorithms and their costs).
 *
 * The engine calls coll_allreduce() for a stage's data-parallel gradients and
 * (for MoE) coll_alltoall() for an expert-parallel group; both build the group
 * of the calling worker, read the algorithm from engine_options and run
 * coll_run().  A choice that does not apply to the collective (an all-to-all
 * algorithm for an all-reduce) falls back to the collective's default; the CLI
 * rejects such choices before a run with coll_check_options().
 */
#include <stdlib.h>
#include <string.h>
#include <xbt/asserts.h>

#include "collective.h"
#include "engine_internal.h"

static const struct {
    const char *name;
    unsigned kinds; /* bit k: serves coll_kind k */
} algorithms[COLL_ALGORITHM_COUNT] = {
#define RS_AG ((1u << COLL_ALLREDUCE) | (1u << COLL_REDUCE_SCATTER) | (1u << COLL_ALLGATHER))
    [COLL_RING_FLOW] = {"ring-flow", RS_AG},
    [COLL_RING] = {"ring", RS_AG},
    [COLL_HIERARCHICAL] = {"hierarchical", 1u << COLL_ALLREDUCE},
    [COLL_HALVING_DOUBLING] = {"halving-doubling", RS_AG},
    [COLL_BUTTERFLY] = {"butterfly", RS_AG},
    [COLL_PAIRWISE] = {"pairwise", 1u << COLL_ALLTOALL},
    [COLL_BRUCK] = {"bruck", 1u << COLL_ALLTOALL},
#undef RS_AG
};

static const char *const kind_names[COLL_KIND_COUNT] = {"all-reduce", "reduce-scatter",
                                                        "all-gather", "all-to-all"};

const char *coll_algorithm_name(coll_algorithm a)
{
    return (unsigned)a < COLL_ALGORITHM_COUNT ? algorithms[a].name : "?";
}

int coll_algorithm_by_name(const char *name)
{
    for (int a = 0; a < COLL_ALGORITHM_COUNT; a++)
        if (name && strcmp(name, algorithms[a].name) == 0)
            return a;
    return -1;
}

const char *coll_kind_name(coll_kind k)
{
    return (unsigned)k < COLL_KIND_COUNT ? kind_names[k] : "?";
}

bool coll_algorithm_supports(coll_algorithm a, coll_kind k)
{
    return (unsigned)a < COLL_ALGORITHM_COUNT && (unsigned)k < COLL_KIND_COUNT &&
           (algorithms[a].kinds >> k & 1u);
}

coll_algorithm coll_default_algorithm(coll_kind k)
{
    return k == COLL_ALLTOALL ? COLL_PAIRWISE : COLL_RING_FLOW;
}

void coll_algorithm_list(coll_kind k, char *buf, size_t size)
{
    if (size == 0)
        return;
    buf[0] = '\0';
    for (int a = 0; a < COLL_ALGORITHM_COUNT; a++) {
        if (!coll_algorithm_supports(a, k))
            continue;
        if (buf[0])
            strncat(buf, ", ", size - strlen(buf) - 1);
        strncat(buf, algorithms[a].name, size - strlen(buf) - 1);
    }
}

static int check_choice(coll_algorithm a, coll_kind k, const char *option, np_error *err)
{
    if (coll_algorithm_supports(a, k))
        return 0;
    char names[256];
    coll_algorithm_list(k, names, sizeof names);
    return np_error_set(err, NP_EXIT_USAGE, "<command line>", option, 0,
                        "\"%s\" is not a%s %s algorithm; expected one of: %s",
                        coll_algorithm_name(a), k == COLL_REDUCE_SCATTER ? "" : "n",
                        coll_kind_name(k), names);
}

int coll_check_options(const engine_options *o, np_error *err)
{
    int rc = check_choice(o->dp_algorithm, COLL_ALLREDUCE, "--dp-algorithm", err);
    if (!rc && o->dp_algorithm == COLL_HIERARCHICAL)
        rc = check_choice(o->dp_inter_algorithm, COLL_ALLREDUCE, "--dp-inter-algorithm", err);
    if (!rc && o->dp_algorithm == COLL_HIERARCHICAL && o->dp_inter_algorithm == COLL_HIERARCHICAL)
        rc = np_error_set(err, NP_EXIT_USAGE, "<command line>", "--dp-inter-algorithm", 0,
                          "the inter-server part of \"hierarchical\" cannot itself be "
                          "\"hierarchical\"");
    if (!rc)
        rc = check_choice(o->ep_alltoall_algorithm, COLL_ALLTOALL, "--ep-alltoall-algorithm", err);
    if (!rc && o->dp_radix != 0 && o->dp_radix < 2)
        rc = np_error_set(err, NP_EXIT_USAGE, "<command line>", "--dp-radix", 0,
                          "the butterfly radix must be at least 2 (0: the default, 4), got %d",
                          o->dp_radix);
    return rc;
}

void coll_params_init(coll_params *p, coll_kind k)
{
    p->algorithm = coll_default_algorithm(k);
    p->radix = 4;
    p->inter_algorithm = COLL_RING_FLOW;
}

/* ---- groups ---------------------------------------------------------------- */

static int group_of_replicas(engine *e, worker *w, int first, int size, int id, coll_group *g)
{
    g->members = malloc((size_t)size * sizeof *g->members);
    if (!g->members)
        return -1;
    for (int i = 0; i < size; i++)
        g->members[i] = engine_worker(e, w->stage, first + i);
    g->size = size;
    g->me = w->replica - first;
    g->id = id;
    return 0;
}

int coll_group_dp(engine *e, worker *w, coll_group *g)
{
    return group_of_replicas(e, w, 0, e->dp, COLL_GROUP_DP, g);
}

int coll_group_ep(engine *e, worker *w, int ep_size, coll_group *g)
{
    if (ep_size < 1 || e->dp % ep_size)
        return -1;
    return group_of_replicas(e, w, w->replica - w->replica % ep_size, ep_size, COLL_GROUP_EP, g);
}

void coll_group_free(coll_group *g)
{
    free(g->members);
    g->members = NULL;
}

/* ---- dispatch -------------------------------------------------------------- */

void coll_run_view(coll_ctx *c, const coll_view *v, int kind, const coll_params *p, double bytes)
{
    coll_algorithm a = p->algorithm;
    if (!coll_algorithm_supports(a, kind))
        a = coll_default_algorithm(kind);
    int radix = a == COLL_HALVING_DOUBLING ? 2 : p->radix >= 2 ? p->radix : 4;
    if (v->n < 2 || bytes <= 0)
        return;
    switch (a) {
    case COLL_RING_FLOW:
        if (kind == COLL_ALLREDUCE)
            coll_ring_flow_allreduce(c, v, bytes);
        else if (kind == COLL_REDUCE_SCATTER)
            coll_ring_flow_reduce_scatter(c, v, bytes);
        else
            coll_ring_flow_allgather(c, v, bytes);
        break;
    case COLL_RING:
        if (kind == COLL_ALLREDUCE)
            coll_ring_allreduce(c, v, bytes);
        else if (kind == COLL_REDUCE_SCATTER)
            coll_ring_reduce_scatter(c, v, bytes);
        else
            coll_ring_allgather(c, v, bytes);
        break;
    case COLL_HALVING_DOUBLING:
    case COLL_BUTTERFLY:
        if (kind != COLL_ALLGATHER)
            coll_butterfly_reduce_scatter(c, v, radix, bytes);
        if (kind != COLL_REDUCE_SCATTER)
            coll_butterfly_allgather(c, v, radix, bytes);
        break;
    case COLL_HIERARCHICAL:
        coll_hierarchical_allreduce(c, v, p, bytes);
        break;
    case COLL_PAIRWISE:
        coll_pairwise_alltoall(c, v, bytes);
        break;
    case COLL_BRUCK:
        coll_bruck_alltoall(c, v, bytes);
        break;
    case COLL_ALGORITHM_COUNT:
        break;
    }
}

void coll_run(engine *e, coll_kind kind, const coll_group *g, const coll_params *p, double bytes)
{
    if (g->size < 2 || bytes <= 0)
        return;
    coll_ctx c;
    coll_ctx_enter(&c, e, g);
    coll_view all = {NULL, g->size, g->me};
    coll_run_view(&c, &all, kind, p, bytes);
    coll_ctx_leave(&c);
}

void coll_allreduce(engine *e, worker *w, double bytes)
{
    if (e->dp < 2 || bytes <= 0)
        return;
    coll_params p = {.algorithm = e->opt->dp_algorithm,
                     .radix = e->opt->dp_radix,
                     .inter_algorithm = e->opt->dp_inter_algorithm};
    coll_group g;
    if (coll_group_dp(e, w, &g))
        xbt_die("npusim: out of memory building a data-parallel group");
    if (e->opt->dp_param_gather_ratio > 0) {
        /* Megatron's distributed optimizer: reduce-scatter the gradients,
         * update the local shard, all-gather the parameters (in the
         * parameters' dtype).  Hierarchical has no RS/AG form: its
         * between-servers algorithm stands in. */
        if (!coll_algorithm_supports(p.algorithm, COLL_REDUCE_SCATTER))
            p.algorithm = p.inter_algorithm;
        coll_run(e, COLL_REDUCE_SCATTER, &g, &p, bytes);
        coll_run(e, COLL_ALLGATHER, &g, &p, bytes * e->opt->dp_param_gather_ratio);
    } else {
        coll_run(e, COLL_ALLREDUCE, &g, &p, bytes);
    }
    coll_group_free(&g);
}

void coll_alltoall(engine *e, worker *w, int ep_size, double bytes)
{
    if (ep_size < 2 || bytes <= 0)
        return;
    coll_params p;
    coll_params_init(&p, COLL_ALLTOALL);
    p.algorithm = e->opt->ep_alltoall_algorithm;
    coll_group g;
    if (coll_group_ep(e, w, ep_size, &g))
        xbt_die("npusim: expert-parallel size %d does not divide data-parallel size %d", ep_size,
                e->dp);
    coll_run(e, COLL_ALLTOALL, &g, &p, bytes);
    coll_group_free(&g);
}
