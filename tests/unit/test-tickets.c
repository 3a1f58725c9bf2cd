/* Tests for daemon/tickets: ids, the state machine (pending to running to done, or to denied,
 * cancelled or expired, and nothing after), the caps per agent and overall, expiry on lookup and by
 * the loop's timer, and the announcements and plan releases the caller relies on. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check-run.h"
#include "macro.h"
#include "restart.h"
#include "tickets.h"

#define SEC 1000000ULL

/* What the callbacks saw. */
typedef struct Seen {
        unsigned changed, released;
        TicketState last;
        char last_id[TICKET_ID_LEN + 1];
} Seen;

static void on_changed(const Ticket *t, void *userdata) {
        Seen *s = userdata;

        s->changed++;
        s->last = t->state;
        memcpy(s->last_id, t->id, sizeof(s->last_id));
}

static void on_release(Plan *plan, void *userdata) {
        Seen *s = userdata;

        ck_assert_ptr_nonnull(plan);
        s->released++;
}

/* A plan of n steps: the tickets module never looks inside one but for its step count. */
static Plan *plan_of(size_t n) {
        Plan *p = calloc(1, sizeof(*p));

        ck_assert_ptr_nonnull(p);
        p->n_steps = n;
        return p;
}

START_TEST(test_ids_and_names) {
        _cleanup_(tickets_freep) Tickets *ts = NULL;
        const Ticket *a = NULL, *b = NULL;

        ck_assert_int_eq(tickets_new(NULL, 8, NULL, NULL, NULL, &ts), 0);
        ck_assert_int_eq(tickets_submit(ts, 61001, plan_of(1), NULL, 60 * SEC, 4, &a), 0);
        ck_assert_int_eq(tickets_submit(ts, 61001, plan_of(1), NULL, 60 * SEC, 4, &b), 0);
        ck_assert(ticket_id_valid(a->id));
        ck_assert(ticket_id_valid(b->id));
        ck_assert_str_ne(a->id, b->id);
        ck_assert(!ticket_id_valid("t-0123"));
        ck_assert(!ticket_id_valid("h-0123456789abcdef0123456789abcdef"));
        ck_assert(!ticket_id_valid("t-0123456789ABCDEF0123456789abcdef"));
        ck_assert(!ticket_id_valid(NULL));
        ck_assert_str_eq(ticket_state_name(TICKET_PENDING), "pending");
        ck_assert_str_eq(ticket_state_name(TICKET_EXPIRED), "expired");
        ck_assert_ptr_null(ticket_state_name(_TICKET_STATE_MAX));
        ck_assert(!ticket_state_final(TICKET_PENDING));
        ck_assert(ticket_state_final(TICKET_DENIED));
        ck_assert_int_eq(tickets_new(NULL, 0, NULL, NULL, NULL, &(Tickets *){NULL}), -EINVAL);
        ck_assert_int_eq(tickets_new(NULL, TICKETS_MAX + 1, NULL, NULL, NULL, &(Tickets *){NULL}),
                         -EINVAL);
}
END_TEST

START_TEST(test_state_machine) {
        _cleanup_(tickets_freep) Tickets *ts = NULL;
        Seen seen = {};
        const Ticket *t = NULL, *u = NULL;
        const char *labels[2] = {"Q3 report", NULL};

        ck_assert_int_eq(tickets_new(NULL, 8, on_changed, on_release, &seen, &ts), 0);
        ck_assert_int_eq(tickets_submit(ts, 61001, plan_of(2), labels, 60 * SEC, 4, &t), 0);
        /* Not announced until the caller says so (the audit record comes first). */
        ck_assert_uint_eq(seen.changed, 0);
        tickets_announce(ts, t);
        ck_assert_uint_eq(seen.changed, 1);
        ck_assert_int_eq(seen.last, TICKET_PENDING);
        ck_assert_str_eq(t->labels[0], "Q3 report");
        ck_assert_ptr_ne(t->labels[0], labels[0]);
        ck_assert_ptr_null(t->labels[1]);
        ck_assert(!t->outcomes[0].set && !t->outcomes[1].set);

        /* Another agent cannot see it; the same NULL as for a missing id. */
        ck_assert_ptr_eq(tickets_get_for_agent(ts, t->id, 61001), t);
        ck_assert_ptr_null(tickets_get_for_agent(ts, t->id, 61004));
        ck_assert_ptr_null(tickets_get_for_agent(ts, "t-00000000000000000000000000000000", 61001));

        ck_assert_int_eq(tickets_finish(ts, t->id, TICKET_EXPIRED), -EINVAL);
        ck_assert_int_eq(tickets_finish(ts, t->id, TICKET_DENIED), 0);
        ck_assert_int_eq(t->state, TICKET_DENIED);
        ck_assert_uint_eq(seen.changed, 2);
        ck_assert_str_eq(seen.last_id, t->id);
        for (size_t i = 0; i < 2; i++) {
                ck_assert(t->outcomes[i].set);
                ck_assert_int_eq(t->outcomes[i].result, -1);
                ck_assert_str_eq(t->outcomes[i].error, "denied");
        }
        /* A final state is final. */
        ck_assert_int_eq(tickets_finish(ts, t->id, TICKET_CANCELLED), -EBUSY);
        ck_assert_int_eq(tickets_finish(ts, t->id, TICKET_DENIED), -EBUSY);
        ck_assert_int_eq(t->state, TICKET_DENIED);
        ck_assert_uint_eq(seen.changed, 2);

        /* A ticket never announced changes without telling anyone. */
        ck_assert_int_eq(tickets_submit(ts, 61001, plan_of(1), NULL, 60 * SEC, 4, &u), 0);
        ck_assert_int_eq(tickets_finish(ts, u->id, TICKET_CANCELLED), 0);
        ck_assert_str_eq(u->outcomes[0].error, "cancelled");
        ck_assert_uint_eq(seen.changed, 2);
        ck_assert_int_eq(tickets_finish(ts, "t-nope", TICKET_DENIED), -ENOENT);

        /* Removal releases the plan and announces nothing. */
        ck_assert_int_eq(tickets_remove(ts, u->id), 0);
        ck_assert_uint_eq(seen.released, 1);
        ck_assert_int_eq(tickets_remove(ts, "t-nope"), -ENOENT);
        ck_assert_uint_eq(tickets_n(ts), 1);
        ts = tickets_free(ts);
        ck_assert_uint_eq(seen.released, 2);
        ck_assert_uint_eq(seen.changed, 2);
}
END_TEST

/* Approved: running, outcomes one by one, done with the last; nothing ends it otherwise. */
START_TEST(test_running_to_done) {
        _cleanup_(tickets_freep) Tickets *ts = NULL;
        Seen seen = {};
        const Ticket *c = NULL;
        Ticket *t;
        Plan *p = plan_of(2);

        /* A plan with a placeholder gets a seal key; the start destroys it. */
        p->n_placeholders = 1;
        ck_assert_int_eq(tickets_new(NULL, 8, on_changed, NULL, &seen, &ts), 0);
        ck_assert_int_eq(tickets_submit(ts, 61001, p, NULL, 60 * SEC, 1, &c), 0);
        tickets_announce(ts, c);
        ck_assert_uint_eq(seen.changed, 1);
        tickets_announce(ts, c); /* once only */
        ck_assert_uint_eq(seen.changed, 1);
        t = tickets_get_mutable(ts, c->id);
        ck_assert_ptr_eq(t, c);
        ck_assert_ptr_nonnull(t->seal);
        ck_assert_int_eq(tickets_set_outcome(ts, t, 0, 1, NULL), -EINVAL); /* not running */
        ck_assert_int_eq(tickets_start(ts, t), 0);
        ck_assert_ptr_null(t->seal);
        ck_assert_int_eq(t->state, TICKET_RUNNING);
        ck_assert(!ticket_state_final(TICKET_RUNNING));
        ck_assert_int_eq(tickets_start(ts, t), -EBUSY);
        /* A running ticket counts against the agent's cap like a pending one. */
        ck_assert_uint_eq(tickets_n_pending(ts, 61001), 1);
        {
                Plan *refused = plan_of(1);

                ck_assert_int_eq(tickets_submit(ts, 61001, refused, NULL, 60 * SEC, 1, &c),
                                 -EDQUOT);
                plan_free(refused); /* not taken on failure */
        }
        /* Neither deny, cancel nor expiry touches it. */
        ck_assert_int_eq(tickets_finish(ts, t->id, TICKET_DENIED), -EBUSY);
        ck_assert_uint_eq(tickets_expire(ts, UINT64_MAX), 0);
        /* Outcomes: a result or an error word, each step once, in range. */
        ck_assert_int_eq(tickets_set_outcome(ts, t, 2, 1, NULL), -EINVAL);
        ck_assert_int_eq(tickets_set_outcome(ts, t, 0, 2, NULL), -EINVAL);
        ck_assert_int_eq(tickets_set_outcome(ts, t, 0, 1, "plugin_error"), -EINVAL);
        ck_assert_int_eq(tickets_set_outcome(ts, t, 1, -1, "plugin_error"), 0);
        ck_assert_int_eq(t->state, TICKET_RUNNING);
        ck_assert_int_eq(tickets_set_outcome(ts, t, 1, 0, NULL), -EINVAL);
        ck_assert_int_eq(tickets_set_outcome(ts, t, 0, 1, NULL), 0);
        ck_assert_int_eq(t->state, TICKET_DONE);
        ck_assert(ticket_state_final(TICKET_DONE));
        ck_assert_str_eq(ticket_state_name(TICKET_DONE), "done");
        ck_assert_int_eq(t->outcomes[0].result, 1);
        ck_assert_str_eq(t->outcomes[1].error, "plugin_error");
        /* The announcement, start, two outcomes, the last one done. */
        ck_assert_uint_eq(seen.changed, 4);
        ck_assert_int_eq(seen.last, TICKET_DONE);
        ck_assert_uint_eq(tickets_n_pending(ts, 61001), 0);
}
END_TEST

/* The id index through churn: the set full of one agent's final tickets, its oldest forgotten for
 * each new one, every live id found, every forgotten one not. (With several agents the one that
 * keeps the most gives way: test_full_set_evicts_largest.) */
START_TEST(test_index_churn) {
        _cleanup_(tickets_freep) Tickets *ts = NULL;
        char ids[600][TICKET_ID_LEN + 1];
        const size_t max = 64;

        ck_assert_int_eq(tickets_new(NULL, max, NULL, NULL, NULL, &ts), 0);
        for (size_t i = 0; i < 600; i++) {
                const Ticket *t = NULL;

                ck_assert_int_eq(tickets_submit(ts, 61001, plan_of(1), NULL, 60 * SEC, 4, &t), 0);
                memcpy(ids[i], t->id, sizeof(ids[i]));
                /* Every third one stays pending a while; the rest end at once. */
                if (i % 3 != 0 || i + 3 < 600)
                        ck_assert_int_eq(tickets_finish(ts, t->id, TICKET_DENIED), 0);
                for (size_t k = i >= max ? i - max + 1 : 0; k <= i; k++)
                        ck_assert_ptr_nonnull(tickets_get(ts, ids[k]));
                if (i >= max)
                        ck_assert_ptr_null(tickets_get(ts, ids[i - max]));
        }
        ck_assert_uint_eq(tickets_n(ts), max);
        for (size_t i = 600 - max; i < 600; i++) {
                ck_assert_int_eq(tickets_remove(ts, ids[i]), 0);
                ck_assert_ptr_null(tickets_get(ts, ids[i]));
                for (size_t k = i + 1; k < 600; k++)
                        ck_assert_ptr_nonnull(tickets_get(ts, ids[k]));
        }
        ck_assert_uint_eq(tickets_n(ts), 0);
        ck_assert_uint_eq(tickets_n_pending(ts, 61001), 0);
}
END_TEST

START_TEST(test_refused_submits) {
        _cleanup_(tickets_freep) Tickets *ts = NULL;
        const Ticket *t = NULL;
        Plan *p = plan_of(1);
        char long_label[TICKET_LABEL_MAX + 2];
        const char *labels[1] = {long_label};

        memset(long_label, 'x', sizeof(long_label) - 1);
        long_label[sizeof(long_label) - 1] = 0;
        ck_assert_int_eq(tickets_new(NULL, 8, NULL, NULL, NULL, &ts), 0);
        ck_assert_int_eq(tickets_submit(ts, 61001, NULL, NULL, SEC, 4, &t), -EINVAL);
        ck_assert_int_eq(tickets_submit(ts, 61001, p, NULL, 0, 4, &t), -EINVAL);
        ck_assert_int_eq(tickets_submit(ts, 61001, p, labels, SEC, 4, &t), -EINVAL);
        p->n_steps = 0;
        ck_assert_int_eq(tickets_submit(ts, 61001, p, NULL, SEC, 4, &t), -EINVAL);
        p->n_steps = PLAN_STEPS_MAX + 1;
        ck_assert_int_eq(tickets_submit(ts, 61001, p, NULL, SEC, 4, &t), -EINVAL);
        ck_assert_ptr_null(t);
        ck_assert_uint_eq(tickets_n(ts), 0);
        plan_free(p);
}
END_TEST

START_TEST(test_caps) {
        _cleanup_(tickets_freep) Tickets *ts = NULL;
        Seen seen = {};
        const Ticket *t[4] = {};
        const Ticket *x = NULL;
        Plan *p = plan_of(1);

        ck_assert_int_eq(tickets_new(NULL, 4, NULL, on_release, &seen, &ts), 0);
        /* Two pending per agent. */
        ck_assert_int_eq(tickets_submit(ts, 61001, plan_of(1), NULL, 60 * SEC, 2, &t[0]), 0);
        ck_assert_int_eq(tickets_submit(ts, 61001, plan_of(1), NULL, 60 * SEC, 2, &t[1]), 0);
        ck_assert_int_eq(tickets_submit(ts, 61001, p, NULL, 60 * SEC, 2, &x), -EDQUOT);
        ck_assert_uint_eq(tickets_n_pending(ts, 61001), 2);
        /* Another agent is not held back by this one's cap. */
        ck_assert_int_eq(tickets_submit(ts, 61004, plan_of(1), NULL, 60 * SEC, 2, &t[2]), 0);
        ck_assert_int_eq(tickets_submit(ts, 61004, plan_of(1), NULL, 60 * SEC, 2, &t[3]), 0);
        /* The set is full of pending tickets: nothing to make room with. */
        ck_assert_int_eq(tickets_submit(ts, 61005, p, NULL, 60 * SEC, 2, &x), -ENOSPC);
        ck_assert_ptr_null(x);
        /* A final ticket frees its agent's slot, and the oldest final one makes room. */
        ck_assert_int_eq(tickets_finish(ts, t[1]->id, TICKET_DENIED), 0);
        ck_assert_uint_eq(tickets_n_pending(ts, 61001), 1);
        ck_assert_int_eq(tickets_submit(ts, 61005, p, NULL, 60 * SEC, 2, &x), 0);
        ck_assert_uint_eq(seen.released, 1);
        ck_assert_uint_eq(tickets_n(ts), 4);
        ck_assert_ptr_eq(tickets_at(ts, 3), x);
        ck_assert_ptr_null(tickets_at(ts, 4));
}
END_TEST

START_TEST(test_expiry_on_lookup) {
        _cleanup_(tickets_freep) Tickets *ts = NULL;
        Seen seen = {};
        const Ticket *t = NULL;
        char id[TICKET_ID_LEN + 1];

        ck_assert_int_eq(tickets_new(NULL, 8, on_changed, NULL, &seen, &ts), 0);
        ck_assert_int_eq(tickets_submit(ts, 61001, plan_of(3), NULL, 60 * SEC, 1, &t), 0);
        tickets_announce(ts, t);
        seen.changed = 0;
        memcpy(id, t->id, sizeof(id));
        ck_assert_uint_eq(t->expires_usec - t->created_usec, 60 * SEC);
        ck_assert_uint_eq(tickets_expire(ts, t->deadline_usec - SEC), 0);
        ck_assert_uint_eq(tickets_expire(ts, t->deadline_usec), 1);
        ck_assert_int_eq(t->state, TICKET_EXPIRED);
        ck_assert_uint_eq(seen.changed, 1);
        for (size_t i = 0; i < 3; i++)
                ck_assert_str_eq(t->outcomes[i].error, "expired");
        ck_assert_uint_eq(tickets_expire(ts, t->deadline_usec + SEC), 0);
        /* Kept, final, and its agent may submit again. */
        ck_assert_ptr_eq(tickets_get(ts, id), t);
        ck_assert_int_eq(tickets_finish(ts, id, TICKET_CANCELLED), -EBUSY);
        ck_assert_uint_eq(tickets_n_pending(ts, 61001), 0);
}
END_TEST

static int on_quit(sd_event_source *s, uint64_t usec, void *userdata) {
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

START_TEST(test_expiry_timer) {
        _cleanup_(tickets_freep) Tickets *ts = NULL;
        sd_event *e = NULL;
        Seen seen = {};
        const Ticket *t = NULL, *later = NULL;

        ck_assert_int_ge(sd_event_new(&e), 0);
        ck_assert_int_eq(tickets_new(e, 8, on_changed, NULL, &seen, &ts), 0);
        ck_assert_int_eq(tickets_submit(ts, 61001, plan_of(1), NULL, 200 * 1000, 4, &t), 0);
        ck_assert_int_eq(tickets_submit(ts, 61001, plan_of(1), NULL, 60 * SEC, 4, &later), 0);
        tickets_announce(ts, t);
        tickets_announce(ts, later);
        seen.changed = 0;
        /* Nobody looks: only the timer can expire it. */
        ck_assert_int_ge(
                sd_event_add_time_relative(e, NULL, CLOCK_MONOTONIC, 800 * 1000, 0, on_quit, NULL),
                0);
        ck_assert_int_ge(sd_event_loop(e), 0);
        ck_assert_int_eq(t->state, TICKET_EXPIRED);
        ck_assert_int_eq(later->state, TICKET_PENDING);
        ck_assert_uint_eq(seen.changed, 1);
        ck_assert_str_eq(seen.last_id, t->id);
        ts = tickets_free(ts);
        sd_event_unref(e);
}
END_TEST


/* The tickets a restart ends: submitted in the log and never ended there. */
START_TEST(test_restart_scan) {
        static const char log[] =
                "{\"agent_uid\":61001,\"event\":\"submit\",\"seq\":1,\"steps\":2,"
                "\"ticket\":\"t-00000000000000000000000000000001\"}\n"
                "{\"agent_uid\":61001,\"event\":\"submit\",\"seq\":2,\"steps\":1,"
                "\"ticket\":\"t-00000000000000000000000000000002\"}\n"
                "{\"agent_uid\":61004,\"event\":\"submit\",\"seq\":3,\"steps\":1,"
                "\"ticket\":\"t-00000000000000000000000000000003\"}\n"
                "not json at all\n"
                "{\"event\":\"done\",\"seq\":4,\"ticket\":\"t-00000000000000000000000000000002\"}\n"
                "{\"event\":\"cancel\",\"seq\":5,\"ticket\":\"t-00000000000000000000000000000003\"}\n"
                "{\"agent_uid\":61004,\"event\":\"submit\",\"seq\":6,\"steps\":3,"
                "\"ticket\":\"t-00000000000000000000000000000004\"}\n";
        RestartTickets rt = {};
        const RestartTicket *t;

        ck_assert_int_eq(restart_tickets_scan(log, sizeof(log) - 1, &rt), 0);
        ck_assert_uint_eq(rt.n, 2);
        t = restart_tickets_find(&rt, "t-00000000000000000000000000000001", 61001);
        ck_assert_ptr_nonnull(t);
        ck_assert_uint_eq(t->steps, 2);
        ck_assert_ptr_null(restart_tickets_find(&rt, "t-00000000000000000000000000000001", 61004));
        ck_assert_ptr_null(restart_tickets_find(&rt, "t-00000000000000000000000000000002", 61001));
        ck_assert_ptr_null(restart_tickets_find(&rt, "t-00000000000000000000000000000003", 61004));
        t = restart_tickets_find(&rt, "t-00000000000000000000000000000004", 61004);
        ck_assert_ptr_nonnull(t);
        ck_assert_uint_eq(t->steps, 3);
        ck_assert_ptr_null(restart_tickets_find(&rt, "bogus", 61004));
        restart_tickets_done(&rt);
        ck_assert_int_eq(restart_tickets_scan(NULL, 0, &rt), 0);
        ck_assert_uint_eq(rt.n, 0);
        restart_tickets_done(&rt);
}
END_TEST

/* Submits one ticket of agent and ends it at once, as an agent's flood of auto tickets answered
 * from the cache does. */
static const Ticket *churn_one(Tickets *ts, uid_t agent, size_t steps) {
        const Ticket *t = NULL;

        ck_assert_int_eq(tickets_submit(ts, agent, plan_of(steps), NULL, 60 * SEC, 16, &t), 0);
        ck_assert_int_eq(tickets_finish(ts, t->id, TICKET_CANCELLED), 0);
        return t;
}

/* An agent's flood pushes out only its own history: another agent's final tickets and every
 * pending ticket stay, and the flooder keeps at most its share. Fails on a set that forgets the
 * oldest final ticket whoever holds it. */
START_TEST(test_fair_share) {
        _cleanup_(tickets_freep) Tickets *ts = NULL;
        char other_final[4][TICKET_ID_LEN + 1], other_pending[2][TICKET_ID_LEN + 1];
        const size_t max = 64, share = 8;

        ck_assert_int_eq(tickets_new(NULL, max, NULL, NULL, NULL, &ts), 0);
        ck_assert_int_eq(tickets_set_kept_per_agent(ts, 0), -EINVAL);
        ck_assert_int_eq(tickets_set_kept_per_agent(ts, max + 1), -EINVAL);
        ck_assert_int_eq(tickets_set_kept_per_agent(ts, share), 0);
        /* The older history of another agent, and two of its tickets waiting for the human. */
        for (size_t i = 0; i < 4; i++)
                memcpy(other_final[i], churn_one(ts, 61002, 1)->id, TICKET_ID_LEN + 1);
        for (size_t i = 0; i < 2; i++) {
                const Ticket *t = NULL;

                ck_assert_int_eq(tickets_submit(ts, 61002, plan_of(2), NULL, 60 * SEC, 16, &t), 0);
                memcpy(other_pending[i], t->id, TICKET_ID_LEN + 1);
        }
        for (size_t i = 0; i < 10 * max; i++) {
                churn_one(ts, 61001, 16);
                ck_assert_uint_le(tickets_n_kept(ts, 61001), share);
        }
        ck_assert_uint_eq(tickets_n_kept(ts, 61001), share);
        ck_assert_uint_eq(tickets_n_kept(ts, 61002), 4);
        for (size_t i = 0; i < 4; i++)
                ck_assert_ptr_nonnull(tickets_get(ts, other_final[i]));
        for (size_t i = 0; i < 2; i++)
                ck_assert_int_eq(tickets_get(ts, other_pending[i])->state, TICKET_PENDING);
        ck_assert_uint_eq(tickets_n(ts), share + 4 + 2);
}
END_TEST

/* A full set makes room from the agent that keeps the most final tickets, never a pending one. */
START_TEST(test_full_set_evicts_largest) {
        _cleanup_(tickets_freep) Tickets *ts = NULL;
        char first_b[TICKET_ID_LEN + 1], first_a[TICKET_ID_LEN + 1];
        const Ticket *t = NULL;

        ck_assert_int_eq(tickets_new(NULL, 8, NULL, NULL, NULL, &ts), 0);
        /* b (older) keeps 2, a keeps 5, one pending of c: 8, full. */
        memcpy(first_b, churn_one(ts, 61002, 1)->id, sizeof(first_b));
        churn_one(ts, 61002, 1);
        memcpy(first_a, churn_one(ts, 61001, 1)->id, sizeof(first_a));
        for (size_t i = 0; i < 4; i++)
                churn_one(ts, 61001, 1);
        ck_assert_int_eq(tickets_submit(ts, 61003, plan_of(1), NULL, 60 * SEC, 16, &t), 0);
        ck_assert_uint_eq(tickets_n(ts), 8);
        /* c's next one pushes out a's oldest, not b's, though b's is older. */
        ck_assert_int_eq(tickets_submit(ts, 61003, plan_of(1), NULL, 60 * SEC, 16, &t), 0);
        ck_assert_ptr_null(tickets_get(ts, first_a));
        ck_assert_ptr_nonnull(tickets_get(ts, first_b));
        ck_assert_uint_eq(tickets_n_kept(ts, 61001), 4);
        ck_assert_uint_eq(tickets_n_pending_all(ts), 2);
}
END_TEST

/* Every ticket of a listing, page by page through the string cursor, limit per page. */
static size_t list_all(Tickets *ts, const TicketFilter *f, size_t limit, const Ticket **out,
                       size_t max) {
        TicketCursor c = {};
        size_t n = 0;

        for (;;) {
                char buf[TICKET_CURSOR_STRING_MAX];
                size_t got = 0;
                const Ticket *t;

                while (got < limit && (t = tickets_next(ts, f, &c))) {
                        ck_assert_uint_lt(n, max);
                        out[n++] = t;
                        got++;
                }
                if (got < limit)
                        return n;
                ticket_cursor_format(&c, buf);
                c = (TicketCursor){};
                ck_assert_int_eq(ticket_cursor_parse(buf, &c), 0);
        }
}

/* Pending first, then the rest, each newest first, across pages; filters by state and agent. */
START_TEST(test_listing_order) {
        _cleanup_(tickets_freep) Tickets *ts = NULL;
        const Ticket *sub[12] = {}, *got[16] = {};
        TicketFilter by_agent = {.state = -1, .by_agent = true, .agent = 61002};
        TicketFilter pending = {.state = TICKET_PENDING};
        size_t n;

        ck_assert_int_eq(tickets_new(NULL, 64, NULL, NULL, NULL, &ts), 0);
        for (size_t i = 0; i < 12; i++) {
                ck_assert_int_eq(tickets_submit(ts, 61001 + (uid_t)(i % 2), plan_of(1), NULL,
                                                60 * SEC, 16, &sub[i]),
                                 0);
                /* 0, 3, 6, 9 stay pending. */
                if (i % 3 != 0)
                        ck_assert_int_eq(tickets_finish(ts, sub[i]->id, TICKET_DENIED), 0);
        }
        for (size_t limit = 1; limit <= 13; limit++) {
                const size_t want[12] = {9, 6, 3, 0, 11, 10, 8, 7, 5, 4, 2, 1};

                n = list_all(ts, NULL, limit, got, 16);
                ck_assert_uint_eq(n, 12);
                for (size_t i = 0; i < 12; i++)
                        ck_assert_ptr_eq(got[i], sub[want[i]]);
        }
        n = list_all(ts, &pending, 3, got, 16);
        ck_assert_uint_eq(n, 4);
        ck_assert_ptr_eq(got[0], sub[9]);
        n = list_all(ts, &by_agent, 2, got, 16);
        ck_assert_uint_eq(n, 6);
        {
                const size_t want[6] = {9, 3, 11, 7, 5, 1};

                for (size_t i = 0; i < n; i++)
                        ck_assert_ptr_eq(got[i], sub[want[i]]);
        }
}
END_TEST

START_TEST(test_cursor_strings) {
        TicketCursor c = {.started = true, .in_other = true, .seq = 18446744073709551615ULL};
        char buf[TICKET_CURSOR_STRING_MAX];
        TicketCursor back = {};
        const char *bad[] = {"",
                             "p",
                             "p.",
                             "x.1",
                             "p.01",
                             "p.-1",
                             "p.1a",
                             "P.1",
                             "o.18446744073709551616",
                             "o.184467440737095516150",
                             "p.1 "};

        ticket_cursor_format(&c, buf);
        ck_assert_str_eq(buf, "o.18446744073709551615");
        ck_assert_int_eq(ticket_cursor_parse(buf, &back), 0);
        ck_assert(back.in_other && back.started && back.seq == c.seq);
        ck_assert_int_eq(ticket_cursor_parse("p.0", &back), 0);
        ck_assert(!back.started && !back.in_other);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                back = (TicketCursor){.seq = 7};
                ck_assert_int_eq(ticket_cursor_parse(bad[i], &back), -EINVAL);
                ck_assert_uint_eq(back.seq, 7);
        }
}
END_TEST

static Suite *tickets_suite(void) {
        Suite *s = suite_create("tickets");
        const CaseOptions each = {.timeout = 30};

        suite_add_case(s, &each, test_ids_and_names);
        suite_add_case(s, &each, test_state_machine);
        suite_add_case(s, &each, test_running_to_done);
        suite_add_case(s, &each, test_index_churn);
        suite_add_case(s, &each, test_refused_submits);
        suite_add_case(s, &each, test_caps);
        suite_add_case(s, &each, test_expiry_on_lookup);
        suite_add_case(s, &each, test_expiry_timer);
        suite_add_case(s, &each, test_restart_scan);
        suite_add_case(s, &each, test_fair_share);
        suite_add_case(s, &each, test_full_set_evicts_largest);
        suite_add_case(s, &each, test_listing_order);
        suite_add_case(s, &each, test_cursor_strings);
        return s;
}

int main(void) {
        return check_run(tickets_suite());
}
