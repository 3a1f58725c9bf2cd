/* The pool of ephemeral uids: one fresh uid per concurrent plugin run. */
#pragma once

#include <stdint.h>
#include <sys/types.h>

typedef struct UidPool {
        uid_t min, max;
        uid_t next;     /* where the next search starts, so a released uid is not reused at once */
        uint8_t *inuse; /* one byte per uid of the range */
} UidPool;

/* Prepares a pool over [min, max]. 0, -EINVAL for an empty or root-including range, -ENOMEM. */
int uid_pool_init(UidPool *pool, uid_t min, uid_t max);
void uid_pool_done(UidPool *pool);
/* Takes a uid nobody else is using; -EBUSY when every uid of the range is in use. */
int uid_pool_acquire(UidPool *pool, uid_t *ret);
void uid_pool_release(UidPool *pool, uid_t uid);

/*
 * Checks that no passwd entry (uid or primary gid, getpwent()) and no group (getgrent()) has an
 * id in [first, last], the range the plugins' ephemeral uids and gids come from: a plugin run
 * must never share an id with anything else. 0; -EEXIST with the first such entry in why;
 * -EINVAL for an empty range or one including 0; another negative errno if enumeration fails.
 */
int uid_pool_check_range(uid_t first, uid_t last, char *why, size_t why_len);
