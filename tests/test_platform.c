/*
 * test_platform.c -- the shipped platforms and the platform reader.
 *
 * Every load runs in a forked child (test_in_child, testutil.h): SimGrid
 * holds one platform per process.  Expected figures come from the public sources the
 * XML comments cite (datasheets, the fat-tree shape and the per-link latency),
 * not from the reader's output.  Each 16K platform is loaded once (~0.5-1 s).
 *
 * Scale-out latency = links on the route from rank 0 to rank npus_per_node x
 * per-link latency: 2 links when both sit under one leaf switch, 4 across a
 * spine.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <simgrid/host.h>
#include <xbt/config.h>

#include "platform.h"
#include "platform_internal.h"
#include "testutil.h"

/* What a child that loaded a platform reports (plain data, no pointers). */
typedef struct load_result {
    int rc;             /* platform_load() */
    np_error err;       /* when rc != 0 */
    cl_cluster cluster; /* when rc == 0 */
    int num_npus;
    int ranks_match_names;       /* host_of_rank[r] is named "...<r>" */
    double first_last_route_Bps; /* SimGrid route rank 0 -> rank N-1 */
    double first_last_route_s;
} load_result;

/* host_of_rank[r]'s name ends in exactly the digits of r. */
static int ranks_match_names(const sim_platform *p)
{
    for (int r = 0; r < p->num_npus; r++) {
        char digits[16];
        const char *name = sg_host_get_name(p->host_of_rank[r]);
        size_t n = (size_t)snprintf(digits, sizeof digits, "%d", r), len = strlen(name);
        if (len < n || strcmp(name + len - n, digits) != 0)
            return 0;
        if (len > n && isdigit((unsigned char)name[len - n - 1]))
            return 0;
    }
    return 1;
}

static void load_child(void *path, int fd)
{
    load_result r;
    memset(&r, 0, sizeof r);
    test_simgrid_init();
    sim_platform p;
    r.rc = platform_load(path, &p, &r.err);
    if (r.rc == 0) {
        r.cluster = p.cluster;
        r.num_npus = p.num_npus;
        r.ranks_match_names = ranks_match_names(&p);
        sg_host_t first = p.host_of_rank[0], last = p.host_of_rank[p.num_npus - 1];
        r.first_last_route_Bps = sg_host_get_route_bandwidth(first, last);
        r.first_last_route_s = sg_host_get_route_latency(first, last);
        platform_free(&p);
    }
    test_write_all(fd, &r, sizeof r);
}

/* Loads `path` in a child process; 0 when the child ran to the end. */
static int load_in_child(const char *path, load_result *out)
{
    memset(out, 0, sizeof *out);
    return test_in_child(load_child, (void *)path, out, sizeof *out);
}

#define REL_TOL 1e-12

/* Figures a platform must show, each derived from its cited source. */
typedef struct expected_platform {
    const char *file;
    int num_npus, npus_per_node;
    double peak_flops, hbm_bytes, hbm_bandwidth_Bps;
    double scaleup_bandwidth_Bps, scaleup_latency_s;
    double nic_Bps; /* scale-out bandwidth = one NPU's NIC */
    double scaleout_latency_s;
    double matmul_efficiency, kernel_launch_s;
} expected_platform;

/* Ascend 910B-class: 313 TFLOPS bf16, 64 GB HBM at 1.6 TB/s, HCCS 196 GB/s
 * per direction, 200 GE RoCE (25e9 B/s), 1 us per link. */
#define ASCEND_910B 313e12, 64e9, 1.6e12, 196e9, 2e-6, 25e9

static void check_platform(const load_result *r, const expected_platform *e)
{
    char buf[1200];
    if (r->rc)
        fprintf(stderr, "\n  %s: %s\n", e->file, np_error_format(&r->err, buf, sizeof buf));
    CU_ASSERT_EQUAL_FATAL(r->rc, 0);
    const cl_cluster *c = &r->cluster;
    CU_ASSERT_EQUAL(r->num_npus, e->num_npus);
    CU_ASSERT_EQUAL(c->num_npus, e->num_npus);
    CU_ASSERT_EQUAL(c->npus_per_node, e->npus_per_node);
    CU_ASSERT_TRUE(r->ranks_match_names);
    ASSERT_REL(c->peak_flops, e->peak_flops, REL_TOL);
    ASSERT_REL(c->hbm_bytes, e->hbm_bytes, REL_TOL);
    ASSERT_REL(c->hbm_bandwidth_Bps, e->hbm_bandwidth_Bps, REL_TOL);
    ASSERT_REL(c->scaleup_bandwidth_Bps, e->scaleup_bandwidth_Bps, REL_TOL);
    ASSERT_REL(c->scaleup_latency_s, e->scaleup_latency_s, REL_TOL);
    ASSERT_REL(c->scaleout_bandwidth_Bps, e->nic_Bps, REL_TOL);
    ASSERT_REL(c->scaleout_latency_s, e->scaleout_latency_s, REL_TOL);
    ASSERT_REL(c->matmul_efficiency, e->matmul_efficiency, REL_TOL);
    ASSERT_REL(c->kernel_launch_s, e->kernel_launch_s, REL_TOL);
    CU_ASSERT_PTR_NOT_NULL(strstr(c->name, e->file));
}

static void load_and_check(const expected_platform *e)
{
    char rel[256];
    snprintf(rel, sizeof rel, "platforms/%s", e->file);
    load_result r;
    CU_ASSERT_EQUAL_FATAL(load_in_child(test_path(rel), &r), 0);
    check_platform(&r, e);
}

/* ------------------------------------------------------ shipped platforms */

static void test_16k_npu_is_16384_ascend_910b_in_servers_of_8(void)
{
    /* 128 hosts per leaf: rank 8 is under rank 0's leaf, 2 links of 1 us. */
    static const expected_platform e = {"16k_npu.xml", 16384, 8, ASCEND_910B, 2e-6, 0.7, 10e-6};
    load_and_check(&e);
}

static void test_codegeex_1536_is_192_atlas_800_servers_of_ascend_910(void)
{
    /* Ascend 910: 256 TFLOPS FP16, 32 GB HBM2 at 1.2 TB/s, HCCS 30 GB/s per
     * direction, one 100 GE port (12.5e9 B/s) per NPU; 64 hosts per leaf, so
     * rank 8 is under rank 0's leaf, 2 links of 1 us. */
    static const expected_platform e = {"codegeex_1536_910.xml",
                                        1536,
                                        8,
                                        256e12,
                                        32e9,
                                        1.2e12,
                                        30e9,
                                        2e-6,
                                        12.5e9,
                                        2e-6,
                                        0.7,
                                        10e-6};
    load_and_check(&e);
}

static void test_h100_16k_is_16384_h100_sxm_with_ndr(void)
{
    /* H100 SXM datasheet: 989 TFLOPS bf16 dense, 80 GB HBM3 at 3.35 TB/s,
     * NVLink4 900 GB/s = 450 GB/s per direction; NDR 400 Gb/s = 50e9 B/s;
     * 0.5 us per link, rank 8 under the same leaf; matmul_efficiency calibrated
     * (docs/validation.md). */
    static const expected_platform e = {"h100_16k.xml", 16384, 8,    989e12, 80e9,   3.35e12,
                                        450e9,          1e-6,  50e9, 1e-6,   0.5805, 5e-6};
    load_and_check(&e);
}

static void test_dgx_a100_1024_is_128_dgx_nodes_with_hdr(void)
{
    /* A100 80GB datasheet: 312 TFLOPS bf16, 2.039 TB/s, NVLink3 300 GB/s per
     * direction; DGX A100: 8 x HDR 200 Gb/s = 25e9 B/s per GPU; matmul_efficiency
     * calibrated (docs/validation.md). */
    static const expected_platform e = {"dgx_a100_1024.xml",
                                        1024,
                                        8,
                                        312e12,
                                        80e9,
                                        2.039e12,
                                        300e9,
                                        1e-6,
                                        25e9,
                                        1e-6,
                                        0.6777,
                                        5e-6};
    load_and_check(&e);
}

static void test_small_fat_trees_carry_the_910b_figures(void)
{
    /* Leaves of 4 (8 NPUs) and 8 hosts (16, 64 NPUs): rank npus_per_node is
     * behind another leaf, 4 links of 1 us. */
    static const expected_platform e[] = {
        {"test_8npu.xml", 8, 4, ASCEND_910B, 4e-6, 0.7, 10e-6},
        {"test_16npu.xml", 16, 8, ASCEND_910B, 4e-6, 0.7, 10e-6},
        {"test_64npu.xml", 64, 8, ASCEND_910B, 4e-6, 0.7, 10e-6},
    };
    for (size_t i = 0; i < sizeof e / sizeof e[0]; i++)
        load_and_check(&e[i]);
}

static void test_free_comm_platforms_have_free_links_and_ideal_compute(void)
{
    static const expected_platform e[] = {
        {"test_free_comm_8.xml", 8, 8, 313e12, 64e9, 1.6e12, 1e30, 0, 1e30, 0, 1, 0},
        {"test_free_comm_16.xml", 16, 8, 313e12, 64e9, 1.6e12, 1e30, 0, 1e30, 0, 1, 0},
        {"test_free_comm_32.xml", 32, 8, 313e12, 64e9, 1.6e12, 1e30, 0, 1e30, 0, 1, 0},
    };
    for (size_t i = 0; i < sizeof e / sizeof e[0]; i++)
        load_and_check(&e[i]);
}

static void test_flat_platforms_have_bandwidth_B_and_latency_alpha_between_any_pair(void)
{
    /* B = 1e9 B/s, alpha = 10 us on every route, 1 NPU per node. */
    static const int sizes[] = {4, 8, 16};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "platforms/test_flat_%d.xml", sizes[i]);
        expected_platform e = {rel + 10, sizes[i], 1,   313e12, 64e9, 1.6e12,
                               1e9,      10e-6,    1e9, 10e-6,  0.7,  10e-6};
        load_result r;
        CU_ASSERT_EQUAL_FATAL(load_in_child(test_path(rel), &r), 0);
        check_platform(&r, &e);
        ASSERT_REL(r.first_last_route_Bps, 1e9, REL_TOL);
        ASSERT_REL(r.first_last_route_s, 10e-6, REL_TOL);
    }
}

/* The shipped XML is exactly what the generator writes: nobody edited one
 * file and forgot the script (or the reverse). */
static void test_shipped_platforms_are_gen_platform_output(void)
{
    char dir[] = "/tmp/npusim_platforms_XXXXXX", cmd[1024];
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s --all %s",
             test_path("platforms/gen_platform.py"), dir);
    CU_ASSERT_EQUAL(system(cmd), 0);
    snprintf(cmd, sizeof cmd,
             "for f in %s/*.xml; do cmp -s \"$f\" %s/$(basename \"$f\") || exit 1; done", dir,
             test_path("platforms"));
    CU_ASSERT_EQUAL(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CU_ASSERT_EQUAL(system(cmd), 0);
}

static void test_gen_platform_builds_any_size(void)
{
    /* 2,048 H100 -> 256 nodes of 8, NDR NIC per GPU. */
    char path[] = "/tmp/npusim_gen_XXXXXX", cmd[1024];
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s --preset h100 --npus 2048 -o %s",
             test_path("platforms/gen_platform.py"), path);
    CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
    load_result r;
    CU_ASSERT_EQUAL(load_in_child(path, &r), 0);
    CU_ASSERT_EQUAL(r.rc, 0);
    CU_ASSERT_EQUAL(r.num_npus, 2048);
    CU_ASSERT_EQUAL(r.cluster.npus_per_node, 8);
    ASSERT_REL(r.cluster.scaleout_bandwidth_Bps, 50e9, REL_TOL);
    unlink(path);
}

/* ------------------------------------------------------------ error paths */

typedef struct expected_error {
    const char *file; /* under tests/bad_input/ */
    const char *key;  /* np_error.key */
    int line;         /* np_error.line */
    const char *text; /* a piece of np_error.text */
} expected_error;

static void check_error(const char *path, const load_result *r, const expected_error *e)
{
    char buf[1200];
    const char *line = np_error_format(&r->err, buf, sizeof buf);
    if (r->rc != NP_EXIT_INPUT || !strstr(r->err.text, e->text) || strcmp(r->err.key, e->key) ||
        r->err.line != e->line)
        fprintf(stderr, "\n  %s: rc %d: %s\n", e->file, r->rc, line);
    CU_ASSERT_EQUAL(r->rc, NP_EXIT_INPUT);
    CU_ASSERT_STRING_EQUAL(r->err.source, path);
    CU_ASSERT_STRING_EQUAL(r->err.key, e->key);
    CU_ASSERT_EQUAL(r->err.line, e->line);
    CU_ASSERT_PTR_NOT_NULL(strstr(r->err.text, e->text));
    CU_ASSERT_PTR_NULL(strchr(line, '\n')); /* the CLI prints one line */
}

static void test_missing_file_is_an_input_error_with_strerror(void)
{
    const char *path = test_path("platforms/no_such_platform.xml");
    load_result r;
    CU_ASSERT_EQUAL_FATAL(load_in_child(path, &r), 0);
    expected_error e = {"no_such_platform.xml", "", 0, "cannot open platform file: "};
    check_error(path, &r, &e);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err.text, strerror(ENOENT)));
}

/* Properties that are not a host's (a zone's, <config>'s) are not checked
 * against the names npusim reads: the platform loads as test_8npu.xml. */
static void test_zone_and_config_properties_are_not_host_properties(void)
{
    load_result r;
    CU_ASSERT_EQUAL_FATAL(load_in_child(test_path("tests/data/test_foreign_props_8.xml"), &r), 0);
    CU_ASSERT_EQUAL(r.rc, 0);
    CU_ASSERT_EQUAL(r.num_npus, 8);
    CU_ASSERT_EQUAL(r.cluster.npus_per_node, 4);
}

static void test_directory_is_not_a_platform_file(void)
{
    const char *path = test_path("platforms");
    load_result r;
    CU_ASSERT_EQUAL_FATAL(load_in_child(path, &r), 0);
    expected_error e = {"platforms", "", 0, "not a regular file"};
    check_error(path, &r, &e);
}

/* Each file's comment says what is wrong with it; lines are the file's. */
static void test_bad_platforms_are_input_errors_naming_the_problem(void)
{
    static const expected_error cases[] = {
        {"platform_missing_prop.xml", "matmul_efficiency", 0,
         "missing: host 'npu-0' has no such property"},
        {"platform_nonnumeric_prop.xml", "hbm_bytes", 7, "got \"64GB\""},
        {"platform_nonpositive_prop.xml", "scaleup_bandwidth_Bps", 10, "positive number"},
        {"platform_efficiency_range.xml", "matmul_efficiency", 12, "(0, 1]"},
        {"platform_fractional_node.xml", "npus_per_node", 9, "positive integer"},
        {"platform_partial_node.xml", "npus_per_node", 9, "8 NPUs do not fill whole nodes of 3"},
        {"platform_no_rank.xml", "", 0, "host 'npu-0.npu' has no rank number"},
        {"platform_rank_gap.xml", "", 0, "host 'npu-8' has rank 8"},
        {"platform_duplicate_rank.xml", "", 0, "both have rank 0"},
        {"platform_mixed_speed.xml", "speed", 0, "host 'npu-4' has speed"},
        {"platform_mixed_prop.xml", "hbm_bytes", 0, "host 'npu-4' has \"32e9\""},
        {"platform_misspelt_prop.xml", "collective_bus_eficiency", 15,
         "not a host property npusim reads; did you mean collective_bus_efficiency?"},
        /* Found by fuzzing: each once aborted SimGrid, reached it as an
         * infinite duration, passed as a deadlock or took minutes to load. */
        {"platform_scaleup_latency_huge.xml", "scaleup_latency_s", 11, "from 0 to 1 s"},
        {"platform_kernel_launch_huge.xml", "kernel_launch_s", 13, "from 0 to 1 s"},
        {"platform_link_latency_inf.xml", "lat", 0, "has latency inf s"},
        {"platform_link_bandwidth_tiny.xml", "bw", 0, "has bandwidth 1e-300 B/s"},
        {"platform_no_version.xml", "version", 4, "no version"},
        {"platform_fat_tree_too_large.xml", "topo_parameters", 5, "at least 8e+06 hosts"},
        {"platform_no_hosts.xml", "", 0, "the platform has 0 hosts"},
        {"platform_truncated.xml", "", 0, "cut short"},
        /* A FAT_TREE's hosts against its radical: fewer once reached
         * SimGrid's xbt_die ("Insufficient number of radicals"), more loaded
         * silently as the tree's first hosts. */
        {"platform_bad_fat_tree.xml", "radical", 5,
         "has 16 hosts (the product of its m_i), radical=\"0-7\" lists 8"},
        {"platform_bandwidth_zero.xml", "bw", 5, "expected a positive bandwidth on <cluster>"},
        {"platform_latency_negative.xml", "lat", 5,
         "latency of 0 or more on <cluster>, got \"-1us\""},
        {"platform_fat_tree_extra_hosts.xml", "radical", 5,
         "has 8 hosts (the product of its m_i), radical=\"0-15\" lists 16"},
        /* Rejected by SimGrid's own parser: the child did not abort, and the
         * line is SimGrid's (the cluster is built at its end tag, line 14). */
        {"platform_syntax.xml", "", 14, "Unexpected end-tag `</clustre>'"},
        {"platform_bad_number.xml", "", 14, "cannot parse number:fast"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "tests/bad_input/%s", cases[i].file);
        const char *path = test_path(rel);
        load_result r;
        CU_ASSERT_EQUAL_FATAL(load_in_child(path, &r), 0);
        check_error(path, &r, &cases[i]);
    }
}

static void load_twice_child(void *ctx, int fd)
{
    sim_platform p;
    np_error err[2];
    test_simgrid_init();
    int rc[2];
    rc[0] = platform_load(ctx, &p, &err[0]);
    rc[1] = platform_load(ctx, &p, &err[1]);
    test_write_all(fd, rc, sizeof rc);
}

static void test_second_platform_in_one_process_is_refused(void)
{
    int rc[2];
    CU_ASSERT_EQUAL_FATAL(test_in_child(load_twice_child,
                                        (void *)test_path("platforms/test_8npu.xml"), rc,
                                        sizeof rc),
                          0);
    CU_ASSERT_EQUAL(rc[0], 0);
    CU_ASSERT_EQUAL(rc[1], NP_EXIT_INTERNAL);
}

/* ----------------------------------------------------- max-min update mode */

static void load_selective_child(void *ctx, int fd)
{
    sim_platform p;
    np_error err;
    test_simgrid_init();
    int on =
        platform_load(ctx, &p, &err) ? -1 : sg_cfg_get_boolean("network/maxmin-selective-update");
    test_write_all(fd, &on, sizeof on);
}

/* The update mode follows the fabric (platform_internal.h): the whole
 * system at every event on fat trees, Clos and rails, where every flow over
 * the spine shares links with every other, and on tori and dragonflies of
 * up to SELECTIVE_UPDATE_MIN_HOSTS NPUs; selective update on larger tori
 * and dragonflies, where the full solve is many times slower (SimGrid's
 * selective update can miss the max-min solution: platform_file.c).
 * cli_test.sh runs one contended plan on the 64-NPU torus and dragonfly
 * under SimGrid's three modes. */
static void test_update_mode_follows_the_fabric(void)
{
    static const struct {
        const char *platform;
        platform_solver solver;
    } cases[] = {
        {"platforms/test_64npu.xml", SOLVER_FULL},
        {"platforms/test_clos3_64.xml", SOLVER_FULL},
        {"platforms/test_rail_64.xml", SOLVER_FULL},
        {"platforms/test_nvl72_144.xml", SOLVER_FULL},
        {"platforms/test_torus_64.xml", SOLVER_FULL},
        {"platforms/test_dragonfly_64.xml", SOLVER_FULL},
        {"tests/data/test_torus_8k.xml", SOLVER_SELECTIVE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        platform_limits lim;
        platform_init_limits(&lim);
        platform_scan scan;
        np_error err;
        CU_ASSERT_EQUAL_FATAL(platform_precheck(test_path(cases[i].platform), &lim, &scan, &err),
                              0);
        if (scan.solver != cases[i].solver)
            fprintf(stderr, "\n%s: update mode %d, expected %d\n", cases[i].platform,
                    (int)scan.solver, (int)cases[i].solver);
        CU_ASSERT_EQUAL(scan.solver, cases[i].solver);
    }
    /* ... and SimGrid is configured with it before it builds the network */
    int on;
    CU_ASSERT_EQUAL_FATAL(test_in_child(load_selective_child,
                                        (void *)test_path("platforms/test_dragonfly_64.xml"), &on,
                                        sizeof on),
                          0);
    CU_ASSERT_EQUAL(on, 0);
    CU_ASSERT_EQUAL_FATAL(test_in_child(load_selective_child,
                                        (void *)test_path("tests/data/test_torus_8k.xml"), &on,
                                        sizeof on),
                          0);
    CU_ASSERT_EQUAL(on, 1);
    CU_ASSERT_EQUAL_FATAL(test_in_child(load_selective_child,
                                        (void *)test_path("platforms/test_64npu.xml"), &on,
                                        sizeof on),
                          0);
    CU_ASSERT_EQUAL(on, 0);
    /* a torus whose own <config> says "no": the file wins */
    CU_ASSERT_EQUAL_FATAL(
        test_in_child(load_selective_child,
                      (void *)test_path("tests/data/test_torus_8k_own_solver.xml"), &on, sizeof on),
        0);
    CU_ASSERT_EQUAL(on, 0);
}

/* ----------------------------------------------------------- fork helper */

static void killed_child(void *ctx, int fd) { raise(SIGTERM); }

/* The error tests rely on it: a SimGrid abort in a child must fail them. */
static void test_fork_helper_reports_a_child_that_dies(void)
{
    int unused;
    CU_ASSERT_EQUAL(test_in_child(killed_child, NULL, &unused, sizeof unused), -1);
}

void register_platform_tests(void)
{
    TEST_SUITE(
        "platform",
        {"the max-min update mode follows the fabric", test_update_mode_follows_the_fabric},
        {"16k_npu.xml: 16384 Ascend 910B NPUs, 8 per server",
         test_16k_npu_is_16384_ascend_910b_in_servers_of_8},
        {"codegeex_1536_910.xml: 192 Atlas 800 servers of 8 Ascend 910",
         test_codegeex_1536_is_192_atlas_800_servers_of_ascend_910},
        {"h100_16k.xml: 16384 H100 SXM, NDR per GPU", test_h100_16k_is_16384_h100_sxm_with_ndr},
        {"dgx_a100_1024.xml: 128 DGX A100 nodes, HDR per GPU",
         test_dgx_a100_1024_is_128_dgx_nodes_with_hdr},
        {"test_8/16/64npu.xml carry the 910B figures", test_small_fat_trees_carry_the_910b_figures},
        {"free-comm platforms: free links, ideal compute",
         test_free_comm_platforms_have_free_links_and_ideal_compute},
        {"flat platforms: bandwidth B, latency alpha on every route",
         test_flat_platforms_have_bandwidth_B_and_latency_alpha_between_any_pair},
        {"shipped XML == gen_platform.py --all", test_shipped_platforms_are_gen_platform_output},
        {"gen_platform.py builds any size (2048 H100)", test_gen_platform_builds_any_size},
        {"missing file: input error with strerror",
         test_missing_file_is_an_input_error_with_strerror},
        {"directory: input error", test_directory_is_not_a_platform_file},
        {"bad platforms: input errors naming the problem",
         test_bad_platforms_are_input_errors_naming_the_problem},
        {"zone and config properties are not host properties",
         test_zone_and_config_properties_are_not_host_properties},
        {"second platform in one process is refused",
         test_second_platform_in_one_process_is_refused},
        {"fork helper reports a child that dies", test_fork_helper_reports_a_child_that_dies});
}
