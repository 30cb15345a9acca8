/*
 * engine_overlap.c -- overlap: gradient buckets reduced during the backward
 * pass, and with the distributed optimizer parameter buckets gathered during
 * the forward (--dp-overlap: Megatron's overlap_grad_reduce and
 * overlap_param_gather).
 *
 * Before the run, overlap_build() cuts every model chunk's gradients into
 * buckets and ties each to the gradient op that makes it final (the chunk's
 * last backward, or its last W when the schedule splits the backward); the
 * worker hands a bucket over part-way through that op (engine_worker.c).
 * During the run a communication actor per simulated worker,
 * overlap_comm_main(), reduces each bucket as soon as it is handed over,
 * while the worker computes on; the iteration's all-reduce op then only waits
 * for what the overlap did not hide.
 *
 * With the distributed optimizer the sync is a reduce-scatter of the
 * gradients and, after the optimizer step, an all-gather of the updated
 * parameters.  Megatron with overlap_param_gather does not run that
 * all-gather after the step: it launches it asynchronously and the next
 * iteration's forward pre-hooks wait for each bucket as its parameters are
 * first used (megatron/core/distributed/distributed_data_parallel.py,
 * _make_forward_pre_hook; distrib_optimizer.py: "the first all-gather is
 * launched asynchronously in the next optimizer.zero_grad() call and
 * subsequent all-gathers are launched in the forward pre-hook").  Under the
 * interleaved schedule the gathers of chunks 0 and 1 start with the
 * iteration and the gather of chunk j + 1 (j >= 1) starts with the forward of
 * virtual micro-batch j·p − s on stage s ("launch param synchronization for
 * next model chunk", megatron/core/pipeline_parallel/schedules.py,
 * forward_backward_pipelining_with_interleaving), so that all stages launch
 * it at the same time.  In a steady state of identical iterations, gathering
 * the previous step's update at the start of this one is exact: so the
 * actor first gathers the chunks' parameter buckets in the order their first
 * forwards come (a chunk's after its launch), the first forward of each chunk
 * runs in as many equal pieces as it has buckets, each waiting for its
 * bucket, and the backward's buckets are reduce-scattered only.  The
 * iteration then ends with the optimizer step after the last reduce-scatter.
 *
 * Sharded data parallelism (ZeRO-2, optim_grads; ZeRO-3/FSDP,
 * optim_grads_params) has no buckets: its op lists already reduce-scatter a
 * chunk's gradients after every micro-batch's backward and, under ZeRO-3,
 * gather its parameters before every forward and backward
 * (planner/schedule/schedule_parallel.c).  With --dp-overlap those
 * collectives leave the worker's stream, as FSDP runs them on streams of
 * their own (PyTorch FSDP2, torch/distributed/fsdp/_fully_shard/
 * _fsdp_param_group.py: reduce-scatters on a reduce-scatter stream,
 * all-gathers on an all-gather stream, prefetched):
 *   - the reduce-scatters run on the communication actor, in the op list's
 *     order; the worker hands one over and computes on, but first waits for
 *     the previous one to end (FSDP2's post_backward waits for the previous
 *     reduce-scatter's event before it issues the next, which frees that
 *     one's unsharded gradients), and for the last one before the optimizer
 *     step (FSDP2's final callback does the same).  So at most one
 *     reduce-scatter is in flight, holding one chunk's unsharded gradients
 *     beyond the one being computed;
 *   - ZeRO-3's per-pass gathers run on a second actor, in order; the gather
 *     an op needs is launched when the compute op before it starts (FSDP's
 *     forward and backward prefetch of the next module's parameters; the
 *     first gathers of the list, with no compute op before them, at once),
 *     and the worker waits for it where the blocking list gathered.  One
 *     prefetched chunk's parameters are held beyond the one computing.
 * The memory model reserves both buffers (planner/schedule/memory.c), so the
 * tracker starts from the same workspace.  ZeRO-2's all-gather of the
 * updated parameters after the optimizer step is the distributed
 * optimizer's, and is overlapped the same way (overlap_param_gather): the
 * communication actor first gathers the chunks' parameter buckets (buckets
 * of bucket_bytes / 4 parameters, each chunk's update being its parameters
 * at the weights' width, what the blocking op moves), at the same launch
 * points, while each chunk's first forward runs in one piece per bucket;
 * the op after the optimizer step then does nothing.  It writes into the
 * replicated weights, so it holds no buffer of its own.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
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

/* ZeRO-2's update of model chunk (s, chunk) on one NPU: its parameters at
 * the weights' width, what the blocking list's gather moves for the chunk
 * (schedule_parallel.c), and its buckets: Megatron's bucket holds
 * bucket_bytes / 4 parameters (overlap_build: 4-byte fp32 gradients). */
static double chunk_update(const cm_model *cm, const plan *pl, int s, int chunk,
                           double bucket_bytes, int *buckets)
{
    int k = chunk * pl->num_stages + s;
    double params = 0;
    for (int l = pl->chunk_start[k]; l < pl->chunk_start[k + 1]; l++)
        params += cm->layers[l].params;
    double n = cm_dp_param_buckets(params, bucket_bytes);
    *buckets = params <= 0 ? 0 : n > MAX_BUCKETS_PER_CHUNK ? MAX_BUCKETS_PER_CHUNK + 1 : (int)n;
    return params * cm->weight_bytes_per_param;
}

/* The parameter gathers of stage s (distributed optimizer, and ZeRO-2's
 * gather of the update): the chunks in the order of their first forward,
 * each cut into as many buckets as its gradients, of `ratio` parameter bytes
 * per gradient byte (ratio 0: ZeRO-2's, chunk_update()); Megatron's
 * interleaved launch points (see the head of this file). */
static int gather_stage(const cm_model *cm, const plan *pl, const sched_stage *st, int s,
                        double bucket_bytes, double ratio, overlap_plan *o)
{
    int v = pl->num_chunks, p = pl->num_stages;
    o->gathers_at_op = calloc((size_t)st->num_ops, sizeof *o->gathers_at_op);
    o->launches_at_op = calloc((size_t)st->num_ops, sizeof *o->launches_at_op);
    o->gather_buckets = calloc((size_t)v, sizeof *o->gather_buckets);
    o->gather_bytes = calloc((size_t)v, sizeof *o->gather_bytes);
    o->gather_waits = calloc((size_t)v, sizeof *o->gather_waits);
    int *first = malloc((size_t)v * sizeof *first);
    if (!o->gathers_at_op || !o->launches_at_op || !o->gather_buckets || !o->gather_bytes ||
        !o->gather_waits || !first) {
        free(first);
        return -1;
    }
    for (int c = 0; c < v; c++)
        first[c] = -1;
    int forwards = 0, launches = 0, seen = 0;
    bool ascending = true;
    for (int i = 0; i < st->num_ops; i++) {
        if (st->ops[i].kind != OP_FORWARD)
            continue;
        int c = st->ops[i].chunk;
        if (c >= 0 && c < v && first[c] < 0) {
            ascending = ascending && c == seen;
            first[c] = i;
            seen++;
        }
        int q = forwards + s; /* Megatron's param_sync_microbatch_id */
        if (v > 1 && q < p * v && q % p == 0 && q / p + 1 > 1 && q / p + 1 < v) {
            o->launches_at_op[i]++;
            launches++;
        }
        forwards++;
    }
    if (!ascending) /* not Megatron's interleaving: every gather at the start */
        for (int i = 0; i < st->num_ops; i++)
            o->launches_at_op[i] = launches = 0;
    /* The chunks by their first forward (Megatron's interleaving: 0, 1, ...). */
    int *order_of = malloc((size_t)v * sizeof *order_of);
    if (!order_of) {
        free(first);
        return -1;
    }
    int used = 0;
    for (int c = 0; c < v; c++) {
        if (first[c] < 0)
            continue;
        int k = used++;
        for (; k > 0 && first[order_of[k - 1]] > first[c]; k--)
            order_of[k] = order_of[k - 1];
        order_of[k] = c;
    }
    for (int n = 0; n < used; n++) {
        int c = order_of[n], buckets;
        double bytes;
        if (ratio > 0) {
            bytes = chunk_grad_bytes(cm, pl, s, c);
            buckets = bytes > 0 ? (int)ceil(bytes / bucket_bytes) : 0;
            bytes *= ratio;
        } else {
            bytes = chunk_update(cm, pl, s, c, bucket_bytes, &buckets);
        }
        if (buckets > MAX_BUCKETS_PER_CHUNK) {
            free(order_of);
            free(first);
            return -2;
        }
        o->gather_buckets[n] = buckets;
        o->gather_bytes[n] = buckets ? bytes / buckets : 0;
        o->gather_waits[n] = n >= 2 && n - 2 < launches;
        o->gathers_at_op[first[c]] = buckets;
    }
    o->num_gather_chunks = used;
    free(order_of);
    free(first);
    return 0;
}

/* A per-pass gather of ZeRO-3 (the end-of-iteration gather of ZeRO-2 has no
 * micro-batch). */
static bool is_pass_gather(const sched_op *op)
{
    return op->kind == OP_PARAM_GATHER && op->micro_batch >= 0;
}

/* ZeRO-2/3 (see the head of this file): no gradient buckets; every per-pass
 * gather of ZeRO-3 launched when the compute op before it starts; ZeRO-2's
 * gather of the update as the distributed optimizer's (gather_stage). */
static int zero_stage(const cm_model *cm, const plan *pl, const sched_stage *st, int s,
                      double bucket_bytes, overlap_plan *o)
{
    int n = st->num_ops > 0 ? st->num_ops : 1, gathers = 0;
    o->zero = true;
    for (int i = 0; i < st->num_ops; i++)
        gathers += is_pass_gather(&st->ops[i]);
    o->buckets_at_op = calloc((size_t)n, sizeof *o->buckets_at_op);
    o->bytes_at_op = calloc((size_t)n, sizeof *o->bytes_at_op);
    o->bucket_bytes = malloc(sizeof(double));
    if (!o->buckets_at_op || !o->bytes_at_op || !o->bucket_bytes)
        return -1;
    if (cm->sharding < WL_SHARD_OPTIM_GRADS_PARAMS)
        return gather_stage(cm, pl, st, s, bucket_bytes, 0, o);
    o->gathers_at_op = calloc((size_t)n, sizeof *o->gathers_at_op);
    o->launches_at_op = calloc((size_t)n, sizeof *o->launches_at_op);
    int g = gathers > 0 ? gathers : 1;
    o->gather_buckets = calloc((size_t)g, sizeof *o->gather_buckets);
    o->gather_bytes = calloc((size_t)g, sizeof *o->gather_bytes);
    o->gather_waits = calloc((size_t)g, sizeof *o->gather_waits);
    if (!o->gathers_at_op || !o->launches_at_op || !o->gather_buckets || !o->gather_bytes ||
        !o->gather_waits)
        return -1;
    int previous = -1, k = 0;
    for (int i = 0; i < st->num_ops; i++) {
        if (worker_op_computes(st->ops[i].kind))
            previous = i;
        if (!is_pass_gather(&st->ops[i]))
            continue;
        o->gather_buckets[k] = 1;
        o->gather_bytes[k] = st->ops[i].bytes;
        o->gather_waits[k] = previous >= 0;
        if (previous >= 0)
            o->launches_at_op[previous]++;
        k++;
    }
    o->zero_gathers = gathers;
    o->num_gather_chunks = gathers;
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
        free(e->overlap[s].gathers_at_op);
        free(e->overlap[s].launches_at_op);
        free(e->overlap[s].gather_buckets);
        free(e->overlap[s].gather_bytes);
        free(e->overlap[s].gather_waits);
    }
    free(e->overlap);
    e->overlap = NULL;
}

int overlap_build(engine *e, const cm_model *cm, np_error *err)
{
    if (!e->opt->dp_overlap || e->dp * e->cp < 2)
        return 0;
    double bucket_bytes = cm_dp_bucket_bytes(e->opt->dp_bucket_bytes, e->dp);
    e->overlap = calloc((size_t)e->p, sizeof *e->overlap);
    for (int s = 0; e->overlap && s < e->p; s++) {
        bool zero = cm->sharding >= WL_SHARD_OPTIM_GRADS;
        int rc = zero
                     ? zero_stage(cm, e->pl, &e->sc->stages[s], s, bucket_bytes, &e->overlap[s])
                     : overlap_stage(cm, e->pl, &e->sc->stages[s], s, bucket_bytes, &e->overlap[s]);
        if (!rc && !zero && e->opt->dp_param_gather_ratio > 0)
            rc = gather_stage(cm, e->pl, &e->sc->stages[s], s, bucket_bytes,
                              e->opt->dp_param_gather_ratio, &e->overlap[s]);
        if (rc == -2) {
            overlap_free(e);
            return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--dp-bucket-bytes", 0,
                                "buckets of %g bytes cut a chunk's gradients into more than %d "
                                "buckets",
                                bucket_bytes, MAX_BUCKETS_PER_CHUNK);
        }
        if (rc) {
            overlap_free(e);
            break;
        }
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

void overlap_worker_init(worker *w)
{
    w->bucket_ready = sg_sem_init(0);
    w->buckets_done = sg_sem_init(0);
    w->params_ready = sg_sem_init(0);
    w->params_launch = sg_sem_init(0);
    w->zero_rs_done = sg_sem_init(0);
    w->zero_ag_done = sg_sem_init(0);
}

void overlap_worker_destroy(worker *w)
{
    if (!w->bucket_ready)
        return;
    sg_sem_destroy(w->bucket_ready);
    sg_sem_destroy(w->buckets_done);
    sg_sem_destroy(w->params_ready);
    sg_sem_destroy(w->params_launch);
    sg_sem_destroy(w->zero_rs_done);
    sg_sem_destroy(w->zero_ag_done);
}

static const overlap_plan *plan_of(const worker *w)
{
    return w->eng->overlap && w->simulated ? &w->eng->overlap[w->stage] : NULL;
}

int overlap_before_op(worker *w, int i)
{
    const overlap_plan *ov = plan_of(w);
    if (!ov || !ov->gathers_at_op)
        return 0;
    if (ov->zero && w->eng->sc->stages[w->stage].ops[i].kind == OP_OPTIMIZER)
        overlap_zero_drain(w);
    for (int k = 0; k < ov->launches_at_op[i]; k++)
        sg_sem_release(w->params_launch);
    return ov->gathers_at_op[i];
}

bool overlap_starts_block(const worker *w, int i)
{
    const overlap_plan *ov = plan_of(w);
    if (ov && ov->zero && w->eng->sc->stages[w->stage].ops[i].kind == OP_OPTIMIZER)
        return true; /* the reduce-scatters are drained first */
    return ov && ov->gathers_at_op && (ov->gathers_at_op[i] > 0 || ov->launches_at_op[i] > 0);
}

/* Waits on sem once; the wait is data-parallel time. */
static void wait_dp(worker *w, sg_sem_t sem)
{
    double start = engine_now(w->eng);
    sg_sem_acquire(sem);
    w->dp_comm_s += engine_now(w->eng) - start;
}

bool overlap_zero_op(worker *w, const sched_op *op)
{
    const overlap_plan *ov = plan_of(w);
    if (!ov || !ov->zero)
        return false;
    if (is_pass_gather(op)) {
        wait_dp(w, w->zero_ag_done);
        return true;
    }
    if (op->kind != OP_GRAD_REDUCE_SCATTER) {
        /* ZeRO-2's gather of the update: the communication actor ran it at
         * the iteration's start, the previous step's in a steady state */
        overlap_zero_drain(w);
        return true;
    }
    if (w->zero_rs_launched > w->zero_rs_waited) { /* the previous one frees its buffer */
        wait_dp(w, w->zero_rs_done);
        w->zero_rs_waited++;
    }
    w->zero_rs_launched++;
    sg_sem_release(w->bucket_ready);
    return true;
}

void overlap_zero_drain(worker *w)
{
    const overlap_plan *ov = plan_of(w);
    if (!ov || !ov->zero)
        return;
    for (; w->zero_rs_waited < w->zero_rs_launched; w->zero_rs_waited++)
        wait_dp(w, w->zero_rs_done);
}

int overlap_num_actors(const engine *e)
{
    if (!e->overlap)
        return 0;
    int n = 0;
    for (int s = 0; s < e->p; s++)
        n += e->fold * e->cp * (1 + (e->overlap[s].zero_gathers > 0));
    return n;
}

void overlap_wait_params(worker *w) { wait_dp(w, w->params_ready); }

/* ZeRO-3 with --dp-overlap: the per-pass parameter gathers of a worker, in
 * its op list's order, each once it is launched. */
static void zero_gather_main(int argc, char **argv)
{
    worker *w = sg_actor_self_get_data();
    const overlap_plan *ov = &w->eng->overlap[w->stage];
    for (int n = 0; n < ov->zero_gathers; n++) {
        if (ov->gather_waits[n])
            sg_sem_acquire(w->params_launch);
        engine_dp_collective(w->eng, w, OP_PARAM_GATHER, ov->gather_bytes[n]);
        sg_sem_release(w->zero_ag_done);
    }
    worker_linger(w);
}

/* The parameter buckets of the previous step's update, chunk by chunk, each
 * chunk once it is launched (distributed optimizer, ZeRO-2). */
static void gather_update(worker *w, const overlap_plan *ov)
{
    for (int n = 0; n < ov->num_gather_chunks; n++) {
        if (ov->gather_waits[n])
            sg_sem_acquire(w->params_launch);
        for (int b = 0; b < ov->gather_buckets[n]; b++) {
            fold_release_replicas(w);
            engine_dp_collective(w->eng, w, OP_PARAM_GATHER, ov->gather_bytes[n]);
            sg_sem_release(w->params_ready);
        }
    }
}

/* ZeRO-2/3 with --dp-overlap: ZeRO-2's gather of the update, then the
 * reduce-scatters of a worker, in its op list's order, each once the worker
 * hands it over; ZeRO-3's gathers on an actor of their own. */
static void zero_comm_main(worker *w)
{
    engine *e = w->eng;
    const sched_stage *st = &e->sc->stages[w->stage];
    if (e->overlap[w->stage].zero_gathers == 0)
        gather_update(w, &e->overlap[w->stage]);
    else {
        char name[64];
        snprintf(name, sizeof name, "stage%d-dp%d-cp%d-params", w->stage, w->replica, w->cp_rank);
        sg_actor_t a = sg_actor_init(name, w->ep.hosts[0]);
        sg_actor_set_data(a, w);
        sg_actor_start(a, zero_gather_main, 0, NULL);
    }
    for (int i = 0; i < st->num_ops; i++) {
        if (st->ops[i].kind != OP_GRAD_REDUCE_SCATTER)
            continue;
        sg_sem_acquire(w->bucket_ready);
        engine_dp_collective(e, w, OP_GRAD_REDUCE_SCATTER, st->ops[i].bytes);
        sg_sem_release(w->zero_rs_done);
    }
    worker_linger(w);
}

/* --dp-overlap: gathers the parameter buckets (distributed optimizer), then
 * reduces each gradient bucket as soon as the worker's backward has made it
 * ready, while the worker computes on (ZeRO-2/3: zero_comm_main). */
void overlap_comm_main(int argc, char **argv)
{
    worker *w = sg_actor_self_get_data();
    engine *e = w->eng;
    const overlap_plan *ov = &e->overlap[w->stage];
    if (ov->zero) {
        zero_comm_main(w);
        return;
    }
    bool sharded = e->opt->dp_param_gather_ratio > 0;
    if (sharded)
        gather_update(w, ov);
    for (int b = 0; b < ov->num_buckets; b++) {
        sg_sem_acquire(w->bucket_ready);
        fold_release_replicas(w);
        if (sharded)
            engine_dp_collective(e, w, OP_GRAD_REDUCE_SCATTER, ov->bucket_bytes[b]);
        else
            engine_dp_allreduce(e, w, ov->bucket_bytes[b]);
    }
    sg_sem_release(w->buckets_done);
    worker_linger(w);
}
