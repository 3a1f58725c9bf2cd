/* The budgets' write-ahead log: each change as an audit record's fields, and the replay of those
 * records past the checkpoint at open (ARCHITECTURE.md, Flows: "Budgets"). */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget-internal.h"
#include "codec.h"
#include "macro.h"

static const char *const change_names[_BUDGET_CHANGE_MAX] = {
        [BUDGET_CHANGE_RESERVE] = "reserve",
        [BUDGET_CHANGE_COMMIT] = "commit",
        [BUDGET_CHANGE_RELEASE] = "release",
};

/* "in=ph,in2=ph2" of k's pairs into out (room for BUDGET_PAIRS_MAX * 2 * (BUDGET_NAME_MAX + 1)). */
static void bindings_format(const BudgetKey *k, char *out) {
        size_t len = 0;

        out[0] = 0;
        for (size_t i = 0; i < k->n_pairs; i++)
                len += (size_t)sprintf(out + len, "%s%s=%s", i > 0 ? "," : "", k->pairs[i].input,
                                       k->pairs[i].placeholder);
}

#define BINDINGS_MAX BUDGET_BINDINGS_TEXT_MAX

int budget_change_fields(const BudgetChange *c, BudgetChangeText *text, AuditField *out) {
        size_t n = 0;

        if (!c || !text || !out || (unsigned)c->type >= _BUDGET_CHANGE_MAX ||
            !budget_key_valid(&c->key) ||
            (c->type == BUDGET_CHANGE_COMMIT && !budget_outcome_is_final(c->outcome)))
                return -EINVAL;
        hex_encode(c->digest, BUDGET_DIGEST_SIZE, text->hex);
        bindings_format(&c->key, text->bindings);
        /* Names, versions and a digest only ([a-z0-9._=,-]): never a value a human typed. */
        out[n++] = audit_field_string("handle_sha256", text->hex);
        out[n++] = audit_field_string("change", change_names[c->type]);
        out[n++] = audit_field_string("plugin", c->key.plugin);
        out[n++] = audit_field_string("version", c->key.version);
        out[n++] = audit_field_string("bindings", text->bindings);
        if (c->type == BUDGET_CHANGE_COMMIT) {
                out[n++] = audit_field_string("outcome", budget_outcome_name(c->outcome));
                out[n++] = c->ran_usec > 0 && c->ran_usec <= INT64_MAX
                                   ? audit_field_integer("ran_usec", (int64_t)c->ran_usec)
                                   : audit_field_null("ran_usec");
        }
        return (int)n;
}

/* A key back from a record's plugin, version and bindings. -EBADMSG when it is not one lockd
 * writes (budget_change_fields()). */
static int key_parse(const char *plugin, const char *version, const char *bindings, BudgetKey *k) {
        char buf[BINDINGS_MAX];
        char *save = NULL, *tok;

        if (!plugin || !version || !bindings || strlen(bindings) >= sizeof(buf) ||
            budget_key_init(k, plugin, version) < 0)
                return -EBADMSG;
        strcpy(buf, bindings);
        for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(tok, '=');

                if (!eq)
                        return -EBADMSG;
                *eq = 0;
                if (budget_key_add(k, tok, eq + 1) < 0)
                        return -EBADMSG;
        }
        return 0;
}

/* The budget of d for a replay, made when absent (no limit: the change was checked when made). */
static int replay_budget(BudgetStore *s, const uint8_t d[BUDGET_DIGEST_SIZE], Budget **ret) {
        Budget *b = budget_table_find(s, d, NULL);
        int r;

        if (!b) {
                r = budget_table_new(s, d, &b);
                if (r < 0)
                        return r;
                budget_table_put(s, b);
        }
        *ret = b;
        return 0;
}

/* Takes a slot of key in b with outcome o (for a replayed reservation or commit). */
static int replay_add(BudgetStore *s, Budget *b, const char *bytes, size_t len, uint64_t hash,
                      BudgetOutcome o, uint64_t time_usec, uint64_t ran_usec) {
        char *copy;

        if (b->n >= BUDGET_LIMIT_MAX)
                return -EBADMSG; /* more slots than any budget holds: not a log lockd wrote */
        if (budget_answers_room(b) < 0)
                return -ENOMEM;
        copy = malloc(len);
        if (!copy)
                return -ENOMEM;
        memcpy(copy, bytes, len);
        b->answers[b->n++] = (Answer){.key = copy,
                                      .key_len = len,
                                      .key_hash = hash,
                                      .outcome = o,
                                      .time_usec = time_usec,
                                      .ran_usec = ran_usec};
        return 0;
}

/* Marks b for the checkpoint after a replayed change, or drops it (its file goes) when empty. */
static int replay_changed(BudgetStore *s, Budget *b) {
        int r = budget_change_room(s, b, b->n);

        if (r < 0)
                return r;
        budget_changed_deferred(s, b, true);
        return 0;
}

/*
 * One replayed record: a "budget" change or a "budget_reset" (rec, its time). Per key: a
 * reservation takes an absent slot; an outcome sets a reserved (or absent) slot and leaves a final
 * one; a release drops a reserved slot; a reset drops every slot. Each is idempotent, and so is a
 * run of them (ARCHITECTURE.md, Flows: "Budgets"). 1 when memory changed, 0 when not, -EBADMSG.
 */
static int replay_one(BudgetStore *s, json_t *rec, bool reset) {
        const char *hex = json_string_value(json_object_get(rec, "handle_sha256"));
        json_t *time_v = json_object_get(rec, "time");
        uint8_t d[BUDGET_DIGEST_SIZE];
        char bytes[KEY_BYTES_MAX];
        const char *change;
        BudgetOutcome o = BUDGET_OUTCOME_RESERVED;
        uint64_t hash, ran = 0;
        BudgetKey k;
        Budget *b;
        Answer *a;
        size_t len;
        int r, type = -1;

        if (!hex || strlen(hex) != HEX_SIZE || !hex_lower_valid(hex, HEX_SIZE) ||
            hex_decode(hex, HEX_SIZE, d, sizeof(d)) < 0 || !json_is_integer(time_v))
                return -EBADMSG;
        if (reset) {
                b = budget_table_find(s, d, NULL);
                if (!b)
                        return 0;
                for (size_t i = 0; i < b->n; i++)
                        budget_answer_done(&b->answers[i]);
                b->n = 0;
                r = replay_changed(s, b);
                return r < 0 ? r : 1;
        }
        change = json_string_value(json_object_get(rec, "change"));
        for (int t = 0; change && t < _BUDGET_CHANGE_MAX; t++)
                if (strcmp(change, change_names[t]) == 0)
                        type = t;
        if (type < 0 || key_parse(json_string_value(json_object_get(rec, "plugin")),
                                  json_string_value(json_object_get(rec, "version")),
                                  json_string_value(json_object_get(rec, "bindings")), &k) < 0)
                return -EBADMSG;
        if (type == BUDGET_CHANGE_COMMIT) {
                const char *on = json_string_value(json_object_get(rec, "outcome"));
                json_t *ran_v = json_object_get(rec, "ran_usec");

                if (!on || budget_parse_outcome(on, &o) < 0 || !budget_outcome_is_final(o) ||
                    (o == BUDGET_OUTCOME_ANSWERED) != (k.n_pairs > 0) ||
                    !(json_is_null(ran_v) ||
                      (json_is_integer(ran_v) && json_integer_value(ran_v) > 0)))
                        return -EBADMSG;
                ran = json_is_integer(ran_v) ? (uint64_t)json_integer_value(ran_v) : 0;
        }
        len = budget_key_encode(&k, bytes);
        hash = budget_key_hash(bytes, len);
        b = budget_table_find(s, d, NULL);
        a = b ? budget_find(b, bytes, len, hash) : NULL;
        switch (type) {
        case BUDGET_CHANGE_RESERVE:
        case BUDGET_CHANGE_COMMIT:
                if (a && (a->outcome != BUDGET_OUTCOME_RESERVED || type == BUDGET_CHANGE_RESERVE))
                        return 0;
                if (a) {
                        a->outcome = o;
                        a->time_usec = (uint64_t)json_integer_value(time_v);
                        a->ran_usec = ran;
                } else {
                        r = replay_budget(s, d, &b);
                        if (r >= 0)
                                r = replay_add(s, b, bytes, len, hash, o,
                                               (uint64_t)json_integer_value(time_v), ran);
                        if (r < 0) {
                                if (b->n == 0)
                                        (void)replay_changed(s, b);
                                return r;
                        }
                }
                break;
        default: /* BUDGET_CHANGE_RELEASE */
                if (!a || a->outcome != BUDGET_OUTCOME_RESERVED)
                        return 0;
                budget_answer_done(a);
                memmove(a, a + 1, (size_t)(b->answers + b->n - (a + 1)) * sizeof(Answer));
                b->n--;
                break;
        }
        r = replay_changed(s, b);
        return r < 0 ? r : 1;
}

/* The value of "key":<digits> in a canonical record line (no string holds a bare quote), or -1. */
static int64_t line_number(const char *line, size_t len, const char *key) {
        char pat[16];
        const char *p;
        int64_t v = 0;
        size_t n = (size_t)snprintf(pat, sizeof(pat), "\"%s\":", key);

        p = memmem(line, len, pat, n);
        if (!p)
                return -1;
        p += n;
        if (p >= line + len || *p < '0' || *p > '9')
                return -1;
        for (; p < line + len && *p >= '0' && *p <= '9'; p++) {
                if (v > (INT64_MAX - 9) / 10)
                        return -1;
                v = v * 10 + (*p - '0');
        }
        return v;
}

int budget_replay(BudgetStore *s, const char *buf, size_t len, size_t *ret_n, BudgetError *err) {
        static const char budget_ev[] = "\"event\":\"budget\"",
                          reset_ev[] = "\"event\":\"budget_reset\"",
                          recovered_ev[] = "\"event\":\"recovered\"";
        uint64_t p_seq;
        size_t applied = 0, off = 0;
        bool first = true;
        int r;

        if (err)
                *err = (BudgetError){};
        if (!s || (!buf && len > 0))
                return budget_fail(err, -EINVAL, "invalid arguments");
        if (ret_n)
                *ret_n = 0;
        /* No checkpoint: the files are the budgets (a store from before the log was their WAL,
         * whose log holds no budget changes, or one whose checkpoint the operator removed). */
        if (!s->has_checkpoint)
                return 0;
        p_seq = s->checkpoint_seq;
        while (off < len) {
                const char *line = buf + off, *nl = memchr(line, '\n', len - off);
                size_t n = nl ? (size_t)(nl - line) : len - off;
                int64_t seq = line_number(line, n, "seq");
                bool is_budget, is_reset;

                off += n + (nl ? 1 : 0);
                if (!nl)
                        break; /* a torn tail: audit_open() cuts it */
                if (seq <= 0)
                        return budget_fail(err, -EBADMSG, "audit log: a record without its seq");
                if (first) {
                        first = false;
                        /* Records after the checkpoint in an older segment: the segment switch
                         * checkpoints first, so this is not a log this checkpoint followed. */
                        if ((uint64_t)seq > p_seq + 1)
                                return budget_fail(
                                        err, -EBADMSG,
                                        "audit log: its current file starts at record %" PRId64
                                        ", after the budget checkpoint's %" PRIu64
                                        " (budget changes in between are not in it)",
                                        seq, p_seq);
                        if ((uint64_t)seq == p_seq + 1 && p_seq > 0) {
                                /* A rotation's first record links to the checkpoint's. */
                                char want[HEX_SIZE + 16];

                                snprintf(want, sizeof(want), "\"prev\":\"%s\"", s->checkpoint_head);
                                if (!memmem(line, n, want, strlen(want)))
                                        return budget_fail(
                                                err, -EBADMSG,
                                                "audit log: record %" PRId64 " does not follow "
                                                "the budget checkpoint's record %" PRIu64,
                                                seq, p_seq);
                        }
                }
                if ((uint64_t)seq <= p_seq) {
                        if ((uint64_t)seq == p_seq) {
                                char h[AUDIT_HASH_HEX + 1];

                                /* A crash may tear the checkpoint's record, which was not
                                 * durable yet: the start's "recovered" record takes its seq. */
                                audit_hash_hex(line, n, h);
                                if (strcmp(h, s->checkpoint_head) != 0 &&
                                    !memmem(line, n, recovered_ev, sizeof(recovered_ev) - 1))
                                        return budget_fail(
                                                err, -EBADMSG,
                                                "audit log: record %" PRIu64 " is not the one "
                                                "the budget checkpoint follows (another log?)",
                                                p_seq);
                        }
                        /* At or before the checkpoint: in it already. A file that ends before
                         * its seq holds nothing newer (a crash cut records it had seen). */
                        continue;
                }
                is_budget = memmem(line, n, budget_ev, sizeof(budget_ev) - 1) != NULL;
                is_reset = memmem(line, n, reset_ev, sizeof(reset_ev) - 1) != NULL;
                if (!is_budget && !is_reset)
                        continue;
                {
                        _cleanup_(json_decrefp) json_t *rec = json_loadb(line, n, 0, NULL);

                        r = rec ? replay_one(s, rec, is_reset) : -EBADMSG;
                }
                if (r == -ENOMEM)
                        return budget_fail(err, r, "audit log replay: out of memory");
                if (r < 0)
                        return budget_fail(err, r,
                                           "audit log: record %" PRId64
                                           " is not a budget change lockd "
                                           "writes (refusing to start rather than guess a budget)",
                                           seq);
                applied += (size_t)r;
        }
        if (ret_n)
                *ret_n = applied;
        return 0;
}
