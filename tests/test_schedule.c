/*
 * test_schedule.c -- op lists of the schedule generators, checked without
 * simulating: counts, order and in-flight micro-batches against the
 * schedules' definitions, and sched_check() against broken lists.
 */
#include <stdlib.h>
#include <string.h>

#include "schedule.h"
#include "testutil.h"

/* Largest number of micro-batches forwarded and not yet backwarded. */
static int max_in_flight(const sched_stage *st)
{
    int live = 0, peak = 0;
    for (int i = 0; i < st->num_ops; i++) {
        if (st->ops[i].kind == OP_FORWARD && ++live > peak)
            peak = live;
        if (st->ops[i].kind == OP_BACKWARD)
            live--;
    }
    return peak;
}

static void test_1f1b_has_m_forwards_and_backwards_per_stage(void)
{
    test_built_schedule b;
    test_build_schedule(&b, 4, 6, 1, 2, 0, SCHED_1F1B);
    CU_ASSERT_EQUAL_FATAL(b.rc, 0);
    for (int s = 0; s < 4; s++) {
        CU_ASSERT_EQUAL(test_count_ops(&b.sc.stages[s], OP_FORWARD), 6);
        CU_ASSERT_EQUAL(test_count_ops(&b.sc.stages[s], OP_BACKWARD), 6);
        /* first stage receives nothing forward, last sends nothing forward */
        CU_ASSERT_EQUAL(test_count_ops(&b.sc.stages[s], OP_RECV_FORWARD), s == 0 ? 0 : 6);
        CU_ASSERT_EQUAL(test_count_ops(&b.sc.stages[s], OP_SEND_FORWARD), s == 3 ? 0 : 6);
        CU_ASSERT_EQUAL(test_count_ops(&b.sc.stages[s], OP_SEND_BACKWARD), s == 0 ? 0 : 6);
    }
    test_built_schedule_free(&b);
}

/* 1F1B keeps at most min(p − s, m) micro-batches in flight on stage s
 * (Narayanan et al. SC'21, section 2.2.1). */
static void test_1f1b_in_flight_is_min_p_minus_s_m(void)
{
    const int cases[][2] = {{4, 8}, {4, 2}, {8, 8}, {8, 3}, {1, 5}};
    for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int p = cases[c][0], m = cases[c][1];
        test_built_schedule b;
        test_build_schedule(&b, p, m, 1, 1, 0, SCHED_1F1B);
        CU_ASSERT_EQUAL_FATAL(b.rc, 0);
        for (int s = 0; s < p; s++)
            CU_ASSERT_EQUAL(max_in_flight(&b.sc.stages[s]), p - s < m ? p - s : m);
        test_built_schedule_free(&b);
    }
}

static void test_forward_allocates_what_backward_frees(void)
{
    test_built_schedule b;
    test_build_schedule(&b, 3, 4, 1, 2, 0, SCHED_1F1B);
    CU_ASSERT_EQUAL_FATAL(b.rc, 0);
    for (int s = 0; s < 3; s++) {
        double net = 0;
        for (int i = 0; i < b.sc.stages[s].num_ops; i++) {
            const sched_op *op = &b.sc.stages[s].ops[i];
            if (op->kind == OP_FORWARD)
                CU_ASSERT_DOUBLE_EQUAL(op->mem_delta_bytes, 2 * 10.0, 1e-12);
            net += op->mem_delta_bytes;
        }
        CU_ASSERT_DOUBLE_EQUAL(net, 0.0, 1e-12);
    }
    test_built_schedule_free(&b);
}

static void test_check_rejects_receives_out_of_order(void)
{
    test_built_schedule b;
    test_build_schedule(&b, 2, 2, 1, 1, 0, SCHED_1F1B);
    CU_ASSERT_EQUAL_FATAL(b.rc, 0);
    /* Swap the micro-batch ids of stage 1's two forward receives. */
    sched_stage *st = &b.sc.stages[1];
    int first = -1, second = -1;
    for (int i = 0; i < st->num_ops; i++)
        if (st->ops[i].kind == OP_RECV_FORWARD) {
            if (first < 0)
                first = i;
            else
                second = i;
        }
    CU_ASSERT_FATAL(first >= 0 && second >= 0);
    int32_t mb = st->ops[first].micro_batch;
    st->ops[first].micro_batch = st->ops[second].micro_batch;
    st->ops[second].micro_batch = mb;
    CU_ASSERT_NOT_EQUAL(sched_check(&b.sc, &b.err), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(b.err.text, "micro-batch"));
    test_built_schedule_free(&b);
}

static void test_check_rejects_a_deadlock(void)
{
    test_built_schedule b;
    test_build_schedule(&b, 2, 1, 1, 1, 0, SCHED_1F1B);
    CU_ASSERT_EQUAL_FATAL(b.rc, 0);
    /* Stage 0 waits for the gradient before it sends the activation. */
    sched_stage *st = &b.sc.stages[0];
    int send = -1, recv = -1;
    for (int i = 0; i < st->num_ops; i++) {
        if (st->ops[i].kind == OP_SEND_FORWARD)
            send = i;
        if (st->ops[i].kind == OP_RECV_BACKWARD)
            recv = i;
    }
    CU_ASSERT_FATAL(send >= 0 && recv > send);
    sched_op tmp = st->ops[send];
    st->ops[send] = st->ops[recv];
    st->ops[recv] = tmp;
    CU_ASSERT_NOT_EQUAL(sched_check(&b.sc, &b.err), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(b.err.text, "deadlock"));
    test_built_schedule_free(&b);
}

/* Interleaved, p = 2, v = 2: stage 1 sends its chunk-0 outputs to stage 0's
 * chunk 1.  Relabelling one of those sends as chunk 1 (which would feed a
 * chunk 2 that does not exist) must be caught. */
static void test_check_rejects_a_transfer_of_the_wrong_chunk(void)
{
    test_built_schedule b;
    test_build_schedule(&b, 2, 2, 2, 1, 0, SCHED_INTERLEAVED);
    CU_ASSERT_EQUAL_FATAL(b.rc, 0);
    np_error err;
    CU_ASSERT_EQUAL(sched_check(&b.sc, &err), 0);
    sched_stage *st = &b.sc.stages[1];
    int send = -1;
    for (int i = 0; i < st->num_ops && send < 0; i++)
        if (st->ops[i].kind == OP_SEND_FORWARD && st->ops[i].chunk == 0)
            send = i;
    CU_ASSERT_FATAL(send >= 0);
    st->ops[send].chunk = 1;
    CU_ASSERT_NOT_EQUAL(sched_check(&b.sc, &err), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "chunk"));
    test_built_schedule_free(&b);
}

void register_schedule_tests(void)
{
    TEST_SUITE(
        "schedule",
        {"1f1b_has_m_forwards_and_backwards_per_stage",
         test_1f1b_has_m_forwards_and_backwards_per_stage},
        {"1f1b_in_flight_is_min_p_minus_s_m", test_1f1b_in_flight_is_min_p_minus_s_m},
        {"forward_allocates_what_backward_frees", test_forward_allocates_what_backward_frees},
        {"check_rejects_receives_out_of_order", test_check_rejects_receives_out_of_order},
        {"check_rejects_a_deadlock", test_check_rejects_a_deadlock},
        {"check_rejects_a_transfer_of_the_wrong_chunk",
         test_check_rejects_a_transfer_of_the_wrong_chunk});
}
