/* Answers of the Varlink handlers of lockd: the few shapes every method file uses. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "varlink.h"

#define CONSOLE_ERROR(name) "io.lockd.Console." name
#define AGENT_ERROR(name)   "io.lockd.Agent." name

/* Answers with params (taken; NULL, from a failed json_pack(), is -ENOMEM), continuing or not. */
int reply_more(VarlinkCall *call, json_t *params, bool continues);
static inline int reply_ok(VarlinkCall *call, json_t *params) {
        return reply_more(call, params, false);
}

/* Answers with the error and params (taken; NULL is -ENOMEM). */
int reply_error(VarlinkCall *call, const char *error, json_t *params);

/* io.lockd.Console.InvalidRequest and .Unavailable with their reason (a static sentence). */
int reply_invalid_request(VarlinkCall *call, const char *reason);
int reply_unavailable(VarlinkCall *call, const char *reason);

/*
 * Refuses a change whose audit record could not be written (error r from audit_append()) with
 * iface_error's Unavailable, naming the cause: a full state directory (ENOSPC, EDQUOT) as such,
 * anything else as the errno's text. No change is ever answered without its record.
 */
int reply_audit_unavailable(VarlinkCall *call, const char *iface_error, int r);

/*
 * Every console listing answers a page at a time (ARCHITECTURE.md, Listings): at most limit items
 * (LIST_PAGE_DEFAULT unless the call says, at most LIST_PAGE_MAX) and, past the first item, never
 * more than LIST_PAGE_BYTES of them, so that no answer comes near the connection's output cap
 * however much lockd holds. The call's "cursor" is the key of the last item of the page before;
 * the answer's "next" the key to pass for the following page, null after the last.
 */
#define LIST_PAGE_DEFAULT 64
#define LIST_PAGE_MAX     256
#define LIST_PAGE_BYTES   ((size_t)512 * 1024)
#define LIST_CURSOR_MAX   256 /* bytes of a cursor: longer than any key */

typedef struct ListPage {
        json_t *items;
        size_t limit, bytes;
        const char *after; /* the call's cursor: only keys after it (strcmp) are listed; borrowed */
        char *last;        /* the key of the last item taken */
        bool more;         /* an item was left out: the page is full */
} ListPage;

/* Starts a page for a call's params ("cursor", "limit"). 0 or -ENOMEM. */
int list_page_init(ListPage *p, json_t *params);
void list_page_done(ListPage *p);
/* Whether an item with key belongs on the page (after the cursor); items come in key order. */
bool list_page_wants(const ListPage *p, const char *key);
/* Adds item (taken) with key: 1 added, 0 the page is full (the item dropped, more set), or
 * -ENOMEM. */
int list_page_add(ListPage *p, json_t *item, const char *key);
/* {name: items, "next": cursor or null}, NULL on out of memory. */
json_t *list_page_reply(ListPage *p, const char *name);
/* The params table entries of a paged listing. */
#define LIST_PAGE_PARAMS                                                                           \
        {"cursor", VARLINK_STRING, false, 1, LIST_CURSOR_MAX}, {                                   \
                "limit", VARLINK_INT, false, 1, LIST_PAGE_MAX                                      \
        }

/* The caller's credentials as the kernel gave them at accept; NULL once the peer is gone. */
const struct ucred *peer_cred(VarlinkCall *call);
