/* The Varlink handlers for budgets: the console's ListBudgets (each content's answers, and the
 * live handles of that content) and ResetBudget (the human's reset, audited). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "commit.h"
#include "console-reply.h"
#include "answers.h"
#include "audit.h"
#include "budget.h"
#include "console-budget.h"
#include "handles.h"
#include "log-ids.h"
#include "log.h"
#include "macro.h"
#include "engine.h"
#include "policy.h"

#define DIGEST_HEX (BUDGET_DIGEST_SIZE * 2)

/*
 * Parses a digest as the console writes it: exactly 64 lowercase hex digits. Strict on purpose:
 * the hex form is the name of a budget file and the key the human reads in `lockctl handles`, so
 * an uppercase or padded spelling would be a second name for one budget. 0, or -EINVAL with *ret
 * untouched.
 */
static int digest_from_hex(const char *s, uint8_t ret[BUDGET_DIGEST_SIZE]) {
        if (!s || strlen(s) != DIGEST_HEX || !hex_lower_valid(s, DIGEST_HEX))
                return -EINVAL;
        return hex_decode(s, DIGEST_HEX, ret, BUDGET_DIGEST_SIZE) < 0 ? -EINVAL : 0;
}

static void digest_to_hex(const uint8_t d[BUDGET_DIGEST_SIZE], char out[DIGEST_HEX + 1]) {
        hex_encode(d, BUDGET_DIGEST_SIZE, out);
}

/* What a call names: a content, through a live handle or its digest. */
typedef struct BudgetTarget {
        uint8_t digest[BUDGET_DIGEST_SIZE];
        char sha256[DIGEST_HEX + 1];
        const char *handle; /* borrowed from params; NULL when named by digest */
} BudgetTarget;

/* A reply sent by a parser: 1, or the negative errno of a reply that could not be sent. */
static int replied(int r) {
        return r < 0 ? r : 1;
}

/*
 * Reads the optional handle and sha256 parameters into *t. With required, exactly one must be
 * given; without, at most one (*ret_any says whether one was). 0 with *t filled, or 1 when a
 * refusal was answered already (a negative errno when even that failed).
 */
static int parse_target(VarlinkCall *call, Manager *m, json_t *params, bool required,
                        BudgetTarget *t, bool *ret_any) {
        const char *handle = json_string_value(json_object_get(params, "handle"));
        const char *sha256 = json_string_value(json_object_get(params, "sha256"));

        if (handle && sha256)
                return replied(
                        reply_invalid_request(call, "give either handle or sha256, not both"));
        if (!handle && !sha256 && required)
                return replied(reply_invalid_request(call, "give handle or sha256"));
        if (sha256 && digest_from_hex(sha256, t->digest) < 0)
                return replied(
                        reply_invalid_request(call, "sha256 must be 64 lowercase hex digits"));
        if (handle) {
                /* Any live handle, whoever its agent: the console sees them all. */
                const Handle *h = handles_get(m->handles, handle);

                if (!h)
                        return replied(reply_error(call, CONSOLE_ERROR("UnknownHandle"),
                                                   json_pack("{s:s}", "handle", handle)));
                memcpy(t->digest, h->digest, BUDGET_DIGEST_SIZE);
                t->handle = handle;
        }
        digest_to_hex(t->digest, t->sha256);
        *ret_any = handle || sha256;
        return 0;
}

/* A live handle by its content, for matching budgets to grants. */
typedef struct HandleRef {
        const uint8_t *digest;
        const char *id;
        size_t order; /* grant order, so the ids of one content come in the order of their grants */
} HandleRef;

static int handle_ref_cmp(const void *x, const void *y) {
        const HandleRef *a = x, *b = y;
        int c = memcmp(a->digest, b->digest, BUDGET_DIGEST_SIZE);

        if (c != 0)
                return c;
        return a->order < b->order ? -1 : a->order > b->order;
}

/*
 * The live handles sorted by digest: a new array in *ret (NULL when none) and its size. One sort
 * (at most HANDLES_MAX) and a binary search per budget keeps a list of many budgets linear in
 * its output instead of budgets × handles. 0 or -ENOMEM.
 */
static int handle_refs(Handles *hs, HandleRef **ret, size_t *ret_n) {
        size_t n = handles_n(hs);
        HandleRef *refs;

        if (n == 0) {
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        refs = calloc(n, sizeof(HandleRef));
        if (!refs)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const Handle *h = handles_at(hs, i);

                refs[i] = (HandleRef){.digest = h->digest, .id = h->id, .order = i};
        }
        qsort(refs, n, sizeof(HandleRef), handle_ref_cmp);
        *ret = refs;
        *ret_n = n;
        return 0;
}

/* The ids of the handles in refs (sorted, n) whose content is digest, as a new JSON array. */
static json_t *handles_of(const HandleRef *refs, size_t n,
                          const uint8_t digest[BUDGET_DIGEST_SIZE]) {
        _cleanup_(json_decrefp) json_t *ids = json_array();
        size_t lo = 0, hi = n;

        if (!ids)
                return NULL;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (memcmp(refs[mid].digest, digest, BUDGET_DIGEST_SIZE) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        for (; lo < n && memcmp(refs[lo].digest, digest, BUDGET_DIGEST_SIZE) == 0; lo++)
                if (json_array_append_new(ids, json_string(refs[lo].id)) < 0)
                        return NULL;
        return TAKE_PTR(ids);
}

/*
 * One answer slot as io.lockd.Console's BudgetAnswer. inputs maps each bound input to the name of
 * its placeholder: the key of the cache. A value the human typed is no part of the key and never
 * reaches the budget store, so it cannot appear here. Below security level 3 (clear is false) a
 * stored outcome reads "answered": the cached bit is a clear result, which ARCHITECTURE.md gives
 * the console only at level 3, like Results.
 */
static json_t *answer_to_json(const BudgetAnswer *a, bool clear) {
        const char *outcome = budget_outcome_name(a->entry.outcome);

        _cleanup_(json_decrefp) json_t *inputs = json_object();

        if (!inputs)
                return NULL;
        for (size_t i = 0; i < a->key.n_pairs; i++)
                if (json_object_set_new(inputs, a->key.pairs[i].input,
                                        json_string(a->key.pairs[i].placeholder)) < 0)
                        return NULL;
        return json_pack(
                "{s:s, s:s, s:O, s:s, s:I, s:I}", "plugin", a->key.plugin, "version",
                a->key.version, "inputs", inputs, "outcome",
                clear || a->entry.outcome == BUDGET_OUTCOME_RESERVED ? outcome : "answered",
                "time_usec", (json_int_t)a->entry.time_usec, "in_flight", (json_int_t)a->in_flight);
}

/* One content's budget as io.lockd.Console's Budget, its answers from budget_show(). */
static int budget_to_json(BudgetStore *s, const uint8_t digest[BUDGET_DIGEST_SIZE],
                          const HandleRef *refs, size_t n_refs, bool clear, json_t **ret) {
        _cleanup_(json_decrefp) json_t *answers = json_array(), *handles = NULL, *o = NULL;
        _cleanup_free_ BudgetAnswer *list = NULL;
        char hex[DIGEST_HEX + 1];
        size_t n = 0;
        int r;

        if (!answers)
                return -ENOMEM;
        r = budget_show(s, digest, &list, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                json_t *a = answer_to_json(&list[i], clear);

                if (!a || json_array_append_new(answers, a) < 0)
                        return -ENOMEM;
        }
        handles = handles_of(refs, n_refs, digest);
        if (!handles)
                return -ENOMEM;
        digest_to_hex(digest, hex);
        o = json_pack("{s:s, s:I, s:O, s:O}", "sha256", hex, "used", (json_int_t)n, "handles",
                      handles, "answers", answers);
        if (!o)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

/*
 * Without a parameter: every content that has a budget, sorted by digest, a page at a time
 * (console-reply.h: the cursor is the last digest listed). With handle or sha256: exactly that
 * content's budget, even an empty one (used 0), so the human asking about a grant always gets its
 * row. A budget holds at most BUDGET_LIMIT_MAX answers, so one is far below a page's bytes.
 */
static int method_list_budgets(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;
        _cleanup_(json_decrefp) json_t *list = json_array();
        _cleanup_free_ BudgetSummary *all = NULL;
        _cleanup_free_ HandleRef *refs = NULL;
        _cleanup_(list_page_done) ListPage page = {};
        BudgetTarget t = {};
        size_t n = 0, n_refs = 0;
        bool one = false, clear = m->policy->security_level >= 3;
        int r;

        if (!list || list_page_init(&page, params) < 0)
                return -ENOMEM;
        if (!m->budget)
                return reply_unavailable(call, "the budget store is not open");
        r = parse_target(call, m, params, false, &t, &one);
        if (r != 0)
                return r < 0 ? r : 0;
        r = handle_refs(m->handles, &refs, &n_refs);
        if (r < 0)
                return r;
        if (one) {
                json_t *b = NULL;

                r = budget_to_json(m->budget, t.digest, refs, n_refs, clear, &b);
                if (r < 0)
                        return r;
                if (json_array_append_new(list, b) < 0)
                        return -ENOMEM;
        } else {
                r = budget_list(m->budget, &all, &n);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < n; i++) {
                        char key[DIGEST_HEX + 1];
                        json_t *b = NULL;

                        digest_to_hex(all[i].digest, key);
                        if (!list_page_wants(&page, key))
                                continue;
                        r = budget_to_json(m->budget, all[i].digest, refs, n_refs, clear, &b);
                        if (r < 0)
                                return r;
                        r = list_page_add(&page, b, key);
                        if (r < 0)
                                return r;
                        if (r == 0)
                                break;
                }
                return reply_ok(call, list_page_reply(&page, "budgets"));
        }
        return reply_ok(call, json_pack("{s:O, s:n}", "budgets", list, "next"));
}

/*
 * The human's reset of a content's budget. Reservations of runs in flight survive it (budget.h):
 * those runs still count against the budget and commit or release as usual; answers counts the
 * slots that were dropped.
 */
static int method_reset_budget(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;
        const struct ucred *peer = peer_cred(call);
        _cleanup_(json_decrefp) json_t *fields = NULL;
        _cleanup_free_ BudgetAnswer *list = NULL;
        size_t n = 0, in_flight = 0;
        BudgetTarget t = {};
        bool any = false;
        int r, freed;

        if (!m->budget)
                return reply_unavailable(call, "the budget store is not open");
        r = parse_target(call, m, params, true, &t, &any);
        if (r != 0)
                return r < 0 ? r : 0;
        r = budget_show(m->budget, t.digest, &list, &n);
        if (r < 0)
                return r;
        if (n == 0)
                return reply_error(call, CONSOLE_ERROR("UnknownBudget"),
                                   json_pack("{s:s}", "sha256", t.sha256));
        for (size_t i = 0; i < n; i++)
                if (list[i].in_flight > 0)
                        in_flight++;

        /*
         * No record, no reset. A reset gives agents new questions about a file, so it must never
         * happen unrecorded; and it cannot be undone once done. The record is therefore written
         * first: should the reset then fail, the log shows a reset that did not happen, which
         * overstates what agents could learn and never hides it.
         */
        fields = json_pack("{s:s?, s:s, s:I, s:I}", "handle", t.handle, "handle_sha256", t.sha256,
                           "answers", (json_int_t)(n - in_flight), "in_flight",
                           (json_int_t)in_flight);
        if (fields && peer &&
            (json_object_set_new(fields, "peer_uid", json_integer(peer->uid)) < 0 ||
             json_object_set_new(fields, "peer_pid", json_integer(peer->pid)) < 0))
                return -ENOMEM;
        r = fields ? audit_append(m->audit, AUDIT_BUDGET_RESET, fields) : -ENOMEM;
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                log_error_errno(r, LOCKD_MESSAGE_AUDIT_BUDGET_RESET,
                                "budget reset of %s refused: its audit record could not be "
                                "written: %m",
                                t.sha256);
                return reply_audit_unavailable(call, CONSOLE_ERROR("Unavailable"), r);
        }

        freed = budget_reset(m->budget, t.digest);
        if (freed < 0) {
                log_error_errno(freed, LOCKD_MESSAGE_AUDIT_BUDGET_RESET,
                                "budget reset of %s failed after its audit record was written; "
                                "the budget is unchanged: %m",
                                t.sha256);
                return reply_unavailable(call, "the budget store cannot be written");
        }
        /* The answers bound to values go with the slots that charged them. */
        (void)answers_reset(m->answers, t.digest);
        /* The reset stands in the log (its record, then a reservation per slot a run keeps), and
         * a replay honours it; the checkpoint now only shows it on disk at once (the snapshot
         * without it), and is the human's rare call, off every answer's path. */
        r = commit_checkpoint(m->commit);
        if (r < 0)
                log_error_errno(r, NULL,
                                "budget reset of %s: the checkpoint failed (the audit log holds "
                                "the reset): %m",
                                t.sha256);

        log_struct(LOG_NOTICE, LOCKD_MESSAGE_BUDGET_RESET,
                   LOG_FIELDS(LOG_FIELD("HANDLE_SHA256", t.sha256), LOG_FIELD("HANDLE", t.handle),
                              LOG_FIELD_U64("ANSWERS", (unsigned)freed),
                              LOG_FIELD_U64("IN_FLIGHT", in_flight),
                              LOG_FIELD_U64("PEER_UID", peer ? peer->uid : (uid_t)-1)),
                   "budget of %s reset: %d answer(s) dropped, %zu kept for runs in flight",
                   t.sha256, freed, in_flight);
        return reply_ok(call, json_pack("{s:i}", "answers", freed));
}

/* Longer than any valid id or digest, so a malformed one gets the method's own answer
 * (UnknownHandle, InvalidRequest) rather than a generic InvalidParameter. */
static const VarlinkParam params_target[] = {
        {"handle", VARLINK_STRING, false, 1, 128},
        {"sha256", VARLINK_STRING, false, 1, 128},
        {NULL},
};
static const VarlinkParam params_list[] = {
        {"handle", VARLINK_STRING, false, 1, 128},
        {"sha256", VARLINK_STRING, false, 1, 128},
        LIST_PAGE_PARAMS,
        {NULL},
};

const VarlinkMethod console_budget_methods[] = {
        {"ListBudgets", method_list_budgets, params_list, 0},
        {"ResetBudget", method_reset_budget, params_target, 0},
        {NULL},
};
