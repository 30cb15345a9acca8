/*
 * fuzz_input.c -- memory files for the fuzz targets (fuzz_input.h).
 */
#define _GNU_SOURCE
#include "fuzz_input.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int fuzz_input_open(const uint8_t *data, size_t size, char *path, size_t path_size)
{
    int fd = memfd_create("fuzz-input", 0);
    if (fd < 0)
        return -1;
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, data + done, size - done);
        if (n <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)n;
    }
    snprintf(path, path_size, "/proc/self/fd/%d", fd);
    return fd;
}

void fuzz_input_close(int fd) { close(fd); }

cl_cluster fuzz_cluster(int num_npus)
{
    cl_cluster c;
    memset(&c, 0, sizeof c);
    c.num_npus = num_npus;
    c.npus_per_node = 8;
    c.peak_flops = 313e12;
    c.matmul_efficiency = 0.7;
    c.hbm_bytes = 64e9;
    c.hbm_bandwidth_Bps = 1.6e12;
    c.scaleup_bandwidth_Bps = 196e9;
    c.scaleup_latency_s = 2e-6;
    c.scaleout_bandwidth_Bps = 25e9;
    c.scaleout_latency_s = 4e-6;
    c.kernel_launch_s = 10e-6;
    return c;
}
