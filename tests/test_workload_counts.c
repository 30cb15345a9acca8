/*
 * test_workload_counts.c -- the layer-by-layer workloads written for CSIMD
 * (workloads/vgg19.json, resnet152.json, swin_b.json) against the published
 * parameter and FLOP counts of VGG-19, ResNet-152 and Swin-B.
 */
#include "testutil.h"
#include "workload.h"

/* ---- the workloads: published totals --------------------------------------- */

static void check_totals(const char *file, double params, double macs, double tol)
{
    wl_workload w;
    np_error err;
    CU_ASSERT_EQUAL_FATAL(wl_load(test_path(file), NULL, 0, &w, &err), 0);
    double p = 0, f = 0;
    for (int l = 0; l < w.model.num_layer_specs; l++) {
        p += w.model.layer_specs[l].params;
        f += w.model.layer_specs[l].forward_flops;
    }
    ASSERT_REL(p, params, tol);
    ASSERT_REL(f, 2.0 * macs, 0.01); /* published to 2-3 digits */
    wl_free(&w);
}

/* VGG-19: 143,667,240 parameters (torchvision vgg19), 19.6 G multiply-adds
 * (Simonyan & Zisserman 2015 / torchvision).  ResNet-152: 60,192,808
 * parameters, 11.51 GFLOPS (torchvision resnet152, multiply-adds).  Swin-B:
 * 88M parameters and 15.4 G FLOPs (Liu et al. ICCV'21 Table 1, multiply-adds);
 * its exact count 87,768,224 is timm's swin_base_patch4_window7_224. */
static void test_workloads_match_published_parameter_and_flop_counts(void)
{
    check_totals("workloads/vgg19.json", 143667240, 19.6e9, 0);
    check_totals("workloads/resnet152.json", 60192808, 11.51e9, 0);
    check_totals("workloads/swin_b.json", 88e6, 15.4e9, 0.005);
}

void register_workload_counts_tests(void)
{
    TEST_SUITE("workload_counts", {"workloads_match_published_parameter_and_flop_counts",
                                   test_workloads_match_published_parameter_and_flop_counts});
}
