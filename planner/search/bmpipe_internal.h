/*
 * bmpipe_internal.h -- what the files of the BMPipe planner share: the
 * problem as the cost model prices it, the small builder over GLPK's triplet
 * matrix, the column layouts of the three forms, and the functions one file
 * offers the others.  planner_bmpipe.c states the formulation.  Private to
 * planner/search/: the CLI and the tests use planner.h.
 */

#ifndef BMPIPE_INTERNAL_H
#define BMPIPE_INTERNAL_H

#include <glpk.h>
#include <stdbool.h>
#include <stdint.h>

#include "planner.h"

#define R RECOMPUTE_COUNT

/* ---- the problem, from the cost model (bmpipe_problem.c, bmpipe_rows.c) ---- */

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

int bmp_problem_init(bmp_problem *pb, const cm_model *cm, const cl_cluster *c, int p, int v, int m,
                     schedule_kind sched);
void bmp_problem_free(bmp_problem *pb);
double bmp_static_bytes(const bmp_problem *pb, int l, int s);
void bmp_memory_coefficients(const bmp_problem *pb, int l, int s, double held, double *out);
bool bmp_middle_identical(const bmp_problem *pb);
double bmp_memory_scale(const bmp_problem *pb);
double bmp_plan_bottleneck_s(const bmp_problem *pb, const plan *pl, double *work_s,
                             double *transient);
double bmp_problem_objective(const bmp_problem *pb, const plan *pl);

int bmp_memory_rows_init(bmp_problem *pb, schedule_kind sched);

/* ---- GLPK: the triplet builder and the solver (bmpipe_glpk.c) ---------- */

typedef struct ilp {
    glp_prob *lp;
    int *ia, *ja;
    double *ar;
    int ne, cap;
    int row;
    bool failed; /* out of memory */
} ilp;

int bmp_ilp_col(ilp *b, int kind, double lb, double ub, double objective);
void bmp_ilp_row(ilp *b, int type, double lb, double ub);
void bmp_ilp_term(ilp *b, int col, double coefficient);
void bmp_ilp_free(ilp *b);

typedef struct solve_out {
    int status; /* glp_mip_status */
    int rc;     /* glp_intopt */
    double gap;
} solve_out;

double bmp_wall_s(void);
void bmp_solve(glp_prob *lp, double time_limit_s, int branching, const double *incumbent,
               solve_out *out);

/* ---- the binary form (bmpipe_binary.c) ---------------------------------- */

typedef struct binary_cols {
    int *q; /* [L·K·R], 0 when absent */
    int *y; /* [L·K], Y[l,k] for k < K−1 */
    int tau;
} binary_cols;

int bmp_binary_build(ilp *b, const bmp_problem *pb, binary_cols *bc, int *transient_col);
void bmp_binary_decode(const bmp_problem *pb, const binary_cols *bc, glp_prob *lp, plan *pl);

/* ---- chunk sizes and the stage-pattern form (bmpipe_sizes.c) ------------ */

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

int bmp_sizes_init(chunk_sizes *cs, const bmp_problem *pb);
void bmp_sizes_free(chunk_sizes *cs);
void bmp_sizes_columns(ilp *b, const bmp_problem *pb, chunk_sizes *cs, double weight);
void bmp_sizes_rows(ilp *b, const bmp_problem *pb, const chunk_sizes *cs);
void bmp_sizes_decode(const bmp_problem *pb, const layer_count *const *mix_of, plan *pl);
int bmp_pattern_build(ilp *b, const bmp_problem *pb, chunk_sizes *cs);
int bmp_pattern_decode(const bmp_problem *pb, const chunk_sizes *cs, glp_prob *lp, plan *pl);

/* ---- the integer-count form, v > 1 (bmpipe_count.c) --------------------- */

typedef struct count_cols {
    int *n;       /* [K·R] middle layers of chunk k with option r */
    int *z;       /* [K·R] n[k,r] > 0, when option r has a transient */
    int first[R]; /* layer 0 (chunk 0) with option r */
    int last[R];  /* layer L−1 (chunk K−1) with option r */
    int tau;
} count_cols;

int bmp_count_build(ilp *b, const bmp_problem *pb, count_cols *cc, chunk_sizes *cs,
                    int *transient_col);
int bmp_count_decode(const bmp_problem *pb, const count_cols *cc, glp_prob *lp, plan *pl);

/* ---- a first incumbent (bmpipe_incumbent.c) ----------------------------- */

int bmp_heuristic_plan(const bmp_problem *pb, plan *pl);
double *bmp_binary_point(const bmp_problem *pb, const binary_cols *bc, const int *transient_col,
                         int num_cols, const plan *pl);
double *bmp_count_point(const bmp_problem *pb, const count_cols *cc, const chunk_sizes *cs,
                        const int *transient_col, int num_cols, const plan *pl);

#endif
