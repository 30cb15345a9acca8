/*
 * sweep_files.c -- the files of a sweep, checked before any point runs
 * (docs/sweeps.md, "Points and run ids" and "Slurm"): no file is written by
 * two of the points (--trace, --plan-out, --frontier) and simsweep (the CSV,
 * its lock file, --slurm-dir's sweep.sbatch, points.txt, fragments and
 * Slurm's logs there), and none is written by one of them while another
 * reads it (the sweep file, platforms, workloads, --plan, --moe-trace, a
 * workload's model.moe_token_trace, simrun, simsweep).
 *
 * Otherwise a point's trace replaces the CSV's lock file (and a second
 * sweep then runs into the CSV beside this one), the sweep's rows or the
 * sweep file, and --slurm replaces the sweep file or the CSV with its point
 * list: each with exit 0.  simrun refuses an output that is one of its own
 * inputs, but it cannot know simsweep's files nor the other points'.
 *
 * Files are compared by canonical name (the longest existing prefix of the
 * path with symbolic links resolved, then the rest, "." and ".." folded) and,
 * where both exist, by device and inode (hard links); both sorted, so that a
 * sweep of 10,000 points each with its own trace costs a sort, not 10^8
 * comparisons.
 */
#define _GNU_SOURCE /* asprintf, memrchr */
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "workload.h"
#include "sweep_internal.h"

char *sweep_canonical_path(const char *path, const char *cwd)
{
    char *abs = NULL, *base = NULL, *rest = NULL;
    if (path[0] == '/')
        abs = strdup(path);
    else if (asprintf(&abs, "%s/%s", cwd, path) < 0)
        abs = NULL;
    if (!abs || (base = realpath(abs, NULL))) {
        free(abs);
        return base;
    }
    for (char *slash = strrchr(abs, '/'); slash && !base;) { /* the longest existing prefix */
        if (slash == abs) {
            base = strdup("/");
            rest = abs + 1;
            break;
        }
        *slash = '\0';
        base = realpath(abs, NULL);
        *slash = '/';
        rest = slash + 1;
        slash = base ? slash : memrchr(abs, '/', (size_t)(slash - abs));
    }
    char *out = base && rest ? malloc(strlen(base) + strlen(rest) + 2) : NULL;
    if (out) {
        size_t n = strlen(base);
        memcpy(out, base, n);
        n -= n == 1; /* "/": components go after it as "/x" */
        for (const char *c = rest; *c;) {
            size_t len = strcspn(c, "/");
            if (len == 2 && c[0] == '.' && c[1] == '.') {
                while (n > 0 && out[n - 1] != '/')
                    n--;
                n -= n > 0;
            } else if (len && !(len == 1 && c[0] == '.')) {
                out[n++] = '/';
                memcpy(out + n, c, len);
                n += len;
            }
            c += len + (c[len] == '/');
        }
        if (n == 0)
            out[n++] = '/';
        out[n] = '\0';
    }
    free(abs);
    free(base);
    return out;
}

/* ---- the files ------------------------------------------------------------ */

typedef enum kind {
    K_OUTPUT, /* a point's --trace, --plan-out, --frontier (written) */
    K_INPUT,  /* a point's --plan, --moe-trace (read) */
    K_SWEEP_FILE,
    K_PLATFORM,
    K_WORKLOAD,
    K_ROUTING, /* a workload's model.moe_token_trace */
    K_SIMRUN,
    K_SIMSWEEP,
    K_CSV, /* from here on: written by simsweep (or Slurm) */
    K_LOCK,
    K_SLURM_DIR, /* from here on: --slurm-dir's */
    K_FRAGMENTS_DIR,
    K_SBATCH,
    K_POINTS,
    K_FRAGMENT,
    K_FRAGMENT_LOCK,
} kind;

typedef struct entry {
    char *canonical;    /* malloc'd */
    const char *path;   /* as given (or in owned) */
    char *owned;        /* a path made here, malloc'd */
    const char *option; /* K_OUTPUT, K_INPUT: the option; K_ROUTING: the workload */
    int point;          /* K_OUTPUT, K_INPUT: the point's index; else -1 */
    int task;           /* K_FRAGMENT, K_FRAGMENT_LOCK: the array task */
    kind kind;
    bool exists;
    dev_t dev;
    ino_t ino;
} entry;

typedef struct files {
    entry *e;
    size_t n, cap;
    const char *cwd;
    const sweep_files *f;
} files;

static bool written(const entry *e) { return e->kind == K_OUTPUT || e->kind >= K_CSV; }

/* Adds path (made by asprintf when fmt is not NULL).  -1 when out of memory. */
static int add(files *l, kind k, const char *path, const char *option, int point, int task,
               const char *fmt, ...)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        entry *grown = realloc(l->e, cap * sizeof *grown);
        if (!grown)
            return -1;
        l->e = grown;
        l->cap = cap;
    }
    entry *e = &l->e[l->n];
    *e = (entry){.path = path, .option = option, .point = point, .task = task, .kind = k};
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(&e->owned, fmt, ap) < 0)
            e->owned = NULL;
        va_end(ap);
        if (!(e->path = e->owned))
            return -1;
    }
    struct stat st;
    if (stat(e->path, &st) == 0)
        e->exists = true, e->dev = st.st_dev, e->ino = st.st_ino;
    e->canonical = sweep_canonical_path(e->path, l->cwd);
    l->n++;
    return e->canonical ? 0 : -1;
}

static bool is_output(const char *opt)
{
    return !strcmp(opt, "--trace") || !strcmp(opt, "--plan-out") || !strcmp(opt, "--frontier");
}

/* The routing traces the workloads name (relative to the workload's folder). */
static int add_routing(files *l, const sweep *s)
{
    const char *last = NULL; /* points come workload by workload */
    for (int i = 0; i < s->num_points; i++) {
        const char *wl = s->points[i].workload;
        if (last && !strcmp(last, wl))
            continue;
        bool seen = false;
        for (size_t k = 0; k < l->n && !seen; k++)
            seen = l->e[k].kind == K_ROUTING && !strcmp(l->e[k].option, wl);
        last = wl;
        wl_workload w;
        np_error ignored; /* a workload that does not load fails its points */
        if (seen || wl_load(wl, NULL, 0, &w, &ignored) != 0)
            continue;
        const char *t = w.model.moe_token_trace, *slash = strrchr(wl, '/');
        int dir = t[0] == '/' || !slash ? 0 : (int)(slash - wl + 1);
        int rc = t[0] ? add(l, K_ROUTING, NULL, wl, -1, -1, "%.*s%s", dir, wl, t) : 0;
        wl_free(&w);
        if (rc)
            return rc;
    }
    return 0;
}

/* Whether point i's platform or workload (k) is in l already: the previous
 * point's (points come platform by platform, workload by workload), or one
 * listed before. */
static bool listed(const files *l, const sweep *s, int i, kind k, const char *path)
{
    const sweep_point *prev = i > 0 ? &s->points[i - 1] : NULL;
    if (prev && !strcmp(k == K_PLATFORM ? prev->platform : prev->workload, path))
        return true;
    for (size_t e = 0; e < l->n; e++)
        if (l->e[e].kind == k && !strcmp(l->e[e].path, path))
            return true;
    return false;
}

static int collect(files *l, const sweep *s)
{
    const sweep_files *f = l->f;
    int rc = add(l, K_SWEEP_FILE, s->path, NULL, -1, -1, NULL);
    for (int i = 0; !rc && i < s->num_points; i++) {
        const sweep_point *p = &s->points[i];
        for (int a = 0; !rc && a + 1 < p->num_args; a++) {
            const char *o = p->args[a];
            bool out = is_output(o), in = !strcmp(o, "--plan") || !strcmp(o, "--moe-trace");
            if (out || in)
                rc = add(l, out ? K_OUTPUT : K_INPUT, p->args[++a], o, i, -1, NULL);
        }
        if (!rc && !listed(l, s, i, K_PLATFORM, p->platform))
            rc = add(l, K_PLATFORM, p->platform, NULL, -1, -1, NULL);
        if (!rc && !listed(l, s, i, K_WORKLOAD, p->workload))
            rc = add(l, K_WORKLOAD, p->workload, NULL, -1, -1, NULL);
    }
    if (!rc)
        rc = add_routing(l, s);
    if (!rc && f->simrun && strchr(f->simrun, '/'))
        rc = add(l, K_SIMRUN, f->simrun, NULL, -1, -1, NULL);
    if (!rc && f->simsweep)
        rc = add(l, K_SIMSWEEP, f->simsweep, NULL, -1, -1, NULL);
    if (!rc && f->csv && !(rc = add(l, K_CSV, f->csv, NULL, -1, -1, NULL)))
        rc = add(l, K_LOCK, NULL, NULL, -1, -1, "%s.lock", f->csv);
    const char *d = f->slurm_dir;
    if (!rc && d && !(rc = add(l, K_SLURM_DIR, d, NULL, -1, -1, NULL)) &&
        !(rc = add(l, K_FRAGMENTS_DIR, NULL, NULL, -1, -1, "%s/fragments", d)) &&
        !(rc = add(l, K_SBATCH, NULL, NULL, -1, -1, "%s/sweep.sbatch", d)))
        rc = add(l, K_POINTS, NULL, NULL, -1, -1, "%s/points.txt", d);
    for (int i = 0; !rc && d && i < s->num_points; i++)
        if (!(rc = add(l, K_FRAGMENT, NULL, NULL, -1, i, "%s/fragments/part-%d.csv", d, i)))
            rc = add(l, K_FRAGMENT_LOCK, NULL, NULL, -1, i, "%s/fragments/part-%d.csv.lock", d, i);
    return rc;
}

/* ---- the check -------------------------------------------------------------- */

static void describe(const entry *e, char *buf, size_t size)
{
    switch (e->kind) {
    case K_OUTPUT:
        snprintf(buf, size, "the %s file of point %d", e->option, e->point);
        break;
    case K_INPUT:
        snprintf(buf, size, "the %s file point %d reads", e->option, e->point);
        break;
    case K_ROUTING:
        snprintf(buf, size, "the routing trace %.300s names (model.moe_token_trace)", e->option);
        break;
    case K_FRAGMENT:
    case K_FRAGMENT_LOCK:
        snprintf(buf, size, "the %s Slurm task %d writes (--slurm-dir's fragments/part-%d.csv%s)",
                 e->kind == K_FRAGMENT ? "CSV fragment" : "fragment's lock file", e->task, e->task,
                 e->kind == K_FRAGMENT ? "" : ".lock");
        break;
    default: {
        static const char *const text[] = {
            [K_SWEEP_FILE] = "the sweep file",
            [K_PLATFORM] = "a platform of the sweep",
            [K_WORKLOAD] = "a workload of the sweep",
            [K_SIMRUN] = "the simrun executable",
            [K_SIMSWEEP] = "simsweep's executable",
            [K_CSV] = "the sweep's CSV",
            [K_LOCK] = "the lock file of the sweep's CSV",
            [K_SLURM_DIR] = "the --slurm-dir folder",
            [K_FRAGMENTS_DIR] = "the --slurm-dir's fragments folder",
            [K_SBATCH] = "the job script simsweep --slurm writes (--slurm-dir's sweep.sbatch)",
            [K_POINTS] = "the point list simsweep --slurm writes (--slurm-dir's points.txt)",
        };
        snprintf(buf, size, "%s", text[e->kind]);
    }
    }
}

/* The option of simsweep's command line (or sweep file key) that names e. */
static const char *key_of(const files *l, const entry *e)
{
    return e->kind >= K_SLURM_DIR ? "--slurm-dir" : l->f->csv_key ? l->f->csv_key : "-o";
}

/* Whether a and b may not be one file: one writes it, and they are not one
 * point's (simrun checks a point's own files: --plan-out may re-save --plan). */
static bool conflict(const entry *a, const entry *b)
{
    return (written(a) || written(b)) && !(a->point >= 0 && a->point == b->point);
}

/* The error for a and b, one file.  The subject is a point's output when
 * there is one, else the file simsweep writes (--slurm-dir's over the CSV). */
static int report(const files *l, const sweep *s, const entry *a, const entry *b, np_error *err)
{
    if (a->kind == K_OUTPUT && b->kind == K_OUTPUT) {
        bool two = strcmp(a->path, b->path) != 0;
        return np_error_set(err, NP_EXIT_INPUT, s->path, b->option, 0,
                            "%s%s%s: points %d and %d would both write this file, each "
                            "replacing the other's: vary %s over one file per point, or drop it",
                            a->path, two ? " and " : "", two ? b->path : "", a->point, b->point,
                            b->option);
    }
    const entry *subj = a, *other = b;
    if (b->kind == K_OUTPUT || (a->kind != K_OUTPUT && (!written(a) || b->kind > a->kind)))
        subj = b, other = a;
    char what[700], as[600];
    describe(other, what, 600);
    if (strcmp(other->path, subj->path) != 0) /* the other spelling of the file */
        snprintf(what + strlen(what), sizeof what - strlen(what), " (%.80s)", other->path);
    describe(subj, as, sizeof as);
    const char *why = !written(other) ? "writing it would destroy that input"
                      : other->kind == K_LOCK
                          ? "simsweep's lock that keeps a second sweep off the CSV would be "
                            "replaced, and a second simsweep could run into the CSV beside it"
                          : "both would write it, each replacing the other's";
    if (subj->kind == K_OUTPUT)
        return np_error_set(err, NP_EXIT_INPUT, s->path, subj->option, 0,
                            "point %d writes %s, which is %s: %s; give the point's %s a file "
                            "of its own",
                            subj->point, subj->path, what, why, subj->option);
    const char *key = key_of(l, subj);
    return np_error_set(err, strcmp(key, "csv") ? NP_EXIT_USAGE : NP_EXIT_INPUT, subj->path, key, 0,
                        "%s is also %s: %s; give %s %s of its own", as, what, why, key,
                        subj->kind >= K_SLURM_DIR ? "a folder" : "a file");
}

/* Slurm writes its logs in --slurm-dir as slurm-JOB_TASK.out, and the tasks
 * their fragments in fragments/ as part-I.csv (--merge takes part-*.csv):
 * no other file may be there under such a name. */
static int check_slurm_names(const files *l, const sweep *s, np_error *err)
{
    const entry *dir = NULL, *frag = NULL;
    for (size_t i = 0; i < l->n; i++)
        if (l->e[i].kind == K_SLURM_DIR || l->e[i].kind == K_FRAGMENTS_DIR)
            *(l->e[i].kind == K_SLURM_DIR ? &dir : &frag) = &l->e[i];
    for (size_t i = 0; dir && frag && i < l->n; i++) {
        const entry *e = &l->e[i];
        const char *slash = strrchr(e->canonical, '/'), *name = slash + 1;
        size_t dlen = (size_t)(slash - e->canonical), nlen = strlen(name);
        bool in_dir =
            strlen(dir->canonical) == dlen && !strncmp(e->canonical, dir->canonical, dlen);
        bool in_frag =
            strlen(frag->canonical) == dlen && !strncmp(e->canonical, frag->canonical, dlen);
        if (e->kind >= K_SLURM_DIR || !((in_dir && !strncmp(name, "slurm-", 6) && nlen > 10 &&
                                         !strcmp(name + nlen - 4, ".out")) ||
                                        (in_frag && !strncmp(name, "part-", 5))))
            continue;
        const char *where =
            in_dir ? "a Slurm log's name in --slurm-dir (slurm-JOB_TASK.out, which Slurm writes)"
                   : "a CSV fragment's name in --slurm-dir's fragments folder (part-I.csv, which "
                     "the Slurm tasks write and --merge reads as part-*.csv)";
        if (e->kind == K_OUTPUT)
            return np_error_set(err, NP_EXIT_INPUT, s->path, e->option, 0,
                                "point %d writes %s, %s; give the point's %s a file of its own",
                                e->point, e->path, where, e->option);
        char what[600];
        describe(e, what, sizeof what);
        return np_error_set(err, NP_EXIT_USAGE, e->path, "--slurm-dir", 0,
                            "%s has %s; give --slurm-dir a folder of its own", what, where);
    }
    return 0;
}

static int by_name(const void *x, const void *y)
{
    const entry *a = *(const entry *const *)x, *b = *(const entry *const *)y;
    int c = strcmp(a->canonical, b->canonical);
    return c ? c : (a->point > b->point) - (a->point < b->point);
}

static int by_inode(const void *x, const void *y)
{
    const entry *a = *(const entry *const *)x, *b = *(const entry *const *)y;
    if (a->dev != b->dev)
        return a->dev < b->dev ? -1 : 1;
    if (a->ino != b->ino)
        return a->ino < b->ino ? -1 : 1;
    return (a->point > b->point) - (a->point < b->point);
}

static bool same_name(const entry *a, const entry *b)
{
    return !strcmp(a->canonical, b->canonical);
}
static bool same_inode(const entry *a, const entry *b)
{
    return a->dev == b->dev && a->ino == b->ino;
}

/* The first conflicting pair of each group of one file, in v sorted by
 * file, then point: since points only grow within a group, the first entry
 * and the first written one are the only candidates for each later one. */
static int scan(const files *l, const sweep *s, entry **v, size_t n,
                bool (*same)(const entry *, const entry *), np_error *err)
{
    for (size_t g = 0; g < n;) {
        size_t end = g + 1, fw = written(v[g]) ? g : SIZE_MAX;
        for (; end < n && same(v[g], v[end]); end++) {
            if (conflict(v[g], v[end]))
                return report(l, s, v[g], v[end], err);
            if (fw != SIZE_MAX && conflict(v[fw], v[end]))
                return report(l, s, v[fw], v[end], err);
            if (fw == SIZE_MAX && written(v[end]))
                fw = end;
        }
        g = end;
    }
    return 0;
}

int sweep_check_files(const sweep *s, const sweep_files *f, np_error *err)
{
    static const sweep_files none = {0};
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return np_error_set(err, NP_EXIT_INTERNAL, s->path, "", 0,
                            "cannot find the current folder");
    files l = {.cwd = cwd, .f = f ? f : &none};
    entry **v = NULL;
    int rc = collect(&l, s) ? -1 : 0;
    if (!rc && !(v = malloc((l.n + 1) * sizeof *v)))
        rc = -1;
    if (rc)
        rc = np_error_set(err, NP_EXIT_INTERNAL, s->path, "", 0, "out of memory");
    if (!rc)
        rc = check_slurm_names(&l, s, err);
    size_t m = 0;
    for (size_t i = 0; !rc && i < l.n; i++)
        v[m++] = &l.e[i];
    if (!rc) {
        qsort(v, m, sizeof *v, by_name);
        rc = scan(&l, s, v, m, same_name, err);
    }
    m = 0;
    for (size_t i = 0; !rc && i < l.n; i++)
        if (l.e[i].exists) /* hard links, and links the names did not resolve */
            v[m++] = &l.e[i];
    if (!rc) {
        qsort(v, m, sizeof *v, by_inode);
        rc = scan(&l, s, v, m, same_inode, err);
    }
    for (size_t i = 0; i < l.n; i++) {
        free(l.e[i].canonical);
        free(l.e[i].owned);
    }
    free(l.e);
    free(v);
    return rc;
}
