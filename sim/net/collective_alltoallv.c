/*
 * collective_alltoallv.c -- all-to-all with a size per pair, and its bench
 * (collective_alltoallv.h explains the algorithm and its cost).
 */
#include "collective_alltoallv.h"

#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/barrier.h>
#include <simgrid/engine.h>

#include "collective_internal.h"

void coll_run_alltoallv(transport *t, const coll_group *g, const double *to_bytes,
                        coll_algorithm algorithm)
{
    int n = g->size;
    if (n < 2)
        return;
    coll_ctx c;
    coll_ctx_enter(&c, t, g);
    coll_view all = {NULL, n, g->me};
    if (algorithm == COLL_CONCURRENT)
        coll_concurrent_exchange(&c, &all, to_bytes, 0);
    else
        coll_pairwise_exchange(&c, &all, to_bytes, 0);
    coll_ctx_leave(&c);
}

void coll_run_alltoallv_pipelined(transport *t, const coll_group *g, const double *to_bytes,
                                  const double *back_bytes, coll_chunk_fn compute, void *ctx)
{
    int n = g->size;
    if (n < 2) {
        compute(ctx, g->me);
        return;
    }
    coll_ctx c;
    coll_ctx_enter(&c, t, g);
    coll_view all = {NULL, n, g->me};
    int in = coll_tags(&c, n - 1), out = coll_tags(&c, n - 1);
    for (int k = 0; k < n; k++) {
        if (k + 1 < n) /* the next chunk travels while this one is computed */
            coll_send(&c, &all, (g->me + k + 1) % n, in + k, to_bytes[(g->me + k + 1) % n]);
        int from = (g->me + n - k) % n;
        compute(ctx, from);
        if (k > 0) /* the result goes back to its source */
            coll_send(&c, &all, from, out + k - 1, back_bytes[from]);
        if (k + 1 < n)
            coll_recv(&c, &all, (g->me + n - k - 1) % n, in + k);
    }
    for (int k = 1; k < n; k++)
        coll_recv(&c, &all, (g->me + k) % n, out + k - 1);
    coll_ctx_leave(&c);
}

/* ---- bench ----------------------------------------------------------------- */

typedef struct v_member {
    transport *t;
    coll_group g;
    const double *row;
    double start_s;
    coll_algorithm algorithm;
    sg_bar_t finish;
    double end_s;
} v_member;

static void v_member_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    v_member *m = sg_actor_self_get_data();
    if (m->start_s > 0)
        sg_actor_sleep_for(m->start_s);
    coll_run_alltoallv(m->t, &m->g, m->row, m->algorithm);
    m->end_s = transport_now(m->t);
    sg_barrier_wait(m->finish); /* no flow of this member is cut short */
}

int coll_bench_alltoallv(const sim_platform *pf, int n, const double *matrix, const double *start_s,
                         coll_algorithm algorithm, coll_bench_result *out, np_error *err)
{
    memset(out, 0, sizeof *out);
    if (n < 1 || n > pf->num_npus)
        return np_error_set(err, NP_EXIT_USAGE, pf->cluster.name, "", 0,
                            "an all-to-all of %d members needs %d NPUs, the platform has %d", n, n,
                            pf->num_npus);
    endpoint *eps = calloc((size_t)n, sizeof *eps);
    const endpoint **members = malloc((size_t)n * sizeof *members);
    int *ranks = malloc((size_t)n * sizeof *ranks);
    sg_host_t *hosts = malloc((size_t)n * sizeof *hosts);
    v_member *m = calloc((size_t)n, sizeof *m);
    if (!eps || !members || !ranks || !hosts || !m) {
        free(eps);
        free(members);
        free(ranks);
        free(hosts);
        free(m);
        return np_error_set(err, NP_EXIT_INTERNAL, "<bench>", "", 0, "out of memory");
    }
    transport t;
    transport_init(&t, pf, 1);
    sg_bar_t finish = sg_barrier_init((unsigned)n);
    for (int i = 0; i < n; i++) {
        ranks[i] = i;
        hosts[i] = pf->host_of_rank[i];
        eps[i].ranks = &ranks[i];
        eps[i].hosts = &hosts[i];
        members[i] = &eps[i];
    }
    for (int i = 0; i < n; i++) {
        m[i] = (v_member){.t = &t,
                          .g = {.members = members, .size = n, .me = i, .id = 0},
                          .row = matrix + (size_t)i * n,
                          .start_s = start_s ? start_s[i] : 0.0,
                          .algorithm = algorithm,
                          .finish = finish};
        sg_actor_t a = sg_actor_init("alltoallv-bench", hosts[i]);
        sg_actor_set_data(a, &m[i]);
        sg_actor_start(a, v_member_main, 0, NULL);
    }
    simgrid_run();
    for (int i = 0; i < n; i++)
        if (m[i].end_s > out->time_s)
            out->time_s = m[i].end_s;
    out->activities = t.activities;
    transport_destroy(&t);
    sg_barrier_destroy(finish);
    free(eps);
    free(members);
    free(ranks);
    free(hosts);
    free(m);
    return 0;
}
