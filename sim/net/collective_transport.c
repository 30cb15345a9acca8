/*
 * collective_transport.c -- how collective messages travel and meet.
 *
 * A message from member a to member b is a transport transfer between their
 * endpoints (transport_start, transport.h): one SimGrid flow per TP rank, from
 * rank r of a to rank r of b, or, when the two NPUs share a server, a
 * scale-up transfer of cl_p2p_time() that no XML link carries.  The sender
 * never waits; the receiver waits on the flows (transport_wait).
 *
 * Matching transfers in FIFO order (the engine's channels) is not enough
 * here: in a butterfly stage a member hears from R−1 partners, and a fast
 * partner of the next stage may post before a slow one of this stage.  So
 * collective messages carry a tag (the algorithm's step) and a source, and the
 * receiver asks for one exact (tag, source).  They live in a SESSION: one
 * collective call of one group, shared by its members.  The first member to
 * call creates it, each member joins the oldest live session of its group it
 * has not joined yet (collectives of a group are called in the same order by
 * every member), and the last member to leave frees it; so no state outlives
 * a collective and the caller needs no hook.  A session holds one inbox per
 * member: the pending messages and a semaphore on which the owner sleeps
 * while it waits for a message not yet posted; a sender releases it only when
 * it posts exactly the awaited message, so a wait costs one acquisition.
 *
 * Live sessions are few (one per group in its collective: 16 DP groups for
 * a 16-stage pipeline), so they sit in one list.  SimGrid runs actors one at a
 * time, so the list needs no lock.
 */
#include <stdlib.h>
#include <string.h>
#include <xbt/asserts.h>

#include <simgrid/semaphore.h>

#include "collective.h"
#include "collective_internal.h"

typedef struct coll_msg {
    int tag, from;
    transfer t;
} coll_msg;

typedef struct coll_inbox {
    coll_msg *msgs;
    int count, capacity;
    sg_sem_t wake;
    bool waiting;
    int want_tag, want_from;
} coll_inbox;

struct coll_session {
    coll_session *next;
    const endpoint *first; /* the key: (id, first member, size) */
    int id, size;
    int joined, left;
    int ring_local;            /* ring-flow's members per server; 0 = not yet known */
    double ring_step_s;        /* its channels' mean edge latency; < 0 = not yet known */
    unsigned char *has_joined; /* [size] */
    coll_inbox *inbox;         /* [size] */
};

static coll_session *live_head;

static void *coll_alloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size);
    if (!p)
        xbt_die("npusim: out of memory in a collective");
    return p;
}

static bool session_matches(const coll_session *s, const coll_group *g)
{
    return s->id == g->id && s->size == g->size && s->first == g->members[0] &&
           !s->has_joined[g->me];
}

static coll_session *session_create(const coll_group *g)
{
    coll_session *s = coll_alloc(1, sizeof *s);
    s->first = g->members[0];
    s->id = g->id;
    s->size = g->size;
    s->ring_step_s = -1.0;
    s->has_joined = coll_alloc((size_t)g->size, 1);
    s->inbox = coll_alloc((size_t)g->size, sizeof *s->inbox);
    coll_session **tail = &live_head;
    while (*tail)
        tail = &(*tail)->next;
    *tail = s; /* appended: the oldest session of a group is found first */
    return s;
}

static void session_destroy(coll_session *s)
{
    coll_session **p = &live_head;
    while (*p != s)
        p = &(*p)->next;
    *p = s->next;
    for (int i = 0; i < s->size; i++) {
        if (s->inbox[i].wake)
            sg_sem_destroy(s->inbox[i].wake);
        free(s->inbox[i].msgs);
    }
    free(s->inbox);
    free(s->has_joined);
    free(s);
}

void coll_ctx_enter(coll_ctx *c, transport *t, const coll_group *g)
{
    coll_session *s = live_head;
    while (s && !session_matches(s, g))
        s = s->next;
    if (!s)
        s = session_create(g);
    s->has_joined[g->me] = 1;
    s->joined++;
    c->t = t;
    c->g = g;
    c->session = s;
    c->next_tag = 0;
}

void coll_ctx_leave(coll_ctx *c)
{
    coll_session *s = c->session;
    if (s->inbox[c->g->me].count)
        xbt_die("npusim: a collective member left with %d unread messages",
                s->inbox[c->g->me].count);
    if (++s->left == s->size)
        session_destroy(s);
    c->session = NULL;
}

int *coll_session_ring_local(coll_ctx *c) { return &c->session->ring_local; }

double *coll_session_ring_step(coll_ctx *c) { return &c->session->ring_step_s; }

int coll_tags(coll_ctx *c, int count)
{
    int first = c->next_tag;
    c->next_tag += count;
    return first;
}

static void inbox_push(coll_inbox *in, coll_msg m)
{
    if (in->count == in->capacity) {
        int cap = in->capacity ? 2 * in->capacity : 4;
        coll_msg *msgs = realloc(in->msgs, (size_t)cap * sizeof *msgs);
        if (!msgs)
            xbt_die("npusim: out of memory in a collective");
        in->msgs = msgs;
        in->capacity = cap;
    }
    in->msgs[in->count++] = m;
    if (in->waiting && in->want_tag == m.tag && in->want_from == m.from) {
        in->waiting = false;
        sg_sem_release(in->wake);
    }
}

double coll_send(coll_ctx *c, const coll_view *v, int to, int tag, double bytes)
{
    int to_index = coll_view_member(v, to);
    coll_msg m = {.tag = tag, .from = c->g->me};
    m.t = transport_start(c->t, c->g->members[c->g->me], c->g->members[to_index], bytes);
    double arrive_s = m.t.arrive_s;
    inbox_push(&c->session->inbox[to_index], m);
    return arrive_s;
}

bool coll_closed_form_pair(coll_ctx *c, const coll_view *v, int to)
{
    transport_legs legs;
    transport_rank_legs(c->t, c->g->members[c->g->me], coll_view_endpoint(c, v, to), 0, &legs);
    return legs.waits;
}

static int inbox_find(const coll_inbox *in, int tag, int from)
{
    for (int i = 0; i < in->count; i++)
        if (in->msgs[i].tag == tag && in->msgs[i].from == from)
            return i;
    return -1;
}

void coll_recv(coll_ctx *c, const coll_view *v, int from, int tag)
{
    coll_inbox *in = &c->session->inbox[c->g->me];
    int from_index = coll_view_member(v, from);
    int k = inbox_find(in, tag, from_index);
    if (k < 0) {
        if (!in->wake)
            in->wake = sg_sem_init(0);
        in->waiting = true;
        in->want_tag = tag;
        in->want_from = from_index;
        sg_sem_acquire(in->wake);
        k = inbox_find(in, tag, from_index);
        xbt_assert(k >= 0, "npusim: collective woken without its message");
    }
    coll_msg m = in->msgs[k];
    in->msgs[k] = in->msgs[--in->count];
    transport_wait(c->t, &m.t);
}

double coll_latency_s(const coll_ctx *c, const coll_view *v, int a, int b)
{
    return transport_latency_s(c->t, coll_view_endpoint(c, v, a), coll_view_endpoint(c, v, b));
}

void coll_sleep(coll_ctx *c, double duration_s) { transport_sleep(c->t, duration_s); }
