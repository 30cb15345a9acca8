/*
 * fuzz_input.c -- memory files for the fuzz targets (fuzz_input.h).
 */
#define _GNU_SOURCE
#include "fuzz_input.h"

#include "reference_cluster.h"

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

cl_cluster fuzz_cluster(int num_npus) { return test_npu_cluster(num_npus, 8); }
