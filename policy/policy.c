/* lockd.yaml: the schema (a table of fields per mapping), the rules between keys, and the API. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "identity.h"
#include "macro.h"
#include "marketplace-name.h"
#include "policy-internal.h"
#include "policy.h"

#define POLICY_BUS_ADDRESS_MAX      512
#define POLICY_SLICE_MAX            255 /* systemd's UNIT_NAME_MAX minus the NUL */
#define POLICY_ISSUER_MAX           256
#define POLICY_IDENTITY_MAX         1024
#define POLICY_UID_FIRST_MIN        1000 /* below are system users (SYS_UID_MAX is 999) */
#define POLICY_UID_LAST_MAX         (UINT32_C(0x7fffffff) - 1)

/*
 * offsetof(type, member) for a Field's arg, refused at compile time unless member is a ctype:
 * the parsers below write through the offset as that type.
 */
#define MEMBER_OF(type, member, ctype)                                                             \
        (offsetof(type, member) + 0 * sizeof(&((type *)NULL)->member == (ctype *)NULL))

/* A nested mapping (Field.arg of parse_section()): its fields and its struct in the parent's. */
typedef struct Section {
        const Field *fields;
        size_t n_fields;
        size_t offset;
} Section;

#define SECTION_AT(f, type, member, ctype)                                                         \
        (&(const Section){(f), ELEMENTSOF(f), MEMBER_OF(type, member, ctype)})
/* A nested mapping whose keys fill the parent's struct itself. */
#define SECTION_FLAT(f) (&(const Section){(f), ELEMENTSOF(f), 0})

static int parse_section(Ctx *c, void *data) {
        const Section *s = c->field_arg;

        return reader_mapping(c, s->fields, s->n_fields, (char *)data + s->offset);
}

/* A number key (Field.arg of parse_number()): how it is written, its bounds and its place. */
typedef enum NumberKind {
        NUMBER_U32,      /* reader_uint() into a uint32_t; max is at most UINT32_MAX */
        NUMBER_SIZE,     /* reader_size() into a uint64_t */
        NUMBER_DURATION, /* reader_duration() into a uint64_t */
} NumberKind;

typedef struct Number {
        NumberKind kind;
        uint64_t min, max;
        size_t offset;
        KeyMark mark; /* where c keeps the place it was written, or MARK_NONE */
} Number;

/* hi, refused at compile time above UINT32_MAX: parse_number() stores a NUMBER_U32 as uint32_t. */
#define U32_MAX_OF(hi) ((hi) + 0 * sizeof(char[(hi) <= UINT32_MAX ? 1 : -1]))
#define U32_AT(lo, hi, type, member, m)                                                            \
        (&(const Number){NUMBER_U32, (lo), U32_MAX_OF(hi), MEMBER_OF(type, member, uint32_t), (m)})
#define SIZE_AT(lo, hi, type, member)                                                              \
        (&(const Number){NUMBER_SIZE, (lo), (hi), MEMBER_OF(type, member, uint64_t), MARK_NONE})
#define DURATION_AT(lo, hi, type, member, m)                                                       \
        (&(const Number){NUMBER_DURATION, (lo), (hi), MEMBER_OF(type, member, uint64_t), (m)})

/* Reads the number c->field_arg describes into its member of data; untouched on failure. */
static int parse_number(Ctx *c, void *data) {
        const Number *n = c->field_arg;
        void *dst = (char *)data + n->offset;
        Mark m = reader_here(c);
        uint64_t v;
        int r;

        switch (n->kind) {
        case NUMBER_U32:
                r = reader_uint(c, n->min, n->max, &v);
                if (r >= 0)
                        *(uint32_t *)dst = (uint32_t)v; /* v <= max <= UINT32_MAX */
                break;
        case NUMBER_SIZE:
                r = reader_size(c, n->min, n->max, dst);
                break;
        case NUMBER_DURATION:
                r = reader_duration(c, n->min, n->max, dst);
                break;
        default:
                return -EINVAL;
        }
        if (r < 0)
                return r;
        if (n->mark != MARK_NONE)
                c->marks[n->mark] = m;
        return 0;
}

/* An absolute path of at most POLICY_PATH_MAX bytes (Field.arg: its char * member's offset). */
static int parse_path(Ctx *c, void *data) {
        const size_t *offset = c->field_arg;

        return reader_path(c, POLICY_PATH_MAX, (char **)((char *)data + *offset));
}

#define PATH_AT(type, member) (&(const size_t){MEMBER_OF(type, member, char *)})

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
                p.source = c->source;
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
        r = get_principal(c, l->is_group, role == &c->policy->agents, &p);
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

/*
 * users or groups (Field.arg: whether groups): the list replaces those of the layer below.
 * Something other than a list is refused by reader_sequence(), at the same place and with the
 * same message; what was dropped by then goes with the policy the failure discards.
 */
static int parse_role_list(Ctx *c, void *data) {
        RoleList l = {.role = data, .is_group = *(const bool *)c->field_arg};

        role_drop(l.role, l.is_group);
        return reader_sequence(c, parse_role_item, &l);
}

static const Field role_fields[] = {
        {"users", parse_role_list, &(const bool){false}},
        {"groups", parse_role_list, &(const bool){true}},
};

static int parse_require_confinement(Ctx *c, void *data) {
        PolicyRole *role = data;

        c->marks[MARK_CONFINEMENT] = reader_here(c);
        return reader_bool(c, &role->require_confinement);
}

/* The agents' section: the role lists, and whether an agent must run confined. */
static const Field agent_fields[] = {
        {"users", parse_role_list, &(const bool){false}},
        {"groups", parse_role_list, &(const bool){true}},
        {"require_confinement", parse_require_confinement, NULL},
};

static void role_done(PolicyRole *role) {
        for (size_t i = 0; i < role->n_principals; i++)
                principal_done(&role->principals[i]);
        free(role->principals);
        *role = (PolicyRole){};
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
        c->marks[s == &c->policy->agent_socket ? MARK_AGENT_PATH : MARK_CONSOLE_PATH] = m;
        return 0;
}

static const Field socket_fields[] = {
        {"path", parse_socket_path, NULL},
        {"mode", parse_socket_mode, NULL},
        {"group", parse_socket_group, NULL},
};

static const Field sockets_fields[] = {
        {"agent", parse_section, SECTION_AT(socket_fields, Policy, agent_socket, PolicySocket)},
        {"console", parse_section, SECTION_AT(socket_fields, Policy, console_socket, PolicySocket)},
};

static void socket_done(PolicySocket *s) {
        free(s->path);
        principal_done(&s->group);
        *s = (PolicySocket){};
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

static int parse_release_quantum(Ctx *c, void *data) {
        Policy *p = data;

        return reader_duration_ms(c, POLICY_RELEASE_QUANTUM_MIN_MS, POLICY_RELEASE_QUANTUM_MAX_MS,
                                  &p->release_quantum_ms);
}

static int parse_allow_unsigned(Ctx *c, void *data) {
        Policy *p = data;
        return reader_bool(c, &p->allow_unsigned);
}

static const Field uid_fields[] = {
        {"first", parse_number,
         U32_AT(POLICY_UID_FIRST_MIN, POLICY_UID_LAST_MAX, Policy, ephemeral_uid_first,
                MARK_UID_FIRST)},
        {"last", parse_number,
         U32_AT(POLICY_UID_FIRST_MIN, POLICY_UID_LAST_MAX, Policy, ephemeral_uid_last,
                MARK_UID_LAST)},
};

static const Field limits_fields[] = {
        {"max_plugins_per_handle", parse_number,
         U32_AT(1, 64, PolicyLimits, max_plugins_per_handle, MARK_NONE)},
        {"concurrent_runs", parse_number, U32_AT(1, 256, PolicyLimits, concurrent_runs, MARK_NONE)},
        {"pending_tickets_per_agent", parse_number,
         U32_AT(1, 1024, PolicyLimits, pending_tickets_per_agent, MARK_NONE)},
        {"connections_per_uid", parse_number,
         U32_AT(1, 1024, PolicyLimits, connections_per_uid, MARK_PER_UID)},
        {"connections_total", parse_number,
         U32_AT(1, 65536, PolicyLimits, connections_total, MARK_TOTAL)},
        {"console_connections", parse_number,
         U32_AT(1, 1024, PolicyLimits, console_connections, MARK_NONE)},
        {"agent_idle_timeout", parse_number,
         DURATION_AT(1, DAY_SEC, PolicyLimits, agent_idle_timeout_sec, MARK_NONE)},
        {"message_bytes", parse_number, SIZE_AT(4 * KiB, 16 * MiB, PolicyLimits, message_bytes)},
        {"session_idle_timeout", parse_number,
         DURATION_AT(1, 30 * DAY_SEC, PolicyLimits, session_idle_timeout_sec, MARK_IDLE)},
        {"session_absolute_timeout", parse_number,
         DURATION_AT(1, 30 * DAY_SEC, PolicyLimits, session_absolute_timeout_sec, MARK_ABSOLUTE)},
        {"max_handle_bytes", parse_number,
         SIZE_AT(KiB, 4 * (uint64_t)GiB, PolicyLimits, max_handle_bytes)},
        {"handle_store_bytes", parse_number,
         SIZE_AT(MiB, 1024 * (uint64_t)GiB, PolicyLimits, handle_store_bytes)},
        {"file_read_timeout", parse_number,
         DURATION_AT(1, 3600, PolicyLimits, file_read_timeout_sec, MARK_NONE)},
        {"ticket_timeout", parse_number,
         DURATION_AT(1, 30 * DAY_SEC, PolicyLimits, ticket_timeout_sec, MARK_NONE)},
};

static int parse_scope_backend(Ctx *c, void *data) {
        PolicyScope *s = data;
        _cleanup_free_ char *v = NULL;
        int r;

        c->marks[MARK_BACKEND] = reader_here(c);
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
        {"backend", parse_scope_backend, NULL},
        {"bus", parse_scope_bus, NULL},
        {"slice", parse_scope_slice, NULL},
        {"cpu_quota", parse_scope_cpu_quota, NULL},
        {"ahead", parse_number, U32_AT(0, 16, PolicyScope, ahead, MARK_NONE)},
};

static int parse_marketplace_name(Ctx *c, void *data) {
        PolicyMarketplace *m = data;
        const Policy *p = c->policy;
        _cleanup_free_ char *v = NULL;
        int r;

        r = reader_string(c, MARKETPLACE_NAME_MAX, &v);
        if (r < 0)
                return r;
        if (!marketplace_name_valid(v))
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

        Mark at = reader_here(c);

        r = reader_string(c, POLICY_IDENTITY_MAX, &v);
        if (r < 0)
                return r;
        m->identity_line = at.line;
        m->identity_column = at.column;
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

static int parse_marketplace_force(Ctx *c, void *data) {
        PolicyMarketplace *m = data;
        return reader_bool(c, &m->force);
}

static const Field marketplace_fields[] = {
        {"name", parse_marketplace_name, NULL},
        {"issuer", parse_marketplace_issuer, NULL},
        {"identity", parse_marketplace_identity, NULL},
        {"trusted_root", parse_path, PATH_AT(PolicyMarketplace, trusted_root)},
        {"force", parse_marketplace_force, NULL},
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
        /*
         * The identity lint of `lockctl marketplace add`, here too: a pattern that lets other
         * repositories sign (match-all, alternation, an open owner or repository) is refused
         * unless the administrator wrote force: true beside it, as lockctl asks for --force.
         */
        if (r >= 0 && !m.force) {
                IdentityWarning w;
                size_t n = 0;

                r = identity_pattern_lint(m.identity, &w, 1, &n);
                if (r >= 0 && n > 0)
                        r = reader_fail_at(c, E_POLICY_VALUE,
                                           (Mark){m.identity_line, m.identity_column, c->source},
                                           "%s.identity: %s: %s (write force: true to accept it)",
                                           c->path, identity_warning_name(w.code), w.message);
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

/* The list replaces the layer's below; something else fails as in parse_role_list(). */
static int parse_marketplaces(Ctx *c, void *data) {
        marketplaces_clear(data);
        return reader_sequence(c, parse_marketplace, data);
}

static const Field audit_fields[] = {
        {"segment_bytes", parse_number,
         SIZE_AT(64 * KiB, 4 * (uint64_t)GiB, PolicyAudit, segment_bytes)},
        {"retain_segments", parse_number,
         U32_AT(0, 100000, PolicyAudit, retain_segments, MARK_NONE)},
};

static const Field root_fields[] = {
        {"security_level", parse_security_level, NULL},
        {"release_quantum", parse_release_quantum, NULL},
        {"agents", parse_section, SECTION_AT(agent_fields, Policy, agents, PolicyRole)},
        {"consoles", parse_section, SECTION_AT(role_fields, Policy, consoles, PolicyRole)},
        {"sockets", parse_section, SECTION_FLAT(sockets_fields)},
        {"state_directory", parse_path, PATH_AT(Policy, state_directory)},
        {"runtime_directory", parse_path, PATH_AT(Policy, runtime_directory)},
        {"ephemeral_uids", parse_section, SECTION_FLAT(uid_fields)},
        {"limits", parse_section, SECTION_AT(limits_fields, Policy, limits, PolicyLimits)},
        {"scope", parse_section, SECTION_AT(scope_fields, Policy, scope, PolicyScope)},
        {"audit", parse_section, SECTION_AT(audit_fields, Policy, audit, PolicyAudit)},
        {"marketplaces", parse_marketplaces, NULL},
        {"allow_unsigned", parse_allow_unsigned, NULL},
};

/* The rules between keys, checked once the default and the file are both applied. */
static int check_policy(Ctx *c) {
        const Policy *p = c->policy;
        const PolicyLimits *l = &p->limits;

        if (p->ephemeral_uid_first > p->ephemeral_uid_last)
                return reader_fail_pair(
                        c, E_POLICY_RANGE, c->marks[MARK_UID_FIRST], c->marks[MARK_UID_LAST],
                        "ephemeral_uids: first (%" PRIu32 ") is above last (%" PRIu32 ")",
                        p->ephemeral_uid_first, p->ephemeral_uid_last);
        if (p->ephemeral_uid_last - p->ephemeral_uid_first >= POLICY_EPHEMERAL_UIDS_MAX)
                return reader_fail_pair(
                        c, E_POLICY_RANGE, c->marks[MARK_UID_FIRST], c->marks[MARK_UID_LAST],
                        "ephemeral_uids: more than %" PRIu32 " uids", POLICY_EPHEMERAL_UIDS_MAX);
        /* 65535 is (uint16_t)-1, which some interfaces still read as "no uid". */
        if (p->ephemeral_uid_first <= 65535 && p->ephemeral_uid_last >= 65535)
                return reader_fail_pair(c, E_POLICY_RANGE, c->marks[MARK_UID_FIRST],
                                        c->marks[MARK_UID_LAST],
                                        "ephemeral_uids: the range must not contain 65535");
        if (l->connections_total < l->connections_per_uid)
                return reader_fail_pair(c, E_POLICY_RANGE, c->marks[MARK_PER_UID],
                                        c->marks[MARK_TOTAL],
                                        "limits: connections_total (%" PRIu32
                                        ") is below connections_per_uid (%" PRIu32 ")",
                                        l->connections_total, l->connections_per_uid);
        if (l->session_absolute_timeout_sec < l->session_idle_timeout_sec)
                return reader_fail_pair(c, E_POLICY_RANGE, c->marks[MARK_IDLE],
                                        c->marks[MARK_ABSOLUTE],
                                        "limits: session_absolute_timeout is shorter than "
                                        "session_idle_timeout");
        /* Whether an agent can watch runs is the manager's to say: without one, nobody asks. */
        if (p->agents.require_confinement && p->scope.backend == POLICY_SCOPE_NONE)
                return reader_fail_pair(c, E_POLICY_VALUE, c->marks[MARK_CONFINEMENT],
                                        c->marks[MARK_BACKEND],
                                        "scope: backend none leaves no manager to confirm that "
                                        "agents are confined: set agents.require_confinement: "
                                        "false");
        if (strcmp(p->agent_socket.path, p->console_socket.path) == 0)
                return reader_fail_pair(
                        c, E_POLICY_VALUE, c->marks[MARK_AGENT_PATH], c->marks[MARK_CONSOLE_PATH],
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
                        return reader_fail_pair(c, E_POLICY_ROLES_OVERLAP,
                                                (Mark){a->line, a->column, a->source},
                                                (Mark){b->line, b->column, b->source},
                                                "%s %s is both an agent and a console",
                                                a->is_group ? "group" : "user", shown);
                }
        return 0;
}

/* The sources on top of the compiled-in default (none: the default alone). */
static int parse_layers(const PolicySource *sources, size_t n, Policy **ret, PolicyDiag *diag) {
        _cleanup_(policy_freep) Policy *p = NULL;
        Ctx c = {.diag = diag, .sources = sources};
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

        /* Only places in the user's files are reported: forget where the default said what. */
        memset(c.marks, 0, sizeof(c.marks));
        c.is_default = false;
        for (size_t i = 0; i < n; i++) {
                c.source = (unsigned)i;
                c.buf = sources[i].buf ?: "";
                c.len = sources[i].len;
                r = reader_prescan(&c);
                if (r >= 0)
                        r = reader_stream(&c, root_fields, ELEMENTSOF(root_fields));
                if (r < 0)
                        goto out;
        }
        r = check_policy(&c);
        if (r < 0)
                goto out;
        *ret = TAKE_PTR(p);
out:
        free(c.keys);
        return r;
}

int policy_parse(const char *buf, size_t len, Policy **ret, PolicyDiag *diag) {
        PolicySource s = {.name = "lockd.yaml", .buf = buf, .len = len};

        return policy_parse_sources(&s, 1, ret, diag);
}

int policy_parse_sources(const PolicySource *sources, size_t n, Policy **ret, PolicyDiag *diag) {
        PolicyDiag unused;

        if (!diag)
                diag = &unused;
        *diag = (PolicyDiag){};
        if (!ret || !sources || n == 0 || n > 1 + POLICY_DROPINS_MAX)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                if (!sources[i].name || (!sources[i].buf && sources[i].len > 0))
                        return -EINVAL;
                if (sources[i].len > POLICY_BYTES_MAX) {
                        diag->code = E_POLICY_TOO_LARGE;
                        diag->source = (unsigned)i;
                        snprintf(diag->message, sizeof(diag->message), "%s: larger than %d bytes",
                                 sources[i].name, POLICY_BYTES_MAX);
                        return -EINVAL;
                }
        }
        return parse_layers(sources, n, ret, diag);
}

int policy_default(Policy **ret) {
        PolicyDiag diag = {};

        if (!ret)
                return -EINVAL;
        return parse_layers(NULL, 0, ret, &diag);
}

Policy *policy_free(Policy *p) {
        if (!p)
                return NULL;
        role_done(&p->agents);
        role_done(&p->consoles);
        socket_done(&p->agent_socket);
        socket_done(&p->console_socket);
        free(p->state_directory);
        free(p->runtime_directory);
        free(p->scope.bus_address);
        free(p->scope.slice);
        marketplaces_clear(p);
        free(p);
        return NULL;
}

void policy_forced_warnings(const Policy *p,
                            void (*fn)(const PolicyMarketplace *m, const IdentityWarning *w,
                                       void *userdata),
                            void *userdata) {
        for (size_t i = 0; p && fn && i < p->n_marketplaces; i++) {
                const PolicyMarketplace *mp = &p->marketplaces[i];
                IdentityWarning w[4];
                size_t n = 0;

                if (!mp->force || identity_pattern_lint(mp->identity, w, ELEMENTSOF(w), &n) < 0)
                        continue;
                for (size_t k = 0; k < n && k < ELEMENTSOF(w); k++)
                        fn(mp, &w[k], userdata);
        }
}
