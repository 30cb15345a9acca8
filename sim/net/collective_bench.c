/*
 * collective_bench.c -- one collective on its own, for tests and benchmarks.
 *
 * Builds what a collective needs and nothing more (a transport on the
 * platform, one endpoint of tp NPUs per member, the groups), starts one actor
 * per member at the same instant and runs simgrid_run() until every member is
 * done.  The groups are laid out as the engine lays out a stage's replicas,
 * so a bench of 128 members × 8 NPUs on the 16K platform moves exactly the
 * flows of one stage's data-parallel all-reduce in the real run.
 *
 * coll_bench_flows() starts bare flows the way the collectives start theirs:
 * the check that SimGrid shares a link between concurrent flows.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <simgrid/actor.h>
#include <simgrid/barrier.h>
#include <simgrid/exec.h>

#include "collective.h"
#include "transport.h"

typedef struct bench_member {
    transport *t;
    coll_group g; /* its group, itself as member g.me */
    const coll_bench_spec *spec;
    sg_bar_t finish;
    double end_s;
} bench_member;

void coll_bench_init_spec(coll_bench_spec *s)
{
    memset(s, 0, sizeof *s);
    s->kind = COLL_ALLREDUCE;
    coll_params_init(&s->params, COLL_ALLREDUCE);
    s->group_size = 2;
    s->tp = 1;
    s->num_groups = 1;
    s->bytes = 1e6;
}

static double wall_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static void bench_member_main(int argc, char **argv)
{
    bench_member *m = sg_actor_self_get_data();
    coll_run(m->t, m->spec->kind, &m->g, &m->spec->params, m->spec->bytes);
    m->end_s = transport_now(m->t);
    /* SimGrid cancels an ending actor's activities: stay until every member
     * is done, so that no flow this member started is cut short. */
    sg_barrier_wait(m->finish);
}

int coll_bench_run(const sim_platform *pf, const coll_bench_spec *s, coll_bench_result *out,
                   np_error *err)
{
    memset(out, 0, sizeof *out);
    long npus = (long)s->tp * s->group_size * s->num_groups;
    if (s->tp < 1 || s->group_size < 1 || s->num_groups < 1 || npus > pf->num_npus)
        return np_error_set(err, NP_EXIT_USAGE, pf->cluster.name, "", 0,
                            "a bench of %d group(s) of %d members × %d NPUs needs %ld NPUs, "
                            "the platform has %d",
                            s->num_groups, s->group_size, s->tp, npus, pf->num_npus);
    int n = s->group_size * s->num_groups;
    endpoint *endpoints = calloc((size_t)n, sizeof *endpoints);
    const endpoint **group_members = malloc((size_t)n * sizeof *group_members);
    int *ranks = malloc((size_t)npus * sizeof *ranks);
    sg_host_t *hosts = malloc((size_t)npus * sizeof *hosts);
    bench_member *members = calloc((size_t)n, sizeof *members);
    if (!endpoints || !group_members || !ranks || !hosts || !members) {
        free(endpoints);
        free(group_members);
        free(ranks);
        free(hosts);
        free(members);
        return np_error_set(err, NP_EXIT_INTERNAL, "<bench>", "", 0, "out of memory");
    }
    sg_bar_t finish = sg_barrier_init((unsigned)n);
    transport t;
    transport_init(&t, pf, s->tp);
    for (int i = 0; i < n; i++) {
        endpoint *ep = &endpoints[i];
        ep->ranks = ranks + (size_t)i * s->tp;
        ep->hosts = hosts + (size_t)i * s->tp;
        for (int r = 0; r < s->tp; r++) {
            ep->ranks[r] = r + s->tp * i; /* = r + tp·(d + N·s), as in the engine */
            ep->hosts[r] = pf->host_of_rank[ep->ranks[r]];
        }
        group_members[i] = ep;
    }
    for (int i = 0; i < n; i++) {
        int group = i / s->group_size;
        members[i] = (bench_member){
            .t = &t,
            .g = {.members = group_members + (size_t)group * s->group_size,
                  .size = s->group_size,
                  .me = i % s->group_size,
                  .id = 0}, /* the bench forms no other kind of group */
            .spec = s,
            .finish = finish,
        };
        sg_actor_t a = sg_actor_init("coll-bench", endpoints[i].hosts[0]);
        sg_actor_set_data(a, &members[i]);
        sg_actor_start(a, bench_member_main, 0, NULL);
    }
    double wall_start = wall_now_s();
    simgrid_run();
    out->wall_s = wall_now_s() - wall_start;
    for (int i = 0; i < n; i++)
        if (members[i].end_s > out->time_s)
            out->time_s = members[i].end_s;
    out->activities = t.activities;
    transport_destroy(&t);
    sg_barrier_destroy(finish);
    free(endpoints);
    free(group_members);
    free(ranks);
    free(hosts);
    free(members);
    return 0;
}

/* ---- bare flows ------------------------------------------------------------ */

typedef struct bench_flow {
    sg_host_t src, dst;
    double bytes, t0, end_s;
} bench_flow;

static void bench_flow_main(int argc, char **argv)
{
    bench_flow *f = sg_actor_self_get_data();
    sg_exec_wait(transport_flow_start(f->src, f->dst, f->bytes));
    f->end_s = simgrid_get_clock() - f->t0;
}

int coll_bench_flows(const sim_platform *pf, int num_flows, const int *src_ranks,
                     const int *dst_ranks, double bytes, coll_bench_result *out, np_error *err)
{
    memset(out, 0, sizeof *out);
    if (num_flows < 1)
        return np_error_set(err, NP_EXIT_USAGE, pf->cluster.name, "", 0,
                            "a flow bench needs at least one flow, got %d", num_flows);
    for (int i = 0; i < num_flows; i++)
        if (src_ranks[i] < 0 || src_ranks[i] >= pf->num_npus || dst_ranks[i] < 0 ||
            dst_ranks[i] >= pf->num_npus || src_ranks[i] == dst_ranks[i])
            return np_error_set(err, NP_EXIT_USAGE, pf->cluster.name, "", 0,
                                "flow %d: NPUs %d -> %d are not two NPUs of the platform (0..%d)",
                                i, src_ranks[i], dst_ranks[i], pf->num_npus - 1);
    bench_flow *flows = calloc((size_t)num_flows, sizeof *flows);
    if (!flows)
        return np_error_set(err, NP_EXIT_INTERNAL, "<bench>", "", 0, "out of memory");
    double t0 = simgrid_get_clock();
    for (int i = 0; i < num_flows; i++) {
        flows[i] = (bench_flow){.src = pf->host_of_rank[src_ranks[i]],
                                .dst = pf->host_of_rank[dst_ranks[i]],
                                .bytes = bytes,
                                .t0 = t0};
        sg_actor_t a = sg_actor_init("coll-bench-flow", flows[i].src);
        sg_actor_set_data(a, &flows[i]);
        sg_actor_start(a, bench_flow_main, 0, NULL);
    }
    double wall_start = wall_now_s();
    simgrid_run();
    out->wall_s = wall_now_s() - wall_start;
    for (int i = 0; i < num_flows; i++)
        if (flows[i].end_s > out->time_s)
            out->time_s = flows[i].end_s;
    out->activities = num_flows;
    free(flows);
    return 0;
}
