/*
 * cli_progress.c -- simrun's signs of life on stderr for runs that take a
 * while: "simrun: planner X…" before each planner of --planner all (and
 * "simrun: frontier…" before --frontier's sweep), and during a simulation
 *
 *   simrun: simulating… 41% (simulated 17.2 s of ~41.7 s), 2.1 s elapsed
 *
 * once it has run for 2 s, at most twice a second.  Shown when stderr is a
 * terminal (one line redrawn in place, erased when the simulation ends so
 * that the table on stdout stays clean) or with --progress (plain lines, for
 * a log); never with --quiet.  The percentage is the simulated clock over
 * the plan's predicted iteration time (the planner's own estimate, else the
 * 1F1B critical path of predict.h), capped at 99%; without a prediction the
 * line gives the simulated seconds only.
 */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "predict.h"

#define PROGRESS_AFTER_S 2.0 /* no line for a simulation shorter than this */
#define PROGRESS_EVERY_S 0.5 /* at most twice a second */
#define PROGRESS_STEPS 200   /* simulated steps per predicted iteration */

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* cli.h */
void cli_progress_init(cli *c)
{
    c->terminal = isatty(STDERR_FILENO);
    c->show_progress = !c->quiet && (c->progress || c->terminal);
}

/* A line on stderr: redrawn in place on a terminal, else a line of its own. */
static void progress_line(const cli *c, const char *text)
{
    if (c->terminal)
        fprintf(stderr, "\r%s\033[K", text);
    else
        fprintf(stderr, "%s\n", text);
    fflush(stderr);
}

/* cli.h */
void cli_progress_say(const cli *c, const char *fmt, ...)
{
    if (!c->show_progress)
        return;
    char text[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    progress_line(c, text);
}

/* cli.h */
void cli_progress_clear(const cli *c)
{
    if (c->show_progress && c->terminal) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
}

static void on_progress(double simulated_s, void *ctx)
{
    cli_progress *p = ctx;
    double now = wall_now(), elapsed = now - p->start_s;
    if (elapsed < PROGRESS_AFTER_S || now - p->shown_s < PROGRESS_EVERY_S)
        return;
    p->shown_s = now;
    char text[160];
    if (p->estimate_s > 0) {
        double percent = 100 * simulated_s / p->estimate_s;
        snprintf(text, sizeof text,
                 "simrun: simulating… %.0f%% (simulated %.1f s of ~%.1f s), %.1f s elapsed",
                 percent < 99 ? percent : 99, simulated_s, p->estimate_s, elapsed);
    } else {
        snprintf(text, sizeof text, "simrun: simulating… simulated %.3g s, %.1f s elapsed",
                 simulated_s, elapsed);
    }
    progress_line(p->c, text);
}

/* cli.h */
void cli_progress_attach(const cli *c, const job *j, const cm_model *cm, const plan *pl,
                         cli_progress *p, engine_options *eo)
{
    if (!c->show_progress)
        return;
    p->c = c;
    p->start_s = wall_now();
    p->shown_s = 0;
    p->estimate_s = pl->predicted_iteration_s;
    if (p->estimate_s <= 0 && pl->num_chunks == 1 && !pl->micro_batch_sizes)
        p->estimate_s = predict_1f1b_iteration_s(cm, &j->pf.cluster, pl, PREDICT_SENDS_RANK_ORDER);
    eo->progress = on_progress;
    eo->progress_ctx = p;
    eo->progress_step_s = p->estimate_s > 0 ? p->estimate_s / PROGRESS_STEPS : 0;
}
