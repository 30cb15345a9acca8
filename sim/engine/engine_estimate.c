/*
 * engine_estimate.c -- estimate: the size of a run before its op lists
 * exist (engine.h; a transfer's and a collective's part in
 * engine_estimate_net.c).
 *
 * A run costs host time in proportion to the SimGrid activities it starts
 * (docs/design.md, SimGrid facts: about 100K per second on this machine) and
 * host memory mostly in its op lists.  Both follow from the plan's sizes in
 * closed form, counted the way the schedules emit ops (schedule*.c) and the
 * engine replays them (engine_worker.c, transport.c, collective_ring.c):
 *
 *   ops        per stage: F, B (v·m each), W (zero-bubble, m), a recompute
 *              before every B of a chunk that recomputes, a send and a
 *              receive per micro-batch at each end of a chunk that has a
 *              neighbour (2m(pv − 1) of each per pipeline), the gradient sync
 *              (dp > 1) and the optimizer step (per backward for PipeDream);
 *              under ZeRO (schedule_parallel.c) instead of the sync a
 *              reduce-scatter per chunk and micro-batch and ZeRO-2's gather
 *              of the update after the step, or ZeRO-3's two gathers per
 *              chunk and micro-batch.
 *   executions the engine runs consecutive compute ops as ONE execution, so a
 *              stage runs one per compute op minus the ops that follow
 *              another with no transfer between: derived per schedule below
 *              (checked against the op lists of every schedule in
 *              tests/test_estimate.c);
 *              plus the optimizer of every replica folded away, plus the
 *              pieces --dp-overlap cuts a gradient op into (ZeRO-2: its
 *              first forwards, one piece per bucket of the update).
 *   transfers  each send is, per TP rank (ranks in --placement's order), a
 *              network leg when its peer is in another server: one flow, or
 *              two on a dual-plane NIC that splits (nic_plane_policy split;
 *              hash: one), with PXN a scale-up part first when the peer is
 *              on another rail; a scale-up part when the peer shares its
 *              server: a flow on a simulated scale-up fabric, else the
 *              send's one sleep for the closed-form time (transport.c,
 *              transport_scaleup.c); the receive starts nothing.
 *   syncs      every replica (folded or not) runs the gradient collectives of
 *              its stage: ring-flow costs per member one message (flows as
 *              above, a sleep at the receiver for a scale-up part) and one
 *              latency sleep; the step ring 2(N − 1) such messages; a
 *              butterfly (halving-doubling: radix 2) per stage the flows to
 *              its partners and one wait for the scale-up ones; hierarchical
 *              a step ring of scale-up waits in the server each way and the
 *              inter-server algorithm between the servers' members.
 *              ZeRO's collectives are counted the same way, on the same
 *              algorithm (engine_dp_collective).
 *
 * Bytes: the op lists (sched_op, grown by doubling from 64), the timeline
 * when recorded (one engine_span per op per simulated worker, grown the same
 * way), the channels, the workers and a 64 KiB stack per actor
 * (contexts/stack-size:64).  SimGrid's own activities are short-lived and
 * the platform is already loaded, so neither is counted.
 *
 * Calibration: engine_estimate_platform() on the plan simrun replays against the
 * `activities` column of `simrun --csv` (build/simrun --csv F PLATFORM
 * WORKLOAD [options]; activities do not depend on the host's speed):
 *
 *   platform, workload          options                       estimate    actual
 *   16k_npu, llama              (1F1B)                         593,920   593,920
 *   16k_npu, llama              --schedule gpipe               595,840   595,840
 *   16k_npu, llama              --schedule interleaved, v 2,
 *                               num_layers 128               1,183,744 1,183,744
 *   16k_npu, llama              --schedule zb-h2               616,448   616,448
 *   16k_npu, llama              --fold-dp 8                     73,600    73,600
 *   16k_npu, llama              --schedule zb-h1 --fold-dp 8    74,560    74,560
 *   dgx_a100_1024, gpt3_175b    (1F1B)                         196,096   196,096
 *   dgx_a100_1024, gpt3_175b    --schedule gpipe, full recomp. 199,024   199,024
 *   dgx_a100_1024, gpt3_175b    --schedule interleaved, v 2    417,568   417,568
 *   dgx_a100_1024, gpt3_175b    --schedule zb-h2 --fold-dp 8   104,248   104,248
 *   dgx_a100_1024, gpt3_175b    --dp-algorithm ring            224,512   224,512
 *   dgx_a100_1024, gpt3_175b    --dp-algorithm butterfly       206,080   206,080
 *   test_8npu, small_gpt        1f1b/gpipe/zb-h1/zb-h2        224/246/260/254  equal
 *   test_8npu, small_gpt        pipedream/pipedream-2bw/
 *                               interleaved v 2/--fold-dp 1   386/218/488/124  equal
 *   test_8npu, small_gpt        global_batch_size 131072     1,572,896 1,572,896
 *   test_64npu, small_gpt dp 16 ring-flow/ring/h-d/hier.     400/2192/784/1296 equal
 *   test_64npu, small_gpt dp 16 --dp-algorithm butterfly           784       720
 *   test_64npu, small_gpt dp 16 ring, distributed optimizer      2,192     1,976
 *   test_64npu, small_gpt dp 16 --dp-overlap                       560       496
 *   test_64npu, small_gpt dp 16 --dp-overlap, 1 MB buckets      32,240    28,662
 *
 * Sharded data parallelism, test_64npu, small_gpt dp 16, 256 sequences:
 *   ZeRO-2 1F1B, blocking / --dp-overlap             5,568/5,680  5,486/5,648
 *   ZeRO-2 interleaved v 2, blocking                      11,712       11,120
 *   ZeRO-3 1F1B, blocking / --dp-overlap             9,792/9,792  8,824/9,750
 *   ZeRO-3 interleaved v 2, blocking                      20,032       18,292
 *
 * so exact but in the last four cases of the first table and the sharded
 * ones, where the estimate is at most 13% over: it counts a wait for every
 * scale-up message of a collective step, some of which have already arrived
 * (butterfly, the step ring's reduce-scatter and all-gather), and
 * --dp-overlap's pieces of a gradient op approximately.  Memory, against peak
 * RSS (/usr/bin/time): small_gpt with 65,536 micro-batches, estimate 118 MB
 * vs 99 MB over the 40 MB of a small run (252 MB vs 205 MB with --trace);
 * the 16K Llama, 154 MB vs 164 MB in all, most of the estimate being 2,048
 * actors' 64 KiB stacks, which are reserved but only partly touched.
 *
 * The bound simrun holds the estimate to is engine_bound.c's.
 */
#include <math.h>
#include <string.h>

#include "engine_estimate_internal.h"
#include "transport_symmetry.h"
#include "step_order.h"

#define STACK_BYTES (64.0 * 1024) /* contexts/stack-size:64 (engine.c) */
#define ACTOR_BYTES (8.0 * 1024)  /* SimGrid's actor and context objects */
#define FIRST_OP_CAPACITY 64      /* sched_push() */
#define FIRST_SPAN_CAPACITY 64    /* span_record_at() */
#define FIRST_CHANNEL_CAPACITY 8  /* channel_push() */

/* The capacity a list grown by doubling from `first` reaches for n items. */
static double doubled_capacity(double n, double first)
{
    if (n <= 0)
        return 0;
    double cap = first;
    while (cap < n)
        cap *= 2;
    return cap;
}

/* Whether chunk j of stage s recomputes any layer (then every B of it is
 * preceded by a recompute op). */
static bool chunk_recomputes(const plan *pl, int s, int j)
{
    if (!pl->chunk_start || !pl->recompute)
        return false;
    int k = j * pl->num_stages + s;
    for (int l = pl->chunk_start[k]; l < pl->chunk_start[k + 1]; l++)
        if (pl->recompute_units ? pl->recompute_units[l] != 0 : pl->recompute[l] != RECOMPUTE_NONE)
            return true;
    return false;
}

/* Gradient buckets of stage s under --dp-overlap (overlap_build): one per
 * dp_bucket_bytes of each chunk's gradients; one per chunk without a cost
 * model. */
static double stage_buckets(const cm_model *cm, const plan *pl, const engine_options *o, int s)
{
    int dp = pl->data_parallel;
    double bucket = cm_dp_bucket_bytes(cm, o->dp_bucket_bytes, dp);
    double n = 0;
    for (int j = 0; j < pl->num_chunks; j++) {
        int k = j * pl->num_stages + s;
        if (!cm || !pl->chunk_start) {
            n += 1;
            continue;
        }
        double bytes = 0;
        for (int l = pl->chunk_start[k]; l < pl->chunk_start[k + 1]; l++)
            bytes += cm->layers[l].grad_bytes;
        if (bytes > 0)
            n += ceil(bytes / bucket);
    }
    return n;
}

/* Whether stage s ends with an optimizer op (it takes time) and whether
 * its gradient sync moves bytes (schedule.c, sched_emit_iteration_end);
 * both are taken as true without a cost model. */
static void stage_end(const cm_model *cm, const plan *pl, int s, bool *optimizer, bool *grads)
{
    if (!cm || !pl->chunk_start || cm->num_layers < pl->num_layers)
        return;
    double opt_s = 0, grad_bytes = 0;
    for (int j = 0; j < pl->num_chunks; j++) {
        int k = j * pl->num_stages + s;
        opt_s += cm_optimizer_step_s(cm, pl->chunk_start[k], pl->chunk_start[k + 1]);
        for (int l = pl->chunk_start[k]; l < pl->chunk_start[k + 1]; l++)
            grad_bytes += cm->layers[l].grad_bytes;
    }
    *optimizer = opt_s > 0;
    *grads = grad_bytes > 0;
}

/* Sharded data parallelism (schedule_parallel.c): 2 for ZeRO-2
 * (optim_grads), 3 for ZeRO-3 (optim_grads_params), 0 without (or without a
 * cost model). */
static int zero_level(const cm_model *cm, const plan *pl)
{
    int cp = cm && cm->context_parallel > 1 ? cm->context_parallel : 1;
    if (!cm || cm->sharding < WL_SHARD_OPTIM_GRADS || pl->data_parallel * cp < 2)
        return 0;
    return cm->sharding >= WL_SHARD_OPTIM_GRADS_PARAMS ? 3 : 2;
}

/* The sharded collectives of stage s per micro-batch: the chunks with
 * gradients to reduce-scatter and (ZeRO-3) parameters to gather; ZeRO-2's
 * gather of the update: whether the stage has parameters, and its buckets
 * under --dp-overlap (engine_overlap.c: bucket_bytes / G parameters each).
 * Every chunk has them without a cost model's layers. */
typedef struct zero_ops {
    double reduce_chunks, gather_chunks, update, update_buckets;
} zero_ops;

static zero_ops stage_zero_ops(const cm_model *cm, const plan *pl, const engine_options *o, int s)
{
    int dp = pl->data_parallel, v = pl->num_chunks;
    double bucket = cm_dp_bucket_bytes(cm, o->dp_bucket_bytes, dp);
    zero_ops z = {0, 0, 0, 0};
    if (!pl->chunk_start || cm->num_layers < pl->num_layers)
        return (zero_ops){v, v, 1, v};
    for (int j = 0; j < v; j++) {
        int k = j * pl->num_stages + s;
        double reduce = 0, gather = 0, params = 0;
        for (int l = pl->chunk_start[k]; l < pl->chunk_start[k + 1]; l++) {
            reduce += cm->layers[l].zero_reduce_bytes;
            gather += cm->layers[l].zero_gather_bytes;
            params += cm->layers[l].params;
        }
        z.reduce_chunks += reduce > 0;
        z.gather_chunks += gather > 0;
        z.update = z.update || params * cm->weight_bytes_per_param > 0;
        z.update_buckets += cm_dp_param_buckets(cm, params, bucket);
    }
    return z;
}

/* How many j in [0, n) satisfy pred(j), pred periodic with period `period`. */
static double count_periodic(double n, int period, bool (*pred)(const void *, int), const void *ctx)
{
    if (n <= 0)
        return 0;
    double per = 0, rem = 0;
    double full = floor(n / period);
    int tail = (int)(n - full * period);
    for (int j = 0; j < period; j++) {
        bool hit = pred(ctx, j);
        per += hit;
        rem += hit && j < tail;
    }
    return full * per + rem;
}

typedef struct order_1f1b {
    int p, v, warmup;
} order_1f1b;

static int fchunk(const order_1f1b *o, int k) { return sched_step_at(o->p, o->v, k, true).chunk; }
static int bchunk(const order_1f1b *o, int k) { return sched_step_at(o->p, o->v, k, false).chunk; }

/* Stage 0: B_j (chunk 0: no send after) then F_{warmup+j+1} (chunk 0: no
 * receive before). */
static bool first_stage_merges(const void *ctx, int j)
{
    const order_1f1b *o = ctx;
    return bchunk(o, j) == 0 && fchunk(o, o->warmup % (o->p * o->v) + j + 1) == 0;
}

/* Stage p−1: F_{warmup+j} (last chunk: no send after) then B_j (last chunk:
 * no receive before). */
static bool last_stage_merges(const void *ctx, int j)
{
    const order_1f1b *o = ctx;
    return fchunk(o, o->warmup % (o->p * o->v) + j) == o->v - 1 && bchunk(o, j) == o->v - 1;
}

/* Compute ops of stage s that run in the same execution as the op before
 * them (no transfer between), p ≥ 2.  Under ZeRO (zero 2 or 3) a
 * reduce-scatter follows the op that completes a chunk's gradients (B, or W
 * when the schedule splits the backward), and under ZeRO-3 a gather precedes
 * every F, recompute and B without a recompute before it: no merge across
 * either survives. */
static double stage_merges(const plan *pl, int s, bool has_optimizer, int zero)
{
    int p = pl->num_stages, v = pl->num_chunks;
    double m = pl->num_micro_batches;
    bool first = s == 0, last = s == p - 1, synced = pl->data_parallel > 1 || zero;
    if (zero)
        switch (pl->schedule) {
        case SCHED_GPIPE:
        case SCHED_1F1B:
        case SCHED_INTERLEAVED:
            /* stage 0's B→F and B→optimizer follow a completing B; the
             * last stage's F→B (or F→R) survives ZeRO-2 only */
            if (!last || zero == 3)
                return 0;
            break;
        case SCHED_ZB_H1:
        case SCHED_ZB_H2:
            break; /* below */
        default:
            return 0; /* PipeDream: refused with ZeRO (workload_checks.c) */
        }
    /* no gradient sync between the last compute op and the optimizer */
    bool sync_end = !synced && has_optimizer;
    switch (pl->schedule) {
    case SCHED_GPIPE:
        /* F_{m−1} B_{m−1} on the last stage; stage 0's last B and the
         * optimizer when no gradient sync stands between them. */
        return (last ? 1 : 0) + (first && sync_end ? 1 : 0);
    case SCHED_1F1B:
    case SCHED_INTERLEAVED: {
        double total = m * v;
        int warmup = pl->schedule == SCHED_1F1B ? p - s - 1 : sched_interleaved_warmup(p, s, v);
        double w = warmup < total ? warmup : total;
        double steady = total - w; /* (F, B) pairs */
        order_1f1b o = {p, v, (int)w};
        double n = 0;
        if (first && !zero)
            n += count_periodic(steady - 1, p * v, first_stage_merges, &o) + (sync_end ? 1 : 0);
        if (last)
            n += count_periodic(steady, p * v, last_stage_merges, &o);
        return n;
    }
    case SCHED_ZB_H1:
    case SCHED_ZB_H2: {
        /* schedule_zb.c emits F^w0 (B F)^a (B W F)^b (B W)^w0 W^a: w0 warm-up
         * forwards, the first a steady steps hold fewer than the limit. */
        int limit = pl->schedule == SCHED_ZB_H1 ? p : 2 * p - 1;
        int warmup = pl->schedule == SCHED_ZB_H1 ? p - s : 2 * (p - s) - 1;
        double w0 = warmup < m ? warmup : m;
        double a = limit - w0 < m - w0 ? limit - w0 : m - w0;
        double b = m - w0 - a;
        double n = sync_end ? 1 : 0; /* the last W and the optimizer */
        if (zero)                    /* W completes: W→F, W→W break; ZeRO-3: B→F, F→B too */
            return first ? (zero == 2 ? a : 0) + b + w0 : last && zero == 2 ? m : 0;
        if (first)
            return n + a + 2 * b + w0 + a; /* B→F, B→W→F, B→W, W→W */
        if (last)
            return n + m + a; /* F→B, W→B, W→W */
        return n + a;         /* W→W */
    }
    case SCHED_PIPEDREAM:
    case SCHED_PIPEDREAM_2BW: {
        bool per_backward = pl->schedule == SCHED_PIPEDREAM;
        double n = 0;
        if (first && per_backward) /* B (no send) → [sync] optimizer → F (no receive) */
            n += synced ? (has_optimizer ? m - 1 : 0) : (has_optimizer ? 2 * m - 1 : m - 1);
        else if (first) /* B (no send) → F (no receive) */
            n += (m - 1) + (sync_end ? 1 : 0);
        if (last)
            n += m; /* F (no send) → B (no receive) */
        /* Stage s > 0 carries its last min(p−s+1, m) − min(p−s, m) input
         * gradients to the next period (schedule_pipedream.c): those B send
         * nothing after them, so each meets the optimizer step. */
        double in_flight = p - s < m ? p - s : m, before = p - s + 1 < m ? p - s + 1 : m;
        if (s > 0 && sync_end)
            n += before - in_flight;
        return n;
    }
    case SCHED_COUNT:
        break;
    }
    return 0;
}

/* The estimate on fabric f (engine_estimate_run, engine_estimate_platform). */
static void estimate(const est_fabric *f, const cm_model *cm, const plan *pl,
                     const engine_options *o, engine_estimate *out)
{
    memset(out, 0, sizeof *out);
    int p = pl->num_stages, v = pl->num_chunks > 0 ? pl->num_chunks : 1;
    int dp = pl->data_parallel, tp = pl->tensor_parallel;
    double m = pl->num_micro_batches;
    double fold = o->fold_dp > 0 && o->fold_dp < dp ? o->fold_dp : dp;
    bool zero_bubble = pl->schedule == SCHED_ZB_H1 || pl->schedule == SCHED_ZB_H2;
    bool overlap = o->dp_overlap && dp > 1;
    int zero = zero_level(cm, pl);
    /* Gradient syncs per iteration and stage, and the ops closing them. */
    double ends = pl->schedule == SCHED_PIPEDREAM ? m : 1;
    double channel_items = pl->schedule == SCHED_GPIPE ? m * v : fmin(m * v, 2.0 * p * v);
    for (int s = 0; s < p; s++) {
        double compute = 2 * m * v + (zero_bubble ? m * v : 0), recompute = 0, p2p = 0;
        for (int j = 0; j < v; j++) {
            int k = j * p + s;
            recompute += chunk_recomputes(pl, s, j) ? m : 0;
            if (p > 1)
                p2p += 2 * m * ((k > 0) + (k < p * v - 1));
        }
        /* The iteration's end: the gradient sync (dp > 1) and the optimizer
         * step (when it takes time), per backward under PipeDream. */
        bool has_optimizer = true, has_grads = true;
        stage_end(cm, pl, s, &has_optimizer, &has_grads);
        double optimizers = has_optimizer ? ends : 0;
        /* the gradient sync, or ZeRO's collectives (schedule_parallel.c) */
        zero_ops z = zero ? stage_zero_ops(cm, pl, o, s) : (zero_ops){0, 0, 0, 0};
        double syncs = zero == 3   ? m * (z.reduce_chunks + 2 * z.gather_chunks)
                       : zero == 2 ? m * z.reduce_chunks + z.update
                                   : ends * (dp > 1);
        double ops = compute + recompute + p2p + syncs + optimizers;
        out->compute_ops += compute + recompute + optimizers;
        out->p2p_ops += p2p;
        out->ops += ops;
        if (ops > out->max_stage_ops) {
            out->max_stage_ops = ops;
            out->largest_stage = s;
        }
        out->op_list_bytes += doubled_capacity(ops, FIRST_OP_CAPACITY) * sizeof(sched_op);
        if (o->record_spans)
            out->engine_bytes +=
                fold * doubled_capacity(ops, FIRST_SPAN_CAPACITY) * sizeof(engine_span);
        out->engine_bytes +=
            fold * 2 * doubled_capacity(channel_items, FIRST_CHANNEL_CAPACITY) * sizeof(transfer);
        /* Executions: one per compute op and optimizer step (a recompute
         * runs with its B), less the ops merged with the one before. */
        double blocks;
        if (p == 1 && zero)
            /* a run per micro-batch, ended by its reduce-scatter; ZeRO-3:
             * two, its F and its B each after a gather */
            blocks = (zero == 3 ? 2 : 1) * m * v + has_optimizer;
        else if (p == 1)
            /* everything merges but across a gradient sync */
            blocks = pl->schedule == SCHED_PIPEDREAM && dp > 1 ? m + has_optimizer
                                                               : 1 + (dp > 1 && has_optimizer);
        else
            blocks = compute + optimizers - stage_merges(pl, s, has_optimizer, zero);
        double buckets = overlap && !zero ? stage_buckets(cm, pl, o, s) : 0;
        /* With the distributed optimizer the first forward of each chunk
         * also runs in one piece per parameter bucket (engine_overlap.c);
         * under ZeRO-2 one per bucket of the update, and the first forward
         * of the last chunk no longer merges with what follows it on the
         * last stage (its B, or under GPipe the next F on one stage). */
        double pieces = buckets * (o->dp_param_gather_ratio > 0 ? 2 : 1);
        if (overlap && zero == 2 && z.update_buckets > 0)
            pieces = z.update_buckets - v +
                     (s == p - 1 && (p == 1 || pl->schedule != SCHED_GPIPE || m == 1));
        out->executions += fold * (blocks + pieces) + (dp - fold) * optimizers;
        /* Gradient syncs: every replica, folded or not. */
        if (zero) {
            coll_algorithm a = o->dp_algorithm;
            if (!coll_algorithm_supports(a, COLL_REDUCE_SCATTER))
                a = o->dp_inter_algorithm; /* engine_dp_collective() */
            double gathers = zero == 3             ? 2 * m * z.gather_chunks
                             : overlap && z.update ? z.update_buckets
                                                   : z.update;
            out->collective_activities +=
                m * z.reduce_chunks * est_stage_collective(f, pl, o, a, COLL_REDUCE_SCATTER, s) +
                gathers * est_stage_collective(f, pl, o, a, COLL_ALLGATHER, s);
        } else if (dp > 1 && has_grads) {
            double calls = ends * (overlap ? buckets : 1);
            coll_algorithm a = o->dp_algorithm;
            if (o->dp_param_gather_ratio > 0) {
                coll_algorithm rs =
                    coll_algorithm_supports(a, COLL_REDUCE_SCATTER) ? a : o->dp_inter_algorithm;
                out->collective_activities +=
                    calls * (est_stage_collective(f, pl, o, rs, COLL_REDUCE_SCATTER, s) +
                             est_stage_collective(f, pl, o, rs, COLL_ALLGATHER, s));
            } else {
                out->collective_activities +=
                    calls * est_stage_collective(f, pl, o, a, COLL_ALLREDUCE, s);
            }
        }
        if (overlap)
            out->engine_bytes += ops * (sizeof(int) + sizeof(double));
    }
    /* Stage-to-stage sends: model chunk k feeds chunk k + 1, m times each
     * way, in every simulated replica. */
    if (p > 1) {
        for (int k = 0; k + 1 < p * v; k++) {
            int a = k % p, b = (k + 1) % p;
            int sampled = fold < MAX_EXACT_REPLICAS ? (int)fold : MAX_EXACT_REPLICAS;
            double both_ways = 0;
            for (int d = 0; d < sampled; d++)
                both_ways +=
                    est_transfer_cost(f, pl, a, d, b, d) + est_transfer_cost(f, pl, b, d, a, d);
            out->p2p_activities += m * both_ways * fold / sampled;
        }
        out->sends = 2 * m * (p * v - 1);
    }
    out->activities = out->executions + out->p2p_activities + out->collective_activities;
    double actors = (double)p * dp + (overlap ? p * fold * (zero == 3 ? 2 : 1) : 0);
    out->engine_bytes += actors * (STACK_BYTES + ACTOR_BYTES) + (double)p * dp * sizeof(worker) +
                         (double)p * dp * tp * (sizeof(int) + sizeof(sg_host_t));
    out->bytes = out->op_list_bytes + out->engine_bytes;
}

void engine_estimate_run(const cl_cluster *c, const cm_model *cm, const plan *pl,
                         const engine_options *o, engine_estimate *out)
{
    est_fabric f = est_fabric_of(c, NULL, o);
    estimate(&f, cm, pl, o, out);
}

void engine_estimate_platform(const sim_platform *pf, const cm_model *cm, const plan *pl,
                              const engine_options *o, engine_estimate *out)
{
    est_fabric f = est_fabric_of(&pf->cluster, pf, o);
    struct tp_symmetry *sym = engine_tp_symmetry(pf, cm, pl, o);
    f.tp_fold = sym != NULL;
    tp_symmetry_free(sym);
    estimate(&f, cm, pl, o, out);
    out->tp_fold = f.tp_fold ? pl->tensor_parallel : 1;
}
