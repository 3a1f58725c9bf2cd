/* Unit tests of policy/policy: every case under tests/data/policy, the default, round trips. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check-run.h"
#include "config.h"
#include "macro.h"
#include "policy-file.h"
#include "policy.h"

static const char *data_dir(void) {
        const char *d = getenv("LOCKD_TEST_DATA");
        return d ? d : "tests/data";
}

/* Reads a whole file into a new NUL-terminated buffer; returns its size or -errno. */
static ssize_t read_file(const char *path, char **ret) {
        FILE *f = fopen(path, "re");
        char *buf = NULL;
        size_t n = 0, cap = 0;

        if (!f)
                return -errno;
        for (;;) {
                if (n + 1 >= cap) {
                        char *b = realloc(buf, cap = cap ? cap * 2 : 4096);
                        if (!b) {
                                free(buf);
                                fclose(f);
                                return -ENOMEM;
                        }
                        buf = b;
                }
                size_t k = fread(buf + n, 1, cap - n - 1, f);
                if (k == 0)
                        break;
                n += k;
        }
        fclose(f);
        buf[n] = '\0';
        *ret = buf;
        return (ssize_t)n;
}

/* policy_format() into a new string. */
static char *format(const Policy *p) {
        char *s = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&s, &n);

        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(policy_format(p, f), 0);
        ck_assert_int_eq(fclose(f), 0);
        return s;
}

static void parse_ok(const char *text, Policy **ret) {
        PolicyDiag d;
        int r = policy_parse(text, strlen(text), ret, &d);

        ck_assert_msg(r == 0, "'%s': %s %u:%u %s", text, policy_error_name(d.code), d.line,
                      d.column, d.message);
}

static void parse_fails(const char *text, PolicyError code, unsigned line, unsigned column) {
        _cleanup_(policy_freep) Policy *p = NULL;
        PolicyDiag d;
        int r = policy_parse(text, strlen(text), &p, &d);

        ck_assert_msg(r == -EINVAL, "'%s' parsed", text);
        ck_assert_ptr_null(p);
        ck_assert_msg(d.code == code && d.line == line && d.column == column,
                      "'%s': expected %s %u:%u, got %s %u:%u %s", text, policy_error_name(code),
                      line, column, policy_error_name(d.code), d.line, d.column, d.message);
        ck_assert_str_ne(d.message, "");
}

/* Whether the case kind/name has drop-ins (a lockd.yaml.d directory). */
static bool has_dropins(const char *kind, const char *name) {
        char path[4096];
        DIR *d;

        snprintf(path, sizeof(path), "%s/policy/%s/%s/lockd.yaml.d", data_dir(), kind, name);
        d = opendir(path);
        if (d)
                closedir(d);
        return d != NULL;
}

/*
 * A case with drop-ins goes through policy_file_load(), as lockd reads it (the drop-ins' names,
 * their order, the merge). For an invalid one, got is "CODE FILE LINE:COLUMN" with FILE relative
 * to the case's directory.
 */
static int load_case(const char *kind, const char *name, Policy **ret, char *got, size_t len) {
        char path[4200], why[512] = "", dir[4096];
        const char *rel, *place;
        int r;

        snprintf(dir, sizeof(dir), "%s/policy/%s/%s/", data_dir(), kind, name);
        snprintf(path, sizeof(path), "%slockd.yaml", dir);
        r = policy_file_load(path, ret, why, sizeof(why));
        if (r == 0) {
                snprintf(got, len, "ok");
                return 0;
        }
        /* why: "DIR/FILE:LINE:COLUMN: CODE: message" */
        rel = strncmp(why, dir, strlen(dir)) == 0 ? why + strlen(dir) : why;
        place = strchr(rel, ':');
        if (!place) {
                snprintf(got, len, "%s", why);
                return r;
        }
        {
                unsigned line = 0, column = 0;
                char code[64] = "";

                if (sscanf(place, ":%u:%u: %63[A-Z_]", &line, &column, code) != 3) {
                        snprintf(got, len, "%s", why);
                        return r;
                }
                snprintf(got, len, "%s %.*s %u:%u", code, (int)(place - rel), rel, line, column);
        }
        fprintf(stderr, "%s/%s: %s\n", kind, name, why);
        return r;
}

/* Runs one valid case: it parses, prints as effective.yaml says, and the print parses back to
 * the same print. Returns 0 or -1 after saying why. */
static int run_valid(const char *name) {
        char path[4096];
        _cleanup_free_ char *buf = NULL, *expected = NULL, *out = NULL, *again = NULL;
        _cleanup_(policy_freep) Policy *p = NULL, *q = NULL;
        PolicyDiag d;
        ssize_t n;

        snprintf(path, sizeof(path), "%s/policy/valid/%s/lockd.yaml", data_dir(), name);
        n = read_file(path, &buf);
        if (n < 0) {
                fprintf(stderr, "valid/%s: cannot read lockd.yaml\n", name);
                return -1;
        }
        snprintf(path, sizeof(path), "%s/policy/valid/%s/effective.yaml", data_dir(), name);
        if (read_file(path, &expected) < 0) {
                fprintf(stderr, "valid/%s: cannot read effective.yaml\n", name);
                return -1;
        }
        if (has_dropins("valid", name)) {
                char got[512];

                if (load_case("valid", name, &p, got, sizeof(got)) != 0) {
                        fprintf(stderr, "valid/%s: %s\n", name, got);
                        return -1;
                }
        } else if (policy_parse(buf, (size_t)n, &p, &d) != 0) {
                fprintf(stderr, "valid/%s: %s %u:%u %s\n", name, policy_error_name(d.code), d.line,
                        d.column, d.message);
                return -1;
        }
        out = format(p);
        if (strcmp(out, expected) != 0) {
                fprintf(stderr, "valid/%s: policy_format() differs from effective.yaml:\n%s\n",
                        name, out);
                return -1;
        }
        if (policy_parse(out, strlen(out), &q, &d) != 0) {
                fprintf(stderr, "valid/%s: the formatted policy does not parse: %s %u:%u %s\n",
                        name, policy_error_name(d.code), d.line, d.column, d.message);
                return -1;
        }
        again = format(q);
        if (strcmp(again, out) != 0) {
                fprintf(stderr, "valid/%s: the round trip changed the policy:\n%s\n", name, again);
                return -1;
        }
        return 0;
}

/* Runs one invalid case: the outcome must be the code and line:column of its expected file. */
static int run_invalid(const char *name) {
        char path[4096], got[512];
        _cleanup_free_ char *buf = NULL, *expected = NULL;
        _cleanup_(policy_freep) Policy *p = NULL;
        PolicyDiag d;
        ssize_t n, e;
        int r;

        snprintf(path, sizeof(path), "%s/policy/invalid/%s/lockd.yaml", data_dir(), name);
        n = read_file(path, &buf);
        if (n < 0) {
                fprintf(stderr, "invalid/%s: cannot read lockd.yaml\n", name);
                return -1;
        }
        snprintf(path, sizeof(path), "%s/policy/invalid/%s/expected", data_dir(), name);
        e = read_file(path, &expected);
        if (e < 0) {
                fprintf(stderr, "invalid/%s: no expected file\n", name);
                return -1;
        }
        while (e > 0 && expected[e - 1] == '\n')
                expected[--e] = '\0';

        if (has_dropins("invalid", name)) {
                r = load_case("invalid", name, &p, got, sizeof(got));
                d.message[0] = r == -EINVAL ? 'x' : '\0';
                d.message[1] = '\0';
        } else {
                r = policy_parse(buf, (size_t)n, &p, &d);
                if (r == -EINVAL)
                        snprintf(got, sizeof(got), "%s %u:%u", policy_error_name(d.code), d.line,
                                 d.column);
                else
                        snprintf(got, sizeof(got), "%s", r == 0 ? "ok" : strerror(-r));
        }
        if (strcmp(got, expected) != 0 || p || (r == -EINVAL && d.message[0] == '\0')) {
                fprintf(stderr, "invalid/%s: expected '%s', got '%s'%s%s\n", name, expected, got,
                        r == -EINVAL ? ": " : "", r == -EINVAL ? d.message : "");
                return -1;
        }
        return 0;
}

/* Runs every case of kind; returns how many there were and how many failed in *ret_failed. Also
 * records which error codes the invalid cases cover. */
static unsigned run_dir(const char *kind, unsigned *ret_failed, bool covered[_E_POLICY_MAX]) {
        char path[4096];
        unsigned count = 0, failed = 0;
        DIR *dir;
        struct dirent *de;

        snprintf(path, sizeof(path), "%s/policy/%s", data_dir(), kind);
        dir = opendir(path);
        ck_assert_msg(dir, "cannot open %s (set LOCKD_TEST_DATA)", path);
        while ((de = readdir(dir))) {
                bool valid = strcmp(kind, "valid") == 0;

                if (de->d_name[0] == '.')
                        continue;
                count++;
                if ((valid ? run_valid(de->d_name) : run_invalid(de->d_name)) < 0)
                        failed++;
                if (!valid && covered) {
                        char p[4096];
                        _cleanup_free_ char *e = NULL;

                        snprintf(p, sizeof(p), "%s/policy/invalid/%s/expected", data_dir(),
                                 de->d_name);
                        if (read_file(p, &e) >= 0)
                                for (int c = 1; c < _E_POLICY_MAX; c++) {
                                        const char *name = policy_error_name(c);
                                        size_t len = strlen(name);
                                        if (strncmp(e, name, len) == 0 && e[len] == ' ')
                                                covered[c] = true;
                                }
                }
        }
        closedir(dir);
        *ret_failed = failed;
        return count;
}

START_TEST(test_data_valid) {
        unsigned failed, count = run_dir("valid", &failed, NULL);
        ck_assert_uint_ge(count, 10);
        ck_assert_uint_eq(failed, 0);
}
END_TEST

START_TEST(test_data_invalid) {
        bool covered[_E_POLICY_MAX] = {};
        unsigned failed, count = run_dir("invalid", &failed, covered);

        ck_assert_uint_ge(count, 40);
        ck_assert_uint_eq(failed, 0);
        /* Every code but E_POLICY_TOO_LARGE (test_too_large) has data cases. */
        for (int c = 1; c < _E_POLICY_MAX; c++)
                if (c != E_POLICY_TOO_LARGE)
                        ck_assert_msg(covered[c], "no data case for %s", policy_error_name(c));
}
END_TEST

START_TEST(test_too_large) {
        _cleanup_(policy_freep) Policy *p = NULL;
        _cleanup_free_ char *buf = malloc(POLICY_BYTES_MAX + 1);
        PolicyDiag d;

        ck_assert_ptr_nonnull(buf);
        /* A file of comments exactly at the cap parses; one byte more does not. */
        memset(buf, '#', POLICY_BYTES_MAX + 1);
        for (size_t i = 79; i < POLICY_BYTES_MAX + 1; i += 80)
                buf[i] = '\n';
        buf[POLICY_BYTES_MAX - 1] = '\n';
        ck_assert_int_eq(policy_parse(buf, POLICY_BYTES_MAX, &p, &d), 0);
        p = policy_free(p);
        ck_assert_int_eq(policy_parse(buf, POLICY_BYTES_MAX + 1, &p, &d), -EINVAL);
        ck_assert_ptr_null(p);
        ck_assert_int_eq(d.code, E_POLICY_TOO_LARGE);
        ck_assert_uint_eq(d.line, 0);
        ck_assert_str_ne(d.message, "");
}
END_TEST

/* The compiled-in default parses, equals an empty file, and says what lockd(8) documents. */
START_TEST(test_default) {
        _cleanup_(policy_freep) Policy *p = NULL, *q = NULL;
        _cleanup_free_ char *a = NULL, *b = NULL;

        ck_assert_int_eq(policy_default(&p), 0);
        parse_ok("", &q);
        a = format(p);
        b = format(q);
        ck_assert_str_eq(a, b);

        ck_assert_uint_eq(p->security_level, 2);
        ck_assert_uint_eq(p->agents.n_principals, 0);
        ck_assert_uint_eq(p->consoles.n_principals, 1);
        ck_assert(!p->consoles.principals[0].is_group);
        ck_assert(!p->consoles.principals[0].numeric);
        ck_assert_str_eq(p->consoles.principals[0].name, "root");
        ck_assert_uint_eq(p->consoles.principals[0].line, 0);
        ck_assert_str_eq(p->agent_socket.path, "/run/lockd.sock");
        ck_assert_uint_eq(p->agent_socket.mode, 0666);
        ck_assert(!p->agent_socket.has_group);
        ck_assert_str_eq(p->console_socket.path, "/run/lockd/console.sock");
        ck_assert_uint_eq(p->console_socket.mode, 0600);
        ck_assert_str_eq(p->state_directory, "/var/lib/lockd");
        ck_assert_str_eq(p->runtime_directory, "/run/lockd");
        ck_assert_uint_eq(p->ephemeral_uid_first, LOCKD_UID_MIN_DEFAULT);
        ck_assert_uint_eq(p->ephemeral_uid_last, LOCKD_UID_MAX_DEFAULT);
        ck_assert_uint_eq(p->limits.max_plugins_per_handle, 8);
        ck_assert_uint_eq(p->limits.concurrent_runs, 4);
        ck_assert_uint_eq(p->scope.ahead, 4);
        ck_assert_uint_eq(p->limits.pending_tickets_per_agent, 16);
        ck_assert_uint_eq(p->limits.connections_per_uid, 16);
        ck_assert_uint_eq(p->limits.connections_total, 256);
        ck_assert_uint_eq(p->limits.message_bytes, MiB);
        ck_assert_uint_eq(p->limits.session_idle_timeout_sec, 15 * 60);
        ck_assert_uint_eq(p->limits.session_absolute_timeout_sec, 8 * 3600);
        ck_assert_uint_eq(p->limits.max_handle_bytes, 64 * MiB);
        ck_assert_uint_eq(p->limits.ticket_timeout_sec, 3600);
        ck_assert_int_eq(p->scope.backend, POLICY_SCOPE_SYSTEMD);
        ck_assert_int_eq(p->scope.bus, POLICY_BUS_SYSTEM);
        ck_assert_ptr_null(p->scope.bus_address);
        ck_assert_str_eq(p->scope.slice, "lockd-plugins.slice");
        ck_assert_uint_eq(p->scope.cpu_quota_percent, 0);
        ck_assert_uint_eq(p->n_marketplaces, 0);
        ck_assert(!p->allow_unsigned);
}
END_TEST

/* The fields of a file that sets everything, and where its principals were written. */
START_TEST(test_fields) {
        static const char text[] =
                "agents:\n"
                "  users: [agent, 1001]\n"
                "  groups: [ai-agents]\n"
                "sockets:\n"
                "  console: {mode: \"0660\", group: lockd}\n"
                "  agent: {group: 0}\n"
                "scope: {bus: \"unix:path=/run/user/1000/systemd/private\", cpu_quota: 50%}\n"
                "marketplaces:\n"
                "  - name: acme\n"
                "    issuer: https://token.actions.githubusercontent.com\n"
                "    identity: ^https://github[.]com/acme/plugins/\n"
                "    trusted_root: /etc/lockd/acme.json\n"
                "limits: {message_bytes: 65536, session_idle_timeout: 2d,\n"
                "         session_absolute_timeout: 3d, ticket_timeout: 90}\n";
        _cleanup_(policy_freep) Policy *p = NULL;
        const PolicyPrincipal *a;

        parse_ok(text, &p);
        ck_assert_uint_eq(p->agents.n_principals, 3);
        a = p->agents.principals;
        ck_assert(!a[0].is_group && !a[0].numeric);
        ck_assert_str_eq(a[0].name, "agent");
        ck_assert_uint_eq(a[0].line, 2);
        ck_assert_uint_eq(a[0].column, 11);
        ck_assert(!a[1].is_group && a[1].numeric);
        ck_assert_uint_eq(a[1].id, 1001);
        ck_assert_ptr_null(a[1].name);
        ck_assert(a[2].is_group && !a[2].numeric);
        ck_assert_str_eq(a[2].name, "ai-agents");
        ck_assert_uint_eq(a[2].line, 3);
        /* consoles keeps its default */
        ck_assert_uint_eq(p->consoles.n_principals, 1);
        ck_assert_uint_eq(p->console_socket.mode, 0660);
        ck_assert(p->console_socket.has_group);
        ck_assert(p->console_socket.group.is_group);
        ck_assert_str_eq(p->console_socket.group.name, "lockd");
        ck_assert(p->agent_socket.has_group && p->agent_socket.group.numeric);
        ck_assert_uint_eq(p->agent_socket.group.id, 0);
        ck_assert_str_eq(p->agent_socket.path, "/run/lockd.sock");
        ck_assert_int_eq(p->scope.bus, POLICY_BUS_ADDRESS);
        ck_assert_str_eq(p->scope.bus_address, "unix:path=/run/user/1000/systemd/private");
        ck_assert_uint_eq(p->scope.cpu_quota_percent, 50);
        ck_assert_uint_eq(p->n_marketplaces, 1);
        ck_assert_str_eq(p->marketplaces[0].name, "acme");
        ck_assert_str_eq(p->marketplaces[0].issuer, "https://token.actions.githubusercontent.com");
        ck_assert_str_eq(p->marketplaces[0].identity, "^https://github[.]com/acme/plugins/");
        ck_assert_str_eq(p->marketplaces[0].trusted_root, "/etc/lockd/acme.json");
        ck_assert_uint_eq(p->marketplaces[0].line, 9);
        ck_assert_uint_eq(p->marketplaces[0].column, 5);
        ck_assert_uint_eq(p->limits.message_bytes, 65536);
        ck_assert_uint_eq(p->limits.session_idle_timeout_sec, 2 * 86400);
        ck_assert_uint_eq(p->limits.session_absolute_timeout_sec, 3 * 86400);
        ck_assert_uint_eq(p->limits.ticket_timeout_sec, 90);
}
END_TEST

/* A list in the file replaces the default's list of the same kind, and only that one. */
START_TEST(test_lists_replace) {
        _cleanup_(policy_freep) Policy *p = NULL;

        parse_ok("consoles:\n  groups: [wheel]\n", &p);
        ck_assert_uint_eq(p->consoles.n_principals, 2); /* root (default) + wheel */
        p = policy_free(p);
        parse_ok("consoles:\n  users: [alice, bob]\n", &p);
        ck_assert_uint_eq(p->consoles.n_principals, 2);
        ck_assert_str_eq(p->consoles.principals[0].name, "alice");
        p = policy_free(p);
        parse_ok("consoles:\n  users: []\n", &p);
        ck_assert_uint_eq(p->consoles.n_principals, 0);
}
END_TEST

/* Scalars that YAML 1.1 reads as something else are refused where a string or a number is due. */
START_TEST(test_scalar_types) {
        parse_fails("consoles: {users: [\"alice\", yes]}\n", E_POLICY_TYPE, 1, 29);
        parse_fails("consoles: {users: [Off]}\n", E_POLICY_TYPE, 1, 20);
        parse_fails("consoles: {users: [1e3]}\n", E_POLICY_TYPE, 1, 20);
        parse_fails("consoles: {users: [.inf]}\n", E_POLICY_TYPE, 1, 20);
        parse_fails("consoles: {users: [1_000]}\n", E_POLICY_TYPE, 1, 20);
        parse_fails("consoles: {users: [1:30]}\n", E_POLICY_TYPE, 1, 20);
        parse_fails("consoles: {users: [-1]}\n", E_POLICY_TYPE, 1, 20);
        parse_fails("state_directory: null\n", E_POLICY_TYPE, 1, 18);
        parse_fails("state_directory: 0o777\n", E_POLICY_TYPE, 1, 18);
        parse_fails("security_level: 2.0\n", E_POLICY_TYPE, 1, 17);
        parse_fails("security_level: 02\n", E_POLICY_TYPE, 1, 17);
        parse_fails("security_level: [2]\n", E_POLICY_TYPE, 1, 17);
        parse_fails("security_level: 99999999999999999999999\n", E_POLICY_RANGE, 1, 17);
        parse_fails("allow_unsigned: 1\n", E_POLICY_TYPE, 1, 17);
        parse_fails("allow_unsigned: True\n", E_POLICY_TYPE, 1, 17);
        parse_fails("limits: {ticket_timeout: \"\"}\n", E_POLICY_VALUE, 1, 26);
        parse_fails("limits: {ticket_timeout: 01h}\n", E_POLICY_VALUE, 1, 26);
        parse_fails("scope: {cpu_quota: \"050%\"}\n", E_POLICY_VALUE, 1, 20);
        parse_fails("sockets: {agent: {mode: \"0800\"}}\n", E_POLICY_VALUE, 1, 25);
        parse_fails("sockets: {agent: {mode: \"00600\"}}\n", E_POLICY_VALUE, 1, 25);
}
END_TEST

/* Every prefix of a full policy parses or fails with a code and a place, never anything else. */
START_TEST(test_prefixes) {
        char path[4096];
        _cleanup_free_ char *buf = NULL;
        ssize_t n;

        snprintf(path, sizeof(path), "%s/policy/valid/full/lockd.yaml", data_dir());
        n = read_file(path, &buf);
        ck_assert_int_gt(n, 0);
        for (ssize_t i = 0; i <= n; i++) {
                Policy *p = NULL;
                PolicyDiag d;
                int r = policy_parse(buf, (size_t)i, &p, &d);

                if (r == 0) {
                        ck_assert_ptr_nonnull(p);
                        policy_free(p);
                        continue;
                }
                ck_assert_int_eq(r, -EINVAL);
                ck_assert_ptr_null(p);
                ck_assert(d.code > POLICY_OK && d.code < _E_POLICY_MAX);
                ck_assert_uint_gt(d.line, 0);
                ck_assert_uint_gt(d.column, 0);
        }
}
END_TEST

/* The text between the first ".EX" and ".EE" lines after the line "section" of the man page, with
 * roff's "\e" turned back into a backslash. A new string, or NULL. */
static char *man_block(const char *man, const char *section) {
        const char *start = strstr(man, section), *end;
        char *out, *o;

        if (!start || !(start = strstr(start, "\n.EX\n")) || !(end = strstr(start, "\n.EE\n")))
                return NULL;
        start += strlen("\n.EX\n");
        out = o = calloc(1, (size_t)(end - start) + 2);
        if (!out)
                return NULL;
        for (const char *c = start; c <= end; c++) {
                if (c[0] == '\\' && c[1] == 'e') {
                        *o++ = '\\';
                        c++;
                } else
                        *o++ = *c;
        }
        return out;
}

/* lockd.yaml(5) shows the default exactly as policy_format() prints it, and its example parses. */
START_TEST(test_man_page) {
        char path[4096];
        _cleanup_free_ char *man = NULL, *defaults = NULL, *example = NULL, *printed = NULL;
        _cleanup_(policy_freep) Policy *p = NULL, *q = NULL;

        snprintf(path, sizeof(path), "%s/../../docs/lockd.yaml.5", data_dir());
        ck_assert_int_gt(read_file(path, &man), 0);
        defaults = man_block(man, "\n.SH DEFAULTS\n");
        ck_assert_ptr_nonnull(defaults);
        ck_assert_int_eq(policy_default(&p), 0);
        printed = format(p);
        ck_assert_str_eq(defaults, printed);
        example = man_block(man, "\n.SH EXAMPLE\n");
        ck_assert_ptr_nonnull(example);
        parse_ok(example, &q);
        ck_assert_uint_eq(q->n_marketplaces, 1);
        ck_assert_str_eq(
                q->marketplaces[0].identity,
                "^https://github\\.com/acme/plugins/\\.github/workflows/release\\.yml@refs/"
                "tags/.*$");
}
END_TEST

START_TEST(test_untouched_on_failure) {
        Policy *sentinel = (Policy *)&sentinel, *p = sentinel;
        PolicyDiag d;

        ck_assert_int_eq(policy_parse("security_level: 9\n", 18, &p, &d), -EINVAL);
        ck_assert_ptr_eq(p, sentinel);
        ck_assert_int_eq(policy_parse(NULL, 1, &p, &d), -EINVAL);
        ck_assert_ptr_eq(p, sentinel);
        /* diag is optional */
        ck_assert_int_eq(policy_parse("x: 1\n", 5, &p, NULL), -EINVAL);
        ck_assert_ptr_eq(p, sentinel);
}
END_TEST

START_TEST(test_error_names) {
        for (int c = 0; c < _E_POLICY_MAX; c++) {
                ck_assert_ptr_nonnull(policy_error_name(c));
                for (int k = 0; k < c; k++)
                        ck_assert_str_ne(policy_error_name(c), policy_error_name(k));
        }
        ck_assert_ptr_null(policy_error_name(_E_POLICY_MAX));
        ck_assert_ptr_null(policy_error_name((PolicyError)-1));
        ck_assert_str_eq(policy_error_name(E_POLICY_ROLES_OVERLAP), "E_POLICY_ROLES_OVERLAP");
}
END_TEST

START_TEST(test_principal_names) {
        ck_assert(policy_principal_name_valid("agent"));
        ck_assert(policy_principal_name_valid("_svc"));
        ck_assert(policy_principal_name_valid("host$"));
        ck_assert(policy_principal_name_valid("ai-agents_2"));
        ck_assert(policy_principal_name_valid("a2345678901234567890123456789012"));
        ck_assert(!policy_principal_name_valid("a23456789012345678901234567890123"));
        ck_assert(!policy_principal_name_valid(""));
        ck_assert(!policy_principal_name_valid("1agent"));
        ck_assert(!policy_principal_name_valid("-agent"));
        ck_assert(!policy_principal_name_valid("Agent"));
        ck_assert(!policy_principal_name_valid("a$b"));
        ck_assert(!policy_principal_name_valid("a.b"));
        ck_assert(!policy_principal_name_valid(NULL));
}
END_TEST

static Suite *policy_suite(void) {
        Suite *s = suite_create("policy");
        const CaseOptions each = {.timeout = 60};

        suite_add_case(s, &each, test_data_valid);
        suite_add_case(s, &each, test_data_invalid);
        suite_add_case(s, &each, test_too_large);
        suite_add_case(s, &each, test_default);
        suite_add_case(s, &each, test_fields);
        suite_add_case(s, &each, test_lists_replace);
        suite_add_case(s, &each, test_scalar_types);
        suite_add_case(s, &each, test_prefixes);
        suite_add_case(s, &each, test_man_page);
        suite_add_case(s, &each, test_untouched_on_failure);
        suite_add_case(s, &each, test_error_names);
        suite_add_case(s, &each, test_principal_names);
        return s;
}

int main(void) {
        return check_run(policy_suite());
}
