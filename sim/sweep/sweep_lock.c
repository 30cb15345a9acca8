/*
 * sweep_lock.c -- one sweep at a time per output CSV (docs/sweeps.md,
 * "Running on this machine"): two simsweep runners on one file would each
 * run every pending point, since neither sees the other's rows before it
 * has started them.
 *
 * The lock is a flock on a file of its own, OUT.csv.lock, beside the CSV:
 * the CSV's own flock belongs to the row appenders (np_file_append takes it
 * exclusively for each row, readers share it), and a POSIX lock on the CSV
 * would be dropped whenever this process closes any descriptor of the CSV
 * (and, on NFS, where flock is emulated with POSIX locks, would block the
 * appenders).  The local runner and --merge hold it exclusively, with their
 * pid written in the file for the message of the one refused; --run-point
 * holds it shared, so that any number of GNU parallel or Slurm jobs run
 * points into one file together, but never beside a runner.  Where flock is
 * not supported a POSIX lock on the lock file stands in (this process opens
 * that file nowhere else, so it is not dropped early).
 *
 * The lock file is left in place (emptied): removing it while another
 * process has it open would let two processes hold "the" lock on two files.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "sweep.h"

/* Takes the lock without waiting.  0, EWOULDBLOCK when another process
 * holds it (*holder its pid when known, else 0), or another errno. */
static int try_lock(int fd, bool exclusive, bool *posix, pid_t *holder)
{
    *holder = 0;
    *posix = false;
    while (flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
        if (errno == EINTR)
            continue;
        if (errno == EWOULDBLOCK)
            return EWOULDBLOCK;
        if (errno != ENOLCK && errno != EOPNOTSUPP && errno != EINVAL)
            return errno;
        *posix = true; /* no flock here: a POSIX lock on the whole file */
        struct flock fl = {.l_type = exclusive ? F_WRLCK : F_RDLCK, .l_whence = SEEK_SET};
        if (fcntl(fd, F_SETLK, &fl) == 0)
            return 0;
        if (errno != EAGAIN && errno != EACCES)
            return errno;
        if (fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK)
            *holder = fl.l_pid;
        return EWOULDBLOCK;
    }
    return 0;
}

/* The pid an exclusive holder wrote in the lock file, or 0. */
static pid_t written_pid(int fd)
{
    char buf[32];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *end;
    long pid = strtol(buf, &end, 10);
    return pid > 0 && *end == '\n' ? (pid_t)pid : 0;
}

int sweep_lock_take(sweep_lock *l, const char *csv, bool exclusive, np_error *err)
{
    memset(l, 0, sizeof *l);
    l->fd = -1;
    if (asprintf(&l->path, "%s.lock", csv) < 0) {
        l->path = NULL;
        return np_error_set(err, NP_EXIT_INTERNAL, csv, "", 0, "out of memory");
    }
    l->fd = open(l->path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0666);
    if (l->fd < 0) {
        int e = errno;
        int rc = np_error_set(err, NP_EXIT_INTERNAL, csv, "-o", 0,
                              "cannot open the lock file %s (simsweep keeps it beside the CSV so "
                              "that two sweeps never run into one file): %s",
                              l->path, strerror(e));
        sweep_lock_release(l);
        return rc;
    }
    bool posix;
    pid_t holder;
    int e = try_lock(l->fd, exclusive, &posix, &holder);
    if (e == EWOULDBLOCK) {
        /* a runner (exclusive, its pid in the file), or --run-point jobs
         * (shared): a shared lock is refused only by the former */
        bool shared_holders = false;
        if (exclusive && !posix && flock(l->fd, LOCK_SH | LOCK_NB) == 0) {
            shared_holders = true;
            flock(l->fd, LOCK_UN);
        }
        if (!holder && !shared_holders)
            holder = written_pid(l->fd);
        char who[64] = "another simsweep";
        if (holder)
            snprintf(who, sizeof who, "another simsweep (pid %ld)", (long)holder);
        int rc =
            np_error_set(err, NP_EXIT_INTERNAL, csv, "-o", 0,
                         "%s %s running points into this file (%s holds %s): wait for %s "
                         "to end, or use another file",
                         shared_holders ? "simsweep --run-point jobs (GNU parallel, Slurm)" : who,
                         shared_holders ? "are" : "is", shared_holders ? "each" : "it", l->path,
                         shared_holders ? "them" : "it");
        sweep_lock_release(l);
        return rc;
    }
    if (e) {
        int rc = np_error_set(err, NP_EXIT_INTERNAL, csv, "-o", 0, "cannot lock %s: %s", l->path,
                              strerror(e));
        sweep_lock_release(l);
        return rc;
    }
    l->exclusive = exclusive;
    if (exclusive) { /* for the message of the one refused */
        char pid[32];
        int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
        if (ftruncate(l->fd, 0) == 0) /* on failure only a message's detail is lost */
            (void)!pwrite(l->fd, pid, (size_t)n, 0);
    }
    return 0;
}

void sweep_lock_release(sweep_lock *l)
{
    if (l->fd >= 0) {
        if (l->exclusive) /* no pid of a process that holds nothing */
            (void)!ftruncate(l->fd, 0);
        close(l->fd); /* releases the lock */
    }
    free(l->path);
    memset(l, 0, sizeof *l);
    l->fd = -1;
}
