/*
 * bmpipe_glpk.c -- BMPipe's side of GLPK: a small builder over GLPK's
 * triplet matrix (columns, rows, terms; running out of memory is remembered
 * and reported once the form is built) and the branch-and-cut driver: one
 * time limit over the root LP and the search, a first incumbent handed to
 * GLPK at its first heuristic call, and the status and relative MIP gap
 * reported back.  The forms build through the builder and read the solution
 * with glp_mip_col_val(); only this file sets GLPK's solver parameters.
 */

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "bmpipe_internal.h"

/* A column in [lb, ub] (ub = INFINITY: no upper bound). */
int bmp_ilp_col(ilp *b, int kind, double lb, double ub, double objective)
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
void bmp_ilp_row(ilp *b, int type, double lb, double ub)
{
    b->row = glp_add_rows(b->lp, 1);
    glp_set_row_bnds(b->lp, b->row, type, lb, ub);
}

void bmp_ilp_term(ilp *b, int col, double coefficient)
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

void bmp_ilp_free(ilp *b)
{
    if (b->lp)
        glp_delete_prob(b->lp);
    free(b->ia);
    free(b->ja);
    free(b->ar);
}

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

double bmp_wall_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* Branch-and-cut with a time limit.  An incumbent needs the problem's own
 * columns, so it turns GLPK's presolver off (the root LP is then solved
 * here, within the same limit).  branching: a glp_iocp br_tech. */
void bmp_solve(glp_prob *lp, double time_limit_s, int branching, const double *incumbent,
               solve_out *out)
{
    glp_iocp parm;
    solve_info si = {DBL_MAX, incumbent};
    double start = bmp_wall_s();
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
        lp_parm.presolve = GLP_ON; /* 2.7 s instead of 5 s on the 128 × 16 × 3 root LP (126
                                      decoders, embedding, head) */
        if (time_limit_s > 0)
            lp_parm.tm_lim = (int)ceil(time_limit_s * 1000.0);
        out->rc = glp_simplex(lp, &lp_parm);
    }
    double left = time_limit_s - (bmp_wall_s() - start);
    if (time_limit_s > 0)
        parm.tm_lim = (int)fmax(1.0, ceil(left * 1000.0));
    if (out->rc == 0 && (time_limit_s <= 0 || left > 0))
        out->rc = glp_intopt(lp, &parm);
    out->status = glp_mip_status(lp);
    out->gap = out->status == GLP_OPT ? 0.0 : (si.gap >= DBL_MAX ? INFINITY : si.gap);
}
