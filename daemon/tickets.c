/* Tickets: agents' validated plans waiting for the console, in memory, expired by a loop timer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "macro.h"
#include "tickets.h"

/* How late the expiry timer may fire; every lookup expires on time. */
#define EXPIRY_ACCURACY_USEC (100ULL * 1000)
#define ID_TRIES             8

struct Tickets {
        Ticket **items; /* submit order */
        size_t n, max;
        sd_event *event;
        sd_event_source *timer;
        TicketChangedFn on_changed;
        TicketPlanReleaseFn release_plan;
        void *userdata;
};

static const char *const state_names[_TICKET_STATE_MAX] = {
        [TICKET_PENDING] = "pending",     [TICKET_RUNNING] = "running",
        [TICKET_DONE] = "done",           [TICKET_DENIED] = "denied",
        [TICKET_CANCELLED] = "cancelled", [TICKET_EXPIRED] = "expired",
};

const char *ticket_state_name(TicketState s) {
        if ((int)s < 0 || s >= _TICKET_STATE_MAX)
                return NULL;
        return state_names[s];
}

bool ticket_state_final(TicketState s) {
        return s == TICKET_DONE || s == TICKET_DENIED || s == TICKET_CANCELLED ||
               s == TICKET_EXPIRED;
}

bool ticket_id_valid(const char *s) {
        if (!s || strlen(s) != TICKET_ID_LEN || strncmp(s, TICKET_ID_PREFIX, 2) != 0)
                return false;
        for (size_t i = 2; i < TICKET_ID_LEN; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

uint64_t tickets_now_usec(void) {
        struct timespec ts;

        (void)clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000ULL;
}

static void ticket_free(Tickets *ts, Ticket *t) {
        if (!t)
                return;
        if (t->plan && ts->release_plan)
                ts->release_plan(t->plan, ts->userdata);
        plan_free(t->plan);
        for (size_t i = 0; i < PLAN_STEPS_MAX; i++) {
                free(t->labels[i]);
                free(t->runs[i].detail);
        }
        seal_key_free(t->seal);
        free(t);
}

static ssize_t find(const Tickets *ts, const char *id) {
        if (!id)
                return -1;
        for (size_t i = 0; i < ts->n; i++)
                if (strcmp(ts->items[i]->id, id) == 0)
                        return (ssize_t)i;
        return -1;
}

static void remove_at(Tickets *ts, size_t i) {
        ticket_free(ts, ts->items[i]);
        memmove(ts->items + i, ts->items + i + 1, (ts->n - i - 1) * sizeof(*ts->items));
        ts->n--;
}

/* Arms the timer for the earliest pending expiry, or turns it off when nothing is pending. */
static void rearm(Tickets *ts) {
        uint64_t next = 0;

        if (!ts->timer)
                return;
        for (size_t i = 0; i < ts->n; i++)
                if (ts->items[i]->state == TICKET_PENDING &&
                    (next == 0 || ts->items[i]->expires_usec < next))
                        next = ts->items[i]->expires_usec;
        if (next == 0) {
                (void)sd_event_source_set_enabled(ts->timer, SD_EVENT_OFF);
                return;
        }
        (void)sd_event_source_set_time(ts->timer, next);
        (void)sd_event_source_set_enabled(ts->timer, SD_EVENT_ONESHOT);
}

/* Moves a pending ticket to a final state, every step's outcome the state's own word. */
static void finish(Tickets *ts, Ticket *t, TicketState state) {
        t->seal = seal_key_free(t->seal);
        t->state = state;
        t->changed_usec = tickets_now_usec();
        for (size_t i = 0; i < t->plan->n_steps; i++)
                t->outcomes[i] =
                        (TicketOutcome){.set = true, .result = -1, .error = state_names[state]};
        if (ts->on_changed)
                ts->on_changed(t, ts->userdata);
}

size_t tickets_expire(Tickets *ts, uint64_t now_usec) {
        size_t n = 0;

        for (size_t i = 0; i < ts->n; i++) {
                Ticket *t = ts->items[i];

                if (t->state == TICKET_PENDING && t->expires_usec <= now_usec) {
                        finish(ts, t, TICKET_EXPIRED);
                        n++;
                }
        }
        if (n > 0)
                rearm(ts);
        return n;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Tickets *ts = userdata;

        /* The loop's time may lag the clock a little: the clock decides. */
        (void)tickets_expire(ts, tickets_now_usec());
        rearm(ts);
        return 0;
}

int tickets_new(sd_event *e, size_t max, TicketChangedFn on_changed,
                TicketPlanReleaseFn release_plan, void *userdata, Tickets **ret) {
        _cleanup_(tickets_freep) Tickets *ts = NULL;
        int r;

        if (max < 1 || max > TICKETS_MAX)
                return -EINVAL;
        ts = calloc(1, sizeof(*ts));
        if (!ts)
                return -ENOMEM;
        ts->max = max;
        ts->on_changed = on_changed;
        ts->release_plan = release_plan;
        ts->userdata = userdata;
        ts->items = calloc(max, sizeof(*ts->items));
        if (!ts->items)
                return -ENOMEM;
        if (e) {
                ts->event = sd_event_ref(e);
                r = sd_event_add_time(e, &ts->timer, CLOCK_REALTIME, UINT64_MAX,
                                      EXPIRY_ACCURACY_USEC, on_timer, ts);
                if (r < 0)
                        return r;
                (void)sd_event_source_set_enabled(ts->timer, SD_EVENT_OFF);
        }
        *ret = TAKE_PTR(ts);
        return 0;
}

Tickets *tickets_free(Tickets *ts) {
        if (!ts)
                return NULL;
        for (size_t i = 0; i < ts->n; i++)
                ticket_free(ts, ts->items[i]);
        free(ts->items);
        sd_event_source_disable_unref(ts->timer);
        sd_event_unref(ts->event);
        free(ts);
        return NULL;
}

size_t tickets_n_pending(const Tickets *ts, uid_t agent) {
        size_t n = 0;

        for (size_t i = 0; i < ts->n; i++)
                if (ts->items[i]->agent == agent && !ticket_state_final(ts->items[i]->state))
                        n++;
        return n;
}

/* A fresh id that no ticket holds: 128 bits from getrandom(), so an agent cannot guess another's
 * ticket (and the console cannot be tricked into approving a ticket it did not see). */
static int new_id(const Tickets *ts, char ret[static TICKET_ID_LEN + 1]) {
        static const char hex[] = "0123456789abcdef";

        for (unsigned tries = 0; tries < ID_TRIES; tries++) {
                uint8_t rnd[TICKET_ID_RANDOM];
                ssize_t l = getrandom(rnd, sizeof(rnd), 0);

                if (l < 0)
                        return -errno;
                if ((size_t)l != sizeof(rnd))
                        return -EIO;
                memcpy(ret, TICKET_ID_PREFIX, 2);
                for (size_t i = 0; i < sizeof(rnd); i++) {
                        ret[2 + 2 * i] = hex[rnd[i] >> 4];
                        ret[3 + 2 * i] = hex[rnd[i] & 0xf];
                }
                ret[TICKET_ID_LEN] = 0;
                if (find(ts, ret) < 0)
                        return 0;
        }
        return -EIO;
}

int tickets_submit(Tickets *ts, uid_t agent, Plan *plan, const char *const *labels,
                   uint64_t timeout_usec, unsigned max_pending_per_agent, const Ticket **ret) {
        Ticket *t;
        uint64_t now = tickets_now_usec();
        int r;

        if (!plan || plan->n_steps == 0 || plan->n_steps > PLAN_STEPS_MAX || timeout_usec == 0 ||
            timeout_usec > UINT64_MAX - now)
                return -EINVAL;
        for (size_t i = 0; labels && i < plan->n_steps; i++)
                if (labels[i] && strlen(labels[i]) > TICKET_LABEL_MAX)
                        return -EINVAL;
        (void)tickets_expire(ts, now);
        if (tickets_n_pending(ts, agent) >= max_pending_per_agent)
                return -EDQUOT;
        if (ts->n >= ts->max) {
                /* Room is made by forgetting the oldest final ticket; pending ones stay. */
                size_t i = 0;

                while (i < ts->n && !ticket_state_final(ts->items[i]->state))
                        i++;
                if (i == ts->n)
                        return -ENOSPC;
                remove_at(ts, i);
        }

        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        r = new_id(ts, t->id);
        if (r < 0) {
                free(t);
                return r;
        }
        for (size_t i = 0; labels && i < plan->n_steps; i++)
                if (labels[i] && !(t->labels[i] = strdup(labels[i]))) {
                        ticket_free(ts, t);
                        return -ENOMEM;
                }
        /* A fresh key per ticket: a value sealed for one ticket opens for no other. */
        if (plan->n_placeholders > 0) {
                r = seal_key_new(&t->seal);
                if (r < 0) {
                        ticket_free(ts, t);
                        return r;
                }
        }
        t->agent = agent;
        t->state = TICKET_PENDING;
        t->created_usec = t->changed_usec = now;
        t->expires_usec = now + timeout_usec;
        t->plan = plan;
        ts->items[ts->n++] = t;
        rearm(ts);
        *ret = t;
        return 0;
}

void tickets_announce(Tickets *ts, const Ticket *t) {
        if (ts->on_changed)
                ts->on_changed(t, ts->userdata);
}

int tickets_remove(Tickets *ts, const char *id) {
        ssize_t i = find(ts, id);

        if (i < 0)
                return -ENOENT;
        remove_at(ts, (size_t)i);
        rearm(ts);
        return 0;
}

const Ticket *tickets_get(Tickets *ts, const char *id) {
        ssize_t i;

        (void)tickets_expire(ts, tickets_now_usec());
        i = find(ts, id);
        return i < 0 ? NULL : ts->items[i];
}

const Ticket *tickets_get_for_agent(Tickets *ts, const char *id, uid_t agent) {
        const Ticket *t = tickets_get(ts, id);

        return t && t->agent == agent ? t : NULL;
}

int tickets_finish(Tickets *ts, const char *id, TicketState state) {
        ssize_t i;

        if (state != TICKET_DENIED && state != TICKET_CANCELLED)
                return -EINVAL;
        (void)tickets_expire(ts, tickets_now_usec());
        i = find(ts, id);
        if (i < 0)
                return -ENOENT;
        if (ts->items[i]->state != TICKET_PENDING)
                return -EBUSY;
        finish(ts, ts->items[i], state);
        rearm(ts);
        return 0;
}

Ticket *tickets_get_mutable(Tickets *ts, const char *id) {
        ssize_t i;

        (void)tickets_expire(ts, tickets_now_usec());
        i = find(ts, id);
        return i < 0 ? NULL : ts->items[i];
}

int tickets_start(Tickets *ts, Ticket *t) {
        if (t->state != TICKET_PENDING)
                return -EBUSY;
        /* The values are in: nothing may be sealed to this ticket again. */
        t->seal = seal_key_free(t->seal);
        t->state = TICKET_RUNNING;
        t->changed_usec = tickets_now_usec();
        rearm(ts);
        if (ts->on_changed)
                ts->on_changed(t, ts->userdata);
        return 0;
}

int tickets_set_outcome(Tickets *ts, Ticket *t, size_t step, int result, const char *error) {
        bool all = true;

        if (t->state != TICKET_RUNNING || step >= t->plan->n_steps || t->outcomes[step].set ||
            (error ? result != -1 : (result != 0 && result != 1)))
                return -EINVAL;
        t->outcomes[step] = (TicketOutcome){.set = true, .result = result, .error = error};
        for (size_t i = 0; i < t->plan->n_steps; i++)
                all = all && t->outcomes[i].set;
        t->changed_usec = tickets_now_usec();
        if (all)
                t->state = TICKET_DONE;
        if (ts->on_changed)
                ts->on_changed(t, ts->userdata);
        return 0;
}

size_t tickets_n(Tickets *ts) {
        (void)tickets_expire(ts, tickets_now_usec());
        return ts->n;
}

const Ticket *tickets_at(const Tickets *ts, size_t i) {
        return i < ts->n ? ts->items[i] : NULL;
}
