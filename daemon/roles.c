/* Roles: the policy's agents and consoles resolved through NSS, and the role of a peer. */
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "nss-util.h"
#include "roles.h"

#define GROUPS_MAX       65536              /* NGROUPS_MAX on Linux */
#define ENUMERATE_MAX    (1u << 20)         /* passwd entries checked for a role conflict */

/* uid and gid sets share the uint32_t helpers below. */
_Static_assert(sizeof(uid_t) == sizeof(uint32_t) && sizeof(gid_t) == sizeof(uint32_t),
               "uid_t and gid_t are 32 bits");

/* One passwd entry: what the checks need of it. */
typedef struct User {
        char *name;
        uid_t uid;
        gid_t gid;
} User;

static void user_done(User *u) {
        free(u->name);
        u->name = NULL;
}

static void say(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t len, const char *fmt, ...) {
        va_list ap;

        if (!why || len == 0)
                return;
        va_start(ap, fmt);
        vsnprintf(why, len, fmt, ap);
        va_end(ap);
}

/* getpwnam_r (name) or getpwuid_r (!name). 0 with *ret filled, -ENOENT when there is no such
 * user, or another negative errno. */
static int lookup_user(const char *name, uid_t uid, User *ret) {
        _cleanup_free_ char *buf = NULL;
        struct passwd pw;
        size_t len = 0;
        int r;

        r = nss_get(&pw, NULL, name, uid, false, &buf, &len);
        if (r < 0)
                return r;
        ret->name = strdup(pw.pw_name);
        if (!ret->name)
                return -ENOMEM;
        ret->uid = pw.pw_uid;
        ret->gid = pw.pw_gid;
        return 0;
}

/* getgrnam_r (name) or getgrgid_r (!name). 0 with the gid in *ret and, if ret_members is not
 * NULL, a NULL-terminated copy of the member names; -ENOENT when there is no such group, or
 * another negative errno. */
static int lookup_group(const char *name, gid_t gid, gid_t *ret, char ***ret_members) {
        _cleanup_free_ char *buf = NULL;
        struct group gr;
        size_t len = 0;
        int r;

        r = nss_get(NULL, &gr, name, gid, false, &buf, &len);
        if (r < 0)
                return r;
        if (ret_members) {
                size_t n = 0;
                char **m;

                while (gr.gr_mem && gr.gr_mem[n])
                        n++;
                m = calloc(n + 1, sizeof(char *));
                if (!m)
                        return -ENOMEM;
                for (size_t i = 0; i < n; i++) {
                        m[i] = strdup(gr.gr_mem[i]);
                        if (!m[i]) {
                                for (size_t k = 0; k < i; k++)
                                        free(m[k]);
                                free(m);
                                return -ENOMEM;
                        }
                }
                *ret_members = m;
        }
        *ret = gr.gr_gid;
        return 0;
}

static void strv_free(char **v) {
        for (size_t i = 0; v && v[i]; i++)
                free(v[i]);
        free(v);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free);

/* The groups of user name with primary group gid, from the group database (getgrouplist()):
 * a new array in *ret and its size in *ret_n. */
static int user_groups(const char *name, gid_t gid, gid_t **ret, size_t *ret_n) {
        int n = 32;

        for (;;) {
                gid_t *g = calloc((size_t)n, sizeof(gid_t));
                int k = n;

                if (!g)
                        return -ENOMEM;
                if (getgrouplist(name, gid, g, &k) >= 0) {
                        *ret = g;
                        *ret_n = (size_t)k;
                        return 0;
                }
                free(g);
                if (k <= n) /* no growth asked for: glibc's way of saying it failed */
                        return -EIO;
                if (k > GROUPS_MAX)
                        return -E2BIG;
                n = k;
        }
}

static int cmp_u32(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
        return x < y ? -1 : x > y;
}

/* Sorts a and drops duplicates; returns the new count. */
static size_t sort_unique(uint32_t *a, size_t n) {
        size_t k = 0;

        if (n == 0)
                return 0;
        qsort(a, n, sizeof(uint32_t), cmp_u32);
        for (size_t i = 1; i < n; i++)
                if (a[i] != a[k])
                        a[++k] = a[i];
        return k + 1;
}

static bool has(const uint32_t *a, size_t n, uint32_t id) {
        return n > 0 && bsearch(&id, a, n, sizeof(uint32_t), cmp_u32) != NULL;
}

static int append(uint32_t **a, size_t *n, uint32_t id) {
        uint32_t *b = reallocarray(*a, *n + 1, sizeof(uint32_t));

        if (!b)
                return -ENOMEM;
        b[(*n)++] = id;
        *a = b;
        return 0;
}

/* Resolves the principals of one role into set. */
static int resolve_role(const PolicyRole *role, const char *what, bool is_agents, RoleSet *set,
                        char *why, size_t why_len) {
        for (size_t i = 0; i < role->n_principals; i++) {
                const PolicyPrincipal *p = &role->principals[i];
                const char *kind = p->is_group ? "group" : "user";
                uint32_t id = p->id;
                int r = 0;

                if (!p->numeric) {
                        if (p->is_group)
                                r = lookup_group(p->name, 0, &id, NULL);
                        else {
                                User u = {};
                                r = lookup_user(p->name, 0, &u);
                                id = u.uid;
                                user_done(&u);
                        }
                }
                if (r == -ENOENT) {
                        say(why, why_len, "%s: unknown %s '%s' (lockd.yaml %u:%u)", what, kind,
                            p->name, p->line, p->column);
                        return r;
                }
                if (r < 0) {
                        say(why, why_len, "%s: cannot look up %s '%s': %s", what, kind, p->name,
                            strerror(-r));
                        return r;
                }
                /* The policy refuses root by name and number; a name can still resolve to 0. */
                if (is_agents && id == 0) {
                        say(why, why_len, "%s: %s '%s' is root, which cannot be an agent", what,
                            kind, p->name ?: "0");
                        return -EPERM;
                }
                r = p->is_group ? append(&set->gids, &set->n_gids, id)
                                : append(&set->uids, &set->n_uids, id);
                if (r < 0)
                        return r;
        }
        set->n_uids = sort_unique(set->uids, set->n_uids);
        set->n_gids = sort_unique(set->gids, set->n_gids);
        return 0;
}

/* Says how (uid, groups) is in set, in buf: "as uid 1001", "through group 1002". NULL if not. */
static const char *membership(const RoleSet *set, uid_t uid, const gid_t *groups, size_t n,
                              char *buf, size_t len) {
        if (has(set->uids, set->n_uids, uid)) {
                snprintf(buf, len, "as uid %" PRIu32, (uint32_t)uid);
                return buf;
        }
        for (size_t i = 0; i < n; i++)
                if (has(set->gids, set->n_gids, groups[i])) {
                        snprintf(buf, len, "through group %" PRIu32, (uint32_t)groups[i]);
                        return buf;
                }
        return NULL;
}

/* -ENOTUNIQ with why when user u is in both roles by uid or groups; 0 otherwise. */
static int check_user(const Roles *r, const User *u, char *why, size_t why_len) {
        _cleanup_free_ gid_t *groups = NULL;
        char a[48], c[48];
        const char *as_agent, *as_console;
        size_t n = 0;
        int k;

        k = user_groups(u->name, u->gid, &groups, &n);
        if (k < 0) {
                say(why, why_len, "cannot list the groups of user '%s': %s", u->name, strerror(-k));
                return k;
        }
        as_agent = membership(&r->agents, u->uid, groups, n, a, sizeof(a));
        as_console = membership(&r->consoles, u->uid, groups, n, c, sizeof(c));
        if (as_agent && as_console) {
                say(why, why_len,
                    "user '%s' (uid %" PRIu32 ") is both an agent (%s) and a console (%s)", u->name,
                    (uint32_t)u->uid, as_agent, as_console);
                return -ENOTUNIQ;
        }
        return 0;
}

static int check_user_by(const Roles *r, const char *name, uid_t uid, char *why, size_t why_len) {
        User u = {};
        int k;

        k = lookup_user(name, uid, &u);
        if (k == -ENOENT) /* a bare number: its uid was compared with the other set already */
                return 0;
        if (k < 0) {
                say(why, why_len, "cannot look up user %s: %s", name ?: "by uid", strerror(-k));
                return k;
        }
        k = check_user(r, &u, why, why_len);
        user_done(&u);
        return k;
}

/* Every user the passwd database enumerates, at most ENUMERATE_MAX of them. getpwent_r() is not
 * mixed with other lookups: the list is collected first, then checked. */
static int enumerate_users(User **ret, size_t *ret_n) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, n = 0;
        User *users = NULL;
        int r = 0;

        setpwent();
        while (n < ENUMERATE_MAX) {
                struct passwd pw;
                User *u;

                r = nss_get(&pw, NULL, NULL, 0, true, &buf, &len);
                if (r == -ENOENT) {
                        r = 0;
                        break;
                }
                if (r < 0)
                        break;
                u = reallocarray(users, n + 1, sizeof(User));
                if (!u) {
                        r = -ENOMEM;
                        break;
                }
                users = u;
                users[n] = (User){.name = strdup(pw.pw_name), .uid = pw.pw_uid, .gid = pw.pw_gid};
                if (!users[n].name) {
                        r = -ENOMEM;
                        break;
                }
                n++;
        }
        endpwent();
        if (r < 0) {
                for (size_t i = 0; i < n; i++)
                        user_done(&users[i]);
                free(users);
                return r;
        }
        *ret = users;
        *ret_n = n;
        return 0;
}

/* The disjointness of the two resolved sets, through every way a user can be in a role. */
static int check_disjoint(const Roles *r, char *why, size_t why_len) {
        User *users = NULL;
        size_t n_users = 0;
        int k;

        for (size_t i = 0; i < r->agents.n_uids; i++)
                if (has(r->consoles.uids, r->consoles.n_uids, r->agents.uids[i])) {
                        say(why, why_len, "uid %" PRIu32 " is both an agent and a console",
                            (uint32_t)r->agents.uids[i]);
                        return -ENOTUNIQ;
                }
        for (size_t i = 0; i < r->agents.n_gids; i++)
                if (has(r->consoles.gids, r->consoles.n_gids, r->agents.gids[i])) {
                        say(why, why_len, "gid %" PRIu32 " is both an agent and a console group",
                            (uint32_t)r->agents.gids[i]);
                        return -ENOTUNIQ;
                }

        /* The users named in a role, by uid. */
        for (int s = 0; s < 2; s++) {
                const RoleSet *set = s ? &r->consoles : &r->agents;
                for (size_t i = 0; i < set->n_uids; i++) {
                        k = check_user_by(r, NULL, set->uids[i], why, why_len);
                        if (k < 0)
                                return k;
                }
        }
        /* The members a role group lists, which a directory may not enumerate. */
        for (int s = 0; s < 2; s++) {
                const RoleSet *set = s ? &r->consoles : &r->agents;
                for (size_t i = 0; i < set->n_gids; i++) {
                        _cleanup_(strv_freep) char **members = NULL;
                        gid_t gid;

                        k = lookup_group(NULL, set->gids[i], &gid, &members);
                        if (k == -ENOENT)
                                continue;
                        if (k < 0) {
                                say(why, why_len, "cannot look up gid %" PRIu32 ": %s",
                                    (uint32_t)set->gids[i], strerror(-k));
                                return k;
                        }
                        for (size_t m = 0; members[m]; m++) {
                                k = check_user_by(r, members[m], 0, why, why_len);
                                if (k < 0)
                                        return k;
                        }
                }
        }
        /* Everyone else, for a user whose primary group is a role group. */
        if (r->agents.n_gids == 0 && r->consoles.n_gids == 0)
                return 0;
        k = enumerate_users(&users, &n_users);
        if (k < 0) {
                say(why, why_len, "cannot enumerate users: %s", strerror(-k));
                return k;
        }
        for (size_t i = 0; i < n_users && k >= 0; i++)
                k = check_user(r, &users[i], why, why_len);
        for (size_t i = 0; i < n_users; i++)
                user_done(&users[i]);
        free(users);
        return k < 0 ? k : 0;
}

Roles *roles_free(Roles *r) {
        if (!r)
                return NULL;
        free(r->agents.uids);
        free(r->agents.gids);
        free(r->consoles.uids);
        free(r->consoles.gids);
        free(r->cache);
        free(r);
        return NULL;
}

int roles_resolve(const Policy *p, Roles **ret, char *why, size_t why_len) {
        _cleanup_(roles_freep) Roles *r = NULL;
        int k;

        if (why && why_len > 0)
                why[0] = '\0';
        if (!p || !ret)
                return -EINVAL;
        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        k = resolve_role(&p->agents, "agents", true, &r->agents, why, why_len);
        if (k < 0)
                return k;
        k = resolve_role(&p->consoles, "consoles", false, &r->consoles, why, why_len);
        if (k < 0)
                return k;
        k = check_disjoint(r, why, why_len);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(r);
        return 0;
}

/* The role bits a member of group gid has. */
static unsigned gid_mask(const Roles *r, gid_t gid) {
        unsigned mask = 0;

        if (has(r->agents.gids, r->agents.n_gids, gid))
                mask |= ROLE_AGENT;
        if (has(r->consoles.gids, r->consoles.n_gids, gid))
                mask |= ROLE_CONSOLE;
        return mask;
}

/* The role bits uid has by its own id and its group database entries (not the peer's gid). */
static unsigned uid_mask(const Roles *r, uid_t uid) {
        _cleanup_free_ gid_t *groups = NULL;
        size_t n = 0;
        unsigned mask = 0;
        User u = {};

        if (has(r->agents.uids, r->agents.n_uids, uid))
                mask |= ROLE_AGENT;
        if (has(r->consoles.uids, r->consoles.n_uids, uid))
                mask |= ROLE_CONSOLE;
        if (lookup_user(NULL, uid, &u) < 0)
                return mask;
        if (user_groups(u.name, u.gid, &groups, &n) >= 0)
                for (size_t i = 0; i < n; i++)
                        mask |= gid_mask(r, groups[i]);
        user_done(&u);
        return mask;
}

RoleKind roles_classify(Roles *r, uid_t uid, gid_t gid) {
        unsigned mask = 0;
        size_t i;

        if (!r)
                return ROLE_NONE;
        for (i = 0; i < r->n_cache; i++)
                if (r->cache[i].uid == uid)
                        break;
        if (i < r->n_cache)
                mask = r->cache[i].mask;
        else {
                mask = uid_mask(r, uid);
                /* A failed lookup is not cached, so the next connection asks again. */
                if (!r->cache)
                        r->cache = calloc(ROLES_CACHE_MAX, sizeof(RolesCacheEntry));
                if (r->cache) {
                        r->cache[r->next_cache] = (RolesCacheEntry){.uid = uid, .mask = mask};
                        r->next_cache = (r->next_cache + 1) % ROLES_CACHE_MAX;
                        if (r->n_cache < ROLES_CACHE_MAX)
                                r->n_cache++;
                }
        }
        mask |= gid_mask(r, gid);

        /* Both roles at once: the two sets were disjoint at start, so something changed or the
         * peer carries a gid it was not given at login. Neither role is safe to grant. */
        if (mask == (ROLE_AGENT | ROLE_CONSOLE))
                return ROLE_NONE;
        return (RoleKind)mask;
}
