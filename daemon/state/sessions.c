/* Input sessions: typed placeholder values per console login session, in secure memory. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-login.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "fd-util.h"
#include "macro.h"
#include "seal.h"
#include "sessions.h"

/* How late the expiry timer may fire. */
#define EXPIRY_ACCURACY_USEC (500ULL * 1000)
#define AUDIT_SESSION_NONE   4294967295ULL

_Static_assert(SESSION_NAME_MAX == SEAL_NAME_MAX, "one rule for placeholder names");

typedef struct SessionValue {
        char name[SESSION_NAME_MAX + 1];
        SecBuf *value;
        uint64_t stored_usec;
} SessionValue;

typedef struct Session {
        SessionId id;
        uint64_t started_usec, used_usec;
        SessionValue values[SESSION_VALUES_MAX];
        size_t n_values;
} Session;

struct Sessions {
        Session *items[SESSIONS_MAX];
        size_t n;
        uint64_t idle_usec, absolute_usec;
        sd_event *event;
        sd_event_source *timer;
        sd_login_monitor *monitor;
        sd_event_source *monitor_source;
        SessionEndedFn on_ended;
        void *userdata;
};

static const char *const end_names[_SESSION_END_MAX] = {
        [SESSION_END_REQUESTED] = "requested", [SESSION_END_IDLE] = "idle",
        [SESSION_END_ABSOLUTE] = "absolute",   [SESSION_END_LOGOUT] = "logout",
        [SESSION_END_EVICTED] = "evicted",     [SESSION_END_STOP] = "stop",
};

const char *session_end_name(SessionEnd e) {
        if ((int)e < 0 || e >= _SESSION_END_MAX)
                return NULL;
        return end_names[e];
}

uint64_t sessions_now_usec(void) {
        return clock_now_usec(CLOCK_BOOTTIME);
}

/* The audit session id of pid, or AUDIT_SESSION_NONE. */
static uint64_t audit_session(pid_t pid) {
        char path[64], buf[32];
        _cleanup_close_ int fd = -1;
        ssize_t l;
        char *end;
        unsigned long long v;

        snprintf(path, sizeof(path), "/proc/%d/sessionid", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return AUDIT_SESSION_NONE;
        l = read(fd, buf, sizeof(buf) - 1);
        if (l <= 0)
                return AUDIT_SESSION_NONE;
        buf[l] = 0;
        errno = 0;
        v = strtoull(buf, &end, 10);
        if (errno != 0 || end == buf || (*end != 0 && *end != '\n'))
                return AUDIT_SESSION_NONE;
        return v;
}

void session_id_of_peer(pid_t pid, uid_t uid, SessionId *ret) {
        _cleanup_free_ char *logind = NULL;
        uint64_t audit;

        *ret = (SessionId){.uid = uid};
        /* The pid is the peer's at accept and the peer is still connected, so it is still this
         * process: a console cannot pick another's session by passing its socket on, since only
         * the uid's own processes can reach the console socket and the uid is part of the key. */
        if (pid > 0 && sd_pid_get_session(pid, &logind) >= 0 && logind &&
            strlen(logind) < sizeof(ret->name) - 8) {
                snprintf(ret->name, sizeof(ret->name), "logind:%s", logind);
                return;
        }
        audit = pid > 0 ? audit_session(pid) : AUDIT_SESSION_NONE;
        if (audit != AUDIT_SESSION_NONE) {
                snprintf(ret->name, sizeof(ret->name), "audit:%llu", (unsigned long long)audit);
                return;
        }
        snprintf(ret->name, sizeof(ret->name), "uid");
}

static ssize_t find(const Sessions *ss, const SessionId *id) {
        for (size_t i = 0; i < ss->n; i++)
                if (ss->items[i]->id.uid == id->uid && strcmp(ss->items[i]->id.name, id->name) == 0)
                        return (ssize_t)i;
        return -1;
}

/* Wipes and frees the session at i, then announces why. */
static void end_at(Sessions *ss, size_t i, SessionEnd why) {
        Session *s = ss->items[i];
        SessionId id = s->id;
        size_t n = s->n_values;

        for (size_t k = 0; k < s->n_values; k++)
                secbuf_free(s->values[k].value);
        explicit_bzero(s, sizeof(*s));
        free(s);
        memmove(ss->items + i, ss->items + i + 1, (ss->n - i - 1) * sizeof(*ss->items));
        ss->n--;
        if (ss->on_ended)
                ss->on_ended(&id, why, n, ss->userdata);
}

/* Arms the timer for the earliest deadline of any session. */
static void rearm(Sessions *ss) {
        uint64_t next = UINT64_MAX;

        if (!ss->timer)
                return;
        for (size_t i = 0; i < ss->n; i++) {
                const Session *s = ss->items[i];

                if (s->used_usec + ss->idle_usec < next)
                        next = s->used_usec + ss->idle_usec;
                if (s->started_usec + ss->absolute_usec < next)
                        next = s->started_usec + ss->absolute_usec;
        }
        if (next == UINT64_MAX) {
                (void)sd_event_source_set_enabled(ss->timer, SD_EVENT_OFF);
                return;
        }
        (void)sd_event_source_set_time(ss->timer, next);
        (void)sd_event_source_set_enabled(ss->timer, SD_EVENT_ONESHOT);
}

size_t sessions_expire(Sessions *ss, uint64_t now_usec) {
        size_t n = 0;

        for (size_t i = 0; i < ss->n;) {
                const Session *s = ss->items[i];

                if (now_usec >= s->started_usec + ss->absolute_usec)
                        end_at(ss, i, SESSION_END_ABSOLUTE);
                else if (now_usec >= s->used_usec + ss->idle_usec)
                        end_at(ss, i, SESSION_END_IDLE);
                else {
                        i++;
                        continue;
                }
                n++;
        }
        rearm(ss);
        return n;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Sessions *ss = userdata;

        (void)sessions_expire(ss, sessions_now_usec());
        return 0;
}

/* logind changed: every session keyed by a logind session that is gone or closing ends. */
static int on_login_change(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Sessions *ss = userdata;

        (void)sd_login_monitor_flush(ss->monitor);
        for (size_t i = 0; i < ss->n;) {
                const char *name = ss->items[i]->id.name;
                _cleanup_free_ char *state = NULL;

                if (strncmp(name, "logind:", 7) == 0 &&
                    (sd_session_get_state(name + 7, &state) < 0 || !state ||
                     strcmp(state, "closing") == 0)) {
                        end_at(ss, i, SESSION_END_LOGOUT);
                        continue;
                }
                i++;
        }
        rearm(ss);
        return 0;
}

int sessions_new(sd_event *e, uint64_t idle_usec, uint64_t absolute_usec, SessionEndedFn on_ended,
                 void *userdata, Sessions **ret) {
        _cleanup_(sessions_freep) Sessions *ss = NULL;
        int r;

        if (idle_usec == 0 || absolute_usec == 0)
                return -EINVAL;
        ss = calloc(1, sizeof(*ss));
        if (!ss)
                return -ENOMEM;
        ss->idle_usec = idle_usec;
        ss->absolute_usec = absolute_usec;
        if (e) {
                ss->event = sd_event_ref(e);
                r = sd_event_add_time(e, &ss->timer, CLOCK_BOOTTIME, UINT64_MAX,
                                      EXPIRY_ACCURACY_USEC, on_timer, ss);
                if (r < 0)
                        return r;
                (void)sd_event_source_set_enabled(ss->timer, SD_EVENT_OFF);
                /* Without logind (no /run/systemd/sessions) there is nothing to watch: sessions
                 * are then keyed by audit session or uid and end by timeout or request only. */
                if (sd_login_monitor_new("session", &ss->monitor) >= 0) {
                        r = sd_event_add_io(e, &ss->monitor_source,
                                            sd_login_monitor_get_fd(ss->monitor),
                                            (uint32_t)sd_login_monitor_get_events(ss->monitor),
                                            on_login_change, ss);
                        if (r < 0)
                                return r;
                }
        }
        /* Set last, so the cleanup of a failed start announces nothing. */
        ss->on_ended = on_ended;
        ss->userdata = userdata;
        *ret = TAKE_PTR(ss);
        return 0;
}

Sessions *sessions_free(Sessions *ss) {
        if (!ss)
                return NULL;
        while (ss->n > 0)
                end_at(ss, ss->n - 1, SESSION_END_STOP);
        sd_event_source_disable_unref(ss->timer);
        sd_event_source_disable_unref(ss->monitor_source);
        sd_login_monitor_unref(ss->monitor);
        sd_event_unref(ss->event);
        free(ss);
        return NULL;
}

void sessions_set_timeouts(Sessions *ss, uint64_t idle_usec, uint64_t absolute_usec) {
        if (idle_usec == 0 || absolute_usec == 0)
                return;
        ss->idle_usec = idle_usec;
        ss->absolute_usec = absolute_usec;
        (void)sessions_expire(ss, sessions_now_usec());
}

/* The live session of id (expired ones are wiped first), or NULL. */
static Session *lookup(Sessions *ss, const SessionId *id) {
        ssize_t i;

        (void)sessions_expire(ss, sessions_now_usec());
        i = find(ss, id);
        return i < 0 ? NULL : ss->items[i];
}

const SecBuf *sessions_get(Sessions *ss, const SessionId *id, const char *name, bool touch) {
        Session *s = lookup(ss, id);

        if (!s || !name)
                return NULL;
        for (size_t k = 0; k < s->n_values; k++)
                if (strcmp(s->values[k].name, name) == 0) {
                        if (touch) {
                                s->used_usec = sessions_now_usec();
                                rearm(ss);
                        }
                        return s->values[k].value;
                }
        return NULL;
}

int sessions_put(Sessions *ss, const SessionId *id, const char *name, SecBuf *value) {
        _cleanup_secbuf_ SecBuf *v = value;
        uint64_t now = sessions_now_usec();
        Session *s;
        bool started = false;

        if (!seal_name_valid(name) || !v)
                return -EINVAL;
        s = lookup(ss, id);
        if (!s) {
                if (ss->n == SESSIONS_MAX) {
                        /* Room for the human at the console now: the idlest session goes. */
                        size_t idlest = 0;

                        for (size_t i = 1; i < ss->n; i++)
                                if (ss->items[i]->used_usec < ss->items[idlest]->used_usec)
                                        idlest = i;
                        end_at(ss, idlest, SESSION_END_EVICTED);
                }
                s = calloc(1, sizeof(*s));
                if (!s)
                        return -ENOMEM;
                s->id = *id;
                s->started_usec = now;
                ss->items[ss->n++] = s;
                started = true;
        }
        s->used_usec = now;
        for (size_t k = 0; k < s->n_values; k++)
                if (strcmp(s->values[k].name, name) == 0) {
                        secbuf_free(s->values[k].value);
                        s->values[k].value = TAKE_PTR(v);
                        s->values[k].stored_usec = now;
                        rearm(ss);
                        return 0;
                }
        if (s->n_values == SESSION_VALUES_MAX) {
                secbuf_free(s->values[0].value);
                memmove(s->values, s->values + 1, (s->n_values - 1) * sizeof(*s->values));
                s->n_values--;
        }
        snprintf(s->values[s->n_values].name, sizeof(s->values[0].name), "%s", name);
        s->values[s->n_values].value = TAKE_PTR(v);
        s->values[s->n_values].stored_usec = now;
        s->n_values++;
        rearm(ss);
        return started ? 1 : 0;
}

size_t sessions_end(Sessions *ss, const SessionId *id, SessionEnd why) {
        ssize_t i;
        size_t n;

        (void)sessions_expire(ss, sessions_now_usec());
        i = find(ss, id);
        if (i < 0)
                return 0;
        n = ss->items[i]->n_values;
        end_at(ss, (size_t)i, why);
        rearm(ss);
        return n;
}

size_t sessions_n(const Sessions *ss) {
        return ss->n;
}
