/*
 * moe_testutil.c -- the shared fixture of the engine-level MoE tests (see
 * moe_testutil.h).
 */
#include "moe_testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

int moe_test_hot_trace(moe_trace *t)
{
    if (moe_trace_alloc(t, 32, 32, 12, 1, 2, 4096))
        return -1;
    for (int l = 0; l < 12; l++)
        for (int s = 0; s < 32; s++)
            *moe_trace_at(t, 0, l, s, 0) = *moe_trace_at(t, 0, l, s, 1) = 2048;
    return 0;
}

void moe_test_generate(const moe_trace_params *p, moe_trace *t)
{
    char why[256] = "";
    int rc = moe_trace_generate(p, t, why, sizeof why);
    if (rc)
        fprintf(stderr, "\n  moe_trace_generate: %s\n", why);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
}

/* Replaces j's recompute by the MoE units `units` of every MoE layer, and
 * rebuilds its schedule. */
static int use_moe_units(test_job *j, unsigned units, np_error *err)
{
    if (plan_use_recompute_units(&j->pl))
        _exit(3);
    for (int l = 0; l < j->cm.num_layers; l++)
        if (j->cm.layers[l].moe.is_moe)
            j->pl.recompute_units[l] = (uint16_t)(units << j->cm.layers[l].moe.first_unit);
    return test_job_reschedule(j, &j->cm, err);
}

static void run_case(void *ctx, int fd)
{
    const moe_run_case *c = ctx;
    void *buf = calloc(1, c->out_size);
    moe_run_head *out = buf;
    if (!buf)
        _exit(3); /* the child's failure shows in test_in_child's result */
    np_error err;
    sim_platform pf;
    test_simgrid_init();
    test_job j;
    memset(&j, 0, sizeof j);
    out->rc = platform_load(test_path("platforms/moe_32npu.xml"), &pf, &err);
    if (!out->rc && c->hbm_bytes > 0)
        pf.cluster.hbm_bytes = c->hbm_bytes;
    if (!out->rc)
        out->rc = test_job_build(&j, &pf.cluster, "workloads/moe_21b_32npu.json", c->sets,
                                 c->num_sets, "megatron", &err);
    if (!out->rc && c->moe_units)
        out->rc = use_moe_units(&j, c->moe_units, &err);
    moe_trace t = {0};
    engine_options o;
    engine_init_options(&o);
    if (!out->rc) {
        if (c->hot_trace) {
            if (moe_test_hot_trace(&t))
                _exit(3);
            o.moe_trace = &t;
        }
        o.moe_policy = c->policy;
        o.record_spans = c->record;
    }
    engine_result r = {0};
    if (!out->rc)
        out->rc = engine_run(&pf, &j.w, &j.cm, &j.pl, &j.sc, &o, &r, &err);
    if (out->rc)
        np_error_format(&err, out->error, sizeof out->error);
    out->replayed = r.moe_replayed;
    for (int l = 0; !out->rc && l < j.cm.num_layers; l++)
        out->expert_weight_grad_s += j.cm.layers[l].moe.expert_weight_grad_s;
    for (int i = 0; !out->rc && j.sc.num_stages > 0 && i < j.sc.stages[0].num_ops; i++)
        if (j.sc.stages[0].ops[i].kind == OP_RECOMPUTE)
            out->closed_recompute_s += j.sc.stages[0].ops[i].compute_s;
        else if (j.sc.stages[0].ops[i].kind == OP_BACKWARD)
            out->closed_backward_s +=
                j.sc.stages[0].ops[i].compute_s + j.sc.stages[0].ops[i].comm_s;
    c->collect(&r, buf);
    engine_result_free(&r);
    moe_trace_free(&t);
    test_write_all(fd, buf, c->out_size);
    free(buf);
}

void moe_test_try(const moe_run_case *c, void *out)
{
    CU_ASSERT_EQUAL_FATAL(test_in_child(run_case, (void *)c, out, c->out_size), 0);
}

void moe_test_simulate(const moe_run_case *c, void *out)
{
    moe_test_try(c, out);
    const moe_run_head *h = out;
    if (h->rc)
        fprintf(stderr, "\n  %s\n", h->error);
    CU_ASSERT_EQUAL_FATAL(h->rc, 0);
    CU_ASSERT(h->replayed);
}
