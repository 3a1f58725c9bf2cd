/* lockd.yaml: the printer of an effective policy, and the names of the policy's enums. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "macro.h"
#include "policy-internal.h"
#include "policy.h"

static const char *const error_names[_E_POLICY_MAX] = {
        [POLICY_OK] = "OK",
        [E_POLICY_TOO_LARGE] = "E_POLICY_TOO_LARGE",
        [E_POLICY_SYNTAX] = "E_POLICY_SYNTAX",
        [E_POLICY_UNSUPPORTED] = "E_POLICY_UNSUPPORTED",
        [E_POLICY_DUPLICATE_KEY] = "E_POLICY_DUPLICATE_KEY",
        [E_POLICY_UNKNOWN_KEY] = "E_POLICY_UNKNOWN_KEY",
        [E_POLICY_TYPE] = "E_POLICY_TYPE",
        [E_POLICY_RANGE] = "E_POLICY_RANGE",
        [E_POLICY_VALUE] = "E_POLICY_VALUE",
        [E_POLICY_ROLES_OVERLAP] = "E_POLICY_ROLES_OVERLAP",
        [E_POLICY_MISSING] = "E_POLICY_MISSING",
};

const char *policy_error_name(PolicyError e) {
        if ((unsigned)e >= _E_POLICY_MAX)
                return NULL;
        return error_names[e];
}

static const char *const backend_names[_POLICY_SCOPE_MAX] = {
        [POLICY_SCOPE_SYSTEMD] = "systemd",
        [POLICY_SCOPE_NONE] = "none",
};

const char *policy_scope_backend_name(PolicyScopeBackend b) {
        if ((unsigned)b >= _POLICY_SCOPE_MAX)
                return NULL;
        return backend_names[b];
}

/* Writes n with the largest unit of units[] (largest last) that divides it exactly. */
static void format_scaled(uint64_t n, const char *const *suffixes, const uint64_t *factors,
                          size_t n_units, char *buf, size_t len) {
        for (size_t i = n_units; i > 0; i--)
                if (n >= factors[i - 1] && n % factors[i - 1] == 0) {
                        snprintf(buf, len, "%" PRIu64 "%s", n / factors[i - 1], suffixes[i - 1]);
                        return;
                }
        snprintf(buf, len, "%" PRIu64, n);
}

void policy_format_size(uint64_t bytes, char *buf, size_t len) {
        static const char *const suffixes[] = {"KiB", "MiB", "GiB"};
        static const uint64_t factors[] = {KiB, MiB, GiB};

        format_scaled(bytes, suffixes, factors, ELEMENTSOF(factors), buf, len);
}

void policy_format_duration_ms(uint64_t ms, char *buf, size_t len) {
        static const char *const suffixes[] = {"ms", "s", "min"};
        static const uint64_t factors[] = {1, 1000, 60000};

        format_scaled(ms, suffixes, factors, ELEMENTSOF(factors), buf, len);
}

void policy_format_duration(uint64_t sec, char *buf, size_t len) {
        static const char *const suffixes[] = {"s", "min", "h", "d"};
        static const uint64_t factors[] = {1, 60, 3600, 86400};

        format_scaled(sec, suffixes, factors, ELEMENTSOF(factors), buf, len);
}

/* Whether s reads back as the same string when written plain: path and name characters only, and
 * not a word YAML 1.1 reads as null or a boolean. */
static bool plain_safe(const char *s) {
        static const char *const words[] = {"null", "true", "false", "yes", "no",
                                            "on",   "off",  "y",     "n",   NULL};

        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_' || *s == '/'))
                return false;
        if (strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-") !=
            strlen(s))
                return false;
        for (size_t i = 0; words[i]; i++)
                if (strcasecmp(s, words[i]) == 0)
                        return false;
        return true;
}

/* Writes s plain when plain_safe(), else as a double-quoted YAML string. The parser refused every
 * control character, so only '"' and '\' need an escape. */
static void put_string(FILE *f, const char *s) {
        if (plain_safe(s)) {
                fputs(s, f);
                return;
        }
        fputc('"', f);
        for (; *s; s++) {
                if (*s == '"' || *s == '\\')
                        fputc('\\', f);
                fputc(*s, f);
        }
        fputc('"', f);
}

static void put_principal(FILE *f, const PolicyPrincipal *p) {
        if (p->numeric)
                fprintf(f, "%" PRIu32, p->id);
        else
                put_string(f, p->name);
}

static void put_role(FILE *f, const char *name, const PolicyRole *role) {
        fprintf(f, "%s:\n", name);
        for (int g = 0; g < 2; g++) {
                bool first = true;

                fprintf(f, "  %s: [", g ? "groups" : "users");
                for (size_t i = 0; i < role->n_principals; i++) {
                        if (role->principals[i].is_group != (g == 1))
                                continue;
                        if (!first)
                                fputs(", ", f);
                        put_principal(f, &role->principals[i]);
                        first = false;
                }
                fputs("]\n", f);
        }
}

static void put_socket(FILE *f, const char *name, const PolicySocket *s) {
        fprintf(f, "  %s:\n    path: ", name);
        put_string(f, s->path);
        fprintf(f, "\n    mode: \"%04o\"\n    group: ", (unsigned)s->mode);
        if (s->has_group)
                put_principal(f, &s->group);
        else
                fputs("null", f);
        fputc('\n', f);
}

int policy_format(const Policy *p, FILE *f) {
        const PolicyLimits *l;
        char a[32], b[32], d[32];

        if (!p || !f)
                return -EINVAL;
        l = &p->limits;

        fprintf(f, "security_level: %u\n", p->security_level);
        policy_format_duration_ms(p->release_quantum_ms, a, sizeof(a));
        fprintf(f, "release_quantum: %s\n", a);
        put_role(f, "agents", &p->agents);
        fprintf(f, "  require_confinement: %s\n", p->agents.require_confinement ? "true" : "false");
        put_role(f, "consoles", &p->consoles);
        fputs("sockets:\n", f);
        put_socket(f, "agent", &p->agent_socket);
        put_socket(f, "console", &p->console_socket);
        fputs("state_directory: ", f);
        put_string(f, p->state_directory);
        fputs("\nruntime_directory: ", f);
        put_string(f, p->runtime_directory);
        fprintf(f, "\nephemeral_uids:\n  first: %" PRIu32 "\n  last: %" PRIu32 "\n",
                p->ephemeral_uid_first, p->ephemeral_uid_last);

        fputs("limits:\n", f);
        fprintf(f, "  max_plugins_per_handle: %" PRIu32 "\n", l->max_plugins_per_handle);
        fprintf(f, "  concurrent_runs: %" PRIu32 "\n", l->concurrent_runs);
        fprintf(f, "  pending_tickets_per_agent: %" PRIu32 "\n", l->pending_tickets_per_agent);
        fprintf(f, "  connections_per_uid: %" PRIu32 "\n", l->connections_per_uid);
        fprintf(f, "  connections_total: %" PRIu32 "\n", l->connections_total);
        fprintf(f, "  console_connections: %" PRIu32 "\n", l->console_connections);
        policy_format_duration(l->agent_idle_timeout_sec, a, sizeof(a));
        fprintf(f, "  agent_idle_timeout: %s\n", a);
        policy_format_size(l->message_bytes, a, sizeof(a));
        fprintf(f, "  message_bytes: %s\n", a);
        policy_format_duration(l->session_idle_timeout_sec, a, sizeof(a));
        policy_format_duration(l->session_absolute_timeout_sec, b, sizeof(b));
        fprintf(f, "  session_idle_timeout: %s\n  session_absolute_timeout: %s\n", a, b);
        policy_format_size(l->max_handle_bytes, a, sizeof(a));
        policy_format_duration(l->ticket_timeout_sec, d, sizeof(d));
        fprintf(f, "  max_handle_bytes: %s\n", a);
        policy_format_size(l->handle_store_bytes, a, sizeof(a));
        fprintf(f, "  handle_store_bytes: %s\n  ticket_timeout: %s\n", a, d);
        policy_format_duration(l->file_read_timeout_sec, a, sizeof(a));
        fprintf(f, "  file_read_timeout: %s\n", a);

        fprintf(f, "scope:\n  backend: %s\n  bus: ", policy_scope_backend_name(p->scope.backend));
        if (p->scope.bus == POLICY_BUS_ADDRESS)
                put_string(f, p->scope.bus_address);
        else
                fputs(p->scope.bus == POLICY_BUS_USER ? "user" : "system", f);
        fputs("\n  slice: ", f);
        put_string(f, p->scope.slice);
        if (p->scope.cpu_quota_percent > 0)
                fprintf(f, "\n  cpu_quota: \"%" PRIu32 "%%\"\n", p->scope.cpu_quota_percent);
        else
                fputs("\n  cpu_quota: null\n", f);
        fprintf(f, "  ahead: %" PRIu32 "\n", p->scope.ahead);
        policy_format_size(p->audit.segment_bytes, a, sizeof(a));
        fprintf(f, "audit:\n  segment_bytes: %s\n  retain_segments: %" PRIu32 "\n", a,
                p->audit.retain_segments);

        if (p->n_marketplaces == 0)
                fputs("marketplaces: []\n", f);
        else
                fputs("marketplaces:\n", f);
        for (size_t i = 0; i < p->n_marketplaces; i++) {
                const PolicyMarketplace *m = &p->marketplaces[i];

                fputs("  - name: ", f);
                put_string(f, m->name);
                fputs("\n    issuer: ", f);
                put_string(f, m->issuer);
                fputs("\n    identity: ", f);
                put_string(f, m->identity);
                fputs("\n    trusted_root: ", f);
                put_string(f, m->trusted_root);
                if (m->force)
                        fputs("\n    force: true", f);
                fputc('\n', f);
        }
        fprintf(f, "allow_unsigned: %s\n", p->allow_unsigned ? "true" : "false");

        if (fflush(f) != 0 || ferror(f))
                return negative_errno();
        return 0;
}
