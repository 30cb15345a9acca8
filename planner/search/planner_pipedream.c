/*
 * planner_pipedream.c -- PipeDream's partitioning dynamic programme
 * (Narayanan et al., "PipeDream: Generalized Pipeline Parallelism for DNN
 * Training", SOSP'19, section 3.1), run over the workers of one pipeline.
 *
 * The recursion (paper, section 3.1, "Solver"), over prefixes of j layers and
 * n workers:
 *   A(j, n) = min { T(1→j, n),
 *                   min_{i<j, 1≤n'<n} max{ A(i, n−n'), 2·C_i, T(i+1→j, n') } }
 *   T(i→j, n) = (1/n)·max( Σ_{l=i..j} (f_l + b_l), Σ_{l=i..j} W_l(n) )
 *   W_l(n)    = 4(n−1)·|w_l| / (n·B)
 * A is the time per micro-batch of the slowest stage (PipeDream optimises
 * steady-state throughput).  Here
 *   f_l + b_l = cm_forward_total_s + cm_backward_total_s under the recompute
 *               option (TP collectives and recompute included),
 *   |w_l|     = the layer's gradient bytes on one NPU (cm_layer.grad_bytes),
 *   B         = the scale-out (NIC) bandwidth: the replicas of a stage sit on
 *               different servers, since one server holds one TP group,
 *   C_i       = cm_boundary_s() of layer i−1's output over the scale-out fabric
 *               (the send, plus the receiver's TP all-gather under
 *               scatter/gather p2p): pipeline neighbours are different servers too.
 * PipeDream's hierarchical form (one level per bandwidth) collapses to this
 * single level: the workers of one pipeline all talk over the same fabric.
 *
 * What our plans can express.  The workload fixes the TP, PP and DP sizes,
 * and the engine runs p non-replicated stages per pipeline (every stage is
 * replicated across the DP pipelines alike).  planner_pipedream_dp() runs
 * the recursion over the p workers of one pipeline with stage replication
 * allowed, as the paper does (max_replicas = p; a stage gets at most as many
 * replicas as it has layers, so that it could be split back).  A stage
 * replicated on n' workers processes each micro-batch in Σ(f+b)/n' at best;
 * any way to map it back to n' non-replicated stages splits its layers, and
 * the slowest part takes at least that.  Every such mapping is a partition
 * into p non-replicated stages, and the DP constrained to those
 * (max_replicas = 1, stage s at position s) finds the best of them: so the
 * planner uses the constrained DP directly, the optimum being no worse than
 * any mapping of a replicated one.  That is PipeDream-Flush (= 1F1B,
 * Narayanan et al. ICML'21), the synchronous variant we simulate; the
 * asynchronous schedules (pipedream, 2BW) are accepted too and priced by the
 * memory model with their stashed weights.  The replicated A(L, p) remains a
 * lower bound on the constrained one (tests check both against exhaustive
 * search).
 *
 * Memory.  PipeDream checks that each stage fits its worker.  A candidate
 * stage is rejected when it does not fit at the position of its first
 * worker under the memory model of memory.c, in closed form for one-chunk
 * schedules:
 *   static + stash + k_s·Σ a_l^r + max_l (a_l^none − a_l^r) + workspace ≤ M,
 * with k_s = mem_inflight() of that position and the stashed weight
 * versions of memory.c (pipedream: k_s − 1 copies, 2BW: one).  A replicated
 * stage is checked whole, as each of PipeDream's replicas holds it.
 *
 * Recompute.  PipeDream has none.  The planner uses no recompute when some
 * partition fits, else the lightest uniform option (selective, then full)
 * for which one does; it decides this itself and ignores the workload's
 * recompute_granularity (Megatron's knob, planner_options.recompute).
 * Decoder and custom layers take the option; the embedding and LM head none.
 *
 * Predicted iteration time: predict.c's 1F1B critical path (as BMPipe states
 * it, plus what the schedule adds at its ends),
 *   Σ_s t_s + 2·Σ_{s<p−1} c_s + (m−1)·max_s (t_s + 2·c_s) + max_s (AR_s + O_s)
 * with t_s = Σ (f+b) of stage s, c_s its boundary send (scale-out, as in the
 * DP above), AR_s the ring all-reduce of its gradients over the DP replicas
 * and O_s its optimizer step.
 */
#include "planner.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "memory.h"
#include "predict.h"

/* Everything the DP reads, as prefix sums over the layers. */
typedef struct pd_model {
    const cm_model *cm;
    const cl_cluster *c;
    int L, p, m;
    schedule_kind sched;
    double *work_s;       /* [L+1] Σ (f + b) under the recompute option */
    double *grad_bytes;   /* [L+1] */
    double *static_bytes; /* [L+1] weights + grads + optimizer state + ZeRO overlap reserve */
    double *weight_bytes; /* [L+1] one weight copy (stashing) */
    double *kept_bytes;   /* [L+1] activations kept per micro-batch */
    double *transient;    /* [L] recompute working set of each layer */
    double *cut_s;        /* [L] 2·C_i for a cut before layer i (0 at i = 0) */
    double *inflight;     /* [p] k_s of each position */
    double *stash;        /* [p] stashed weight copies at each position */
} pd_model;

static bool pd_recomputable(const cm_layer *ly)
{
    return ly->kind == CM_DECODER || ly->kind == CM_CUSTOM;
}

static recompute_kind pd_option(const cm_layer *ly, recompute_kind r)
{
    return pd_recomputable(ly) ? r : RECOMPUTE_NONE;
}

static void pd_model_free(pd_model *d)
{
    free(d->work_s);
    free(d->grad_bytes);
    free(d->static_bytes);
    free(d->weight_bytes);
    free(d->kept_bytes);
    free(d->transient);
    free(d->cut_s);
    free(d->inflight);
    free(d->stash);
}

static int pd_model_init(pd_model *d, const cm_model *cm, const cl_cluster *c, schedule_kind sched,
                         int p, int m, recompute_kind r)
{
    int L = cm->num_layers;
    memset(d, 0, sizeof *d);
    *d = (pd_model){.cm = cm, .c = c, .L = L, .p = p, .m = m, .sched = sched};
    d->work_s = calloc((size_t)L + 1, sizeof(double));
    d->grad_bytes = calloc((size_t)L + 1, sizeof(double));
    d->static_bytes = calloc((size_t)L + 1, sizeof(double));
    d->weight_bytes = calloc((size_t)L + 1, sizeof(double));
    d->kept_bytes = calloc((size_t)L + 1, sizeof(double));
    d->transient = calloc((size_t)L, sizeof(double));
    d->cut_s = calloc((size_t)L, sizeof(double));
    d->inflight = calloc((size_t)p, sizeof(double));
    d->stash = calloc((size_t)p, sizeof(double));
    if (!d->work_s || !d->grad_bytes || !d->static_bytes || !d->weight_bytes || !d->kept_bytes ||
        !d->transient || !d->cut_s || !d->inflight || !d->stash) {
        pd_model_free(d);
        return -1;
    }
    for (int l = 0; l < L; l++) {
        const cm_layer *ly = &cm->layers[l];
        recompute_kind rl = pd_option(ly, r);
        d->work_s[l + 1] = d->work_s[l] + cm_forward_total_s(ly) + cm_backward_total_s(ly, rl);
        d->grad_bytes[l + 1] = d->grad_bytes[l] + ly->grad_bytes;
        d->static_bytes[l + 1] =
            d->static_bytes[l] + ly->state_bytes + mem_zero_overlap_layer_bytes(cm, l);
        d->weight_bytes[l + 1] = d->weight_bytes[l] + ly->params * cm->weight_bytes_per_param;
        d->kept_bytes[l + 1] = d->kept_bytes[l] + ly->activation_bytes[rl];
        d->transient[l] = ly->activation_bytes[RECOMPUTE_NONE] - ly->activation_bytes[rl];
        if (l > 0 && c)
            d->cut_s[l] = 2.0 * cm_boundary_s(c, &cm->layers[l - 1], 0);
    }
    for (int s = 0; s < p; s++) {
        d->inflight[s] = mem_inflight(sched, p, s, m, 1, 0);
        d->stash[s] = mem_stash_copies(sched, p, s, m);
    }
    return 0;
}

/* Does layers [i, j) fit as one stage whose first worker is position s?
 * transient_max is the largest per-layer transient of the range. */
static bool pd_fits(const pd_model *d, int i, int j, int s, double transient_max)
{
    double bytes = d->static_bytes[j] - d->static_bytes[i] +
                   d->stash[s] * (d->weight_bytes[j] - d->weight_bytes[i]) +
                   d->inflight[s] * (d->kept_bytes[j] - d->kept_bytes[i]) + transient_max +
                   d->cm->workspace_bytes;
    return bytes <= d->cm->hbm_bytes;
}

/* T(i→j, n): time per micro-batch of layers [i, j) replicated on n workers. */
static double pd_stage_time(const pd_model *d, int i, int j, int n)
{
    double work = d->work_s[j] - d->work_s[i];
    double sync = 0.0;
    if (n > 1 && d->c && d->c->scaleout_bandwidth_Bps > 0)
        sync = 4.0 * (n - 1) * (d->grad_bytes[j] - d->grad_bytes[i]) /
               (n * d->c->scaleout_bandwidth_Bps);
    return fmax(work, sync) / n;
}

/* The DP tables: A[n][j], and for each entry the start of its last stage and
 * that stage's replica count. */
typedef struct pd_table {
    int L;
    double *best;
    int *from, *reps;
} pd_table;

static int pd_index(const pd_table *t, int n, int j) { return n * (t->L + 1) + j; }

static void pd_fill(const pd_model *d, int max_replicas, pd_table *t)
{
    int L = d->L, p = d->p;
    for (int k = 0; k < (p + 1) * (L + 1); k++)
        t->best[k] = INFINITY;
    for (int n = 1; n <= p; n++) {
        for (int j = 1; j <= L; j++) {
            int at = pd_index(t, n, j);
            double transient_max = 0.0;
            for (int i = j - 1; i >= 0; i--) {
                transient_max = fmax(transient_max, d->transient[i]);
                int most = n < j - i ? n : j - i;
                if (most > max_replicas)
                    most = max_replicas;
                for (int reps = 1; reps <= most; reps++) {
                    /* The prefix before i uses the other n − reps workers. */
                    if ((i == 0) != (reps == n))
                        continue;
                    double prefix = i == 0 ? 0.0 : t->best[pd_index(t, n - reps, i)];
                    if (prefix == INFINITY || !pd_fits(d, i, j, n - reps, transient_max))
                        continue;
                    double cand = fmax(fmax(prefix, d->cut_s[i]), pd_stage_time(d, i, j, reps));
                    if (cand < t->best[at]) {
                        t->best[at] = cand;
                        t->from[at] = i;
                        t->reps[at] = reps;
                    }
                }
            }
        }
    }
}

int planner_pipedream_dp(const cm_model *cm, const cl_cluster *c, schedule_kind sched, int p, int m,
                         recompute_kind r, int max_replicas, pipedream_stage *stages,
                         int *num_stages, double *bottleneck_s)
{
    int L = cm->num_layers;
    *num_stages = 0;
    *bottleneck_s = INFINITY;
    if (p < 1 || L < p)
        return 0;
    pd_model d;
    if (pd_model_init(&d, cm, c, sched, p, m, r))
        return -1;
    size_t cells = (size_t)(p + 1) * (L + 1);
    pd_table t = {L, malloc(cells * sizeof(double)), calloc(cells, sizeof(int)),
                  calloc(cells, sizeof(int))};
    int rc = 0;
    if (!t.best || !t.from || !t.reps) {
        rc = -1;
    } else {
        pd_fill(&d, max_replicas < 1 ? 1 : max_replicas, &t);
        *bottleneck_s = t.best[pd_index(&t, p, L)];
        /* Walk the stages back from (p, L), then put them in model order. */
        int count = 0;
        for (int n = p, j = L; *bottleneck_s < INFINITY && j > 0; count++) {
            int at = pd_index(&t, n, j);
            stages[count] = (pipedream_stage){t.from[at], j, t.reps[at]};
            n -= t.reps[at];
            j = t.from[at];
        }
        for (int a = 0, b = count - 1; a < b; a++, b--) {
            pipedream_stage tmp = stages[a];
            stages[a] = stages[b];
            stages[b] = tmp;
        }
        *num_stages = count;
    }
    free(t.best);
    free(t.from);
    free(t.reps);
    pd_model_free(&d);
    return rc;
}

/* ---- the planner --------------------------------------------------------- */

static void pd_fill_plan(const cm_model *cm, const cl_cluster *c, const pipedream_stage *stages,
                         recompute_kind r, plan *out)
{
    out->chunk_start[0] = 0;
    for (int s = 0; s < out->num_stages; s++)
        out->chunk_start[s + 1] = stages[s].last;
    for (int l = 0; l < cm->num_layers; l++)
        out->recompute[l] = pd_option(&cm->layers[l], r);
    out->predicted_iteration_s = predict_1f1b_iteration_s(cm, c, out, PREDICT_SENDS_SCALEOUT);
}

static int pd_plan(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                   const planner_options *o, plan *out, np_error *err)
{
    int p = w->parallel.pipeline_model_parallel_size;
    int rc = planner_require_one_chunk("pipedream", w, o, err);
    if (rc || (rc = planner_require_layer_per_stage("pipedream", cm, w, err)))
        return rc;
    if (plan_init(out, p, 1, cm->num_layers))
        return np_error_set(err, NP_EXIT_INTERNAL, "<pipedream>", "", 0, "out of memory");
    planner_plan_basics(out, w, o);
    pipedream_stage *stages = malloc((size_t)p * sizeof *stages);
    if (!stages)
        return np_error_set(err, NP_EXIT_INTERNAL, "<pipedream>", "", 0, "out of memory");
    for (int r = RECOMPUTE_NONE; r < RECOMPUTE_COUNT; r++) {
        int count;
        double bottleneck;
        if (planner_pipedream_dp(cm, c, out->schedule, p, out->num_micro_batches, (recompute_kind)r,
                                 1, stages, &count, &bottleneck)) {
            free(stages);
            return np_error_set(err, NP_EXIT_INTERNAL, "<pipedream>", "", 0, "out of memory");
        }
        if (bottleneck < INFINITY) {
            pd_fill_plan(cm, c, stages, (recompute_kind)r, out);
            free(stages);
            return 0;
        }
    }
    free(stages);
    return np_error_set(err, NP_EXIT_NOFIT, w->path, "", 0,
                        "pipedream: no partition of the %d layers over %d stages fits in %.2f GB "
                        "per device, with recompute none, selective or full",
                        cm->num_layers, p, cm->hbm_bytes / 1e9);
}

int planner_pipedream(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                      const planner_options *o, plan *out, np_error *err)
{
    return planner_call_clean(pd_plan, cm, c, w, o, out, err);
}
