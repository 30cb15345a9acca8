/*
 * np_file.c -- whole-or-nothing output files (see np_file.h).
 */
#define _GNU_SOURCE /* mkostemp */
#include "np_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* The longest part of the target's name kept in the temporary file's name,
 * so that ".NAME.XXXXXX" stays under NAME_MAX (255). */
#define TMP_NAME_KEEP 200

/* Every error here is an output failure naming the path and the caller's key. */
#define FILE_ERROR(err, path, key, ...)                                                            \
    np_error_set((err), NP_EXIT_INTERNAL, (path), (key), 0, __VA_ARGS__)

/* The folder of path (malloc'd): "." for a bare name, "/" for "/x". */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

static const char *base_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static const char *special_kind(mode_t m)
{
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISSOCK(m))
        return "a socket";
    return "a special file";
}

/* The folder `dir` of output path exists and lets us create files. */
static int check_dir(const char *dir, const char *path, const char *key, np_error *err)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        if (errno == ENOENT)
            return FILE_ERROR(err, path, key, "directory '%s' does not exist", dir);
        return FILE_ERROR(err, path, key, "cannot reach directory '%s': %s", dir, strerror(errno));
    }
    if (!S_ISDIR(st.st_mode))
        return FILE_ERROR(err, path, key, "'%s' is not a directory", dir);
    if (access(dir, W_OK | X_OK) != 0)
        return FILE_ERROR(err, path, key, "cannot create files in directory '%s': %s", dir,
                          strerror(errno));
    return 0;
}

/* An existing regular file we may write: access() says so, and it has at
 * least one write permission bit (root passes access() on a 0444 file; such
 * a file is read-only all the same). */
static int check_writable(const char *path, const struct stat *st, const char *key, np_error *err)
{
    if (access(path, W_OK) != 0)
        return FILE_ERROR(err, path, key, "the file is not writable: %s", strerror(errno));
    if (!(st->st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)))
        return FILE_ERROR(err, path, key,
                          "the file is read-only (no write permission bit); refusing to "
                          "write to it");
    return 0;
}

/* The file a write to path lands in: path itself, or what the symbolic link
 * path resolves to (malloc'd; NULL with errno set on failure). */
static char *resolve_target(const char *path)
{
    struct stat lst;
    if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode))
        return realpath(path, NULL);
    return strdup(path);
}

int np_file_check_target(const char *path, const char *key, np_file_mode mode, np_error *err)
{
    struct stat st;
    if (!path || !*path)
        return FILE_ERROR(err, "<command line>", key, "empty file name");
    if (path[strlen(path) - 1] == '/')
        return FILE_ERROR(err, path, key, "names a directory, expected a file");
    if (stat(path, &st) != 0) {
        int e = errno;
        struct stat lst;
        if (e == ENOENT && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode))
            return FILE_ERROR(err, path, key, "a symbolic link to a missing file");
        if (e != ENOENT)
            return FILE_ERROR(err, path, key, "cannot reach the file: %s", strerror(e));
        char *dir = dir_of(path);
        if (!dir)
            return FILE_ERROR(err, path, key, "out of memory");
        int rc = check_dir(dir, path, key, err);
        free(dir);
        return rc;
    }
    if (S_ISDIR(st.st_mode))
        return FILE_ERROR(err, path, key, "is a directory, expected a file");
    if (!S_ISREG(st.st_mode))
        return FILE_ERROR(err, path, key, "not a regular file (%s); refusing to write onto it",
                          special_kind(st.st_mode));
    int rc = check_writable(path, &st, key, err);
    if (rc || mode == NP_FILE_APPEND)
        return rc;
    /* Replacing: the temporary file goes next to the file the path names. */
    char *target = resolve_target(path);
    if (!target)
        return FILE_ERROR(err, path, key, "cannot resolve the path: %s", strerror(errno));
    char *dir = dir_of(target);
    rc = dir ? check_dir(dir, path, key, err) : FILE_ERROR(err, path, key, "out of memory");
    free(dir);
    free(target);
    return rc;
}

/* path's folder with symbolic links resolved, "/", and its name: a path
 * that need not exist yet, as a comparable string (NULL when the folder
 * cannot be resolved). */
static char *canonical_name(const char *path)
{
    char *dir = dir_of(path);
    char *real = dir ? realpath(dir, NULL) : NULL;
    free(dir);
    if (!real)
        return NULL;
    size_t n = strlen(real) + strlen(base_of(path)) + 2;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%s/%s", real, base_of(path));
    free(real);
    return out;
}

bool np_file_same(const char *a, const char *b)
{
    if (!a || !b || !*a || !*b)
        return false;
    struct stat sa, sb;
    bool ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if (ea && eb)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    if (ea != eb) /* one exists, the other not yet */
        return false;
    char *ca = canonical_name(a), *cb = canonical_name(b);
    bool same = ca && cb && strcmp(ca, cb) == 0;
    free(ca);
    free(cb);
    return same;
}

bool np_text_has_bom(const char *text, size_t len)
{
    return len >= 3 && (unsigned char)text[0] == 0xEF && (unsigned char)text[1] == 0xBB &&
           (unsigned char)text[2] == 0xBF;
}

static void too_large(char *problem, size_t size, size_t max_bytes)
{
    if (max_bytes >= (1u << 20) && max_bytes % (1u << 20) == 0)
        snprintf(problem, size, "larger than %zu MiB", max_bytes >> 20);
    else
        snprintf(problem, size, "larger than %zu bytes", max_bytes);
}

int np_file_read(const char *path, const char *what, size_t max_bytes, char **text, size_t *len,
                 np_error *err)
{
    *text = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return np_error_set(err, NP_EXIT_INPUT, path, "", 0, "cannot open %s: %s", what,
                            strerror(errno));
    struct stat st;
    char problem[64] = "";
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        snprintf(problem, sizeof problem, "not a regular file");
    else if ((unsigned long long)st.st_size > max_bytes)
        too_large(problem, sizeof problem, max_bytes);
    /* Room for one byte more than fstat saw, so that the end of the file is
     * read before the buffer is full; a file that grows while it is read is
     * read to its end, but never past max_bytes. */
    size_t size = 0, cap = problem[0] ? 0 : (size_t)st.st_size + 2;
    char *buf = cap ? malloc(cap) : NULL;
    if (cap && !buf)
        snprintf(problem, sizeof problem, "out of memory");
    while (buf && !problem[0]) {
        if (size + 1 == cap) { /* full: the file grew since fstat */
            size_t more_cap = cap > max_bytes / 2 ? max_bytes + 2 : 2 * cap;
            char *more = size <= max_bytes ? realloc(buf, more_cap) : NULL;
            if (!more) {
                if (size > max_bytes)
                    too_large(problem, sizeof problem, max_bytes);
                else
                    snprintf(problem, sizeof problem, "out of memory");
                break;
            }
            buf = more;
            cap = more_cap;
        }
        ssize_t n = read(fd, buf + size, cap - 1 - size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            snprintf(problem, sizeof problem, "%s", strerror(errno));
        if (n <= 0)
            break;
        size += (size_t)n;
    }
    close(fd);
    if (problem[0]) {
        free(buf);
        return np_error_set(err, NP_EXIT_INPUT, path, "", 0, "cannot read %s: %s", what, problem);
    }
    buf[size] = '\0';
    *text = buf;
    *len = size;
    return 0;
}

/* ---- whole files -------------------------------------------------------- */

/* The process umask, read without changing it where /proc tells it. */
static mode_t current_umask(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
        unsigned int m;
        if (sscanf(line, "Umask: %o", &m) == 1) {
            fclose(f);
            return (mode_t)m;
        }
    }
    if (f)
        fclose(f);
    mode_t m = umask(022);
    umask(m);
    return m;
}

static void release(np_file *nf)
{
    free(nf->target);
    free(nf->tmp);
    nf->target = nf->tmp = NULL;
    nf->f = NULL;
}

void np_file_abort(np_file *nf)
{
    if (!nf)
        return;
    if (nf->f)
        fclose(nf->f);
    if (nf->tmp)
        unlink(nf->tmp);
    release(nf);
}

int np_file_begin(np_file *nf, const char *path, const char *key, np_error *err)
{
    memset(nf, 0, sizeof *nf);
    int rc = np_file_check_target(path, key, NP_FILE_REPLACE, err);
    if (rc)
        return rc;
    snprintf(nf->path, sizeof nf->path, "%s", path);
    snprintf(nf->key, sizeof nf->key, "%s", key ? key : "");
    nf->target = resolve_target(path);
    char *dir = nf->target ? dir_of(nf->target) : NULL;
    if (dir) {
        const char *base = base_of(nf->target);
        size_t size = strlen(dir) + strlen(base) + 16;
        if ((nf->tmp = malloc(size)))
            snprintf(nf->tmp, size, "%s/.%.*s.XXXXXX", dir, TMP_NAME_KEEP, base);
    }
    if (!nf->tmp) {
        int e = errno;
        free(dir);
        release(nf);
        return FILE_ERROR(err, path, key, "cannot prepare the file: %s", strerror(e));
    }
    int fd = mkostemp(nf->tmp, O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        rc = FILE_ERROR(err, path, key, "cannot create a temporary file in directory '%s': %s", dir,
                        strerror(e));
        free(dir);
        free(nf->tmp);
        nf->tmp = NULL; /* nothing was created */
        release(nf);
        return rc;
    }
    free(dir);
    struct stat st;
    if (stat(nf->target, &st) == 0) { /* keep the replaced file's mode and owner */
        if (st.st_uid != geteuid() || st.st_gid != getegid())
            (void)!fchown(fd, st.st_uid, st.st_gid); /* allowed for root only; best effort */
        (void)!fchmod(fd, st.st_mode & 07777);
    } else {
        (void)!fchmod(fd, 0666 & ~current_umask());
    }
    nf->f = fdopen(fd, "w");
    if (!nf->f) {
        int e = errno;
        close(fd);
        np_file_abort(nf);
        return FILE_ERROR(err, path, key, "cannot open the temporary file: %s", strerror(e));
    }
    return 0;
}

/* Makes the rename durable; a folder that cannot be fsync'ed is no error. */
static void sync_dir_of(const char *target)
{
    char *dir = dir_of(target);
    if (!dir)
        return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

int np_file_commit(np_file *nf, np_error *err)
{
    if (!nf->f) {
        np_file_abort(nf);
        return np_error_set(err, NP_EXIT_INTERNAL, nf->path, nf->key, 0,
                            "internal error: the file is not open for writing");
    }
    int e = 0;
    const char *what = "cannot write the file";
    errno = 0;
    if (fflush(nf->f) != 0)
        e = errno ? errno : EIO;
    else if (ferror(nf->f))
        e = EIO;
    else if (fsync(fileno(nf->f)) != 0)
        e = errno;
    if (fclose(nf->f) != 0 && !e)
        e = errno;
    nf->f = NULL;
    struct stat st;
    if (!e && lstat(nf->target, &st) == 0 && !S_ISREG(st.st_mode)) {
        /* the target changed since it was checked: never replace a non-file */
        e = EEXIST;
        what = "the target is no longer a regular file, not replaced";
    }
    if (!e && rename(nf->tmp, nf->target) != 0) {
        e = errno;
        what = "cannot move the written file into place";
    }
    if (e) {
        int rc = np_error_set(err, NP_EXIT_INTERNAL, nf->path, nf->key, 0,
                              "%s: %s (the file was left as it was)", what, strerror(e));
        np_file_abort(nf);
        return rc;
    }
    sync_dir_of(nf->target);
    release(nf);
    return 0;
}

/* ---- appended records ----------------------------------------------------- */

/* An exclusive lock on the whole file: flock, or a POSIX lock where flock is
 * not supported.  0 or an errno. */
static int lock_file(int fd)
{
    while (flock(fd, LOCK_EX) != 0) {
        if (errno == EINTR)
            continue;
        if (errno != ENOLCK && errno != EOPNOTSUPP && errno != EINVAL)
            return errno;
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
        while (fcntl(fd, F_SETLKW, &fl) != 0)
            if (errno != EINTR)
                return errno;
        return 0;
    }
    return 0;
}

FILE *np_file_open_shared(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    while (flock(fileno(f), LOCK_SH) != 0 && errno == EINTR)
        ; /* without flock (some network file systems) read as is */
    return f;
}

/* 0 or an errno. */
static int write_all(int fd, const char *buf, size_t size)
{
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, buf + done, size - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (n == 0)
            return EIO;
        done += (size_t)n;
    }
    return 0;
}

int np_file_append(const char *path, const char *key, const char *header, const char *record,
                   size_t len, np_error *err)
{
    int rc = np_file_check_target(path, key, NP_FILE_APPEND, err);
    if (rc)
        return rc;
    /* O_NONBLOCK: a FIFO put there since the check must not hang the open. */
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0666);
    if (fd < 0)
        return FILE_ERROR(err, path, key, "cannot open the file for appending: %s",
                          strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return FILE_ERROR(err, path, key, "not a regular file; refusing to write onto it");
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0)
        (void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    int e = lock_file(fd);
    const char *what = "cannot lock the file";
    char *buf = NULL;
    off_t before = 0;
    if (!e) {
        what = "cannot append to the file";
        if (fstat(fd, &st) != 0)
            e = errno;
        before = st.st_size;
    }
    /* a last record cut short (an edit, a process killed in write()): the new
     * one would be glued to it.  Checked under the lock, where no other
     * writer is half-way through its row. */
    char last = '\n';
    if (!e && before > 0 && pread(fd, &last, 1, before - 1) == 1 && last != '\n') {
        close(fd);
        return np_error_set(err, NP_EXIT_INTERNAL, path, key, 0, "%s", NP_CUT_ROW_TEXT);
    }
    size_t head = !e && header && before == 0 ? strlen(header) + 1 : 0;
    if (!e && !(buf = malloc(head + len + 1)))
        e = ENOMEM;
    if (!e) {
        if (head) {
            memcpy(buf, header, head - 1);
            buf[head - 1] = '\n';
        }
        memcpy(buf + head, record, len);
        /* a SIGINT or SIGTERM (simsweep stopping a sweep) waits until the
         * row is whole: it would otherwise end the process between two
         * write()s, or in one, with no chance to truncate */
        sigset_t stop, old;
        sigemptyset(&stop);
        sigaddset(&stop, SIGINT);
        sigaddset(&stop, SIGTERM);
        sigaddset(&stop, SIGHUP);
        sigaddset(&stop, SIGQUIT);
        sigprocmask(SIG_BLOCK, &stop, &old);
        e = write_all(fd, buf, head + len);
        if (e) /* all or nothing: drop the part that was written */
            (void)!ftruncate(fd, before);
        sigprocmask(SIG_SETMASK, &old, NULL);
    }
    free(buf);
    if (close(fd) != 0 && !e) /* also releases the lock */
        e = errno;
    if (e)
        return np_error_set(err, NP_EXIT_INTERNAL, path, key, 0, "%s: %s", what, strerror(e));
    return 0;
}

void np_csv_field(FILE *f, const char *s)
{
    if (!s)
        s = "";
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

int np_stdout_finish(const char *program)
{
    errno = 0;
    int e = fflush(stdout) != 0 ? (errno ? errno : EIO) : 0;
    if (!e && ferror(stdout))
        e = EIO;
    if (!e)
        return 0;
    fprintf(stderr, "%s: cannot write standard output: %s\n", program, strerror(e));
    return NP_EXIT_INTERNAL;
}
