/*
 * collective_hierarchical.c -- two-level all-reduce: inside servers, then
 * across them.
 *
 * The members that share a server (by their TP rank 0's NPU, server =
 * rank / npus_per_node) reduce-scatter among themselves on the scale-up
 * fabric; then the members that hold the same slice in every server (the
 * l-th member of each server, l = 0..L−1) all-reduce that slice of S/L bytes
 * across servers with the inter-server algorithm (coll_params.inter_algorithm,
 * ring-flow by default); then each server all-gathers.  This is the
 * hierarchical scheme of NCCL's and HCCL's multi-node all-reduce (e.g. Jia et
 * al., "Highly scalable deep learning training system with mixed-precision",
 * 2018, "hierarchical all-reduce"): the L parallel inter-server collectives
 * each carry 1/L of the data, so the scale-out NICs of a server share it.
 *
 * Intra-server steps are step-by-step rings of L−1 steps of S/L, each a
 * scale-up transfer lasting α_u + S/(L·B_u) (cl_p2p_time; the scale-up fabric
 * is not in the XML, so it has no contention).  With M servers and a ring
 * (step or flow) across them, on an idle fabric:
 *   2(L−1)(α_u + S/(L·B_u)) + 2(M−1)(α + S/(L·M·B)).
 * When every member is alone in its server (TP = server size, as in the 16K
 * Llama plan) it is the inter-server algorithm alone; when all share one
 * server it is the two scale-up rings.  Servers holding different numbers of
 * members have no common slicing: the group then runs the inter-server
 * algorithm flat over all members (a documented simplification).
 */
#include <stdlib.h>
#include <xbt/asserts.h>

#include "collective.h"
#include "collective_internal.h"

typedef struct member_place {
    int server, index;
} member_place;

static int place_compare(const void *a, const void *b)
{
    const member_place *x = a, *y = b;
    if (x->server != y->server)
        return x->server < y->server ? -1 : 1;
    return x->index - y->index;
}

/* Sorts the view's members by (server, index).  Returns the number of
 * members per server when all servers hold the same number, else 0. */
static int group_by_server(const coll_ctx *c, const coll_view *v, member_place *places)
{
    int per_node = c->t->pf->cluster.npus_per_node;
    for (int i = 0; i < v->n; i++) {
        places[i].server = coll_view_endpoint(c, v, i)->ranks[0] / per_node;
        places[i].index = i;
    }
    qsort(places, (size_t)v->n, sizeof *places, place_compare);
    int local = 1;
    while (local < v->n && places[local].server == places[0].server)
        local++;
    if (v->n % local)
        return 0;
    for (int start = 0; start < v->n; start += local) {
        int server = places[start].server;
        if (places[start + local - 1].server != server) /* sorted: all between match */
            return 0;
        if (start + local < v->n && places[start + local].server == server)
            return 0;
    }
    return local;
}

void coll_hierarchical_allreduce(coll_ctx *c, const coll_view *v, const coll_params *p,
                                 double bytes)
{
    coll_params inter = *p;
    inter.algorithm = p->inter_algorithm;
    if (inter.algorithm == COLL_HIERARCHICAL ||
        !coll_algorithm_supports(inter.algorithm, COLL_ALLREDUCE))
        inter.algorithm = COLL_RING_FLOW;
    member_place *places = malloc((size_t)v->n * sizeof *places);
    int *local_index = malloc((size_t)v->n * sizeof *local_index);
    int *inter_index = malloc((size_t)v->n * sizeof *inter_index);
    if (!places || !local_index || !inter_index)
        xbt_die("npusim: out of memory in a collective");
    int local = group_by_server(c, v, places);
    if (local == 0) {
        coll_run_view(c, v, COLL_ALLREDUCE, &inter, bytes);
    } else {
        int pos = 0;
        while (places[pos].index != v->me)
            pos++;
        int first = pos - pos % local, servers = v->n / local;
        for (int l = 0; l < local; l++)
            local_index[l] = coll_view_member(v, places[first + l].index);
        for (int s = 0; s < servers; s++)
            inter_index[s] = coll_view_member(v, places[s * local + pos % local].index);
        coll_view in_server = {local_index, local, pos % local};
        coll_view across = {inter_index, servers, pos / local};
        if (local > 1)
            coll_ring_reduce_scatter(c, &in_server, bytes);
        if (servers > 1)
            coll_run_view(c, &across, COLL_ALLREDUCE, &inter, bytes / local);
        if (local > 1)
            coll_ring_allgather(c, &in_server, bytes);
    }
    free(places);
    free(local_index);
    free(inter_index);
}
