/* A rate limit per key for peer-triggered lines. */
#include <stddef.h>

#include "ratelimit.h"

bool ratelimit_pass(RateLimit *rl, uint32_t key, uint64_t now_usec, unsigned *ret_suppressed) {
        RateLimitSlot *s = NULL, *stalest = &rl->slots[0];

        if (ret_suppressed)
                *ret_suppressed = 0;
        for (size_t i = 0; i < RATELIMIT_KEYS; i++) {
                RateLimitSlot *t = &rl->slots[i];

                if (t->used && t->key == key) {
                        s = t;
                        break;
                }
                if (!t->used || (stalest->used && t->begin_usec < stalest->begin_usec))
                        stalest = t;
        }
        if (!s) {
                s = stalest;
                *s = (RateLimitSlot){.key = key, .used = true, .begin_usec = now_usec};
        }
        if (now_usec - s->begin_usec >= rl->interval_usec) {
                if (ret_suppressed)
                        *ret_suppressed = s->suppressed;
                s->begin_usec = now_usec;
                s->n = 0;
                s->suppressed = 0;
        }
        if (s->n < rl->burst) {
                s->n++;
                return true;
        }
        s->suppressed++;
        return false;
}
