/* The pool of ephemeral uids: one fresh uid per concurrent plugin run. */
#include <errno.h>
#include <stdlib.h>

#include "uidpool.h"

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
