/*
 * moetrace.c -- generate or summarise MoE token traces
 * (docs/moe-trace-format.md).  Like simsweep it sits beside the simulator
 * and links the model layer only.
 *
 *   moetrace -o FILE --workload W.json [--set K=V ...] [generator options]
 *   moetrace -o FILE --experts E --sources R --layers L --topk K --tokens T
 *            [generator options]
 *   moetrace --stats FILE
 * Generator options: --steps S (1), --top2-share X or --zipf S (default:
 * --zipf 0, uniform popularity), --drift D (0), --seed N (1).
 * Exit codes as simrun's: 1 command line, 2 input file, 4 output failure
 * (the -o file, or standard output for --stats and --help: moetrace --stats
 * FILE > /dev/full fails).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "moe.h"
#include "moe_trace.h"
#include "np_error.h"
#include "np_file.h"

#define MAX_SETS 64

static const char usage[] =
    "usage: moetrace -o FILE (--workload W.json [--set KEY=VALUE ...] |\n"
    "                --experts E --sources R --layers L --topk K --tokens T)\n"
    "                [--steps S] [--top2-share X | --zipf S] [--drift D] [--seed N]\n"
    "       moetrace --stats FILE\n"
    "Writes a seeded MoE routing trace: Zipf-skewed expert popularity (--zipf S, or\n"
    "--top2-share X: the exponent whose two hottest experts hold X of the tokens),\n"
    "hot experts drifting each step with probability D per popularity rank.\n"
    "--workload takes experts, sources (expert_model_parallel_size), MoE layers,\n"
    "topk and tokens per source and micro-batch from a workload.  --stats prints the\n"
    "top-2 share and max/mean expert load of every step and layer.\n";

static int cmdline(const char *fmt, const char *arg)
{
    fprintf(stderr, "moetrace: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", usage);
    return 1;
}

static int parse_number(const char *opt, const char *text, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !(v >= lo && v <= hi)) {
        fprintf(stderr, "moetrace: %s: expected a number in [%g, %g], got \"%s\"\n", opt, lo, hi,
                text);
        return -1;
    }
    *out = v;
    return 0;
}

/* Standard output at exit: np_stdout_finish (np_file.h). */
static int finish_stdout(void) { return np_stdout_finish("moetrace"); }

/* A failure to write the trace (its error names -o). */
static int write_failed(np_error *err)
{
    char buf[1200];
    fprintf(stderr, "moetrace: %s\n", np_error_format(err, buf, sizeof buf));
    return err->code;
}

static int print_stats(const char *path)
{
    moe_trace t;
    np_error err;
    if (moe_trace_read(path, &t, &err)) {
        char buf[1200];
        fprintf(stderr, "moetrace: %s\n", np_error_format(&err, buf, sizeof buf));
        return err.code;
    }
    printf("step,layer,top2_share,max_over_mean\n");
    for (int s = 0; s < t.steps; s++)
        for (int l = 0; l < t.layers; l++) {
            moe_trace_stats st;
            moe_trace_stats_of(&t, s, l, &st);
            printf("%d,%d,%.6f,%.6f\n", s, l, st.top2_share, st.max_over_mean);
        }
    moe_trace_free(&t);
    return finish_stdout();
}

/* Experts, sources, MoE layers, topk and tokens from a workload. */
static int from_workload(const char *path, const char **sets, int num_sets, moe_trace_params *p)
{
    wl_workload w;
    np_error err;
    char buf[1200];
    if (wl_load(path, sets, num_sets, &w, &err)) {
        fprintf(stderr, "moetrace: %s\n", np_error_format(&err, buf, sizeof buf));
        return err.code;
    }
    int rc = 0;
    if (w.model.num_experts <= 0) {
        fprintf(stderr, "moetrace: %s: model.num_experts: expected an MoE workload, got 0\n", path);
        rc = NP_EXIT_INPUT;
    }
    p->experts = w.model.num_experts;
    p->sources = w.parallel.expert_model_parallel_size;
    p->layers = wl_moe_num_layers(&w.model);
    p->topk = w.model.moe_router_topk;
    p->tokens = moe_trace_workload_tokens(&w);
    wl_free(&w);
    return rc;
}

int main(int argc, char **argv)
{
    moe_trace_params p = {.steps = 1, .seed = 1};
    const char *out = NULL, *workload = NULL, *stats = NULL, *sets[MAX_SETS];
    const char *skew = NULL; /* --top2-share or --zipf: one of them */
    int num_sets = 0, shape_given = 0, others = 0;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            fputs(usage, stdout);
            return finish_stdout(); /* --help > /dev/full */
        }
        if (i + 1 >= argc)
            return cmdline("%s needs a value", o);
        const char *v = argv[++i];
        double x;
        if (!strcmp(o, "--stats")) {
            stats = v;
            continue;
        }
        others++;
        if ((!strcmp(o, "--top2-share") || !strcmp(o, "--zipf")) && skew && strcmp(skew, o))
            return cmdline("--top2-share and --zipf are two ways to set the same skew: give "
                           "one%s",
                           "");
        if (!strcmp(o, "--top2-share") || !strcmp(o, "--zipf"))
            skew = o;
        if (!strcmp(o, "-o"))
            out = v;
        else if (!strcmp(o, "--workload"))
            workload = v;
        else if (!strcmp(o, "--set")) {
            if (num_sets >= MAX_SETS)
                return cmdline("at most 64 --set options%s", "");
            sets[num_sets++] = v;
        } else if (!strcmp(o, "--top2-share")) {
            if (parse_number(o, v, 0.0, 1.0, &p.top2_share))
                return 1;
        } else if (!strcmp(o, "--zipf")) {
            if (parse_number(o, v, 0.0, 100.0, &p.zipf_s))
                return 1;
        } else if (!strcmp(o, "--drift")) {
            if (parse_number(o, v, 0.0, 1.0, &p.drift))
                return 1;
        } else if (!strcmp(o, "--seed")) {
            if (parse_number(o, v, 0.0, 9007199254740992.0, &x))
                return 1;
            p.seed = (uint64_t)x;
        } else {
            int *fields[] = {&p.experts, &p.sources, &p.layers, &p.topk, &p.steps};
            const char *names[] = {"--experts", "--sources", "--layers", "--topk", "--steps"};
            int k = 0;
            while (k < 5 && strcmp(o, names[k]))
                k++;
            if (k == 5 && strcmp(o, "--tokens"))
                return cmdline("unknown option %s", o);
            double hi = k == 5 ? 1099511627776.0 : 1048576.0;
            if (parse_number(o, v, 1.0, hi, &x))
                return 1;
            if (x != (double)(long)x)
                return cmdline("%s: expected an integer", o);
            if (k == 5)
                p.tokens = (long)x;
            else
                *fields[k] = (int)x;
            shape_given += k != 4;
        }
    }
    if (stats && others)
        return cmdline("--stats FILE prints a trace's statistics and takes no other option%s", "");
    if (stats)
        return print_stats(stats);
    if (!out)
        return cmdline("-o FILE is required%s", "");
    if (workload && shape_given)
        return cmdline("--workload sets the shape: drop --experts, --sources, --layers, --topk "
                       "and --tokens%s",
                       "");
    if (!workload && shape_given < 5)
        return cmdline("give --workload, or all of --experts, --sources, --layers, --topk and "
                       "--tokens%s",
                       "");
    if (workload && np_file_same(out, workload)) {
        fprintf(stderr,
                "moetrace: <command line>: -o: %s is also the --workload file: writing "
                "the trace would destroy it; give the trace a file of its own\n",
                out);
        return 1;
    }
    np_error err; /* a directory, a missing folder, ...: refused before any work */
    if (np_file_check_target(out, "-o", NP_FILE_REPLACE, &err))
        return write_failed(&err);
    if (workload) {
        int rc = from_workload(workload, sets, num_sets, &p);
        if (rc)
            return rc;
    }
    moe_trace t;
    char why[256];
    if (moe_trace_generate(&p, &t, why, sizeof why))
        return cmdline("%s", why);
    int rc = moe_trace_write(out, "-o", &t, &err);
    if (rc)
        rc = write_failed(&err);
    moe_trace_free(&t);
    return rc;
}
