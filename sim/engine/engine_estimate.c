/*
 * engine_estimate.c -- estimate: the size of a run before its op lists
 * exist, and the bound simrun holds it to (engine.h).
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
 *              (dp > 1) and the optimizer step (per backward for PipeDream).
 *   executions the engine runs consecutive compute ops as ONE execution, so a
 *              stage runs one per compute op minus the ops that follow
 *              another with no transfer between: derived per schedule below
 *              (checked against the op lists of every schedule in
 *              tests/test_estimate.c);
 *              plus the optimizer of every replica folded away, plus the
 *              pieces --dp-overlap cuts a gradient op into.
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
 *
 * Bytes: the op lists (sched_op, grown by doubling from 64), the timeline
 * when recorded (one engine_span per op per simulated worker, grown the same
 * way), the channels, the workers and a 64 KiB stack per actor
 * (contexts/stack-size:64).  SimGrid's own activities are short-lived and
 * the platform is already loaded, so neither is counted.
 *
 * Calibration: engine_estimate_run() on the plan simrun replays against the
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
 * so exact but in the last four cases, where the estimate is at most 13%
 * over: it counts a wait for every scale-up message of a collective step,
 * some of which have already arrived (butterfly, the step ring's
 * reduce-scatter and all-gather), and --dp-overlap's pieces of a gradient
 * op approximately.  Memory, against peak RSS (/usr/bin/time):
 * small_gpt with 65,536 micro-batches, estimate 118 MB vs 99 MB over the
 * 40 MB of a small run (252 MB vs 205 MB with --trace); the 16K Llama, 154 MB
 * vs 164 MB in all, most of the estimate being 2,048 actors' 64 KiB stacks,
 * which are reserved but only partly touched.
 *
 * The bound simrun holds the estimate to is engine_bound.c's.
 */
#include <math.h>
#include <string.h>

#include "engine_internal.h"
#include "step_order.h"

#define STACK_BYTES (64.0 * 1024) /* contexts/stack-size:64 (engine.c) */
#define ACTOR_BYTES (8.0 * 1024)  /* SimGrid's actor and context objects */
#define FIRST_OP_CAPACITY 64      /* sched_push() */
#define FIRST_SPAN_CAPACITY 64    /* span_record_at() */
#define FIRST_CHANNEL_CAPACITY 8  /* channel_push() */
/* A plan read from a file is estimated before anything checks it against the
 * platform: beyond these sizes the per-rank sums below are sampled, so that
 * an absurd TP or DP cannot make the estimate itself slow. */
#define MAX_EXACT_TP 4096
#define MAX_EXACT_REPLICAS 4096
#define MAX_EXACT_PARTNERS 64

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

/* What the transport posts for one rank's part of a transfer
 * (transport_start, transport_scaleup_part, transport_network_leg), read
 * from the platform: a network leg is one flow, or two on a dual-plane
 * platform whose policy splits every leg over both planes (a hashed leg is
 * one flow on one plane); a same-server part is a flow between scale-up
 * ports when the scale-up fabric is simulated, else part of the one sleep
 * that waits for the closed-form time; with PXN a cross-rail part is a
 * scale-up leg to the relay on the destination's rail and a network leg. */
typedef struct est_fabric {
    int per_node;       /* npus_per_node, at least 1 */
    int legs;           /* flows per network leg: 1 or 2 (dual-plane, split) */
    bool scaleup_flows; /* scaleup_fabric="simulated" */
    bool pxn;           /* cross_rail_pxn=1 */
    placement order;    /* engine_options.placement */
} est_fabric;

static est_fabric fabric_of(const cl_cluster *c, const sim_platform *pf, const engine_options *o)
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
    if (tp > MAX_EXACT_TP) {
        *flows = tp * f->legs; /* no server holds such a TP group: every peer is elsewhere */
        return;
    }
    for (int r = 0; r < tp; r++) {
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

/* Its activities: the flows and the sleep. */
static double transfer_cost(const est_fabric *f, const plan *pl, int sa, int d, int sb, int e)
{
    int flows;
    bool same;
    transfer_parts(f, pl, sa, d, sb, e, &flows, &same);
    return flows + same;
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
    double bucket =
        o->dp_bucket_bytes > 0 ? o->dp_bucket_bytes : 4.0 * (dp * 1e6 > 40e6 ? dp * 1e6 : 40e6);
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
 * them (no transfer between), p ≥ 2. */
static double stage_merges(const plan *pl, int s, bool has_optimizer)
{
    int p = pl->num_stages, v = pl->num_chunks;
    double m = pl->num_micro_batches;
    bool first = s == 0, last = s == p - 1, synced = pl->data_parallel > 1;
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
        if (first)
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

/* The radices a butterfly of n members uses (collective_butterfly.c). */
static int butterfly_radices(int n, int radix, int *radices, int max)
{
    int count = 0;
    while (n > 1 && count < max) {
        int r = radix <= n ? radix : n;
        while (n % r)
            r--;
        if (r == 1) {
            r = radix + 1;
            while (n % r)
                r++;
        }
        radices[count++] = r;
        n /= r;
    }
    return count;
}

/* One member's part of a collective among the replicas of stage s (replica
 * d is member d): its messages' flows, a sleep per step that waits for a
 * scale-up message, and ring-flow's latency sleep. */
typedef struct butterfly_shape {
    int radices[64];
    int stages;
} butterfly_shape;

static double member_cost(const est_fabric *f, const plan *pl, const engine_options *o,
                          coll_algorithm a, coll_kind kind, const butterfly_shape *bf, int s, int d)
{
    int n = pl->data_parallel;
    double halves = kind == COLL_ALLREDUCE ? 2 : 1;
    switch (a) {
    case COLL_RING_FLOW: {
        double steps = halves * (n - 1);
        return transfer_cost(f, pl, s, d, s, (d + 1) % n) + (steps > 1 ? 1 : 0);
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
            return member_cost(f, pl, o, inter, kind, bf, s, d);
        int servers = n / local;
        /* a scale-up step: one wait, or a flow per TP rank when simulated */
        double step = f->scaleup_flows ? tp : 1;
        double cost = local > 1 ? 2.0 * (local - 1) * step : 0;
        if (servers > 1) {
            double edge = transfer_cost(f, pl, s, d, s, (d + local) % n);
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
        return halves * (n - 1) * transfer_cost(f, pl, s, d, s, (d + 1) % n);
    }
}

/* Activities of one gradient collective of stage s, over all its members. */
static double stage_collective(const est_fabric *f, const plan *pl, const engine_options *o,
                               coll_algorithm a, coll_kind kind, int s)
{
    int n = pl->data_parallel, sampled = n < MAX_EXACT_REPLICAS ? n : MAX_EXACT_REPLICAS;
    /* the butterfly's radices (for the whole group, or the inter-server
     * part of hierarchical: it falls back on them when servers differ) */
    coll_algorithm b = a == COLL_HIERARCHICAL ? o->dp_inter_algorithm : a;
    butterfly_shape bf = {.stages = 0};
    if (b == COLL_HALVING_DOUBLING || b == COLL_BUTTERFLY)
        bf.stages = butterfly_radices(n,
                                      b == COLL_HALVING_DOUBLING ? 2
                                      : o->dp_radix >= 2         ? o->dp_radix
                                                                 : 4,
                                      bf.radices, 64);
    double cost = 0;
    for (int d = 0; d < sampled; d++)
        cost += member_cost(f, pl, o, a, kind, &bf, s, d);
    return cost * n / sampled;
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
        double ops = compute + recompute + p2p + ends * (dp > 1) + optimizers;
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
        if (p == 1)
            /* everything merges but across a gradient sync */
            blocks = pl->schedule == SCHED_PIPEDREAM && dp > 1 ? m + has_optimizer
                                                               : 1 + (dp > 1 && has_optimizer);
        else
            blocks = compute + optimizers - stage_merges(pl, s, has_optimizer);
        double buckets = overlap ? stage_buckets(cm, pl, o, s) : 0;
        /* With the distributed optimizer the first forward of each chunk
         * also runs in one piece per parameter bucket (engine_overlap.c). */
        double pieces = buckets * (o->dp_param_gather_ratio > 0 ? 2 : 1);
        out->executions += fold * (blocks + pieces) + (dp - fold) * optimizers;
        /* Gradient syncs: every replica, folded or not. */
        if (dp > 1 && has_grads) {
            double calls = ends * (overlap ? buckets : 1);
            coll_algorithm a = o->dp_algorithm;
            if (o->dp_param_gather_ratio > 0) {
                coll_algorithm rs =
                    coll_algorithm_supports(a, COLL_REDUCE_SCATTER) ? a : o->dp_inter_algorithm;
                out->collective_activities +=
                    calls * (stage_collective(f, pl, o, rs, COLL_REDUCE_SCATTER, s) +
                             stage_collective(f, pl, o, rs, COLL_ALLGATHER, s));
            } else {
                out->collective_activities +=
                    calls * stage_collective(f, pl, o, a, COLL_ALLREDUCE, s);
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
                both_ways += transfer_cost(f, pl, a, d, b, d) + transfer_cost(f, pl, b, d, a, d);
            out->p2p_activities += m * both_ways * fold / sampled;
        }
        out->sends = 2 * m * (p * v - 1);
    }
    out->activities = out->executions + out->p2p_activities + out->collective_activities;
    double actors = (double)p * dp + (overlap ? p * fold : 0);
    out->engine_bytes += actors * (STACK_BYTES + ACTOR_BYTES) + (double)p * dp * sizeof(worker) +
                         (double)p * dp * tp * (sizeof(int) + sizeof(sg_host_t));
    out->bytes = out->op_list_bytes + out->engine_bytes;
}

void engine_estimate_run(const cl_cluster *c, const cm_model *cm, const plan *pl,
                         const engine_options *o, engine_estimate *out)
{
    est_fabric f = fabric_of(c, NULL, o);
    estimate(&f, cm, pl, o, out);
}

void engine_estimate_platform(const sim_platform *pf, const cm_model *cm, const plan *pl,
                              const engine_options *o, engine_estimate *out)
{
    est_fabric f = fabric_of(&pf->cluster, pf, o);
    estimate(&f, cm, pl, o, out);
}
