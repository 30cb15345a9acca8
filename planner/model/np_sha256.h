/*
 * np_sha256.h -- SHA-256 (FIPS 180-4; the test vectors are FIPS 180-2's).
 *
 * Used for identities, not for security: the CSV's plan_sha256 column (the
 * bytes of a --plan file) and simsweep's run ids (the first 16 hex digits of
 * a point's canonical text).  Small and dependency-free, so that no layer
 * needs a crypto library for it.
 *
 *     np_sha256 h;
 *     np_sha256_init(&h);
 *     np_sha256_update(&h, data, n);      (any number of times)
 *     np_sha256_final(&h, digest);        (32 bytes)
 *
 * or in one call np_sha256_hex(data, n, hex) for the 64 lower-case hex
 * digits, and np_sha256_file(path, hex) for a file's bytes.
 */
#ifndef NP_SHA256_H
#define NP_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define NP_SHA256_HEX_SIZE 65 /* 64 hex digits and the terminating NUL */

typedef struct np_sha256 {
    uint32_t state[8];
    uint64_t bytes;          /* message length so far */
    unsigned char block[64]; /* the partial block */
    size_t used;             /* bytes in block */
} np_sha256;

void np_sha256_init(np_sha256 *h);
void np_sha256_update(np_sha256 *h, const void *data, size_t n);
/* The digest; h must be initialised again before it is reused. */
void np_sha256_final(np_sha256 *h, unsigned char digest[32]);

/* The digest of data as 64 lower-case hex digits. */
void np_sha256_hex(const void *data, size_t n, char hex[NP_SHA256_HEX_SIZE]);

/* The digest of the bytes of the file at path: 0, or an errno (hex is then
 * the empty string). */
int np_sha256_file(const char *path, char hex[NP_SHA256_HEX_SIZE]);

#endif
