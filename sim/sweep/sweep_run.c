/*
 * sweep_run.c -- running points as simrun processes: the local runner
 * (simsweep SWEEP.json), one point (--run-point, --run-point-index), the
 * recording of failures, signals and progress (docs/sweeps.md, "Running").
 *
 * Each point is `simrun --quiet --run-id ID --csv OUT ...`: simrun appends
 * its own row, whole, under the file's lock, at its very end.  A point that
 * exits non-zero gets a row from simsweep (sweep_failure_row) appended the
 * same way.  SIGINT and SIGTERM stop the starting of points and are forwarded
 * to the running ones; a point killed that way writes no row and stays
 * pending, so a re-run picks up exactly the points that have none.
 *
 * The signals are blocked outside sigsuspend(), so none is lost between
 * checking the flags and waiting: SIGCHLD ends a wait when a point finishes,
 * SIGALRM once a second to redraw the progress line.
 */
#define _GNU_SOURCE /* strsignal */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "np_file.h"
#include "sweep.h"

static volatile sig_atomic_t got_stop;   /* the last SIGINT / SIGTERM, 0 before */
static volatile sig_atomic_t stop_count; /* how many of them */

static void on_stop(int sig)
{
    got_stop = sig;
    stop_count++;
}

static void on_wake(int sig) { (void)sig; }

/* The caller's signal mask while run_list() blocks the signals it waits for:
 * what every child gets. */
static sigset_t caller_mask;
static bool signals_installed;

/* ---- child processes ---------------------------------------------------- */

/* A file for a child's stderr: created and unlinked at once. */
static int anonymous_file(void)
{
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/simsweep-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkostemp(path, O_CLOEXEC);
    if (fd >= 0)
        unlink(path);
    return fd;
}

/* Forks argv[0] (searched in PATH when it has no '/') with stdin from /dev/null, stdout to out_fd
 * (or /dev/null when < 0) and stderr to err_fd, under the signal mask `mask`.  The pid, or -1 with
 * errno. */
static pid_t spawn(char *const argv[], int out_fd, int err_fd, const sigset_t *mask)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(out_fd >= 0 ? out_fd : null, 1);
    dup2(err_fd, 2);
    /* our handlers go before the mask is lifted, so that a signal forwarded
     * before exec still ends the child; an ignored SIGINT stays ignored */
    int sigs[] = {SIGINT, SIGTERM, SIGCHLD, SIGALRM};
    for (int i = 0; i < 4; i++) {
        struct sigaction cur;
        sigaction(sigs[i], NULL, &cur);
        if (cur.sa_handler == on_stop || cur.sa_handler == on_wake)
            signal(sigs[i], SIG_DFL);
    }
    sigprocmask(SIG_SETMASK, mask, NULL);
    execvp(argv[0], argv);
    dprintf(2, "simsweep: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* The first line of what fd holds (from its start), at most size-1 bytes. */
static void first_line(int fd, char *buf, size_t size)
{
    ssize_t n = pread(fd, buf, size - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
}

int sweep_command_output(char *const argv[], char **out, char *why, size_t why_size)
{
    *out = NULL;
    *why = '\0';
    int outfd = anonymous_file(), errfd = anonymous_file();
    sigset_t mask;
    if (signals_installed)
        mask = caller_mask;
    else
        sigprocmask(SIG_SETMASK, NULL, &mask);
    pid_t pid = outfd >= 0 && errfd >= 0 ? spawn(argv, outfd, errfd, &mask) : -1;
    if (pid < 0)
        snprintf(why, why_size, "%s", strerror(errno));
    int status = 0;
    while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    char buf[8192] = "";
    if (pid > 0) {
        first_line(outfd, buf, sizeof buf);
        first_line(errfd, why, why_size);
    }
    if (outfd >= 0)
        close(outfd);
    if (errfd >= 0)
        close(errfd);
    if (pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 && (*out = strdup(buf)))
        return 0;
    if (pid > 0 && !*why)
        snprintf(why, why_size, "exit %d",
                 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    return -1;
}

int sweep_simrun_line(const char *simrun, const char *arg, char **line, np_error *err)
{
    char *argv[] = {(char *)simrun, (char *)arg, NULL}, why[512];
    if (sweep_command_output(argv, line, why, sizeof why) == 0 && **line)
        return 0;
    free(*line);
    *line = NULL;
    return np_error_set(err, NP_EXIT_INTERNAL, simrun, "--simrun", 0, "'%s %s' failed: %s", simrun,
                        arg, *why ? why : "no output");
}

/* ---- the runner --------------------------------------------------------- */

typedef struct child {
    pid_t pid;
    const sweep_point *p;
    int err_fd;
} child;

typedef struct runner {
    const sweep *s;
    const sweep_run_options *o;
    sweep_lock lock;        /* on o->csv: no second sweep runs into it */
    char *header, *version; /* simrun's, asked for when first needed */
    child *children;
    int total, done, failed, running;
    int shown_done; /* done when the progress was last shown */
    bool progress, tty;
    double started, last_progress;
    sigset_t orig_mask;
    struct sigaction old_int, old_term, old_chld, old_alrm;
} runner;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void format_duration(double s, char *buf, size_t size)
{
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, size, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else if (t >= 60)
        snprintf(buf, size, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, size, "%lds", t);
}

/* "simsweep: 12/200 done, 1 failed, 30 running... ETA 1m40s": one line
 * redrawn with \r on a terminal every second, plain lines otherwise (a log)
 * when a point has finished since the last one, at most once a second unless
 * `final`. */
static void show_progress(runner *r, bool final)
{
    double t = now();
    if (!r->progress || (!final && (t - r->last_progress < 1 || r->done == r->total ||
                                    (!r->tty && r->done == r->shown_done && r->last_progress > 0))))
        return;
    r->last_progress = t;
    r->shown_done = r->done;
    char eta[32] = "?";
    if (final)
        format_duration(t - r->started, eta, sizeof eta);
    else if (r->done > 0)
        format_duration((t - r->started) / r->done * (r->total - r->done), eta, sizeof eta);
    fprintf(stderr, "%ssimsweep: %d/%d done, %d failed, %d running%s %s%s%s", r->tty ? "\r" : "",
            r->done, r->total, r->failed, r->running, final ? "," : "...", final ? "" : "ETA ", eta,
            r->tty ? "\033[K" : "\n");
    if (final && r->tty)
        fputc('\n', stderr);
    fflush(stderr);
}

/* A message line on stderr, clearing the progress line first on a terminal. */
static void say(const runner *r, const char *fmt, const char *a, int code, const char *b)
{
    if (r->o->quiet)
        return;
    if (r->progress && r->tty)
        fputs("\r\033[K", stderr);
    fprintf(stderr, fmt, a, code, b);
    fflush(stderr);
}

static int need_header(runner *r, np_error *err)
{
    return r->header ? 0 : sweep_simrun_line(r->o->simrun, "--csv-header", &r->header, err);
}

static int need_simrun_lines(runner *r, np_error *err)
{
    int rc = need_header(r, err);
    if (rc)
        return rc;
    if (!r->version) {
        np_error ignored;
        char *line = NULL;
        /* "simrun VERSION"; an older simrun without --version: "unknown" */
        if (sweep_simrun_line(r->o->simrun, "--version", &line, &ignored) == 0 &&
            strncmp(line, "simrun ", 7) == 0)
            r->version = strdup(line + 7);
        free(line);
        if (!r->version && !(r->version = strdup("unknown")))
            return np_error_set(err, NP_EXIT_INTERNAL, r->o->csv, "", 0, "out of memory");
    }
    return 0;
}

/* What follows "simrun: CSV[:LINE]: --csv: " in msg, simrun's first line on
 * stderr, when it names the output CSV (simrun's exit 4, an output failure,
 * names the file and its option: a full disk, a header of another version);
 * else NULL. */
static const char *csv_failure(const char *msg, const char *csv)
{
    size_t n = strlen(csv);
    if (strncmp(msg, "simrun: ", 8) != 0 || strncmp(msg + 8, csv, n) != 0)
        return NULL;
    const char *p = msg + 8 + n;
    if (p[0] == ':' && p[1] >= '0' && p[1] <= '9')
        for (p++; *p >= '0' && *p <= '9'; p++)
            ;
    return strncmp(p, ": --csv: ", 9) == 0 ? p + 9 : NULL;
}

/* A finished child: its failure recorded unless a forwarded signal ended it
 * or simrun could not write the CSV (then the point has no row and err says
 * why: the output is broken, not the point). */
static int finish(runner *r, child *c, int status, np_error *err)
{
    r->running--;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    char msg[1024];
    first_line(c->err_fd, msg, sizeof msg);
    close(c->err_fd);
    if (code == 0) {
        r->done++;
        return 0;
    }
    if (got_stop && WIFSIGNALED(status))
        return 0; /* interrupted: no row, the point stays pending */
    const char *why = code == NP_EXIT_INTERNAL ? csv_failure(msg, r->o->csv) : NULL;
    if (why)
        return np_error_set(err, NP_EXIT_INTERNAL, r->o->csv, "-o", 0,
                            "simrun could not write point %s's row (%s); the point has no row, "
                            "so running the sweep again runs it",
                            c->p->run_id, why);
    if (!*msg && WIFSIGNALED(status))
        snprintf(msg, sizeof msg, "killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else if (!*msg)
        snprintf(msg, sizeof msg, "exit %d without a message", code);
    r->done++;
    r->failed++;
    say(r, "simsweep: point %s failed (exit %d): %s\n", c->p->run_id, code, msg);
    int rc = need_simrun_lines(r, err);
    size_t len = 0;
    char *row = rc ? NULL : sweep_failure_row(r->header, c->p, r->version, code, msg, &len);
    if (!rc && !row)
        rc = np_error_set(err, NP_EXIT_INTERNAL, r->o->csv, "-o", 0, "out of memory");
    if (!rc) /* never a row under another header (the file replaced since the start) */
        rc = sweep_check_header(r->o->csv, r->header, err);
    if (!rc)
        rc = np_file_append(r->o->csv, "-o", r->header, row, len, err);
    free(row);
    return rc;
}

static void install_signals(runner *r)
{
    struct sigaction sa = {0}, cur;
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_stop;
    got_stop = 0;
    stop_count = 0;
    /* a SIGINT ignored by our parent (a background job of sh) stays ignored */
    sigaction(SIGINT, NULL, &cur);
    if (cur.sa_handler != SIG_IGN)
        sigaction(SIGINT, &sa, &r->old_int);
    else
        r->old_int = cur;
    sigaction(SIGTERM, &sa, &r->old_term);
    sa.sa_handler = on_wake;
    sigaction(SIGCHLD, &sa, &r->old_chld);
    sigaction(SIGALRM, &sa, &r->old_alrm);
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGCHLD);
    sigaddset(&block, SIGALRM);
    sigprocmask(SIG_BLOCK, &block, &r->orig_mask);
    caller_mask = r->orig_mask;
    signals_installed = true;
    if (r->progress) {
        struct itimerval tick = {{1, 0}, {1, 0}};
        setitimer(ITIMER_REAL, &tick, NULL);
    }
}

static void restore_signals(runner *r)
{
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    sigaction(SIGINT, &r->old_int, NULL);
    sigaction(SIGTERM, &r->old_term, NULL);
    sigaction(SIGCHLD, &r->old_chld, NULL);
    sigaction(SIGALRM, &r->old_alrm, NULL);
    sigprocmask(SIG_SETMASK, &r->orig_mask, NULL);
    signals_installed = false;
}

/* Runs the listed points, r->o->jobs at a time.  0, SWEEP_EXIT_INTERRUPTED,
 * or an np_exit_code with err set (after every started point has ended). */
static int run_list(runner *r, const sweep_point *const *list, int n, np_error *err)
{
    int jobs = r->o->jobs > 0 ? r->o->jobs : 1;
    r->children = calloc((size_t)jobs, sizeof *r->children);
    if (!r->children)
        return np_error_set(err, NP_EXIT_INTERNAL, r->o->csv, "", 0, "out of memory");
    r->total = n;
    r->started = now();
    r->last_progress = 0;
    install_signals(r);
    sigset_t child_mask = r->orig_mask; /* children get the caller's mask */
    int next = 0, rc = 0, forwarded = 0;
    while (next < n || r->running > 0) {
        while (!got_stop && !rc && next < n && r->running < jobs) {
            child *c = NULL;
            for (int i = 0; i < jobs && !c; i++)
                if (r->children[i].pid == 0)
                    c = &r->children[i];
            char **argv = sweep_point_argv(list[next], r->o->simrun, r->o->csv);
            c->err_fd = argv ? anonymous_file() : -1;
            c->pid = c->err_fd >= 0 ? spawn(argv, -1, c->err_fd, &child_mask) : -1;
            free(argv);
            if (c->pid < 0) {
                rc = np_error_set(err, NP_EXIT_INTERNAL, r->o->simrun, "", 0,
                                  "cannot start a simrun process: %s", strerror(errno));
                if (c->err_fd >= 0)
                    close(c->err_fd);
                c->pid = 0;
                break;
            }
            c->p = list[next++];
            r->running++;
        }
        if (rc || got_stop)
            next = n;                    /* start nothing more */
        while (forwarded < stop_count) { /* every SIGINT/SIGTERM goes on to the points */
            forwarded++;
            for (int i = 0; i < jobs; i++)
                if (r->children[i].pid > 0)
                    kill(r->children[i].pid, got_stop);
        }
        int status, reaped = 0;
        pid_t pid;
        while (r->running > 0 && (pid = waitpid(-1, &status, WNOHANG)) > 0) {
            reaped++;
            for (int i = 0; i < jobs; i++)
                if (r->children[i].pid == pid) {
                    np_error later; /* err keeps the first error */
                    int frc = finish(r, &r->children[i], status, rc ? &later : err);
                    if (frc && !rc)
                        rc = frc;
                    r->children[i].pid = 0;
                }
        }
        /* a point just ended: start the next one before sleeping (the
         * SIGCHLD that woke us is spent, another may never come); the
         * progress line then counts it as running */
        if (reaped && !rc && !got_stop && next < n)
            continue;
        show_progress(r, false);
        if (r->running > 0 && !(forwarded < stop_count))
            sigsuspend(&r->orig_mask); /* until SIGCHLD, SIGALRM, SIGINT or SIGTERM */
        else if (r->running == 0 && (rc || got_stop))
            break;
    }
    if (r->progress)
        show_progress(r, true);
    restore_signals(r);
    free(r->children);
    r->children = NULL;
    if (!rc && got_stop) {
        rc = SWEEP_EXIT_INTERRUPTED;
        if (!r->o->quiet)
            fprintf(stderr,
                    "simsweep: stopped by %s: %d of %d points not run; run the same "
                    "command again to resume\n",
                    strsignal(got_stop), n - r->done, n);
    }
    return rc;
}

static void runner_free(runner *r)
{
    sweep_lock_release(&r->lock);
    free(r->header);
    free(r->version);
}

int sweep_run_local(const sweep *s, const sweep_run_options *o, np_error *err)
{
    runner r = {.s = s, .o = o, .lock = {.fd = -1}};
    r.tty = isatty(2);
    r.progress = !o->quiet;
    sweep_done done = {0};
    const sweep_point **list = calloc((size_t)s->num_points + 1, sizeof *list);
    int rc = list ? 0 : np_error_set(err, NP_EXIT_INTERNAL, s->path, "", 0, "out of memory");
    if (!rc)
        rc = need_simrun_lines(&r, err);
    if (!rc)
        rc = np_file_check_target(o->csv, "-o", NP_FILE_APPEND, err);
    if (!rc) /* before the CSV is read: what it holds is then all there is */
        rc = sweep_lock_take(&r.lock, o->csv, true, err);
    if (!rc)
        rc = sweep_done_read(o->csv, r.header, &done, err);
    int n = 0, ok = 0, failed_before = 0;
    for (int i = 0; !rc && i < s->num_points; i++) {
        sweep_point_state st = sweep_done_state(&done, s->points[i].run_id);
        if (sweep_is_pending(st, o->retry_failed))
            list[n++] = &s->points[i];
        else if (st == SWEEP_OK)
            ok++;
        else
            failed_before++;
    }
    if (!rc && !o->quiet) {
        fprintf(stderr, "simsweep: %s: %d points, %d already in %s", s->name, s->num_points,
                s->num_points - n, o->csv);
        if (failed_before)
            fprintf(stderr, " (%d failed; --retry-failed re-runs them)", failed_before);
        fprintf(stderr, ", %d to run, %d at a time\n", n, o->jobs);
    }
    if (!rc && n > 0)
        rc = run_list(&r, list, n, err);
    if (!rc && (r.failed || failed_before))
        rc = SWEEP_EXIT_FAILED;
    sweep_done_free(&done);
    free(list);
    runner_free(&r);
    return rc;
}

int sweep_run_point(const sweep *s, const sweep_point *p, const sweep_run_options *o, np_error *err)
{
    runner r = {.s = s, .o = o, .lock = {.fd = -1}};
    sweep_done done;
    int rc = np_file_check_target(o->csv, "-o", NP_FILE_APPEND, err);
    if (!rc) /* shared: other --run-point jobs run beside it, never a runner */
        rc = sweep_lock_take(&r.lock, o->csv, false, err);
    if (!rc) /* rows go only under this simrun's header: refused before anything runs */
        rc = need_header(&r, err);
    if (!rc)
        rc = sweep_done_read(o->csv, r.header, &done, err);
    if (rc) {
        runner_free(&r);
        return rc;
    }
    sweep_point_state st = sweep_done_state(&done, p->run_id);
    sweep_done_free(&done);
    if (st == SWEEP_OK) {
        if (!o->quiet)
            fprintf(stderr, "simsweep: point %s already has an ok row in %s\n", p->run_id, o->csv);
        runner_free(&r);
        return 0;
    }
    const sweep_point *list[1] = {p};
    rc = run_list(&r, list, 1, err);
    if (!rc && r.failed)
        rc = SWEEP_EXIT_FAILED;
    runner_free(&r);
    return rc;
}
