/* lockd.yaml: the schema (a table of fields per mapping), the rules between keys, and the API. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "identity.h"
#include "macro.h"
#include "policy-internal.h"
#include "policy.h"

#define POLICY_BUS_ADDRESS_MAX      512
#define POLICY_SLICE_MAX            255 /* systemd's UNIT_NAME_MAX minus the NUL */
#define POLICY_ISSUER_MAX           256
#define POLICY_IDENTITY_MAX         1024
#define POLICY_MARKETPLACE_NAME_MAX 64
#define POLICY_UID_FIRST_MIN        1000 /* below are system users (SYS_UID_MAX is 999) */
#define POLICY_UID_LAST_MAX         (UINT32_C(0x7fffffff) - 1)

bool policy_principal_name_valid(const char *name) {
        size_t n;

        if (!name)
                return false;
        n = strlen(name);
        if (n == 0 || n > POLICY_NAME_MAX)
                return false;
        if (!((name[0] >= 'a' && name[0] <= 'z') || name[0] == '_'))
                return false;
        for (size_t i = 1; i < n; i++) {
                char ch = name[i];
                if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-')
                        continue;
                if (ch == '$' && i == n - 1)
                        continue;
                return false;
        }
        return true;
}

/*
 * A user or group: a plain decimal number (0..2^32-2; (uint32_t)-1 is no id) or a name
 * (policy_principal_name_valid()). Root, by number or by name, can never be an agent: an agent
 * running as root could read what it likes without lockd.
 */
static int get_principal(Ctx *c, bool is_group, bool forbid_root, PolicyPrincipal *ret) {
        const char *kind = is_group ? "group" : "user";
        PolicyPrincipal p = {.is_group = is_group};
        int r;

        r = reader_expect_scalar(c, "a name or a number");
        if (r < 0)
                return r;
        if (!c->is_default) {
                p.line = reader_here(c).line;
                p.column = reader_here(c).column;
        }
        if (reader_scalar_kind(c->event) == SCALAR_INT) {
                uint64_t v;

                r = reader_uint(c, 0, UINT32_MAX - 1, &v);
                if (r < 0)
                        return r;
                if (forbid_root && v == 0)
                        return fail(c, E_POLICY_RANGE, "%s 0 (root) cannot be an agent", kind);
                p.numeric = true;
                p.id = (uint32_t)v;
                *ret = p;
                return 0;
        }

        r = reader_string(c, POLICY_NAME_MAX, &p.name);
        if (r == -EINVAL && c->diag->code == E_POLICY_TYPE)
                return fail(c, E_POLICY_TYPE, "expected a %s name or number, found %s", kind,
                            reader_event_kind(c->event));
        if (r < 0)
                return r;
        if (!policy_principal_name_valid(p.name)) {
                free(p.name);
                return fail(c, E_POLICY_VALUE, "invalid %s name (expected [a-z_][a-z0-9_-]*$?)",
                            kind);
        }
        if (forbid_root && strcmp(p.name, "root") == 0) {
                free(p.name);
                return fail(c, E_POLICY_VALUE, "%s root cannot be an agent", kind);
        }
        *ret = p;
        return 0;
}

static bool principal_same(const PolicyPrincipal *a, const PolicyPrincipal *b) {
        if (a->is_group != b->is_group || a->numeric != b->numeric)
                return false;
        return a->numeric ? a->id == b->id : strcmp(a->name, b->name) == 0;
}

static void principal_done(PolicyPrincipal *p) {
        free(p->name);
        *p = (PolicyPrincipal){};
}

/* Drops every principal of the given kind from role (a list given in the file replaces it). */
static void role_drop(PolicyRole *role, bool is_group) {
        size_t k = 0;

        for (size_t i = 0; i < role->n_principals; i++) {
                if (role->principals[i].is_group == is_group)
                        principal_done(&role->principals[i]);
                else
                        role->principals[k++] = role->principals[i];
        }
        role->n_principals = k;
}

typedef struct RoleList {
        PolicyRole *role;
        bool is_group;
        size_t n; /* how many of this list were parsed */
} RoleList;

static int parse_role_item(Ctx *c, void *data, size_t index) {
        RoleList *l = data;
        PolicyRole *role = l->role;
        PolicyPrincipal p, *a;
        int r;

        if (l->n >= POLICY_PRINCIPALS_MAX)
                return fail(c, E_POLICY_RANGE, "more than %d entries", POLICY_PRINCIPALS_MAX);
        r = get_principal(c, l->is_group, c->in_agents, &p);
        if (r < 0)
                return r;
        for (size_t i = 0; i < role->n_principals; i++)
                if (principal_same(&role->principals[i], &p)) {
                        principal_done(&p);
                        return fail(c, E_POLICY_VALUE, "listed twice");
                }
        a = reallocarray(role->principals, role->n_principals + 1, sizeof(*a));
        if (!a) {
                principal_done(&p);
                return -ENOMEM;
        }
        role->principals = a;
        a[role->n_principals++] = p;
        l->n++;
        return 0;
}

static int parse_role_list(Ctx *c, PolicyRole *role, bool is_group) {
        RoleList l = {.role = role, .is_group = is_group};

        if (c->event->type != YAML_SEQUENCE_START_EVENT)
                return fail(c, E_POLICY_TYPE, "expected a list, found %s",
                            reader_event_kind(c->event));
        role_drop(role, is_group);
        return reader_sequence(c, parse_role_item, &l);
}

static int parse_role_users(Ctx *c, void *data) {
        return parse_role_list(c, data, false);
}

static int parse_role_groups(Ctx *c, void *data) {
        return parse_role_list(c, data, true);
}

static const Field role_fields[] = {
        {"users", parse_role_users},
        {"groups", parse_role_groups},
};

static int parse_agents(Ctx *c, void *data) {
        Policy *p = data;
        int r;

        c->in_agents = true;
        r = reader_mapping(c, role_fields, ELEMENTSOF(role_fields), &p->agents);
        c->in_agents = false;
        return r;
}

static int parse_consoles(Ctx *c, void *data) {
        Policy *p = data;

        return reader_mapping(c, role_fields, ELEMENTSOF(role_fields), &p->consoles);
}

/*
 * A socket's mode, as a quoted octal string ("0660"): an unquoted 0660 is octal to YAML 1.1 and
 * decimal to YAML 1.2, and 660 is decimal to both, so only a string says one thing.
 */
static int parse_socket_mode(Ctx *c, void *data) {
        PolicySocket *s = data;
        const char *v;
        int r;

        r = reader_expect_scalar(c, "a quoted octal mode");
        if (r < 0)
                return r;
        if (c->event->data.scalar.style != YAML_SINGLE_QUOTED_SCALAR_STYLE &&
            c->event->data.scalar.style != YAML_DOUBLE_QUOTED_SCALAR_STYLE)
                return fail(c, E_POLICY_TYPE, "expected a quoted octal mode such as \"0660\"");
        v = reader_scalar(c);
        if (c->event->data.scalar.length != 4 || v[0] != '0' || strspn(v, "01234567") != 4)
                return fail(c, E_POLICY_VALUE, "expected four octal digits such as \"0660\"");
        mode_t m = (mode_t)strtoul(v, NULL, 8);
        if (m < 0600 || m > 0777)
                return fail(c, E_POLICY_RANGE, "must be between \"0600\" and \"0777\"");
        s->mode = m;
        return 0;
}

static int parse_socket_group(Ctx *c, void *data) {
        PolicySocket *s = data;
        PolicyPrincipal g;
        int r;

        if (reader_is_null(c)) {
                principal_done(&s->group);
                s->has_group = false;
                return 0;
        }
        r = get_principal(c, true, false, &g);
        if (r < 0)
                return r;
        principal_done(&s->group);
        s->group = g;
        s->has_group = true;
        return 0;
}

static int parse_socket_path(Ctx *c, void *data) {
        PolicySocket *s = data;
        Mark m = reader_here(c);
        int r;

        r = reader_path(c, POLICY_SOCKET_PATH_MAX, &s->path);
        if (r < 0)
                return r;
        if (s == &c->policy->agent_socket)
                c->agent_path = m;
        else
                c->console_path = m;
        return 0;
}

static const Field socket_fields[] = {
        {"path", parse_socket_path},
        {"mode", parse_socket_mode},
        {"group", parse_socket_group},
};

static int parse_socket_agent(Ctx *c, void *data) {
        Policy *p = data;
        return reader_mapping(c, socket_fields, ELEMENTSOF(socket_fields), &p->agent_socket);
}

static int parse_socket_console(Ctx *c, void *data) {
        Policy *p = data;
        return reader_mapping(c, socket_fields, ELEMENTSOF(socket_fields), &p->console_socket);
}

static const Field sockets_fields[] = {
        {"agent", parse_socket_agent},
        {"console", parse_socket_console},
};

static int parse_sockets(Ctx *c, void *data) {
        return reader_mapping(c, sockets_fields, ELEMENTSOF(sockets_fields), data);
}

static int parse_state_directory(Ctx *c, void *data) {
        Policy *p = data;
        return reader_path(c, POLICY_PATH_MAX, &p->state_directory);
}

static int parse_runtime_directory(Ctx *c, void *data) {
        Policy *p = data;
        return reader_path(c, POLICY_PATH_MAX, &p->runtime_directory);
}

static int parse_security_level(Ctx *c, void *data) {
        Policy *p = data;
        uint64_t v;
        int r;

        r = reader_uint(c, 1, 3, &v);
        if (r < 0)
                return r;
        p->security_level = (unsigned)v;
        return 0;
}

static int parse_allow_unsigned(Ctx *c, void *data) {
        Policy *p = data;
        return reader_bool(c, &p->allow_unsigned);
}

static int parse_uid_first(Ctx *c, void *data) {
        Policy *p = data;
        uint64_t v;
        Mark m = reader_here(c);
        int r;

        r = reader_uint(c, POLICY_UID_FIRST_MIN, POLICY_UID_LAST_MAX, &v);
        if (r < 0)
                return r;
        p->ephemeral_uid_first = (uint32_t)v;
        c->uid_first = m;
        return 0;
}

static int parse_uid_last(Ctx *c, void *data) {
        Policy *p = data;
        uint64_t v;
        Mark m = reader_here(c);
        int r;

        r = reader_uint(c, POLICY_UID_FIRST_MIN, POLICY_UID_LAST_MAX, &v);
        if (r < 0)
                return r;
        p->ephemeral_uid_last = (uint32_t)v;
        c->uid_last = m;
        return 0;
}

static const Field uid_fields[] = {
        {"first", parse_uid_first},
        {"last", parse_uid_last},
};

static int parse_ephemeral_uids(Ctx *c, void *data) {
        return reader_mapping(c, uid_fields, ELEMENTSOF(uid_fields), data);
}

#define LIMIT_U32(field, lo, hi)                                                                   \
        static int parse_limit_##field(Ctx *c, void *data) {                                       \
                PolicyLimits *l = data;                                                            \
                uint64_t v;                                                                        \
                int r = reader_uint(c, lo, hi, &v);                                                \
                if (r < 0)                                                                         \
                        return r;                                                                  \
                l->field = (uint32_t)v;                                                            \
                return 0;                                                                          \
        }

LIMIT_U32(max_plugins_per_handle, 1, 64)
LIMIT_U32(concurrent_runs, 1, 256)
LIMIT_U32(pending_tickets_per_agent, 1, 1024)

static int parse_limit_connections_per_uid(Ctx *c, void *data) {
        PolicyLimits *l = data;
        Mark m = reader_here(c);
        uint64_t v;
        int r;

        r = reader_uint(c, 1, 1024, &v);
        if (r < 0)
                return r;
        l->connections_per_uid = (uint32_t)v;
        c->per_uid = m;
        return 0;
}

static int parse_limit_connections_total(Ctx *c, void *data) {
        PolicyLimits *l = data;
        Mark m = reader_here(c);
        uint64_t v;
        int r;

        r = reader_uint(c, 1, 65536, &v);
        if (r < 0)
                return r;
        l->connections_total = (uint32_t)v;
        c->total = m;
        return 0;
}

static int parse_limit_message_bytes(Ctx *c, void *data) {
        PolicyLimits *l = data;
        return reader_size(c, 4 * KiB, 16 * MiB, &l->message_bytes);
}

static int parse_limit_max_handle_bytes(Ctx *c, void *data) {
        PolicyLimits *l = data;
        return reader_size(c, KiB, 4 * (uint64_t)GiB, &l->max_handle_bytes);
}

static int parse_limit_idle(Ctx *c, void *data) {
        PolicyLimits *l = data;
        Mark m = reader_here(c);
        int r;

        r = reader_duration(c, 1, 30 * DAY_SEC, &l->session_idle_timeout_sec);
        if (r >= 0)
                c->idle = m;
        return r;
}

static int parse_limit_absolute(Ctx *c, void *data) {
        PolicyLimits *l = data;
        Mark m = reader_here(c);
        int r;

        r = reader_duration(c, 1, 30 * DAY_SEC, &l->session_absolute_timeout_sec);
        if (r >= 0)
                c->absolute = m;
        return r;
}

static int parse_limit_ticket_timeout(Ctx *c, void *data) {
        PolicyLimits *l = data;
        return reader_duration(c, 1, 30 * DAY_SEC, &l->ticket_timeout_sec);
}

static const Field limits_fields[] = {
        {"max_plugins_per_handle", parse_limit_max_plugins_per_handle},
        {"concurrent_runs", parse_limit_concurrent_runs},
        {"pending_tickets_per_agent", parse_limit_pending_tickets_per_agent},
        {"connections_per_uid", parse_limit_connections_per_uid},
        {"connections_total", parse_limit_connections_total},
        {"message_bytes", parse_limit_message_bytes},
        {"session_idle_timeout", parse_limit_idle},
        {"session_absolute_timeout", parse_limit_absolute},
        {"max_handle_bytes", parse_limit_max_handle_bytes},
        {"ticket_timeout", parse_limit_ticket_timeout},
};

static int parse_limits(Ctx *c, void *data) {
        Policy *p = data;
        return reader_mapping(c, limits_fields, ELEMENTSOF(limits_fields), &p->limits);
}

static int parse_scope_backend(Ctx *c, void *data) {
        PolicyScope *s = data;
        _cleanup_free_ char *v = NULL;
        int r;

        r = reader_string(c, 16, &v);
        if (r == -EINVAL && c->diag->code == E_POLICY_VALUE)
                return fail(c, E_POLICY_VALUE, "expected systemd or none");
        if (r < 0)
                return r;
        for (int b = 0; b < _POLICY_SCOPE_MAX; b++)
                if (strcmp(v, policy_scope_backend_name(b)) == 0) {
                        s->backend = b;
                        return 0;
                }
        return fail(c, E_POLICY_VALUE, "expected systemd or none");
}

/*
 * The bus whose systemd manager creates the scopes: "system", "user", or a D-Bus address. Only
 * unix: addresses: lockd runs with PrivateNetwork= and must never reach a manager over TCP.
 */
static int parse_scope_bus(Ctx *c, void *data) {
        PolicyScope *s = data;
        _cleanup_free_ char *v = NULL;
        int r;

        r = reader_string(c, POLICY_BUS_ADDRESS_MAX, &v);
        if (r < 0)
                return r;
        free(s->bus_address);
        s->bus_address = NULL;
        if (strcmp(v, "system") == 0)
                s->bus = POLICY_BUS_SYSTEM;
        else if (strcmp(v, "user") == 0)
                s->bus = POLICY_BUS_USER;
        else if (strncmp(v, "unix:", 5) == 0 && v[5] != '\0') {
                s->bus = POLICY_BUS_ADDRESS;
                s->bus_address = TAKE_PTR(v);
        } else
                return fail(c, E_POLICY_VALUE,
                            "expected system, user or a D-Bus address starting with 'unix:'");
        return 0;
}

/* systemd's rule for a slice name, and not the root slice "-.slice". */
static bool slice_name_valid(const char *s) {
        size_t n = strlen(s), m;

        if (n > POLICY_SLICE_MAX || n <= 6 || strcmp(s + n - 6, ".slice") != 0)
                return false;
        m = n - 6;
        for (size_t i = 0; i < m; i++) {
                char ch = s[i];
                if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                      (ch >= '0' && ch <= '9') || strchr(":_.\\-", ch)))
                        return false;
        }
        if (s[0] == '-' || s[m - 1] == '-')
                return false;
        for (size_t i = 0; i + 1 < m; i++)
                if (s[i] == '-' && s[i + 1] == '-')
                        return false;
        return true;
}

static int parse_scope_slice(Ctx *c, void *data) {
        PolicyScope *s = data;
        _cleanup_free_ char *v = NULL;
        int r;

        r = reader_string(c, POLICY_SLICE_MAX, &v);
        if (r < 0)
                return r;
        if (!slice_name_valid(v))
                return fail(c, E_POLICY_VALUE,
                            "expected a slice unit name such as lockd-plugins.slice");
        free(s->slice);
        s->slice = TAKE_PTR(v);
        return 0;
}

static int parse_scope_cpu_quota(Ctx *c, void *data) {
        PolicyScope *s = data;
        const char *v;
        size_t n, digits;
        uint64_t q;
        int r;

        if (reader_is_null(c)) {
                s->cpu_quota_percent = 0;
                return 0;
        }
        r = reader_expect_scalar(c, "a percentage such as \"50%\" or null");
        if (r < 0)
                return r;
        if (reader_scalar_kind(c->event) != SCALAR_STRING)
                return fail(c, E_POLICY_TYPE, "expected a percentage such as \"50%%\", found %s",
                            reader_event_kind(c->event));
        v = reader_scalar(c);
        n = c->event->data.scalar.length;
        digits = strspn(v, "0123456789");
        if (digits == 0 || digits + 1 != n || v[digits] != '%' || (digits > 1 && v[0] == '0'))
                return fail(c, E_POLICY_VALUE, "expected a percentage such as \"50%%\"");
        if (!reader_digits(v, digits, &q) || q < 1 || q > 10000)
                return fail(c, E_POLICY_RANGE, "must be between 1%% and 10000%%");
        s->cpu_quota_percent = (uint32_t)q;
        return 0;
}

static const Field scope_fields[] = {
        {"backend", parse_scope_backend},
        {"bus", parse_scope_bus},
        {"slice", parse_scope_slice},
        {"cpu_quota", parse_scope_cpu_quota},
};

static int parse_scope(Ctx *c, void *data) {
        Policy *p = data;
        return reader_mapping(c, scope_fields, ELEMENTSOF(scope_fields), &p->scope);
}

static int parse_marketplace_name(Ctx *c, void *data) {
        PolicyMarketplace *m = data;
        const Policy *p = c->policy;
        _cleanup_free_ char *v = NULL;
        int r;

        r = reader_string(c, POLICY_MARKETPLACE_NAME_MAX, &v);
        if (r < 0)
                return r;
        if (!((v[0] >= 'a' && v[0] <= 'z') || (v[0] >= '0' && v[0] <= '9')) ||
            strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(v))
                return fail(c, E_POLICY_VALUE, "expected [a-z0-9][a-z0-9-]*");
        /* m is the entry being parsed, not yet counted in p->n_marketplaces. */
        for (size_t i = 0; i < p->n_marketplaces; i++)
                if (strcmp(p->marketplaces[i].name, v) == 0)
                        return fail(c, E_POLICY_DUPLICATE_KEY, "marketplace '%s' given twice", v);
        free(m->name);
        m->name = TAKE_PTR(v);
        return 0;
}

/* The OIDC issuer: an https URL with a host and no user information, compared exactly later. */
static int parse_marketplace_issuer(Ctx *c, void *data) {
        PolicyMarketplace *m = data;
        _cleanup_free_ char *v = NULL;
        size_t host;
        int r;

        r = reader_string(c, POLICY_ISSUER_MAX, &v);
        if (r < 0)
                return r;
        if (strncmp(v, "https://", 8) != 0)
                return fail(c, E_POLICY_VALUE, "expected an https:// URL");
        host = strcspn(v + 8, "/");
        if (host == 0 ||
            strspn(v + 8, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                          "0123456789.-:") < host ||
            strchr(v, ' '))
                return fail(c, E_POLICY_VALUE, "expected an https:// URL with a host name");
        free(m->issuer);
        m->issuer = TAKE_PTR(v);
        return 0;
}

static int parse_marketplace_identity(Ctx *c, void *data) {
        PolicyMarketplace *m = data;
        _cleanup_free_ char *v = NULL;
        const char *why;
        size_t n_warnings;
        int r;

        r = reader_string(c, POLICY_IDENTITY_MAX, &v);
        if (r < 0)
                return r;
        /* Before regcomp() sees it: some patterns make regcomp() itself exhaust memory. */
        if (identity_pattern_check(v, &why) < 0)
                return fail(c, E_POLICY_VALUE, "%s", why);
        /* The same compile (REG_EXTENDED) the verifier uses; the lint's warnings are lockctl's. */
        r = identity_pattern_lint(v, NULL, 0, &n_warnings);
        if (r == -EINVAL)
                return fail(c, E_POLICY_VALUE, "not a valid POSIX extended regular expression");
        if (r < 0)
                return r;
        free(m->identity);
        m->identity = TAKE_PTR(v);
        return 0;
}

static int parse_marketplace_trusted_root(Ctx *c, void *data) {
        PolicyMarketplace *m = data;
        return reader_path(c, POLICY_PATH_MAX, &m->trusted_root);
}

static const Field marketplace_fields[] = {
        {"name", parse_marketplace_name},
        {"issuer", parse_marketplace_issuer},
        {"identity", parse_marketplace_identity},
        {"trusted_root", parse_marketplace_trusted_root},
};

static void marketplace_done(PolicyMarketplace *m) {
        free(m->name);
        free(m->issuer);
        free(m->identity);
        free(m->trusted_root);
        *m = (PolicyMarketplace){};
}

static int parse_marketplace(Ctx *c, void *data, size_t index) {
        Policy *p = data;
        PolicyMarketplace m = {}, *a;
        Mark start = reader_here(c);
        const char *missing = NULL;
        int r;

        if (p->n_marketplaces >= POLICY_MARKETPLACES_MAX)
                return fail(c, E_POLICY_RANGE, "more than %d marketplaces",
                            POLICY_MARKETPLACES_MAX);
        r = reader_mapping(c, marketplace_fields, ELEMENTSOF(marketplace_fields), &m);
        if (r >= 0) {
                missing = !m.name           ? "name"
                          : !m.issuer       ? "issuer"
                          : !m.identity     ? "identity"
                          : !m.trusted_root ? "trusted_root"
                                            : NULL;
                if (missing)
                        r = reader_fail_at(c, E_POLICY_MISSING, start, "%s: '%s' is missing",
                                           c->path, missing);
        }
        if (r >= 0) {
                a = reallocarray(p->marketplaces, p->n_marketplaces + 1, sizeof(*a));
                if (!a)
                        r = -ENOMEM;
                else {
                        p->marketplaces = a;
                        m.line = c->is_default ? 0 : start.line;
                        m.column = c->is_default ? 0 : start.column;
                        a[p->n_marketplaces++] = m;
                        return 0;
                }
        }
        marketplace_done(&m);
        return r;
}

static void marketplaces_clear(Policy *p) {
        for (size_t i = 0; i < p->n_marketplaces; i++)
                marketplace_done(&p->marketplaces[i]);
        free(p->marketplaces);
        p->marketplaces = NULL;
        p->n_marketplaces = 0;
}

static int parse_marketplaces(Ctx *c, void *data) {
        Policy *p = data;

        if (c->event->type != YAML_SEQUENCE_START_EVENT)
                return fail(c, E_POLICY_TYPE, "expected a list, found %s",
                            reader_event_kind(c->event));
        marketplaces_clear(p);
        return reader_sequence(c, parse_marketplace, p);
}

static const Field root_fields[] = {
        {"security_level", parse_security_level},
        {"agents", parse_agents},
        {"consoles", parse_consoles},
        {"sockets", parse_sockets},
        {"state_directory", parse_state_directory},
        {"runtime_directory", parse_runtime_directory},
        {"ephemeral_uids", parse_ephemeral_uids},
        {"limits", parse_limits},
        {"scope", parse_scope},
        {"marketplaces", parse_marketplaces},
        {"allow_unsigned", parse_allow_unsigned},
};

/* The rules between keys, checked once the default and the file are both applied. */
static int check_policy(Ctx *c) {
        const Policy *p = c->policy;
        const PolicyLimits *l = &p->limits;

        if (p->ephemeral_uid_first > p->ephemeral_uid_last)
                return reader_fail_pair(c, E_POLICY_RANGE, c->uid_first, c->uid_last,
                                        "ephemeral_uids: first (%" PRIu32
                                        ") is above last (%" PRIu32 ")",
                                        p->ephemeral_uid_first, p->ephemeral_uid_last);
        if (p->ephemeral_uid_last - p->ephemeral_uid_first >= POLICY_EPHEMERAL_UIDS_MAX)
                return reader_fail_pair(c, E_POLICY_RANGE, c->uid_first, c->uid_last,
                                        "ephemeral_uids: more than %" PRIu32 " uids",
                                        POLICY_EPHEMERAL_UIDS_MAX);
        /* 65535 is (uint16_t)-1, which some interfaces still read as "no uid". */
        if (p->ephemeral_uid_first <= 65535 && p->ephemeral_uid_last >= 65535)
                return reader_fail_pair(c, E_POLICY_RANGE, c->uid_first, c->uid_last,
                                        "ephemeral_uids: the range must not contain 65535");
        if (l->connections_total < l->connections_per_uid)
                return reader_fail_pair(c, E_POLICY_RANGE, c->per_uid, c->total,
                                        "limits: connections_total (%" PRIu32
                                        ") is below connections_per_uid (%" PRIu32 ")",
                                        l->connections_total, l->connections_per_uid);
        if (l->session_absolute_timeout_sec < l->session_idle_timeout_sec)
                return reader_fail_pair(c, E_POLICY_RANGE, c->idle, c->absolute,
                                        "limits: session_absolute_timeout is shorter than "
                                        "session_idle_timeout");
        if (strcmp(p->agent_socket.path, p->console_socket.path) == 0)
                return reader_fail_pair(
                        c, E_POLICY_VALUE, c->agent_path, c->console_path,
                        "sockets: the agent and console sockets have the same path");

        /* The same user or group, by name or by number, in both roles. NSS is the daemon's
         * (roles_resolve()); here only what the file itself says. */
        for (size_t i = 0; i < p->agents.n_principals; i++)
                for (size_t j = 0; j < p->consoles.n_principals; j++) {
                        const PolicyPrincipal *a = &p->agents.principals[i],
                                              *b = &p->consoles.principals[j];
                        char shown[48];

                        if (!principal_same(a, b))
                                continue;
                        if (a->numeric)
                                snprintf(shown, sizeof(shown), "%" PRIu32, a->id);
                        else
                                snprintf(shown, sizeof(shown), "'%s'", a->name);
                        return reader_fail_pair(
                                c, E_POLICY_ROLES_OVERLAP, (Mark){a->line, a->column},
                                (Mark){b->line, b->column}, "%s %s is both an agent and a console",
                                a->is_group ? "group" : "user", shown);
                }
        return 0;
}

static int parse_layers(const char *buf, size_t len, bool with_file, Policy **ret,
                        PolicyDiag *diag) {
        _cleanup_(policy_freep) Policy *p = NULL;
        Ctx c = {.diag = diag};
        int r;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        c.policy = p;

        /* The compiled-in default first, so omitted keys have one source of truth. */
        c.buf = policy_default_yaml;
        c.len = strlen(policy_default_yaml);
        c.is_default = true;
        r = reader_prescan(&c);
        if (r >= 0)
                r = reader_stream(&c, root_fields, ELEMENTSOF(root_fields));
        if (r < 0)
                return r; /* a broken default: test-policy parses it, so this is a build bug */

        if (with_file) {
                /* Only places in the file are reported: forget where the default said what. */
                c.uid_first = c.uid_last = c.per_uid = c.total = (Mark){};
                c.idle = c.absolute = c.agent_path = c.console_path = (Mark){};
                c.buf = buf;
                c.len = len;
                c.is_default = false;
                r = reader_prescan(&c);
                if (r < 0)
                        return r;
                r = reader_stream(&c, root_fields, ELEMENTSOF(root_fields));
                if (r < 0)
                        return r;
        }
        r = check_policy(&c);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

int policy_parse(const char *buf, size_t len, Policy **ret, PolicyDiag *diag) {
        PolicyDiag unused;

        if (!diag)
                diag = &unused;
        *diag = (PolicyDiag){};
        if (!ret || (!buf && len > 0))
                return -EINVAL;
        if (len > POLICY_BYTES_MAX) {
                diag->code = E_POLICY_TOO_LARGE;
                snprintf(diag->message, sizeof(diag->message), "lockd.yaml: larger than %d bytes",
                         POLICY_BYTES_MAX);
                return -EINVAL;
        }
        return parse_layers(buf ?: "", len, true, ret, diag);
}

int policy_default(Policy **ret) {
        PolicyDiag diag = {};

        if (!ret)
                return -EINVAL;
        return parse_layers(NULL, 0, false, ret, &diag);
}

Policy *policy_free(Policy *p) {
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->agents.n_principals; i++)
                principal_done(&p->agents.principals[i]);
        free(p->agents.principals);
        for (size_t i = 0; i < p->consoles.n_principals; i++)
                principal_done(&p->consoles.principals[i]);
        free(p->consoles.principals);
        free(p->agent_socket.path);
        principal_done(&p->agent_socket.group);
        free(p->console_socket.path);
        principal_done(&p->console_socket.group);
        free(p->state_directory);
        free(p->runtime_directory);
        free(p->scope.bus_address);
        free(p->scope.slice);
        marketplaces_clear(p);
        free(p);
        return NULL;
}
