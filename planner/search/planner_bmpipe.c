/*
 * planner_bmpipe.c -- BMPipe: bubble–memory co-optimisation as an integer
 * linear program solved by GLPK's branch-and-cut (glp_intopt).
 *
 * Design.  The planner chooses, at once, where the pipeline is cut and which
 * recompute option (none, selective, full) every layer uses, so that the
 * stages balance under each stage's own memory budget: early stages hold
 * more micro-batches in flight and must recompute more; later ones can keep
 * activations and take more layers.  The formulation follows PLANNERS.md
 * "BMPipe" ([rec]: reconstructed from the paper's abstract), over model
 * chunks k = j·p + s (virtual chunk j of stage s, Megatron's layout; v = 1
 * outside the interleaved schedule):
 *
 *   q[l,k,r] ∈ {0,1}   layer l in chunk k with option r, Σ_{k,r} q = 1
 *   Y[l,k] = Σ_{k'≤k,r} q[l,k',r]   (layer l sits in a chunk ≤ k)
 *   Y[l,k] ≥ Y[l+1,k]               chunks are contiguous ranges in order
 *   Y[l+1,k+1] ≥ Y[l,k]             no chunk is skipped: none is empty
 *   F_k + B_k = Σ q·(cm_forward_total_s + cm_backward_total_s(r))
 *               (TP collectives included; B counts b + w + recompute ρ^r)
 *   c_k = Σ_l (Y[l,k] − Y[l+1,k])·send_l, send_l = cl_p2p_time(output bytes
 *         of layer l, scale-out): the boundary tensor leaving chunk k
 *   memory of stage s, one row per held vector H (below):
 *     Σ_{k of s} Σ q·(P_l + H_k·a_l^r) + R_k(H) ≤ M − workspace
 *   R_k ≥ Σ_r t_l^r·q[l,k,r] for every layer l of chunk k
 *   τ ≥ Σ_{k of s} (F_k + B_k + 2c_k) for every stage s
 *   minimise T = Σ_s (F_s + B_s)/v + (m − 1/v)·τ.
 * For v = 1 T is the paper's Σ_s (F_s + B_s) + (m − 1)·τ: the 1F1B critical
 * path, warm-up and cool-down plus m − 1 bottleneck intervals, (m+p−1)(F+B)
 * for uniform stages.  For the interleaved schedule the reconstruction keeps
 * the same shape with the fill and drain shortened v-fold, which gives
 * exactly Megatron's (m + (p−1)/v)(F+B) for uniform stages (our choice; the
 * paper does not print its interleaved objective).
 *
 * Memory terms, all from the project's memory model so that the ILP and
 * mem_check_fits() agree: P_l is the layer's weights + gradients + optimizer
 * state (plus PipeDream's stashed weight copies), a_l^r the activation bytes
 * it keeps per micro-batch under option r, and the transient
 * t_l^r = a_l^none − a_l^r the bytes a recompute pass re-materialises
 * (plan_layer_recompute()).  H_k is how many micro-batches chunk k holds
 * when a backward of chunk j (with its transient R_{j·p+s}) starts: for the
 * flat schedules one row, H = mem_inflight() (1F1B min(p−s, m), GPipe m,
 * ZB-H2 2(p−s)−1); for the interleaved schedule the held counts at every
 * backward of the order memory.c replays (Megatron's warm-up, then one
 * forward and one backward; sched_step_at()), constants of (p, v, m, s), one
 * row per distinct (H, j) with dominated ones dropped (p = 2, v = 2: at most
 * 4 rows per stage).  PLANNERS.md's α[v][s], every chunk's count at the
 * first backward plus the largest transient at once, is not that peak:
 * with p = v = 2 stage 0 later holds 4 chunk-0 micro-batches (α says 3), and a chunk's
 * transient only comes with its own backward.  R_k is a variable bounded
 * below by every layer's transient: exact, since it only appears in ≤ rows.
 * With uniform micro-batches the rows are exactly memory.c's replayed peak;
 * every solution is still checked with mem_check_fits() and, if a stage
 * overflows (GLPK's 1e-7 feasibility tolerance), that stage's budget is cut
 * by the excess and the ILP solved again (at most a few rounds).
 *
 * Two forms.  With heterogeneous layers the binary form above has
 * L·p·v·|options| assignment variables (128 × 16 × 3 for Llama 3 405B with
 * its embedding and head, fewer after the windows that leave every chunk a
 * layer).  When the layers between the first and the last are identical in
 * the cost model (every decoder layer of a Transformer; the embedding and
 * the LM head are pinned to the first and last chunk by contiguity anyway),
 * the planner uses the integer-count form instead: how many middle layers
 * each chunk holds with each option, n[k,r].  With one chunk per stage the
 * stages share only the layer count, so the fastest mix of options that
 * fits a stage of n layers (found by enumeration) is its best whatever the
 * others do; the ILP then picks one size per stage (binary size[s,n],
 * n[s,r] = that size's mix) and bounds τ by levels (see sizes_level_rows),
 * about p·(L/p)·2 binaries: Llama 3 405B is proven optimal in 0.2 s, where
 * the plain n[s,r] form with big-M transient links still had a 1.5–3% gap
 * after 10 s.  With v > 1 the chunks of a stage share its memory, so the
 * form keeps integer n[k,r], a binary z[k,r] = [n[k,r] > 0] for the
 * transient, binaries for the end layers' options and exact memory rows,
 * and adds the sizes only as valid cuts.
 *
 * Where GLPK may find no integer point within the limit (the binary form,
 * the v > 1 count form), a greedy heuristic plan is handed to it as its
 * first incumbent (see "a first incumbent" below), so the planner always
 * returns a plan and the gap GLPK proves for it.
 *
 * Options that another option of the same layer dominates (no faster, no
 * smaller in kept bytes nor in transient) are left out; this never changes
 * the optimum.  BMPipe always chooses recompute per layer: the options'
 * recompute field (the workload's recompute_granularity, Megatron's setting)
 * is not used.  The time limit (planner_options.time_limit_s; ≤ 0: none)
 * bounds the whole solve; when it stops GLPK before optimality the plan is
 * the best one found and plan.solver_gap the relative MIP gap left.
 * predicted_iteration_s is the ILP objective T of the returned plan.
 */
#include "planner.h"

#include <float.h>
#include <glpk.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memory.h"
#include "schedule_internal.h"

#define R RECOMPUTE_COUNT
#define MAX_REPAIR_ROUNDS 4

/* ---- the problem, from the cost model --------------------------------- */

typedef struct bmp_problem {
    const cm_model *cm;
    int num_layers, p, v, chunks, m;
    double *inflight;        /* [chunks] the most micro-batches chunk k ever holds */
    double *own_held;        /* [chunks] the most chunk k holds while its backward runs */
    int *row_begin;          /* [p+1] memory rows of stage s: row_begin[s] .. row_begin[s+1]−1 */
    int *row_chunk;          /* [rows] virtual chunk j whose backward (and transient) runs */
    double *row_held;        /* [rows·v] H[k]: micro-batches of virtual chunk k held then */
    double *budget_bytes;    /* [p] capacity − workspace, cut by the repair rounds */
    double *stash_copies;    /* [p] extra weight copies per stage (PipeDream) */
    double *time_s;          /* [L·R] F + B of layer l under option r */
    double *keep_bytes;      /* [L·R] a_l^r */
    double *transient_bytes; /* [L·R] t_l^r */
    double *send_s;          /* [L] boundary send after layer l */
    bool *allowed;           /* [L·R] option r of layer l not dominated */
} bmp_problem;

static void problem_free(bmp_problem *pb)
{
    free(pb->inflight);
    free(pb->own_held);
    free(pb->row_begin);
    free(pb->row_chunk);
    free(pb->row_held);
    free(pb->budget_bytes);
    free(pb->stash_copies);
    free(pb->time_s);
    free(pb->keep_bytes);
    free(pb->transient_bytes);
    free(pb->send_s);
    free(pb->allowed);
}

/* Option r of layer l is dominated when a lower-indexed option is no worse in
 * every term, or a higher-indexed one is no worse and better in one. */
static bool option_dominated(const bmp_problem *pb, int l, int r)
{
    const double *t = &pb->time_s[l * R], *a = &pb->keep_bytes[l * R];
    const double *x = &pb->transient_bytes[l * R];
    for (int o = 0; o < R; o++) {
        if (o == r || t[o] > t[r] || a[o] > a[r] || x[o] > x[r])
            continue;
        if (o < r || t[o] < t[r] || a[o] < a[r] || x[o] < x[r])
            return true;
    }
    return false;
}

/* Appends row (s, j, held) unless a row of stage s for the same chunk j
 * holds at least as much of every chunk; drops the rows it dominates. */
static void memory_row_add(bmp_problem *pb, int *rows, int s, int j, const int *held)
{
    int v = pb->v;
    for (int i = pb->row_begin[s]; i < *rows; i++) {
        if (pb->row_chunk[i] != j)
            continue;
        bool covers = true, covered = true;
        for (int k = 0; k < v; k++) {
            covers = covers && pb->row_held[i * v + k] >= held[k];
            covered = covered && pb->row_held[i * v + k] <= held[k];
        }
        if (covers)
            return;
        if (covered) { /* replace it by the last row */
            (*rows)--;
            pb->row_chunk[i] = pb->row_chunk[*rows];
            memmove(&pb->row_held[i * v], &pb->row_held[*rows * v], (size_t)v * sizeof(double));
            i--;
        }
    }
    pb->row_chunk[*rows] = j;
    for (int k = 0; k < v; k++)
        pb->row_held[*rows * v + k] = held[k];
    (*rows)++;
}

/* The memory rows: for every stage, the micro-batches of each of its chunks
 * held when a backward (with its recompute transient) runs, walking the
 * order memory.c replays (warm-up forwards, then one forward and one
 * backward, then the drain; sched_step_at()), one row per distinct held
 * vector and backward chunk, dominated ones dropped.  The flat schedules
 * have one row per stage, mem_inflight().  With uniform micro-batches the
 * largest row is exactly mem_stage_bytes()'s peak: a forward's peak is
 * followed by a backward holding as much (or is the warm-up's last). */
static int memory_rows_init(bmp_problem *pb, schedule_kind sched)
{
    int p = pb->p, v = pb->v, m = pb->m, K = pb->chunks, rows = 0;
    bool interleaved = sched == SCHED_INTERLEAVED && v > 1;
    int most = interleaved ? m * v : 1;
    int held[v];
    pb->own_held = calloc((size_t)K, sizeof(double));
    pb->row_begin = calloc((size_t)p + 1, sizeof(int));
    pb->row_chunk = calloc((size_t)p * most, sizeof(int));
    pb->row_held = calloc((size_t)p * most * v, sizeof(double));
    if (!pb->own_held || !pb->row_begin || !pb->row_chunk || !pb->row_held)
        return -1;
    for (int s = 0; s < p; s++) {
        pb->row_begin[s] = rows;
        if (!interleaved) {
            held[0] = (int)mem_inflight(sched, p, s, m, v, 0);
            memory_row_add(pb, &rows, s, 0, held);
        } else {
            int total = m * v, warmup = sched_interleaved_warmup(p, s, v), f = 0;
            memset(held, 0, sizeof held);
            for (; f < warmup && f < total; f++)
                held[sched_step_at(p, v, f, true).chunk]++;
            for (int b = 0; b < total; b++) {
                if (f < total)
                    held[sched_step_at(p, v, f++, true).chunk]++;
                int j = sched_step_at(p, v, b, false).chunk;
                memory_row_add(pb, &rows, s, j, held);
                held[j]--;
            }
        }
        for (int i = pb->row_begin[s]; i < rows; i++) {
            for (int j = 0; j < v; j++) {
                int k = j * p + s;
                pb->inflight[k] = fmax(pb->inflight[k], pb->row_held[i * v + j]);
                if (pb->row_chunk[i] == j)
                    pb->own_held[k] = fmax(pb->own_held[k], pb->row_held[i * v + j]);
            }
        }
    }
    pb->row_begin[p] = rows;
    return 0;
}

static int problem_init(bmp_problem *pb, const cm_model *cm, const cl_cluster *c, int p, int v,
                        int m, schedule_kind sched)
{
    int L = cm->num_layers, K = p * v;
    *pb = (bmp_problem){.cm = cm, .num_layers = L, .p = p, .v = v, .chunks = K, .m = m};
    pb->inflight = calloc((size_t)K, sizeof(double));
    pb->budget_bytes = calloc((size_t)p, sizeof(double));
    pb->stash_copies = calloc((size_t)p, sizeof(double));
    pb->time_s = calloc((size_t)L * R, sizeof(double));
    pb->keep_bytes = calloc((size_t)L * R, sizeof(double));
    pb->transient_bytes = calloc((size_t)L * R, sizeof(double));
    pb->send_s = calloc((size_t)L, sizeof(double));
    pb->allowed = calloc((size_t)L * R, sizeof(bool));
    if (!pb->inflight || !pb->budget_bytes || !pb->stash_copies || !pb->time_s || !pb->keep_bytes ||
        !pb->transient_bytes || !pb->send_s || !pb->allowed)
        return -1;
    if (memory_rows_init(pb, sched))
        return -1;
    for (int s = 0; s < p; s++) {
        pb->budget_bytes[s] = cm->hbm_bytes - cm->workspace_bytes;
        pb->stash_copies[s] = mem_stash_copies(sched, p, s, m);
    }
    for (int l = 0; l < L; l++) {
        const cm_layer *ly = &cm->layers[l];
        pb->send_s[l] = c ? cl_p2p_time(c, ly->output_bytes, 0) : 0.0;
        for (int r = 0; r < R; r++) {
            pb->time_s[l * R + r] = cm_forward_total_s(ly) + cm_backward_total_s(ly, r);
            pb->keep_bytes[l * R + r] = ly->activation_bytes[r];
            pb->transient_bytes[l * R + r] =
                ly->activation_bytes[RECOMPUTE_NONE] - ly->activation_bytes[r];
        }
    }
    for (int l = 0; l < L; l++)
        for (int r = 0; r < R; r++)
            pb->allowed[l * R + r] = !option_dominated(pb, l, r);
    return 0;
}

/* Bytes layer l costs on stage s as a static term (state + stashed copies). */
static double static_bytes(const bmp_problem *pb, int l, int s)
{
    const cm_layer *ly = &pb->cm->layers[l];
    return ly->state_bytes + pb->stash_copies[s] * ly->params * pb->cm->weight_bytes_per_param;
}

/* Per-option coefficients of layer l of stage s in a memory row where its
 * chunk holds `held` micro-batches. */
static void memory_coefficients(const bmp_problem *pb, int l, int s, double held, double *out)
{
    for (int r = 0; r < R; r++)
        out[r] = static_bytes(pb, l, s) + held * pb->keep_bytes[l * R + r];
}

/* Layers l and o cost the same in every term of the ILP. */
static bool layers_identical(const bmp_problem *pb, int l, int o)
{
    size_t n = R * sizeof(double);
    const cm_layer *a = &pb->cm->layers[l], *b = &pb->cm->layers[o];
    return memcmp(&pb->time_s[l * R], &pb->time_s[o * R], n) == 0 &&
           memcmp(&pb->keep_bytes[l * R], &pb->keep_bytes[o * R], n) == 0 &&
           memcmp(&pb->transient_bytes[l * R], &pb->transient_bytes[o * R], n) == 0 &&
           memcmp(&pb->allowed[l * R], &pb->allowed[o * R], R * sizeof(bool)) == 0 &&
           a->state_bytes == b->state_bytes && a->params == b->params &&
           pb->send_s[l] == pb->send_s[o];
}

/* The integer-count form applies when layers 1 .. L−2 are all identical. */
static bool middle_identical(const bmp_problem *pb)
{
    if (pb->num_layers < 3)
        return false;
    for (int l = 2; l < pb->num_layers - 1; l++)
        if (!layers_identical(pb, 1, l))
            return false;
    return true;
}

/* Memory rows are scaled to the device capacity, so coefficients are O(1). */
static double memory_scale(const bmp_problem *pb)
{
    return pb->cm->hbm_bytes > 0 ? 1.0 / pb->cm->hbm_bytes : 1.0;
}

/* The bottleneck τ of plan pl from the ILP's own coefficients; the total
 * work Σ_s (F_s + B_s) to *work_s and each chunk's transient (scaled as
 * the memory rows) to transient[k] when non-NULL. */
static double plan_bottleneck_s(const bmp_problem *pb, const plan *pl, double *work_s,
                                double *transient)
{
    double tau = 0, total = 0, ms = memory_scale(pb);
    for (int s = 0; s < pb->p; s++) {
        double t = 0;
        for (int k = s; k < pb->chunks; k += pb->p) {
            double largest = 0;
            for (int l = pl->chunk_start[k]; l < pl->chunk_start[k + 1]; l++) {
                int i = l * R + pl->recompute[l];
                t += pb->time_s[i];
                largest = fmax(largest, ms * pb->transient_bytes[i]);
            }
            if (transient)
                transient[k] = largest;
        }
        total += t;
        for (int k = s; k < pb->chunks - 1; k += pb->p)
            t += 2 * pb->send_s[pl->chunk_start[k + 1] - 1];
        tau = fmax(tau, t);
    }
    if (work_s)
        *work_s = total;
    return tau;
}

/* The objective T of a plan: Σ_s (F_s + B_s)/v + (m − 1/v)·τ. */
static double problem_objective(const bmp_problem *pb, const plan *pl)
{
    double work;
    double tau = plan_bottleneck_s(pb, pl, &work, NULL);
    return work / pb->v + (pb->m - 1.0 / pb->v) * tau;
}

/* ---- a small builder over GLPK's triplet matrix ------------------------ */

typedef struct ilp {
    glp_prob *lp;
    int *ia, *ja;
    double *ar;
    int ne, cap;
    int row;
    bool failed; /* out of memory */
} ilp;

/* A column in [lb, ub] (ub = INFINITY: no upper bound). */
static int ilp_col(ilp *b, int kind, double lb, double ub, double objective)
{
    int j = glp_add_cols(b->lp, 1);
    glp_set_col_kind(b->lp, j, kind);
    if (kind != GLP_BV)
        glp_set_col_bnds(b->lp, j, isinf(ub) ? GLP_LO : (ub > lb ? GLP_DB : GLP_FX), lb,
                         isinf(ub) ? 0.0 : ub);
    glp_set_obj_coef(b->lp, j, objective);
    return j;
}

/* Starts a row; type GLP_LO (≥ lb), GLP_UP (≤ ub) or GLP_FX (= lb). */
static void ilp_row(ilp *b, int type, double lb, double ub)
{
    b->row = glp_add_rows(b->lp, 1);
    glp_set_row_bnds(b->lp, b->row, type, lb, ub);
}

static void ilp_term(ilp *b, int col, double coefficient)
{
    if (col <= 0 || coefficient == 0.0 || b->failed)
        return;
    if (b->ne + 1 >= b->cap) {
        int cap = b->cap ? 2 * b->cap : 4096;
        int *ia = realloc(b->ia, (size_t)cap * sizeof *ia);
        if (ia)
            b->ia = ia;
        int *ja = realloc(b->ja, (size_t)cap * sizeof *ja);
        if (ja)
            b->ja = ja;
        double *ar = realloc(b->ar, (size_t)cap * sizeof *ar);
        if (ar)
            b->ar = ar;
        if (!ia || !ja || !ar) {
            b->failed = true;
            return;
        }
        b->cap = cap;
    }
    b->ne++; /* GLPK's arrays are 1-based */
    b->ia[b->ne] = b->row;
    b->ja[b->ne] = col;
    b->ar[b->ne] = coefficient;
}

static void ilp_free(ilp *b)
{
    if (b->lp)
        glp_delete_prob(b->lp);
    free(b->ia);
    free(b->ja);
    free(b->ar);
}

/* ---- the binary form ---------------------------------------------------- */

typedef struct binary_cols {
    int *q; /* [L·K·R], 0 when absent */
    int *y; /* [L·K], Y[l,k] for k < K−1 */
    int tau;
} binary_cols;

/* Layer l can only sit in chunks that leave every earlier and later chunk a
 * layer of its own. */
static int first_chunk(const bmp_problem *pb, int l)
{
    int k = pb->chunks - (pb->num_layers - l);
    return k > 0 ? k : 0;
}

static int last_chunk(const bmp_problem *pb, int l)
{
    return l < pb->chunks - 1 ? l : pb->chunks - 1;
}

static void binary_columns(ilp *b, const bmp_problem *pb, binary_cols *bc, int *transient_col)
{
    int L = pb->num_layers, K = pb->chunks;
    for (int l = 0; l < L; l++)
        for (int k = first_chunk(pb, l); k <= last_chunk(pb, l); k++)
            for (int r = 0; r < R; r++)
                if (pb->allowed[l * R + r])
                    bc->q[(l * K + k) * R + r] =
                        ilp_col(b, GLP_BV, 0, 1, pb->time_s[l * R + r] / pb->v);
    for (int l = 0; l < L; l++)
        for (int k = 0; k < K - 1; k++)
            bc->y[l * K + k] = ilp_col(b, GLP_CV, 0, 1, 0);
    bc->tau = ilp_col(b, GLP_CV, 0, INFINITY, pb->m - 1.0 / pb->v);
    for (int k = 0; k < K; k++)
        transient_col[k] = ilp_col(b, GLP_CV, 0, INFINITY, 0);
}

/* Σ_r coefficient(r)·q[l,k,r] added to the current row. */
static void binary_terms(ilp *b, const bmp_problem *pb, const binary_cols *bc, int l, int k,
                         const double *per_option, double scale)
{
    for (int r = 0; r < R; r++)
        ilp_term(b, bc->q[(l * pb->chunks + k) * R + r], scale * per_option[r]);
}

static void binary_structure_rows(ilp *b, const bmp_problem *pb, const binary_cols *bc)
{
    int L = pb->num_layers, K = pb->chunks;
    static const double one[R] = {1, 1, 1};
    for (int l = 0; l < L; l++) {
        ilp_row(b, GLP_FX, 1, 1);
        for (int k = 0; k < K; k++)
            binary_terms(b, pb, bc, l, k, one, 1);
        for (int k = 0; k < K - 1; k++) { /* Y[l,k] = Y[l,k−1] + Σ_r q[l,k,r] */
            ilp_row(b, GLP_FX, 0, 0);
            ilp_term(b, bc->y[l * K + k], 1);
            if (k > 0)
                ilp_term(b, bc->y[l * K + k - 1], -1);
            binary_terms(b, pb, bc, l, k, one, -1);
        }
    }
    for (int l = 0; l + 1 < L; l++) {
        for (int k = 0; k < K - 1; k++) {
            ilp_row(b, GLP_LO, 0, 0); /* Y[l,k] ≥ Y[l+1,k] */
            ilp_term(b, bc->y[l * K + k], 1);
            ilp_term(b, bc->y[(l + 1) * K + k], -1);
            if (k + 1 < K - 1) {
                ilp_row(b, GLP_LO, 0, 0); /* Y[l+1,k+1] ≥ Y[l,k] */
                ilp_term(b, bc->y[(l + 1) * K + k + 1], 1);
                ilp_term(b, bc->y[l * K + k], -1);
            }
        }
    }
}

static void binary_stage_rows(ilp *b, const bmp_problem *pb, const binary_cols *bc,
                              const int *transient_col)
{
    int L = pb->num_layers, K = pb->chunks, p = pb->p;
    double ms = memory_scale(pb);
    for (int s = 0; s < p; s++) {
        ilp_row(b, GLP_LO, 0, 0); /* τ ≥ Σ_{k of s} F_k + B_k + 2c_k */
        ilp_term(b, bc->tau, 1);
        for (int k = s; k < K; k += p) {
            for (int l = 0; l < L; l++) {
                binary_terms(b, pb, bc, l, k, &pb->time_s[l * R], -1);
                if (k < K - 1) { /* c_k = Σ_l (Y[l,k] − Y[l+1,k])·send_l, by Y */
                    double sent = l + 1 < L ? pb->send_s[l] : 0.0;
                    double before = l > 0 ? pb->send_s[l - 1] : 0.0;
                    ilp_term(b, bc->y[l * K + k], -2 * (sent - before));
                }
            }
        }
        for (int i = pb->row_begin[s]; i < pb->row_begin[s + 1]; i++) {
            ilp_row(b, GLP_UP, 0, pb->budget_bytes[s] * ms); /* memory of stage s */
            ilp_term(b, transient_col[pb->row_chunk[i] * p + s], 1);
            for (int k = s; k < K; k += p) {
                for (int l = 0; l < L; l++) {
                    double bytes[R];
                    memory_coefficients(pb, l, s, pb->row_held[i * pb->v + k / p], bytes);
                    binary_terms(b, pb, bc, l, k, bytes, ms);
                }
            }
        }
        for (int k = s; k < K; k += p) {
            for (int l = 0; l < L; l++) { /* R_k ≥ t_l^r·q[l,k,r], when layer l may add one */
                bool any = false;
                for (int r = 0; r < R; r++)
                    any = any || (bc->q[(l * K + k) * R + r] && pb->transient_bytes[l * R + r] > 0);
                if (!any)
                    continue;
                ilp_row(b, GLP_LO, 0, 0);
                ilp_term(b, transient_col[k], 1);
                binary_terms(b, pb, bc, l, k, &pb->transient_bytes[l * R], -ms);
            }
        }
    }
}

static int binary_build(ilp *b, const bmp_problem *pb, binary_cols *bc, int *transient_col)
{
    bc->q = calloc((size_t)pb->num_layers * pb->chunks * R, sizeof(int));
    bc->y = calloc((size_t)pb->num_layers * pb->chunks, sizeof(int));
    if (!bc->q || !bc->y)
        return -1;
    binary_columns(b, pb, bc, transient_col);
    binary_structure_rows(b, pb, bc);
    binary_stage_rows(b, pb, bc, transient_col);
    return 0;
}

static void binary_decode(const bmp_problem *pb, const binary_cols *bc, glp_prob *lp, plan *pl)
{
    int L = pb->num_layers, K = pb->chunks;
    for (int k = 0; k <= K; k++)
        pl->chunk_start[k] = k == K ? L : 0;
    int chunk = 0;
    for (int l = 0; l < L; l++) {
        for (int k = 0; k < K; k++) {
            for (int r = 0; r < R; r++) {
                int j = bc->q[(l * K + k) * R + r];
                if (j && glp_mip_col_val(lp, j) > 0.5) {
                    pl->recompute[l] = (recompute_kind)r;
                    for (; chunk < k; chunk++)
                        pl->chunk_start[chunk + 1] = l;
                }
            }
        }
    }
}

/* ---- chunk sizes: identical middle layers ------------------------------- */

/* With identical middle layers a chunk is described by how many it holds
 * and with which options.  For every chunk k and size n this section finds,
 * by enumeration, W*(k,n): the least F + B of the chunk over every option
 * mix (and option of the end layer pinned to it) that fits its stage's
 * budget were the chunk alone on the stage, and that mix.  Binary
 * size[k,n] selects the chunk's size. */

/* A mix: counts of middle layers per option, then the options of layer 0
 * and layer L−1 (used when the chunk holds them). */
#define MIX (R + 2)
typedef int16_t layer_count;
#define MAX_CHUNK_LAYERS INT16_MAX

typedef struct chunk_sizes {
    int N;            /* middle layers, L − 2 */
    int *col;         /* [K·(N+1)] size[k,n]; 0 when n layers cannot fit */
    double *floor_s;  /* [K·(N+1)] W*(k,n) */
    layer_count *mix; /* [K·(N+1)·MIX] the fastest fitting mix */
    int *most;        /* [K] the largest size that fits */
} chunk_sizes;

/* Time and bytes of chunk k under a mix; the bytes are what its stage would
 * need if the chunk were alone on it (exact for v = 1; for v > 1 a lower
 * bound of every memory row: the most it holds, or the most it holds while
 * its own backward adds the transient). */
static void chunk_cost(const bmp_problem *pb, int k, const layer_count *mix, double *time_s,
                       double *bytes)
{
    int L = pb->num_layers, s = k % pb->p;
    double static_b = 0, kept = 0, transient = 0, t = 0;
    for (int r = 0; r < R; r++) {
        if (!mix[r])
            continue;
        t += mix[r] * pb->time_s[R + r];
        static_b += mix[r] * static_bytes(pb, 1, s);
        kept += mix[r] * pb->keep_bytes[R + r];
        transient = fmax(transient, pb->transient_bytes[R + r]);
    }
    int ends[2] = {k == 0 ? 0 : -1, k == pb->chunks - 1 ? L - 1 : -1};
    for (int e = 0; e < 2; e++) {
        if (ends[e] < 0)
            continue;
        int i = ends[e] * R + mix[R + e];
        t += pb->time_s[i];
        static_b += static_bytes(pb, ends[e], s);
        kept += pb->keep_bytes[i];
        transient = fmax(transient, pb->transient_bytes[i]);
    }
    *time_s = t;
    *bytes = static_b + fmax(pb->inflight[k] * kept, pb->own_held[k] * kept + transient);
}

/* Whether layer l may take option r (end layers a chunk does not hold only
 * take option 0, a placeholder). */
static bool end_option_ok(const bmp_problem *pb, int l, bool held, int r)
{
    return held ? pb->allowed[l * R + r] : r == 0;
}

/* W*(k, n) and its mix (INFINITY when no mix fits). */
static double chunk_floor_s(const bmp_problem *pb, int k, int n, layer_count *best_mix)
{
    int L = pb->num_layers;
    double best = INFINITY, budget = pb->budget_bytes[k % pb->p];
    layer_count mix[MIX];
    for (mix[R] = 0; mix[R] < R; mix[R]++) {
        if (!end_option_ok(pb, 0, k == 0, mix[R]))
            continue;
        for (mix[R + 1] = 0; mix[R + 1] < R; mix[R + 1]++) {
            if (!end_option_ok(pb, L - 1, k == pb->chunks - 1, mix[R + 1]))
                continue;
            for (int a = 0; a <= n; a++) {
                for (int b = 0; a + b <= n; b++) {
                    mix[0] = (layer_count)a;
                    mix[1] = (layer_count)b;
                    mix[2] = (layer_count)(n - a - b);
                    bool ok = true;
                    for (int r = 0; r < R; r++)
                        ok = ok && (mix[r] == 0 || pb->allowed[R + r]);
                    double t, bytes;
                    if (!ok)
                        continue;
                    chunk_cost(pb, k, mix, &t, &bytes);
                    if (bytes <= budget && t < best) {
                        best = t;
                        memcpy(best_mix, mix, sizeof mix);
                    }
                }
            }
        }
    }
    return best;
}

static int sizes_init(chunk_sizes *cs, const bmp_problem *pb)
{
    int K = pb->chunks;
    cs->N = pb->num_layers - 2;
    size_t cells = (size_t)K * (cs->N + 1);
    cs->col = calloc(cells, sizeof *cs->col);
    cs->floor_s = calloc(cells, sizeof *cs->floor_s);
    cs->mix = calloc(cells * MIX, sizeof *cs->mix);
    cs->most = calloc((size_t)K, sizeof *cs->most);
    return cs->col && cs->floor_s && cs->mix && cs->most ? 0 : -1;
}

static void sizes_free(chunk_sizes *cs)
{
    free(cs->col);
    free(cs->floor_s);
    free(cs->mix);
    free(cs->most);
}

/* Size columns for every size that fits (up to MAX_CHUNK_LAYERS, far beyond
 * any device's memory); their objective is W*·weight. */
static void sizes_columns(ilp *b, const bmp_problem *pb, chunk_sizes *cs, double weight)
{
    int K = pb->chunks, N = cs->N;
    for (int k = 0; k < K; k++) {
        int fewest = K == 1 ? N : (k == 0 || k == K - 1 ? 0 : 1);
        cs->most[k] = fewest - 1;
        for (int n = fewest; n <= N && n <= MAX_CHUNK_LAYERS; n++) {
            int i = k * (N + 1) + n;
            cs->floor_s[i] = chunk_floor_s(pb, k, n, &cs->mix[i * MIX]);
            if (isinf(cs->floor_s[i]))
                break; /* one layer more never fits where n did not */
            cs->col[i] = ilp_col(b, GLP_BV, 0, 1, cs->floor_s[i] * weight);
            cs->most[k] = n;
        }
    }
}

/* Σ_n size[k,n] = 1 for every chunk, and every middle layer placed. */
static void sizes_rows(ilp *b, const bmp_problem *pb, const chunk_sizes *cs)
{
    int K = pb->chunks, N = cs->N;
    for (int k = 0; k < K; k++) {
        ilp_row(b, GLP_FX, 1, 1);
        for (int n = 0; n <= N; n++)
            ilp_term(b, cs->col[k * (N + 1) + n], 1);
    }
    ilp_row(b, GLP_FX, N, N);
    for (int k = 0; k < K; k++)
        for (int n = 1; n <= N; n++)
            ilp_term(b, cs->col[k * (N + 1) + n], n);
}

/* Both boundary sends of chunk k when it holds n middle layers: its last
 * layer is a middle one unless it is chunk 0 holding layer 0 alone. */
static double sizes_sends_s(const bmp_problem *pb, int k, int n)
{
    if (k == pb->chunks - 1)
        return 0.0;
    return 2 * pb->send_s[k == 0 && n == 0 ? 0 : 1];
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The bottleneck by levels (v = 1).  With t_0 < … < t_{J−1} the distinct
 * values of W*(s,n) + 2c_s over the sizes a stage may take, binaries
 * y_j = [the bottleneck reaches t_j] with y_j ≥ y_{j+1},
 *   y_j ≥ Σ_{n: W*(s,n) + 2c_s ≥ t_j} size[s,n]   for every stage s,
 *   τ ≥ t_0 + Σ_j (t_j − t_{j−1})·y_j.
 * Valid since τ bounds every stage's time from above and W* from below.
 * With τ ≥ F_s + B_s + 2c_s alone the LP relaxation lets every stage take
 * a fraction of a layer; this charges the bottleneck for the largest size a
 * stage puts any weight on.  On Llama 3 405B (126 layers, 16 stages) GLPK
 * went from a 1.5% gap left after 10 s to a proven optimum in 0.5 s. */
static int sizes_level_rows(ilp *b, const bmp_problem *pb, const chunk_sizes *cs, int tau)
{
    int K = pb->chunks, N = cs->N, J = 0;
    double *level = malloc((size_t)K * (N + 1) * sizeof *level);
    int *y = calloc((size_t)K * (N + 1), sizeof *y);
    if (!level || !y) {
        free(level);
        free(y);
        return -1;
    }
    for (int i = 0; i < K * (N + 1); i++)
        if (cs->col[i])
            level[J++] = cs->floor_s[i] + sizes_sends_s(pb, i / (N + 1), i % (N + 1));
    qsort(level, (size_t)J, sizeof *level, compare_doubles);
    int distinct = 0;
    for (int j = 0; j < J; j++)
        if (distinct == 0 || level[j] > level[distinct - 1])
            level[distinct++] = level[j];
    for (int j = 1; j < distinct; j++)
        y[j] = ilp_col(b, GLP_BV, 0, 1, 0);
    ilp_row(b, GLP_LO, distinct ? level[0] : 0, 0);
    ilp_term(b, tau, 1);
    for (int j = 1; j < distinct; j++)
        ilp_term(b, y[j], -(level[j] - level[j - 1]));
    for (int j = 1; j < distinct; j++) {
        if (j + 1 < distinct) {
            ilp_row(b, GLP_LO, 0, 0);
            ilp_term(b, y[j], 1);
            ilp_term(b, y[j + 1], -1);
        }
        for (int k = 0; k < K; k++) {
            ilp_row(b, GLP_LO, 0, 0);
            ilp_term(b, y[j], 1);
            for (int n = 0; n <= N; n++) {
                int i = k * (N + 1) + n;
                if (cs->col[i] && cs->floor_s[i] + sizes_sends_s(pb, k, n) >= level[j])
                    ilp_term(b, cs->col[i], -1);
            }
        }
    }
    free(y);
    free(level);
    return 0;
}

/* Writes the plan of chosen sizes and mixes (mix_of(k) per chunk). */
static void sizes_decode(const bmp_problem *pb, const layer_count *const *mix_of, plan *pl)
{
    int L = pb->num_layers, K = pb->chunks;
    int l = 1; /* next middle layer; layer 0 opens chunk 0 */
    pl->chunk_start[0] = 0;
    pl->recompute[0] = (recompute_kind)mix_of[0][R];
    pl->recompute[L - 1] = (recompute_kind)mix_of[K - 1][R + 1];
    for (int k = 0; k < K; k++) {
        for (int r = 0; r < R; r++)
            for (int i = 0; i < mix_of[k][r] && l < L - 1; i++)
                pl->recompute[l++] = (recompute_kind)r;
        pl->chunk_start[k + 1] = k == K - 1 ? L : l;
    }
}

/* ---- the stage-pattern form: identical layers, v = 1 -------------------- */

/* With one chunk per stage the stages share nothing but the layer count, so
 * the fastest fitting mix of a stage of n layers is its best choice whatever
 * the others do: n[s,r] = mix_r(s, n) for the chosen n, and the ILP only
 * chooses sizes.  Rows: one size per stage, Σ n = N, τ ≥ W*(s,n) + 2c_s of
 * the chosen size, the level rows; objective Σ W*·size + (m − 1)·τ. */
static int pattern_build(ilp *b, const bmp_problem *pb, chunk_sizes *cs)
{
    int K = pb->chunks, N = cs->N;
    sizes_columns(b, pb, cs, 1.0);
    int tau = ilp_col(b, GLP_CV, 0, INFINITY, pb->m - 1.0);
    sizes_rows(b, pb, cs);
    for (int k = 0; k < K; k++) {
        ilp_row(b, GLP_LO, 0, 0);
        ilp_term(b, tau, 1);
        for (int n = 0; n <= N; n++) {
            int i = k * (N + 1) + n;
            ilp_term(b, cs->col[i], -(cs->floor_s[i] + sizes_sends_s(pb, k, n)));
        }
    }
    return sizes_level_rows(b, pb, cs, tau);
}

static int pattern_decode(const bmp_problem *pb, const chunk_sizes *cs, glp_prob *lp, plan *pl)
{
    int K = pb->chunks, N = cs->N;
    const layer_count **mix_of = calloc((size_t)K, sizeof *mix_of);
    if (!mix_of)
        return -1;
    for (int i = 0; i < K * (N + 1); i++)
        if (cs->col[i] && glp_mip_col_val(lp, cs->col[i]) > 0.5)
            mix_of[i / (N + 1)] = &cs->mix[i * MIX];
    sizes_decode(pb, mix_of, pl);
    free(mix_of);
    return 0;
}

/* ---- the integer-count form: identical layers, v > 1 -------------------- */

/* The chunks of a stage share its memory, so a chunk's best mix depends on
 * the others: integer n[k,r], binary z[k,r] = [n[k,r] > 0] for the
 * transient, binaries for the end layers' options, exact memory rows per
 * stage; the size binaries only add the valid cuts Σ_r n[k,r] = Σ_n n·size
 * and F_k + B_k ≥ Σ_n W*(k,n)·size[k,n] (W* computed with the chunk alone
 * on its stage is a lower bound). */
typedef struct count_cols {
    int *n;       /* [K·R] middle layers of chunk k with option r */
    int *z;       /* [K·R] n[k,r] > 0, when option r has a transient */
    int first[R]; /* layer 0 (chunk 0) with option r */
    int last[R];  /* layer L−1 (chunk K−1) with option r */
    int tau;
} count_cols;

static void count_columns(ilp *b, const bmp_problem *pb, count_cols *cc, int *transient_col)
{
    int L = pb->num_layers, K = pb->chunks, N = L - 2;
    double inv_v = 1.0 / pb->v;
    for (int k = 0; k < K; k++) {
        for (int r = 0; r < R; r++) {
            if (!pb->allowed[R + r])
                continue;
            cc->n[k * R + r] = ilp_col(b, GLP_IV, 0, N, pb->time_s[R + r] * inv_v);
            if (pb->transient_bytes[R + r] > 0)
                cc->z[k * R + r] = ilp_col(b, GLP_BV, 0, 1, 0);
        }
    }
    for (int r = 0; r < R; r++) {
        if (pb->allowed[r])
            cc->first[r] = ilp_col(b, GLP_BV, 0, 1, pb->time_s[r] * inv_v);
        if (pb->allowed[(L - 1) * R + r])
            cc->last[r] = ilp_col(b, GLP_BV, 0, 1, pb->time_s[(L - 1) * R + r] * inv_v);
    }
    cc->tau = ilp_col(b, GLP_CV, 0, INFINITY, pb->m - 1.0 / pb->v);
    for (int k = 0; k < K; k++)
        transient_col[k] = ilp_col(b, GLP_CV, 0, INFINITY, 0);
}

/* Σ_r coefficient(r)·n[k,r] added to the current row. */
static void count_terms(ilp *b, const count_cols *cc, int k, const double *per_option, double scale)
{
    for (int r = 0; r < R; r++)
        ilp_term(b, cc->n[k * R + r], scale * per_option[r]);
}

/* Terms of the end layers that chunk k holds (layer 0 in chunk 0, layer
 * L−1 in chunk K−1), coefficients per option, for one row. */
static void count_end_terms(ilp *b, const bmp_problem *pb, const count_cols *cc, int k,
                            const double *first, const double *last, double scale)
{
    for (int r = 0; r < R; r++) {
        if (k == 0)
            ilp_term(b, cc->first[r], scale * first[r]);
        if (k == pb->chunks - 1)
            ilp_term(b, cc->last[r], scale * last[r]);
    }
}

static void count_structure_rows(ilp *b, const bmp_problem *pb, const count_cols *cc,
                                 const chunk_sizes *cs)
{
    int K = pb->chunks, N = cs->N;
    static const double one[R] = {1, 1, 1};
    ilp_row(b, GLP_FX, 1, 1);
    for (int r = 0; r < R; r++)
        ilp_term(b, cc->first[r], 1);
    ilp_row(b, GLP_FX, 1, 1);
    for (int r = 0; r < R; r++)
        ilp_term(b, cc->last[r], 1);
    sizes_rows(b, pb, cs);
    for (int k = 0; k < K; k++) { /* Σ_r n[k,r] = Σ_n n·size[k,n] */
        ilp_row(b, GLP_FX, 0, 0);
        count_terms(b, cc, k, one, 1);
        for (int n = 1; n <= N; n++)
            ilp_term(b, cs->col[k * (N + 1) + n], -n);
        for (int r = 0; r < R; r++) { /* n[k,r] ≤ most_k·z[k,r] */
            if (!cc->z[k * R + r])
                continue;
            ilp_row(b, GLP_UP, 0, 0);
            ilp_term(b, cc->n[k * R + r], 1);
            ilp_term(b, cc->z[k * R + r], -fmax(cs->most[k], 1));
        }
    }
}

static void count_stage_rows(ilp *b, const bmp_problem *pb, const count_cols *cc,
                             const chunk_sizes *cs, const int *transient_col)
{
    int L = pb->num_layers, K = pb->chunks, p = pb->p, N = cs->N;
    const double *last_layer = &pb->time_s[(L - 1) * R];
    double ms = memory_scale(pb);
    for (int s = 0; s < p; s++) {
        double sends = 0;
        for (int k = s; k < K - 1; k += p)
            sends += 2 * pb->send_s[1]; /* chunk k ends with a middle layer ... */
        ilp_row(b, GLP_LO, sends, 0);
        ilp_term(b, cc->tau, 1);
        if (s == 0) /* ... unless it is chunk 0 holding layer 0 alone */
            ilp_term(b, cs->col[0], -2 * (pb->send_s[0] - pb->send_s[1]));
        for (int k = s; k < K; k += p) {
            count_terms(b, cc, k, &pb->time_s[R], -1);
            count_end_terms(b, pb, cc, k, pb->time_s, last_layer, -1);
        }
        for (int k = s; k < K; k += p) { /* F_k + B_k ≥ Σ_n W*(k,n)·size[k,n] */
            ilp_row(b, GLP_LO, 0, 0);
            count_terms(b, cc, k, &pb->time_s[R], 1);
            count_end_terms(b, pb, cc, k, pb->time_s, last_layer, 1);
            for (int n = 0; n <= N; n++)
                ilp_term(b, cs->col[k * (N + 1) + n], -cs->floor_s[k * (N + 1) + n]);
        }

        for (int i = pb->row_begin[s]; i < pb->row_begin[s + 1]; i++) {
            ilp_row(b, GLP_UP, 0, pb->budget_bytes[s] * ms);
            ilp_term(b, transient_col[pb->row_chunk[i] * p + s], 1);
            for (int k = s; k < K; k += p) {
                double middle[R], first[R], last[R], held = pb->row_held[i * pb->v + k / p];
                memory_coefficients(pb, 1, s, held, middle);
                memory_coefficients(pb, 0, s, held, first);
                memory_coefficients(pb, L - 1, s, held, last);
                count_terms(b, cc, k, middle, ms);
                count_end_terms(b, pb, cc, k, first, last, ms);
            }
        }
        for (int k = s; k < K; k += p) { /* R_k ≥ t^r·z[k,r], and the end layers' */
            for (int r = 0; r < R; r++) {
                if (!cc->z[k * R + r])
                    continue;
                ilp_row(b, GLP_LO, 0, 0);
                ilp_term(b, transient_col[k], 1);
                ilp_term(b, cc->z[k * R + r], -ms * pb->transient_bytes[R + r]);
            }
            if (k == 0 || k == K - 1) {
                ilp_row(b, GLP_LO, 0, 0);
                ilp_term(b, transient_col[k], 1);
                count_end_terms(b, pb, cc, k, pb->transient_bytes,
                                &pb->transient_bytes[(L - 1) * R], -ms);
            }
        }
    }
}

static int count_build(ilp *b, const bmp_problem *pb, count_cols *cc, chunk_sizes *cs,
                       int *transient_col)
{
    cc->n = calloc((size_t)pb->chunks * R, sizeof(int));
    cc->z = calloc((size_t)pb->chunks * R, sizeof(int));
    if (!cc->n || !cc->z)
        return -1;
    count_columns(b, pb, cc, transient_col);
    sizes_columns(b, pb, cs, 0.0);
    count_structure_rows(b, pb, cc, cs);
    count_stage_rows(b, pb, cc, cs, transient_col);
    return 0;
}

static int count_decode(const bmp_problem *pb, const count_cols *cc, glp_prob *lp, plan *pl)
{
    int K = pb->chunks;
    layer_count *mixes = calloc((size_t)K * MIX, sizeof *mixes);
    const layer_count **mix_of = calloc((size_t)K, sizeof *mix_of);
    if (!mixes || !mix_of) {
        free(mixes);
        free(mix_of);
        return -1;
    }
    for (int k = 0; k < K; k++) {
        layer_count *mix = &mixes[k * MIX];
        for (int r = 0; r < R; r++) {
            int j = cc->n[k * R + r];
            mix[r] = (layer_count)(j ? lround(glp_mip_col_val(lp, j)) : 0);
            if (k == 0 && cc->first[r] && glp_mip_col_val(lp, cc->first[r]) > 0.5)
                mix[R] = (layer_count)r;
            if (k == K - 1 && cc->last[r] && glp_mip_col_val(lp, cc->last[r]) > 0.5)
                mix[R + 1] = (layer_count)r;
        }
        mix_of[k] = mix;
    }
    sizes_decode(pb, mix_of, pl);
    free(mixes);
    free(mix_of);
    return 0;
}

/* ---- a first incumbent ---------------------------------------------------- */

/* On a large model GLPK's branch-and-cut may find no integer point for a
 * long time (the binary form of 126 layers × 16 stages: none in 10 s; the
 * interleaved count form of Llama 3 405B: none in 10 s), so those forms
 * start from a heuristic plan handed to GLPK as its first incumbent
 * (glp_ios_heur_sol): whatever the time limit, the planner then returns a
 * plan and the gap GLPK proves for it.
 *
 * Recompute of a stage, greedily: for each cap on the recompute transient
 * (none, the largest selective one, the largest of all), start every layer
 * at its least-memory option and repeatedly take the upgrade that saves the
 * most time per byte and still fits; keep the fastest of the three.
 * Partition: with one chunk per stage, a DP over stages finds the smallest
 * bottleneck τ* under these greedy stage times, a second one the least
 * Σ_s (F_s + B_s) among partitions whose stages stay within τ*; with v > 1,
 * Megatron's even split of the layers over the p·v chunks. */

/* Greedy recompute of stage s's layers (chunks s, s+p, … of `starts`):
 * their F + B, or INFINITY when nothing fits; options to choice[l] when
 * non-NULL. */
static double greedy_stage_work_s(const bmp_problem *pb, int s, const int *starts,
                                  recompute_kind *choice)
{
    int n = 0, layer[pb->num_layers];
    double alpha[pb->num_layers], base = 0, best = INFINITY, budget = pb->budget_bytes[s];
    recompute_kind cur[pb->num_layers];
    for (int k = s; k < pb->chunks; k += pb->p) {
        for (int l = starts[k]; l < starts[k + 1]; l++, n++) {
            layer[n] = l;
            alpha[n] = pb->inflight[k];
            base += static_bytes(pb, l, s);
        }
    }
    if (base > budget)
        return INFINITY;
    for (int c = 0; c < R; c++) {
        double cap = 0; /* c = 0: no transient; 1: selective's; 2: every option's */
        for (int i = 0; i < n; i++)
            for (int r = 0; r <= c; r++)
                if (pb->allowed[layer[i] * R + r])
                    cap = fmax(cap, pb->transient_bytes[layer[i] * R + r]);
        double used = base + cap, time = 0;
        bool ok = true;
        for (int i = 0; i < n && ok; i++) { /* least kept bytes within the cap */
            const double *a = &pb->keep_bytes[layer[i] * R];
            int pick = -1;
            for (int r = 0; r < R; r++)
                if (pb->allowed[layer[i] * R + r] && pb->transient_bytes[layer[i] * R + r] <= cap &&
                    (pick < 0 || a[r] < a[pick]))
                    pick = r;
            ok = pick >= 0;
            if (ok) {
                cur[i] = (recompute_kind)pick;
                used += alpha[i] * a[pick];
                time += pb->time_s[layer[i] * R + pick];
            }
        }
        if (!ok || used > budget)
            continue;
        for (;;) { /* the upgrade with the most time saved per byte that fits */
            int bi = -1, br = 0;
            double best_ratio = -1;
            for (int i = 0; i < n; i++) {
                const double *t = &pb->time_s[layer[i] * R], *a = &pb->keep_bytes[layer[i] * R];
                for (int r = 0; r < R; r++) {
                    double extra = alpha[i] * (a[r] - a[cur[i]]), saved = t[cur[i]] - t[r];
                    if (!pb->allowed[layer[i] * R + r] ||
                        pb->transient_bytes[layer[i] * R + r] > cap || saved <= 0 ||
                        used + extra > budget || saved / fmax(extra, 1.0) <= best_ratio)
                        continue;
                    best_ratio = saved / fmax(extra, 1.0);
                    bi = i;
                    br = r;
                }
            }
            if (bi < 0)
                break;
            const double *t = &pb->time_s[layer[bi] * R], *a = &pb->keep_bytes[layer[bi] * R];
            used += alpha[bi] * (a[br] - a[cur[bi]]);
            time -= t[cur[bi]] - t[br];
            cur[bi] = (recompute_kind)br;
        }
        if (time < best) {
            best = time;
            for (int i = 0; choice && i < n; i++)
                choice[layer[i]] = cur[i];
        }
    }
    return best;
}

/* v = 1: stage s holding [i, j), greedy work plus its boundary sends in
 * the bottleneck (with_sends) or not. */
static double greedy_range_s(const bmp_problem *pb, int s, int i, int j, bool with_sends)
{
    int starts[pb->chunks + 1];
    starts[s] = i;
    starts[s + 1] = j;
    double t = greedy_stage_work_s(pb, s, starts, NULL);
    return with_sends && s < pb->p - 1 ? t + 2 * pb->send_s[j - 1] : t;
}

/* v = 1: the two DPs of the heuristic into pl->chunk_start; -1 when no
 * partition fits. */
static int heuristic_partition(const bmp_problem *pb, plan *pl)
{
    int L = pb->num_layers, p = pb->p, rc = -1;
    size_t cells = (size_t)(p + 1) * (L + 1);
    double *bottleneck = malloc(cells * sizeof *bottleneck), *work = malloc(cells * sizeof *work);
    int *from = malloc(cells * sizeof *from);
    if (!bottleneck || !work || !from)
        goto done;
#define AT(s, j) ((s) * (L + 1) + (j))
    for (size_t i = 0; i < cells; i++)
        bottleneck[i] = work[i] = INFINITY;
    bottleneck[AT(0, 0)] = work[AT(0, 0)] = 0;
    for (int s = 0; s < p; s++) /* the smallest bottleneck */
        for (int j = s + 1; j <= L - (p - 1 - s); j++)
            for (int i = j - 1; i >= s; i--) {
                double t = greedy_range_s(pb, s, i, j, true);
                if (isinf(t))
                    break; /* a longer range does not fit either */
                bottleneck[AT(s + 1, j)] =
                    fmin(bottleneck[AT(s + 1, j)], fmax(bottleneck[AT(s, i)], t));
            }
    double tau = bottleneck[AT(p, L)] * (1 + 1e-12);
    for (int s = 0; s < p && isfinite(tau); s++) /* the least total work within it */
        for (int j = s + 1; j <= L - (p - 1 - s); j++)
            for (int i = j - 1; i >= s; i--) {
                double t = greedy_range_s(pb, s, i, j, true);
                if (isinf(t))
                    break;
                double w = work[AT(s, i)] + greedy_range_s(pb, s, i, j, false);
                if (t <= tau && w < work[AT(s + 1, j)]) {
                    work[AT(s + 1, j)] = w;
                    from[AT(s + 1, j)] = i;
                }
            }
    if (isinf(work[AT(p, L)]))
        goto done;
    pl->chunk_start[p] = L;
    for (int s = p; s > 0; s--)
        pl->chunk_start[s - 1] = from[AT(s, pl->chunk_start[s])];
#undef AT
    rc = 0;
done:
    free(bottleneck);
    free(work);
    free(from);
    return rc;
}

/* The heuristic plan into pl; -1 when it finds none that fits. */
static int heuristic_plan(const bmp_problem *pb, plan *pl)
{
    int K = pb->chunks, L = pb->num_layers;
    if (pb->v == 1) {
        if (heuristic_partition(pb, pl))
            return -1;
    } else {
        for (int k = 0; k <= K; k++)
            pl->chunk_start[k] = (int)((long)k * L / K);
    }
    for (int s = 0; s < pb->p; s++)
        if (isinf(greedy_stage_work_s(pb, s, pl->chunk_start, pl->recompute)))
            return -1;
    return 0;
}

/* The binary form's column values for plan pl (1-based, GLPK's layout). */
static double *binary_point(const bmp_problem *pb, const binary_cols *bc, const int *transient_col,
                            int num_cols, const plan *pl)
{
    int K = pb->chunks;
    double *x = calloc((size_t)num_cols + 1, sizeof *x), transient[K];
    if (!x)
        return NULL;
    for (int k = 0; k < K; k++) {
        for (int l = pl->chunk_start[k]; l < pl->chunk_start[k + 1]; l++) {
            x[bc->q[(l * K + k) * R + pl->recompute[l]]] = 1;
            for (int later = k; later < K - 1; later++)
                x[bc->y[l * K + later]] = 1;
        }
    }
    x[bc->tau] = plan_bottleneck_s(pb, pl, NULL, transient);
    for (int k = 0; k < K; k++)
        x[transient_col[k]] = transient[k];
    return x;
}

/* The count form's column values for plan pl, or NULL when pl uses an
 * option or a chunk size the form left out. */
static double *count_point(const bmp_problem *pb, const count_cols *cc, const chunk_sizes *cs,
                           const int *transient_col, int num_cols, const plan *pl)
{
    int L = pb->num_layers, K = pb->chunks, N = cs->N;
    double *x = calloc((size_t)num_cols + 1, sizeof *x), transient[K];
    if (!x)
        return NULL;
    bool ok = cc->first[pl->recompute[0]] && cc->last[pl->recompute[L - 1]];
    x[cc->first[pl->recompute[0]]] = 1;
    x[cc->last[pl->recompute[L - 1]]] = 1;
    for (int k = 0; k < K && ok; k++) {
        int counts[R] = {0}, first = k == 0 ? 1 : pl->chunk_start[k];
        int end = k == K - 1 ? L - 1 : pl->chunk_start[k + 1];
        for (int l = first; l < end; l++)
            counts[pl->recompute[l]]++;
        for (int r = 0; r < R; r++) {
            ok = ok && (counts[r] == 0 || cc->n[k * R + r]);
            x[cc->n[k * R + r]] = counts[r];
            x[cc->z[k * R + r]] = counts[r] > 0;
        }
        ok = ok && end - first >= 0 && cs->col[k * (N + 1) + (end - first)];
        if (ok)
            x[cs->col[k * (N + 1) + (end - first)]] = 1;
    }
    x[cc->tau] = plan_bottleneck_s(pb, pl, NULL, transient);
    for (int k = 0; k < K; k++)
        x[transient_col[k]] = transient[k];
    x[0] = 0; /* absent columns (index 0) were written here */
    if (!ok) {
        free(x);
        return NULL;
    }
    return x;
}

/* ---- solving ------------------------------------------------------------ */

typedef struct solve_info {
    double gap;              /* relative MIP gap reported by GLPK at the last callback */
    const double *incumbent; /* offered once, at the first heuristic call */
} solve_info;

static void on_tree(glp_tree *tree, void *info)
{
    solve_info *si = info;
    if (glp_ios_reason(tree) == GLP_IHEUR && si->incumbent) {
        glp_ios_heur_sol(tree, si->incumbent);
        si->incumbent = NULL;
    }
    si->gap = glp_ios_mip_gap(tree);
}

static double wall_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

typedef struct solve_out {
    int status; /* glp_mip_status */
    int rc;     /* glp_intopt */
    double gap;
} solve_out;

/* Branch-and-cut with a time limit.  An incumbent needs the problem's own
 * columns, so it turns GLPK's presolver off (the root LP is then solved
 * here, within the same limit).  branching: a glp_iocp br_tech. */
static void solve(glp_prob *lp, double time_limit_s, int branching, const double *incumbent,
                  solve_out *out)
{
    glp_iocp parm;
    solve_info si = {DBL_MAX, incumbent};
    double start = wall_s();
    glp_init_iocp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.br_tech = branching;
    parm.tol_obj = 1e-10; /* the tests compare with brute force to 1e-9 */
    parm.cb_func = on_tree;
    parm.cb_info = &si;
    parm.presolve = incumbent ? GLP_OFF : GLP_ON;
    out->rc = 0;
    if (incumbent) {
        glp_smcp lp_parm;
        glp_init_smcp(&lp_parm);
        lp_parm.msg_lev = GLP_MSG_OFF;
        lp_parm.presolve = GLP_ON; /* 2.7 s instead of 5 s on the 126 × 16 × 3 root LP */
        if (time_limit_s > 0)
            lp_parm.tm_lim = (int)ceil(time_limit_s * 1000.0);
        out->rc = glp_simplex(lp, &lp_parm);
    }
    double left = time_limit_s - (wall_s() - start);
    if (time_limit_s > 0)
        parm.tm_lim = (int)fmax(1.0, ceil(left * 1000.0));
    if (out->rc == 0 && (time_limit_s <= 0 || left > 0))
        out->rc = glp_intopt(lp, &parm);
    out->status = glp_mip_status(lp);
    out->gap = out->status == GLP_OPT ? 0.0 : (si.gap >= DBL_MAX ? INFINITY : si.gap);
}

/* Builds and solves one round of the ILP in the chosen form and decodes its
 * solution into pl.  Returns 0 with a plan, or NP_EXIT_NOFIT / INTERNAL. */
static int solve_round(const bmp_problem *pb, bool counts, double time_limit_s, plan *pl,
                       solve_out *so, np_error *err)
{
    ilp b = {0};
    int *transient_col = calloc((size_t)pb->chunks, sizeof(int)); /* R_k per chunk */
    binary_cols bc = {0};
    count_cols cc = {0};
    chunk_sizes cs = {0};
    int rc = 0, built = -1;
    b.lp = glp_create_prob();
    glp_set_obj_dir(b.lp, GLP_MIN);
    if (!transient_col)
        built = -1;
    else if (!counts)
        built = binary_build(&b, pb, &bc, transient_col);
    else if (sizes_init(&cs, pb) == 0)
        built =
            pb->v == 1 ? pattern_build(&b, pb, &cs) : count_build(&b, pb, &cc, &cs, transient_col);
    if (built || b.failed) {
        rc = np_error_set(err, NP_EXIT_INTERNAL, "<bmpipe>", "", 0, "out of memory");
        goto done;
    }
    glp_load_matrix(b.lp, b.ne, b.ia, b.ja, b.ar);
    double *incumbent = NULL; /* the pattern form (counts, v = 1) needs none */
    int num_cols = glp_get_num_cols(b.lp);
    if ((!counts || pb->v > 1) && heuristic_plan(pb, pl) == 0)
        incumbent = counts ? count_point(pb, &cc, &cs, transient_col, num_cols, pl)
                           : binary_point(pb, &bc, transient_col, num_cols, pl);
    /* The pattern form's last columns are its bottleneck levels: branching
     * on the last fractional variable settles the bottleneck first, which
     * proves Llama 3 405B optimal in 0.2 s instead of 1–10 s. */
    int branching = counts && pb->v == 1 ? GLP_BR_LFV : GLP_BR_DTH;
    int previous = glp_term_out(GLP_OFF); /* a planner never prints */
    solve(b.lp, time_limit_s, branching, incumbent, so);
    glp_term_out(previous);
    if (so->status != GLP_OPT && so->status != GLP_FEAS && incumbent) {
        /* The root LP did not finish within the limit: the heuristic plan,
         * already in pl, with no bound proven. */
        free(incumbent);
        so->status = GLP_FEAS;
        so->gap = INFINITY;
        goto done;
    }
    free(incumbent);
    if (so->status != GLP_OPT && so->status != GLP_FEAS) {
        if (so->rc == GLP_ETMLIM)
            rc = np_error_set(err, NP_EXIT_NOFIT, "<bmpipe>", "", 0,
                              "no plan that fits in memory found within the %.1f s time limit",
                              time_limit_s);
        else
            rc = np_error_set(err, NP_EXIT_NOFIT, "<bmpipe>", "", 0,
                              "no split of the %d layers into %d model chunks, with any "
                              "recompute option per layer, fits in %.2f GB per device "
                              "(%.2f GB of it workspace)",
                              pb->num_layers, pb->chunks, pb->cm->hbm_bytes / 1e9,
                              pb->cm->workspace_bytes / 1e9);
        goto done;
    }
    if (!counts)
        binary_decode(pb, &bc, b.lp, pl);
    else if (pb->v == 1 ? pattern_decode(pb, &cs, b.lp, pl) : count_decode(pb, &cc, b.lp, pl))
        rc = np_error_set(err, NP_EXIT_INTERNAL, "<bmpipe>", "", 0, "out of memory");
done:
    ilp_free(&b);
    free(transient_col);
    free(bc.q);
    free(bc.y);
    free(cc.n);
    free(cc.z);
    sizes_free(&cs);
    return rc;
}

/* The largest excess over capacity of stage s under the plan (≤ 0 fits). */
static double stage_excess_bytes(const cm_model *cm, const plan *pl, int s)
{
    mem_stage st;
    mem_stage_bytes(cm, pl, s, &st);
    return st.total_bytes - st.capacity_bytes;
}

/* Cuts the budget of every overflowing stage; false when none overflows. */
static bool tighten_budgets(bmp_problem *pb, const plan *pl)
{
    bool any = false;
    for (int s = 0; s < pb->p; s++) {
        double excess = stage_excess_bytes(pb->cm, pl, s);
        if (excess > 0) {
            pb->budget_bytes[s] -= excess + 1e-9 * pb->cm->hbm_bytes;
            any = true;
        }
    }
    return any;
}

/* The memory rows are memory.c's replayed peak for every schedule
 * (interleaved included: one row per held vector), so a proven ILP optimum
 * is the optimum among the plans mem_check_fits() accepts. */
static void set_status(plan *pl, const solve_out *so, bool counts)
{
    pl->solver_gap = so->gap;
    snprintf(pl->solver_status, sizeof pl->solver_status, "%s, %s form",
             so->status != GLP_OPT ? "time limit" : "optimal", counts ? "count" : "binary");
}

int planner_bmpipe_form(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                        const planner_options *o, bmpipe_form form, plan *out, np_error *err)
{
    int p = w->parallel.pipeline_model_parallel_size;
    int v = o->schedule == SCHED_INTERLEAVED ? o->num_chunks : 1;
    int m = wl_num_micro_batches(w);
    bmp_problem pb = {0};
    double start = wall_s();
    if (p < 1 || v < 1 || p * v > cm->num_layers)
        return np_error_set(err, NP_EXIT_INPUT, w->path, "parallel.pipeline_model_parallel_size", 0,
                            "BMPipe needs at least one layer per model chunk: %d layers, "
                            "%d stages × %d virtual chunks",
                            cm->num_layers, p, v);
    if (problem_init(&pb, cm, c, p, v, m, o->schedule) || plan_init(out, p, v, cm->num_layers)) {
        problem_free(&pb);
        return np_error_set(err, NP_EXIT_INTERNAL, "<bmpipe>", "", 0, "out of memory");
    }
    planner_plan_basics(out, w, o);
    bool identical = middle_identical(&pb);
    if (form == BMPIPE_FORM_COUNTS && !identical) {
        problem_free(&pb);
        plan_free(out);
        return np_error_set(err, NP_EXIT_INPUT, "<bmpipe>", "", 0,
                            "the integer-count form needs identical layers between the first "
                            "and the last");
    }
    bool counts = form == BMPIPE_FORM_COUNTS || (form == BMPIPE_FORM_AUTO && identical);
    int rc = 0;
    solve_out so = {0};
    for (int round = 0; round < MAX_REPAIR_ROUNDS; round++) {
        double left = o->time_limit_s > 0 ? o->time_limit_s - (wall_s() - start) : 0;
        if (o->time_limit_s > 0 && left <= 0.001 && round > 0)
            break;
        rc = solve_round(&pb, counts, o->time_limit_s > 0 ? fmax(left, 0.001) : 0, out, &so, err);
        if (rc || !tighten_budgets(&pb, out))
            break;
    }
    if (!rc) {
        set_status(out, &so, counts);
        out->predicted_iteration_s = problem_objective(&pb, out);
    } else {
        plan_free(out);
    }
    problem_free(&pb);
    return rc;
}

int planner_bmpipe(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                   const planner_options *o, plan *out, np_error *err)
{
    return planner_bmpipe_form(cm, c, w, o, BMPIPE_FORM_AUTO, out, err);
}
