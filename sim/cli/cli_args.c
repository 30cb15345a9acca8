/*
 * cli_args.c -- simrun's command line: the usage text (--help) and the
 * parsing of every option into struct cli (cli.h).  A bad command line is
 * one line on stderr and exit code 1 (NP_EXIT_USAGE); nothing here opens a
 * file.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "collective.h"
#include "np_version.h"
#include "planner.h"
#include "report.h"
#include "sg_options.h"

static const char usage_text[] =
    "usage: simrun [options] PLATFORM.xml WORKLOAD.json\n"
    "\n"
    "Simulates one training iteration of WORKLOAD on the cluster described by\n"
    "PLATFORM (a SimGrid XML platform) and prints iteration time, tokens/s, MFU,\n"
    "pipeline bubble, device memory and exposed communication.\n"
    "\n"
    "options:\n"
    "  --set KEY=VALUE    override a workload key before it is checked (repeatable);\n"
    "                     KEY is dotted (parallel.data_parallel_size) or bare\n"
    "                     (data_parallel_size); VALUE is a JSON literal or a string;\n"
    "                     planner or schedule that disagrees with --planner or\n"
    "                     --schedule is refused (two spellings of one key)\n"
    "  --planner NAME     planner to run (default: the workload's \"planner\");\n"
    "                     NAME, in any case, is one of:\n"
    "%s;\n"
    "                     \"all\" simulates every planner's plan and prints one table\n"
    "                     (speed-up is relative to the first row, Megatron's, which\n"
    "                     then takes the fastest uniform recompute that fits); a\n"
    "                     planner that does not apply or fit is named on stderr\n"
    "                     and skipped (without Megatron's row, the first row is\n"
    "                     the baseline, and a note says whose it is)\n"
    "  --plan-out FILE    write the plan as JSON; with --planner all one file per\n"
    "                     planner, its name before the extension: --plan-out all.json\n"
    "                     writes all.megatron.json, all.adapipe.json, ...\n"
    "  --plan FILE        replay a saved plan (a --plan-out file) instead of planning:\n"
    "                     no planner runs; its planner, schedule, parallel sizes,\n"
    "                     split, recompute, micro-batching and chunks are replayed as\n"
    "                     saved, so --planner, --schedule or a --set of those keys\n"
    "                     that disagrees with the plan is refused\n"
    "  --frontier FILE    also write TensorOpt's Pareto frontier of (iteration time,\n"
    "                     memory per NPU) over TP/PP/DP, micro-batch and recompute,\n"
    "                     as CSV with a \"devices\" column: one frontier per count\n"
    "                     N = 1, 2, 4, 8, ... and the platform's own count, from the\n"
    "                     smallest N where some plan fits in memory\n"
    "  --schedule NAME    pipeline schedule (default: the workload's \"schedule\"), in\n"
    "                     any case:\n"
    "%s\n"
    "  --csv FILE         append one result row to FILE (header written if new;\n"
    "                     columns in docs/csv-format.md)\n"
    "  --run-id ID        the row's run_id (default: a fresh 16-hex-digit id); 1 to 64\n"
    "                     of A-Z a-z 0-9 . _ : - (simsweep passes its points' ids)\n"
    "  --csv-header       print the CSV header line and exit\n"
    "  --version          print \"simrun VERSION\" (the CSV's simulator_version) and exit\n"
    "  --trace FILE       write the timeline as a Chrome trace (Perfetto, chrome://tracing);\n"
    "                     with --planner all one per planner, named as --plan-out's\n"
    "  --trace-replicas N data-parallel replicas per stage in the trace (default 1;\n"
    "                     \"all\"; with --fold-dp K at most K; needs --trace)\n"
    "  --dp-algorithm A   data-parallel all-reduce (default ring-flow), in any case:\n"
    "%s\n"
    "  --dp-inter-algorithm A  between-servers part of \"hierarchical\": the same names\n"
    "                     (default ring-flow; needs --dp-algorithm hierarchical)\n"
    "  --dp-radix R       radix of \"butterfly\", at least 2 (default 4; needs a\n"
    "                     butterfly, as --dp-algorithm or --dp-inter-algorithm)\n"
    "  --ep-alltoall-algorithm A  expert-parallel all-to-all (default concurrent):\n"
    "%s\n"
    "                     the MoE replay's token exchange with per-pair volumes:\n"
    "                     concurrent (every block at once, as NCCL and HCCL's\n"
    "                     FullMesh) or pairwise steps (HCCL's Pairwise); bruck is\n"
    "                     refused there (docs/moe.md)\n"
    "  --moe-policy P     MoE load balancing: none (default), switch, fastermoe,\n"
    "                     efficientmoe, or all (one row each; docs/moe.md)\n"
    "  --moe-trace FILE   MoE routing trace to replay (docs/moe-trace-format.md);\n"
    "                     default: balanced routing\n"
    "  --moe-trace-step N the trace's step to replay (default 0)\n"
    "  --moe-sample-mb N  replay the MoE all-to-alls of the first N micro-batches pair\n"
    "                     by pair; later ones take the time their EP group measured,\n"
    "                     except in one witness EP group (docs/moe.md, At 16K)\n"
    "  --placement ORDER  rank order of the NPUs, fastest-varying first (default\n"
    "                     Megatron's tp-cp-ep-dp-pp; e.g. dp-tp-cp-pp puts replicas on\n"
    "                     neighbouring NPUs; docs/platform-format.md, Placement)\n"
    "  --dp-overlap       bucket the gradient all-reduce and overlap it with the backward\n"
    "                     (Megatron's overlap_grad_reduce); with the distributed\n"
    "                     optimizer, the parameter all-gather with the next forward\n"
    "                     (overlap_param_gather)\n"
    "  --dp-bucket-bytes N  bucket size for --dp-overlap (default Megatron's:\n"
    "                     max(40M, 1M x DP) gradients, 4 bytes each or 2 in fp16/bf16;\n"
    "                     needs --dp-overlap)\n"
    "  --shifted-recompute  Merak's shifted critical path on any plan: the last p-s\n"
    "                     micro-batches of stage s skip recompute, the last stage never\n"
    "                     recomputes (checked against memory)\n"
    "  --fold-dp K        simulate the pipelines of K data-parallel replicas only; the\n"
    "                     others join every collective, so its traffic stays on the fabric;\n"
    "                     exact on non-blocking fat trees (refused, with the reason, on\n"
    "                     tapered ones, rail-optimised ones, tori and dragonflies, with\n"
    "                     --dp-overlap, with ZeRO-2/3 sharding, and where replicas are\n"
    "                     not symmetric: asynchronous PipeDream; with experts, K a\n"
    "                     multiple of ep)\n"
    "  --per-rank-flows   one SimGrid flow per TP rank for every transfer, instead of\n"
    "                     one per TP group where the fabric treats a group's ranks alike\n"
    "                     (the exact TP fold: the same times, 1/tp of the flows; the CSV's\n"
    "                     tp_fold column says which ran; docs/design.md)\n"
    "  --stages           also print the per-stage table\n"
    "  --memory           also print each stage's device memory at its peak: weights,\n"
    "                     gradients and optimizer state (sharded as the workload says),\n"
    "                     activations and the micro-batches in flight, recompute\n"
    "                     transient, workspace, predicted total, capacity, headroom\n"
    "                     and the simulated peak (interleaved: a row per chunk too);\n"
    "                     the CSV's mem_* columns hold the fullest stage's (not with\n"
    "                     --quiet)\n"
    "  --quiet            print nothing but errors (use with --csv): no table, no\n"
    "                     progress, no line for a planner --planner all skips\n"
    "  --progress         progress on stderr even when it is not a terminal (on a\n"
    "                     terminal it is shown without --progress): the planner\n"
    "                     --planner all is at and, once a simulation has run 2 s,\n"
    "                     \"simulating... 41%% (simulated 17.2 s of ~41.7 s)\", at\n"
    "                     most twice a second\n"
    "  --allow-large      simulate runs over the size bound: by default a run whose\n"
    "                     estimate exceeds 5e7 SimGrid activities (about 10 minutes)\n"
    "                     or this machine's memory (MemTotal) is refused before any\n"
    "                     op list is built, naming the key that drives its size, and\n"
    "                     so is a platform of more than 2e6 elements\n"
    "  --ignore-memory    simulate a plan whose predicted memory exceeds the device\n"
    "                     (a run known to have fit, or a what-if) when the user gave\n"
    "                     its recompute: Megatron's plan with the workload's\n"
    "                     recompute, a --plan file, --shifted-recompute's shift.\n"
    "                     The \"does not fit\" error becomes a warning on stderr\n"
    "                     and peak_fraction shows the excess; the CSV's\n"
    "                     ignore_memory column is 1 with the option.  Other\n"
    "                     planners, and --planner all, still keep to the device's\n"
    "                     memory (only a --shifted-recompute shift on top of\n"
    "                     their plan is waived)\n"
    "  --help             this text\n"
    "  --cfg=NAME:VALUE   passed to SimGrid (e.g. --cfg=network/model:LV08); recorded\n"
    "                     in the CSV's cfg column; the options npusim accepts and\n"
    "                     their ranges: docs/design.md, \"SimGrid options\"\n"
    "  --log=SPEC         log thresholds passed to SimGrid (e.g. --log=root.thres:info)\n"
    "\n"
    "output files (--csv, --trace, --plan-out, --frontier) are checked before the\n"
    "simulation: a missing folder, a directory, a device or a read-only file is\n"
    "refused.  Whole files are replaced only once completely written; CSV rows are\n"
    "appended whole under a lock, fields quoted as RFC 4180 says.  A failed run\n"
    "leaves existing files as they were.\n"
    "\n"
    "an option that takes a value may be given twice: the last value counts (simsweep\n"
    "relies on it: a point's value follows the sweep's fixed one); an empty value\n"
    "is refused.\n"
    "\n"
    "exit codes: 0 success; 1 bad command line; 2 bad or missing input file\n"
    "(workload, platform, plan; also a run over the size bound without\n"
    "--allow-large); 3 the plan does not fit in device memory (a warning\n"
    "instead with --ignore-memory, for the plans it names); 4 simulation or\n"
    "output failure (also a refused output path, or standard output that cannot\n"
    "be written).\n";

/* cli.h */
const char *cli_planner_list(char *buf, size_t size)
{
    int n;
    const planner_desc *all = planner_all(&n);
    buf[0] = '\0';
    for (int i = 0; i < n; i++)
        snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", i ? ", " : "", all[i].name);
    return buf;
}

/* cli.h */
const char *cli_planner_name(const char *name)
{
    int n;
    const planner_desc *all = planner_all(&n);
    for (int i = 0; name && i < n; i++)
        if (strcasecmp(all[i].name, name) == 0)
            return all[i].name;
    return name && strcasecmp(name, "all") == 0 ? "all" : NULL;
}

/* list ("a, b, c") indented by 21 columns and wrapped after a comma so that
 * no line passes 80 columns, into buf. */
static const char *indented(const char *list, char *buf, size_t size)
{
    enum { INDENT = 21, WIDTH = 80 };
    size_t n = 0;
    int col = 0;
    buf[0] = '\0';
    for (const char *w = list; *w && n + 2 * INDENT < size;) {
        size_t len = strcspn(w, " ");
        if (col == 0 || col + 1 + (int)len > WIDTH) {
            n += snprintf(buf + n, size - n, "%s%*s", col ? "\n" : "", INDENT, "");
            col = INDENT;
        } else {
            buf[n++] = ' ';
            col++;
        }
        n += snprintf(buf + n, size - n, "%.*s", (int)len, w);
        col += (int)len;
        w += len;
        w += strspn(w, " ");
    }
    return buf;
}

static void print_usage(FILE *out)
{
    char names[256];
    cli_planner_list(names, sizeof names);
    char schedules[160] = "";
    for (int k = 0; k < SCHED_COUNT; k++)
        snprintf(schedules + strlen(schedules), sizeof schedules - strlen(schedules), "%s%s",
                 k ? ", " : "", wl_schedule_name((schedule_kind)k));
    char allreduce[128], alltoall[64];
    coll_algorithm_list(COLL_ALLREDUCE, allreduce, sizeof allreduce);
    coll_algorithm_list(COLL_ALLTOALL, alltoall, sizeof alltoall);
    char a[320], b[320], c[320], d[320];
    fprintf(out, usage_text, indented(names, a, sizeof a), indented(schedules, b, sizeof b),
            indented(allreduce, c, sizeof c), indented(alltoall, d, sizeof d));
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "simrun: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (simrun --help lists the options)\n");
    return NP_EXIT_USAGE;
}

/* A positive integer option value; 0 or an exit code after a usage error. */
static int parse_count(const char *text, const char *option, int *out)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || v < 1 || v > 1 << 30) {
        fprintf(stderr, "simrun: %s expects a positive integer, got '%s'\n", option, text);
        return NP_EXIT_USAGE;
    }
    *out = (int)v;
    return 0;
}

/* An algorithm name for option `option`, or a usage error. */
static int parse_algorithm(const char *name, const char *option, coll_kind kind,
                           coll_algorithm *out)
{
    int a = coll_algorithm_by_name(name);
    if (a < 0 || !coll_algorithm_supports((coll_algorithm)a, kind)) {
        char names[128];
        coll_algorithm_list(kind, names, sizeof names);
        fprintf(stderr, "simrun: %s: unknown %s algorithm '%s', expected one of: %s\n", option,
                coll_kind_name(kind), name, names);
        return NP_EXIT_USAGE;
    }
    *out = (coll_algorithm)a;
    return 0;
}

static int parse_collectives(cli *c)
{
    engine_init_options(&c->engine);
    if (c->dp_algorithm &&
        parse_algorithm(c->dp_algorithm, "--dp-algorithm", COLL_ALLREDUCE, &c->engine.dp_algorithm))
        return NP_EXIT_USAGE;
    if (c->dp_inter_algorithm && parse_algorithm(c->dp_inter_algorithm, "--dp-inter-algorithm",
                                                 COLL_ALLREDUCE, &c->engine.dp_inter_algorithm))
        return NP_EXIT_USAGE;
    if (c->ep_alltoall_algorithm &&
        parse_algorithm(c->ep_alltoall_algorithm, "--ep-alltoall-algorithm", COLL_ALLTOALL,
                        &c->engine.ep_alltoall_algorithm))
        return NP_EXIT_USAGE;
    if (c->dp_radix && parse_count(c->dp_radix, "--dp-radix", &c->engine.dp_radix))
        return NP_EXIT_USAGE;
    np_error perr;
    if (c->placement && placement_parse(c->placement, "--placement", &c->engine.placement, &perr)) {
        fprintf(stderr, "simrun: --placement: %s\n", perr.text);
        return NP_EXIT_USAGE;
    }
    c->engine.dp_overlap = c->dp_overlap;
    c->engine.per_rank_flows = c->per_rank_flows;
    if (c->dp_bucket_bytes) {
        char *end;
        double v = strtod(c->dp_bucket_bytes, &end);
        /* decimal (230686720 or 2.2e8), a whole number of bytes up to 1e15 */
        const char *t = c->dp_bucket_bytes;
        if (*t == '\0' || *end != '\0' || strspn(t, "0123456789.eE+") != strlen(t) || !(v >= 1) ||
            v > 1e15 || v != floor(v)) {
            fprintf(stderr,
                    "simrun: --dp-bucket-bytes expects a whole number of bytes from 1 to 1e15 "
                    "in decimal, got '%s'\n",
                    c->dp_bucket_bytes);
            return NP_EXIT_USAGE;
        }
        c->engine.dp_bucket_bytes = v;
    }
    /* An option that would change nothing is refused, not ignored. */
    coll_algorithm dp = c->engine.dp_algorithm, inter = c->engine.dp_inter_algorithm;
    bool hierarchical = dp == COLL_HIERARCHICAL;
    if (c->dp_inter_algorithm && !hierarchical)
        return usage_error("--dp-inter-algorithm is the between-servers part of --dp-algorithm "
                           "hierarchical, and --dp-algorithm is %s: drop it or add "
                           "--dp-algorithm hierarchical",
                           c->dp_algorithm ? c->dp_algorithm : "ring-flow (the default)");
    if (c->dp_radix && dp != COLL_BUTTERFLY && !(hierarchical && inter == COLL_BUTTERFLY))
        return usage_error("%s", "--dp-radix is the radix of the butterfly all-reduce, which "
                                 "this run does not use: drop it or add --dp-algorithm butterfly "
                                 "(or hierarchical with --dp-inter-algorithm butterfly)");
    if (c->dp_bucket_bytes && !c->dp_overlap)
        return usage_error("%s", "--dp-bucket-bytes sizes the buckets of --dp-overlap: drop it "
                                 "or add --dp-overlap");
    return 0;
}

/* Where the value of option a goes, or NULL when a takes no value. */
static const char **value_option(cli *c, const char *a)
{
    if (strcmp(a, "--planner") == 0)
        return &c->planner;
    if (strcmp(a, "--schedule") == 0)
        return &c->schedule;
    if (strcmp(a, "--csv") == 0)
        return &c->csv_path;
    if (strcmp(a, "--plan") == 0)
        return &c->plan_in;
    if (strcmp(a, "--trace") == 0)
        return &c->trace_path;
    if (strcmp(a, "--frontier") == 0)
        return &c->frontier_path;
    if (strcmp(a, "--trace-replicas") == 0)
        return &c->trace_replicas;
    if (strcmp(a, "--fold-dp") == 0)
        return &c->fold_dp;
    if (strcmp(a, "--dp-algorithm") == 0)
        return &c->dp_algorithm;
    if (strcmp(a, "--dp-inter-algorithm") == 0)
        return &c->dp_inter_algorithm;
    if (strcmp(a, "--dp-radix") == 0)
        return &c->dp_radix;
    if (strcmp(a, "--ep-alltoall-algorithm") == 0)
        return &c->ep_alltoall_algorithm;
    if (strcmp(a, "--placement") == 0)
        return &c->placement;
    if (strcmp(a, "--dp-bucket-bytes") == 0)
        return &c->dp_bucket_bytes;
    if (strcmp(a, "--moe-trace") == 0) /* MoE: cli_moe.c */
        return &c->moe_trace_path;
    if (strcmp(a, "--moe-trace-step") == 0)
        return &c->moe_trace_step;
    if (strcmp(a, "--moe-sample-mb") == 0)
        return &c->moe_sample_mb;
    if (strcmp(a, "--moe-policy") == 0) /* MoE: cli_moe_policy.c */
        return &c->moe_policy;
    if (strcmp(a, "--plan-out") == 0)
        return &c->plan_out;
    if (strcmp(a, "--run-id") == 0)
        return &c->run_id;
    return NULL;
}

/* A run id: 1 to 64 characters of [A-Za-z0-9._:-], so that it never needs
 * quoting in the CSV or in a shell. */
static int valid_run_id(const char *id)
{
    size_t n = strlen(id);
    return n >= 1 && n <= 64 &&
           strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") == n;
}

/* Whether one --cfg value sets SimGrid's option `name`: SimGrid reads
 * several "name:value" settings from one --cfg, split at spaces, commas,
 * tabs and newlines. */
static bool cfg_sets(const char *cfg, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = cfg; (p = strstr(p, name)) != NULL; p++)
        if ((p == cfg || strchr(" ,\t\n", p[-1])) && p[len] == ':')
            return true;
    return false;
}

/* Returns -1 to continue, or an exit code. */
int parse_args(int argc, char **argv, cli *c)
{
    const char *positional[2];
    int npos = 0;
    c->simgrid_argv[c->simgrid_argc++] = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **target;
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            print_usage(stdout);
            return NP_EXIT_OK;
        } else if (strcmp(a, "--csv-header") == 0) { /* simsweep writes failed points' rows */
            printf("%s\n", report_csv_header);
            return NP_EXIT_OK;
        } else if (strcmp(a, "--version") == 0) {
            printf("simrun %s\n", np_version());
            return NP_EXIT_OK;
        } else if (strncmp(a, "--cfg=", 6) == 0 || strncmp(a, "--log=", 6) == 0) {
            np_error e;
            if (a[2] == 'c' ? sg_options_check_cfg(a + 6, &e) : sg_log_check(a + 6, &e)) {
                char text[1400];
                fprintf(stderr, "simrun: %s\n", np_error_format(&e, text, sizeof text));
                return NP_EXIT_USAGE;
            }
            if (c->simgrid_argc == MAX_SIMGRID_ARGS)
                return usage_error("too many SimGrid options (at most %s)", "63");
            c->simgrid_argv[c->simgrid_argc++] = argv[i];
            if (a[2] == 'c') { /* the CSV records the settings, not the logging */
                c->cfg[c->num_cfg++] = a + 6;
                c->cfg_sets_solver |= cfg_sets(a + 6, "network/optim") ||
                                      cfg_sets(a + 6, "network/maxmin-selective-update");
            }
        } else if (strcmp(a, "--set") == 0) {
            if (!value)
                return usage_error("option %s needs KEY=VALUE", a);
            if (!strchr(value, '='))
                return usage_error("--set expects KEY=VALUE, got '%s'", value);
            if (c->num_overrides == MAX_OVERRIDES)
                return usage_error("too many --set options (at most %s)", "64");
            c->overrides[c->num_overrides++] = value;
            i++;
        } else if ((target = value_option(c, a))) {
            if (!value)
                return usage_error("option %s needs a value", a);
            if (!*value)
                return usage_error("option %s: expected a value, got an empty one", a);
            *target = value;
            i++;
        } else if (strcmp(a, "--stages") == 0) {
            c->stages = 1;
        } else if (strcmp(a, "--memory") == 0) {
            c->memory = 1;
        } else if (strcmp(a, "--dp-overlap") == 0) {
            c->dp_overlap = 1;
        } else if (strcmp(a, "--per-rank-flows") == 0) {
            c->per_rank_flows = 1;
        } else if (strcmp(a, "--shifted-recompute") == 0) {
            c->shifted_recompute = 1;
        } else if (strcmp(a, "--quiet") == 0) {
            c->quiet = 1;
        } else if (strcmp(a, "--progress") == 0) {
            c->progress = 1;
        } else if (strcmp(a, "--allow-large") == 0) {
            c->allow_large = 1;
        } else if (strcmp(a, "--ignore-memory") == 0) {
            c->ignore_memory = 1;
        } else if (a[0] == '-' && a[1] != '\0') {
            return usage_error("unknown option '%s'", a);
        } else if (npos < 2) {
            positional[npos++] = a;
        } else {
            return usage_error("unexpected argument '%s'", a);
        }
    }
    if (npos < 2)
        return usage_error("%s", "expected PLATFORM.xml and WORKLOAD.json");
    if (c->memory && c->quiet)
        return usage_error("%s", "--memory prints a table and --quiet prints nothing: drop one "
                                 "(with --csv, the mem_* columns hold the fullest stage's memory)");
    if (c->stages && c->quiet)
        return usage_error("%s", "--stages prints a table and --quiet prints nothing: drop one");
    if (c->run_id && !valid_run_id(c->run_id))
        return usage_error("--run-id expects 1 to 64 of A-Z a-z 0-9 . _ : -, got '%s'", c->run_id);
    if (c->fold_dp && parse_count(c->fold_dp, "--fold-dp", &c->fold_dp_replicas))
        return NP_EXIT_USAGE;
    if (parse_collectives(c))
        return NP_EXIT_USAGE;
    c->trace_max_replicas = 1;
    if (c->trace_replicas && !c->trace_path)
        return usage_error("%s", "--trace-replicas chooses the replicas of --trace's timeline: "
                                 "drop it or add --trace FILE");
    if (c->trace_replicas && strcmp(c->trace_replicas, "all") == 0)
        c->trace_max_replicas = 0;
    else if (c->trace_replicas &&
             parse_count(c->trace_replicas, "--trace-replicas", &c->trace_max_replicas))
        return NP_EXIT_USAGE;
    c->platform_path = positional[0];
    c->workload_path = positional[1];
    c->simgrid_argv[c->simgrid_argc] = NULL;
    return -1;
}

/* cli.h */
char *cli_join(const char *const *items, int n)
{
    size_t size = 1;
    for (int i = 0; i < n; i++)
        size += strlen(items[i]) + 1;
    char *buf = malloc(size), *end = buf;
    if (!buf)
        return NULL;
    *end = '\0';
    for (int i = 0; i < n; i++) {
        size_t len = strlen(items[i]);
        if (i)
            *end++ = ';';
        memcpy(end, items[i], len + 1);
        end += len;
    }
    return buf;
}

/* cli.h */
char *join_overrides(const cli *c) { return cli_join(c->overrides, c->num_overrides); }

/* cli.h: splitmix64's finaliser over the clock in ns, the process id and a
 * counter, so that runs started at the same instant on one machine, or twice
 * in one process, differ. */
void cli_fresh_run_id(char *buf, size_t size)
{
    static uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    x ^= (uint64_t)getpid() << 40;
    x += ++counter * 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    x ^= x >> 31;
    snprintf(buf, size, "%016llx", (unsigned long long)x);
}
