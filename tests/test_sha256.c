/*
 * test_sha256.c -- np_sha256 against the FIPS 180-2 test vectors (appendix
 * B: "abc", the 448-bit message, a million 'a'), the empty message, and the
 * same digest whatever the pieces update() is given.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "np_sha256.h"
#include "testutil.h"

static void hex_of(const char *msg, char *hex) { np_sha256_hex(msg, strlen(msg), hex); }

static void test_fips_vectors(void)
{
    char hex[NP_SHA256_HEX_SIZE];
    hex_of("abc", hex);
    CU_ASSERT_STRING_EQUAL(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    hex_of("", hex);
    CU_ASSERT_STRING_EQUAL(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    hex_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", hex); /* 448 bits */
    CU_ASSERT_STRING_EQUAL(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void test_million_a_in_pieces(void)
{
    /* a million 'a' fed in pieces of 1 to 127 bytes: every block boundary */
    char *a = malloc(1000000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    memset(a, 'a', 1000000);
    np_sha256 h;
    np_sha256_init(&h);
    size_t done = 0;
    for (size_t piece = 1; done < 1000000; piece = piece % 127 + 1) {
        size_t n = 1000000 - done < piece ? 1000000 - done : piece;
        np_sha256_update(&h, a + done, n);
        done += n;
    }
    unsigned char d[32];
    np_sha256_final(&h, d);
    char hex[NP_SHA256_HEX_SIZE];
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    CU_ASSERT_STRING_EQUAL(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(a);
}

static void test_padding_boundaries(void)
{
    /* 55 to 65 bytes of 'x': the bit length fits in the last block or not;
     * digests from Python's hashlib, and the same when updated in two pieces */
    static const struct {
        size_t n;
        const char *hex;
    } cases[] = {
        {55, "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072"},
        {56, "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e"},
        {63, "75220b47218278e656f2013bb8f0c455a25eaf01e86c64924e9d48d89776d6f2"},
        {64, "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c"},
        {65, "9537c5fdf120482f7d58d25e9ed583f52c02b4e304ea814db1633ad565aed7e9"},
    };
    char msg[65], one[NP_SHA256_HEX_SIZE], split[NP_SHA256_HEX_SIZE];
    memset(msg, 'x', sizeof msg);
    for (int i = 0; i < 5; i++) {
        np_sha256_hex(msg, cases[i].n, one);
        CU_ASSERT_STRING_EQUAL(one, cases[i].hex);
        np_sha256 h;
        unsigned char d[32];
        np_sha256_init(&h);
        np_sha256_update(&h, msg, 3);
        np_sha256_update(&h, msg + 3, cases[i].n - 3);
        np_sha256_final(&h, d);
        for (int k = 0; k < 32; k++)
            snprintf(split + 2 * k, 3, "%02x", d[k]);
        CU_ASSERT_STRING_EQUAL(split, cases[i].hex);
    }
}

static void test_file(void)
{
    char path[] = "/tmp/npusim_sha_XXXXXX", hex[NP_SHA256_HEX_SIZE];
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(write(fd, "abc", 3), 3);
    close(fd);
    CU_ASSERT_EQUAL(np_sha256_file(path, hex), 0);
    CU_ASSERT_STRING_EQUAL(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    unlink(path);
    CU_ASSERT_NOT_EQUAL(np_sha256_file(path, hex), 0);
    CU_ASSERT_STRING_EQUAL(hex, "");
}

void register_sha256_tests(void)
{
    TEST_SUITE("sha256", {"FIPS 180-2 vectors: abc, empty, 448 bits", test_fips_vectors},
               {"a million 'a' in pieces", test_million_a_in_pieces},
               {"padding boundaries, split updates", test_padding_boundaries},
               {"a file's bytes", test_file});
}
