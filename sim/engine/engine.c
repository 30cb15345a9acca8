/*
 * engine.c -- the pipeline-worker actors and the metrics (see engine.h).
 *
 * Cost of a run is proportional to the number of SimGrid activities, so the
 * engine starts as few as the model allows (DESIGN.md: ~50K activities per
 * CPU-second at 16K hosts): one execution per compute op, one flow per TP
 * rank per stage-to-stage send, collective flows as collective*.c decides,
 * zero-length ops skipped.  Per-worker accounting is plain arithmetic on the
 * simulated clock.
 */
#include "collective.h"
#include "engine_internal.h"

#include <math.h>
#include <simgrid/barrier.h>
#include <simgrid/engine.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xbt/asserts.h>
#include <xbt/config.h>
#include <xbt/log.h>

void engine_init_options(engine_options *o)
{
    memset(o, 0, sizeof *o);
    o->dp_algorithm = COLL_RING_FLOW;
    o->dp_radix = 4;
    o->dp_inter_algorithm = COLL_RING_FLOW;
    o->ep_alltoall_algorithm = COLL_PAIRWISE;
    o->dp_bucket_bytes = 0; /* Megatron's default for the run's DP size */
}

typedef struct init_args {
    int *argc;
    char **argv;
} init_args;

static void init_simgrid(void *ctx)
{
    init_args *a = ctx;
    simgrid_init(a->argc, a->argv);
}

int engine_simgrid_init(int *argc, char **argv, np_error *err)
{
    /* DESIGN.md, "Recommended SimGrid configuration", given before the
     * user's own --cfg options so that those win. */
    static char *defaults[] = {
        "--log=root.thresh:critical",
        "--cfg=network/model:CM02",
        /* Measured with callgrind on the 16K Llama iteration: 3% fewer
         * instructions than the default Lazy update, identical results. */
        "--cfg=network/optim:Full",
        "--cfg=network/crosstraffic:0",
        "--cfg=network/TCP-gamma:1e15",
        "--cfg=contexts/stack-size:64",
#ifdef NPUSIM_SANITIZE
        /* AddressSanitizer cannot follow SimGrid's hand-made stack switches
         * (raw contexts); system threads keep its reports meaningful. */
        "--cfg=contexts/factory:thread",
#endif
    };
    enum { NUM_DEFAULTS = sizeof defaults / sizeof defaults[0] };
    static char *args[NUM_DEFAULTS + 128];
    int n = 0;
    args[n++] = *argc > 0 ? argv[0] : "simrun";
    for (int i = 0; i < NUM_DEFAULTS; i++)
        args[n++] = defaults[i];
    for (int i = 1; i < *argc && n < (int)(sizeof args / sizeof args[0]) - 1; i++)
        args[n++] = argv[i];
    args[n] = NULL;
    /* SimGrid aborts on a bad --cfg or --log: catch it, say it on one line. */
    init_args a = {&n, args};
    char message[1024] = "";
    if (platform_guarded(init_simgrid, &a, message, sizeof message))
        return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--cfg/--log", 0,
                            "SimGrid rejected an option: %s",
                            message[0] ? message : "(no message)");
    xbt_log_control_set("root.thresh:critical");
    return 0;
}

/* ---- channels ---------------------------------------------------------- */

static void channel_push(channel *ch, transfer t)
{
    if (ch->head == ch->tail)
        ch->head = ch->tail = 0;
    if (ch->tail == ch->capacity) {
        int cap = ch->capacity ? 2 * ch->capacity : 8;
        transfer *items = realloc(ch->items, (size_t)cap * sizeof *items);
        if (!items)
            xbt_die("npusim: out of memory growing a channel");
        ch->items = items;
        ch->capacity = cap;
    }
    ch->items[ch->tail++] = t;
}

bool engine_same_server(const engine *e, int rank_a, int rank_b)
{
    int per_node = e->pf->cluster.npus_per_node;
    return rank_a / per_node == rank_b / per_node;
}

sg_exec_t engine_flow_start(sg_host_t src, sg_host_t dst, double bytes)
{
    sg_host_t hosts[2] = {src, dst};
    double flops[2] = {0, 0};
    double comm[4] = {0, bytes, 0, 0};
    sg_exec_t flow = sg_actor_parallel_exec_init(2, hosts, flops, comm);
    sg_exec_start(flow);
    return flow;
}

transfer engine_transfer_start(engine *e, const worker *from, const worker *to, double bytes)
{
    double now = engine_now(e);
    transfer t = {.flows = NULL, .num_flows = 0, .arrive_s = now, .sent_s = now};
    if (bytes <= 0)
        return t;
    for (int r = 0; r < e->tp; r++) {
        if (engine_same_server(e, from->ranks[r], to->ranks[r])) {
            double done = now + cl_p2p_time(&e->pf->cluster, bytes, 1);
            if (done > t.arrive_s)
                t.arrive_s = done;
            continue;
        }
        if (!t.flows && !(t.flows = malloc((size_t)e->tp * sizeof *t.flows)))
            xbt_die("npusim: out of memory posting a transfer");
        t.flows[t.num_flows++] = engine_flow_start(from->hosts[r], to->hosts[r], bytes);
        e->activities++;
    }
    return t;
}

void engine_transfer_wait(engine *e, transfer *t)
{
    for (int i = 0; i < t->num_flows; i++)
        sg_exec_wait(t->flows[i]); /* releases the flow */
    free(t->flows);
    t->flows = NULL;
    t->num_flows = 0;
    if (t->arrive_s > engine_now(e)) {
        sg_actor_sleep_until(t->arrive_s + e->t0);
        e->activities++;
    }
}

void engine_send(engine *e, worker *from, worker *to, int ch, double bytes)
{
    transfer t = engine_transfer_start(e, from, to, bytes);
    engine_transfer_wait(e, &t);
    channel_push(&to->chan[ch], t);
    sg_sem_release(to->chan[ch].posted);
}

double engine_receive(engine *e, worker *w, int ch)
{
    double asked = engine_now(e);
    channel *c = &w->chan[ch];
    sg_sem_acquire(c->posted);
    transfer t = c->items[c->head++];
    engine_transfer_wait(e, &t);
    double since = asked > t.sent_s ? asked : t.sent_s;
    return engine_now(e) - since;
}

/* ---- gradient buckets (--dp-overlap) ------------------------------------ */

/* Per stage: which ops make gradient buckets ready, and the buckets' sizes in
 * the order they become ready (the same for every replica of the stage). */
typedef struct overlap_plan {
    int *buckets_at_op;  /* [num_ops]: buckets made ready during op i */
    double *bytes_at_op; /* [num_ops]: size of each of them */
    int num_buckets;
    double *bucket_bytes; /* [num_buckets] */
} overlap_plan;

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

static void overlap_free(engine *e)
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

static int overlap_build(engine *e, const cm_model *cm, np_error *err)
{
    if (!e->opt->dp_overlap || e->dp < 2)
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

/* ---- the worker actor ---------------------------------------------------- */

static void span_record_at(worker *w, const sched_op *op, double start_s, double end_s)
{
    if (!w->eng->opt->record_spans)
        return;
    if (w->num_spans == w->span_capacity) {
        int cap = w->span_capacity ? 2 * w->span_capacity : 64;
        engine_span *s = realloc(w->spans, (size_t)cap * sizeof *s);
        if (!s)
            xbt_die("npusim: out of memory recording the timeline");
        w->spans = s;
        w->span_capacity = cap;
    }
    engine_span *s = &w->spans[w->num_spans++];
    s->start_s = start_s;
    s->end_s = end_s;
    s->memory_bytes = w->mem_bytes;
    s->micro_batch = op->micro_batch;
    s->kind = op->kind;
    s->chunk = op->chunk;
}

static void span_record(worker *w, const sched_op *op, double start_s)
{
    span_record_at(w, op, start_s, engine_now(w->eng));
}

static void mem_acquire(worker *w, const sched_op *op)
{
    if (op->mem_delta_bytes > 0)
        w->mem_bytes += op->mem_delta_bytes;
    w->mem_bytes += op->mem_transient_bytes;
    if (w->mem_bytes > w->peak_bytes)
        w->peak_bytes = w->mem_bytes;
}

static void mem_release(worker *w, const sched_op *op)
{
    w->mem_bytes -= op->mem_transient_bytes;
    if (op->mem_delta_bytes < 0)
        w->mem_bytes += op->mem_delta_bytes;
}

static bool is_compute(int kind)
{
    return kind == OP_FORWARD || kind == OP_BACKWARD || kind == OP_WEIGHT_GRAD ||
           kind == OP_RECOMPUTE || kind == OP_OPTIMIZER;
}

/* Accounts a compute op that ran from start_s to end_s. */
static void compute_account(worker *w, const sched_op *op, double start_s, double end_s)
{
    mem_acquire(w, op);
    mem_release(w, op);
    span_record_at(w, op, start_s, end_s);
    if (op->kind == OP_OPTIMIZER)
        return;
    double duration_s = op->compute_s + op->comm_s;
    w->busy_s += duration_s;
    w->tp_comm_s += op->comm_s;
    if (op->kind == OP_RECOMPUTE)
        w->recompute_s += duration_s;
    w->pipeline_end_s = end_s;
}

/* Executes duration_s on the worker's NPU (nothing for a zero length). */
static void npu_execute(worker *w, double duration_s)
{
    if (duration_s > 0) {
        sg_actor_execute(duration_s * sg_host_get_speed(w->hosts[0]));
        w->eng->activities++;
    }
}

/* Runs a gradient op whose buckets become ready during it (--dp-overlap):
 * the op runs in as many equal pieces, each ending with one bucket handed to
 * the communication actor. */
static void run_releasing_buckets(worker *w, double before_s, double duration_s, int buckets)
{
    npu_execute(w, before_s + duration_s / buckets);
    sg_sem_release(w->bucket_ready);
    for (int k = 1; k < buckets; k++) {
        npu_execute(w, duration_s / buckets);
        sg_sem_release(w->bucket_ready);
    }
}

/* Runs the consecutive compute ops ops[0 .. count) from the first (op index
 * `first` of the stage): nothing else can run on the NPU between them, so
 * one SimGrid execution of their total length replays them exactly (one
 * activity instead of several, e.g. a recompute and its backward), unless a
 * gradient bucket must be handed over part-way.  Returns how many ops it ran. */
static int run_compute(worker *w, const sched_op *ops, int first, int count)
{
    const overlap_plan *ov = w->eng->overlap && w->simulated ? &w->eng->overlap[w->stage] : NULL;
    int n = 0;
    double pending_s = 0;
    double start_s = engine_now(w->eng);
    while (n < count && is_compute(ops[n].kind)) {
        double d = ops[n].compute_s + ops[n].comm_s;
        int buckets = ov ? ov->buckets_at_op[first + n] : 0;
        if (buckets > 0) {
            run_releasing_buckets(w, pending_s, d, buckets);
            pending_s = 0;
        } else {
            pending_s += d;
        }
        n++;
    }
    npu_execute(w, pending_s);
    double t = start_s;
    for (int i = 0; i < n; i++) {
        double end_s = i + 1 < n ? t + ops[i].compute_s + ops[i].comm_s : engine_now(w->eng);
        compute_account(w, &ops[i], t, end_s);
        t = end_s;
    }
    return n;
}

/* Megatron's point-to-point calls wait for their requests
 * (p2p_communication.py, _communicate), so a send holds its worker until its
 * data has arrived; it returns the time spent. */
static double timed_send(worker *w, const sched_op *op, int ch)
{
    engine *e = w->eng;
    double start = engine_now(e);
    engine_send(e, w, engine_worker(e, op->peer, w->replica), ch, op->bytes);
    return engine_now(e) - start;
}

/* A representative starts the collective of the replicas it stands for. */
static void release_folded_replicas(worker *w)
{
    engine *e = w->eng;
    for (int d = w->replica + e->fold; d < e->dp; d += e->fold)
        sg_sem_release(engine_worker(e, w->stage, d)->collective_start);
}

static void run_op(worker *w, const sched_op *op)
{
    engine *e = w->eng;
    switch ((op_kind)op->kind) {
    case OP_FORWARD:
    case OP_BACKWARD:
    case OP_WEIGHT_GRAD:
    case OP_RECOMPUTE:
    case OP_OPTIMIZER:
        break; /* worker_main runs compute ops in blocks (run_compute) */
    case OP_SEND_FORWARD:
        w->p2p_exposed_s += timed_send(w, op, CH_FORWARD);
        break;
    case OP_SEND_BACKWARD:
        w->p2p_exposed_s += timed_send(w, op, CH_BACKWARD);
        break;
    case OP_RECV_FORWARD:
        w->p2p_exposed_s += engine_receive(e, w, CH_FORWARD);
        break;
    case OP_RECV_BACKWARD:
        w->p2p_exposed_s += engine_receive(e, w, CH_BACKWARD);
        break;
    case OP_DP_ALLREDUCE: {
        double start = engine_now(e);
        if (e->overlap) {
            sg_sem_acquire(w->buckets_done); /* what the overlap did not hide */
        } else {
            release_folded_replicas(w);
            coll_allreduce(e, w, op->bytes);
        }
        w->dp_comm_s += engine_now(e) - start;
        break;
    }
    case OP_ALLTOALL:
    case OP_KIND_COUNT:
        break;
    }
}

/* SimGrid cancels the activities an actor started when the actor ends, so a
 * worker whose last flow is still travelling (a collective's last send, whose
 * receiver is slower) must not end before it lands: every worker waits for
 * all the others, and none of their flows is in flight by then. */
static void worker_linger(worker *w)
{
    w->eng->finished++;
    sg_barrier_wait(w->eng->finish);
}

static void worker_main(int argc, char **argv)
{
    worker *w = sg_actor_self_get_data();
    const sched_stage *st = &w->eng->sc->stages[w->stage];
    w->mem_bytes = w->peak_bytes = st->static_bytes + st->workspace_bytes;
    for (int i = 0; i < st->num_ops;) {
        if (is_compute(st->ops[i].kind)) {
            i += run_compute(w, &st->ops[i], i, st->num_ops - i);
            continue;
        }
        double start = engine_now(w->eng);
        run_op(w, &st->ops[i]);
        span_record(w, &st->ops[i], start);
        i++;
    }
    w->end_s = engine_now(w->eng);
    worker_linger(w);
}

/* --dp-overlap: reduces each gradient bucket as soon as the worker's
 * backward has made it ready, while the worker computes on. */
static void dp_comm_main(int argc, char **argv)
{
    worker *w = sg_actor_self_get_data();
    const overlap_plan *ov = &w->eng->overlap[w->stage];
    for (int b = 0; b < ov->num_buckets; b++) {
        sg_sem_acquire(w->bucket_ready);
        release_folded_replicas(w);
        coll_allreduce(w->eng, w, ov->bucket_bytes[b]);
    }
    sg_sem_release(w->buckets_done);
    worker_linger(w);
}

/* A replica folded away joins every bucket's all-reduce when its
 * representative starts it. */
static void folded_replica_buckets(worker *w)
{
    const overlap_plan *ov = &w->eng->overlap[w->stage];
    for (int b = 0; b < ov->num_buckets; b++) {
        sg_sem_acquire(w->collective_start);
        coll_allreduce(w->eng, w, ov->bucket_bytes[b]);
    }
}

/* A replica folded away: it joins its stage's collectives, each when its
 * representative reaches it, as it would in lockstep, and runs the
 * optimizer step that follows them; its pipeline ops are not simulated. */
static void folded_replica_main(int argc, char **argv)
{
    worker *w = sg_actor_self_get_data();
    const sched_stage *st = &w->eng->sc->stages[w->stage];
    for (int i = 0; i < st->num_ops; i++) {
        const sched_op *op = &st->ops[i];
        if (op->kind == OP_DP_ALLREDUCE && w->eng->overlap) {
            folded_replica_buckets(w);
        } else if (op->kind == OP_DP_ALLREDUCE) {
            sg_sem_acquire(w->collective_start);
            double start = engine_now(w->eng);
            coll_allreduce(w->eng, w, op->bytes);
            w->dp_comm_s += engine_now(w->eng) - start;
        } else if (op->kind == OP_OPTIMIZER) {
            run_compute(w, op, i, 1);
        }
    }
    w->end_s = engine_now(w->eng);
    worker_linger(w);
}

/* --dp-overlap models one gradient sync per iteration, of every replica:
 * not asynchronous PipeDream's update after each backward, and not folded
 * replicas, whose pipeline traffic (missing) would share the NICs with the
 * overlapped buckets (measured: 2% faster at 16K). */
static int engine_check_overlap(const plan *pl, const engine_options *o, np_error *err)
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

int engine_check_fold(const wl_workload *w, const plan *pl, int fold_dp, np_error *err)
{
    const char *src = "<command line>";
    int dp = pl->data_parallel;
    if (fold_dp == 0 || fold_dp == dp)
        return 0;
    if (fold_dp < 0 || fold_dp > dp || dp % fold_dp != 0)
        return np_error_set(err, NP_EXIT_USAGE, src, "--fold-dp", 0,
                            "cannot fold %d data-parallel replicas to %d: K must divide the "
                            "data-parallel size so that every simulated replica stands for the "
                            "same number of others",
                            dp, fold_dp);
    if (w->model.num_experts > 0 && w->parallel.expert_model_parallel_size > 1)
        return np_error_set(err, NP_EXIT_USAGE, src, "--fold-dp", 0,
                            "cannot fold: expert parallelism (ep = %d) exchanges tokens between "
                            "data-parallel replicas, so their pipelines are not independent",
                            w->parallel.expert_model_parallel_size);
    if (pl->schedule == SCHED_PIPEDREAM)
        return np_error_set(err, NP_EXIT_USAGE, src, "--fold-dp", 0,
                            "cannot fold: asynchronous PipeDream has no per-iteration "
                            "data-parallel synchronisation to keep replicas in lockstep");
    return 0;
}

/* ---- set-up, run, metrics ------------------------------------------------ */

static int workers_create(engine *e, np_error *err)
{
    int n = e->p * e->dp;
    e->workers = calloc((size_t)n, sizeof *e->workers);
    int *ranks = malloc((size_t)n * e->tp * sizeof *ranks);
    sg_host_t *hosts = malloc((size_t)n * e->tp * sizeof *hosts);
    if (!e->workers || !ranks || !hosts) {
        free(ranks);
        free(hosts);
        return np_error_set(err, NP_EXIT_INTERNAL, "<engine>", "", 0, "out of memory");
    }
    for (int s = 0; s < e->p; s++) {
        for (int d = 0; d < e->dp; d++) {
            worker *w = engine_worker(e, s, d);
            w->stage = s;
            w->replica = d;
            w->eng = e;
            w->ranks = ranks + (size_t)(s * e->dp + d) * e->tp;
            w->hosts = hosts + (size_t)(s * e->dp + d) * e->tp;
            /* Megatron's rank order tp-dp-pp: TP fastest, then DP, then PP. */
            for (int r = 0; r < e->tp; r++) {
                w->ranks[r] = r + e->tp * (d + e->dp * s);
                w->hosts[r] = e->pf->host_of_rank[w->ranks[r]];
            }
            for (int c = 0; c < CH_COUNT; c++)
                w->chan[c].posted = sg_sem_init(0);
            w->simulated = d < e->fold;
            if (!w->simulated)
                w->collective_start = sg_sem_init(0);
            if (w->simulated && e->overlap) {
                w->bucket_ready = sg_sem_init(0);
                w->buckets_done = sg_sem_init(0);
            }
        }
    }
    return 0;
}

static void workers_start(engine *e)
{
    char name[64];
    for (int s = 0; s < e->p; s++) {
        for (int d = 0; d < e->dp; d++) {
            worker *w = engine_worker(e, s, d);
            snprintf(name, sizeof name, "stage%d-dp%d", s, d);
            sg_actor_t a = sg_actor_init(name, w->hosts[0]);
            sg_actor_set_data(a, w);
            sg_actor_start(a, w->simulated ? worker_main : folded_replica_main, 0, NULL);
            if (w->simulated && e->overlap) {
                snprintf(name, sizeof name, "stage%d-dp%d-grads", s, d);
                sg_actor_t c = sg_actor_init(name, w->hosts[0]);
                sg_actor_set_data(c, w);
                sg_actor_start(c, dp_comm_main, 0, NULL);
            }
        }
    }
}

static void workers_destroy(engine *e)
{
    if (!e->workers)
        return;
    for (int i = 0; i < e->p * e->dp; i++) {
        worker *w = &e->workers[i];
        for (int c = 0; c < CH_COUNT; c++) {
            sg_sem_destroy(w->chan[c].posted);
            free(w->chan[c].items);
        }
        if (w->collective_start)
            sg_sem_destroy(w->collective_start);
        if (w->bucket_ready) {
            sg_sem_destroy(w->bucket_ready);
            sg_sem_destroy(w->buckets_done);
        }
        free(w->spans);
    }
    free(e->workers[0].ranks);
    free(e->workers[0].hosts);
    free(e->workers);
    e->workers = NULL;
}

static double model_flops_per_iteration(const cm_model *cm, const plan *pl)
{
    double per_micro_batch = 0;
    for (int l = 0; l < cm->num_layers; l++)
        per_micro_batch += cm->layers[l].forward_flops;
    double samples = (double)pl->num_micro_batches * cm->micro_batch_size;
    if (pl->micro_batch_sizes) {
        samples = 0;
        for (int i = 0; i < pl->num_micro_batches; i++)
            samples += pl->micro_batch_sizes[i];
    }
    /* forward + backward = 3 forwards (Narayanan et al. SC'21, eq. 3); per
     * NPU flops times the TP ranks and DP replicas. */
    return 3.0 * per_micro_batch * (samples / cm->micro_batch_size) * pl->tensor_parallel *
           pl->data_parallel;
}

static void stage_metrics(engine *e, int s, engine_stage_metrics *m)
{
    memset(m, 0, sizeof *m);
    m->capacity_bytes = e->pf->cluster.hbm_bytes;
    for (int d = 0; d < e->dp; d++) {
        const worker *w = engine_worker(e, s, d);
        if (w->busy_s > m->busy_s) {
            m->busy_s = w->busy_s;
            m->recompute_s = w->recompute_s;
            m->tp_comm_s = w->tp_comm_s;
        }
        if (w->peak_bytes > m->peak_bytes)
            m->peak_bytes = w->peak_bytes;
        if (w->p2p_exposed_s > m->p2p_exposed_s)
            m->p2p_exposed_s = w->p2p_exposed_s;
        if (w->dp_comm_s > m->dp_comm_s)
            m->dp_comm_s = w->dp_comm_s;
    }
}

static int collect(engine *e, const wl_workload *w, const cm_model *cm, engine_result *out)
{
    out->num_stages = e->p;
    out->stages = calloc((size_t)e->p, sizeof *out->stages);
    if (!out->stages)
        return -1;
    for (int i = 0; i < e->p * e->dp; i++) {
        const worker *wk = &e->workers[i];
        if (wk->end_s > out->iteration_s)
            out->iteration_s = wk->end_s;
        if (wk->pipeline_end_s > out->pipeline_s)
            out->pipeline_s = wk->pipeline_end_s;
    }
    double idle = 0, busy = 0, comm = 0;
    for (int s = 0; s < e->p; s++) {
        engine_stage_metrics *m = &out->stages[s];
        stage_metrics(e, s, m);
        m->bubble_ratio = m->busy_s > 0 ? (out->pipeline_s - m->busy_s) / m->busy_s : 0;
        idle += out->pipeline_s - m->busy_s;
        busy += m->busy_s;
        comm += m->tp_comm_s + m->p2p_exposed_s + m->dp_comm_s;
        if (m->peak_bytes > out->peak_bytes)
            out->peak_bytes = m->peak_bytes;
    }
    out->bubble_ratio = busy > 0 ? idle / busy : 0;
    out->exposed_comm_s = comm / e->p;
    out->peak_fraction = out->peak_bytes / e->pf->cluster.hbm_bytes;
    double npus = (double)e->tp * e->p * e->dp;
    out->mfu = model_flops_per_iteration(cm, e->pl) /
               (out->iteration_s * npus * e->pf->cluster.peak_flops);
    double tokens =
        (double)w->training.global_batch_size * (w->model.seq_length > 0 ? w->model.seq_length : 1);
    out->tokens_per_s = tokens / out->iteration_s;
    out->activities = e->activities;
    if (e->opt->record_spans) {
        int n = e->p * e->dp;
        out->num_workers = n;
        out->spans = calloc((size_t)n, sizeof *out->spans);
        out->num_spans = calloc((size_t)n, sizeof *out->num_spans);
        if (!out->spans || !out->num_spans)
            return -1;
        for (int i = 0; i < n; i++) { /* hand the timelines over */
            out->spans[i] = e->workers[i].spans;
            out->num_spans[i] = e->workers[i].num_spans;
            e->workers[i].spans = NULL;
        }
    }
    return 0;
}

int engine_run(const sim_platform *pf, const wl_workload *w, const cm_model *cm, const plan *pl,
               const schedule *sc, const engine_options *o, engine_result *out, np_error *err)
{
    memset(out, 0, sizeof *out);
    engine e = {.pf = pf,
                .pl = pl,
                .sc = sc,
                .opt = o,
                .tp = pl->tensor_parallel,
                .dp = pl->data_parallel,
                .p = pl->num_stages};
    int rc = engine_check_fold(w, pl, o->fold_dp, err);
    if (!rc && o->fold_dp > 0 && o->fold_dp != pl->data_parallel && pf->cluster.fabric_taper < 1)
        /* Measured: a 4:1 taper made the folded run 16% faster than the full. */
        rc = np_error_set(err, NP_EXIT_USAGE, "<command line>", "--fold-dp", 0,
                          "cannot fold on %s: its fat tree is tapered (%.2g:1), so the folded "
                          "replicas' missing pipeline traffic would change the contention",
                          pf->cluster.name, 1 / pf->cluster.fabric_taper);
    if (rc || (rc = coll_check_options(o, err)) || (rc = engine_check_overlap(pl, o, err)))
        return rc;
    e.fold = o->fold_dp > 0 ? o->fold_dp : e.dp;
    long needed = (long)e.tp * e.dp * e.p;
    if (needed != pf->num_npus)
        return np_error_set(err, NP_EXIT_INPUT, pf->cluster.name, "", 0,
                            "the plan needs tp·pp·dp = %d·%d·%d = %ld NPUs, the platform has %d",
                            e.tp, e.p, e.dp, needed, pf->num_npus);
    if ((rc = overlap_build(&e, cm, err)))
        return rc;
    if ((rc = workers_create(&e, err))) {
        overlap_free(&e);
        return rc;
    }
    /* every worker, plus the gradient actors of the simulated ones */
    e.finish = sg_barrier_init((unsigned)(e.p * e.dp + (e.overlap ? e.p * e.fold : 0)));
    struct timespec t_start, t_end;
    clock_gettime(CLOCK_MONOTONIC, &t_start);
    e.t0 = simgrid_get_clock();
    workers_start(&e);
    simgrid_run();
    clock_gettime(CLOCK_MONOTONIC, &t_end);
    int actors = e.p * e.dp + (e.overlap ? e.p * e.fold : 0);
    if (e.finished != actors)
        /* Actors are still blocked: SimGrid stopped on a deadlock.  Its state
         * cannot be reused, so nothing is torn down; the caller must stop. */
        return np_error_set(err, NP_EXIT_INTERNAL, "<engine>", "", 0,
                            "the simulation deadlocked: %d of %d actors finished (a schedule "
                            "whose sends and receives do not match?)",
                            e.finished, actors);
    sg_barrier_destroy(e.finish);
    rc = collect(&e, w, cm, out);
    out->wall_s = (t_end.tv_sec - t_start.tv_sec) + 1e-9 * (t_end.tv_nsec - t_start.tv_nsec);
    workers_destroy(&e);
    overlap_free(&e);
    if (rc)
        return np_error_set(err, NP_EXIT_INTERNAL, "<engine>", "", 0, "out of memory");
    return 0;
}

void engine_result_free(engine_result *r)
{
    free(r->stages);
    if (r->spans)
        for (int i = 0; i < r->num_workers; i++)
            free(r->spans[i]);
    free(r->spans);
    free(r->num_spans);
    memset(r, 0, sizeof *r);
}
