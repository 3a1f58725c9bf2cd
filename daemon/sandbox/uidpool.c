/* The pool of ephemeral uids: one fresh uid per concurrent plugin run. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "nss-util.h"
#include "uidpool.h"

/* Says why in the caller's buffer, if it gave one. */
#define say(why, len, ...)                                                                         \
        do {                                                                                       \
                if ((why) && (len) > 0)                                                            \
                        snprintf((why), (len), __VA_ARGS__);                                       \
        } while (0)

#define UID_POOL_SIZE_MAX (1U << 20)

int uid_pool_init(UidPool *pool, uid_t min, uid_t max) {
        if (min == 0 || max < min || max - min >= UID_POOL_SIZE_MAX || max == (uid_t)-1)
                return -EINVAL;
        pool->inuse = calloc((size_t)(max - min) + 1, 1);
        if (!pool->inuse)
                return -ENOMEM;
        pool->min = min;
        pool->max = max;
        pool->next = min;
        return 0;
}

void uid_pool_done(UidPool *pool) {
        free(pool->inuse);
        pool->inuse = NULL;
}

/*
 * RLIMIT_NPROC counts per uid, and a plugin must not be able to signal or ptrace another run:
 * each concurrent run gets a uid no other live process has. Rotating through the range keeps a
 * just-released uid out of use for as long as possible.
 */
int uid_pool_acquire(UidPool *pool, uid_t *ret) {
        size_t size = (size_t)(pool->max - pool->min) + 1;

        for (size_t i = 0; i < size; i++) {
                uid_t uid = pool->min + (uid_t)(((size_t)(pool->next - pool->min) + i) % size);

                if (!pool->inuse[uid - pool->min]) {
                        pool->inuse[uid - pool->min] = 1;
                        pool->next = uid == pool->max ? pool->min : uid + 1;
                        *ret = uid;
                        return 0;
                }
        }
        return -EBUSY;
}

void uid_pool_release(UidPool *pool, uid_t uid) {
        if (uid >= pool->min && uid <= pool->max)
                pool->inuse[uid - pool->min] = 0;
}

int uid_pool_check_range(uid_t first, uid_t last, char *why, size_t why_len) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        int r;

        if (why && why_len > 0)
                why[0] = '\0';
        if (first == 0 || first > last || last == (uid_t)-1)
                return -EINVAL;

        setpwent();
        for (;;) {
                struct passwd pw;

                r = nss_get(&pw, NULL, NULL, 0, true, &buf, &len);
                if (r < 0)
                        break;
                if ((pw.pw_uid >= first && pw.pw_uid <= last) ||
                    (pw.pw_gid >= first && pw.pw_gid <= last)) {
                        say(why, why_len,
                            "user '%s' (uid %" PRIu32 ", gid %" PRIu32
                            ") is inside the ephemeral range %" PRIu32 "..%" PRIu32,
                            pw.pw_name, (uint32_t)pw.pw_uid, (uint32_t)pw.pw_gid, (uint32_t)first,
                            (uint32_t)last);
                        r = -EEXIST;
                        break;
                }
        }
        endpwent();
        if (r != -ENOENT) {
                if (r != -EEXIST)
                        say(why, why_len, "cannot enumerate users: %s", strerror(-r));
                return r;
        }

        setgrent();
        for (;;) {
                struct group gr;

                r = nss_get(NULL, &gr, NULL, 0, true, &buf, &len);
                if (r < 0)
                        break;
                if (gr.gr_gid >= first && gr.gr_gid <= last) {
                        say(why, why_len,
                            "group '%s' (gid %" PRIu32 ") is inside the ephemeral range %" PRIu32
                            "..%" PRIu32,
                            gr.gr_name, (uint32_t)gr.gr_gid, (uint32_t)first, (uint32_t)last);
                        r = -EEXIST;
                        break;
                }
        }
        endgrent();
        if (r == -ENOENT)
                return 0;
        if (r != -EEXIST)
                say(why, why_len, "cannot enumerate groups: %s", strerror(-r));
        return r;
}
