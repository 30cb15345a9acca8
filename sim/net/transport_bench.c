/*
 * transport_bench.c -- n transfers through the transport, timed
 * (transport_bench.h).
 */
#include "transport_bench.h"

#include <simgrid/actor.h>
#include <stdlib.h>

#include "transport.h"

typedef struct bench_transfer {
    const sim_platform *pf;
    int src, dst;
    double bytes, t0, end_s;
    transport *t; /* shared by the bench's transfers, as by a run's */
} bench_transfer;

static void transfer_main(int argc, char **argv)
{
    bench_transfer *b = sg_actor_self_get_data();
    sg_host_t from_host = b->pf->host_of_rank[b->src], to_host = b->pf->host_of_rank[b->dst];
    endpoint from = {&from_host, &b->src}, to = {&to_host, &b->dst};
    transfer x = transport_start(b->t, &from, &to, b->bytes);
    transport_wait(b->t, &x);
    b->end_s = simgrid_get_clock() - b->t0;
}

int transport_bench(const sim_platform *pf, int n, const int *src, const int *dst,
                    const double *bytes, double *end_s, np_error *err)
{
    if (n < 1)
        return np_error_set(err, NP_EXIT_USAGE, pf->cluster.name, "", 0,
                            "a transfer bench needs at least one transfer, got %d", n);
    for (int i = 0; i < n; i++)
        if (src[i] < 0 || src[i] >= pf->num_npus || dst[i] < 0 || dst[i] >= pf->num_npus ||
            src[i] == dst[i])
            return np_error_set(err, NP_EXIT_USAGE, pf->cluster.name, "", 0,
                                "transfer %d: NPUs %d -> %d are not two NPUs of the platform "
                                "(0..%d)",
                                i, src[i], dst[i], pf->num_npus - 1);
    bench_transfer *b = calloc((size_t)n, sizeof *b);
    if (!b)
        return np_error_set(err, NP_EXIT_INTERNAL, "<bench>", "", 0, "out of memory");
    double t0 = simgrid_get_clock();
    transport t;
    transport_init(&t, pf, 1);
    for (int i = 0; i < n; i++) {
        b[i] = (bench_transfer){pf, src[i], dst[i], bytes[i], t0, 0, &t};
        sg_actor_t a = sg_actor_init("transport-bench", pf->host_of_rank[src[i]]);
        sg_actor_set_data(a, &b[i]);
        sg_actor_start(a, transfer_main, 0, NULL);
    }
    simgrid_run();
    for (int i = 0; i < n; i++)
        end_s[i] = b[i].end_s;
    transport_destroy(&t);
    free(b);
    return 0;
}
