/*
 * engine_progress.c -- engine_options.progress: a light actor that tells the
 * caller how far the simulated clock has got, for a progress line.
 *
 * It sits on the first worker's NPU, sleeps progress_step_s simulated
 * seconds at a time and calls progress(simulated seconds since the run's
 * start, progress_ctx) after each sleep.  It starts no execution and no
 * flow, and is not counted in engine_result.activities; it is a SimGrid
 * daemon, killed as soon as the last worker ends, so the run ends when it
 * would have ended without it.  Only its wake-ups are extra events.
 *
 * A run that deadlocks never ends its workers: the actor then gives up after
 * PROGRESS_IDLE_STEPS steps in which no activity was started, so that
 * SimGrid still finds the deadlock (engine_run() reports it).
 */
#include "engine_internal.h"

/* A step without any new activity is either a long operation or a
 * deadlock; this many in a row is taken for a deadlock. */
enum { PROGRESS_IDLE_STEPS = 1000 };

/* Without a step given: 10 ms of simulated time. */
#define PROGRESS_DEFAULT_STEP_S 1e-2

static void progress_main(int argc, char **argv)
{
    engine *e = sg_actor_self_get_data();
    const engine_options *o = e->opt;
    double step = o->progress_step_s > 0 ? o->progress_step_s : PROGRESS_DEFAULT_STEP_S;
    sg_actor_daemonize(sg_actor_self());
    long seen = -1;
    for (int idle = 0; idle < PROGRESS_IDLE_STEPS;) {
        sg_actor_sleep_for(step);
        idle = e->net.activities == seen ? idle + 1 : 0;
        seen = e->net.activities;
        o->progress(engine_now(e), o->progress_ctx);
    }
}

void engine_progress_start(engine *e)
{
    if (!e->opt->progress || !e->workers)
        return;
    sg_actor_t a = sg_actor_init("progress", e->workers[0].ep.hosts[0]);
    sg_actor_set_data(a, e);
    sg_actor_start(a, progress_main, 0, NULL);
}
