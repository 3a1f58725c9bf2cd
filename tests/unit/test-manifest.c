/* Unit tests of policy/manifest and policy/toml: every case under tests/data/manifest, escapes,
 * structs. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check-run.h"
#include "macro.h"
#include "manifest.h"
#include "toml.h"
#include "data-cases.h"

/* Reads a whole file into a new buffer; returns its size or -errno. */
static ssize_t read_file(const char *path, char **ret) {
        FILE *f = fopen(path, "re");
        char *buf = NULL;
        size_t n = 0, cap = 0;

        if (!f)
                return -errno;
        for (;;) {
                if (n == cap) {
                        char *b = realloc(buf, cap = cap ? cap * 2 : 4096);
                        if (!b) {
                                free(buf);
                                fclose(f);
                                return -ENOMEM;
                        }
                        buf = b;
                }
                size_t k = fread(buf + n, 1, cap - n, f);
                if (k == 0)
                        break;
                n += k;
        }
        fclose(f);
        *ret = buf;
        return (ssize_t)n;
}

/* Runs one case directory; returns 0 when the outcome is the expected one, else prints why. */
static int run_case(const char *kind, const char *name) {
        char path[4096], got[128];
        _cleanup_free_ char *buf = NULL, *expected = NULL;
        _cleanup_(manifest_freep) Manifest *m = NULL;
        ManifestDiag d;
        ssize_t n, e;
        int r;

        snprintf(path, sizeof(path), "%s/manifest/%s/%s/plugin.toml", data_dir(), kind, name);
        n = read_file(path, &buf);
        if (n < 0) {
                fprintf(stderr, "%s/%s: cannot read plugin.toml\n", kind, name);
                return -1;
        }
        snprintf(path, sizeof(path), "%s/manifest/%s/%s/expected", data_dir(), kind, name);
        e = read_file(path, &expected);
        if (e < 0) {
                if (strcmp(kind, "valid") != 0) {
                        fprintf(stderr, "%s/%s: no expected file\n", kind, name);
                        return -1;
                }
                expected = strdup("ok");
                e = 2;
        }
        while (e > 0 && (expected[e - 1] == '\n' || expected[e - 1] == '\0'))
                e--;
        expected[e] = '\0';

        r = manifest_parse(buf, (size_t)n, &m, &d);
        if (r == 0)
                snprintf(got, sizeof(got), "ok");
        else if (r == -EINVAL)
                snprintf(got, sizeof(got), "%s %u:%u", manifest_error_name(d.code), d.line,
                         d.column);
        else
                snprintf(got, sizeof(got), "errno %d", r);

        if (strcmp(got, expected) != 0) {
                fprintf(stderr, "%s/%s: expected '%s', got '%s'%s%s\n", kind, name, expected, got,
                        r == -EINVAL ? ": " : "", r == -EINVAL ? d.message : "");
                return -1;
        }
        if (strcmp(kind, "valid") == 0 && r != 0)
                return -1;
        if (strcmp(kind, "invalid") == 0 && (r != -EINVAL || d.message[0] == '\0'))
                return -1;
        return 0;
}

static unsigned run_dir(const char *kind, unsigned *ret_failed) {
        return data_cases_run("manifest", kind, run_case, ret_failed);
}

START_TEST(test_data_valid) {
        unsigned failed, count = run_dir("valid", &failed);
        ck_assert_uint_ge(count, 20);
        ck_assert_uint_eq(failed, 0);
}
END_TEST

START_TEST(test_data_invalid) {
        unsigned failed, count = run_dir("invalid", &failed);
        ck_assert_uint_ge(count, 40);
        ck_assert_uint_eq(failed, 0);
}
END_TEST

/* Parses `v = <value>` and returns the decoded string value in *ret (a copy), or the error. */
static int toml_string(const char *value, char **ret, size_t *ret_len, TomlError *err) {
        _cleanup_(toml_value_freep) TomlValue *root = NULL;
        char doc[512];
        const TomlEntry *e;
        int r;

        snprintf(doc, sizeof(doc), "v = %s\n", value);
        r = toml_parse(doc, strlen(doc), &root, err);
        if (r < 0)
                return r;
        e = toml_table_find(root, "v");
        ck_assert_ptr_nonnull(e);
        ck_assert_int_eq(e->value->type, TOML_STRING);
        *ret = malloc(e->value->string.len + 1);
        ck_assert_ptr_nonnull(*ret);
        memcpy(*ret, e->value->string.data, e->value->string.len + 1);
        *ret_len = e->value->string.len;
        return 0;
}

START_TEST(test_escapes) {
        static const struct {
                const char *in;
                const char *out;
                size_t len;
        } ok[] = {
                {"\"\\b\"", "\b", 1},
                {"\"\\t\"", "\t", 1},
                {"\"\\n\"", "\n", 1},
                {"\"\\f\"", "\f", 1},
                {"\"\\r\"", "\r", 1},
                {"\"\\\"\"", "\"", 1},
                {"\"\\\\\"", "\\", 1},
                {"\"\\u0041\"", "A", 1},
                {"\"\\u00e9\"", "\xc3\xa9", 2},
                {"\"\\u20AC\"", "\xe2\x82\xac", 3},
                {"\"\\uFFFF\"", "\xef\xbf\xbf", 3},
                {"\"\\U0001F600\"", "\xf0\x9f\x98\x80", 4},
                {"\"\\U0010FFFF\"", "\xf4\x8f\xbf\xbf", 4},
                {"\"\\u0000\"", "\0", 1},
                {"\"a\\\\b\\\"c\"", "a\\b\"c", 5},
                {"'C:\\path\\n'", "C:\\path\\n", 9},
                {"''", "", 0},
                {"\"\"", "", 0},
        };
        static const char *const bad[] = {
                "\"\\x41\"",   "\"\\e\"",         "\"\\a\"",         "\"\\0\"",
                "\"\\u12\"",   "\"\\u12G4\"",     "\"\\U0001F60\"",  "\"\\uD800\"",
                "\"\\uDFFF\"", "\"\\U0000D800\"", "\"\\U00110000\"", "\"\\UFFFFFFFF\"",
                "\"\\ \"",
        };
        static const char *const unterminated[] = {"\"abc", "'abc", "\"\\\"", "\"a\\"};

        for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
                _cleanup_free_ char *s = NULL;
                size_t len;
                TomlError err;

                ck_assert_msg(toml_string(ok[i].in, &s, &len, &err) == 0, "%s: %s", ok[i].in,
                              err.message);
                ck_assert_uint_eq(len, ok[i].len);
                ck_assert_mem_eq(s, ok[i].out, len);
                ck_assert_int_eq(s[len], '\0');
        }
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_free_ char *s = NULL;
                size_t len;
                TomlError err;

                ck_assert_msg(toml_string(bad[i], &s, &len, &err) == -EINVAL, "%s accepted",
                              bad[i]);
                ck_assert_int_eq(err.code, TOML_E_SYNTAX);
                ck_assert_uint_eq(err.line, 1);
                ck_assert_uint_eq(err.column, 6); /* the backslash */
        }
        for (size_t i = 0; i < ELEMENTSOF(unterminated); i++) {
                _cleanup_free_ char *s = NULL;
                size_t len;
                TomlError err;

                ck_assert_int_eq(toml_string(unterminated[i], &s, &len, &err), -EINVAL);
                ck_assert_int_eq(err.code, TOML_E_SYNTAX);
                ck_assert_uint_eq(err.column, 5); /* the opening quote */
        }
}
END_TEST

START_TEST(test_toml_integers) {
        static const struct {
                const char *in;
                int64_t v;
        } ok[] = {
                {"0", 0},
                {"-0", 0},
                {"+0", 0},
                {"1_000", 1000},
                {"-17", -17},
                {"9223372036854775807", INT64_MAX},
                {"-9223372036854775808", INT64_MIN},
        };
        static const struct {
                const char *in;
                TomlErrorCode code;
        } bad[] = {
                {"9223372036854775808", TOML_E_SYNTAX},
                {"-9223372036854775809", TOML_E_SYNTAX},
                {"01", TOML_E_SYNTAX},
                {"1__0", TOML_E_SYNTAX},
                {"_1", TOML_E_SYNTAX},
                {"1_", TOML_E_SYNTAX},
                {"+", TOML_E_SYNTAX},
                {"0x1f", TOML_E_UNSUPPORTED},
                {"0b1", TOML_E_UNSUPPORTED},
                {"1.0", TOML_E_UNSUPPORTED},
                {"nan", TOML_E_UNSUPPORTED},
                {"1979-05-27", TOML_E_UNSUPPORTED},
        };

        for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
                _cleanup_(toml_value_freep) TomlValue *root = NULL;
                char doc[64];

                snprintf(doc, sizeof(doc), "v = %s", ok[i].in);
                ck_assert_int_eq(toml_parse(doc, strlen(doc), &root, NULL), 0);
                ck_assert_int_eq(toml_table_find(root, "v")->value->type, TOML_INTEGER);
                ck_assert(toml_table_find(root, "v")->value->integer == ok[i].v);
        }
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                TomlValue *root = NULL;
                TomlError err;
                char doc[64];

                snprintf(doc, sizeof(doc), "v = %s", bad[i].in);
                ck_assert_int_eq(toml_parse(doc, strlen(doc), &root, &err), -EINVAL);
                ck_assert_ptr_null(root);
                ck_assert_msg(err.code == bad[i].code, "%s: %s", bad[i].in, err.message);
                ck_assert_uint_eq(err.column, 5);
        }
}
END_TEST

START_TEST(test_toml_tree) {
        static const char doc[] = "a = [ 1, 'x', [true], { k = false, l = [] } , ] # c\n"
                                  "b = {}\n";
        _cleanup_(toml_value_freep) TomlValue *root = NULL;
        const TomlValue *a, *t;

        ck_assert_int_eq(toml_parse(doc, strlen(doc), &root, NULL), 0);
        ck_assert_uint_eq(root->table.n, 2);
        a = toml_table_find(root, "a")->value;
        ck_assert_int_eq(a->type, TOML_ARRAY);
        ck_assert_uint_eq(a->array.n, 4);
        ck_assert_int_eq(a->array.items[0]->integer, 1);
        ck_assert_str_eq(a->array.items[1]->string.data, "x");
        ck_assert(a->array.items[2]->array.items[0]->boolean);
        t = a->array.items[3];
        ck_assert_int_eq(t->type, TOML_TABLE);
        ck_assert_uint_eq(t->line, 1);
        ck_assert_uint_eq(t->column, 23);
        ck_assert(!toml_table_find(t, "k")->value->boolean);
        ck_assert_uint_eq(toml_table_find(t, "l")->value->array.n, 0);
        ck_assert_uint_eq(toml_table_find(root, "b")->value->table.n, 0);
        ck_assert_ptr_null(toml_table_find(root, "c"));
}
END_TEST

START_TEST(test_full_manifest) {
        static const char doc[] = "name = \"pdf.contains\"\n"
                                  "version = \"3.12.0\"\n"
                                  "protocol = 2\n"
                                  "question = \"Does the text contain ${needle} or ${mail}?\"\n"
                                  "one = \"it does\"\n"
                                  "zero = \"it does not\"\n"
                                  "accepts = [\"application/pdf\", \"text/plain\"]\n"
                                  "limits = { cpu_s = 20, memory = \"512MiB\", timeout_s = 30 }\n"
                                  "inputs = [\n"
                                  "  { name = \"needle\", kind = \"text\", max_bytes = 256 },\n"
                                  "  { name = \"mail\", kind = \"email\", max_bytes = 320 },\n"
                                  "]\n"
                                  "detail = true\n";
        _cleanup_(manifest_freep) Manifest *m = NULL;
        ManifestDiag d;
        const ManifestInput *in;

        ck_assert_msg(manifest_parse(doc, strlen(doc), &m, &d) == 0, "%s", d.message);
        ck_assert_str_eq(m->name, "pdf.contains");
        ck_assert_str_eq(m->version, "3.12.0");
        ck_assert_uint_eq(m->version_major, 3);
        ck_assert_uint_eq(m->version_minor, 12);
        ck_assert_uint_eq(m->version_patch, 0);
        ck_assert_uint_eq(m->protocol, 2);
        ck_assert_str_eq(m->question, "Does the text contain ${needle} or ${mail}?");
        ck_assert_str_eq(m->one, "it does");
        ck_assert_str_eq(m->zero, "it does not");
        ck_assert_uint_eq(m->n_accepts, 2);
        ck_assert_str_eq(m->accepts[0], "application/pdf");
        ck_assert_str_eq(m->accepts[1], "text/plain");
        ck_assert_ptr_null(m->accepts[2]);
        ck_assert_uint_eq(m->cpu_s, 20);
        ck_assert_uint_eq(m->memory_bytes, 512 * MiB);
        ck_assert_uint_eq(m->timeout_s, 30);
        ck_assert_uint_eq(m->n_inputs, 2);
        ck_assert_str_eq(m->inputs[0].name, "needle");
        ck_assert_int_eq(m->inputs[0].kind, INPUT_KIND_TEXT);
        ck_assert_uint_eq(m->inputs[0].max_bytes, 256);
        ck_assert_str_eq(m->inputs[1].name, "mail");
        ck_assert_int_eq(m->inputs[1].kind, INPUT_KIND_EMAIL);
        ck_assert_uint_eq(m->inputs[1].max_bytes, 320);
        ck_assert(m->detail);

        in = manifest_find_input(m, "mail");
        ck_assert_ptr_eq(in, &m->inputs[1]);
        ck_assert_ptr_null(manifest_find_input(m, "other"));
        ck_assert_str_eq(input_kind_name(INPUT_KIND_DIGITS), "digits");
}
END_TEST

START_TEST(test_untouched_on_failure) {
        static const char doc[] = "name = \"x\"\n";
        Manifest *sentinel = (Manifest *)&sentinel, *m = sentinel;
        ManifestDiag d;

        ck_assert_int_eq(manifest_parse(doc, strlen(doc), &m, &d), -EINVAL);
        ck_assert_ptr_eq(m, sentinel);
        ck_assert_int_eq(d.code, E_MANIFEST_NAME);
        ck_assert_uint_eq(d.line, 1);
        ck_assert_uint_eq(d.column, 8);
        ck_assert_str_ne(d.message, "");

        /* a NULL diag is allowed */
        ck_assert_int_eq(manifest_parse(doc, strlen(doc), &m, NULL), -EINVAL);
        ck_assert_ptr_eq(m, sentinel);
        ck_assert_int_eq(manifest_parse("", 0, &m, NULL), -EINVAL);
        ck_assert_int_eq(manifest_parse(NULL, 0, &m, &d), -EINVAL);
        ck_assert_int_eq(d.code, E_MANIFEST_MISSING_KEY);
}
END_TEST

START_TEST(test_error_names) {
        for (int e = 1; e < _E_MANIFEST_MAX; e++) {
                const char *n = manifest_error_name((ManifestError)e);
                ck_assert_ptr_nonnull(n);
                ck_assert(strncmp(n, "E_MANIFEST_", 11) == 0);
        }
        ck_assert_ptr_null(manifest_error_name(_E_MANIFEST_MAX));
}
END_TEST

static Suite *manifest_suite(void) {
        Suite *s = suite_create("manifest");

        suite_add_case(s, NULL, test_data_valid);
        suite_add_case(s, NULL, test_data_invalid);
        suite_add_case(s, NULL, test_escapes);
        suite_add_case(s, NULL, test_toml_integers);
        suite_add_case(s, NULL, test_toml_tree);
        suite_add_case(s, NULL, test_full_manifest);
        suite_add_case(s, NULL, test_untouched_on_failure);
        suite_add_case(s, NULL, test_error_names);
        return s;
}

int main(void) {
        return check_run(manifest_suite());
}
