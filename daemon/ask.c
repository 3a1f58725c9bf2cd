/* The runs of an approved ticket, from the cache lookup to the outcome the agent sees. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answers.h"
#include "ask.h"
#include "audit.h"
#include "budget.h"
#include "catalog.h"
#include "clock.h"
#include "commit.h"
#include "escape.h"
#include "handles.h"
#include "inputs.h"
#include "log-ids.h"
#include "log.h"
#include "macro.h"
#include "engine.h"
#include "policy.h"
#include "release.h"
#include "run-request.h"
#include "spawner-link.h"
#include "schedule.h"
#include "step-cause.h"

/* One step on its way through the pool. It holds what the outcome needs after the run, never a
 * value: those live only in the request's fd 6 JSON, freed with the request. */
typedef struct StepRun {
        Manager *manager;
        char ticket[TICKET_ID_LEN + 1];
        size_t step;
        uid_t agent;
        pid_t agent_pid;
        CatalogPlugin *plugin; /* a reference: the approved version runs even if removed since */
        uint8_t digest[BUDGET_DIGEST_SIZE];
        char sha256[HANDLE_SHA256_HEX + 1];
        BudgetKey key;
        bool by_value;                      /* bound to typed values: answers keyed by answer_id */
        uint8_t answer_id[ANSWERS_ID_SIZE]; /* answers_id() of the values, when by_value */
        uint64_t admitted_usec;             /* CLOCK_MONOTONIC, when the run was admitted */
        uint64_t timeout_usec;              /* the plugin's timeout_s */
        RunRequest *req; /* while in the backlog; the pool owns it after submit */
        /* After the run, while its audit record (audit_seq) is made durable, and with it the
         * reservation's record before it in the log: the outcome. */
        uint64_t audit_seq;
        RunOutcome outcome;
        bool spawn_failed; /* lockd could not enter the sandbox: the slot goes back */
        char cause[64];
        uint64_t ran_usec, release_usec;
        struct StepRun *next;
} StepRun;

/* One agent's waiting steps, in order. */
typedef struct AgentQueue {
        uid_t agent;
        StepRun *head, *tail;
        struct AgentQueue *next;
} AgentQueue;

/* An outcome known to lockd and held back until its release time (schedule.h). */
typedef struct HeldOutcome {
        Manager *manager;
        sd_event_source *timer;
        char ticket[TICKET_ID_LEN + 1];
        size_t step;
        int result;
        const char *error; /* static */
        char cause[64];
        struct HeldOutcome *prev, *next;
} HeldOutcome;

/* The backlog: agents in rotation order, each with its FIFO. A step leaves from the first agent,
 * which then moves to the end, so every agent gets its turn whatever the others queued. held
 * lists the outcomes waiting for their release time. */
struct AskQueue {
        AgentQueue *head, *tail;
        size_t n;
        HeldOutcome *held;
        StepRun *recording, *recording_tail; /* ran, waiting for their records to be durable */
};

static StepRun *step_run_free(StepRun *s) {
        if (!s)
                return NULL;
        catalog_plugin_unref(s->plugin);
        run_request_free(s->req);
        free(s);
        return NULL;
}

/* Sets step's outcome and what the human sees of it. */
static void set_outcome(Manager *m, Ticket *t, size_t step, int result, const char *error,
                        const char *cause) {
        snprintf(t->runs[step].cause, sizeof(t->runs[step].cause), "%s", cause);
        (void)tickets_set_outcome(m->tickets, t, step, result, error);
}

/* Ends step as plugin_error without a run: lockd could not do its part (why: STEP_NOT_RUN_*). */
static void not_run(Manager *m, Ticket *t, size_t step, StepCause why) {
        set_outcome(m, t, step, -1, "plugin_error", step_cause_name(why));
}

static AskQueue *ask_queue(Manager *m) {
        if (!m->ask)
                m->ask = calloc(1, sizeof(*m->ask));
        return m->ask;
}

static HeldOutcome *held_free(AskQueue *q, HeldOutcome *h) {
        if (!h)
                return NULL;
        if (h->prev)
                h->prev->next = h->next;
        else if (q && q->held == h)
                q->held = h->next;
        if (h->next)
                h->next->prev = h->prev;
        sd_event_source_disable_unref(h->timer);
        free(h);
        return NULL;
}

static int held_release(sd_event_source *source, uint64_t usec, void *userdata) {
        HeldOutcome *h = userdata;
        Manager *m = h->manager;
        Ticket *t = tickets_get_mutable(m->tickets, h->ticket);

        /* A ticket cancelled or expired meanwhile has this step's outcome already: nothing to do.
         */
        if (t && h->step < t->plan->n_steps && !t->outcomes[h->step].set)
                set_outcome(m, t, h->step, h->result, h->error, h->cause);
        held_free(m->ask, h);
        return 0;
}

/*
 * Sets step's outcome at release_usec (CLOCK_MONOTONIC), or at once when that time has come. An
 * outcome held back is invisible everywhere until then: Wait, Submit's state and the console's
 * views all read the ticket, which does not hold it yet (ARCHITECTURE.md, timing). The timer asks
 * for 1 µs accuracy: sd-event's default slack would move every release by up to 250 ms.
 */
static void set_outcome_at(Manager *m, Ticket *t, size_t step, int result, const char *error,
                           const char *cause, uint64_t release_usec) {
        AskQueue *q;
        HeldOutcome *h;
        int r;

        if (release_usec <= clock_monotonic_usec() || m->stopping) {
                set_outcome(m, t, step, result, error, cause);
                return;
        }
        q = ask_queue(m);
        h = q ? calloc(1, sizeof(*h)) : NULL;
        if (!h) {
                /* Withheld, never released early: the agent sees plugin_error. */
                not_run(m, t, step, STEP_NOT_RUN_MEMORY);
                return;
        }
        *h = (HeldOutcome){.manager = m, .step = step, .result = result, .error = error};
        memcpy(h->ticket, t->id, sizeof(h->ticket));
        snprintf(h->cause, sizeof(h->cause), "%s", cause);
        r = sd_event_add_time(m->event, &h->timer, CLOCK_MONOTONIC, release_usec, 1, held_release,
                              h);
        if (r < 0) {
                free(h);
                not_run(m, t, step, STEP_NOT_RUN_TIMER);
                return;
        }
        h->next = q->held;
        if (q->held)
                q->held->prev = h;
        q->held = h;
}

/* The release time of a step admitted at admitted_usec whose run (or the run that produced its
 * cached answer) took ran_usec. */
static uint64_t release_time(const Manager *m, uint64_t admitted_usec, uint64_t timeout_usec,
                             uint64_t ran_usec) {
        return admitted_usec + schedule_delay_usec(m->policy->security_level,
                                                   m->policy->release_quantum_ms * 1000,
                                                   timeout_usec, ran_usec);
}

static int queue_push_to(AskQueue *q, StepRun *s) {
        AgentQueue *a;

        for (a = q->head; a; a = a->next)
                if (a->agent == s->agent)
                        break;
        if (!a) {
                a = calloc(1, sizeof(*a));
                if (!a)
                        return -ENOMEM;
                a->agent = s->agent;
                if (q->tail)
                        q->tail->next = a;
                else
                        q->head = a;
                q->tail = a;
        }
        s->next = NULL;
        if (a->tail)
                a->tail->next = s;
        else
                a->head = s;
        a->tail = s;
        q->n++;
        return 0;
}

static int queue_push(Manager *m, StepRun *s) {
        AskQueue *q = ask_queue(m);

        return q ? queue_push_to(q, s) : -ENOMEM;
}

/* Takes the first agent's first step and rotates that agent to the end (or drops it, empty). */
static StepRun *queue_pop(AskQueue *q) {
        AgentQueue *a = q ? q->head : NULL;
        StepRun *s;

        if (!a)
                return NULL;
        s = a->head;
        a->head = s->next;
        if (!a->head)
                a->tail = NULL;
        q->head = a->next;
        if (!q->head)
                q->tail = NULL;
        a->next = NULL;
        if (a->head) {
                if (q->tail)
                        q->tail->next = a;
                else
                        q->head = a;
                q->tail = a;
        } else
                free(a);
        q->n--;
        s->next = NULL;
        return s;
}

/* The step queue_pop() would take next, left in place; NULL when none waits. */
static StepRun *queue_peek(const AskQueue *q) {
        return q && q->head ? q->head->head : NULL;
}

size_t ask_backlog(const Manager *m) {
        return m->ask ? m->ask->n : 0;
}

AskQueue *ask_queue_free(AskQueue *q) {
        StepRun *s;

        while ((s = queue_pop(q)))
                step_run_free(s);
        /* Answers still waiting for their records at exit stay unknown: the tickets go with the
         * process, and the slots stay charged on disk. */
        while (q && q->recording) {
                s = q->recording;
                q->recording = s->next;
                step_run_free(s);
        }
        while (q && q->held)
                held_free(q, q->held);
        free(q);
        return NULL;
}

/* Ends a step without an answer: its reserved slot is given back, the agent sees plugin_error at
 * release_usec (0: now), the human the cause. */
static void end_unanswered(Manager *m, StepRun *s, const char *cause, uint64_t release_usec) {
        Ticket *t = tickets_get_mutable(m->tickets, s->ticket);
        int r = budget_release(m->budget, s->digest, &s->key);

        if (r < 0)
                log_error_errno(r, NULL, "ticket %s step %zu: budget release failed: %m", s->ticket,
                                s->step);
        if (t)
                set_outcome_at(m, t, s->step, -1, "plugin_error", cause, release_usec);
}

/* Ends a step that did not run (why: STEP_NOT_RUN_*). */
static void fail_unrun(Manager *m, StepRun *s, StepCause why) {
        end_unanswered(m, s, step_cause_name(why), 0);
}

/* Ends a step whose run tells nothing about the file: lockd could not enter the sandbox (its
 * cause: run_cause_format()'s). */
static void fail_spawn(Manager *m, StepRun *s) {
        end_unanswered(m, s, s->cause, 0);
}

static void step_done(RunRequest *req, void *userdata);

/* Hands backlog steps to the pool until it is full or the backlog empty. */
static void drain(Manager *m) {
        StepRun *s;

        /*
         * A run may start before its reservation's record is durable: its answer may not leave
         * before (answers_release_ready(): the run record comes after it in the log), so a crash
         * in between loses a run no agent heard of, never a charge for an answer given. The
         * commit that makes the reservations durable starts here, and runs beside the plugin
         * instead of before it.
         */
        while (!m->stopping && (s = queue_peek(m->ask))) {
                int r;

                s->req->userdata = s;
                r = spawner_link_submit(m->spawner, s->req);
                /* The pool is full: s keeps its place, and its agent its turn. */
                if (r == -EAGAIN)
                        break;
                (void)queue_pop(m->ask);
                if (r < 0) {
                        fail_unrun(m, s,
                                   r == -ESHUTDOWN ? STEP_NOT_RUN_STOPPING : STEP_NOT_RUN_POOL);
                        step_run_free(s); /* frees the request the pool did not take */
                        continue;
                }
                s->req = NULL; /* the pool's now */
        }
        /* Last: the commit may call back into the ask flow at once. */
        if (audit_get_seq(m->audit) > audit_get_durable_seq(m->audit))
                commit_run(m->commit);
}

void ask_flush(Manager *m) {
        StepRun *s;

        while ((s = queue_pop(m->ask))) {
                fail_unrun(m, s, STEP_NOT_RUN_STOPPING);
                step_run_free(s);
        }
}

/* The audit record of one run; a failure to write it withholds the answer (fail closed). */
static int audit_run(Manager *m, const StepRun *s, const RunRequest *req, const char *cause) {
        const Manifest *mf = s->plugin->release->manifest;
        const RunResult *res = &req->result;
        const AuditRun run = {
                .plugin = mf->name,
                .version = mf->version,
                .handle_sha256 = s->sha256,
                .peer_uid = s->agent,
                .peer_pid = s->agent_pid,
                .outcome = res->outcome,
                .cause = res->outcome == RUN_PLUGIN_ERROR ? cause : NULL,
                .stderr_bytes = res->stderr_bytes,
                .cpu_usec = res->cpu_usec,
                .peak_memory_bytes = res->peak_rss_bytes,
                .wall_usec = res->wall_usec,
                .setup_usec = res->setup_usec,
                .scope_wait_usec = res->scope_wait_usec,
                .unit = req->scoped ? req->unit : NULL,
                .ticket = s->ticket,
                .step = (int64_t)s->step,
        };

        return audit_append_run_nosync(m->audit, &run);
}

/* Caches s's outcome (deferred: the next batch writes it); its run record is durable. */
static void commit_outcome(Manager *m, StepRun *s) {
        BudgetOutcome bo = s->outcome == RUN_ONE    ? BUDGET_OUTCOME_ONE
                           : s->outcome == RUN_ZERO ? BUDGET_OUTCOME_ZERO
                                                    : BUDGET_OUTCOME_PLUGIN_ERROR;
        int r;

        /* The slot is charged in the log since the reservation, so a crash before this record is
         * durable costs a rerun (free), never a charge. A question bound to values commits
         * "answered" only: its answer is kept in memory, under the keyed hash of the values. */
        if (s->by_value) {
                r = budget_commit_deferred(m->budget, s->digest, &s->key, BUDGET_OUTCOME_ANSWERED,
                                           s->ran_usec);
                if (r >= 0 || r == -EEXIST)
                        (void)answers_store(m->answers, s->answer_id, s->digest,
                                            &(BudgetEntry){.outcome = bo,
                                                           .time_usec = 0,
                                                           .ran_usec = s->ran_usec});
        } else
                r = budget_commit_deferred(m->budget, s->digest, &s->key, bo, s->ran_usec);
        if (r < 0)
                /* The slot stays reserved: the answer is charged, and the next ask of this
                 * question runs again for free. */
                log_error_errno(r, NULL, "ticket %s step %zu: the answer could not be cached: %m",
                                s->ticket, s->step);
        else
                commit_later(m->commit); /* rides the next commit: nothing waits for it */
}

/*
 * Withholds s's answer (why: STEP_WITHHELD_*, the record that could not be made durable): the
 * agent sees plugin_error at the step's release time, and the outcome is not cached. A cached
 * outcome is served without a run, so it must stand on a durable run record and a durable
 * charge; this one has not both. The slot goes back, as for a run that says nothing about the
 * file: nobody received its answer.
 */
static void withhold(Manager *m, StepRun *s, StepCause why) {
        end_unanswered(m, s, step_cause_name(why), s->release_usec);
}

/* Lets s's answer go now that its run record and its reservation are durable, or withholds it
 * (withheld: STEP_WITHHELD_*, what could not be made durable; STEP_CAUSE_NONE: nothing). Frees
 * s. */
static void answer_release(Manager *m, StepRun *s, StepCause withheld) {
        Ticket *t = tickets_get_mutable(m->tickets, s->ticket);

        if (s->spawn_failed) {
                /* lockd could not enter the sandbox: that says nothing about the file, so the
                 * slot goes back; the run is recorded all the same. */
                fail_spawn(m, s);
        } else if (withheld != STEP_CAUSE_NONE) {
                log_error_errno(-EIO, NULL,
                                "ticket %s step %zu: the %s could not be made durable, the "
                                "answer is withheld",
                                s->ticket, s->step,
                                withheld == STEP_WITHHELD_AUDIT ? "run record" : "budget");
                withhold(m, s, withheld);
        } else {
                if (t && s->outcome == RUN_PLUGIN_ERROR)
                        set_outcome_at(m, t, s->step, -1, "plugin_error", s->cause,
                                       s->release_usec);
                else if (t)
                        set_outcome_at(m, t, s->step, s->outcome == RUN_ONE, NULL, s->cause,
                                       s->release_usec);
                commit_outcome(m, s);
        }
        step_run_free(s);
}

/*
 * Lets go every answer whose run record is durable, and with it the reservation's record, which
 * the log holds before it (the budgets' write-ahead log); withholds them all when the audit log
 * broke (audit_failed).
 */
static void answers_release_ready(Manager *m, bool audit_failed) {
        AskQueue *q = m->ask;
        uint64_t seq = audit_get_durable_seq(m->audit);
        StepRun **p = q ? &q->recording : NULL, *prev = NULL;

        while (p && *p) {
                StepRun *s = *p;
                StepCause withheld = audit_failed ? STEP_WITHHELD_AUDIT : STEP_CAUSE_NONE;
                bool ready = s->audit_seq <= seq;

                if (!ready && withheld == STEP_CAUSE_NONE) {
                        prev = s;
                        p = &s->next;
                        continue;
                }
                *p = s->next;
                if (q->recording_tail == s)
                        q->recording_tail = prev;
                s->next = NULL;
                answer_release(m, s, withheld);
        }
}

/* CommitObserver.records_durable: the audit log is durable up to its durable seq (r >= 0), or
 * it broke (r < 0), and every answer waiting is withheld. */
static void records_durable(int r, void *userdata) {
        answers_release_ready(userdata, r < 0);
}

void ask_attach(Manager *m) {
        /* No answer waits for a budget checkpoint: the reservation is durable with its record. */
        static const CommitObserver observer = {
                .records_durable = records_durable,
        };

        commit_observe(m->commit, &observer, m);
}

static void step_done(RunRequest *req, void *userdata) {
        StepRun *s = userdata;
        Manager *m = s->manager;
        const RunResult *res = &req->result;
        Ticket *t = tickets_get_mutable(m->tickets, s->ticket);
        AskQueue *q = m->ask; /* s came from its backlog */
        int r;

        /* How long the run took from its admission: what the release schedule rounds. */
        s->ran_usec = clock_monotonic_usec() - s->admitted_usec;
        if (s->ran_usec == 0)
                s->ran_usec = 1;
        s->release_usec = release_time(m, s->admitted_usec, s->timeout_usec, s->ran_usec);
        snprintf(s->cause, sizeof(s->cause), "%s", step_cause_name(STEP_CAUSE_ANSWER));

        if (req->error == -ECONNABORTED) {
                /*
                 * The spawner took the run and never reported its end: the link went with the
                 * engine's exit (the spawner is gone, or a stop came with runs in flight). The
                 * plugin may well have run, so nothing is decided here: the slot stays charged on
                 * disk (fail closed) and the ticket stays running, for the next start to expire
                 * with reason "restart" and run the question again for free. Giving the slot back
                 * or ending the ticket here raced with the engine's own end: a kill could cost no
                 * charge, or leave a ticket ended that the next start no longer knew.
                 */
                goto finish;
        }
        if (req->error < 0) {
                fail_unrun(m, s,
                           req->error == -ECANCELED ? STEP_NOT_RUN_STOPPING : STEP_NOT_RUN_POOL);
                goto finish;
        }
        s->outcome = res->outcome;
        if (res->outcome == RUN_PLUGIN_ERROR)
                run_cause_format(res, s->cause, sizeof(s->cause));

        if (t) {
                TicketRun *tr = &t->runs[s->step];

                tr->ran = true;
                snprintf(tr->unit, sizeof(tr->unit), "%s", req->scoped ? req->unit : "");
                tr->wall_usec = res->wall_usec;
                tr->setup_usec = res->setup_usec;
                tr->scope_wait_usec = res->scope_wait_usec;
                tr->cpu_usec = res->cpu_usec;
                tr->peak_memory_bytes = res->peak_rss_bytes;
                tr->stderr_bytes = res->stderr_bytes;
                /* The detail is the human's, and kept only where the policy shows it. */
                if (m->policy->security_level >= 3 && res->detail_len > 0)
                        tr->detail = escape_bytes(res->detail, res->detail_len);
        }
        s->spawn_failed = res->cause == RUN_CAUSE_SPAWN;

        /*
         * The run's record is written now and made durable by the group commit, off the loop;
         * the answer leaves only after that, and so after the reservation's record, which went
         * to the disk beside the run (drain(), records_durable()). Without it the answer is
         * withheld.
         */
        r = audit_run(m, s, req, s->cause);
        if (r < 0) {
                log_error_errno(r, LOCKD_MESSAGE_AUDIT_RUN,
                                "ticket %s step %zu: the run record could not be written, the "
                                "answer is withheld: %m",
                                s->ticket, s->step);
                if (s->spawn_failed)
                        fail_spawn(m, s);
                else
                        withhold(m, s, STEP_WITHHELD_AUDIT);
                goto finish;
        }
        s->audit_seq = audit_get_seq(m->audit);
        s->next = NULL;
        if (q->recording_tail)
                q->recording_tail->next = s;
        else
                q->recording = s;
        q->recording_tail = s;
        s = NULL;
        commit_run(m->commit);
finish:
        run_request_free(req);
        step_run_free(s);
        runs_ended(&m->runs);
        drain(m);
}

/* The values of step's declared inputs in manifest order, from the plan's placeholder values. */
static void step_values(const Plan *p, const PlanStep *st, const Manifest *mf,
                        const SecBuf *const *values, const char *out[MANIFEST_INPUTS_MAX]) {
        for (size_t b = 0; b < st->n_bindings; b++) {
                const ManifestInput *in = manifest_find_input(mf, st->bindings[b].input);

                if (!in)
                        continue;
                for (size_t k = 0; k < p->n_placeholders; k++)
                        if (values && values[k] &&
                            strcmp(p->placeholders[k], st->bindings[b].placeholder) == 0)
                                out[in - mf->inputs] = (const char *)values[k]->data;
        }
}

/* The manifest of the plugin a plan step runs (approved: held by the plan). */
static const Manifest *step_manifest(const PlanStep *st) {
        const CatalogPlugin *plugin = st->plugin;

        return plugin->release->manifest;
}

/* The run request of step i with its inputs' fd 6 JSON; NULL when the step ended here (its
 * outcome set: a value that does not fit, or no memory). */
static RunRequest *step_request(Manager *m, Ticket *t, size_t i, const SecBuf *const *values) {
        const PlanStep *st = &t->plan->steps[i];
        const Manifest *mf = step_manifest(st);
        const char *vals[MANIFEST_INPUTS_MAX] = {};
        _cleanup_(run_request_freep) RunRequest *req = run_request_new();
        size_t bad = 0;
        int r;

        if (!req) {
                not_run(m, t, i, STEP_NOT_RUN_MEMORY);
                return NULL;
        }
        if (mf->n_inputs > 0) {
                step_values(t->plan, st, mf, values, vals);
                /* The value is checked against each input it is bound to; a misfit is named by
                 * its input only, never shown. */
                r = inputs_canonical_json(mf, vals, &req->inputs_json, &bad);
                if (r == -EINVAL || r == -ENOENT) {
                        set_outcome(m, t, i, -1, "input_invalid",
                                    step_cause_name(STEP_CAUSE_INPUT_INVALID));
                        return NULL;
                }
                if (r < 0) {
                        not_run(m, t, i, STEP_NOT_RUN_MEMORY);
                        return NULL;
                }
                req->inputs_len = strlen(req->inputs_json);
        }
        return TAKE_PTR(req);
}

/* Step i's way through the pool, keyed for its budget; NULL when the step ended here. */
static StepRun *step_run_new(Manager *m, Ticket *t, size_t i, const Handle *h) {
        const PlanStep *st = &t->plan->steps[i];
        const Manifest *mf = step_manifest(st);
        StepRun *s = calloc(1, sizeof(*s));
        int r;

        if (!s) {
                not_run(m, t, i, STEP_NOT_RUN_MEMORY);
                return NULL;
        }
        *s = (StepRun){.manager = m, .step = i, .agent = t->agent, .agent_pid = t->agent_pid};
        memcpy(s->ticket, t->id, sizeof(s->ticket));
        memcpy(s->digest, h->digest, sizeof(s->digest));
        memcpy(s->sha256, h->sha256, sizeof(s->sha256));
        r = budget_key_init(&s->key, mf->name, mf->version);
        for (size_t b = 0; r >= 0 && b < st->n_bindings; b++)
                r = budget_key_add(&s->key, st->bindings[b].input, st->bindings[b].placeholder);
        if (r < 0) {
                free(s);
                not_run(m, t, i, STEP_NOT_RUN_KEY);
                return NULL;
        }
        s->timeout_usec = mf->timeout_s * 1000000;
        s->admitted_usec = clock_monotonic_usec();
        return s;
}

/*
 * The same question again costs nothing and runs nothing, and is released after the same delay
 * as the run that answered it. A question bound to typed values is the same question only with
 * the same values: its answers are looked up by the keyed hash of them, so a value the human
 * typed since is a fresh run, never an earlier value's answer. True when the step ended here
 * (a cached answer, or no key).
 */
static bool step_cached(Manager *m, Ticket *t, StepRun *s, const RunRequest *req) {
        size_t i = s->step;
        BudgetEntry e;
        int r;

        if (t->plan->steps[i].n_bindings > 0) {
                s->by_value = true;
                r = answers_id(m->answers, s->digest, &s->key, req->inputs_json, req->inputs_len,
                               s->answer_id);
                if (r < 0) {
                        not_run(m, t, i, STEP_NOT_RUN_KEY);
                        return true;
                }
                r = answers_lookup(m->answers, s->answer_id, &e);
        } else
                r = budget_lookup(m->budget, s->digest, &s->key, &e);
        if (r <= 0)
                return false;
        uint64_t release = release_time(m, s->admitted_usec, s->timeout_usec, e.ran_usec);

        t->runs[i].cached = true;
        if (e.outcome == BUDGET_OUTCOME_PLUGIN_ERROR)
                set_outcome_at(m, t, i, -1, "plugin_error", step_cause_name(STEP_CAUSE_CACHED),
                               release);
        else
                set_outcome_at(m, t, i, e.outcome == BUDGET_OUTCOME_ONE, NULL,
                               step_cause_name(STEP_CAUSE_CACHED), release);
        return true;
}

/* Starts one step; see ask_start(). */
static void start_step(Manager *m, Ticket *t, size_t i, const SecBuf *const *values) {
        const CatalogPlugin *plugin = t->plan->steps[i].plugin;
        _cleanup_(run_request_freep) RunRequest *req = NULL;
        const Handle *h;
        StepRun *s;
        int r;

        /* The handle as it is now: a revocation or expiry since the submit is the human's no. */
        h = handles_get_for_agent(m->handles, t->plan->steps[i].handle_id, t->agent);
        if (!h) {
                set_outcome(m, t, i, -1, "denied", step_cause_name(STEP_CAUSE_HANDLE_GONE));
                return;
        }
        req = step_request(m, t, i, values);
        s = req ? step_run_new(m, t, i, h) : NULL;
        if (!s)
                return;
        if (step_cached(m, t, s, req)) {
                free(s);
                return;
        }
        /* The slot is taken now, its record written to the audit log and made durable by the
         * commit beside the run: no answer leaves (answers_release_ready()) before the record
         * is, so no crash gives an agent an answer for free. */
        r = budget_reserve_deferred(m->budget, s->digest, &s->key, h->budget);
        if (r < 0) {
                free(s);
                if (r == -EDQUOT || r == -ENOSPC)
                        set_outcome(m, t, i, -1, "budget_exhausted",
                                    step_cause_name(STEP_CAUSE_BUDGET_EXHAUSTED));
                else
                        not_run(m, t, i, STEP_NOT_RUN_BUDGET);
                return;
        }

        req->input_fd = handle_open_for_run(h);
        if (req->input_fd < 0) {
                budget_release(m->budget, s->digest, &s->key);
                free(s);
                not_run(m, t, i, STEP_NOT_RUN_HANDLE);
                return;
        }
        s->plugin = catalog_plugin_ref(plugin);
        req->image = &plugin->image;
        req->fairness_key = t->agent;
        /* ARCHITECTURE.md: lockd-run-<seq>.scope, which the audit's run record names. The name
         * says nothing of the ticket: an agent that lists units cannot tell its runs apart. */
        runs_name(&m->runs, req);
        req->done = step_done;
        s->req = TAKE_PTR(req);
        if (queue_push(m, s) < 0) {
                fail_unrun(m, s, STEP_NOT_RUN_MEMORY);
                step_run_free(s);
        }
}

void ask_start(Manager *m, Ticket *t, const SecBuf *const *values) {
        for (size_t i = 0; i < t->plan->n_steps; i++) {
                /* A step's outcome may end the ticket; it stays (running tickets are never
                 * dropped, and a done one only when a later submit needs room). */
                start_step(m, t, i, values);
        }
        drain(m);
}
