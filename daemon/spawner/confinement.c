/* Agent confinement: the manager says which unit a peer runs in and what that unit may see. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "confinement.h"
#include "macro.h"

#define SYSTEMD_DEST     "org.freedesktop.systemd1"
#define SYSTEMD_PATH     "/org/freedesktop/systemd1"
#define SYSTEMD_MANAGER  "org.freedesktop.systemd1.Manager"
#define SYSTEMD_SERVICE  "org.freedesktop.systemd1.Service"
#define UNIT_PATH_PREFIX "/org/freedesktop/systemd1/unit"
#define CGROUP_FS        "/sys/fs/cgroup"
#define PATHS_MAX        256 /* per list; a unit with more is refused rather than half-read */

/* Whether path (an absolute path, maybe with a "-" or "+" prefix of the unit file syntax) is
 * /sys/fs/cgroup or a directory above it, so that what it hides hides the cgroup file system. */
static bool covers_cgroup_fs(const char *path) {
        size_t n;

        while (*path == '-' || *path == '+')
                path++;
        n = strlen(path);
        while (n > 1 && path[n - 1] == '/')
                n--;
        if (n == 1 && path[0] == '/')
                return true;
        return strncmp(CGROUP_FS, path, n) == 0 && (CGROUP_FS[n] == '\0' || CGROUP_FS[n] == '/');
}

static bool any_covers(const char **paths) {
        for (size_t i = 0; paths && paths[i]; i++)
                if (covers_cgroup_fs(paths[i]))
                        return true;
        return false;
}

bool confinement_evaluate(const ConfinementUnit *u, ConfinementReason *ret_missing) {
        ConfinementReason missing = CONFINEMENT_OK;
        size_t n;

        if (!u || !u->unit || !u->unit[0])
                missing = CONFINEMENT_NO_UNIT;
        else if ((n = strlen(u->unit)) < 8 || strcmp(u->unit + n - 8, ".service") != 0)
                missing = CONFINEMENT_NOT_SERVICE;
        else if (!u->protect_proc || (strcmp(u->protect_proc, "invisible") != 0 &&
                                      strcmp(u->protect_proc, "noaccess") != 0))
                missing = CONFINEMENT_PROTECT_PROC;
        else if (!any_covers(u->inaccessible) && !any_covers(u->tmpfs))
                missing = CONFINEMENT_CGROUP_FS;
        if (missing && ret_missing)
                *ret_missing = missing;
        return !missing;
}

struct ConfinementCheck {
        sd_bus *bus;
        sd_bus_slot *slot;
        pid_t pid;
        int pidfd;
        char unit[CONFINEMENT_UNIT_MAX];
        ConfinementDoneFn done;
        void *userdata;
        bool finished;
        bool by_pid; /* asked GetUnitByPID rather than GetUnitByPIDFD */
};

ConfinementCheck *confinement_check_free(ConfinementCheck *c) {
        if (!c)
                return NULL;
        sd_bus_slot_unref(c->slot);
        sd_bus_unref(c->bus);
        free(c);
        return NULL;
}

static void confinement_check_freep_(ConfinementCheck **c) {
        confinement_check_free(*c);
}

static void finish(ConfinementCheck *c, bool ok, ConfinementReason missing) {
        if (c->finished)
                return;
        c->finished = true;
        c->slot = sd_bus_slot_unref(c->slot);
        c->done(ok, c->unit, ok ? CONFINEMENT_OK : missing, c->userdata);
}

/*
 * Reads the paths of a variant holding InaccessiblePaths= ("as") or TemporaryFileSystem= ("a(ss)",
 * the options dropped) into a NULL-terminated array of borrowed strings (valid while m lives).
 */
static int read_paths(sd_bus_message *m, bool pairs, const char ***ret) {
        _cleanup_free_ const char **v = NULL;
        const char *path, *options;
        size_t n = 0;
        int r;

        r = sd_bus_message_enter_container(m, SD_BUS_TYPE_VARIANT, pairs ? "a(ss)" : "as");
        if (r >= 0)
                r = sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, pairs ? "(ss)" : "s");
        if (r < 0)
                return r;
        while ((r = pairs ? sd_bus_message_read(m, "(ss)", &path, &options)
                          : sd_bus_message_read(m, "s", &path)) > 0) {
                const char **nv;

                if (n >= PATHS_MAX)
                        return -E2BIG;
                nv = reallocarray(v, n + 2, sizeof(*v));
                if (!nv)
                        return -ENOMEM;
                v = nv;
                v[n++] = path;
                v[n] = NULL;
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(v);
        return 0;
}

/* The Service interface's properties: only the three that decide are read, the rest skipped. */
static int on_properties(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        ConfinementCheck *c = userdata;
        _cleanup_free_ const char **inaccessible = NULL, **tmpfs = NULL;
        const char *protect_proc = NULL;
        ConfinementReason missing = CONFINEMENT_OK;
        ConfinementUnit u;
        int r;

        if (sd_bus_message_is_method_error(m, NULL)) {
                finish(c, false, CONFINEMENT_NO_PROPERTIES);
                return 0;
        }
        r = sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, "{sv}");
        while (r >= 0 &&
               (r = sd_bus_message_enter_container(m, SD_BUS_TYPE_DICT_ENTRY, "sv")) > 0) {
                const char *name;

                r = sd_bus_message_read(m, "s", &name);
                if (r < 0)
                        break;
                if (strcmp(name, "ProtectProc") == 0)
                        r = sd_bus_message_read(m, "v", "s", &protect_proc);
                else if (strcmp(name, "InaccessiblePaths") == 0 && !inaccessible)
                        r = read_paths(m, false, &inaccessible);
                else if (strcmp(name, "TemporaryFileSystem") == 0 && !tmpfs)
                        r = read_paths(m, true, &tmpfs);
                else
                        r = sd_bus_message_skip(m, "v");
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
        }
        if (r < 0) {
                finish(c, false, CONFINEMENT_BAD_ANSWER);
                return 0;
        }
        u = (ConfinementUnit){.unit = c->unit,
                              .protect_proc = protect_proc,
                              .inaccessible = inaccessible,
                              .tmpfs = tmpfs};
        if (confinement_evaluate(&u, &missing))
                finish(c, true, CONFINEMENT_OK);
        else
                finish(c, false, missing);
        return 0;
}

static int on_unit(sd_bus_message *m, void *userdata, sd_bus_error *ret_error);

/* Whether the manager was found to lack GetUnitByPIDFD (systemd before 253): asked once. */
static bool no_pidfd_method;

static int ask_by_pid(ConfinementCheck *c) {
        c->slot = sd_bus_slot_unref(c->slot);
        return sd_bus_call_method_async(c->bus, &c->slot, SYSTEMD_DEST, SYSTEMD_PATH,
                                        SYSTEMD_MANAGER, "GetUnitByPID", on_unit, c, "u",
                                        (uint32_t)c->pid);
}

static int on_unit(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        ConfinementCheck *c = userdata;
        _cleanup_free_ char *name = NULL;
        const char *path;
        ConfinementReason missing = CONFINEMENT_OK;
        size_t n;
        int r;

        if (sd_bus_message_is_method_error(m, SD_BUS_ERROR_UNKNOWN_METHOD) && !c->by_pid) {
                /* A manager without GetUnitByPIDFD: by pid, then the pidfd check below. */
                no_pidfd_method = true;
                c->by_pid = true;
                if (ask_by_pid(c) < 0)
                        finish(c, false, CONFINEMENT_NO_MANAGER);
                return 0;
        }
        if (sd_bus_message_is_method_error(m, NULL)) {
                finish(c, false, CONFINEMENT_NO_UNIT);
                return 0;
        }
        /* GetUnitByPIDFD answers (unit path, pid, invocation id); GetUnitByPID the path. */
        r = sd_bus_message_read(m, "o", &path);
        if (r < 0 || sd_bus_path_decode(path, UNIT_PATH_PREFIX, &name) <= 0 || !name) {
                finish(c, false, CONFINEMENT_BAD_ANSWER);
                return 0;
        }
        snprintf(c->unit, sizeof(c->unit), "%s", name);
        /*
         * The manager answered for a pid. The pidfd was taken when the peer connected: while it
         * still names a live process, that pid was not reused, and the unit is the peer's.
         */
        if (c->pidfd < 0 || syscall(SYS_pidfd_send_signal, c->pidfd, 0, NULL, 0) < 0) {
                finish(c, false, CONFINEMENT_PEER_GONE);
                return 0;
        }
        n = strlen(c->unit);
        if (n < 8 || strcmp(c->unit + n - 8, ".service") != 0) {
                (void)confinement_evaluate(&(ConfinementUnit){.unit = c->unit}, &missing);
                finish(c, false, missing);
                return 0;
        }
        c->slot = sd_bus_slot_unref(c->slot);
        r = sd_bus_call_method_async(c->bus, &c->slot, SYSTEMD_DEST, path,
                                     "org.freedesktop.DBus.Properties", "GetAll", on_properties, c,
                                     "s", SYSTEMD_SERVICE);
        if (r < 0)
                finish(c, false, CONFINEMENT_NO_MANAGER);
        return 0;
}

int confinement_check_start(sd_bus *bus, pid_t pid, int pidfd, ConfinementDoneFn done,
                            void *userdata, ConfinementCheck **ret) {
        _cleanup_(confinement_check_freep_) ConfinementCheck *c = NULL;
        int r;

        if (!bus || pid <= 0 || !done || !ret)
                return -EINVAL;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        *c = (ConfinementCheck){.bus = sd_bus_ref(bus),
                                .pid = pid,
                                .pidfd = pidfd,
                                .done = done,
                                .userdata = userdata};
        /* By the pidfd where the manager can (no pid to be reused), else by the pid. */
        if (pidfd >= 0 && !no_pidfd_method)
                r = sd_bus_call_method_async(bus, &c->slot, SYSTEMD_DEST, SYSTEMD_PATH,
                                             SYSTEMD_MANAGER, "GetUnitByPIDFD", on_unit, c, "h",
                                             pidfd);
        else {
                c->by_pid = true;
                r = ask_by_pid(c);
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 0;
}
