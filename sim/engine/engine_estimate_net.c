/*
 * engine_estimate_net.c -- the estimate's count of what one transfer and one
 * gradient collective post (engine_estimate.c, engine_estimate_internal.h):
 * the transport's flows and sleeps on the loaded platform's fabric, and each
 * collective algorithm's messages.
 */
#include <math.h>

#include "engine_estimate_internal.h"

est_fabric est_fabric_of(const cl_cluster *c, const sim_platform *pf, const engine_options *o)
{
    est_fabric f = {.per_node = c->npus_per_node > 0 ? c->npus_per_node : 1, .legs = 1};
    if (pf) {
        f.legs = pf->nic_planes == 2 && pf->plane_policy == PLANE_SPLIT ? 2 : 1;
        f.scaleup_flows = pf->scaleup_simulated;
        f.pxn = pf->cross_rail_pxn;
    }
    f.order = o->placement;
    return f;
}

/* The NPU of TP rank r of worker (stage s, replica d) (placement.h; the
 * estimate has no context-parallel rank: c = 0 of 1). */
static long rank_of(const est_fabric *f, const plan *pl, int r, int d, int s)
{
    int sizes[PLACE_DIMS] = {pl->tensor_parallel, 1, pl->data_parallel, pl->num_stages};
    return placement_rank(&f->order, sizes, r, 0, d, s);
}

/* A transfer from worker (sa, d) to worker (sb, e): its flows, and whether
 * some part waits for the closed-form scale-up time (one sleep at the
 * receiver for all of them: transport_wait). */
static void transfer_parts(const est_fabric *f, const plan *pl, int sa, int d, int sb, int e,
                           int *flows, bool *same)
{
    int tp = pl->tensor_parallel;
    *flows = 0;
    *same = false;
    int ranks = f->tp_fold ? 1 : tp; /* the fold posts rank 0's part alone */
    if (tp > MAX_EXACT_TP) {
        *flows = ranks * f->legs; /* no server holds such a TP group: every peer is elsewhere */
        return;
    }
    for (int r = 0; r < ranks; r++) {
        long a = rank_of(f, pl, r, d, sa), b = rank_of(f, pl, r, e, sb);
        bool scaleup = a / f->per_node == b / f->per_node;
        bool relay = !scaleup && f->pxn && a % f->per_node != b % f->per_node;
        if (scaleup || relay) {
            if (f->scaleup_flows)
                ++*flows;
            else
                *same = true;
        }
        if (!scaleup)
            *flows += f->legs;
    }
}

double est_transfer_cost(const est_fabric *f, const plan *pl, int sa, int d, int sb, int e)
{
    int flows;
    bool same;
    transfer_parts(f, pl, sa, d, sb, e, &flows, &same);
    return flows + same;
}

/* One member's part of a collective among the replicas of stage s (replica
 * d is member d): its messages' flows, a sleep per step that waits for a
 * scale-up message, and ring-flow's latency sleep. */
typedef struct butterfly_shape {
    int radices[COLL_BUTTERFLY_MAX_STAGES];
    int stages;
} butterfly_shape;

static double member_cost(const est_fabric *f, const plan *pl, const engine_options *o,
                          coll_algorithm a, coll_kind kind, const butterfly_shape *bf, int local,
                          int s, int d)
{
    int n = pl->data_parallel;
    double halves = kind == COLL_ALLREDUCE ? 2 : 1;
    switch (a) {
    case COLL_RING_FLOW: {
        double steps = halves * (n - 1), cost;
        if (local > 1) { /* channels: to the successor in the server and the peer in the next */
            coll_ring_peers q;
            coll_ring_peers_of(n, local, d, &q);
            cost = est_transfer_cost(f, pl, s, d, s, q.intra_next);
            if (q.inter_next != q.intra_next)
                cost += est_transfer_cost(f, pl, s, d, s, q.inter_next);
        } else {
            cost = est_transfer_cost(f, pl, s, d, s, (d + 1) % n);
        }
        return cost + (steps > 1 ? 1 : 0);
    }
    case COLL_HALVING_DOUBLING:
    case COLL_BUTTERFLY: {
        double cost = 0;
        for (int j = 0, stride = 1; j < bf->stages; stride *= bf->radices[j], j++) {
            int r = bf->radices[j], digit = (d / stride) % r;
            double flows = 0, same = 0;
            int partners = r < MAX_EXACT_PARTNERS ? r : MAX_EXACT_PARTNERS;
            for (int x = 0; x < partners; x++) {
                if (x == digit)
                    continue;
                int x_flows;
                bool scaleup;
                transfer_parts(f, pl, s, d, s, d + (x - digit) * stride, &x_flows, &scaleup);
                flows += x_flows;
                same += scaleup;
            }
            flows *= (double)(r - 1) / (partners - (digit < partners)); /* sampled */
            cost += flows + (same > 0); /* scale-up messages of a step: one wait */
        }
        return halves * cost;
    }
    case COLL_HIERARCHICAL: {
        /* Replicas of a stage are consecutive ranks: `local` per server
         * reduce-scatter and all-gather on a step ring (scale-up), the same
         * position of every server all-reduces across. */
        int tp = pl->tensor_parallel > 0 ? pl->tensor_parallel : 1;
        int local = f->per_node >= tp ? f->per_node / tp : 1;
        coll_algorithm inter = o->dp_inter_algorithm;
        if (inter == COLL_HIERARCHICAL || !coll_algorithm_supports(inter, COLL_ALLREDUCE))
            inter = COLL_RING_FLOW; /* as coll_hierarchical_allreduce() does */
        if (local < 1 || n % local) /* servers not alike: the inter algorithm on all */
            return member_cost(f, pl, o, inter, kind, bf, 1, s, d);
        int servers = n / local;
        /* a scale-up step: one wait, or a flow per TP rank when simulated
         * (one under the TP fold) */
        double step = f->scaleup_flows && !f->tp_fold ? tp : 1;
        double cost = local > 1 ? 2.0 * (local - 1) * step : 0;
        if (servers > 1) {
            double edge = est_transfer_cost(f, pl, s, d, s, (d + local) % n);
            if (inter == COLL_RING_FLOW)
                cost += edge + 1;
            else if (inter == COLL_RING)
                cost += 2.0 * (servers - 1) * edge;
            else
                cost += 2.0 * ceil(log2(servers)) * edge;
        }
        return cost;
    }
    case COLL_RING:
    default:
        return halves * (n - 1) * est_transfer_cost(f, pl, s, d, s, (d + 1) % n);
    }
}

/* Activities of one gradient collective of stage s, over all its members. */
double est_stage_collective(const est_fabric *f, const plan *pl, const engine_options *o,
                            coll_algorithm a, coll_kind kind, int s)
{
    int n = pl->data_parallel, sampled = n < MAX_EXACT_REPLICAS ? n : MAX_EXACT_REPLICAS;
    /* the butterfly's radices (for the whole group, or the inter-server
     * part of hierarchical: it falls back on them when servers differ) */
    coll_algorithm b = a == COLL_HIERARCHICAL ? o->dp_inter_algorithm : a;
    butterfly_shape bf = {.stages = 0};
    if (b == COLL_HALVING_DOUBLING || b == COLL_BUTTERFLY)
        bf.stages = coll_butterfly_radices(n,
                                           b == COLL_HALVING_DOUBLING ? 2
                                           : o->dp_radix >= 2         ? o->dp_radix
                                                                      : 4,
                                           bf.radices);
    int sizes[PLACE_DIMS] = {pl->tensor_parallel, 1, n, pl->num_stages};
    int local = a == COLL_RING_FLOW ? placement_dp_ring_local(&f->order, sizes, s, f->per_node) : 1;
    double cost = 0;
    for (int d = 0; d < sampled; d++)
        cost += member_cost(f, pl, o, a, kind, &bf, local, s, d);
    return cost * n / sampled;
}
