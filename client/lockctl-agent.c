/*
 * lockctl agent run: starts an agent as a transient service of the manager lockd uses, confined so
 * that it cannot watch plugin runs and lockd accepts it (ARCHITECTURE.md, what an agent can
 * learn).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "fd-util.h"
#include "lockctl-console.h"
#include "lockctl.h"
#include "macro.h"
#include "scope.h"

#define SYSTEMD_DEST    "org.freedesktop.systemd1"
#define SYSTEMD_PATH    "/org/freedesktop/systemd1"
#define SYSTEMD_MANAGER "org.freedesktop.systemd1.Manager"
#define PROPERTIES_MAX  64

static const char usage_text[] =
        "usage: lockctl [--socket PATH] agent run --user USER [--property NAME=VALUE]...\n"
        "                 [--bus ADDRESS] [--] COMMAND [ARG]...\n"
        "\n"
        "Starts COMMAND as USER in a transient service of the manager lockd uses, with\n"
        "ProtectProc=invisible, ProcSubset=pid, TemporaryFileSystem=/sys/fs/cgroup and\n"
        "NoNewPrivileges=yes, its standard input, output and error this terminal's (or pipes),\n"
        "and exits with COMMAND's status. Its arguments reach it byte for byte.\n"
        "\n"
        "  --user USER          the agent's user (a name, or a uid with a passwd entry)\n"
        "  --property NAME=VALUE\n"
        "                       one more unit property: Description, WorkingDirectory, Group,\n"
        "                       SupplementaryGroups, Environment, Nice, MemoryMax, TasksMax,\n"
        "                       RuntimeMaxSec, PrivateTmp, PrivateNetwork, PrivateDevices,\n"
        "                       ProtectHome, ProtectSystem, ReadOnlyPaths, ReadWritePaths,\n"
        "                       InaccessiblePaths\n"
        "  --bus ADDRESS        the manager (default: the one lockd's Status names)\n";

typedef enum PropKind {
        PROP_STRING,
        PROP_STRV, /* whitespace-separated, each repeat adds more */
        PROP_BOOL,
        PROP_INT,
        PROP_BYTES, /* a size with K, M, G or T (powers of 1024), or infinity */
        PROP_COUNT, /* a number, or infinity */
        PROP_SECONDS,
} PropKind;

typedef struct PropSpec {
        const char *name;
        PropKind kind;
        const char *bus_name; /* the D-Bus property when it differs (RuntimeMaxSec) */
} PropSpec;

static const PropSpec prop_specs[] = {
        {"Description", PROP_STRING, NULL},
        {"WorkingDirectory", PROP_STRING, NULL},
        {"Group", PROP_STRING, NULL},
        {"SupplementaryGroups", PROP_STRV, NULL},
        {"Environment", PROP_STRV, NULL},
        {"Nice", PROP_INT, NULL},
        {"MemoryMax", PROP_BYTES, NULL},
        {"TasksMax", PROP_COUNT, NULL},
        {"RuntimeMaxSec", PROP_SECONDS, "RuntimeMaxUSec"},
        {"PrivateTmp", PROP_BOOL, NULL},
        {"PrivateNetwork", PROP_BOOL, NULL},
        {"PrivateDevices", PROP_BOOL, NULL},
        {"ProtectHome", PROP_STRING, NULL},
        {"ProtectSystem", PROP_STRING, NULL},
        {"ReadOnlyPaths", PROP_STRV, NULL},
        {"ReadWritePaths", PROP_STRV, NULL},
        {"InaccessiblePaths", PROP_STRV, NULL},
};

/* What lockctl sets itself: a --property that changed it could undo the confinement. */
static const char *const own_props[] = {
        "User",          "ProtectProc",      "ProcSubset", "TemporaryFileSystem", "NoNewPrivileges",
        "ExecStart",     "ExecStartEx",      "Type",       "StandardInput",       "StandardOutput",
        "StandardError", "UnsetEnvironment", NULL,
};

/*
 * The human's display and session bus: an agent that could reach them could inject keys into
 * the approval dialog (an X11 client may send events to any window of its server), read the
 * screen, or answer a notification in the human's name. The unit unsets them whatever the
 * manager's own environment holds (a user manager gets them from the graphical session), and
 * --property Environment= may not set them (ARCHITECTURE.md, the human's side).
 */
static const char *const display_env[] = {
        "DISPLAY",    "WAYLAND_DISPLAY",          "WAYLAND_SOCKET",
        "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS", NULL,
};

/* The first name of display_env that the whitespace-separated NAME=VALUE words of value set, or
 * NULL. */
static const char *sets_display_env(const char *value) {
        for (const char *w = value; *w;) {
                size_t len = strcspn(w, " \t");

                for (size_t i = 0; display_env[i]; i++) {
                        size_t n = strlen(display_env[i]);

                        if (len > n && strncmp(w, display_env[i], n) == 0 && w[n] == '=')
                                return display_env[i];
                }
                w += len;
                w += strspn(w, " \t");
        }
        return NULL;
}

typedef struct Prop {
        const PropSpec *spec;
        const char *value;
} Prop;

/* A size with an optional K, M, G or T suffix (powers of 1024), or "infinity". */
static int parse_u64(const char *s, bool bytes, uint64_t *ret) {
        uint64_t v, mul = 1;
        char *end;

        if (strcmp(s, "infinity") == 0) {
                *ret = UINT64_MAX;
                return 0;
        }
        if (!*s || *s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno != 0)
                return -EINVAL;
        if (bytes && *end) {
                static const char units[] = "KMGT";
                const char *u = strchr(units, *end);

                if (!u || end[1] != 0)
                        return -EINVAL;
                for (const char *p = units; p <= u; p++)
                        mul *= 1024;
        } else if (*end)
                return -EINVAL;
        if (v > UINT64_MAX / mul)
                return -ERANGE;
        *ret = v * mul;
        return 0;
}

static int append_strv_words(sd_bus_message *m, const char *value) {
        _cleanup_free_ char *copy = strdup(value);
        char *save = NULL;
        int r;

        if (!copy)
                return -ENOMEM;
        r = sd_bus_message_open_container(m, 'a', "s");
        for (char *w = strtok_r(copy, " \t", &save); r >= 0 && w; w = strtok_r(NULL, " \t", &save))
                r = sd_bus_message_append(m, "s", w);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        return r;
}

/* Appends one --property as (sv). -EINVAL with a message printed when its value does not fit. */
static int append_prop(sd_bus_message *m, const Prop *p) {
        const char *name = p->spec->bus_name ? p->spec->bus_name : p->spec->name;
        uint64_t u;
        int r;

        switch (p->spec->kind) {
        case PROP_STRING:
                return sd_bus_message_append(m, "(sv)", name, "s", p->value);
        case PROP_STRV:
                r = sd_bus_message_open_container(m, 'r', "sv");
                if (r >= 0)
                        r = sd_bus_message_append(m, "s", name);
                if (r >= 0)
                        r = sd_bus_message_open_container(m, 'v', "as");
                if (r >= 0)
                        r = append_strv_words(m, p->value);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
                return r;
        case PROP_BOOL: {
                bool yes = strcmp(p->value, "yes") == 0 || strcmp(p->value, "true") == 0 ||
                           strcmp(p->value, "1") == 0 || strcmp(p->value, "on") == 0;
                bool no = strcmp(p->value, "no") == 0 || strcmp(p->value, "false") == 0 ||
                          strcmp(p->value, "0") == 0 || strcmp(p->value, "off") == 0;

                if (!yes && !no)
                        break;
                return sd_bus_message_append(m, "(sv)", name, "b", (int)yes);
        }
        case PROP_INT: {
                char *end;
                long v;

                errno = 0;
                v = strtol(p->value, &end, 10);
                if (errno != 0 || !*p->value || *end || v < INT32_MIN || v > INT32_MAX)
                        break;
                return sd_bus_message_append(m, "(sv)", name, "i", (int32_t)v);
        }
        case PROP_BYTES:
        case PROP_COUNT:
                if (parse_u64(p->value, p->spec->kind == PROP_BYTES, &u) < 0)
                        break;
                return sd_bus_message_append(m, "(sv)", name, "t", u);
        case PROP_SECONDS:
                if (parse_u64(p->value, false, &u) < 0 ||
                    (u != UINT64_MAX && u > UINT64_MAX / 1000000))
                        break;
                return sd_bus_message_append(m, "(sv)", name, "t",
                                             u == UINT64_MAX ? u : u * 1000000);
        }
        fprintf(stderr, "lockctl: agent run: --property %s=%s: not a valid value\n", p->spec->name,
                p->value);
        return -EINVAL;
}

/* Parses NAME=VALUE against the table. 0, or an exit code with the reason printed. */
static int parse_prop(const char *arg, Prop *ret) {
        const char *eq = strchr(arg, '=');
        size_t n;

        if (!eq || eq == arg) {
                fprintf(stderr, "lockctl: agent run: --property takes NAME=VALUE, not '%s'\n", arg);
                return LOCKCTL_EXIT_USAGE;
        }
        n = (size_t)(eq - arg);
        for (size_t i = 0; own_props[i]; i++)
                if (strlen(own_props[i]) == n && strncmp(arg, own_props[i], n) == 0) {
                        fprintf(stderr,
                                "lockctl: agent run: %s is set by lockctl itself (the agent's "
                                "confinement depends on it)\n",
                                own_props[i]);
                        return LOCKCTL_EXIT_USAGE;
                }
        for (size_t i = 0; i < ELEMENTSOF(prop_specs); i++)
                if (strlen(prop_specs[i].name) == n && strncmp(arg, prop_specs[i].name, n) == 0) {
                        const char *bad = strcmp(prop_specs[i].name, "Environment") == 0
                                                  ? sets_display_env(eq + 1)
                                                  : NULL;

                        if (bad) {
                                fprintf(stderr,
                                        "lockctl: agent run: an agent gets no %s: a display or "
                                        "the session bus would let it reach the human's approval "
                                        "(lockd(8), THREAT MODEL)\n",
                                        bad);
                                return LOCKCTL_EXIT_USAGE;
                        }
                        *ret = (Prop){.spec = &prop_specs[i], .value = eq + 1};
                        return LOCKCTL_EXIT_OK;
                }
        fprintf(stderr,
                "lockctl: agent run: unsupported property '%.*s' (see lockctl agent run "
                "--help)\n",
                (int)n, arg);
        return LOCKCTL_EXIT_USAGE;
}

/* COMMAND as an absolute path: as given when it holds a '/', else found on $PATH. */
static int resolve_command(const char *cmd, char **ret) {
        const char *path = getenv("PATH");
        _cleanup_free_ char *copy = NULL;
        char *save = NULL;

        if (strchr(cmd, '/')) {
                char cwd[PATH_MAX];

                if (cmd[0] == '/')
                        return (*ret = strdup(cmd)) ? 0 : -ENOMEM;
                if (!getcwd(cwd, sizeof(cwd)))
                        return -errno;
                return asprintf(ret, "%s/%s", cwd, cmd) < 0 ? -ENOMEM : 0;
        }
        copy = strdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
        if (!copy)
                return -ENOMEM;
        for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
                _cleanup_free_ char *full = NULL;

                if (asprintf(&full, "%s/%s", d, cmd) < 0)
                        return -ENOMEM;
                if (access(full, X_OK) == 0) {
                        *ret = TAKE_PTR(full);
                        return 0;
                }
        }
        return -ENOENT;
}

/* The manager lockd uses, from its Status: "system", "user" or an address. */
static int lockd_bus(char **ret) {
        _cleanup_(json_decrefp) json_t *reply = NULL;
        const char *bus;
        int r;

        r = console_call_once("agent run", "Status", NULL, NULL, 0, &reply);
        if (r != LOCKCTL_EXIT_OK)
                return r;
        bus = console_json_string(reply, "scope_bus");
        if (!bus) {
                fputs("lockctl: agent run: lockd uses no manager (scope.backend: none), so "
                      "nothing can start a confined agent; give --bus ADDRESS\n",
                      stderr);
                return LOCKCTL_EXIT_FAIL;
        }
        *ret = strdup(bus);
        return *ret ? LOCKCTL_EXIT_OK : LOCKCTL_EXIT_FAIL;
}

typedef struct Run {
        sd_bus *bus;
        char unit[64];
        char *unit_path;
        char *job;
        bool job_done;
        bool ended;
        int exit_code;
        /* The service's end as its PropertiesChanged signals told it: a unit the manager
         * collects as soon as it is inactive cannot be asked afterwards (AddRef= needs a bus
         * client, which a manager's private socket is not). */
        bool have_code;
        int32_t code, status;
        char result[32];
        char state[32];
        /* With a terminal: a pty of the agent's own (its slave the unit's TTYPath), relayed. */
        int master;
        char tty[64];
        bool raw;
        struct termios saved;
} Run;

/* Decides lockctl's exit status from the service's end. */
static void read_end(Run *run) {
        int32_t code = run->code, status = run->status;
        const char *result = run->result[0] ? run->result : NULL;

        run->ended = true;
        if (code == CLD_EXITED) {
                run->exit_code = status;
                /* The manager's own exit statuses for a start that failed before the command. */
                if (status == 217)
                        fputs("lockctl: agent run: the manager could not switch to the agent's "
                              "user (217/USER): the user needs a passwd entry\n",
                              stderr);
                else if (status == 203)
                        fputs("lockctl: agent run: the manager could not execute the command "
                              "(203/EXEC)\n",
                              stderr);
                else if (status == 226)
                        fputs("lockctl: agent run: the manager could not set up the agent's "
                              "namespace (226/NAMESPACE)\n",
                              stderr);
        } else if (code == CLD_KILLED || code == CLD_DUMPED)
                run->exit_code = 128 + status;
        else if (result && strcmp(result, "success") == 0)
                /* Collected before its exit status was told: the manager's own verdict is that
                 * the agent's command ended well (status 0, or a clean SIGTERM or SIGHUP). */
                run->exit_code = 0;
        else {
                fprintf(stderr, "lockctl: agent run: the agent did not run (%s)\n",
                        result ? result : "unknown");
                run->exit_code = LOCKCTL_EXIT_FAIL;
        }
}

/* Asks the manager for what the signals did not say yet, while the unit is still loaded. The
 * state first: once it is inactive or failed, the exit status read after it is final. */
static void ask_state(Run *run) {
        _cleanup_free_ char *state = NULL, *result = NULL;

        if (sd_bus_get_property_string(run->bus, SYSTEMD_DEST, run->unit_path,
                                       "org.freedesktop.systemd1.Unit", "ActiveState", NULL,
                                       &state) < 0)
                return; /* collected already: the signals told everything */
        snprintf(run->state, sizeof(run->state), "%s", state);
        if (!run->have_code &&
            sd_bus_get_property_trivial(run->bus, SYSTEMD_DEST, run->unit_path,
                                        "org.freedesktop.systemd1.Service", "ExecMainCode", NULL,
                                        'i', &run->code) >= 0 &&
            sd_bus_get_property_trivial(run->bus, SYSTEMD_DEST, run->unit_path,
                                        "org.freedesktop.systemd1.Service", "ExecMainStatus", NULL,
                                        'i', &run->status) >= 0)
                run->have_code = run->code != 0;
        if (sd_bus_get_property_string(run->bus, SYSTEMD_DEST, run->unit_path,
                                       "org.freedesktop.systemd1.Service", "Result", NULL,
                                       &result) >= 0)
                snprintf(run->result, sizeof(run->result), "%s", result);
}

/* Once the job is done and the unit inactive or failed (or gone), the agent has ended. */
static void check_state(Run *run) {
        if (run->ended || !run->job_done)
                return;
        if (strcmp(run->state, "inactive") == 0 || strcmp(run->state, "failed") == 0) {
                /* The Unit interface's change (ActiveState) can come before the Service's
                 * (ExecMainCode): ask while the unit may still be loaded. */
                if (!run->have_code &&
                    sd_bus_get_property_trivial(run->bus, SYSTEMD_DEST, run->unit_path,
                                                "org.freedesktop.systemd1.Service", "ExecMainCode",
                                                NULL, 'i', &run->code) >= 0 &&
                    sd_bus_get_property_trivial(run->bus, SYSTEMD_DEST, run->unit_path,
                                                "org.freedesktop.systemd1.Service",
                                                "ExecMainStatus", NULL, 'i', &run->status) >= 0)
                        run->have_code = run->code != 0;
                read_end(run);
                (void)sd_event_exit(sd_bus_get_event(run->bus), 0);
        }
}

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Run *run = userdata;
        const char *path = NULL, *unit = NULL, *result = NULL;
        uint32_t id;

        if (sd_bus_message_read(m, "uoss", &id, &path, &unit, &result) < 0 || !run->job ||
            strcmp(path, run->job) != 0)
                return 0;
        run->job_done = true;
        ask_state(run);
        /* A start that failed leaves the unit failed, or already collected. */
        if (strcmp(result, "done") != 0 && !run->state[0])
                snprintf(run->state, sizeof(run->state), "failed");
        check_state(run);
        return 0;
}

/* Keeps ActiveState, ExecMainCode, ExecMainStatus and Result as the manager announces them. */
static int on_properties_changed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Run *run = userdata;
        const char *iface, *name, *str;
        int r;

        if (sd_bus_message_read(m, "s", &iface) < 0 ||
            sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, "{sv}") < 0)
                return 0;
        while ((r = sd_bus_message_enter_container(m, SD_BUS_TYPE_DICT_ENTRY, "sv")) > 0) {
                if (sd_bus_message_read(m, "s", &name) < 0)
                        return 0;
                if (strcmp(name, "ActiveState") == 0 && sd_bus_message_read(m, "v", "s", &str) >= 0)
                        snprintf(run->state, sizeof(run->state), "%s", str);
                else if (strcmp(name, "Result") == 0 && sd_bus_message_read(m, "v", "s", &str) >= 0)
                        snprintf(run->result, sizeof(run->result), "%s", str);
                else if (strcmp(name, "ExecMainCode") == 0 &&
                         sd_bus_message_read(m, "v", "i", &run->code) >= 0)
                        run->have_code = run->code != 0;
                else if (strcmp(name, "ExecMainStatus") == 0 &&
                         sd_bus_message_read(m, "v", "i", &run->status) >= 0)
                        ;
                else if (sd_bus_message_skip(m, "v") < 0)
                        return 0;
                if (sd_bus_message_exit_container(m) < 0)
                        return 0;
        }
        check_state(run);
        return 0;
}

/* Copies what fd has now to out (a pty's master or lockctl's stdout). false at its end. */
static bool relay(int fd, int out) {
        char buf[4096];
        ssize_t n = read(fd, buf, sizeof(buf));

        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return true;
        if (n <= 0)
                return false; /* EIO on the master: the agent closed its terminal */
        return loop_write(out, buf, (size_t)n) >= 0;
}

static int on_master(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        if (!relay(fd, STDOUT_FILENO))
                (void)sd_event_source_set_enabled(s, SD_EVENT_OFF);
        return 0;
}

static int on_stdin(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Run *run = userdata;

        if (!relay(fd, run->master))
                (void)sd_event_source_set_enabled(s, SD_EVENT_OFF);
        return 0;
}

/* The window size of lockctl's terminal, given to the agent's (which then gets SIGWINCH). */
static void copy_window_size(Run *run) {
        struct winsize ws;

        if (run->master >= 0 && ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0)
                (void)ioctl(run->master, TIOCSWINSZ, &ws);
}

/*
 * Opens a pty for the agent, like systemd-run --pty: the slave becomes the unit's TTYPath (the
 * manager makes it the agent's controlling terminal, owned by its user), lockctl's own terminal
 * goes raw and is relayed both ways, so job control, ^C and the window size work in the agent.
 */
static int pty_open(Run *run) {
        run->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
        if (run->master < 0)
                return negative_errno();
        if (grantpt(run->master) < 0 || unlockpt(run->master) < 0 ||
            ptsname_r(run->master, run->tty, sizeof(run->tty)) != 0)
                return negative_errno();
        copy_window_size(run);
        return 0;
}

static void pty_raw(Run *run) {
        struct termios t;

        if (tcgetattr(STDIN_FILENO, &run->saved) < 0)
                return;
        t = run->saved;
        cfmakeraw(&t);
        if (tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0)
                run->raw = true;
}

static void pty_restore(Run *run) {
        if (run->raw)
                (void)tcsetattr(STDIN_FILENO, TCSANOW, &run->saved);
        run->raw = false;
}

/* A signal to lockctl goes to the agent: lockctl ends when the agent does. With a pty the
 * terminal's own keys (^C, ^Z) reach it through the pty, and a resize as its window size. */
static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Run *run = userdata;

        if (run->master >= 0 && si->ssi_signo == SIGWINCH) {
                copy_window_size(run);
                return 0;
        }
        (void)sd_bus_call_method_async(run->bus, NULL, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                       "KillUnit", NULL, NULL, "ssi", run->unit, "main",
                                       (int32_t)si->ssi_signo);
        return 0;
}

static int append_fixed_props(sd_bus_message *m, const char *user, const char *exe, char **argv,
                              const char *tty) {
        const char *term = getenv("TERM");
        _cleanup_free_ char *term_env = NULL;
        int r;

        r = sd_bus_message_append(m, "(sv)(sv)(sv)(sv)(sv)(sv)(sv)", "Description", "s",
                                  "lockd agent (lockctl agent run)", "Type", "s", "exec", "User",
                                  "s", user, "ProtectProc", "s", "invisible", "ProcSubset", "s",
                                  "pid", "NoNewPrivileges", "b", 1, "CollectMode", "s",
                                  "inactive-or-failed");
        if (r < 0)
                return r;
        /* The runs' counters live below /sys/fs/cgroup: an empty tmpfs over it (InaccessiblePaths
         * on it fails to set up with systemd 252's user manager, 226/NAMESPACE). */
        r = sd_bus_message_append(m, "(sv)", "TemporaryFileSystem", "a(ss)", 1, "/sys/fs/cgroup",
                                  "ro");
        if (r < 0)
                return r;
        if (tty)
                r = sd_bus_message_append(m, "(sv)(sv)(sv)(sv)", "TTYPath", "s", tty,
                                          "StandardInput", "s", "tty", "StandardOutput", "s", "tty",
                                          "StandardError", "s", "tty");
        else
                r = sd_bus_message_append(m, "(sv)(sv)(sv)", "StandardInputFileDescriptor", "h",
                                          STDIN_FILENO, "StandardOutputFileDescriptor", "h",
                                          STDOUT_FILENO, "StandardErrorFileDescriptor", "h",
                                          STDERR_FILENO);
        if (r < 0)
                return r;
        /* None of the human's display or session bus, whatever the manager's environment has. */
        r = sd_bus_message_open_container(m, 'r', "sv");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", "UnsetEnvironment");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'v', "as");
        if (r >= 0)
                r = sd_bus_message_append_strv(m, (char **)display_env);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r < 0)
                return r;
        if (term && *term && asprintf(&term_env, "TERM=%s", term) >= 0) {
                r = sd_bus_message_append(m, "(sv)", "Environment", "as", 1, term_env);
                if (r < 0)
                        return r;
        }
        /*
         * ExecStartEx with no-env-expand: the manager would otherwise expand "$word" and
         * "${word}" in the arguments (and an agent's --input 'needle=${word}' must arrive as
         * typed). Transient properties get no % specifier expansion.
         */
        r = sd_bus_message_open_container(m, 'r', "sv");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", "ExecStartEx");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'v', "a(sasas)");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(sasas)");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'r', "sasas");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", exe);
        if (r >= 0)
                r = sd_bus_message_append_strv(m, argv);
        if (r >= 0)
                r = sd_bus_message_append(m, "as", 1, "no-env-expand");
        for (int i = 0; r >= 0 && i < 4; i++)
                r = sd_bus_message_close_container(m);
        return r;
}

static int start_agent(Run *run, const char *user, const char *exe, char **argv, const Prop *props,
                       size_t n_props) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        const char *job;
        int r;

        r = sd_bus_message_new_method_call(run->bus, &m, SYSTEMD_DEST, SYSTEMD_PATH,
                                           SYSTEMD_MANAGER, "StartTransientUnit");
        if (r >= 0)
                r = sd_bus_message_append(m, "ss", run->unit, "fail");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r >= 0)
                r = append_fixed_props(m, user, exe, argv, run->master >= 0 ? run->tty : NULL);
        for (size_t i = 0; r >= 0 && i < n_props; i++)
                r = append_prop(m, &props[i]);
        if (r == -EINVAL)
                return LOCKCTL_EXIT_USAGE;
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = sd_bus_message_append(m, "a(sa(sv))", 0);
        if (r < 0) {
                fprintf(stderr, "lockctl: agent run: %s\n", strerror(-r));
                return LOCKCTL_EXIT_FAIL;
        }
        r = sd_bus_call(run->bus, m, 0, &error, &reply);
        if (r < 0) {
                fprintf(stderr, "lockctl: agent run: the manager refused the agent's unit: %s\n",
                        error.message ? error.message : strerror(-r));
                sd_bus_error_free(&error);
                return LOCKCTL_EXIT_FAIL;
        }
        r = sd_bus_message_read(reply, "o", &job);
        if (r < 0 || !(run->job = strdup(job)))
                return LOCKCTL_EXIT_FAIL;
        return LOCKCTL_EXIT_OK;
}

/* What agent run was asked: its options, and where COMMAND starts in argv. */
typedef struct AgentArgs {
        const char *user, *bus;
        Prop props[PROPERTIES_MAX];
        size_t n_props;
        int command;
} AgentArgs;

/*
 * Reads agent run's options, up to COMMAND, into *a: -1 when the command is to be run, or the
 * exit status to return at once (after the help on stdout, or why not on stderr).
 */
static int agent_args(int argc, char **argv, AgentArgs *a) {
        const char *v;
        int i, r;

        for (i = 0; i < argc; i++) {
                if (strcmp(argv[i], "--") == 0) {
                        i++;
                        break;
                }
                if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
                        fputs(usage_text, stdout);
                        return LOCKCTL_EXIT_OK;
                }
                if ((r = lockctl_option(argc, argv, &i, "--user", &v)) != 0) {
                        if (r < 0)
                                goto missing;
                        a->user = v;
                } else if ((r = lockctl_option(argc, argv, &i, "--bus", &v)) != 0) {
                        if (r < 0)
                                goto missing;
                        a->bus = v;
                } else if ((r = lockctl_option(argc, argv, &i, "--property", &v)) != 0) {
                        if (r < 0)
                                goto missing;
                        if (a->n_props >= PROPERTIES_MAX) {
                                fputs("lockctl: agent run: too many --property\n", stderr);
                                return LOCKCTL_EXIT_USAGE;
                        }
                        r = parse_prop(v, &a->props[a->n_props]);
                        if (r != LOCKCTL_EXIT_OK)
                                return r;
                        a->n_props++;
                } else if (argv[i][0] == '-') {
                        fprintf(stderr, "lockctl: agent run: unknown option '%s'\n%s", argv[i],
                                usage_text);
                        return LOCKCTL_EXIT_USAGE;
                } else
                        break;
        }
        if (!a->user || !a->user[0] || i >= argc) {
                fprintf(stderr, "lockctl: agent run: %s\n%s",
                        !a->user ? "--user is required" : "no COMMAND", usage_text);
                return LOCKCTL_EXIT_USAGE;
        }
        a->command = i;
        return -1;

missing:
        fprintf(stderr, "lockctl: agent run: %s needs a value\n", argv[i]);
        return LOCKCTL_EXIT_USAGE;
}

/*
 * Makes ready, before the agent starts, everything that tells run how it goes: the signals, the
 * manager's JobRemoved and the unit's PropertiesChanged, and with a terminal on both ends the
 * agent's own pty, relayed. 0, or a negative errno.
 */
static int agent_watch(Run *run, sd_event *event) {
        sigset_t mask;
        int r;

        sigemptyset(&mask);
        for (const int *s = (const int[]){SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, 0}; *s; s++)
                sigaddset(&mask, *s);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        for (const int *s = (const int[]){SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, 0}; *s; s++) {
                r = sd_event_add_signal(event, NULL, *s, on_signal, run);
                if (r < 0)
                        return r;
        }
        r = sd_bus_attach_event(run->bus, event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return r;
        /* Both matches before the start: an agent that ends at once is not missed. */
        r = sd_bus_match_signal(run->bus, NULL, NULL, SYSTEMD_PATH, SYSTEMD_MANAGER, "JobRemoved",
                                on_job_removed, run);
        if (r >= 0)
                r = sd_bus_match_signal(run->bus, NULL, NULL, run->unit_path,
                                        "org.freedesktop.DBus.Properties", "PropertiesChanged",
                                        on_properties_changed, run);
        if (r >= 0)
                r = sd_bus_call_method(run->bus, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                       "Subscribe", NULL, NULL, NULL);
        if (r < 0)
                return r;
        /* A terminal on both ends: the agent gets one of its own, as with systemd-run --pty.
         * Pipes (an AI assistant running an MCP server) are handed over as they are. */
        if (isatty(STDIN_FILENO) && isatty(STDOUT_FILENO)) {
                r = pty_open(run);
                if (r < 0)
                        return r;
                r = sd_event_add_io(event, NULL, run->master, EPOLLIN, on_master, run);
                if (r >= 0)
                        r = sd_event_add_io(event, NULL, STDIN_FILENO, EPOLLIN, on_stdin, run);
        }
        return r;
}

/*
 * Relays the started agent until its unit is gone, then what it wrote last, and puts the human's
 * terminal back: sd_event_loop()'s return (a negative errno on failure).
 */
static int agent_wait(Run *run, sd_event *event) {
        int r;

        if (run->master >= 0)
                pty_raw(run);
        r = sd_event_loop(event);
        if (run->master >= 0) /* what the agent wrote last */
                for (char buf[4096];;) {
                        ssize_t n = read(run->master, buf, sizeof(buf));

                        if (n <= 0 || loop_write(STDOUT_FILENO, buf, (size_t)n) < 0)
                                break;
                }
        pty_restore(run);
        return r;
}

/* The bus of the manager that starts the agent: --bus's, or else the one lockd names. An exit
 * status (after saying why when not LOCKCTL_EXIT_OK). */
static int agent_bus(const char *bus_opt, char **ret) {
        if (!bus_opt)
                return lockd_bus(ret);
        *ret = strdup(bus_opt);
        return *ret ? LOCKCTL_EXIT_OK : LOCKCTL_EXIT_FAIL;
}

static int agent_run(int argc, char **argv) {
        _cleanup_free_ char *bus_spec = NULL, *exe = NULL;
        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        AgentArgs a = {};
        uint64_t rnd = 0;
        Run run = {.exit_code = LOCKCTL_EXIT_FAIL, .master = -1};
        int r;

        r = agent_args(argc, argv, &a);
        if (r >= 0)
                return r;
        r = resolve_command(argv[a.command], &exe);
        if (r < 0) {
                fprintf(stderr, "lockctl: agent run: cannot find '%s': %s\n", argv[a.command],
                        strerror(-r));
                return LOCKCTL_EXIT_USAGE;
        }
        r = agent_bus(a.bus, &bus_spec);
        if (r != LOCKCTL_EXIT_OK)
                return r;

        r = scope_bus_open(bus_spec, &run.bus);
        if (r < 0) {
                fprintf(stderr, "lockctl: agent run: cannot reach the manager at %s: %s\n",
                        bus_spec, strerror(-r));
                return LOCKCTL_EXIT_FAIL;
        }
        if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
                return LOCKCTL_EXIT_FAIL;
        snprintf(run.unit, sizeof(run.unit), "lockd-agent-%016" PRIx64 ".service", rnd);
        r = sd_bus_path_encode("/org/freedesktop/systemd1/unit", run.unit, &run.unit_path);
        if (r >= 0)
                r = sd_event_default(&event);
        if (r >= 0)
                r = agent_watch(&run, event);
        if (r < 0)
                goto fail;
        r = start_agent(&run, a.user, exe, argv + a.command, a.props, a.n_props);
        if (r != LOCKCTL_EXIT_OK) {
                run.exit_code = r;
                goto done;
        }
        r = agent_wait(&run, event);
        if (r < 0)
                goto fail;
        goto done;

fail:
        pty_restore(&run);
        fprintf(stderr, "lockctl: agent run: %s\n", strerror(-r));
        run.exit_code = LOCKCTL_EXIT_FAIL;
done:
        safe_close(run.master);
        free(run.job);
        free(run.unit_path);
        if (run.bus) {
                sd_bus_detach_event(run.bus);
                sd_bus_flush_close_unref(run.bus);
        }
        return run.exit_code;
}

int verb_agent(int argc, char **argv) {
        if (argc < 1 || strcmp(argv[0], "-h") == 0 || strcmp(argv[0], "--help") == 0) {
                fputs(usage_text, argc < 1 ? stderr : stdout);
                return argc < 1 ? LOCKCTL_EXIT_USAGE : LOCKCTL_EXIT_OK;
        }
        if (strcmp(argv[0], "run") == 0)
                return agent_run(argc - 1, argv + 1);
        fprintf(stderr, "lockctl: agent: unknown command '%s'\n%s", argv[0], usage_text);
        return LOCKCTL_EXIT_USAGE;
}
