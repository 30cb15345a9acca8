/* testutil.c -- see testutil.h. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine.h"

const char *test_path(const char *relative)
{
    static char bufs[8][1024];
    static int next;
    char *b = bufs[next++ % 8];
    snprintf(b, sizeof bufs[0], "%s/%s", NPUSIM_SOURCE_DIR, relative);
    return b;
}

double test_rel_diff(double a, double b)
{
    double scale = fmax(fmax(fabs(a), fabs(b)), 1e-300);
    return fabs(a - b) / scale;
}

void test_add_suite(const char *name, const test_case *cases, int count)
{
    CU_pSuite suite = CU_add_suite(name, NULL, NULL);
    for (int i = 0; i < count; i++)
        CU_add_test(suite, cases[i].name, cases[i].fn);
}

int test_in_child(void (*fn)(void *ctx, int fd), void *ctx, void *result, size_t size)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(fds[0]);
        fn(ctx, fds[1]);
        close(fds[1]);
        _exit(0);
    }
    close(fds[1]);
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fds[0], (char *)result + got, size - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return got == size && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

void test_simgrid_init(void)
{
    static char arg0[] = "npusim_tests";
    static char *argv[] = {arg0, NULL};
    int argc = 1;
    engine_simgrid_init(&argc, argv);
}

int test_write_all(int fd, const void *data, size_t size)
{
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, (const char *)data + done, size - done);
        if (n <= 0)
            return -1;
        done += (size_t)n;
    }
    return 0;
}

void test_uniform_model(cm_model *cm, int n)
{
    memset(cm, 0, sizeof *cm);
    cm->num_layers = n;
    cm->layers = calloc((size_t)n, sizeof *cm->layers);
    cm->micro_batch_size = 1;
    cm->tensor_parallel = 1;
    cm->data_parallel = 1;
    cm->hbm_bytes = 1e12;
    cm->hbm_bandwidth_Bps = 1e30;
    for (int l = 0; l < n; l++) {
        cm_layer *ly = &cm->layers[l];
        ly->kind = CM_CUSTOM;
        ly->forward_s = 1;
        ly->backward_s = 2;
        for (int r = 0; r < RECOMPUTE_COUNT; r++)
            ly->activation_bytes[r] = 10;
        ly->state_bytes = 100;
        ly->output_bytes = 1;
    }
}

void test_uniform_plan(plan *pl, int p, int m, int layers_per_stage, schedule_kind k)
{
    plan_init(pl, p, 1, p * layers_per_stage);
    for (int s = 0; s <= p; s++)
        pl->chunk_start[s] = s * layers_per_stage;
    pl->schedule = k;
    pl->micro_batch_size = 1;
    pl->num_micro_batches = m;
    pl->tensor_parallel = 1;
    pl->data_parallel = 1;
}

