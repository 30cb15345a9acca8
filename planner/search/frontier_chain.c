/*
 * frontier_chain.c -- the chain dynamic programme over operators with
 * configurations (frontier.h, part 2), built on the Pareto sets of
 * frontier_set.c.
 *
 * Chain DP.  Operators 0..n−1 in a chain, operator i with configurations c:
 *   F_0(c) = N_0(c),
 *   F_i(c) = Pareto( ∪_{c'} [F_{i−1}(c') ⊕ E_i(c', c)] ) ⊕ N_i(c),
 * result ∪_c F_{n−1}(c).  Every point remembers the previous configuration
 * and point, so any result point unwinds to one configuration per operator.
 */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontier.h"

void frontier_chain_free(frontier_chain *ch)
{
    int total = ch->first_set ? ch->first_set[ch->num_ops] : 0;
    for (int s = 0; s < total; s++) {
        if (ch->sets)
            frontier_set_free(&ch->sets[s]);
        if (ch->node_pick)
            free(ch->node_pick[s]);
    }
    free(ch->sets);
    free(ch->node_pick);
    free(ch->first_set);
    frontier_set_free(&ch->result);
    memset(ch, 0, sizeof *ch);
}

/* Records which node point every point of F used, then rewrites the points'
 * provenance from "index in the union" to "previous config, previous index". */
static int chain_record(frontier_set *F, const frontier_set *joined, int **pick)
{
    *pick = malloc((size_t)(F->count > 0 ? F->count : 1) * sizeof **pick);
    if (!*pick)
        return -1;
    for (int k = 0; k < F->count; k++) {
        frontier_point *p = &F->points[k];
        (*pick)[k] = p->right;
        if (joined) {
            const frontier_point *from = &joined->points[p->left];
            p->left = from->left;
            p->right = from->right;
        } else {
            p->left = p->right = -1;
        }
    }
    return 0;
}

/* Pareto ∪_{c'} [F_{i−1}(c') ⊕ E_i(c', c)], points tagged (c', index). */
static int chain_join(const frontier_chain_op *ops, int i, int c, const frontier_chain *ch,
                      frontier_set *joined)
{
    const frontier_chain_op *op = &ops[i];
    frontier_set edge, part;
    frontier_set_init(&edge);
    frontier_set_init(&part);
    int rc = 0;
    for (int cp = 0; cp < ops[i - 1].num_configs && !rc; cp++) {
        int e = cp * op->num_configs + c;
        double et = op->edge_time_s ? op->edge_time_s[e] : 0.0;
        double em = op->edge_memory_bytes ? op->edge_memory_bytes[e] : 0.0;
        if (isinf(et) || isinf(em))
            continue;
        edge.count = 0;
        rc = frontier_set_add(&edge, et, em, 0, 0);
        if (!rc)
            rc = frontier_sum(&ch->sets[ch->first_set[i - 1] + cp], &edge, &part);
        for (int k = 0; !rc && k < part.count; k++) {
            part.points[k].right = part.points[k].left;
            part.points[k].left = cp;
        }
        if (!rc)
            rc = frontier_union(joined, &part, joined);
    }
    frontier_set_free(&edge);
    frontier_set_free(&part);
    return rc;
}

/* With free edges the join is the same for every configuration c: joined
 * caches it (count < 0: not computed yet). */
static int chain_step(const frontier_chain_op *ops, int i, int c, frontier_chain *ch,
                      frontier_set *cached)
{
    int s = ch->first_set[i] + c;
    frontier_set *F = &ch->sets[s];
    const frontier_set *node = &ops[i].node[c];
    if (i == 0) {
        frontier_set none;
        frontier_set_init(&none);
        int rc = frontier_set_add(&none, 0.0, 0.0, 0, 0);
        if (!rc)
            rc = frontier_sum(&none, node, F); /* right = node index */
        frontier_set_free(&none);
        return rc ? rc : chain_record(F, NULL, &ch->node_pick[s]);
    }
    bool free_edges = !ops[i].edge_time_s && !ops[i].edge_memory_bytes;
    frontier_set own, *joined = free_edges ? cached : &own;
    frontier_set_init(&own);
    int rc = 0;
    if (!free_edges || c == 0)
        rc = chain_join(ops, i, c, ch, joined);
    if (!rc)
        rc = frontier_sum(joined, node, F);
    if (!rc)
        rc = chain_record(F, joined, &ch->node_pick[s]);
    frontier_set_free(&own);
    return rc;
}

int frontier_chain_solve(const frontier_chain_op *ops, int num_ops, frontier_chain *out)
{
    memset(out, 0, sizeof *out);
    out->num_ops = num_ops;
    out->first_set = calloc((size_t)num_ops + 1, sizeof *out->first_set);
    if (!out->first_set)
        return -1;
    for (int i = 0; i < num_ops; i++)
        out->first_set[i + 1] = out->first_set[i] + ops[i].num_configs;
    int total = out->first_set[num_ops];
    out->sets = calloc((size_t)(total > 0 ? total : 1), sizeof *out->sets);
    out->node_pick = calloc((size_t)(total > 0 ? total : 1), sizeof *out->node_pick);
    if (!out->sets || !out->node_pick)
        goto oom;
    frontier_set part;
    frontier_set_init(&part);
    for (int i = 0; i < num_ops; i++) {
        part.count = 0; /* the join shared by the configurations of op i */
        for (int c = 0; c < ops[i].num_configs; c++)
            if (chain_step(ops, i, c, out, &part))
                goto oom_part;
    }
    if (num_ops == 0) {
        frontier_set_free(&part);
        return 0;
    }
    int last = num_ops - 1;
    for (int c = 0; c < ops[last].num_configs; c++) {
        const frontier_set *F = &out->sets[out->first_set[last] + c];
        part.count = 0;
        for (int k = 0; k < F->count; k++)
            if (frontier_set_add(&part, F->points[k].time_s, F->points[k].memory_bytes, c, k))
                goto oom_part;
        if (frontier_union(&out->result, &part, &out->result))
            goto oom_part;
    }
    frontier_set_free(&part);
    return 0;
oom_part:
    frontier_set_free(&part);
oom:
    frontier_chain_free(out);
    return -1;
}

void frontier_chain_choice(const frontier_chain *ch, int k, int *configs, int *picks)
{
    int c = ch->result.points[k].left, idx = ch->result.points[k].right;
    for (int i = ch->num_ops - 1; i >= 0; i--) {
        int s = ch->first_set[i] + c;
        configs[i] = c;
        if (picks)
            picks[i] = ch->node_pick[s][idx];
        const frontier_point *p = &ch->sets[s].points[idx];
        c = p->left;
        idx = p->right;
    }
}
