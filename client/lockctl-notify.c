/*
 * lockctl notify: a freedesktop notification for each ticket that waits for the human, sent to
 * org.freedesktop.Notifications on the session bus (sd-bus), with the actions Review… and Deny;
 * meant to run as a systemd --user service of the graphical session (lockctl-notify.service).
 * See ARCHITECTURE.md, the human's side.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "escape.h"
#include "lockctl-console.h"
#include "lockctl-notify.h"
#include "lockctl-pages.h"
#include "lockctl-pinentry.h"
#include "lockctl-values.h"
#include "lockctl-watch.h"
#include "lockctl.h"
#include "macro.h"
#include "plan.h"

#define NOTIFY_NAME  "org.freedesktop.Notifications"
#define NOTIFY_PATH  "/org/freedesktop/Notifications"
#define NOTIFY_IFACE "org.freedesktop.Notifications"
#define DBUS_NAME    "org.freedesktop.DBus"
#define DBUS_PATH    "/org/freedesktop/DBus"
#define DBUS_IFACE   "org.freedesktop.DBus"

/* Tickets followed at once; lockd keeps at most 4096, a human answers far fewer. Past this the
 * rest are counted in one grouped notification. */
#define NOTES_MAX 256
/* How long new tickets are gathered before they are shown: a burst becomes one group. */
#define GATHER_USEC (300ULL * 1000)
/* More new tickets than this in one gathering are shown as one notification. */
#define GROUP_MIN 3
/* The longest ticket id kept. */
#define NOTE_ID_MAX 64
/* The longest body sent; servers truncate long ones anyway. */
#define BODY_MAX 4096
/* How long the first answer of WatchTickets may take. */
#define WATCH_LIVE_TIMEOUT_MS 10000
/* Capabilities read from the server at most. */
#define CAPS_MAX 64
/* The default terminal for Review… without pinentry (Debian's alternative). */
#define TERMINAL_DEFAULT "x-terminal-emulator -e"
/* Words of --terminal at most. */
#define TERMINAL_WORDS_MAX 16

typedef struct Note {
        char id[NOTE_ID_MAX];
        uint32_t nid;    /* the server's id of its notification, 0 while none */
        bool asked;      /* a Notify is on its way (or answered) */
        bool decided;    /* no longer pending: close the notification once its id is known */
        bool grouped;    /* shown in the group's notification, not one of its own */
        uint64_t serial; /* the ticket's place in the order tickets arrived */
} Note;

typedef struct Notifier {
        sd_event *event;
        sd_bus *bus;
        sd_event_source *watch_source, *gather;
        Watch watch;
        Note notes[NOTES_MAX];
        size_t n_notes;
        uint64_t serial;
        uint32_t group_nid; /* the grouped notification, 0 while none */
        bool group_asked;
        char owner[256];      /* the unique name owning org.freedesktop.Notifications, "" if none */
        bool actions;         /* the server shows actions */
        bool markup;          /* the server reads markup in the body: <, > and & are escaped */
        const char *pinentry; /* Review… runs lockctl approve --pinentry=this, NULL: a terminal */
        const char *terminal; /* the terminal command when not pinentry */
        char self[PATH_MAX];  /* this lockctl, for Review… */
        int exit_code;
} Notifier;

/* The ticket id's note, or NULL. */
static Note *note_by_id(Notifier *n, const char *id) {
        for (size_t i = 0; i < n->n_notes; i++)
                if (strcmp(n->notes[i].id, id) == 0)
                        return &n->notes[i];
        return NULL;
}

/* The note whose own notification the server numbered nid (never a grouped one), or NULL. */
static Note *note_by_nid(Notifier *n, uint32_t nid) {
        for (size_t i = 0; nid != 0 && i < n->n_notes; i++)
                if (n->notes[i].nid == nid && !n->notes[i].grouped)
                        return &n->notes[i];
        return NULL;
}

/* Forgets note; the notes after it move down one. */
static void note_drop(Notifier *n, Note *note) {
        size_t i = (size_t)(note - n->notes);

        memmove(note, note + 1, (n->n_notes - i - 1) * sizeof(Note));
        n->n_notes--;
}

/* Appends s to the body (escaped for markup when the server reads it), within BODY_MAX. */
static void body_put(const Notifier *n, FILE *f, const char *s, size_t *used) {
        for (; *s && *used < BODY_MAX - 8; s++) {
                const char *e = NULL;

                if (n->markup)
                        e = *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : *s == '&' ? "&amp;" : NULL;
                if (e) {
                        fputs(e, f);
                        *used += strlen(e);
                } else {
                        fputc(*s, f);
                        (*used)++;
                }
        }
}

/*
 * The text of ticket t's notification: the agent, each question and file (ticket_summary(),
 * escaped printable text), the values it asks for by the plugin's input (plugins: ListPlugins',
 * may be NULL), and without actions how to answer.
 */
static int ticket_body(const Notifier *n, const json_t *t, const json_t *plugins, bool *ret_values,
                       char **ret) {
        _cleanup_free_ char *summary = NULL, *out = NULL;
        json_t *phs = json_object_get(t, "placeholders"), *v;
        size_t size = 0, used = 0, i;
        bool values = false;
        FILE *f;

        if (ticket_summary(t, false, &summary) < 0)
                return -ENOMEM;
        f = open_memstream(&out, &size);
        if (!f)
                return -ENOMEM;
        body_put(n, f, summary, &used);
        json_array_foreach(phs, i, v) {
                ValueLabel l = {};

                if (i >= PLAN_PLACEHOLDERS_MAX || !json_is_string(v))
                        break;
                _cleanup_free_ char *ph = NULL;

                if (value_label_make(t, plugins, json_string_value(v), &l) < 0)
                        continue;
                ph = escape_bytes(json_string_value(v), strnlen(json_string_value(v), 64));
                if (!values)
                        body_put(n, f, "\nTyped at the approval:\n", &used);
                values = true;
                /* The plugin's input first; the agent's placeholder only quoted, as its words. */
                body_put(n, f, "  ", &used);
                body_put(n, f, l.prompt, &used);
                body_put(n, f, ", which the agent calls \"${", &used);
                body_put(n, f, ph ? ph : "?", &used);
                body_put(n, f, "}\" (its wording)\n", &used);
                value_label_done(&l);
        }
        if (!n->actions)
                body_put(n, f, "\nTo approve or deny it, run: lockctl console\n", &used);
        if (fclose(f) != 0)
                return -ENOMEM;
        *ret_values = values;
        *ret = TAKE_PTR(out);
        return 0;
}

/* A Notify on its way for one ticket: whose, and for which notifier. */
typedef struct Asking {
        Notifier *n;
        char id[NOTE_ID_MAX];
} Asking;

static int on_notify_reply(sd_bus_message *m, void *userdata, sd_bus_error *error);
static int on_group_reply(sd_bus_message *m, void *userdata, sd_bus_error *error);

/*
 * Sends Notify: summary, body, the actions (key, label pairs; none when the server shows none),
 * urgency critical, no expiry (the server may still expire it: nothing is decided then).
 */
static int send_notify(Notifier *n, const char *summary, const char *body,
                       const char *const *actions, sd_bus_message_handler_t cb, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = sd_bus_message_new_method_call(n->bus, &m, NOTIFY_NAME, NOTIFY_PATH, NOTIFY_IFACE,
                                           "Notify");
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "susss", "lockd", (uint32_t)0, "dialog-password", summary,
                                  body);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(m, 'a', "s");
        for (size_t i = 0; r >= 0 && n->actions && actions && actions[i]; i++)
                r = sd_bus_message_append(m, "s", actions[i]);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = sd_bus_message_append(m, "a{sv}", 2, "urgency", "y", (uint8_t)2, "category",
                                          "s", "x-lockd.ticket");
        if (r >= 0)
                r = sd_bus_message_append(m, "i", (int32_t)0);
        if (r < 0)
                return r;
        return sd_bus_call_async(n->bus, NULL, m, cb, userdata, 0);
}

/* Shows note's ticket t in a notification of its own. */
static int notify_ticket(Notifier *n, Note *note, const json_t *t, const json_t *plugins) {
        /* "default" is the notification's own click; both open the approval. No action ever
         * approves: an approval is made where the human sees the whole question and types what
         * it needs (pinentry or a terminal). */
        static const char *const actions[] = {"default", "Review…", "deny", "Deny", NULL};
        _cleanup_free_ char *body = NULL;
        Asking *copy;
        bool values;
        int r;

        r = ticket_body(n, t, plugins, &values, &body);
        if (r < 0)
                return r;
        copy = malloc(sizeof(Asking));
        if (!copy)
                return -ENOMEM;
        copy->n = n;
        snprintf(copy->id, sizeof(copy->id), "%s", note->id);
        r = send_notify(n,
                        values ? "An agent asks a question that needs a typed value"
                               : "An agent asks a question",
                        body, actions, on_notify_reply, copy);
        if (r < 0) {
                free(copy);
                return r;
        }
        note->asked = true;
        return 0;
}

/* Shows the tickets not yet shown as one notification: a burst, or more than NOTES_MAX. */
static int notify_group(Notifier *n, size_t count) {
        static const char *const actions[] = {"default", "Review…", NULL};
        _cleanup_free_ char *summary = NULL, *body = NULL;
        int r;

        if (n->group_asked)
                return 0; /* one group at a time; it says to open the console */
        if (asprintf(&summary, "%zu agents' questions wait for you", count) < 0 ||
            asprintf(&body, "%zu tickets arrived at once.\nReview them in lockctl console.%s",
                     count, n->actions ? "" : "\nRun: lockctl console") < 0)
                return -ENOMEM;
        r = send_notify(n, summary, body, actions, on_group_reply, n);
        if (r >= 0)
                n->group_asked = true;
        return r;
}

static void close_notification(Notifier *n, uint32_t nid) {
        if (nid != 0 && n->owner[0])
                (void)sd_bus_call_method_async(n->bus, NULL, NOTIFY_NAME, NOTIFY_PATH, NOTIFY_IFACE,
                                               "CloseNotification", NULL, NULL, "u", nid);
}

/* The group's notification goes once none of its tickets waits any more. */
static void group_check(Notifier *n) {
        for (size_t i = 0; i < n->n_notes; i++)
                if (n->notes[i].grouped && !n->notes[i].decided)
                        return;
        for (size_t i = n->n_notes; i > 0; i--)
                if (n->notes[i - 1].grouped)
                        note_drop(n, &n->notes[i - 1]);
        if (n->group_nid) {
                close_notification(n, n->group_nid);
                n->group_nid = 0;
                n->group_asked = false;
        }
}

/* Notify's answer for one ticket: its notification's id, kept, or closed at once when the ticket
 * was decided meanwhile. An error or an id of 0 leaves the ticket to be shown again. */
static int on_notify_reply(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        _cleanup_free_ Asking *a = userdata;
        Notifier *n = a->n;
        Note *note = note_by_id(n, a->id);
        uint32_t nid = 0;

        if (sd_bus_message_is_method_error(m, NULL) || sd_bus_message_read(m, "u", &nid) < 0 ||
            nid == 0) {
                if (note)
                        note->asked = false; /* shown again when the server is back */
                return 0;
        }
        if (!note) {
                close_notification(n, nid);
                return 0;
        }
        note->nid = nid;
        if (note->decided) {
                close_notification(n, nid);
                note_drop(n, note);
        }
        return 0;
}

/* Notify's answer for the group: its id, or another try at the next gathering. */
static int on_group_reply(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Notifier *n = userdata;
        uint32_t nid = 0;

        if (sd_bus_message_is_method_error(m, NULL) || sd_bus_message_read(m, "u", &nid) < 0 ||
            nid == 0) {
                n->group_asked = false;
                return 0;
        }
        n->group_nid = nid;
        group_check(n);
        return 0;
}

/* The tickets gathered: each its own notification, or one for them all when many came. */
static int on_gather(sd_event_source *s, uint64_t usec, void *userdata) {
        Notifier *n = userdata;
        _cleanup_(json_decrefp) json_t *plugins = NULL;
        size_t fresh = 0;

        if (!n->owner[0])
                return 0; /* no server: shown when one appears */
        for (size_t i = 0; i < n->n_notes; i++)
                if (!n->notes[i].asked && !n->notes[i].decided && !n->notes[i].grouped)
                        fresh++;
        /* The plugins' inputs, for the values' kinds and sizes. */
        if (fresh > 0 && fresh <= GROUP_MIN)
                plugins = values_plugins();
        for (size_t i = 0; i < n->n_notes; i++) {
                Note *note = &n->notes[i];
                _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
                _cleanup_(json_decrefp) json_t *params = NULL, *reply = NULL;
                _cleanup_free_ char *error = NULL;

                if (note->asked || note->decided || note->grouped)
                        continue;
                if (fresh > GROUP_MIN) {
                        note->grouped = true;
                        continue;
                }
                /* The whole ticket, as lockd has it now. */
                params = json_pack("{s:s}", "ticket", note->id);
                if (!params || varlink_client_connect(console_socket_path(), &c) < 0)
                        continue;
                varlink_client_set_timeout(c, 30ULL * 1000 * 1000);
                if (varlink_client_call(c, CONSOLE_INTERFACE ".GetTicket", params, NULL, 0, &reply,
                                        &error) < 0 ||
                    error) {
                        note->decided = true; /* gone meanwhile */
                        continue;
                }
                if (strcmp(console_json_string(json_object_get(reply, "ticket"), "state") ?: "",
                           "pending") != 0) {
                        note->decided = true;
                        continue;
                }
                (void)notify_ticket(n, note, json_object_get(reply, "ticket"), plugins);
        }
        for (size_t i = n->n_notes; i > 0; i--)
                if (n->notes[i - 1].decided && !n->notes[i - 1].asked && !n->notes[i - 1].grouped)
                        note_drop(n, &n->notes[i - 1]);
        if (fresh > GROUP_MIN)
                (void)notify_group(n, fresh);
        return 0;
}

/* Gathers for GATHER_USEC from now, unless a gathering is under way. */
static void gather_soon(Notifier *n) {
        uint64_t now;

        if (n->gather) {
                int enabled = SD_EVENT_OFF;

                (void)sd_event_source_get_enabled(n->gather, &enabled);
                if (enabled != SD_EVENT_OFF)
                        return;
                (void)sd_event_now(n->event, CLOCK_MONOTONIC, &now);
                (void)sd_event_source_set_time(n->gather, now + GATHER_USEC);
                (void)sd_event_source_set_enabled(n->gather, SD_EVENT_ONESHOT);
                return;
        }
        (void)sd_event_now(n->event, CLOCK_MONOTONIC, &now);
        (void)sd_event_add_time(n->event, &n->gather, CLOCK_MONOTONIC, now + GATHER_USEC, 0,
                                on_gather, n);
}

/*
 * Whether id can be a ticket's id: letters, digits and '-', not first. It becomes an argument of
 * the review's lockctl approve, where "--yes" would skip the human's confirmation: nothing
 * lockd sends is trusted to be harmless there.
 */
static bool id_valid(const char *id) {
        size_t len = strlen(id);

        if (len == 0 || len >= NOTE_ID_MAX || id[0] == '-')
                return false;
        return strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") == len;
}

/* A ticket from the watch or the first list: followed while pending, its notification closed
 * when it is decided elsewhere, expires or is cancelled. */
static void take_ticket(Notifier *n, const json_t *t) {
        const char *id = console_json_string(t, "ticket"), *state = console_json_string(t, "state");
        bool pending = state && strcmp(state, "pending") == 0;
        Note *note;

        if (!id || !id_valid(id))
                return;
        note = note_by_id(n, id);
        if (pending && !note) {
                if (n->n_notes >= NOTES_MAX)
                        return; /* the group's count stays as it was: the console lists all */
                note = &n->notes[n->n_notes++];
                *note = (Note){.serial = ++n->serial};
                snprintf(note->id, sizeof(note->id), "%s", id);
                gather_soon(n);
                return;
        }
        if (pending || !note || note->decided)
                return;
        note->decided = true;
        if (note->grouped) {
                group_check(n);
                return;
        }
        if (note->nid) {
                close_notification(n, note->nid);
                note_drop(n, note);
        } else if (!note->asked)
                note_drop(n, note);
        /* else: closed once the Notify's answer names it (on_notify_reply) */
}

/* Denies ticket id: the human's Deny on its notification. */
static void deny_ticket(const char *id) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_(json_decrefp) json_t *params = json_pack("{s:s}", "ticket", id), *reply = NULL;
        _cleanup_free_ char *error = NULL;

        if (!params || varlink_client_connect(console_socket_path(), &c) < 0) {
                fprintf(stderr, "lockctl notify: cannot reach lockd to deny a ticket\n");
                return;
        }
        varlink_client_set_timeout(c, 30ULL * 1000 * 1000);
        if (varlink_client_call(c, CONSOLE_INTERFACE ".Deny", params, NULL, 0, &reply, &error) <
                    0 ||
            error)
                fprintf(stderr, "lockctl notify: the deny was refused: %s\n",
                        error ? error : "lost the connection");
}

/*
 * Opens the approval of ticket id (NULL: the console, for a group) in a process of its own:
 * lockctl approve --pinentry, or the terminal command running lockctl approve (or console).
 */
static void review(Notifier *n, const char *id) {
        char *argv[TERMINAL_WORDS_MAX + 8];
        _cleanup_free_ char *words = NULL, *pin = NULL;
        size_t k = 0;
        pid_t pid;

        if (n->pinentry && id) {
                if (asprintf(&pin, "--pinentry=%s", n->pinentry) < 0)
                        return;
        } else {
                char *save = NULL;

                words = strdup(n->terminal);
                if (!words)
                        return;
                for (char *w = strtok_r(words, " \t", &save); w && k < TERMINAL_WORDS_MAX;
                     w = strtok_r(NULL, " \t", &save))
                        argv[k++] = w;
        }
        argv[k++] = n->self;
        argv[k++] = (char *)"--socket";
        argv[k++] = (char *)console_socket_path();
        if (id) {
                argv[k++] = (char *)"approve";
                argv[k++] = (char *)id;
                if (pin)
                        argv[k++] = pin;
        } else
                argv[k++] = (char *)"console";
        argv[k] = NULL;
        pid = fork();
        if (pid < 0) {
                fprintf(stderr, "lockctl notify: cannot start the review: %s\n", strerror(errno));
                return;
        }
        if (pid == 0) {
                int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

                /* Its own session: not this service's stdin, and its end is reaped by no one
                 * but the kernel (SIGCHLD is ignored here, and reset for the child). */
                signal(SIGCHLD, SIG_DFL);
                (void)setsid();
                if (null >= 0)
                        (void)dup2(null, STDIN_FILENO);
                (void)close_range(3, ~0U, 0);
                execvp(argv[0], argv);
                _exit(127);
        }
}

/*
 * ActionInvoked(id, action_key). Only from the unique name that owns org.freedesktop.Notifications
 * now: any other connection on the session bus can send the same signal, and a Deny in the
 * human's name must come from what the human clicked. A NotificationClosed (a timeout, a
 * dismissal) decides nothing: a ticket is decided only by the human's action.
 */
static int on_action(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Notifier *n = userdata;
        const char *sender = sd_bus_message_get_sender(m), *key = NULL;
        uint32_t nid = 0;
        Note *note;

        if (!sender || !n->owner[0] || strcmp(sender, n->owner) != 0)
                return 0;
        if (sd_bus_message_read(m, "us", &nid, &key) < 0 || !key || strlen(key) > 32)
                return 0;
        /* The keys are ours ("default", "deny"); a server that hands back the label's spelling
         * ("Deny", "Review") means the same button. Anything else is no answer. */
        if (nid != 0 && nid == n->group_nid) {
                if (strcasecmp(key, "default") == 0 || strcasecmp(key, "review") == 0)
                        review(n, NULL);
                return 0;
        }
        note = note_by_nid(n, nid);
        if (!note || note->decided)
                return 0;
        if (strcasecmp(key, "deny") == 0)
                deny_ticket(note->id);
        else if (strcasecmp(key, "default") == 0 || strcasecmp(key, "review") == 0)
                review(n, note->id);
        return 0;
}

/* The server's capabilities: whether it shows actions and reads markup. */
static int read_capabilities(Notifier *n) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        const char *cap;
        int r, count = 0;

        n->actions = n->markup = false;
        r = sd_bus_call_method(n->bus, NOTIFY_NAME, NOTIFY_PATH, NOTIFY_IFACE, "GetCapabilities",
                               &e, &reply, "");
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, 'a', "s");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(reply, "s", &cap)) > 0 && count++ < CAPS_MAX) {
                if (strcmp(cap, "actions") == 0)
                        n->actions = true;
                else if (strcmp(cap, "body-markup") == 0)
                        n->markup = true;
        }
        return r < 0 ? r : 0;
}

/*
 * The notification server changed (appeared, restarted, went): its notifications went with the
 * old owner, so every pending ticket is shown anew by the new one.
 */
static void set_owner(Notifier *n, const char *owner) {
        snprintf(n->owner, sizeof(n->owner), "%s",
                 owner && strlen(owner) < sizeof(n->owner) ? owner : "");
        for (size_t i = 0; i < n->n_notes; i++) {
                n->notes[i].nid = 0;
                n->notes[i].asked = false;
                n->notes[i].grouped = false;
        }
        n->group_nid = 0;
        n->group_asked = false;
        if (n->owner[0]) {
                if (read_capabilities(n) < 0)
                        fprintf(stderr, "lockctl notify: the notification server did not say "
                                        "what it shows; sending notifications without actions\n");
                gather_soon(n);
        }
}

/* NameOwnerChanged, matched with sender org.freedesktop.DBus: the bus itself stamps the sender,
 * so no other connection can forge the change of owner that on_action() trusts. */
static int on_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Notifier *n = userdata;
        const char *name, *old, *new;

        if (sd_bus_message_read(m, "sss", &name, &old, &new) < 0 || strcmp(name, NOTIFY_NAME) != 0)
                return 0;
        set_owner(n, new);
        return 0;
}

/* WatchTickets' answers: each ticket to take_ticket(); the feed's end ends the loop (exit 1). */
static int on_watch(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Notifier *n = userdata;
        int r = watch_read(&n->watch);

        for (;;) {
                _cleanup_(json_decrefp) json_t *t = NULL;
                _cleanup_free_ char *error = NULL;
                int k = watch_next(&n->watch, &t, &error);

                if (k == 0)
                        break;
                if (k < 0) {
                        fprintf(stderr, "lockctl notify: lockd ended the ticket feed%s%s\n",
                                error ? ": " : "", error ? error : "");
                        n->exit_code = LOCKCTL_EXIT_FAIL;
                        return sd_event_exit(n->event, 0);
                }
                if (t)
                        take_ticket(n, t);
        }
        if (r < 0) {
                fprintf(stderr, "lockctl notify: lost the connection to lockd: %s\n", strerror(-r));
                n->exit_code = LOCKCTL_EXIT_FAIL;
                return sd_event_exit(n->event, 0);
        }
        return 0;
}

/* The watch, live (its first answer), then the tickets pending before it. An exit code. */
static int load(Notifier *n) {
        _cleanup_(varlink_client_freep) VarlinkClient *wc = NULL, *lc = NULL;
        _cleanup_(json_decrefp) json_t *reply = NULL, *first = NULL, *list = NULL;
        _cleanup_free_ char *error = NULL;
        json_t *t;
        size_t i;
        int r;

        r = console_connect(&wc);
        if (r != 0)
                return r;
        r = watch_start(&n->watch, TAKE_PTR(wc));
        while (r >= 0) {
                r = watch_next(&n->watch, &first, &error);
                if (r != 0)
                        break;
                r = poll(&(struct pollfd){.fd = watch_fd(&n->watch), .events = POLLIN}, 1,
                         WATCH_LIVE_TIMEOUT_MS);
                if (r == 0)
                        r = -ETIMEDOUT;
                else if (r < 0)
                        r = errno == EINTR ? 0 : negative_errno();
                else
                        r = watch_read(&n->watch);
        }
        if (r < 0) {
                fprintf(stderr, "lockctl notify: WatchTickets failed: %s\n",
                        error ? error : strerror(-r));
                return LOCKCTL_EXIT_FAIL;
        }
        r = console_connect(&lc);
        if (r != 0)
                return r;
        /* ListTickets lists the pending tickets first: as many as are followed at once. */
        r = console_tickets_load(lc, NOTES_MAX, &list, &error, &reply);
        if (r < 0) {
                fprintf(stderr, "lockctl notify: ListTickets failed: %s\n", strerror(-r));
                return LOCKCTL_EXIT_FAIL;
        }
        if (error)
                return console_print_error("notify", error, reply);
        json_array_foreach(list, i, t) {
                take_ticket(n, t);
        }
        return 0;
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

/* The arguments: --pinentry[=PROGRAM] or --terminal COMMAND. 0, or an exit code after usage. */
static int notify_args(Notifier *n, int argc, char **argv) {
        static const char usage[] =
                "usage: lockctl notify [--pinentry[=PROGRAM] | --terminal COMMAND]";

        n->pinentry = PINENTRY_DEFAULT;
        n->terminal = TERMINAL_DEFAULT;
        for (int i = 0; i < argc; i++) {
                const char *v = NULL;
                int r = lockctl_option(argc, argv, &i, "--terminal", &v);

                if (r < 0 || (r > 0 && !*v)) {
                        fprintf(stderr, "%s\n", usage);
                        return LOCKCTL_EXIT_USAGE;
                }
                if (r > 0) {
                        n->terminal = v;
                        n->pinentry = NULL;
                } else if (strcmp(argv[i], "--pinentry") == 0)
                        n->pinentry = PINENTRY_DEFAULT;
                else if (strncmp(argv[i], "--pinentry=", 11) == 0 && argv[i][11])
                        n->pinentry = argv[i] + 11;
                else {
                        fprintf(stderr, "lockctl: unknown argument '%s'\n%s\n", argv[i], usage);
                        return LOCKCTL_EXIT_USAGE;
                }
        }
        return 0;
}

int verb_notify(int argc, char **argv) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        struct sigaction nocld = {.sa_handler = SIG_IGN, .sa_flags = SA_NOCLDWAIT};
        _cleanup_free_ Notifier *n = calloc(1, sizeof(Notifier));
        const char *owner = NULL;
        sigset_t mask;
        ssize_t len;
        int r;

        if (!n)
                return LOCKCTL_EXIT_FAIL;
        r = notify_args(n, argc, argv);
        if (r != 0)
                return r;
        len = readlink("/proc/self/exe", n->self, sizeof(n->self) - 1);
        if (len <= 0) {
                fprintf(stderr, "lockctl notify: cannot find this program: %s\n", strerror(errno));
                return LOCKCTL_EXIT_FAIL;
        }
        n->self[len] = 0;
        /* The reviews started here end on their own; the kernel reaps them. */
        (void)sigaction(SIGCHLD, &nocld, NULL);
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        (void)sigprocmask(SIG_BLOCK, &mask, NULL);

        r = sd_event_default(&n->event);
        if (r >= 0)
                r = sd_event_add_signal(n->event, NULL, SIGTERM, on_signal, NULL);
        if (r >= 0)
                r = sd_event_add_signal(n->event, NULL, SIGINT, on_signal, NULL);
        if (r < 0) {
                fprintf(stderr, "lockctl notify: %s\n", strerror(-r));
                return LOCKCTL_EXIT_FAIL;
        }
        /* The session bus of the human's graphical session (DBUS_SESSION_BUS_ADDRESS). */
        r = sd_bus_open_user(&n->bus);
        if (r < 0) {
                fprintf(stderr, "lockctl notify: cannot connect to the session bus: %s\n",
                        strerror(-r));
                r = LOCKCTL_EXIT_FAIL;
                goto out;
        }
        r = sd_bus_attach_event(n->bus, n->event, 0);
        /* Every ActionInvoked on the path, whoever sent it: on_action() checks the sender itself
         * against the name's owner, the one place that decision is made. */
        if (r >= 0)
                r = sd_bus_match_signal(n->bus, NULL, NULL, NOTIFY_PATH, NOTIFY_IFACE,
                                        "ActionInvoked", on_action, n);
        if (r >= 0)
                r = sd_bus_match_signal(n->bus, NULL, DBUS_NAME, DBUS_PATH, DBUS_IFACE,
                                        "NameOwnerChanged", on_owner_changed, n);
        if (r < 0) {
                fprintf(stderr, "lockctl notify: the session bus refused: %s\n", strerror(-r));
                r = LOCKCTL_EXIT_FAIL;
                goto out;
        }
        if (sd_bus_call_method(n->bus, DBUS_NAME, DBUS_PATH, DBUS_IFACE, "GetNameOwner", &e, &reply,
                               "s", NOTIFY_NAME) >= 0)
                (void)sd_bus_message_read(reply, "s", &owner);
        if (!owner)
                fprintf(stderr, "lockctl notify: no notification server on the session bus yet; "
                                "waiting for one\n");
        set_owner(n, owner);
        r = load(n);
        if (r != 0)
                goto out;
        r = sd_event_add_io(n->event, &n->watch_source, watch_fd(&n->watch), EPOLLIN, on_watch, n);
        if (r < 0) {
                fprintf(stderr, "lockctl notify: %s\n", strerror(-r));
                r = LOCKCTL_EXIT_FAIL;
                goto out;
        }
        n->exit_code = LOCKCTL_EXIT_OK;
        r = sd_event_loop(n->event);
        r = r < 0 ? LOCKCTL_EXIT_FAIL : n->exit_code;
        /* What is shown goes with this service. */
        for (size_t i = 0; i < n->n_notes; i++)
                if (n->notes[i].nid && !n->notes[i].grouped)
                        (void)sd_bus_call_method(n->bus, NOTIFY_NAME, NOTIFY_PATH, NOTIFY_IFACE,
                                                 "CloseNotification", NULL, NULL, "u",
                                                 n->notes[i].nid);
out:
        n->watch_source = sd_event_source_unref(n->watch_source);
        n->gather = sd_event_source_unref(n->gather);
        watch_done(&n->watch);
        n->bus = sd_bus_flush_close_unref(n->bus);
        n->event = sd_event_unref(n->event);
        return r;
}
