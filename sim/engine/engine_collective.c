/*
 * engine_collective.c -- engine: the collectives of a worker, chosen from
 * engine_options.
 *
 * The collectives themselves (sim/net/collective.h) run on groups of
 * endpoints and take their algorithm as a parameter; what makes them the
 * engine's is here: which workers form a group (the data-parallel replicas of
 * a stage, an expert-parallel group of consecutive replicas), which algorithm
 * each runs (--dp-algorithm, --dp-radix, --dp-inter-algorithm,
 * --ep-alltoall-algorithm), and the gradient sync of the distributed
 * optimizer (a reduce-scatter and an all-gather instead of an all-reduce).
 * With context parallelism the data-parallel group is Megatron's
 * data-parallel group with context parallelism: the dp·cp workers of the
 * stage, in global rank order (CP rank fastest), since CP ranks hold the
 * same parameters and their gradients of different tokens.
 */
#include <stdlib.h>
#include <xbt/asserts.h>

#include "engine_internal.h"

/* Group ids: a data-parallel group and the MoE replay's groups of the same
 * replicas (engine_moe_internal.h: 3 and 4) are different groups
 * (coll_group.id). */
enum { COLL_GROUP_DP = 1 };

int coll_check_options(const engine_options *o, np_error *err)
{
    int rc = coll_check_choice(o->dp_algorithm, COLL_ALLREDUCE, "--dp-algorithm", err);
    if (!rc && o->dp_algorithm == COLL_HIERARCHICAL)
        rc = coll_check_choice(o->dp_inter_algorithm, COLL_ALLREDUCE, "--dp-inter-algorithm", err);
    if (!rc && o->dp_algorithm == COLL_HIERARCHICAL && o->dp_inter_algorithm == COLL_HIERARCHICAL)
        rc = np_error_set(err, NP_EXIT_USAGE, "<command line>", "--dp-inter-algorithm", 0,
                          "the inter-server part of \"hierarchical\" cannot itself be "
                          "\"hierarchical\"");
    if (!rc)
        rc = coll_check_choice(o->ep_alltoall_algorithm, COLL_ALLTOALL, "--ep-alltoall-algorithm",
                               err);
    if (!rc && o->dp_radix != 0 && o->dp_radix < 2)
        rc = np_error_set(err, NP_EXIT_USAGE, "<command line>", "--dp-radix", 0,
                          "the butterfly radix must be at least 2 (0: the default, 4), got %d",
                          o->dp_radix);
    return rc;
}

/* The data-parallel group of w's stage: every replica's every CP rank,
 * member d·cp + c.  The member array is allocated; free g->members. */
static void dp_group(engine *e, worker *w, coll_group *g)
{
    int size = e->dp * e->cp;
    const endpoint **members = malloc((size_t)size * sizeof *members);
    if (!members)
        xbt_die("npusim: out of memory building a collective group");
    for (int d = 0; d < e->dp; d++)
        for (int c = 0; c < e->cp; c++)
            members[d * e->cp + c] = &engine_cp_worker(e, w->stage, d, c)->ep;
    g->members = members;
    g->size = size;
    g->me = w->replica * e->cp + w->cp_rank;
    g->id = COLL_GROUP_DP;
}

static void group_free(coll_group *g)
{
    free((void *)g->members);
    g->members = NULL;
}

void engine_grad_sync(engine *e, const coll_group *g, double bytes)
{
    coll_params p = {.algorithm = e->opt->dp_algorithm,
                     .radix = e->opt->dp_radix,
                     .inter_algorithm = e->opt->dp_inter_algorithm};
    if (e->opt->dp_param_gather_ratio > 0) {
        /* Megatron's distributed optimizer: reduce-scatter the gradients,
         * update the local shard, all-gather the parameters (in the
         * parameters' dtype).  Hierarchical has no RS/AG form: its
         * between-servers algorithm stands in. */
        if (!coll_algorithm_supports(p.algorithm, COLL_REDUCE_SCATTER))
            p.algorithm = p.inter_algorithm;
        coll_run(&e->net, COLL_REDUCE_SCATTER, g, &p, bytes);
        coll_run(&e->net, COLL_ALLGATHER, g, &p, bytes * e->opt->dp_param_gather_ratio);
    } else {
        coll_run(&e->net, COLL_ALLREDUCE, g, &p, bytes);
    }
}

void engine_dp_allreduce(engine *e, worker *w, double bytes)
{
    if (e->dp * e->cp < 2 || bytes <= 0)
        return;
    coll_group g;
    dp_group(e, w, &g);
    engine_grad_sync(e, &g, bytes);
    group_free(&g);
}

void engine_group_collective(engine *e, const coll_group *g, op_kind kind, double bytes)
{
    if (g->size < 2 || bytes <= 0)
        return;
    coll_params p = {.algorithm = e->opt->dp_algorithm,
                     .radix = e->opt->dp_radix,
                     .inter_algorithm = e->opt->dp_inter_algorithm};
    coll_kind k = kind == OP_PARAM_GATHER ? COLL_ALLGATHER : COLL_REDUCE_SCATTER;
    if (!coll_algorithm_supports(p.algorithm, k))
        p.algorithm = p.inter_algorithm; /* hierarchical has no RS/AG form */
    coll_run(&e->net, k, g, &p, bytes);
}

void engine_dp_collective(engine *e, worker *w, op_kind kind, double bytes)
{
    if (e->dp * e->cp < 2 || bytes <= 0)
        return;
    coll_group g;
    dp_group(e, w, &g);
    engine_group_collective(e, &g, kind, bytes);
    group_free(&g);
}
