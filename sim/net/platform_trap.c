/*
 * platform_trap.c -- SimGrid's aborts on a bad platform, caught.
 *
 * SimGrid 3.32 does not return on a bad platform: an XML syntax error, an
 * unparsable number ("speed=\"fast\""), an unknown attribute or an
 * inconsistent fat tree throw a C++ exception that nothing in C can catch;
 * SimGrid's terminate handler logs it ("Parse error at FILE:LINE: ...", or a
 * CRITICAL line plus a backtrace for xbt_die) and calls abort(): exit status
 * 134, a core dump where enabled (measured on this machine).  Rather than
 * re-implement SimGrid's parser, which would drift from what SimGrid accepts,
 * the load runs with SIGABRT caught and stderr redirected to a temporary
 * file.  On success the captured text is replayed to stderr unchanged.  On
 * abort the handler siglongjmp()s back here; the first error line SimGrid
 * logged becomes the np_error (file and line taken from "Parse error at
 * FILE:LINE:"), so the user sees one line and exit code 2.  The price: after
 * a failed load SimGrid's state is half-built, so the process must exit
 * (every caller does; a second load in one process is refused anyway --
 * SimGrid holds one platform per process).  The xbt_exception log category,
 * which logs only that last message, is set to show errors even under
 * --log=root.thresh:critical.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <simgrid/engine.h>
#include <xbt/log.h>

#include "platform_internal.h"

typedef struct abort_trap {
    struct sigaction old_action;
    struct sigaction old_segv_action; /* SimGrid dereferences a missing route */
    int saved_stderr_fd;              /* -1 when stderr is not redirected */
    FILE *capture;
} abort_trap;

static sigjmp_buf trap_jump;
static volatile sig_atomic_t trap_armed;
static abort_trap *trap_active; /* for the atexit hook */

static void trap_on_abort(int sig)
{
    if (trap_armed) {
        trap_armed = 0;
        siglongjmp(trap_jump, 1);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Restores stderr and SIGABRT; replays the captured text when asked. */
static void trap_end(abort_trap *t, int replay)
{
    trap_armed = 0;
    trap_active = NULL;
    sigaction(SIGABRT, &t->old_action, NULL);
    sigaction(SIGSEGV, &t->old_segv_action, NULL);
    if (t->saved_stderr_fd < 0)
        return;
    fflush(stderr);
    dup2(t->saved_stderr_fd, STDERR_FILENO);
    close(t->saved_stderr_fd);
    t->saved_stderr_fd = -1;
    if (replay) {
        char buf[4096];
        size_t n;
        rewind(t->capture);
        while ((n = fread(buf, 1, sizeof buf, t->capture)) > 0)
            fwrite(buf, 1, n, stderr);
    }
}

/* If SimGrid exit()s instead of aborting, its message must not stay in the
 * temporary file. */
static void trap_at_exit(void)
{
    if (trap_active)
        trap_end(trap_active, 1);
}

static void trap_begin(abort_trap *t)
{
    static int at_exit_registered;
    if (!at_exit_registered)
        at_exit_registered = atexit(trap_at_exit) == 0;
    t->saved_stderr_fd = -1;
    fflush(stderr);
    t->capture = tmpfile();
    if (t->capture) {
        t->saved_stderr_fd = dup(STDERR_FILENO);
        if (t->saved_stderr_fd < 0 || dup2(fileno(t->capture), STDERR_FILENO) < 0) {
            if (t->saved_stderr_fd >= 0)
                close(t->saved_stderr_fd);
            t->saved_stderr_fd = -1;
        }
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = trap_on_abort;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGABRT, &sa, &t->old_action);
    sigaction(SIGSEGV, &sa, &t->old_segv_action);
    trap_active = t;
}

static void trap_close(abort_trap *t)
{
    if (t->capture)
        fclose(t->capture);
    t->capture = NULL;
}

/* The text after "[category/ERROR] " or "[category/CRITICAL] " on the first
 * such line that says something ("Exiting now." does not). */
static int trap_first_error(abort_trap *t, char *out, size_t size)
{
    char line[2048];
    out[0] = '\0';
    if (!t->capture)
        return 0;
    rewind(t->capture);
    while (fgets(line, sizeof line, t->capture)) {
        const char *mark = strstr(line, "/ERROR] ");
        if (!mark)
            mark = strstr(line, "/CRITICAL] ");
        if (!mark)
            continue;
        const char *text = strstr(mark, "] ") + 2;
        if (strncmp(text, "Exiting now.", 12) == 0)
            continue;
        snprintf(out, size, "%s", text);
        out[strcspn(out, "\r\n")] = '\0';
        return 1;
    }
    return 0;
}

/* "Parse error at FILE:LINE: TEXT" -> line and TEXT; otherwise line 0. */
static int simgrid_message_to_error(const char *path, const char *message, np_error *err)
{
    static const char prefix[] = "Parse error at ";
    if (!message[0])
        return np_error_set(err, NP_EXIT_INPUT, path, "", 0,
                            "SimGrid rejected the platform (it logged no message)");
    if (strncmp(message, prefix, sizeof prefix - 1) == 0) {
        for (const char *p = strchr(message, ':'); p; p = strchr(p + 1, ':')) {
            char *end;
            long line = strtol(p + 1, &end, 10);
            if (end > p + 1 && isdigit((unsigned char)p[1]) && end[0] == ':' && end[1] == ' ')
                return np_error_set(err, NP_EXIT_INPUT, path, "", (int)line, "%s", end + 2);
        }
    }
    return np_error_set(err, NP_EXIT_INPUT, path, "", 0, "%s", message);
}

int platform_guarded(void (*fn)(void *ctx), void *ctx, char *message, size_t size)
{
    xbt_log_control_set("xbt_exception.thresh:error");
    abort_trap trap;
    trap_begin(&trap);
    if (sigsetjmp(trap_jump, 1) == 0) {
        trap_armed = 1;
        fn(ctx);
        trap_end(&trap, 1);
        trap_close(&trap);
        return 0;
    }
    trap_first_error(&trap, message, size);
    trap_end(&trap, 0);
    trap_close(&trap);
    return 1;
}

static void load_platform(void *path) { simgrid_load_platform(path); }

int platform_load_into_simgrid(const char *path, np_error *err)
{
    static int loads;
    if (loads++)
        return np_error_set(err, NP_EXIT_INTERNAL, path, "", 0,
                            "SimGrid holds one platform per process; one was already loaded");
    char message[1024];
    if (platform_guarded(load_platform, (void *)path, message, sizeof message) == 0)
        return 0;
    return simgrid_message_to_error(path, message, err);
}
