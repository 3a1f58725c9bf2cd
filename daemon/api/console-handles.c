/* The Varlink handlers for handles: the console's Grant, Revoke and ListHandles, the agent's
 * ListHandles, and the audit records of grants, revocations and expiries. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "console-files.h"
#include "console-reply.h"
#include "audit.h"
#include "budget.h"
#include "console-handles.h"
#include "log-ids.h"
#include "log.h"
#include "macro.h"
#include "engine.h"
#include "policy.h"
#include "roles.h"

/* The largest fd index a call may name. */
#define FD_INDEX_MAX (VARLINK_FDS_PER_MESSAGE - 1)
/* A user name or a uid number, as the console names the agent. */
#define AGENT_NAME_MAX 64
/* The longest ttl: a year. A grant for longer is a grant without expiry, and says so. */
#define TTL_SEC_MAX      (366LL * 24 * 3600)
#define NSS_BUFFER_START ((size_t)16 * 1024)
#define NSS_BUFFER_MAX   ((size_t)1024 * 1024)

/* The uid of the call's peer; -1 once the peer is gone. */
static long peer_uid(VarlinkCall *call) {
        VarlinkConn *c = varlink_call_conn(call);
        const struct ucred *cred = c ? varlink_conn_peer(c) : NULL;

        return cred ? (long)cred->uid : -1;
}

/*
 * Resolves the agent the console named: a decimal uid or a user name (getpwnam_r). A uid with a
 * passwd entry gets its primary gid from there; one without gets (gid_t)-1, so only its uid can
 * make it an agent. 0 with *ret_uid and *ret_gid, -ENOENT for an unknown name or a malformed
 * number, another negative errno when NSS failed.
 */
static int resolve_agent(const char *s, uid_t *ret_uid, gid_t *ret_gid) {
        _cleanup_free_ char *buf = NULL;
        size_t len = NSS_BUFFER_START;
        bool numeric = s[0] != 0 && strspn(s, "0123456789") == strlen(s);
        uid_t uid = 0;

        if (numeric) {
                unsigned long long v;
                char *end;

                errno = 0;
                v = strtoull(s, &end, 10);
                /* (uid_t)-1 means "no uid" to the kernel; a leading zero is a typo or a trick. */
                if (errno != 0 || *end != 0 || v >= (uid_t)-1 || (s[0] == '0' && s[1] != 0))
                        return -ENOENT;
                uid = (uid_t)v;
        }
        for (;;) {
                struct passwd pw, *res = NULL;
                int r;

                free(buf);
                buf = malloc(len);
                if (!buf)
                        return -ENOMEM;
                r = numeric ? getpwuid_r(uid, &pw, buf, len, &res)
                            : getpwnam_r(s, &pw, buf, len, &res);
                if (r == ERANGE && len < NSS_BUFFER_MAX) {
                        len *= 2;
                        continue;
                }
                if (r != 0 && r != ENOENT)
                        return -r;
                if (!res) {
                        if (!numeric)
                                return -ENOENT;
                        *ret_uid = uid;
                        *ret_gid = (gid_t)-1;
                        return 0;
                }
                *ret_uid = pw.pw_uid;
                *ret_gid = pw.pw_gid;
                return 0;
        }
}

/* The audit fields every handle record carries; never the path (lockd never knows it) nor a
 * byte of the content, only its digest. */
static json_t *handle_audit_fields(const Handle *h, long peer) {
        json_t *o = json_pack("{s:s, s:I, s:s, s:s?, s:I, s:b}", "handle", h->id, "agent_uid",
                              (json_int_t)h->agent, "handle_sha256", h->sha256, "label", h->label,
                              "budget", (json_int_t)h->budget, "auto", h->auto_run);

        if (!o)
                return NULL;
        if (json_object_set_new(o, "expires_usec",
                                h->expires_usec ? json_integer((json_int_t)h->expires_usec)
                                                : json_null()) < 0 ||
            (peer >= 0 && json_object_set_new(o, "peer_uid", json_integer(peer)) < 0)) {
                json_decref(o);
                return NULL;
        }
        return o;
}

void console_handle_expired(const Handle *h, void *userdata) {
        Manager *m = userdata;
        _cleanup_(json_decrefp) json_t *f = handle_audit_fields(h, -1);
        int r = f ? 0 : -ENOMEM;

        if (r == 0)
                r = audit_append(m->audit, AUDIT_EXPIRE, f);
        if (r < 0)
                log_error_errno(r, LOCKD_MESSAGE_AUDIT_EXPIRE,
                                "handle %s expired; its audit record could not be written: %m",
                                h->id);
}

static int reply_not_an_agent(VarlinkCall *call, const char *agent) {
        return reply_error(call, CONSOLE_ERROR("NotAnAgent"), json_pack("{s:s}", "agent", agent));
}

/* The answer to a grant handles_grant() refused (r < 0): each cause told as the interface names
 * it; -ENOMEM is returned as it is. */
static int reply_grant_refused(VarlinkCall *call, int r) {
        if (r == -EFBIG)
                return reply_invalid_request(call,
                                             "the file is larger than limits.max_handle_bytes");
        if (r == -EMFILE || r == -EUSERS)
                return reply_error(call, CONSOLE_ERROR("TooManyHandles"),
                                   json_pack("{s:I}", "limit",
                                             (json_int_t)(r == -EMFILE ? HANDLES_MAX
                                                                       : HANDLES_PER_AGENT_MAX)));
        if (r == -EINVAL)
                return reply_invalid_request(call,
                                             "file_fd is not a regular file open for reading");
        if (r == -ENOBUFS)
                return reply_error(call, CONSOLE_ERROR("Unavailable"),
                                   json_pack("{s:s}", "reason",
                                             "the handle store is full "
                                             "(limits.handle_store_bytes): revoke handles first"));
        if (r == -ENOMEM)
                return r;
        /* The file, or the store: a full disk (ENOSPC, EDQUOT) is named as such. */
        log_error_errno(r, NULL, "grant refused: %m");
        return reply_error(call, CONSOLE_ERROR("Unavailable"),
                           json_pack("{s:s}", "reason",
                                     r == -ENOSPC || r == -EDQUOT
                                             ? "the state directory is full: the handle cannot be "
                                               "stored"
                                             : "the file could not be read, or the handle not "
                                               "stored in the state directory"));
}

static int method_grant_files(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;
        const char *agent = json_string_value(json_object_get(params, "agent"));
        const char *label = json_string_value(json_object_get(params, "label"));
        json_t *jbudget = json_object_get(params, "budget"),
               *jttl = json_object_get(params, "ttl_sec");
        _cleanup_(json_decrefp) json_t *fields = NULL, *reply = NULL;
        _cleanup_close_ int fd = -1;
        const Handle *h = NULL;
        uint32_t budget = m->policy->limits.max_plugins_per_handle;
        uint64_t expires = 0;
        uid_t uid = 0;
        gid_t gid = (gid_t)-1;
        int r;

        fd = varlink_call_take_fd(call, json_integer_value(json_object_get(params, "file_fd")));
        if (fd < 0)
                return reply_invalid_request(call, "file_fd names no file descriptor of the call");

        r = resolve_agent(agent, &uid, &gid);
        if (r == -ENOMEM)
                return r;
        /*
         * Only a uid the policy makes an agent may hold a handle: granting to a console or to
         * nobody in particular would hand the file's bits to whoever runs as that uid, outside
         * every guard lockd puts on agents. A name NSS does not know is no agent either.
         */
        if (r < 0 || roles_classify(m->roles, uid, gid) != ROLE_AGENT)
                return reply_not_an_agent(call, agent);

        if (label && !handle_label_valid(label, strlen(label)))
                return reply_invalid_request(
                        call, "label must be 1 to 64 bytes of printable UTF-8 with no control or "
                              "bidirectional characters");
        if (json_is_integer(jbudget)) {
                json_int_t b = json_integer_value(jbudget);

                if (b < 1 || b > (json_int_t)m->policy->limits.max_plugins_per_handle)
                        return reply_invalid_request(call,
                                                     "budget must be between 1 and the policy's "
                                                     "limits.max_plugins_per_handle");
                budget = (uint32_t)b;
        }
        if (json_is_integer(jttl))
                expires = handles_now_usec() + (uint64_t)json_integer_value(jttl) * 1000000ULL;

        r = handles_grant(m->handles,
                          &(HandleSpec){.fd = fd,
                                        .max_bytes = m->policy->limits.max_handle_bytes,
                                        .label = label,
                                        .agent = uid,
                                        .expires_usec = expires,
                                        .budget = budget,
                                        .auto_run = json_is_true(json_object_get(params, "auto"))},
                          &h);
        if (r < 0)
                return reply_grant_refused(call, r);

        /* No record, no grant: an agent never holds a handle the audit log does not show. */
        fields = handle_audit_fields(h, peer_uid(call));
        r = fields ? audit_append(m->audit, AUDIT_GRANT, fields) : -ENOMEM;
        if (r < 0) {
                log_error_errno(r, LOCKD_MESSAGE_AUDIT_GRANT,
                                "grant refused: its audit record could not be written: %m");
                (void)handles_revoke(m->handles, h->id);
                return reply_audit_unavailable(call, CONSOLE_ERROR("Unavailable"), r);
        }

        reply = json_pack("{s:s, s:s, s:I}", "handle", h->id, "sha256", h->sha256, "bytes",
                          (json_int_t)h->bytes);
        if (reply && h->expires_usec &&
            json_object_set_new(reply, "expires_usec", json_integer((json_int_t)h->expires_usec)) <
                    0)
                return -ENOMEM;
        return reply_ok(call, TAKE_PTR(reply));
}

/* The file is copied off the loop first (console-files.h): a hung file never stops lockd. */
static int method_grant(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;

        return console_read_files_then(call, params, m, m->policy->limits.max_handle_bytes,
                                       "the file is larger than limits.max_handle_bytes",
                                       method_grant_files);
}

static int method_revoke(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;
        const char *id = json_string_value(json_object_get(params, "handle"));
        _cleanup_(json_decrefp) json_t *fields = NULL;
        const Handle *h;
        int r;

        h = handles_get(m->handles, id);
        if (!h)
                return reply_error(call, CONSOLE_ERROR("UnknownHandle"),
                                   json_pack("{s:s}", "handle", id));
        fields = handle_audit_fields(h, peer_uid(call));
        if (!fields)
                return -ENOMEM;
        /*
         * The record first: no change is answered without it. A revocation whose record cannot
         * be written is refused, and says why (a full state directory): the human frees space
         * and revokes again. Until then the handle stays as granted, and the log says so loudly.
         */
        r = audit_append(m->audit, AUDIT_REVOKE, fields);
        if (r < 0) {
                log_error_errno(r, LOCKD_MESSAGE_AUDIT_REVOKE,
                                "revoke of handle %s refused: its audit record could not be "
                                "written: %m",
                                id);
                return reply_audit_unavailable(call, CONSOLE_ERROR("Unavailable"), r);
        }
        r = handles_revoke(m->handles, id);
        if (r < 0 && r != -ENOENT)
                log_error_errno(r, NULL,
                                "handle %s revoked, but its files could not be removed from the "
                                "state directory: it would come back at the next start: %m",
                                id);
        return varlink_call_reply(call, NULL, false);
}

static int handle_by_id(const void *a, const void *b) {
        return strcmp((*(const Handle *const *)a)->id, (*(const Handle *const *)b)->id);
}

/* The live handles sorted by id, a page at a time (console-reply.h: the cursor is the last id). */
static int method_list_handles(VarlinkCall *call, json_t *params, void *userdata) {
        Manager *m = userdata;
        _cleanup_(list_page_done) ListPage page = {};
        _cleanup_free_ const Handle **all = NULL;
        size_t n = handles_n(m->handles);
        int r;

        if (list_page_init(&page, params) < 0)
                return -ENOMEM;
        all = calloc(n ?: 1, sizeof(*all));
        if (!all)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                all[i] = handles_at(m->handles, i);
        qsort(all, n, sizeof(*all), handle_by_id);
        for (size_t i = 0; i < n; i++) {
                const Handle *h = all[i];
                json_t *o;

                if (!list_page_wants(&page, h->id))
                        continue;
                o = json_pack("{s:s, s:I, s:s?, s:I, s:I, s:s, s:b}", "handle", h->id, "agent_uid",
                              (json_int_t)h->agent, "label", h->label, "budget",
                              (json_int_t)h->budget, "bytes", (json_int_t)h->bytes, "sha256",
                              h->sha256, "auto", h->auto_run);
                if (o && h->expires_usec &&
                    json_object_set_new(o, "expires_usec",
                                        json_integer((json_int_t)h->expires_usec)) < 0) {
                        json_decref(o);
                        o = NULL;
                }
                r = list_page_add(&page, o, h->id);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
        }
        return reply_ok(call, list_page_reply(&page, "handles"));
}

int console_handle_list_append(json_t *list, json_t *o, const Handle *h) {
        if (!o || json_array_append_new(list, o) < 0)
                return -ENOMEM;
        if (h->expires_usec &&
            json_object_set_new(o, "expires_usec", json_integer((json_int_t)h->expires_usec)) < 0)
                return -ENOMEM;
        return 0;
}

static const VarlinkParam params_list[] = {LIST_PAGE_PARAMS, {NULL}};

static const VarlinkParam params_grant[] = {
        {"file_fd", VARLINK_INT, true, 0, FD_INDEX_MAX},
        {"agent", VARLINK_STRING, true, 1, AGENT_NAME_MAX},
        {"label", VARLINK_STRING, false, 1, HANDLE_LABEL_MAX},
        {"budget", VARLINK_INT, false, 1, 1 << 20}, /* the handler applies the policy */
        {"ttl_sec", VARLINK_INT, false, 1, TTL_SEC_MAX},
        {"auto", VARLINK_BOOL, false, 0, 0},
        {NULL},
};

static const VarlinkParam params_revoke[] = {
        /* Longer than any id, so a malformed one is an UnknownHandle like any other. */
        {"handle", VARLINK_STRING, true, 1, 128},
        {NULL},
};

const VarlinkMethod console_handle_methods[] = {
        {"Grant", method_grant, params_grant, VARLINK_METHOD_ACCEPTS_FDS},
        {"Revoke", method_revoke, params_revoke, 0},
        {"ListHandles", method_list_handles, params_list, 0},
        {NULL},
};
