/* Tickets: agents' validated plans waiting for the console, with their state, expiry and per-step
 * outcomes. In memory only, on the engine's loop. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "plan.h"
#include "seal.h"

/* Tickets kept at once, all agents, any state; pending ones are also bounded per agent by the
 * policy. What a kept ticket costs is measured by bench/soak (ARCHITECTURE.md, Hostile peers and
 * faults): a 16-step ticket with its plan 16.3-16.8 KiB of the engine's RSS, so the full set
 * stays under 70 MiB; a 1-step one about 3.5 KiB by the same sizes. Final tickets are kept
 * for Wait and the console until room is needed, each agent's at most a share of the set
 * (tickets_set_kept_per_agent()): an agent that churns tickets pushes out its own oldest final
 * ones, never another agent's and never a pending one. */
#define TICKETS_MAX      4096
/* lockd's share per agent of the final tickets kept: an eighth of the set. */
#define TICKETS_KEPT_PER_AGENT (TICKETS_MAX / 8)
#define TICKET_ID_PREFIX "t-"
#define TICKET_ID_RANDOM 16                         /* bytes of getrandom() in an id: 128 bits */
#define TICKET_ID_LEN    (2 + 2 * TICKET_ID_RANDOM) /* "t-" + 32 lowercase hex digits */
#define TICKET_LABEL_MAX 64                         /* bytes of a step's handle label copy */

typedef enum TicketState {
        TICKET_PENDING,   /* waiting for the console */
        TICKET_RUNNING,   /* approved (or auto): steps run, outcomes arrive one by one */
        TICKET_DONE,      /* every step has its outcome: final */
        TICKET_DENIED,    /* the console said no: final */
        TICKET_CANCELLED, /* the agent took it back: final */
        TICKET_EXPIRED,   /* nobody answered in time: final */
        _TICKET_STATE_MAX,
} TicketState;

/* One step's outcome: result 0 or 1 with error NULL, or result -1 with error one of the
 * interface's static words ("denied", "cancelled", "expired", ...); both unset while open. */
typedef struct TicketOutcome {
        bool set;
        int result;        /* 0, 1, or -1 for none */
        const char *error; /* static; NULL with a result */
} TicketOutcome;

/* What the human may see of one step's run (Results, security level 3): never the agent. */
typedef struct TicketRun {
        char cause[64]; /* "answer", "cached", "timeout", "exit:3", "input_invalid", ... */
        bool cached;    /* answered from the budget's cache, nothing ran */
        bool ran;       /* a plugin ran: the measures below are set */
        char unit[128]; /* the run's scope ("" without one) */
        uint64_t wall_usec, setup_usec, scope_wait_usec, cpu_usec, peak_memory_bytes, stderr_bytes;
        char *detail; /* escaped fd 7 bytes, only kept at security level 3; NULL for none */
} TicketRun;

typedef struct Ticket {
        char id[TICKET_ID_LEN + 1];
        uid_t agent;
        Plan *plan; /* owned; given back through TicketPlanReleaseFn when the ticket is freed */
        /* Each step's handle label as it was at the submit (NULL for none): a handle revoked
         * later must not change what the human is shown. */
        char *labels[PLAN_STEPS_MAX];
        TicketState state;
        uint64_t created_usec; /* CLOCK_REALTIME */
        uint64_t expires_usec; /* CLOCK_REALTIME: the state turns expired then, if still pending */
        uint64_t changed_usec; /* CLOCK_REALTIME of the last state change */
        /* CLOCK_BOOTTIME: when the expiry comes, whatever the wall clock does meanwhile
         * (expires_usec is what it is shown as). */
        uint64_t deadline_usec;
        TicketOutcome outcomes[PLAN_STEPS_MAX];
        TicketRun *runs; /* plan->n_steps of them */
        /* The one-use key the human's values are sealed to: made at the submit for a plan with
         * placeholders, destroyed (freed) by the approval or any final state. */
        SealKey *seal;
        bool auto_approved; /* lockd started it itself: protocol-1 steps on auto handles */
        pid_t agent_pid;    /* the submitter's pid at accept, for the run records */
        bool announced;     /* tickets_announce() ran: changes are told from then on */
        uint64_t seq;       /* the set's submit counter: listing order, never reused */
        /* Private to tickets.c: the list of open (pending or running) tickets. */
        struct Ticket *open_prev, *open_next;
} Ticket;

typedef struct Tickets Tickets;

/* Called after every announced new ticket and every state change, including expiry (borrowed;
 * it must not add, change or remove tickets). */
typedef void (*TicketChangedFn)(const Ticket *t, void *userdata);
/* Called with each ticket's plan when the ticket is freed, to drop what the plan borrowed; the
 * plan itself is freed after it returns. May be NULL. */
typedef void (*TicketPlanReleaseFn)(Plan *plan, void *userdata);

/* "pending", "denied", "cancelled", "expired"; NULL out of range. */
const char *ticket_state_name(TicketState s);
/* Whether no further change can come. */
bool ticket_state_final(TicketState s);
/* Whether s has the form of a ticket id: "t-" and 32 lowercase hex digits, nothing else. */
bool ticket_id_valid(const char *s);

/*
 * A new, empty set keeping at most max tickets (1..TICKETS_MAX). With e, a CLOCK_BOOTTIME timer
 * on e expires pending tickets; without one only tickets_expire() does. 0 or -EINVAL, -ENOMEM.
 */
int tickets_new(sd_event *e, size_t max, TicketChangedFn on_changed,
                TicketPlanReleaseFn release_plan, void *userdata, Tickets **ret);
/* Frees every ticket (releasing its plan) and the timer, announcing nothing. NULL-safe. */
Tickets *tickets_free(Tickets *ts);
static inline void tickets_freep(Tickets **ts) {
        if (*ts)
                tickets_free(*ts);
}

/* CLOCK_REALTIME in microseconds. */
uint64_t tickets_now_usec(void);

/* Caps the final tickets one agent keeps (1..max; the default is max, no cap of its own). */
int tickets_set_kept_per_agent(Tickets *ts, size_t n);

/*
 * Adds a pending ticket with a fresh random id for agent's validated plan, expiring timeout_usec
 * (> 0) from now. labels (NULL, or plan->n_steps entries, each NULL or at most TICKET_LABEL_MAX
 * bytes) are copied. Caps, checked in this order: -EDQUOT when agent has max_pending_per_agent
 * pending tickets already; -ENOSPC when the set is full and holds no final ticket to make room
 * (the oldest final one is dropped otherwise). 0 with the plan taken and *ret (owned by ts); or a
 * negative errno (-EINVAL, -ENOMEM too) with plan and *ret untouched.
 *
 * The ticket is not announced: the caller calls tickets_announce() once it is recorded (the
 * audit comes first), or tickets_remove() when it cannot be.
 */
int tickets_submit(Tickets *ts, uid_t agent, Plan *plan, const char *const *labels,
                   uint64_t timeout_usec, unsigned max_pending_per_agent, const Ticket **ret);
/* Calls on_changed for a ticket tickets_submit() added; changes before it are not told (the
 * ticket's audit record may not be durable yet). */
void tickets_announce(Tickets *ts, const Ticket *t);
/* Drops a ticket without announcing it (its plan released). 0 or -ENOENT. */
int tickets_remove(Tickets *ts, const char *id);

/*
 * The ticket with id, or NULL (pending tickets past their expiry are expired first). The
 * _for_agent() form returns NULL as well for another agent's ticket, so an agent cannot tell
 * "not yours" from "none".
 */
const Ticket *tickets_get(Tickets *ts, const char *id);
const Ticket *tickets_get_for_agent(Tickets *ts, const char *id, uid_t agent);

/*
 * Ends a pending ticket in state (TICKET_DENIED or TICKET_CANCELLED): every step's outcome becomes
 * that error ("denied", "cancelled"), then on_changed runs. 0; -ENOENT no such ticket; -EBUSY the
 * ticket is not pending (nothing changes); -EINVAL another state.
 */
int tickets_finish(Tickets *ts, const char *id, TicketState state);

/*
 * The owner's mutable view of a ticket (tickets_get() with expiry first), for the run engine.
 */
Ticket *tickets_get_mutable(Tickets *ts, const char *id);

/*
 * Moves a pending ticket to running: its seal key is destroyed (the values are in), on_changed
 * runs. 0; -ENOENT; -EBUSY when not pending.
 */
int tickets_start(Tickets *ts, Ticket *t);

/*
 * Sets step's outcome of a running ticket: result 0 or 1 with error NULL, or result -1 with a
 * static error word. The last outcome makes the ticket done. on_changed runs either way. 0;
 * -EINVAL (bad step, or an outcome already set, or not running).
 */
int tickets_set_outcome(Tickets *ts, Ticket *t, size_t step, int result, const char *error);

/* Expires every pending ticket whose deadline is at or before now_usec (CLOCK_BOOTTIME; outcomes
 * "expired", on_changed for each). The count. */
size_t tickets_expire(Tickets *ts, uint64_t now_usec);

/* The tickets in submit order (after expiring): tickets_n() then tickets_at(ts, 0..n-1). */
size_t tickets_n(Tickets *ts);
const Ticket *tickets_at(const Tickets *ts, size_t i);
/* What a listing selects: state < 0 any state, else that state; agent only with by_agent. */
typedef struct TicketFilter {
        int state;
        bool by_agent;
        uid_t agent;
} TicketFilter;

/* A position in the listing order: pending tickets first, then every other, each newest (highest
 * seq) first. The zero value is the start. A ticket that leaves pending between two pages may be
 * listed twice; one submitted after the first page is not listed (WatchTickets tells it). */
typedef struct TicketCursor {
        bool started;
        bool in_other; /* past the pending tickets */
        uint64_t seq;  /* the last ticket listed */
} TicketCursor;

#define TICKET_CURSOR_STRING_MAX 24 /* "p." or "o." and up to 20 digits, NUL */

/* The next ticket after *c that f selects (NULL: every one), moving *c onto it; NULL at the end
 * (expiring first). */
const Ticket *tickets_next(Tickets *ts, const TicketFilter *f, TicketCursor *c);
/* The cursor as a string: "p.<seq>" or "o.<seq>". */
void ticket_cursor_format(const TicketCursor *c, char buf[static TICKET_CURSOR_STRING_MAX]);
/* Parses what ticket_cursor_format() wrote, nothing else. 0 or -EINVAL, *ret untouched then. */
int ticket_cursor_parse(const char *s, TicketCursor *ret);
/* Pending tickets in the set, all agents. */
size_t tickets_n_pending_all(const Tickets *ts);
/* Final tickets one agent has kept. */
size_t tickets_n_kept(const Tickets *ts, uid_t agent);

/* The open tickets of one agent: pending or running. Both count against the per-agent cap, so an
 * agent cannot hold more runs queued through auto tickets than through approved ones. */
size_t tickets_n_pending(const Tickets *ts, uid_t agent);
