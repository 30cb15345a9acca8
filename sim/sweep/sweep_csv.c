/*
 * sweep_csv.c -- CSV files as simsweep reads them: an RFC 4180 reader (quoted
 * fields holding commas, doubled quotes and line ends), the index of the run
 * ids a CSV already holds (resume), and --merge of fragments.
 *
 * Files are read under a shared flock: simrun and simsweep append rows under
 * the exclusive one (np_file_append), so a reader never sees half a row.  A
 * last line without its line end can then only come from a writer killed in
 * the middle of write(2); it is reported, never silently dropped or glued to.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "np_file.h"
#include "sweep.h"

#define INPUT_ERROR(err, src, line, ...)                                                           \
    np_error_set((err), NP_EXIT_INPUT, (src), "", (line), __VA_ARGS__)

/* ---- the reader --------------------------------------------------------- */

/* Appends to a growable array of n elements of size `size`. */
static int grow(void **array, int n, int *cap, size_t size)
{
    if (n < *cap)
        return 0;
    int c = *cap ? 2 * *cap : 16;
    void *p = realloc(*array, (size_t)c * size);
    if (!p)
        return -1;
    *array = p;
    *cap = c;
    return 0;
}

/* Parses the record at text[*pos], its fields unquoted into buf at the
 * same offsets (a field never grows when unquoted), so that text keeps the
 * raw record.  Returns 0, 1 at a partial record (end of text before its line
 * end), -1 on a malformed one, -2 out of memory. */
static int parse_record(const char *text, char *buf, size_t len, size_t *pos, csv_record *r,
                        int *line)
{
    size_t i = *pos;
    int cap = 0;
    r->fields = NULL;
    r->num_fields = 0;
    r->raw = text + i;
    r->line = *line;
    for (;;) {
        if (grow((void **)&r->fields, r->num_fields, &cap, sizeof *r->fields))
            return -2;
        char *out = buf + i, *field = out;
        r->fields[r->num_fields++] = field;
        if (i < len && text[i] == '"') { /* quoted: up to the quote not doubled */
            i++;
            for (;;) {
                if (i >= len)
                    return 1;
                if (text[i] == '"' && i + 1 < len && text[i + 1] == '"') {
                    *out++ = '"';
                    i += 2;
                } else if (text[i] == '"') {
                    i++;
                    break;
                } else {
                    if (text[i] == '\n')
                        (*line)++;
                    *out++ = text[i++];
                }
            }
            if (i < len && text[i] != ',' && text[i] != '\n' && text[i] != '\r')
                return -1; /* text after the closing quote */
        } else {
            while (i < len && text[i] != ',' && text[i] != '\n' && text[i] != '\r') {
                if (text[i] == '"')
                    return -1; /* a quote inside an unquoted field */
                *out++ = text[i++];
            }
        }
        if (i >= len)
            return 1;
        char end = text[i];
        if (end == ',') {
            *out = '\0';
            i++;
            continue;
        }
        if (end == '\r' && (i + 1 >= len || text[i + 1] != '\n'))
            return i + 1 >= len ? 1 : -1; /* a bare CR ends no record */
        i += end == '\r' ? 2 : 1;
        (*line)++;
        *out = '\0';
        break;
    }
    r->raw_len = (size_t)(text + i - r->raw);
    *pos = i;
    return 0;
}

void csv_free(csv_table *t)
{
    for (int i = 0; i < t->num_records; i++)
        free(t->records[i].fields);
    free(t->records);
    free(t->header);
    free(t->text);
    free(t->fields);
    memset(t, 0, sizeof *t);
}

int csv_parse(const char *source, char *text, size_t len, csv_table *t, np_error *err)
{
    memset(t, 0, sizeof *t);
    t->text = text;
    t->len = len;
    if (!(t->fields = malloc(len + 1))) {
        csv_free(t);
        return np_error_set(err, NP_EXIT_INTERNAL, source, "", 0, "out of memory");
    }
    size_t pos = 0;
    int line = 1, cap = 0, first = 1;
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) { /* a byte-order mark (Excel's) */
        t->bom = true;
        pos = 3;
    }
    while (pos < len) {
        if (text[pos] == '\n' || (text[pos] == '\r' && pos + 1 < len && text[pos + 1] == '\n')) {
            pos += text[pos] == '\r' ? 2 : 1; /* an empty line */
            line++;
            continue;
        }
        csv_record r;
        int start_line = line;
        int rc = parse_record(text, t->fields, len, &pos, &r, &line);
        if (rc) {
            free(r.fields);
            csv_free(t);
            if (rc == -2)
                return np_error_set(err, NP_EXIT_INTERNAL, source, "", 0, "out of memory");
            if (rc == 1)
                return INPUT_ERROR(err, source, start_line,
                                   "the last row has no line end: a writer was killed in the "
                                   "middle of it; remove that partial row");
            return INPUT_ERROR(err, source, start_line,
                               "malformed CSV (a quote in the wrong "
                               "place): not a simrun CSV?");
        }
        if (first) {
            t->header = r.fields;
            t->num_columns = r.num_fields;
            t->header_raw = r.raw;
            t->header_len = r.raw_len - (r.raw[r.raw_len - 2] == '\r' ? 2 : 1);
            first = 0;
            continue;
        }
        if (r.num_fields != t->num_columns) {
            int n = r.num_fields, columns = t->num_columns;
            free(r.fields);
            csv_free(t);
            return INPUT_ERROR(err, source, start_line, "%d fields, the header has %d", n, columns);
        }
        if (grow((void **)&t->records, t->num_records, &cap, sizeof *t->records)) {
            free(r.fields);
            csv_free(t);
            return np_error_set(err, NP_EXIT_INTERNAL, source, "", 0, "out of memory");
        }
        t->records[t->num_records++] = r;
    }
    return 0;
}

int csv_read(const char *path, csv_table *t, bool *missing, np_error *err)
{
    memset(t, 0, sizeof *t);
    if (missing)
        *missing = false;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0 && errno == ENOENT) {
        if (missing)
            *missing = true;
        return 0;
    }
    if (fd < 0)
        return np_error_set(err, NP_EXIT_INPUT, path, "", 0, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return np_error_set(err, NP_EXIT_INPUT, path, "", 0, "not a regular file");
    }
    while (flock(fd, LOCK_SH) != 0 && errno == EINTR)
        ; /* without flock (some network file systems) read as is */
    char *text = NULL;
    size_t len = 0, cap = 0;
    int e = 0;
    for (;;) {
        if (len + 65536 + 1 > cap) {
            cap = 2 * cap + 65536 + 1;
            char *p = realloc(text, cap);
            if (!p) {
                e = ENOMEM;
                break;
            }
            text = p;
        }
        ssize_t n = read(fd, text + len, cap - len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            e = errno;
            break;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(fd); /* releases the lock */
    if (e) {
        free(text);
        return np_error_set(err, NP_EXIT_INPUT, path, "", 0, "cannot read: %s", strerror(e));
    }
    if (!text && !(text = malloc(1)))
        return np_error_set(err, NP_EXIT_INTERNAL, path, "", 0, "out of memory");
    text[len] = '\0';
    return csv_parse(path, text, len, t, err);
}

int csv_column(const csv_table *t, const char *name)
{
    for (int i = 0; i < t->num_columns; i++)
        if (strcmp(t->header[i], name) == 0)
            return i;
    return -1;
}

/* ---- finished points ---------------------------------------------------- */

static int entry_cmp(const void *a, const void *b)
{
    return strcmp(((const struct sweep_done_entry *)a)->run_id,
                  ((const struct sweep_done_entry *)b)->run_id);
}

/* The run_id and status columns of t, or an error naming path. */
static int identity_columns(const csv_table *t, const char *path, int *id, int *status,
                            np_error *err)
{
    *id = csv_column(t, "run_id");
    *status = csv_column(t, "status");
    if (*id < 0 || *status < 0)
        return np_error_set(err, NP_EXIT_INPUT, path, "run_id", 1,
                            "no run_id and status columns: written by an older simrun? Sweep "
                            "into a new file");
    return 0;
}

/* Why rows cannot be appended to a file whose first line is not header. */
#define OTHER_HEADER_TEXT                                                                          \
    "the header is not this simrun's (--csv-header): written by another version? Sweep into a "    \
    "new file (docs/csv-format.md says how to carry old rows over)"
#define BOM_HEADER_TEXT                                                                            \
    "the file starts with a UTF-8 byte-order mark (EF BB BF), as Excel saves a CSV: simrun "       \
    "appends rows only under its own header line, without one; sweep into a new file, or save "    \
    "this one without the mark"

int sweep_done_read(const char *path, const char *header, sweep_done *d, np_error *err)
{
    memset(d, 0, sizeof *d);
    csv_table t;
    int rc = csv_read(path, &t, NULL, err);
    if (rc || !t.header) {
        if (!rc && header && t.bom) /* only the mark: nothing appends under it */
            rc = np_error_set(err, NP_EXIT_INPUT, path, "", 1, "%s", BOM_HEADER_TEXT);
        csv_free(&t);
        return rc;
    }
    int id, status;
    if (header && t.bom)
        rc = np_error_set(err, NP_EXIT_INPUT, path, "", 1, "%s", BOM_HEADER_TEXT);
    else if (header &&
             (strlen(header) != t.header_len || strncmp(t.header_raw, header, t.header_len) != 0))
        rc = np_error_set(err, NP_EXIT_INPUT, path, "", 1, "%s", OTHER_HEADER_TEXT);
    if (!rc)
        rc = identity_columns(&t, path, &id, &status, err);
    if (!rc && t.num_records && !(d->entries = calloc((size_t)t.num_records, sizeof *d->entries)))
        rc = np_error_set(err, NP_EXIT_INTERNAL, path, "", 0, "out of memory");
    for (int i = 0; !rc && i < t.num_records; i++) {
        const char *rid = t.records[i].fields[id];
        if (!*rid)
            continue;
        d->entries[d->count].ok = strcmp(t.records[i].fields[status], "ok") == 0;
        if (!(d->entries[d->count++].run_id = strdup(rid)))
            rc = np_error_set(err, NP_EXIT_INTERNAL, path, "", 0, "out of memory");
    }
    csv_free(&t);
    if (rc) {
        sweep_done_free(d);
        return rc;
    }
    if (d->count > 1) /* entries is NULL for a file of a header alone */
        qsort(d->entries, (size_t)d->count, sizeof *d->entries, entry_cmp);
    /* one entry per run id, ok when any of its rows is */
    int kept = 0;
    for (int i = 0; i < d->count; i++) {
        if (kept && strcmp(d->entries[kept - 1].run_id, d->entries[i].run_id) == 0) {
            d->entries[kept - 1].ok |= d->entries[i].ok;
            free(d->entries[i].run_id);
            continue;
        }
        d->entries[kept++] = d->entries[i];
    }
    d->count = kept;
    return 0;
}

int sweep_check_header(const char *path, const char *header, np_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0 && errno == ENOENT)
        return 0; /* np_file_append writes the header */
    if (fd < 0)
        return np_error_set(err, NP_EXIT_INTERNAL, path, "-o", 0, "cannot open: %s",
                            strerror(errno));
    while (flock(fd, LOCK_SH) != 0 && errno == EINTR)
        ;                             /* without flock (some network file systems) read as is */
    size_t want = strlen(header) + 4; /* a mark or a CR, and the line end */
    char *buf = malloc(want + 1);
    ssize_t n = buf ? pread(fd, buf, want, 0) : -1;
    int e = errno;
    close(fd);
    int rc = 0;
    if (!buf)
        rc = np_error_set(err, NP_EXIT_INTERNAL, path, "", 0, "out of memory");
    else if (n < 0)
        rc = np_error_set(err, NP_EXIT_INTERNAL, path, "-o", 0, "cannot read: %s", strerror(e));
    else if (n >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0)
        rc = np_error_set(err, NP_EXIT_INPUT, path, "", 1, "%s", BOM_HEADER_TEXT);
    else if (n > 0) {
        buf[n] = '\0';
        size_t line = strcspn(buf, "\n");
        if (line > 0 && buf[line - 1] == '\r')
            line--;
        if (line != strlen(header) || memcmp(buf, header, line) != 0)
            rc = np_error_set(err, NP_EXIT_INPUT, path, "", 1, "%s", OTHER_HEADER_TEXT);
    }
    free(buf);
    return rc;
}

sweep_point_state sweep_done_state(const sweep_done *d, const char *run_id)
{
    struct sweep_done_entry key = {.run_id = (char *)run_id};
    const struct sweep_done_entry *e =
        d->count ? bsearch(&key, d->entries, (size_t)d->count, sizeof key, entry_cmp) : NULL;
    return !e ? SWEEP_NEW : e->ok ? SWEEP_OK : SWEEP_FAILED;
}

void sweep_done_free(sweep_done *d)
{
    for (int i = 0; i < d->count; i++)
        free(d->entries[i].run_id);
    free(d->entries);
    memset(d, 0, sizeof *d);
}

bool sweep_is_pending(sweep_point_state st, bool retry_failed)
{
    return st == SWEEP_NEW || (st == SWEEP_FAILED && retry_failed);
}

/* ---- --merge ------------------------------------------------------------ */

/* A row chosen for a result: the table and record it comes from.  A result
 * is a run id and, since one run of --planner all or --moe-policy all writes
 * a row per planner or policy under one run id, its planner and policy.  A
 * failed row is a point's, whatever its planner and policy columns say (they
 * come from the point's options: '' and 'none' where simrun's ok row says
 * 'megatron' and ''), so it gives way to any ok row of its run id. */
typedef struct chosen {
    const char *run_id, *planner, *policy;
    int table, record;
    int order; /* the row's place in the files; once chosen, its result's first */
    int group; /* once chosen: where its run id first appeared */
    bool ok;
} chosen;

static int same_result(const chosen *x, const chosen *y)
{
    int c = strcmp(x->run_id, y->run_id);
    if (!c)
        c = strcmp(x->planner, y->planner);
    return c ? c : strcmp(x->policy, y->policy);
}

static int chosen_cmp(const void *a, const void *b)
{
    const chosen *x = a, *y = b;
    int c = same_result(x, y);
    return c ? c : x->order - y->order;
}

static int order_cmp(const void *a, const void *b)
{
    const chosen *x = a, *y = b;
    return x->group != y->group ? x->group - y->group : x->order - y->order;
}

/* Chooses the rows of c[0..m), sorted by chosen_cmp, into c[0..return):
 * per run id, the first ok row of each of its results, else (no ok row) its
 * first row; rows without a run id are all kept.  In the order run ids first
 * appear, then their results'. */
static int choose_rows(chosen *c, int m)
{
    int out = 0;
    for (int i = 0; i < m;) {
        int j = i + 1; /* the run id's rows: c[i..j) */
        while (j < m && *c[i].run_id && strcmp(c[j].run_id, c[i].run_id) == 0)
            j++;
        int first = i;
        bool any_ok = false;
        for (int k = i; k < j; k++) {
            first = c[k].order < c[first].order ? k : first;
            any_ok |= c[k].ok;
        }
        int group = c[first].order;
        if (!any_ok) {
            chosen keep = c[first];
            keep.group = group;
            c[out++] = keep;
        }
        for (int a = i; any_ok && a < j;) {
            int b = a + 1; /* one result: c[a..b), by order */
            while (b < j && same_result(&c[b], &c[a]) == 0)
                b++;
            int pick = a;
            while (pick < b && !c[pick].ok)
                pick++;
            if (pick < b) { /* out <= a <= pick: nothing unread is overwritten */
                chosen keep = c[pick];
                keep.order = c[a].order;
                keep.group = group;
                c[out++] = keep;
            }
            a = b;
        }
        i = j;
    }
    return out;
}

int sweep_merge(const char *out, const char *const *fragments, int num_fragments, int *kept,
                int *dropped, np_error *err)
{
    int n = num_fragments + 1, rc = 0, total = 0, header_of = -1;
    csv_table *t = calloc((size_t)n, sizeof *t);
    if (!t)
        return np_error_set(err, NP_EXIT_INTERNAL, out, "", 0, "out of memory");
    for (int i = 0; !rc && i < n; i++) {
        bool missing;
        const char *path = i == 0 ? out : fragments[i - 1];
        rc = csv_read(path, &t[i], &missing, err);
        if (!rc && missing && i > 0)
            rc = np_error_set(err, NP_EXIT_INPUT, path, "", 0, "no such file");
        if (rc || !t[i].header)
            continue;
        int id, status;
        if ((rc = identity_columns(&t[i], path, &id, &status, err)))
            break;
        if (header_of < 0)
            header_of = i;
        else if (t[i].header_len != t[header_of].header_len ||
                 memcmp(t[i].header_raw, t[header_of].header_raw, t[i].header_len) != 0)
            rc = np_error_set(err, NP_EXIT_INPUT, path, "", 1, "another header than %s's",
                              i ? (header_of ? fragments[header_of - 1] : out) : out);
        total += t[i].num_records;
    }
    chosen *c = rc ? NULL : calloc((size_t)total + 1, sizeof *c);
    if (!rc && !c)
        rc = np_error_set(err, NP_EXIT_INTERNAL, out, "", 0, "out of memory");
    int m = 0;
    for (int i = 0; !rc && i < n; i++) {
        if (!t[i].header)
            continue;
        int id = csv_column(&t[i], "run_id"), status = csv_column(&t[i], "status");
        int planner = csv_column(&t[i], "planner"), policy = csv_column(&t[i], "moe_policy");
        for (int r = 0; r < t[i].num_records; r++) {
            const csv_record *rec = &t[i].records[r];
            c[m] = (chosen){.run_id = rec->fields[id],
                            .planner = planner >= 0 ? rec->fields[planner] : "",
                            .policy = policy >= 0 ? rec->fields[policy] : "",
                            .table = i,
                            .record = r,
                            .order = m,
                            .ok = strcmp(rec->fields[status], "ok") == 0};
            m++;
        }
    }
    int out_rows = 0;
    if (!rc) {
        qsort(c, (size_t)m, sizeof *c, chosen_cmp);
        out_rows = choose_rows(c, m);
        qsort(c, (size_t)out_rows, sizeof *c, order_cmp);
    }
    np_file nf = {0};
    if (!rc && header_of >= 0 && !(rc = np_file_begin(&nf, out, "--merge", err))) {
        fwrite(t[header_of].header_raw, 1, t[header_of].header_len, nf.f);
        fputc('\n', nf.f);
        for (int i = 0; i < out_rows; i++) {
            const csv_record *r = &t[c[i].table].records[c[i].record];
            fwrite(r->raw, 1, r->raw_len, nf.f);
        }
        rc = np_file_commit(&nf, err);
    }
    if (kept)
        *kept = rc ? 0 : out_rows;
    if (dropped)
        *dropped = rc ? 0 : m - out_rows;
    free(c);
    for (int i = 0; i < n; i++)
        csv_free(&t[i]);
    free(t);
    return rc;
}
