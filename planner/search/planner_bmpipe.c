/*
 * planner_bmpipe.c -- BMPipe: bubble–memory co-optimisation as an integer
 * linear program solved by GLPK's branch-and-cut (glp_intopt).
 *
 * Design.  The planner chooses, at once, where the pipeline is cut and which
 * recompute option (none, selective, full) every layer uses, so that the
 * stages balance under each stage's own memory budget: early stages hold
 * more micro-batches in flight and must recompute more; later ones can keep
 * activations and take more layers.  The formulation follows docs/planners.md
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
 *   c_k = Σ_l (Y[l,k] − Y[l+1,k])·send_l, send_l = cm_boundary_s(layer l,
 *         scale-out): the boundary tensor leaving chunk k (its send, plus
 *         the receiver's TP all-gather under scatter/gather p2p)
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
 * ZB-H1 min(p, m), ZB-H2 min(2p−1, m)); for the interleaved schedule the held counts at every
 * backward of the order memory.c replays (Megatron's warm-up, then one
 * forward and one backward; sched_step_at()), constants of (p, v, m, s), one
 * row per distinct (H, j) with dominated ones dropped (p = 2, v = 2: at most
 * 4 rows per stage).  docs/planners.md's α[v][s], every chunk's count at the
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
 * first incumbent (see bmpipe_incumbent.c), so the planner always
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
 *
 * Files.  bmpipe_problem.c the problem from the cost model, bmpipe_rows.c
 * the memory rows, bmpipe_glpk.c the triplet builder and GLPK's driver,
 * bmpipe_binary.c the binary form, bmpipe_sizes.c the chunk sizes and the
 * stage-pattern form, bmpipe_count.c the integer-count form,
 * bmpipe_incumbent.c the heuristic first incumbent; bmpipe_internal.h
 * declares what they share.  This file holds the rounds of solve and
 * repair and the planner's entry points.
 */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bmpipe_internal.h"
#include "memory.h"

#define MAX_REPAIR_ROUNDS 4

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
        built = bmp_binary_build(&b, pb, &bc, transient_col);
    else if (bmp_sizes_init(&cs, pb) == 0)
        built = pb->v == 1 ? bmp_pattern_build(&b, pb, &cs)
                           : bmp_count_build(&b, pb, &cc, &cs, transient_col);
    if (built || b.failed) {
        rc = np_error_set(err, NP_EXIT_INTERNAL, "<bmpipe>", "", 0, "out of memory");
        goto done;
    }
    glp_load_matrix(b.lp, b.ne, b.ia, b.ja, b.ar);
    double *incumbent = NULL; /* the pattern form (counts, v = 1) needs none */
    int num_cols = glp_get_num_cols(b.lp);
    if ((!counts || pb->v > 1) && bmp_heuristic_plan(pb, pl) == 0)
        incumbent = counts ? bmp_count_point(pb, &cc, &cs, transient_col, num_cols, pl)
                           : bmp_binary_point(pb, &bc, transient_col, num_cols, pl);
    /* The pattern form's last columns are its bottleneck levels: branching
     * on the last fractional variable settles the bottleneck first, which
     * proves Llama 3 405B optimal in 0.2 s instead of 1–10 s. */
    int branching = counts && pb->v == 1 ? GLP_BR_LFV : GLP_BR_DTH;
    int previous = glp_term_out(GLP_OFF); /* a planner never prints */
    bmp_solve(b.lp, time_limit_s, branching, incumbent, so);
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
        bmp_binary_decode(pb, &bc, b.lp, pl);
    else if (pb->v == 1 ? bmp_pattern_decode(pb, &cs, b.lp, pl)
                        : bmp_count_decode(pb, &cc, b.lp, pl))
        rc = np_error_set(err, NP_EXIT_INTERNAL, "<bmpipe>", "", 0, "out of memory");
done:
    bmp_ilp_free(&b);
    free(transient_col);
    free(bc.q);
    free(bc.y);
    free(cc.n);
    free(cc.z);
    bmp_sizes_free(&cs);
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
    double start = bmp_wall_s();
    if (p < 1 || v < 1 || p * v > cm->num_layers)
        return wl_key_error(err, NP_EXIT_INPUT, w, "parallel.pipeline_model_parallel_size",
                            "BMPipe needs at least one layer per model chunk: %d layers, "
                            "%d stages × %d virtual chunks",
                            cm->num_layers, p, v);
    if (bmp_problem_init(&pb, cm, c, p, v, m, o->schedule) ||
        plan_init(out, p, v, cm->num_layers)) {
        bmp_problem_free(&pb);
        return np_error_set(err, NP_EXIT_INTERNAL, "<bmpipe>", "", 0, "out of memory");
    }
    planner_plan_basics(out, w, o);
    bool identical = bmp_middle_identical(&pb);
    if (form == BMPIPE_FORM_COUNTS && !identical) {
        bmp_problem_free(&pb);
        plan_free(out);
        return np_error_set(err, NP_EXIT_INPUT, "<bmpipe>", "", 0,
                            "the integer-count form needs identical layers between the first "
                            "and the last");
    }
    bool counts = form == BMPIPE_FORM_COUNTS || (form == BMPIPE_FORM_AUTO && identical);
    int rc = 0;
    solve_out so = {0};
    for (int round = 0; round < MAX_REPAIR_ROUNDS; round++) {
        double left = o->time_limit_s > 0 ? o->time_limit_s - (bmp_wall_s() - start) : 0;
        if (o->time_limit_s > 0 && left <= 0.001 && round > 0)
            break;
        rc = solve_round(&pb, counts, o->time_limit_s > 0 ? fmax(left, 0.001) : 0, out, &so, err);
        if (rc || !tighten_budgets(&pb, out))
            break;
    }
    if (!rc) {
        set_status(out, &so, counts);
        out->predicted_iteration_s = bmp_problem_objective(&pb, out);
    } else {
        plan_free(out);
    }
    bmp_problem_free(&pb);
    return rc;
}

int planner_bmpipe(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                   const planner_options *o, plan *out, np_error *err)
{
    return planner_bmpipe_form(cm, c, w, o, BMPIPE_FORM_AUTO, out, err);
}
