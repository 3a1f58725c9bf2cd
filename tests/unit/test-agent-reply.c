/*
 * The agent's fixed-format answers (daemon/api/agent-reply.c): for tickets in every state with
 * outcomes of every kind set on random steps, the text is byte for byte what jansson dumps of the
 * object the same answer used to be built as, and a word that would need an escape is refused.
 */
#include <check.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "agent-reply.h"
#include "check-run.h"
#include "macro.h"

/* The object the Wait answer was built as, in its keys' order. */
static json_t *wait_object(const Ticket *t) {
        json_t *list = json_array();

        for (size_t i = 0; i < t->plan->n_steps; i++) {
                const TicketOutcome *o = &t->outcomes[i];

                if (!o->set)
                        continue;
                json_array_append_new(
                        list, json_pack("{s:I, s:o, s:o}", "step", (json_int_t)i, "result",
                                        o->result < 0 ? json_null() : json_integer(o->result),
                                        "error", o->error ? json_string(o->error) : json_null()));
        }
        return json_pack("{s:s, s:o}", "state", ticket_state_name(t->state), "outcomes", list);
}

static void assert_text(ssize_t n, const char *buf, json_t *want) {
        _cleanup_free_ char *text = json_dumps(want, JSON_COMPACT);

        json_decref(want);
        ck_assert_ptr_nonnull(text);
        ck_assert_int_eq(n, (ssize_t)strlen(text));
        ck_assert_str_eq(buf, text);
}

START_TEST(test_matches_jansson) {
        static const char *const errors[] = {"plugin_error",     "input_invalid", "denied",
                                             "budget_exhausted", "expired",       "cancelled"};
        static Plan plan;
        Ticket t = {};
        char buf[AGENT_REPLY_TEXT_MAX];

        srand(31);
        t.plan = &plan;
        for (int round = 0; round < 2000; round++) {
                plan.n_steps = 1 + (size_t)rand() % PLAN_STEPS_MAX;
                t.state = (TicketState)(rand() % _TICKET_STATE_MAX);
                snprintf(t.id, sizeof(t.id), "t-%08x%08x%08x%08x", (unsigned)rand(),
                         (unsigned)rand(), (unsigned)rand(), (unsigned)rand());
                memset(t.outcomes, 0, sizeof(t.outcomes));
                for (size_t i = 0; i < plan.n_steps; i++) {
                        int kind = rand() % 4;

                        if (kind == 0)
                                continue;
                        t.outcomes[i] = (TicketOutcome){
                                .set = true,
                                .result = kind == 3 ? -1 : kind - 1,
                                .error = kind == 3 ? errors[rand() % ELEMENTSOF(errors)] : NULL};
                }
                assert_text(agent_reply_wait_text(&t, buf), buf, wait_object(&t));
                assert_text(agent_reply_submit_text(&t, buf), buf,
                            json_pack("{s:s, s:s}", "ticket", t.id, "state",
                                      ticket_state_name(t.state)));
        }
}
END_TEST

/* Every step of a 16-step ticket with the longest error word: the room holds it. */
START_TEST(test_longest) {
        static Plan plan = {.n_steps = PLAN_STEPS_MAX};
        Ticket t = {.plan = &plan, .state = TICKET_CANCELLED};
        char buf[AGENT_REPLY_TEXT_MAX];

        for (size_t i = 0; i < PLAN_STEPS_MAX; i++)
                t.outcomes[i] = (TicketOutcome){
                        .set = true,
                        .result = -1,
                        .error = "abcdefghijklmnopqrstuvwxyz_abcdefghijklmnopqrstu"}; /* 48 */
        assert_text(agent_reply_wait_text(&t, buf), buf, wait_object(&t));
}
END_TEST

/* The answer for a ticket a restart ended, for every number of steps. */
START_TEST(test_restart) {
        char buf[AGENT_REPLY_TEXT_MAX];

        for (unsigned steps = 0; steps <= PLAN_STEPS_MAX; steps++) {
                RestartTicket rt = {.id = "t-0", .steps = steps};
                json_t *list = json_array();

                for (unsigned i = 0; i < steps; i++)
                        json_array_append_new(list,
                                              json_pack("{s:I, s:n, s:s}", "step", (json_int_t)i,
                                                        "result", "error", "expired"));
                assert_text(agent_reply_wait_restart_text(&rt, buf), buf,
                            json_pack("{s:s, s:o}", "state", "expired", "outcomes", list));
        }
}
END_TEST

/* A word that would need an escape, or longer than any of lockd's, is refused: nothing to send. */
START_TEST(test_refused_words) {
        static const char *const bad[] = {"a\"b",
                                          "a\\b",
                                          "A",
                                          "a b",
                                          "a\nb",
                                          "",
                                          "abcdefghijklmnopqrstuvwxyz_abcdefghijklmnopqrstuv"};
        static Plan plan = {.n_steps = 1};
        Ticket t = {.plan = &plan, .state = TICKET_DONE, .id = "t-1"};
        char buf[AGENT_REPLY_TEXT_MAX];

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                t.outcomes[0] = (TicketOutcome){.set = true, .result = -1, .error = bad[i]};
                ck_assert_int_eq(agent_reply_wait_text(&t, buf), -EINVAL);
        }
        memcpy(t.id, "t-\"1", 5);
        ck_assert_int_eq(agent_reply_submit_text(&t, buf), -EINVAL);
}
END_TEST

static Suite *agent_reply_suite(void) {
        Suite *s = suite_create("agent-reply");
        const CaseOptions each = {.timeout = 30};

        suite_add_case(s, &each, test_matches_jansson);
        suite_add_case(s, &each, test_longest);
        suite_add_case(s, &each, test_restart);
        suite_add_case(s, &each, test_refused_words);
        return s;
}

int main(void) {
        return check_run(agent_reply_suite());
}
