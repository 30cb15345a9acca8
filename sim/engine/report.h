/*
 * report.h -- what a run tells the user: the summary table on stdout and the
 * CSV row appended to --csv FILE.
 *
 * The CSV header is fixed and documented in docs/csv-format.md: columns are
 * only ever appended at its end, so older files stay readable.  A row
 * is written as soon as its run ends, so a sweep that dies keeps every
 * finished row.  Rows go through np_file_append(): formatted in memory, then
 * appended in one write loop under an exclusive lock, the header added only
 * when the file is empty under that lock, so simultaneous runs appending to
 * one file never split a row or repeat the header.  String fields holding a
 * comma, a quote, CR or LF are quoted as RFC 4180 says.
 */
#ifndef SIM_REPORT_H
#define SIM_REPORT_H

#include <stdio.h>

#include "engine.h"

typedef struct report_row {
    const char *platform;
    const char *workload;
    const wl_workload *w;
    const plan *pl;
    const cm_model *cm; /* the plan's cost model (the recompute label), or NULL */
    const engine_result *r;
    double capacity_bytes;
    int num_npus;
    const char *overrides; /* "--set" assignments joined by ';', or "" */
    /* What else made the row (docs/csv-format.md, "Identity"): */
    const char *run_id;            /* --run-id, or the run's fresh id */
    const engine_options *eo;      /* the collective, folding and overlap options */
    bool shifted_recompute;        /* --shifted-recompute */
    const char *plan_file;         /* --plan, or NULL */
    const char *plan_sha256;       /* the SHA-256 of its bytes, or NULL */
    const char *cfg;               /* the --cfg values joined by ';', or NULL */
    const char *simulator_version; /* np_version() */
    const char *moe_trace;         /* --moe-trace, or NULL */
    const char *moe_trace_sha256;  /* the SHA-256 of its bytes, or NULL */
    int moe_trace_step;            /* --moe-trace-step */
    bool ignore_memory;            /* --ignore-memory */
} report_row;

extern const char report_csv_header[];

void report_print_header(FILE *out, const report_row *row);
void report_print_table_head(FILE *out, const report_row *row);
void report_print_table_row(FILE *out, const report_row *row, double baseline_iteration_s);
void report_print_stages(FILE *out, const report_row *row);

/* 0 when path is missing, empty, or starts with this simrun's header and
 * ends with a line end; NP_EXIT_INTERNAL with err naming path and "--csv"
 * otherwise (a file of an older simrun, whose header lacks the columns
 * appended since, or another CSV: its rows would not match its header; or a
 * last row cut short, err's line its number: a new row would be glued to
 * it). */
int report_csv_check_header(const char *path, np_error *err);

/* Appends one row (and the header if the file is new or empty), after
 * report_csv_check_header().  0, or
 * NP_EXIT_INTERNAL with err naming path and "--csv"; the file then holds no
 * part of the row. */
int report_csv_append(const char *path, const report_row *row, np_error *err);

/* The plan's recompute in one word: "none", "selective" or "full" when every
 * decoder (or listed) layer takes that option, "mixed(n/s/f)" with the layer
 * counts as soon as two options are used (1 full layer among 81 without
 * recompute is mixed(81/0/1)), or "units(k/L)" when k of the L layers that
 * have recomputable units recompute some of them (AdaPipe); "+shift" under
 * Merak's shifted recompute.  With cm, the embedding and the LM head count
 * only when the plan recomputes them; cm NULL counts every layer. */
const char *report_recompute_summary(const plan *pl, const cm_model *cm, char *buf, int size);

#endif
