/*
 * fuzz_input.h -- what the fuzz targets share: a fuzzer's bytes as a file
 * the loaders can open, and the reference cluster the models are priced on.
 *
 * The loaders take a path (they name it in every error), so each input is
 * written to an anonymous memory file (memfd_create) and handed over as
 * /proc/self/fd/N: a regular file, never on disk, gone when closed.
 */
#ifndef FUZZ_INPUT_H
#define FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "cluster.h"

/* Writes data into a fresh memory file; fills path, returns its fd (close it
 * with fuzz_input_close), or -1. */
int fuzz_input_open(const uint8_t *data, size_t size, char *path, size_t path_size);
void fuzz_input_close(int fd);

/* A 910B-class NPU cluster of num_npus NPUs, 8 per server (the figures of
 * platforms/16k_npu.xml). */
cl_cluster fuzz_cluster(int num_npus);

#endif
