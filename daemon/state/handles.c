/* Handles: granted files as sealed memfd snapshots with their SHA-256, kept in the engine's memory
 * and removed when revoked or expired. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "fd-util.h"
#include "handle-store.h"
#include "handles.h"
#include "codec.h"
#include "macro.h"

/* How late the expiry timer may fire: a handle lives at most this long past its expiry on the
 * timer alone; every lookup removes it on time. */
#define EXPIRY_ACCURACY_USEC (100ULL * 1000)
#define ID_TRIES             8

struct Handles {
        Handle **items; /* grant order */
        size_t n;
        sd_event *event;
        sd_event_source *timer;
        HandleExpiredFn on_expired;
        void *userdata;
        uint64_t next_expiry; /* the earliest expiry of any handle; 0: none expires */
        HandleStore *store;   /* borrowed; NULL: memory only */
};

uint64_t handles_now_usec(void) {
        return clock_now_usec(CLOCK_REALTIME);
}

static Handle *handle_free(Handle *h) {
        if (!h)
                return NULL;
        safe_close(h->memfd);
        free(h->label);
        free(h);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(Handle *, handle_free)

/* Code points that would change how a label looks on the console, or hide what it says. */
static bool codepoint_refused(uint32_t cp) {
        return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x061c || cp == 0x200e ||
               cp == 0x200f || cp == 0x2028 || cp == 0x2029 || (cp >= 0x202a && cp <= 0x202e) ||
               (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfeff;
}

bool handle_label_valid(const char *s, size_t len) {
        if (!s || len == 0 || len > HANDLE_LABEL_MAX)
                return false;
        for (size_t i = 0; i < len;) {
                uint32_t cp;
                int n = utf8_decode(s + i, len - i, &cp);

                if (n < 0 || codepoint_refused(cp))
                        return false;
                i += (size_t)n;
        }
        return true;
}

bool handle_id_valid(const char *s) {
        if (!s || strlen(s) != HANDLE_ID_LEN || strncmp(s, HANDLE_ID_PREFIX, 2) != 0)
                return false;
        for (size_t i = 2; i < HANDLE_ID_LEN; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

/* Finds the handle with id, expired or not: its index, or -1. */
static ssize_t find(const Handles *hs, const char *id) {
        if (!id)
                return -1;
        for (size_t i = 0; i < hs->n; i++)
                if (strcmp(hs->items[i]->id, id) == 0)
                        return (ssize_t)i;
        return -1;
}

/* Removes item i from memory and from the store: 0, or the store's errno (the handle is gone
 * from memory all the same; its files would come back at the next start). */
static int remove_at(Handles *hs, size_t i) {
        int r = 0;

        if (hs->store)
                r = handle_store_remove(hs->store, hs->items[i]->id, hs->items[i]->bytes);
        handle_free(hs->items[i]);
        memmove(hs->items + i, hs->items + i + 1, (hs->n - i - 1) * sizeof(*hs->items));
        hs->n--;
        return r;
}

/* Arms the timer for the earliest expiry, or turns it off when nothing expires. */
static void rearm(Handles *hs) {
        uint64_t next = 0;

        for (size_t i = 0; i < hs->n; i++)
                if (hs->items[i]->deadline_usec != 0 &&
                    (next == 0 || hs->items[i]->deadline_usec < next))
                        next = hs->items[i]->deadline_usec;
        hs->next_expiry = next;
        if (!hs->timer)
                return;
        if (next == 0) {
                (void)sd_event_source_set_enabled(hs->timer, SD_EVENT_OFF);
                return;
        }
        (void)sd_event_source_set_time(hs->timer, next);
        (void)sd_event_source_set_enabled(hs->timer, SD_EVENT_ONESHOT);
}

size_t handles_expire(Handles *hs, uint64_t now_usec) {
        size_t removed = 0;

        /* Every lookup comes here first: nothing to walk before the earliest expiry. */
        if (hs->next_expiry == 0 || now_usec < hs->next_expiry)
                return 0;
        for (size_t i = 0; i < hs->n;) {
                const Handle *h = hs->items[i];

                if (h->deadline_usec != 0 && h->deadline_usec <= now_usec) {
                        if (hs->on_expired)
                                hs->on_expired(h, hs->userdata);
                        (void)remove_at(hs, i); /* an expired handle is refused when read back */
                        removed++;
                } else
                        i++;
        }
        if (removed > 0)
                rearm(hs);
        return removed;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Handles *hs = userdata;

        /* The loop's time may lag the clock a little: the clock decides. */
        (void)handles_expire(hs, clock_now_usec(CLOCK_BOOTTIME));
        rearm(hs);
        return 0;
}

int handles_new(sd_event *e, HandleExpiredFn on_expired, void *userdata, Handles **ret) {
        _cleanup_(handles_freep) Handles *hs = NULL;
        int r;

        hs = calloc(1, sizeof(*hs));
        if (!hs)
                return -ENOMEM;
        hs->on_expired = on_expired;
        hs->userdata = userdata;
        hs->items = calloc(HANDLES_MAX, sizeof(*hs->items));
        if (!hs->items)
                return -ENOMEM;
        if (e) {
                hs->event = sd_event_ref(e);
                r = sd_event_add_time(e, &hs->timer, CLOCK_BOOTTIME, UINT64_MAX,
                                      EXPIRY_ACCURACY_USEC, on_timer, hs);
                if (r < 0)
                        return r;
                (void)sd_event_source_set_enabled(hs->timer, SD_EVENT_OFF);
        }
        *ret = TAKE_PTR(hs);
        return 0;
}

Handles *handles_free(Handles *hs) {
        if (!hs)
                return NULL;
        for (size_t i = 0; i < hs->n; i++)
                handle_free(hs->items[i]);
        free(hs->items);
        sd_event_source_disable_unref(hs->timer);
        sd_event_unref(hs->event);
        free(hs);
        return NULL;
}

/* A fresh id no live handle has. 128 bits from the kernel's CSPRNG: an agent cannot guess
 * another's handle, and ids never repeat in practice; the check below makes sure. */
static int new_id(const Handles *hs, char out[HANDLE_ID_LEN + 1]) {
        for (int tries = 0; tries < ID_TRIES; tries++) {
                uint8_t rnd[HANDLE_ID_RANDOM];
                size_t got = 0;

                while (got < sizeof(rnd)) {
                        ssize_t n = getrandom(rnd + got, sizeof(rnd) - got, 0);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n < 0)
                                return negative_errno();
                        got += (size_t)n;
                }
                memcpy(out, HANDLE_ID_PREFIX, 2);
                hex_encode(rnd, sizeof(rnd), out + 2);
                if (find(hs, out) < 0)
                        return 0;
        }
        return -EIO;
}

int handles_grant(Handles *hs, const HandleSpec *spec, const Handle **ret) {
        _cleanup_(handle_freep) Handle *h = NULL;
        uint64_t now = handles_now_usec();
        struct stat st;
        int flags, r;

        if (!hs || !spec || spec->fd < 0 || spec->budget == 0 || spec->max_bytes == 0)
                return -EINVAL;
        if (spec->label && !handle_label_valid(spec->label, strlen(spec->label)))
                return -EINVAL;
        if (spec->expires_usec != 0 && spec->expires_usec <= now)
                return -EINVAL;
        /* The fd comes from a peer: only a regular file open for reading is snapshotted (a FIFO
         * or a device could block or never end). */
        if (fstat(spec->fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        flags = fcntl(spec->fd, F_GETFL);
        if (flags < 0)
                return negative_errno();
        if ((flags & O_ACCMODE) == O_WRONLY || (flags & O_PATH))
                return -EINVAL;

        (void)handles_expire(hs, clock_now_usec(CLOCK_BOOTTIME));
        if (hs->n >= HANDLES_MAX)
                return -EMFILE;
        if (handles_n_agent(hs, spec->agent) >= HANDLES_PER_AGENT_MAX)
                return -EUSERS;

        h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        h->memfd = -1;
        if (spec->label) {
                h->label = strdup(spec->label);
                if (!h->label)
                        return -ENOMEM;
        }
        if (lseek(spec->fd, 0, SEEK_SET) < 0)
                return negative_errno();
        /* From here on the bytes are lockd's own: a later change of the file changes nothing. */
        h->memfd = memfd_snapshot(spec->fd, "lockd-handle", spec->max_bytes, false);
        if (h->memfd < 0)
                return h->memfd;
        if (fstat(h->memfd, &st) < 0)
                return negative_errno();
        h->bytes = (uint64_t)st.st_size;
        r = sha256_fd(h->memfd, h->digest);
        if (r < 0)
                return r;
        hex_encode(h->digest, sizeof(h->digest), h->sha256);
        r = new_id(hs, h->id);
        if (r < 0)
                return r;
        h->agent = spec->agent;
        h->expires_usec = spec->expires_usec;
        h->deadline_usec = clock_boottime_deadline(spec->expires_usec);
        h->budget = spec->budget;
        h->auto_run = spec->auto_run;
        h->granted_usec = now;
        /* On disk before anyone hears of it: a grant answered is a grant a restart keeps. */
        if (hs->store) {
                r = handle_store_save(hs->store, h);
                if (r < 0)
                        return r;
        }

        hs->items[hs->n++] = h;
        rearm(hs);
        *ret = TAKE_PTR(h);
        return 0;
}

const Handle *handles_get(Handles *hs, const char *id) {
        ssize_t i;

        if (!hs || !handle_id_valid(id))
                return NULL;
        (void)handles_expire(hs, clock_now_usec(CLOCK_BOOTTIME));
        i = find(hs, id);
        return i < 0 ? NULL : hs->items[i];
}

const Handle *handles_get_for_agent(Handles *hs, const char *id, uid_t agent) {
        const Handle *h = handles_get(hs, id);

        return h && h->agent == agent ? h : NULL;
}

void handles_set_store(Handles *hs, HandleStore *store) {
        if (hs)
                hs->store = store;
}

int handles_restore(Handles *hs, const Handle *src) {
        Handle *h;

        if (!hs || !src || !handle_id_valid(src->id) || src->memfd < 0 || src->budget == 0 ||
            (src->label && !handle_label_valid(src->label, strlen(src->label))))
                return -EINVAL;
        if (find(hs, src->id) >= 0)
                return -EEXIST;
        if (hs->n >= HANDLES_MAX)
                return -EMFILE;
        if (handles_n_agent(hs, src->agent) >= HANDLES_PER_AGENT_MAX)
                return -EUSERS;
        h = malloc(sizeof(*h));
        if (!h)
                return -ENOMEM;
        *h = *src;
        /* A restart: the time left is taken from the wall clock once, as stored. */
        h->deadline_usec = clock_boottime_deadline(src->expires_usec);
        hs->items[hs->n++] = h;
        rearm(hs);
        return 0;
}

int handles_revoke(Handles *hs, const char *id) {
        ssize_t i;
        int r;

        if (!hs || !handle_id_valid(id))
                return -ENOENT;
        i = find(hs, id);
        if (i < 0)
                return -ENOENT;
        r = remove_at(hs, (size_t)i);
        rearm(hs);
        return r;
}

size_t handles_n(Handles *hs) {
        if (!hs)
                return 0;
        (void)handles_expire(hs, clock_now_usec(CLOCK_BOOTTIME));
        return hs->n;
}

const Handle *handles_at(const Handles *hs, size_t i) {
        return hs && i < hs->n ? hs->items[i] : NULL;
}

size_t handles_n_agent(const Handles *hs, uid_t agent) {
        size_t n = 0;

        for (size_t i = 0; hs && i < hs->n; i++)
                if (hs->items[i]->agent == agent)
                        n++;
        return n;
}

int handle_open_for_run(const Handle *h) {
        if (!h || h->memfd < 0)
                return -EBADF;
        return fd_reopen_readonly(h->memfd);
}
