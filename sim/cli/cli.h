/*
 * cli.h -- what the files of simrun share: the parsed command line (cli),
 * the inputs every planner's run shares (job), and the functions each file
 * offers the others.
 *
 *   cli_args.c    the usage text and option parsing
 *   cli_output.c  standard output, output paths and their pre-checks, errors
 *   cli_size.c    the bound on a run's size (--allow-large), checked before
 *                 any op list is built
 *   cli_progress.c  the progress lines on stderr (--progress, a terminal)
 *   cli_memory.c  the per-stage memory table (--memory)
 *   simrun.c      the job: load the inputs, plan, simulate and report; main
 */
#ifndef SIM_CLI_H
#define SIM_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "costmodel.h"
#include "engine.h"
#include "frontier.h"
#include "np_error.h"
#include "np_sha256.h"
#include "plan.h"
#include "platform.h"
#include "report.h"
#include "workload.h"

#define MAX_OVERRIDES 64
#define MAX_SIMGRID_ARGS 64

typedef struct cli {
    const char *platform_path;
    const char *workload_path;
    const char *overrides[MAX_OVERRIDES];
    int num_overrides;
    const char *planner;
    const char *schedule;
    const char *csv_path;
    const char *run_id;                /* --run-id, or NULL */
    const char *cfg[MAX_SIMGRID_ARGS]; /* the --cfg= values, for the CSV's cfg column */
    int num_cfg;
    bool cfg_sets_solver; /* a --cfg sets network/optim or network/maxmin-selective-update */
    const char *plan_in;
    const char *plan_out;
    const char *trace_path;
    const char *frontier_path;
    const char *moe_policy;     /* --moe-policy (cli_moe_policy.c) */
    const char *trace_replicas; /* "all" or a count, for --trace */
    const char *fold_dp;
    const char *dp_algorithm, *dp_inter_algorithm, *dp_radix, *ep_alltoall_algorithm;
    const char *placement; /* --placement ORDER (placement.h) */
    const char *dp_bucket_bytes;
    const char *moe_trace_path, *moe_trace_step; /* --moe-trace, --moe-trace-step */
    const char *moe_sample_mb;                   /* --moe-sample-mb (cli_moe.c) */
    int dp_overlap;
    int per_rank_flows; /* --per-rank-flows */
    int shifted_recompute;
    int stages, quiet;
    int memory;             /* --memory: the per-stage memory table (cli_memory.c) */
    int progress;           /* --progress */
    int terminal;           /* stderr is a terminal */
    int show_progress;      /* cli_progress_init(): progress lines on stderr */
    int allow_large;        /* --allow-large: no bound on a run's size */
    int ignore_memory;      /* --ignore-memory: a plan over the device memory is simulated */
    int fold_dp_replicas;   /* parsed --fold-dp */
    engine_options engine;  /* parsed collective options */
    int trace_max_replicas; /* parsed --trace-replicas */
    char *simgrid_argv[MAX_SIMGRID_ARGS];
    int simgrid_argc;
} cli;

/* What every planner's run shares: the workload, the platform and the cost
 * model of the workload's own parallel configuration. */
typedef struct job {
    wl_workload w;
    sim_platform pf;
    cm_model cm;
    char *overrides;                      /* join_overrides() */
    char *cfg;                            /* the --cfg= values joined by ';' (cli_join()) */
    char run_id[65];                      /* --run-id, or a fresh one (cli_fresh_run_id()) */
    char plan_sha256[NP_SHA256_HEX_SIZE]; /* of the --plan file's bytes, or "" */
    double baseline_iteration_s;          /* the first successful run, for speed-ups */
    int rows;
    int several;         /* --planner all: output files get the planner's name */
    int moe_policy;      /* moe_policy_kind (cli_moe_policy.c) */
    int moe_policy_all;  /* --moe-policy all: 1, and 2 while its loop runs */
    int check_only;      /* simulate_and_report only checks the run (engine_options) */
    const char *planner; /* the planner's canonical name, or "all" (cli_planner_name()) */
    moe_trace moe_trace; /* --moe-trace (counts NULL without one; cli_moe.c) */
    int moe_trace_step;
    int moe_sample_mb;                         /* --moe-sample-mb, 0 without */
    char moe_trace_sha256[NP_SHA256_HEX_SIZE]; /* of the --moe-trace file's bytes */
    /* The routing trace replayed: --moe-trace, else the workload's
     * model.moe_token_trace resolved against the workload's folder, else
     * NULL (balanced routing). */
    const char *moe_trace_path;
    char moe_trace_path_buf[1100];
} job;

/* ---- cli_args.c ------------------------------------------------------------- */

/* Parses the command line into c; -1 to continue, or the exit code (--help:
 * 0 after printing the usage; a usage error: 1 after saying it on stderr). */
int parse_args(int argc, char **argv, cli *c);

/* The --set assignments joined by ';', whole (malloc'd; NULL when out of
 * memory): the CSV's overrides column. */
char *join_overrides(const cli *c);

/* n strings joined by ';' (malloc'd; NULL when out of memory). */
char *cli_join(const char *const *items, int n);

/* The canonical name of planner `name` matched without regard to case
 * ("BMPipe" is "bmpipe"), "all" for any case of all, or NULL when unknown. */
const char *cli_planner_name(const char *name);

/* The planners' names joined by ", " into buf. */
const char *cli_planner_list(char *buf, size_t size);

/* A fresh run id for a run without --run-id: 16 hex digits mixed from the
 * clock, the process id and a counter. */
void cli_fresh_run_id(char *buf, size_t size);

/* ---- cli_output.c ------------------------------------------------------------- */

/* An output file of one planner's run: base itself when one planner runs,
 * "out/x.NAME.json" of "out/x.json" for each planner of --planner all
 * (several); buf holds the result. */
const char *output_path(const char *base, const char *planner, int several, char *buf, int size);

/* Every output of the run, checked before anything is simulated
 * (np_file_check_target), as output_path() names them. */
int check_outputs(const cli *c, const char *moe_trace, int several, np_error *err);

/* TensorOpt's Pareto frontier over every device count (--frontier), in
 * Megatron's rank order; simrun writes it only after the run succeeded, so
 * a failed run leaves an existing file as it was. */
int cli_frontier(const cli *c, const job *j, frontier *fr, np_error *err);

/* Flushes standard output, remembering its first write error. */
void flush_stdout(void);
/* At exit: 0, or NP_EXIT_INTERNAL after saying on stderr that standard
 * output could not be written (simrun > /dev/full). */
int finish_stdout(void);

/* Prints err on one line of stderr; returns its exit code. */
int fail(const np_error *err);

/* ---- cli_moe.c ------------------------------------------------------------------ */

/* --moe-trace FILE and --moe-trace-step N: reads the trace and holds it
 * against the workload (moe_trace_check_workload); nothing without the
 * option.  0 or an np_exit_code. */
int cli_moe_load(const cli *c, job *j, np_error *err);
/* Hands the trace to the engine options, and --allow-large's lifting of
 * the replay's bound. */
void cli_moe_options(const cli *c, const job *j, engine_options *eo);

/* ---- cli_moe_policy.c ------------------------------------------------------------ */

/* --moe-policy NAME|all into j->moe_policy / j->moe_policy_all.  0 or an
 * np_exit_code. */
int cli_moe_policy_load(const cli *c, job *j, np_error *err);
/* --moe-policy all: checks every policy first (`one` with j->check_only
 * set, which writes nothing), so that a policy that cannot run stops the
 * command before any row is written; then runs `one` (simrun's
 * simulate_and_report) once per policy with j->moe_policy set, stopping at
 * the first error.  0 or an np_exit_code. */
typedef int (*cli_moe_run_fn)(const cli *c, job *j, plan *pl, np_error *err);
int cli_moe_each_policy(const cli *c, job *j, plan *pl, cli_moe_run_fn one, np_error *err);

/* ---- cli_size.c ----------------------------------------------------------------- */

/* The engine options of a run of c (collectives, --fold-dp, --trace, the
 * distributed optimizer's parameter gather). */
engine_options cli_engine_options(const cli *c, const job *j);

/* Before any planner runs: the workload's own configuration (its p, v, tp,
 * dp and micro-batches) against the bound, naming the workload file and
 * training.global_batch_size.  0 or NP_EXIT_INPUT. */
int check_workload_size(const cli *c, const job *j, np_error *err);

/* A plan against the bound before its op lists are built: a saved plan
 * (--plan) names its file and num_micro_batches, a planner's plan the
 * workload file and training.global_batch_size.  0 or NP_EXIT_INPUT. */
int check_plan_size(const cli *c, const job *j, const plan *pl, np_error *err);

/* ---- cli_plan.c --------------------------------------------------------------- */

/* The key of a --set KEY=VALUE: its last dotted part (training.planner:
 * planner), and its length in *n. */
const char *cli_override_key(const char *set, size_t *n);

/* Whether a --set gave the bare key `name`. */
bool cli_set_on_command_line(const cli *c, const char *name);

/* --schedule and --planner against a --set of the same key: 0 when absent
 * or the same, else NP_EXIT_USAGE naming both (two spellings that disagree
 * would leave the winner to the order the loader applies them in). */
int cli_check_twin_keys(const cli *c, np_error *err);

/* A saved plan against --planner, --schedule and every --set of a key the
 * plan fixes: 0, or NP_EXIT_USAGE naming the option when one disagrees with
 * the plan (it would be ignored by the replay). */
int cli_check_plan_overrides(const cli *c, const job *j, const plan *pl, np_error *err);

/* Whether plan pl fits the device by the memory of its own cost model (the
 * job's, or one built for the plan's sizes): mem_check_fits()'s code. */
int cli_plan_fits(const job *j, const plan *pl, np_error *err);

/* ---- cli_memory.c ------------------------------------------------------------- */

/* --memory: one row per pipeline stage (and per model chunk when
 * interleaved) of the plan's memory at the stage's peak (mem_stage_chunks()),
 * the engine's simulated peak of the stage beside the predicted total. */
void cli_print_memory(FILE *out, const report_row *row);

/* ---- cli_progress.c ------------------------------------------------------------- */

/* Decides whether progress is shown: never with --quiet; with --progress or
 * when stderr is a terminal. */
void cli_progress_init(cli *c);

/* One progress line ("simrun: planner adapipe…"), when progress is shown. */
void cli_progress_say(const cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Erases the line a terminal shows (before the table goes on). */
void cli_progress_clear(const cli *c);

/* The progress of one simulation. */
typedef struct cli_progress {
    const cli *c;
    double start_s, shown_s; /* wall clock: the simulation's start, the last line */
    double estimate_s;       /* predicted iteration time, 0 when none */
} cli_progress;

/* Sets eo's progress callback for the simulation of pl, when progress is
 * shown (p must outlive the run). */
void cli_progress_attach(const cli *c, const job *j, const cm_model *cm, const plan *pl,
                         cli_progress *p, engine_options *eo);

#endif
