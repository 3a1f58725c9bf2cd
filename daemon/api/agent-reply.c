/*
 * The agent's frequent answers (Submit's and Wait's) written as fixed-format JSON text, with no
 * object built per answer (ARCHITECTURE.md, the engine's path). Every piece of them is a ticket
 * id, a state or error word of lockd's own, or an integer: none needs an escape, and each word
 * is checked to need none before it is written, so a slip elsewhere can never put a quote on the
 * wire. The bytes are those json_dumps() made of the same objects, in the same key order.
 */
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "agent-reply.h"
#include "text-buf.h"

/* An answer's text in the caller's buffer (a TextBuf that never grows), and the first failure:
 * once one piece failed, the rest are not written. */
typedef struct Text {
        TextBuf b;
        int error; /* -E2BIG past the buffer, -EINVAL a word that needs escapes */
} Text;

#define TEXT_IN(buf)                                                                               \
        ((Text){.b = {.p = (buf), .size = AGENT_REPLY_TEXT_MAX, .max = AGENT_REPLY_TEXT_MAX}})

static void text_printf(Text *t, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void text_printf(Text *t, const char *format, ...) {
        va_list ap;

        if (t->error < 0)
                return;
        va_start(ap, format);
        t->error = text_buf_vprintf(&t->b, format, ap);
        va_end(ap);
}

/* The longest word written: a ticket id, a state or an error word. */
#define WORD_MAX 48

/* A JSON string of a word of lockd's own: lower-case letters, digits, '-' and '_' only. */
static void text_word(Text *t, const char *word) {
        size_t n = strlen(word);

        if (n == 0 || n > WORD_MAX || strspn(word, "abcdefghijklmnopqrstuvwxyz0123456789-_") != n) {
                if (t->error == 0)
                        t->error = -EINVAL;
                return;
        }
        text_printf(t, "\"%s\"", word);
}

static ssize_t text_end(const Text *t) {
        return t->error < 0 ? t->error : (ssize_t)t->b.len;
}

ssize_t agent_reply_submit_text(const Ticket *t, char buf[static AGENT_REPLY_TEXT_MAX]) {
        Text x = TEXT_IN(buf);

        text_printf(&x, "{\"ticket\":");
        text_word(&x, t->id);
        text_printf(&x, ",\"state\":");
        text_word(&x, ticket_state_name(t->state));
        text_printf(&x, "}");
        return text_end(&x);
}

ssize_t agent_reply_wait_text(const Ticket *t, char buf[static AGENT_REPLY_TEXT_MAX]) {
        Text x = TEXT_IN(buf);
        bool first = true;

        text_printf(&x, "{\"state\":");
        text_word(&x, ticket_state_name(t->state));
        text_printf(&x, ",\"outcomes\":[");
        for (size_t i = 0; i < t->plan->n_steps; i++) {
                const TicketOutcome *o = &t->outcomes[i];

                if (!o->set)
                        continue;
                text_printf(&x, "%s{\"step\":%zu,\"result\":", first ? "" : ",", i);
                if (o->result < 0)
                        text_printf(&x, "null");
                else
                        text_printf(&x, "%d", o->result);
                text_printf(&x, ",\"error\":");
                if (o->error)
                        text_word(&x, o->error);
                else
                        text_printf(&x, "null");
                text_printf(&x, "}");
                first = false;
        }
        text_printf(&x, "]}");
        return text_end(&x);
}

ssize_t agent_reply_wait_restart_text(const RestartTicket *rt,
                                      char buf[static AGENT_REPLY_TEXT_MAX]) {
        Text x = TEXT_IN(buf);

        text_printf(&x, "{\"state\":\"expired\",\"outcomes\":[");
        for (unsigned i = 0; i < rt->steps; i++)
                text_printf(&x, "%s{\"step\":%u,\"result\":null,\"error\":\"expired\"}",
                            i == 0 ? "" : ",", i);
        text_printf(&x, "]}");
        return text_end(&x);
}

static int reply(VarlinkCall *call, const char *buf, ssize_t n, bool continues) {
        if (n < 0)
                return (int)n;
        return varlink_call_reply_text(call, buf, (size_t)n, continues);
}

int agent_reply_submit(VarlinkCall *call, const Ticket *t) {
        char buf[AGENT_REPLY_TEXT_MAX];

        return reply(call, buf, agent_reply_submit_text(t, buf), false);
}

int agent_reply_wait(VarlinkCall *call, const Ticket *t, bool continues) {
        char buf[AGENT_REPLY_TEXT_MAX];

        return reply(call, buf, agent_reply_wait_text(t, buf), continues);
}

int agent_reply_wait_restart(VarlinkCall *call, const RestartTicket *rt) {
        char buf[AGENT_REPLY_TEXT_MAX];

        return reply(call, buf, agent_reply_wait_restart_text(rt, buf), false);
}
