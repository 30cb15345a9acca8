/*
 * test_np_file.c -- output files written whole or not at all (np_file.h).
 *
 * Each case works in its own fresh directory under /tmp: a committed file
 * replaces the old one only at commit, keeps its mode and leaves no
 * temporary file; an aborted or failed write (a child whose file size limit
 * makes write() fail) leaves the old file as it was; the target check
 * refuses a directory, a FIFO, a device, a read-only file (also for root)
 * and a missing folder; appended records from several processes keep one
 * header and whole rows, and a failed append leaves no part of its row.
 * The input side: a whole regular file read up to a limit, anything else
 * refused without blocking.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "np_file.h"
#include "testutil.h"

/* A fresh directory; its files are removed by remove_dir(). */
static void make_dir(char *dir, size_t size)
{
    snprintf(dir, size, "/tmp/npusim_file_XXXXXX");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[512];
    while (d && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) != 0)
            rmdir(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* Entries of dir other than . and .. */
static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)))
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    if (d)
        closedir(d);
    return n;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(text, f);
    fclose(f);
}

/* The file's content (static buffer, "" when unreadable). */
static const char *read_text(const char *path)
{
    static char buf[4096];
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return buf;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void test_commit_replaces_at_commit_only(void)
{
    char dir[64], path[128];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/out.json", dir);
    write_text(path, "old\n");
    CU_ASSERT_EQUAL(chmod(path, 0640), 0);
    np_file nf;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(np_file_begin(&nf, path, "--trace", &err), 0);
    fputs("new\n", nf.f);
    fflush(nf.f);
    CU_ASSERT_STRING_EQUAL(read_text(path), "old\n"); /* not yet */
    CU_ASSERT_EQUAL(count_entries(dir), 2);           /* target and temporary file */
    CU_ASSERT_EQUAL(np_file_commit(&nf, &err), 0);
    CU_ASSERT_STRING_EQUAL(read_text(path), "new\n");
    CU_ASSERT_EQUAL(count_entries(dir), 1);
    struct stat st;
    CU_ASSERT_EQUAL(stat(path, &st), 0);
    CU_ASSERT_EQUAL(st.st_mode & 07777, 0640);
    CU_ASSERT_PTR_NULL(nf.f);
    remove_dir(dir);
}

static void test_new_file_and_symlink(void)
{
    char dir[64], path[128], real[128];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/link.json", dir);
    snprintf(real, sizeof real, "%s/real.json", dir);
    np_file nf;
    np_error err;
    /* a new file */
    CU_ASSERT_EQUAL_FATAL(np_file_begin(&nf, real, "--plan-out", &err), 0);
    fputs("one", nf.f);
    CU_ASSERT_EQUAL(np_file_commit(&nf, &err), 0);
    CU_ASSERT_STRING_EQUAL(read_text(real), "one");
    /* through a symbolic link: the file it names is replaced, the link stays */
    CU_ASSERT_EQUAL_FATAL(symlink("real.json", path), 0);
    CU_ASSERT_EQUAL_FATAL(np_file_begin(&nf, path, "--plan-out", &err), 0);
    fputs("two", nf.f);
    CU_ASSERT_EQUAL(np_file_commit(&nf, &err), 0);
    struct stat st;
    CU_ASSERT_EQUAL(lstat(path, &st), 0);
    CU_ASSERT_TRUE(S_ISLNK(st.st_mode));
    CU_ASSERT_STRING_EQUAL(read_text(real), "two");
    CU_ASSERT_EQUAL(count_entries(dir), 2);
    remove_dir(dir);
}

static void test_abort_leaves_original(void)
{
    char dir[64], path[128];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/out.json", dir);
    write_text(path, "original");
    np_file nf;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(np_file_begin(&nf, path, "--trace", &err), 0);
    fputs("partial", nf.f);
    np_file_abort(&nf);
    np_file_abort(&nf); /* harmless twice */
    CU_ASSERT_STRING_EQUAL(read_text(path), "original");
    CU_ASSERT_EQUAL(count_entries(dir), 1);
    remove_dir(dir);
}

/* In a child whose file size limit is 1 KiB: write 64 KiB and commit.
 * Exit 0 when the commit failed with NP_EXIT_INTERNAL naming the path. */
static void failing_commit_child(const char *path)
{
    struct rlimit rl = {1024, 1024};
    signal(SIGXFSZ, SIG_IGN); /* write() fails with EFBIG instead */
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
        _exit(3);
    np_file nf;
    np_error err;
    if (np_file_begin(&nf, path, "--trace", &err) != 0)
        _exit(4);
    for (int i = 0; i < 64 * 1024; i++)
        fputc('x', nf.f);
    int rc = np_file_commit(&nf, &err);
    _exit(rc == NP_EXIT_INTERNAL && strstr(err.source, path) ? 0 : 5);
}

static void test_failed_write_leaves_original(void)
{
    char dir[64], path[128];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/out.json", dir);
    write_text(path, "original");
    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0)
        failing_commit_child(path);
    int status;
    CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
    CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CU_ASSERT_STRING_EQUAL(read_text(path), "original");
    CU_ASSERT_EQUAL(count_entries(dir), 1); /* the temporary file is gone */
    remove_dir(dir);
}

/* np_file_check_target refuses path in both modes, with err naming path and
 * the key, and leaves path as it was. */
static void expect_refused(const char *path, const char *why)
{
    struct stat before, after;
    int existed = lstat(path, &before) == 0;
    for (int m = 0; m < 2; m++) {
        np_error err;
        np_error_clear(&err);
        CU_ASSERT_EQUAL(np_file_check_target(path, "--csv", (np_file_mode)m, &err),
                        NP_EXIT_INTERNAL);
        CU_ASSERT_STRING_EQUAL(err.source, path);
        CU_ASSERT_STRING_EQUAL(err.key, "--csv");
        if (!strstr(err.text, why))
            fprintf(stderr, "\n  %s: '%s' does not say '%s'\n", path, err.text, why);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.text, why));
    }
    np_file nf;
    np_error err;
    CU_ASSERT_EQUAL(np_file_begin(&nf, path, "--trace", &err), NP_EXIT_INTERNAL);
    CU_ASSERT_PTR_NULL(nf.f);
    CU_ASSERT_EQUAL(np_file_append(path, "--csv", "h", "r\n", 2, &err), NP_EXIT_INTERNAL);
    CU_ASSERT_EQUAL(lstat(path, &after) == 0, existed);
    if (existed) {
        CU_ASSERT_EQUAL(after.st_mode, before.st_mode);
        CU_ASSERT_EQUAL(after.st_ino, before.st_ino);
        CU_ASSERT_EQUAL(after.st_size, before.st_size);
    }
}

static void test_check_target_refuses(void)
{
    char dir[64], path[160];
    make_dir(dir, sizeof dir);
    expect_refused(dir, "directory");
    snprintf(path, sizeof path, "%s/fifo", dir);
    CU_ASSERT_EQUAL_FATAL(mkfifo(path, 0666), 0);
    expect_refused(path, "not a regular file");
    expect_refused("/dev/null", "not a regular file");
    struct stat st;
    if (stat("/dev/full", &st) == 0)
        expect_refused("/dev/full", "not a regular file");
    snprintf(path, sizeof path, "%s/readonly.csv", dir);
    write_text(path, "keep");
    CU_ASSERT_EQUAL(chmod(path, 0444), 0); /* refused for root too */
    expect_refused(path, "read-only");
    CU_ASSERT_STRING_EQUAL(read_text(path), "keep");
    snprintf(path, sizeof path, "%s/missing/x.csv", dir);
    expect_refused(path, "does not exist");
    snprintf(path, sizeof path, "%s/dangling", dir);
    CU_ASSERT_EQUAL(symlink("nowhere", path), 0);
    expect_refused(path, "missing file");
    snprintf(path, sizeof path, "%s/", dir);
    expect_refused(path, "directory");
    /* a new file in a writable folder is fine, and checking creates nothing */
    np_error err;
    snprintf(path, sizeof path, "%s/new.csv", dir);
    CU_ASSERT_EQUAL(np_file_check_target(path, "--csv", NP_FILE_APPEND, &err), 0);
    CU_ASSERT_EQUAL(np_file_check_target(path, "--trace", NP_FILE_REPLACE, &err), 0);
    CU_ASSERT_NOT_EQUAL(access(path, F_OK), 0);
    remove_dir(dir);
}

#define WRITERS 6
#define ROWS 20
#define ROW_BYTES 9000 /* more than a pipe buffer page and stdio's 4 KiB */

/* Row r of writer w: "w,r,xxxx...x\n", ROW_BYTES long. */
static void make_row(char *buf, int w, int r)
{
    int n = snprintf(buf, ROW_BYTES, "%d,%d,", w, r);
    memset(buf + n, 'a' + w, ROW_BYTES - 1 - n);
    buf[ROW_BYTES - 1] = '\n';
}

static void test_concurrent_appends_stay_whole(void)
{
    char dir[64], path[128];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/rows.csv", dir);
    fflush(NULL);
    pid_t pids[WRITERS];
    for (int w = 0; w < WRITERS; w++) {
        pids[w] = fork();
        CU_ASSERT_FATAL(pids[w] >= 0);
        if (pids[w] == 0) {
            static char row[ROW_BYTES];
            np_error err;
            for (int r = 0; r < ROWS; r++) {
                make_row(row, w, r);
                if (np_file_append(path, "--csv", "writer,row,fill", row, ROW_BYTES, &err))
                    _exit(1);
            }
            _exit(0);
        }
    }
    for (int w = 0; w < WRITERS; w++) {
        int status;
        CU_ASSERT_EQUAL(waitpid(pids[w], &status, 0), pids[w]);
        CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    FILE *f = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    static char line[2 * ROW_BYTES], want[ROW_BYTES + 1];
    int headers = 0, rows = 0, whole = 0, seen[WRITERS] = {0};
    CU_ASSERT_PTR_NOT_NULL(fgets(line, sizeof line, f));
    CU_ASSERT_STRING_EQUAL(line, "writer,row,fill\n");
    while (fgets(line, sizeof line, f)) {
        int w, r;
        headers += strcmp(line, "writer,row,fill\n") == 0;
        rows++;
        if (sscanf(line, "%d,%d,", &w, &r) != 2 || w < 0 || w >= WRITERS || r != seen[w])
            continue;
        make_row(want, w, r);
        want[ROW_BYTES] = '\0';
        whole += strcmp(line, want) == 0;
        seen[w]++;
    }
    fclose(f);
    CU_ASSERT_EQUAL(headers, 0); /* the one header is the first line */
    CU_ASSERT_EQUAL(rows, WRITERS * ROWS);
    CU_ASSERT_EQUAL(whole, WRITERS * ROWS);
    remove_dir(dir);
}

/* A child with a file size limit just above the file: the append fails and
 * the file keeps its size (no partial row). */
static void test_failed_append_leaves_no_part(void)
{
    char dir[64], path[128];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/rows.csv", dir);
    np_error err;
    CU_ASSERT_EQUAL_FATAL(np_file_append(path, "--csv", "a,b", "1,2\n", 4, &err), 0);
    CU_ASSERT_STRING_EQUAL(read_text(path), "a,b\n1,2\n");
    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        struct rlimit rl = {16, 16}; /* 8 bytes there, room for 8 more */
        signal(SIGXFSZ, SIG_IGN);
        static char row[1000];
        memset(row, 'z', sizeof row);
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
            _exit(3);
        int rc = np_file_append(path, "--csv", "a,b", row, sizeof row, &err);
        _exit(rc == NP_EXIT_INTERNAL && strstr(err.source, path) ? 0 : 5);
    }
    int status;
    CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
    CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CU_ASSERT_STRING_EQUAL(read_text(path), "a,b\n1,2\n");
    remove_dir(dir);
}

/* np_file_read: the whole file, NUL bytes and all, up to and including
 * max_bytes; one byte more, a FIFO (without blocking), a directory and a
 * missing file refused by name. */
static void test_read_whole_regular_files(void)
{
    char dir[64], path[128], fifo[128];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/ten", dir);
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fwrite("ab\0defghij", 1, 10, f);
    fclose(f);
    np_error err;
    char *text = NULL;
    size_t len = 0;
    CU_ASSERT_EQUAL(np_file_read(path, "test file", 10, &text, &len, &err), 0);
    CU_ASSERT_EQUAL(len, 10);
    CU_ASSERT_TRUE(text && memcmp(text, "ab\0defghij", 11) == 0); /* and the NUL after */
    free(text);
    CU_ASSERT_EQUAL(np_file_read(path, "test file", 9, &text, &len, &err), NP_EXIT_INPUT);
    CU_ASSERT_PTR_NULL(text);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "cannot read test file: larger than 9 bytes"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.source, "ten"));

    write_text(path, "");
    CU_ASSERT_EQUAL(np_file_read(path, "test file", 10, &text, &len, &err), 0);
    CU_ASSERT_TRUE(len == 0 && text && text[0] == '\0');
    free(text);

    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
    const char *refused[] = {fifo, dir, "/dev/zero"};
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(np_file_read(refused[i], "test file", 10, &text, &len, &err),
                        NP_EXIT_INPUT);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "cannot read test file: not a regular file"));
    }
    snprintf(path, sizeof path, "%s/missing", dir);
    CU_ASSERT_EQUAL(np_file_read(path, "test file", 10, &text, &len, &err), NP_EXIT_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "cannot open test file: No such file"));
    CU_ASSERT_TRUE(np_text_has_bom("\xEF\xBB\xBF{}", 5));
    CU_ASSERT_FALSE(np_text_has_bom("\xEF\xBB", 2));
    CU_ASSERT_FALSE(np_text_has_bom("{}", 2));
    remove_dir(dir);
}

void register_np_file_tests(void)
{
    TEST_SUITE("np_file", {"commit_replaces_at_commit_only", test_commit_replaces_at_commit_only},
               {"new_file_and_symlink", test_new_file_and_symlink},
               {"abort_leaves_original", test_abort_leaves_original},
               {"failed_write_leaves_original", test_failed_write_leaves_original},
               {"check_target_refuses", test_check_target_refuses},
               {"concurrent_appends_stay_whole", test_concurrent_appends_stay_whole},
               {"failed_append_leaves_no_part", test_failed_append_leaves_no_part},
               {"read_whole_regular_files", test_read_whole_regular_files});
}
