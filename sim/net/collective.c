/*
 * collective.c -- algorithm names, and the dispatch to the algorithm files
 * (see collective.h for the algorithms and their costs).
 *
 * A choice that does not apply to the collective (an all-to-all algorithm for
 * an all-reduce) falls back to the collective's default; the CLI rejects such
 * choices before a run (coll_check_choice).  Which group runs which
 * collective with which algorithm is the caller's: the engine's data-parallel
 * and expert-parallel calls are sim/engine/engine_collective.c.
 */
#include <string.h>
#include <strings.h>

#include "collective.h"
#include "collective_internal.h"

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
    [COLL_CONCURRENT] = {"concurrent", 1u << COLL_ALLTOALL},
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
        if (name && strcasecmp(name, algorithms[a].name) == 0) /* "Ring", "RING" */
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
    return k == COLL_ALLTOALL ? COLL_CONCURRENT : COLL_RING_FLOW;
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

int coll_check_choice(coll_algorithm a, coll_kind k, const char *option, np_error *err)
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

void coll_params_init(coll_params *p, coll_kind k)
{
    p->algorithm = coll_default_algorithm(k);
    p->radix = 4;
    p->inter_algorithm = COLL_RING_FLOW;
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
    case COLL_CONCURRENT:
        coll_concurrent_alltoall(c, v, bytes);
        break;
    case COLL_ALGORITHM_COUNT:
        break;
    }
}

void coll_run(transport *t, coll_kind kind, const coll_group *g, const coll_params *p, double bytes)
{
    if (g->size < 2 || bytes <= 0)
        return;
    coll_ctx c;
    coll_ctx_enter(&c, t, g);
    coll_view all = {NULL, g->size, g->me};
    coll_run_view(&c, &all, kind, p, bytes);
    coll_ctx_leave(&c);
}
