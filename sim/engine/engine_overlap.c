/*
 * engine_overlap.c -- overlap: gradient buckets reduced during the backward
 * pass (--dp-overlap, Megatron's overlap_grad_reduce).
 *
 * Before the run, overlap_build() cuts every model chunk's gradients into
 * buckets and ties each to the gradient op that makes it final (the chunk's
 * last backward, or its last W when the schedule splits the backward); the
 * worker hands a bucket over part-way through that op (engine_worker.c).
 * During the run a communication actor per simulated worker,
 * overlap_comm_main(), reduces each bucket as soon as it is handed over,
 * while the worker computes on; the iteration's all-reduce op then only waits
 * for what the overlap did not hide.
 */
#include <math.h>
#include <stdlib.h>

#include "engine_internal.h"

/* ---- the buckets ----------------------------------------------------------- */

/* More buckets than this is a mistaken --dp-bucket-bytes, not a plan. */
#define MAX_BUCKETS_PER_CHUNK 100000

static bool makes_gradients(int kind) { return kind == OP_BACKWARD || kind == OP_WEIGHT_GRAD; }

/* The gradient bytes of model chunk (s, chunk) on one NPU. */
static double chunk_grad_bytes(const cm_model *cm, const plan *pl, int s, int chunk)
{
    int k = chunk * pl->num_stages + s;
    double bytes = 0;
    for (int l = pl->chunk_start[k]; l < pl->chunk_start[k + 1]; l++)
        bytes += cm->layers[l].grad_bytes;
    return bytes;
}

/* A chunk's gradients are final during its last gradient op: its last W when
 * the schedule splits the backward, else its last B. */
static int overlap_stage(const cm_model *cm, const plan *pl, const sched_stage *st, int s,
                         double bucket_bytes, overlap_plan *o)
{
    o->buckets_at_op = calloc((size_t)st->num_ops, sizeof *o->buckets_at_op);
    o->bytes_at_op = calloc((size_t)st->num_ops, sizeof *o->bytes_at_op);
    if (!o->buckets_at_op || !o->bytes_at_op)
        return -1;
    for (int chunk = 0; chunk < pl->num_chunks; chunk++) {
        int last = -1, last_w = -1;
        for (int i = 0; i < st->num_ops; i++) {
            if (st->ops[i].chunk != chunk || !makes_gradients(st->ops[i].kind))
                continue;
            last = i;
            if (st->ops[i].kind == OP_WEIGHT_GRAD)
                last_w = i;
        }
        if (last_w >= 0)
            last = last_w;
        double bytes = chunk_grad_bytes(cm, pl, s, chunk);
        if (last < 0 || bytes <= 0)
            continue;
        if (bytes / bucket_bytes > MAX_BUCKETS_PER_CHUNK)
            return -2;
        int n = (int)ceil(bytes / bucket_bytes);
        o->buckets_at_op[last] = n;
        o->bytes_at_op[last] = bytes / n;
        o->num_buckets += n;
    }
    o->bucket_bytes = malloc((size_t)(o->num_buckets > 0 ? o->num_buckets : 1) * sizeof(double));
    if (!o->bucket_bytes)
        return -1;
    int b = 0;
    for (int i = 0; i < st->num_ops; i++)
        for (int k = 0; k < o->buckets_at_op[i]; k++)
            o->bucket_bytes[b++] = o->bytes_at_op[i];
    return 0;
}

void overlap_free(engine *e)
{
    if (!e->overlap)
        return;
    for (int s = 0; s < e->p; s++) {
        free(e->overlap[s].buckets_at_op);
        free(e->overlap[s].bytes_at_op);
        free(e->overlap[s].bucket_bytes);
    }
    free(e->overlap);
    e->overlap = NULL;
}

int overlap_build(engine *e, const cm_model *cm, np_error *err)
{
    if (!e->opt->dp_overlap || e->dp * e->cp < 2)
        return 0;
    /* Megatron's default DDP bucket: max(40M, 1M·dp) parameters
     * (distributed_data_parallel_config.py), of 4-byte fp32 gradients. */
    double bucket_bytes = e->opt->dp_bucket_bytes > 0
                              ? e->opt->dp_bucket_bytes
                              : 4.0 * (e->dp * 1e6 > 40e6 ? e->dp * 1e6 : 40e6);
    e->overlap = calloc((size_t)e->p, sizeof *e->overlap);
    for (int s = 0; e->overlap && s < e->p; s++) {
        int rc = overlap_stage(cm, e->pl, &e->sc->stages[s], s, bucket_bytes, &e->overlap[s]);
        if (rc == -2) {
            overlap_free(e);
            return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--dp-bucket-bytes", 0,
                                "buckets of %g bytes cut a chunk's gradients into more than %d "
                                "buckets",
                                bucket_bytes, MAX_BUCKETS_PER_CHUNK);
        }
        if (rc)
            break;
    }
    for (int s = 0; e->overlap && s < e->p; s++)
        if (!e->overlap[s].bucket_bytes) {
            overlap_free(e);
            return np_error_set(err, NP_EXIT_INTERNAL, "<engine>", "", 0, "out of memory");
        }
    if (!e->overlap)
        return np_error_set(err, NP_EXIT_INTERNAL, "<engine>", "", 0, "out of memory");
    return 0;
}

/* --dp-overlap models one gradient sync per iteration, of every replica:
 * not asynchronous PipeDream's update after each backward, and not folded
 * replicas, whose pipeline traffic (missing) would share the NICs with the
 * overlapped buckets (measured: 2% faster at 16K). */
int overlap_check(const plan *pl, const engine_options *o, np_error *err)
{
    if (!o->dp_overlap)
        return 0;
    if (pl->schedule == SCHED_PIPEDREAM)
        return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--dp-overlap", 0,
                            "asynchronous PipeDream updates after every backward; the overlap "
                            "models one gradient sync per iteration");
    if (o->fold_dp > 0 && o->fold_dp != pl->data_parallel)
        return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--fold-dp", 0,
                            "cannot fold with --dp-overlap: the folded replicas' missing "
                            "pipeline traffic would share the NICs with the overlapped buckets");
    if (!(o->dp_bucket_bytes >= 0) || isinf(o->dp_bucket_bytes))
        return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--dp-bucket-bytes", 0,
                            "expected a finite positive size, got %g", o->dp_bucket_bytes);
    return 0;
}

/* ---- the communication actor ----------------------------------------------- */

/* --dp-overlap: reduces each gradient bucket as soon as the worker's
 * backward has made it ready, while the worker computes on. */
void overlap_comm_main(int argc, char **argv)
{
    worker *w = sg_actor_self_get_data();
    const overlap_plan *ov = &w->eng->overlap[w->stage];
    for (int b = 0; b < ov->num_buckets; b++) {
        sg_sem_acquire(w->bucket_ready);
        fold_release_replicas(w);
        engine_dp_allreduce(w->eng, w, ov->bucket_bytes[b]);
    }
    sg_sem_release(w->buckets_done);
    worker_linger(w);
}
