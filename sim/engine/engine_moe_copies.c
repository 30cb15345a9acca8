/*
 * engine_moe_copies.c -- the MoE policies' work on the fabric
 * (docs/moe.md, "Policies"): the expert copies' weight broadcasts and
 * gradient reductions, and FasterMoE's pipelined all-to-all with the expert
 * compute inside it.
 */
#include "collective_alltoallv.h"
#include "engine_moe_internal.h"

/* The copies of layer k on the fabric: a broadcast of each copied expert's
 * weights from its owner to its holders (a scatter of 1/h of them, then an
 * all-gather among the h holders), or the reduction of their gradients back
 * (a reduce-scatter among the holders, then a gather to the owner); all
 * experts' pieces in one all-to-all per phase. */
void engine_moe_copies_on_fabric(engine *e, worker *w, const coll_group *g, int k, bool broadcast)
{
    engine_moe *m = e->moe;
    const moe_layer_plan *pl = &m->plans[k];
    int n = m->ep, local = pl->experts / n;
    if (pl->copies == 0)
        return;
    double bytes = broadcast ? m->copy_weight_bytes : m->copy_grad_bytes;
    double start = engine_now(e);
    for (int phase = 0; phase < 2; phase++) {
        double to[n];
        for (int j = 0; j < n; j++)
            to[j] = 0.0;
        for (int x = 0; x < pl->experts; x++) {
            int owner = x / local, h = 1;
            const unsigned char *copy = &pl->copy[(size_t)x * n];
            for (int j = 0; j < n; j++)
                h += copy[j];
            if (h == 1)
                continue;
            bool mine = g->me == owner || copy[g->me];
            /* scatter (or gather): owner <-> holders; all-gather (or
             * reduce-scatter): every holder to every other */
            bool with_owner = broadcast ? phase == 0 : phase == 1;
            for (int j = 0; j < n; j++) {
                bool holder = j == owner || copy[j];
                if (j == g->me || !holder || !mine)
                    continue;
                if (!with_owner)
                    to[j] += bytes / h;
                else if (broadcast && g->me == owner)
                    to[j] += bytes / h;
                else if (!broadcast && j == owner)
                    to[j] += bytes / h;
            }
        }
        coll_run_alltoallv(&e->net, g, to, e->opt->ep_alltoall_algorithm);
    }
    m->copy_s[w - e->workers] += engine_now(e) - start;
}

typedef struct chunk_ctx {
    worker *w;
    double expert_s; /* this rank's expert time of the layer */
    const double *send;
    int n, me;
    double total; /* rows it computes from all sources */
    double computed_s;
} chunk_ctx;

static void run_chunk(void *ctx, int from)
{
    chunk_ctx *c = ctx;
    double d = c->total > 0 ? c->expert_s * c->send[(size_t)from * c->n + c->me] / c->total : 0;
    worker_execute(c->w, d);
    c->computed_s += d;
}

/* FasterMoE's pipelined dispatch, experts and combine (or their gradients):
 * the exposed communication is the elapsed time less the compute. */
void engine_moe_pipelined(engine *e, worker *w, const coll_group *g, int k, double expert_s)
{
    engine_moe *m = e->moe;
    const moe_route *r = &m->plans[k].route;
    int n = m->ep;
    double to[n], back[n];
    chunk_ctx c = {.w = w, .expert_s = expert_s, .send = r->send, .n = n, .me = g->me};
    for (int j = 0; j < n; j++) {
        to[j] = r->send[(size_t)g->me * n + j];
        back[j] = r->send[(size_t)j * n + g->me];
        c.total += back[j];
    }
    double start = engine_now(e);
    coll_run_alltoallv_pipelined(&e->net, g, to, back, run_chunk, &c);
    m->a2a_s[w - e->workers] += engine_now(e) - start - c.computed_s;
}
