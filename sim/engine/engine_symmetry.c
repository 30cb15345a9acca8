/*
 * engine_symmetry.c -- whether a run uses the exact TP fold
 * (sim/net/transport_symmetry.h): one flow per TP group for the tp flows of
 * its ranks, with the same times (docs/design.md, "The exact TP fold").
 *
 * The fold needs TP groups of at least two NPUs whose ranks the fabric
 * treats alike.  Refused up front, without looking at routes: MoE models
 * (expert-parallel groups need not be whole TP groups), PXN (a cross-rail
 * transfer takes a relay of another rail), dual-plane NICs that pick the
 * plane by a hash of the two addresses (the ranks of a group then use
 * different planes), and --per-rank-flows.  Then the routes decide: every
 * pair of workers that the pipeline, the data-parallel ring and the
 * context-parallel ring connect is checked here, before the run, so that a
 * fabric that treats the ranks of a server differently (a torus, a
 * dragonfly, a fat tree whose up-links depend on the destination) keeps
 * per-rank flows; any other pair (a butterfly's partners) is checked by the
 * transport when first used.
 */
#include <stdlib.h>

#include "engine_internal.h"
#include "transport_symmetry.h"

static bool has_moe(const cm_model *cm)
{
    for (int i = 0; cm && i < cm->num_layers; i++)
        if (cm->layers[i].moe.is_moe)
            return true;
    return false;
}

typedef struct group_pair {
    int ranks[2][ENGINE_MAX_TP];
    sg_host_t hosts[2][ENGINE_MAX_TP];
    endpoint ep[2];
} group_pair;

/* Checks the transfers between workers (s, d, c) and (s2, d2, c2), both ways. */
static bool check_workers(tp_symmetry *sym, transport *t, const sim_platform *pf,
                          const placement *order, const int sizes[PLACE_DIMS], int s, int d, int c,
                          int s2, int d2, int c2)
{
    group_pair g;
    int at[2][3] = {{s, d, c}, {s2, d2, c2}};
    for (int k = 0; k < 2; k++) {
        for (int r = 0; r < sizes[0]; r++) {
            g.ranks[k][r] = placement_rank(order, sizes, r, at[k][2], at[k][1], at[k][0]);
            g.hosts[k][r] = pf->host_of_rank[g.ranks[k][r]];
        }
        g.ep[k] = (endpoint){.hosts = g.hosts[k], .ranks = g.ranks[k]};
    }
    char why[512];
    return tp_symmetry_check(sym, t, &g.ep[0], &g.ep[1], why, sizeof why) &&
           tp_symmetry_check(sym, t, &g.ep[1], &g.ep[0], why, sizeof why);
}

tp_symmetry *engine_tp_symmetry(const sim_platform *pf, const cm_model *cm, const plan *pl,
                                const engine_options *o)
{
    int tp = pl->tensor_parallel, dp = pl->data_parallel, p = pl->num_stages;
    int cp = cm && cm->context_parallel > 1 ? cm->context_parallel : 1;
    if (o->per_rank_flows || tp < 2 || tp > ENGINE_MAX_TP || has_moe(cm) || pf->cross_rail_pxn ||
        (pf->nic_planes == 2 && pf->plane_policy == PLANE_HASH) ||
        (long)tp * cp * dp * p != pf->num_npus)
        return NULL;
    tp_symmetry *sym = tp_symmetry_new(tp);
    if (!sym)
        return NULL;
    transport t;
    transport_init(&t, pf, tp);
    int sizes[PLACE_DIMS] = {tp, cp, dp, p};
    const placement *order = &o->placement;
    bool ok = true;
    /* the pipeline's neighbours, the last stage's to the first (interleaved) */
    for (int d = 0; ok && d < dp; d++)
        for (int c = 0; ok && c < cp; c++)
            for (int s = 0; ok && s < p && p > 1; s++)
                ok = check_workers(sym, &t, pf, order, sizes, s, d, c, (s + 1) % p, d, c);
    /* the data-parallel ring and the context-parallel ring */
    for (int s = 0; ok && s < p; s++)
        for (int c = 0; ok && c < cp; c++)
            for (int d = 0; ok && d < dp && dp > 1; d++)
                ok = check_workers(sym, &t, pf, order, sizes, s, d, c, s, (d + 1) % dp, c);
    for (int s = 0; ok && s < p && cp > 1; s++)
        for (int d = 0; ok && d < dp; d++)
            for (int c = 0; ok && c < cp; c++)
                ok = check_workers(sym, &t, pf, order, sizes, s, d, c, s, d, (c + 1) % cp);
    /* ring-flow's channels when the data-parallel group has several
     * members per server (collective.h, coll_ring_peers) */
    for (int s = 0; ok && s < p && dp * cp > 1; s++) {
        int n = dp * cp,
            local = placement_dp_ring_local(order, sizes, s, pf->cluster.npus_per_node);
        for (int i = 0; ok && local > 1 && i < n; i++) {
            coll_ring_peers q;
            coll_ring_peers_of(n, local, i, &q);
            ok = check_workers(sym, &t, pf, order, sizes, s, i / cp, i % cp, s, q.intra_next / cp,
                               q.intra_next % cp) &&
                 check_workers(sym, &t, pf, order, sizes, s, i / cp, i % cp, s, q.inter_next / cp,
                               q.inter_next % cp);
        }
    }
    transport_destroy(&t);
    if (!ok) {
        tp_symmetry_free(sym);
        return NULL;
    }
    return sym;
}
