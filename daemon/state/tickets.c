/* Tickets: agents' validated plans waiting for the console, in memory, expired by a loop timer. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "codec.h"
#include "clock.h"
#include "macro.h"
#include "tickets.h"

/* How late the expiry timer may fire; every lookup expires on time. */
#define EXPIRY_ACCURACY_USEC (100ULL * 1000)
#define ID_TRIES             8

/*
 * Every lookup by id goes through an open-addressing index (ids are 128 random bits, so their
 * first 64 are a fine hash), and expiry, the per-agent cap and the timer look only at the open
 * tickets (a list bounded by agents times the per-agent cap), so no call walks the thousands of
 * final tickets kept for Wait and the console.
 */
/* One agent's count of final tickets kept (an entry lives while the count is above 0). */
typedef struct AgentKept {
        uid_t agent;
        size_t n;
} AgentKept;

struct Tickets {
        Ticket **items; /* submit order, so seq ascending */
        size_t n, max;
        size_t kept_per_agent; /* final tickets one agent keeps at most */
        uint64_t next_seq;
        AgentKept *kept; /* agents with final tickets; as many as the set has agents at most */
        size_t n_kept;
        Ticket **index; /* size index_size, a power of two at least twice max; NULL: free */
        size_t index_size;
        Ticket *open_head, *open_tail;
        uint64_t next_expiry; /* the earliest expiry of a pending ticket; 0: none pending */
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
        return clock_now_usec(CLOCK_REALTIME);
}

static void ticket_free(Tickets *ts, Ticket *t) {
        if (!t)
                return;
        for (size_t i = 0; t->runs && t->plan && i < t->plan->n_steps; i++)
                free(t->runs[i].detail);
        free(t->runs);
        if (t->plan && ts->release_plan)
                ts->release_plan(t->plan, ts->userdata);
        plan_free(t->plan);
        for (size_t i = 0; i < PLAN_STEPS_MAX; i++)
                free(t->labels[i]);
        seal_key_free(t->seal);
        free(t);
}

/* The count entry of agent, or NULL. Agents holding final tickets are few; a linear search. */
static AgentKept *kept_find(const Tickets *ts, uid_t agent) {
        for (size_t i = 0; i < ts->n_kept; i++)
                if (ts->kept[i].agent == agent)
                        return &ts->kept[i];
        return NULL;
}

size_t tickets_n_kept(const Tickets *ts, uid_t agent) {
        const AgentKept *k = kept_find(ts, agent);

        return k ? k->n : 0;
}

/* Counts t, which just became final. The table has room for every agent the set can hold (one
 * per ticket at most), so this cannot fail. */
static void kept_add(Tickets *ts, const Ticket *t) {
        AgentKept *k = kept_find(ts, t->agent);

        if (!k) {
                k = &ts->kept[ts->n_kept++];
                *k = (AgentKept){.agent = t->agent};
        }
        k->n++;
}

static void kept_remove(Tickets *ts, const Ticket *t) {
        AgentKept *k = kept_find(ts, t->agent);

        if (!k || --k->n > 0)
                return;
        *k = ts->kept[--ts->n_kept];
}

/* The hash of a valid id: its first 16 hex digits. */
static size_t id_hash(const char *id) {
        uint64_t h = 0;

        for (size_t i = 2; i < 18; i++)
                h = (h << 4) | (uint64_t)(id[i] <= '9' ? id[i] - '0' : id[i] - 'a' + 10);
        return (size_t)(h ^ (h >> 29));
}

/* The index slot holding id, or the free slot where it would go. */
static size_t index_slot(const Tickets *ts, const char *id) {
        size_t mask = ts->index_size - 1, i = id_hash(id) & mask;

        while (ts->index[i] && strcmp(ts->index[i]->id, id) != 0)
                i = (i + 1) & mask;
        return i;
}

static Ticket *find(const Tickets *ts, const char *id) {
        /* Anything but a well-formed id names no ticket; it never reaches the hash. */
        if (!ticket_id_valid(id))
                return NULL;
        return ts->index[index_slot(ts, id)];
}

/* Removes t from the index, moving later entries of its probe run back (no tombstones). */
static void index_remove(Tickets *ts, const Ticket *t) {
        size_t mask = ts->index_size - 1, i = index_slot(ts, t->id), j = i;

        if (!ts->index[i])
                return;
        ts->index[i] = NULL;
        for (;;) {
                size_t home;

                j = (j + 1) & mask;
                if (!ts->index[j])
                        return;
                home = id_hash(ts->index[j]->id) & mask;
                /* Entry j may fill the hole at i unless its home lies cyclically in (i, j]. */
                if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
                        ts->index[i] = ts->index[j];
                        ts->index[j] = NULL;
                        i = j;
                }
        }
}

static void open_add(Tickets *ts, Ticket *t) {
        t->open_prev = ts->open_tail;
        t->open_next = NULL;
        if (ts->open_tail)
                ts->open_tail->open_next = t;
        else
                ts->open_head = t;
        ts->open_tail = t;
}

static void open_remove(Tickets *ts, Ticket *t) {
        if (t->open_prev)
                t->open_prev->open_next = t->open_next;
        else if (ts->open_head == t)
                ts->open_head = t->open_next;
        else
                return; /* not on the list */
        if (t->open_next)
                t->open_next->open_prev = t->open_prev;
        else
                ts->open_tail = t->open_prev;
        t->open_prev = t->open_next = NULL;
}

static void remove_at(Tickets *ts, size_t i) {
        Ticket *t = ts->items[i];

        if (ticket_state_final(t->state))
                kept_remove(ts, t);
        index_remove(ts, t);
        open_remove(ts, t);
        ticket_free(ts, t);
        memmove(ts->items + i, ts->items + i + 1, (ts->n - i - 1) * sizeof(*ts->items));
        ts->n--;
}

/* Finds the earliest pending expiry and arms the timer for it, or turns it off when nothing is
 * pending. */
static void rearm(Tickets *ts) {
        uint64_t next = 0;

        for (const Ticket *t = ts->open_head; t; t = t->open_next)
                if (t->state == TICKET_PENDING && (next == 0 || t->deadline_usec < next))
                        next = t->deadline_usec;
        ts->next_expiry = next;
        if (!ts->timer)
                return;
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
        open_remove(ts, t);
        t->state = state;
        kept_add(ts, t);
        t->changed_usec = tickets_now_usec();
        for (size_t i = 0; i < t->plan->n_steps; i++)
                t->outcomes[i] =
                        (TicketOutcome){.set = true, .result = -1, .error = state_names[state]};
        if (ts->on_changed && t->announced)
                ts->on_changed(t, ts->userdata);
}

size_t tickets_expire(Tickets *ts, uint64_t now_usec) {
        Ticket *next;
        size_t n = 0;

        if (ts->next_expiry == 0 || now_usec < ts->next_expiry)
                return 0;
        for (Ticket *t = ts->open_head; t; t = next) {
                next = t->open_next;
                if (t->state == TICKET_PENDING && t->deadline_usec <= now_usec) {
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
        (void)tickets_expire(ts, clock_now_usec(CLOCK_BOOTTIME));
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
        ts->kept_per_agent = max;
        ts->next_seq = 1;
        ts->on_changed = on_changed;
        ts->release_plan = release_plan;
        ts->userdata = userdata;
        ts->items = calloc(max, sizeof(*ts->items));
        if (!ts->items)
                return -ENOMEM;
        for (ts->index_size = 16; ts->index_size < 2 * max; ts->index_size *= 2)
                ;
        ts->index = calloc(ts->index_size, sizeof(*ts->index));
        ts->kept = calloc(max, sizeof(*ts->kept));
        if (!ts->index || !ts->kept)
                return -ENOMEM;
        if (e) {
                ts->event = sd_event_ref(e);
                r = sd_event_add_time(e, &ts->timer, CLOCK_BOOTTIME, UINT64_MAX,
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
        free(ts->index);
        free(ts->kept);
        sd_event_source_disable_unref(ts->timer);
        sd_event_unref(ts->event);
        free(ts);
        return NULL;
}

int tickets_set_kept_per_agent(Tickets *ts, size_t n) {
        if (n < 1 || n > ts->max)
                return -EINVAL;
        ts->kept_per_agent = n;
        return 0;
}

size_t tickets_n_pending_all(const Tickets *ts) {
        size_t n = 0;

        for (const Ticket *t = ts->open_head; t; t = t->open_next)
                if (t->state == TICKET_PENDING)
                        n++;
        return n;
}

size_t tickets_n_pending(const Tickets *ts, uid_t agent) {
        size_t n = 0;

        for (const Ticket *t = ts->open_head; t; t = t->open_next)
                if (t->agent == agent)
                        n++;
        return n;
}

/* A fresh id that no ticket holds: 128 bits from getrandom(), so an agent cannot guess another's
 * ticket (and the console cannot be tricked into approving a ticket it did not see). */
static int new_id(const Tickets *ts, char ret[static TICKET_ID_LEN + 1]) {
        for (unsigned tries = 0; tries < ID_TRIES; tries++) {
                uint8_t rnd[TICKET_ID_RANDOM];
                ssize_t l = getrandom(rnd, sizeof(rnd), 0);

                if (l < 0)
                        return -errno;
                if ((size_t)l != sizeof(rnd))
                        return -EIO;
                memcpy(ret, TICKET_ID_PREFIX, 2);
                hex_encode(rnd, sizeof(rnd), ret + 2);
                if (!find(ts, ret))
                        return 0;
        }
        return -EIO;
}

/* The position of the oldest final ticket of agent, or ts->n. */
static size_t oldest_final_of(const Tickets *ts, uid_t agent) {
        size_t i = 0;

        while (i < ts->n &&
               (ts->items[i]->agent != agent || !ticket_state_final(ts->items[i]->state)))
                i++;
        return i;
}

/*
 * Makes room for one more ticket of agent. Final tickets are what goes, pending and running ones
 * never: first agent's own oldest while it keeps its share or more; then, when the set is full,
 * the oldest of the agent that keeps the most (agent itself among equals). So an agent's flood
 * pushes out only its own history, and the human's view of every other agent's stays (the
 * console's ListTickets lists pending tickets first anyway). -ENOSPC when the set is full of open
 * tickets.
 */
static int make_room(Tickets *ts, uid_t agent) {
        const AgentKept *most = NULL;
        size_t i;

        while (tickets_n_kept(ts, agent) >= ts->kept_per_agent) {
                i = oldest_final_of(ts, agent);
                if (i == ts->n)
                        break;
                remove_at(ts, i);
        }
        if (ts->n < ts->max)
                return 0;
        for (size_t k = 0; k < ts->n_kept; k++)
                if (!most || ts->kept[k].n > most->n ||
                    (ts->kept[k].n == most->n && ts->kept[k].agent == agent))
                        most = &ts->kept[k];
        if (!most)
                return -ENOSPC;
        i = oldest_final_of(ts, most->agent);
        if (i == ts->n)
                return -ENOSPC;
        remove_at(ts, i);
        return 0;
}

int tickets_submit(Tickets *ts, uid_t agent, Plan *plan, const char *const *labels,
                   uint64_t timeout_usec, unsigned max_pending_per_agent, const Ticket **ret) {
        Ticket *t;
        uint64_t now = tickets_now_usec(), boot = clock_now_usec(CLOCK_BOOTTIME);
        int r;

        if (!plan || plan->n_steps == 0 || plan->n_steps > PLAN_STEPS_MAX || timeout_usec == 0 ||
            timeout_usec > UINT64_MAX - now || timeout_usec > UINT64_MAX - boot)
                return -EINVAL;
        for (size_t i = 0; labels && i < plan->n_steps; i++)
                if (labels[i] && strlen(labels[i]) > TICKET_LABEL_MAX)
                        return -EINVAL;
        (void)tickets_expire(ts, boot);
        if (tickets_n_pending(ts, agent) >= max_pending_per_agent)
                return -EDQUOT;
        r = make_room(ts, agent);
        if (r < 0)
                return r;

        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->runs = calloc(plan->n_steps, sizeof(*t->runs));
        if (!t->runs) {
                free(t);
                return -ENOMEM;
        }
        r = new_id(ts, t->id);
        if (r < 0) {
                free(t->runs);
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
        t->deadline_usec = boot + timeout_usec;
        /* Kept for up to thousands of tickets: cut to its steps (measured per ticket in
         * ARCHITECTURE.md, Hostile peers and faults). */
        t->plan = plan_shrink(plan);
        t->seq = ts->next_seq++;
        ts->items[ts->n++] = t;
        ts->index[index_slot(ts, t->id)] = t;
        open_add(ts, t);
        if (ts->next_expiry == 0 || t->deadline_usec < ts->next_expiry)
                rearm(ts);
        *ret = t;
        return 0;
}

void tickets_announce(Tickets *ts, const Ticket *t) {
        Ticket *mt = find(ts, t->id);

        if (!mt || mt->announced)
                return;
        mt->announced = true;
        if (ts->on_changed)
                ts->on_changed(mt, ts->userdata);
}

/* The position of t in submit order (only a removal needs it). */
static size_t position(const Tickets *ts, const Ticket *t) {
        size_t i = 0;

        while (ts->items[i] != t)
                i++;
        return i;
}

int tickets_remove(Tickets *ts, const char *id) {
        Ticket *t = find(ts, id);

        if (!t)
                return -ENOENT;
        remove_at(ts, position(ts, t));
        rearm(ts);
        return 0;
}

const Ticket *tickets_get(Tickets *ts, const char *id) {
        return tickets_get_mutable(ts, id);
}

const Ticket *tickets_get_for_agent(Tickets *ts, const char *id, uid_t agent) {
        const Ticket *t = tickets_get(ts, id);

        return t && t->agent == agent ? t : NULL;
}

int tickets_finish(Tickets *ts, const char *id, TicketState state) {
        Ticket *t;

        if (state != TICKET_DENIED && state != TICKET_CANCELLED)
                return -EINVAL;
        t = tickets_get_mutable(ts, id);
        if (!t)
                return -ENOENT;
        if (t->state != TICKET_PENDING)
                return -EBUSY;
        finish(ts, t, state);
        rearm(ts);
        return 0;
}

Ticket *tickets_get_mutable(Tickets *ts, const char *id) {
        (void)tickets_expire(ts, clock_now_usec(CLOCK_BOOTTIME));
        return find(ts, id);
}

int tickets_start(Tickets *ts, Ticket *t) {
        if (t->state != TICKET_PENDING)
                return -EBUSY;
        /* The values are in: nothing may be sealed to this ticket again. */
        t->seal = seal_key_free(t->seal);
        t->state = TICKET_RUNNING;
        t->changed_usec = tickets_now_usec();
        rearm(ts);
        if (ts->on_changed && t->announced)
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
        if (all) {
                t->state = TICKET_DONE;
                open_remove(ts, t);
                kept_add(ts, t);
        }
        if (ts->on_changed && t->announced)
                ts->on_changed(t, ts->userdata);
        return 0;
}

size_t tickets_n(Tickets *ts) {
        (void)tickets_expire(ts, clock_now_usec(CLOCK_BOOTTIME));
        return ts->n;
}

const Ticket *tickets_at(const Tickets *ts, size_t i) {
        return i < ts->n ? ts->items[i] : NULL;
}

/* The position of the first ticket whose seq is at least seq (ts->n for none). */
static size_t seq_lower_bound(const Tickets *ts, uint64_t seq) {
        size_t lo = 0, hi = ts->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (ts->items[mid]->seq < seq)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

static bool selected(const Ticket *t, const TicketFilter *f) {
        return !f || ((f->state < 0 || (int)t->state == f->state) &&
                      (!f->by_agent || t->agent == f->agent));
}

const Ticket *tickets_next(Tickets *ts, const TicketFilter *f, TicketCursor *c) {
        (void)tickets_expire(ts, clock_now_usec(CLOCK_BOOTTIME));
        if (!c->in_other) {
                /* The open list is in submit order: walk it from its newest end. */
                for (const Ticket *t = ts->open_tail; t; t = t->open_prev)
                        if (t->state == TICKET_PENDING && (!c->started || t->seq < c->seq) &&
                            selected(t, f)) {
                                c->started = true;
                                c->seq = t->seq;
                                return t;
                        }
                *c = (TicketCursor){.in_other = true};
        }
        for (size_t i = c->started ? seq_lower_bound(ts, c->seq) : ts->n; i > 0; i--) {
                const Ticket *t = ts->items[i - 1];

                if (t->state != TICKET_PENDING && selected(t, f)) {
                        c->started = true;
                        c->seq = t->seq;
                        return t;
                }
        }
        return NULL;
}

void ticket_cursor_format(const TicketCursor *c, char buf[static TICKET_CURSOR_STRING_MAX]) {
        snprintf(buf, TICKET_CURSOR_STRING_MAX, "%c.%" PRIu64, c->in_other ? 'o' : 'p',
                 c->started ? c->seq : 0);
}

int ticket_cursor_parse(const char *s, TicketCursor *ret) {
        uint64_t seq = 0;
        size_t len;

        if (!s || (s[0] != 'p' && s[0] != 'o') || s[1] != '.')
                return -EINVAL;
        len = strlen(s + 2);
        /* Decimal, no sign, no leading zero (but "0" itself), at most 20 digits. */
        if (len == 0 || len > 20 || (len > 1 && s[2] == '0'))
                return -EINVAL;
        for (const char *p = s + 2; *p; p++) {
                if (*p < '0' || *p > '9' || seq > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
                        return -EINVAL;
                seq = seq * 10 + (uint64_t)(*p - '0');
        }
        *ret = (TicketCursor){.started = seq > 0, .in_other = s[0] == 'o', .seq = seq};
        return 0;
}
