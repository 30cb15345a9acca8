/*
 * test_platform_props.c -- the optional platform properties
 * (gemm_efficiency_table, attention_efficiency, elementwise_fusion,
 * collective_bus_efficiency, hbm_efficiency; cluster.h, docs/platform-format.md): read when
 * given, checked like the required ones, and at their defaults when absent,
 * so that a shipped platform without them reads exactly as before they
 * existed.  Every load runs in a forked child (SimGrid holds one platform per
 * process); variants of a shipped file are written to temporary files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "platform.h"
#include "testutil.h"

#define OPTIONAL_NAMES                                                                             \
    "gemm_efficiency_table", "attention_efficiency", "elementwise_fusion",                         \
        "collective_bus_efficiency", "hbm_efficiency"

typedef struct props_result {
    int rc;
    np_error err;
    cl_cluster cluster;
} props_result;

static void load_child(void *path, int fd)
{
    props_result r;
    memset(&r, 0, sizeof r);
    test_simgrid_init();
    sim_platform p;
    r.rc = platform_load(path, &p, &r.err);
    if (r.rc == 0) {
        r.cluster = p.cluster;
        platform_free(&p);
    }
    test_write_all(fd, &r, sizeof r);
}

static void load(const char *path, props_result *out)
{
    memset(out, 0, sizeof *out);
    CU_ASSERT_EQUAL_FATAL(test_in_child(load_child, (void *)path, out, sizeof *out), 0);
}

/* A copy of the shipped `relative` with every optional property line
 * removed and `extra` inserted before </cluster>; returns its path. */
static const char *variant(const char *relative, const char *extra, char *path, size_t size)
{
    static const char *const names[] = {OPTIONAL_NAMES};
    FILE *in = fopen(test_path(relative), "r");
    snprintf(path, size, "/tmp/npusim_props_XXXXXX");
    int fd = mkstemp(path);
    FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
    CU_ASSERT_FATAL(in && out);
    char line[4096];
    while (fgets(line, sizeof line, in)) {
        int optional = 0;
        for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
            char id[96];
            snprintf(id, sizeof id, "<prop id=\"%s\"", names[i]);
            optional |= strstr(line, id) != NULL;
        }
        if (optional)
            continue;
        if (strstr(line, "</cluster>"))
            fputs(extra, out);
        fputs(line, out);
    }
    fclose(in);
    fclose(out);
    return path;
}

static void test_absent_properties_take_their_defaults(void)
{
    props_result r;
    load(test_path("platforms/test_8npu.xml"), &r);
    CU_ASSERT_EQUAL_FATAL(r.rc, 0);
    CU_ASSERT_EQUAL(r.cluster.gemm_table_points, 0);
    CU_ASSERT_EQUAL(r.cluster.attention_efficiency, r.cluster.matmul_efficiency);
    CU_ASSERT_EQUAL(r.cluster.elementwise_fusion, 0);
    CU_ASSERT_EQUAL(r.cluster.collective_bus_efficiency, 1.0);
    CU_ASSERT_EQUAL(r.cluster.hbm_efficiency, 1.0);
}

/* dgx_a100_128.xml carries the A100 preset's cited figures
 * (platforms/gen_platform.py): FlashAttention-2 73%, Megatron's
 * bias-dropout-add fusion, NCCL all-reduce at 68% of NVLink (nccl-tests issues 149, 178),
 * a read kernel at 88% of the HBM bandwidth (NVIDIA developer forum thread 339083). */
static void test_a100_preset_carries_its_cited_figures(void)
{
    props_result r;
    load(test_path("platforms/dgx_a100_128.xml"), &r);
    CU_ASSERT_EQUAL_FATAL(r.rc, 0);
    CU_ASSERT_EQUAL(r.cluster.gemm_table_points, 0);
    CU_ASSERT_EQUAL(r.cluster.attention_efficiency, 0.73);
    CU_ASSERT_EQUAL(r.cluster.elementwise_fusion, 1);
    CU_ASSERT_EQUAL(r.cluster.collective_bus_efficiency, 0.68);
    CU_ASSERT_EQUAL(r.cluster.hbm_efficiency, 0.88);
}

/* Without its optional lines the A100 platform reads as before: the same
 * required figures, the defaults, and a cost model identical to a cluster
 * where the optional fields were never set. */
static void test_shipped_platform_without_them_reads_as_before(void)
{
    char path[64];
    props_result full, stripped;
    load(test_path("platforms/dgx_a100_128.xml"), &full);
    load(variant("platforms/dgx_a100_128.xml", "", path, sizeof path), &stripped);
    unlink(path);
    CU_ASSERT_EQUAL_FATAL(stripped.rc, 0);
    cl_cluster a = full.cluster, b = stripped.cluster;
    CU_ASSERT_EQUAL(b.peak_flops, a.peak_flops);
    CU_ASSERT_EQUAL(b.matmul_efficiency, a.matmul_efficiency);
    CU_ASSERT_EQUAL(b.scaleup_bandwidth_Bps, a.scaleup_bandwidth_Bps);
    CU_ASSERT_EQUAL(b.scaleout_bandwidth_Bps, a.scaleout_bandwidth_Bps);
    CU_ASSERT_EQUAL(b.attention_efficiency, b.matmul_efficiency);
    CU_ASSERT_EQUAL(b.collective_bus_efficiency, 1.0);
    CU_ASSERT_EQUAL(b.elementwise_fusion, 0);
    CU_ASSERT_EQUAL(b.hbm_efficiency, 1.0);
    cl_cluster never = b;
    never.attention_efficiency = 0;
    never.collective_bus_efficiency = 0;
    never.hbm_efficiency = 0;
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(test_wl_load_with("workloads/gpt3_175b_128.json", NULL, 0, &w, &err), 0);
    cm_model x, y;
    CU_ASSERT_EQUAL_FATAL(cm_build(&w, &b, 0, &x, &err), 0);
    CU_ASSERT_EQUAL_FATAL(cm_build(&w, &never, 0, &y, &err), 0);
    for (int l = 0; l < x.num_layers; l++) {
        CU_ASSERT_EQUAL(x.layers[l].forward_s, y.layers[l].forward_s);
        CU_ASSERT_EQUAL(x.layers[l].backward_s, y.layers[l].backward_s);
        CU_ASSERT_EQUAL(x.layers[l].tp_forward_s, y.layers[l].tp_forward_s);
        CU_ASSERT_EQUAL(x.layers[l].activation_bytes[RECOMPUTE_SELECTIVE],
                        y.layers[l].activation_bytes[RECOMPUTE_SELECTIVE]);
    }
    cm_free(&x);
    cm_free(&y);
    wl_free(&w);
}

static void test_given_properties_are_read(void)
{
    char path[64];
    const char *extra = "    <prop id=\"gemm_efficiency_table\" value=\"128:0.35, 2048:0.75\"/>\n"
                        "    <prop id=\"collective_bus_efficiency\" value=\"0.5\"/>\n"
                        "    <prop id=\"elementwise_fusion\" value=\"1\"/>\n"
                        "    <prop id=\"hbm_efficiency\" value=\"0.9\"/>\n";
    props_result r;
    load(variant("platforms/test_8npu.xml", extra, path, sizeof path), &r);
    unlink(path);
    CU_ASSERT_EQUAL_FATAL(r.rc, 0);
    CU_ASSERT_EQUAL(r.cluster.gemm_table_points, 2);
    CU_ASSERT_EQUAL(r.cluster.gemm_table_min_dim[1], 2048.0);
    CU_ASSERT_EQUAL(r.cluster.gemm_table_efficiency[0], 0.35);
    CU_ASSERT_EQUAL(r.cluster.collective_bus_efficiency, 0.5);
    CU_ASSERT_EQUAL(r.cluster.elementwise_fusion, 1);
    CU_ASSERT_EQUAL(r.cluster.hbm_efficiency, 0.9);
    CU_ASSERT_EQUAL(r.cluster.attention_efficiency, r.cluster.matmul_efficiency);
}

/* Each bad value is an input error naming the property, with its line. */
static void test_bad_values_name_the_property(void)
{
    const struct {
        const char *extra, *key, *text;
    } cases[] = {
        {"    <prop id=\"gemm_efficiency_table\" value=\"512:0.6,128:0.3\"/>\n",
         "gemm_efficiency_table", "larger than the one before"},
        {"    <prop id=\"gemm_efficiency_table\" value=\"fast\"/>\n", "gemm_efficiency_table",
         "MIN_DIM:EFFICIENCY"},
        {"    <prop id=\"attention_efficiency\" value=\"1.2\"/>\n", "attention_efficiency",
         "a number in (0, 1]"},
        {"    <prop id=\"collective_bus_efficiency\" value=\"0\"/>\n", "collective_bus_efficiency",
         "a number in (0, 1]"},
        {"    <prop id=\"elementwise_fusion\" value=\"yes\"/>\n", "elementwise_fusion", "0 or 1"},
        {"    <prop id=\"hbm_efficiency\" value=\"1.5\"/>\n", "hbm_efficiency",
         "a number in (0, 1]"},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[64];
        props_result r;
        load(variant("platforms/test_8npu.xml", cases[i].extra, path, sizeof path), &r);
        unlink(path);
        CU_ASSERT_EQUAL(r.rc, NP_EXIT_INPUT);
        CU_ASSERT_STRING_EQUAL(r.err.key, cases[i].key);
        CU_ASSERT_PTR_NOT_NULL(strstr(r.err.text, cases[i].text));
        CU_ASSERT(r.err.line > 0);
    }
}

void register_platform_props_tests(void)
{
    TEST_SUITE(
        "platform_props",
        {"absent properties take their defaults", test_absent_properties_take_their_defaults},
        {"A100 preset carries its cited figures", test_a100_preset_carries_its_cited_figures},
        {"shipped platform without them reads as before",
         test_shipped_platform_without_them_reads_as_before},
        {"given properties are read", test_given_properties_are_read},
        {"bad values name the property", test_bad_values_name_the_property});
}
