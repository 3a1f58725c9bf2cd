/* Unit tests of policy/plan: every case under tests/data/plan, the guard order, the callbacks. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check-run.h"
#include "macro.h"
#include "manifest.h"
#include "plan.h"
#include "data-cases.h"

#define AGENT_UID 1000
#define OTHER_UID 1001

/*
 * The world every case runs against. Handles: h-report and h-report-copy are grants of the same
 * content (account A) with 3 answers left, h-report-tight a third grant of it with 1 left;
 * h-notes has 1 left (B), h-spent none (C), h-bob is granted to another agent. Answered before:
 * pdf.blank-page on A, pdf.contains needle=email on C.
 */
typedef struct Handle {
        const char *id;
        uid_t agent;
        char account; /* the first byte of the account's identity, the others 0 */
        unsigned remaining;
} Handle;

static Handle handles[] = {
        {"h-report", AGENT_UID, 'A', 3},       {"h-report-copy", AGENT_UID, 'A', 3},
        {"h-report-tight", AGENT_UID, 'A', 1}, {"h-notes", AGENT_UID, 'B', 1},
        {"h-spent", AGENT_UID, 'C', 0},        {"h-bob", OTHER_UID, 'D', 5},
};

static const struct {
        char account;
        const char *plugin, *tuple;
} answered[] = {
        {'A', "pdf.blank-page", ""},
        {'C', "pdf.contains", "needle=email"},
};

static const char *const manifest_texts[] = {
        "name = \"pdf.blank-page\"\nversion = \"1.0.0\"\nprotocol = 1\n"
        "question = \"Does the PDF have a blank page?\"\none = \"yes\"\nzero = \"no\"\n"
        "accepts = [\"application/pdf\"]\nlimits = { cpu_s = 20, memory = \"512MiB\", "
        "timeout_s = 30 }\n",
        "name = \"pdf.contains\"\nversion = \"2.1.0\"\nprotocol = 2\n"
        "question = \"Does the text of the PDF contain ${needle}?\"\none = \"yes\"\n"
        "zero = \"no\"\naccepts = [\"application/pdf\"]\n"
        "limits = { cpu_s = 20, memory = \"512MiB\", timeout_s = 30 }\n"
        "inputs = [{ name = \"needle\", kind = \"text\", max_bytes = 256 }]\n",
        "name = \"mail.between\"\nversion = \"1.0.0\"\nprotocol = 2\n"
        "question = \"Did ${sender} write to ${recipient}?\"\none = \"yes\"\nzero = \"no\"\n"
        "accepts = [\"message/rfc822\"]\nlimits = { cpu_s = 20, memory = \"512MiB\", "
        "timeout_s = 30 }\n"
        "inputs = [{ name = \"sender\", kind = \"email\", max_bytes = 254 }, "
        "{ name = \"recipient\", kind = \"email\", max_bytes = 254 }]\n",
};

static Manifest *manifests[ELEMENTSOF(manifest_texts)];

/* What the callbacks saw, to check how often and in what order they were called. */
typedef struct Trace {
        char calls[1024];
        int fail_handle, fail_plugin, fail_budget; /* return these errnos when non-zero */
} Trace;

static void trace_add(Trace *t, const char *what, const char *name) {
        size_t n = strlen(t->calls);
        snprintf(t->calls + n, sizeof(t->calls) - n, "%s%s:%s", n ? " " : "", what, name);
}

static int handle_lookup(void *userdata, const char *id, uid_t agent, void **ret) {
        Trace *t = userdata;
        Handle *found = NULL;

        trace_add(t, "h", id);
        if (t->fail_handle)
                return t->fail_handle;
        for (size_t i = 0; i < ELEMENTSOF(handles); i++)
                if (strcmp(handles[i].id, id) == 0)
                        found = &handles[i];
        if (!found || found->agent != agent)
                return 0;
        *ret = found;
        return 1;
}

static int plugin_lookup(void *userdata, const char *name, const Manifest **ret_m, void **ret_p) {
        Trace *t = userdata;

        trace_add(t, "p", name);
        if (t->fail_plugin)
                return t->fail_plugin;
        for (size_t i = 0; i < ELEMENTSOF(manifests); i++)
                if (strcmp(manifests[i]->name, name) == 0) {
                        *ret_m = manifests[i];
                        *ret_p = &manifests[i];
                        return 1;
                }
        return 0;
}

static int budget_query(void *userdata, const PlanStep *step, PlanBudget *ret) {
        Trace *t = userdata;
        const Handle *h = step->handle;
        char tuple[PLAN_TUPLE_STRING_MAX + 1];

        ck_assert_int_eq(plan_tuple_format(step, tuple, sizeof(tuple)), 0);
        trace_add(t, "b", step->handle_id);
        if (t->fail_budget)
                return t->fail_budget;
        memset(ret->account, 0, sizeof(ret->account));
        ret->account[0] = (uint8_t)h->account;
        ret->remaining = h->remaining;
        ret->answered = false;
        for (size_t i = 0; i < ELEMENTSOF(answered); i++)
                if (answered[i].account == h->account &&
                    strcmp(answered[i].plugin, step->manifest->name) == 0 &&
                    strcmp(answered[i].tuple, tuple) == 0)
                        ret->answered = true;
        return 0;
}

static void world_setup(void) {
        for (size_t i = 0; i < ELEMENTSOF(manifest_texts); i++) {
                ManifestDiag d;
                int r = manifest_parse(manifest_texts[i], strlen(manifest_texts[i]), &manifests[i],
                                       &d);
                ck_assert_msg(r == 0, "manifest %zu: %s", i, d.message);
        }
}

static void world_teardown(void) {
        for (size_t i = 0; i < ELEMENTSOF(manifests); i++)
                manifests[i] = manifest_free(manifests[i]);
}

static PlanCallbacks callbacks(Trace *t) {
        return (PlanCallbacks){
                .handle_lookup = handle_lookup,
                .plugin_lookup = plugin_lookup,
                .budget_query = budget_query,
                .userdata = t,
        };
}

/* Loads a JSON document as the Varlink layer would hand it over, but any value and with NULs. */
static json_t *load_json(const char *path) {
        json_error_t err;
        json_t *v = json_load_file(path, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES,
                                   &err);
        if (!v)
                fprintf(stderr, "%s: %s (%d:%d)\n", path, err.text, err.line, err.column);
        return v;
}

static json_t *parse_json(const char *text) {
        json_error_t err;
        json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
        ck_assert_msg(v, "%s: %s", text, err.text);
        return v;
}

/* The outcome as a case's expected file writes it. */
static void describe(int r, const Plan *p, const PlanError *e, char *buf, size_t size) {
        size_t n = 0;

        buf[0] = '\0';
        if (r == -EINVAL) {
                char step[16] = "-";
                if (e->step >= 0)
                        snprintf(step, sizeof(step), "%d", e->step);
                snprintf(buf, size, "%s %s %s", plan_error_name(e->code), step,
                         e->field[0] ? e->field : "-");
                return;
        }
        if (r < 0) {
                snprintf(buf, size, "errno %d", r);
                return;
        }
        for (size_t i = 0; i < p->n_steps; i++) {
                const PlanStep *s = &p->steps[i];
                char tuple[PLAN_TUPLE_STRING_MAX + 1];

                ck_assert_int_eq(plan_tuple_format(s, tuple, sizeof(tuple)), 0);
                n += (size_t)snprintf(buf + n, size - n, "step %zu %s %s %s %s\n", i,
                                      s->plugin_name, s->handle_id, tuple[0] ? tuple : "-",
                                      s->charged ? "charged" : "free");
                ck_assert_uint_lt(n, size);
        }
        n += (size_t)snprintf(buf + n, size - n, "placeholders");
        for (size_t i = 0; i < p->n_placeholders; i++)
                n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? "," : " ", p->placeholders[i]);
        if (p->n_placeholders == 0)
                n += (size_t)snprintf(buf + n, size - n, " -");
        ck_assert_uint_lt(n, size);
}

/* Reads a small text file without its trailing newlines; NULL when it cannot be read. */
static char *read_text(const char *path) {
        FILE *f = fopen(path, "re");
        char *buf;
        size_t n;

        if (!f)
                return NULL;
        buf = calloc(1, 4096);
        n = buf ? fread(buf, 1, 4095, f) : 0;
        fclose(f);
        while (buf && n > 0 && buf[n - 1] == '\n')
                buf[--n] = '\0';
        return buf;
}

/* Checks what every outcome must satisfy, whatever the case. */
static void check_invariants(int r, const Plan *p, const PlanError *e) {
        if (r == -EINVAL) {
                ck_assert(e->code > PLAN_OK && e->code < _E_PLAN_MAX);
                ck_assert(e->step >= -1 && e->step < PLAN_STEPS_MAX);
                ck_assert_ptr_nonnull(e->reason);
                ck_assert_ptr_nonnull(memchr(e->field, '\0', sizeof(e->field)));
                return;
        }
        ck_assert_int_eq(r, 0);
        for (size_t i = 0; i + 1 < p->n_placeholders; i++)
                ck_assert_int_lt(strcmp(p->placeholders[i], p->placeholders[i + 1]), 0);
        for (size_t i = 0; i < p->n_steps; i++) {
                const PlanStep *s = &p->steps[i];
                ck_assert_ptr_nonnull(s->handle);
                ck_assert_ptr_nonnull(s->manifest);
                ck_assert_uint_ne(s->budget_account[0], 0);
                ck_assert_uint_eq(s->n_bindings,
                                  s->manifest->protocol >= 2 ? s->manifest->n_inputs : 0);
                for (size_t k = 0; k + 1 < s->n_bindings; k++)
                        ck_assert_int_lt(strcmp(s->bindings[k].input, s->bindings[k + 1].input), 0);
        }
}

/* Runs one case directory; 0 when the outcome is the expected one, else prints why. */
static int run_case(const char *kind, const char *name) {
        char path[4096], got[4096];
        _cleanup_free_ char *expected = NULL;
        _cleanup_(plan_freep) Plan *p = NULL;
        PlanError e = {};
        Trace t = {};
        PlanCallbacks cb = callbacks(&t);
        json_t *steps;
        int r;

        snprintf(path, sizeof(path), "%s/plan/%s/%s/steps.json", data_dir(), kind, name);
        steps = load_json(path);
        if (!steps) {
                fprintf(stderr, "%s/%s: cannot load steps.json\n", kind, name);
                return -1;
        }
        snprintf(path, sizeof(path), "%s/plan/%s/%s/expected", data_dir(), kind, name);
        expected = read_text(path);
        if (!expected) {
                fprintf(stderr, "%s/%s: no expected file\n", kind, name);
                json_decref(steps);
                return -1;
        }

        r = plan_validate(steps, AGENT_UID, &cb, &p, &e);
        json_decref(steps);
        check_invariants(r, p, &e);
        describe(r, p, &e, got, sizeof(got));
        if (strcmp(got, expected) != 0) {
                fprintf(stderr, "%s/%s: expected '%s', got '%s'%s%s\n", kind, name, expected, got,
                        r == -EINVAL ? ": " : "", r == -EINVAL ? e.reason : "");
                return -1;
        }
        if ((strcmp(kind, "valid") == 0) != (r == 0)) {
                fprintf(stderr, "%s/%s: in the wrong directory\n", kind, name);
                return -1;
        }
        return 0;
}

static unsigned run_dir(const char *kind, unsigned *ret_failed) {
        return data_cases_run("plan", kind, run_case, ret_failed);
}

START_TEST(test_data_valid) {
        unsigned failed, count = run_dir("valid", &failed);
        ck_assert_uint_ge(count, 8);
        ck_assert_uint_eq(failed, 0);
}
END_TEST

START_TEST(test_data_invalid) {
        unsigned failed, count = run_dir("invalid", &failed);
        ck_assert_uint_ge(count, 30);
        ck_assert_uint_eq(failed, 0);
}
END_TEST

/* Validates text; returns the errno and fills *e and t. */
static int validate_text(const char *text, Trace *t, PlanError *e) {
        _cleanup_(plan_freep) Plan *p = NULL;
        PlanCallbacks cb = callbacks(t);
        json_t *v = parse_json(text);
        int r = plan_validate(v, AGENT_UID, &cb, &p, e);

        json_decref(v);
        check_invariants(r, p, e);
        return r;
}

/* A literal in step 0 and a handle not visible in step 1: the handle guard answers first, and
 * only after every step's handle was looked up; no plugin is looked up. */
START_TEST(test_order_handle_before_inputs) {
        PlanError e = {};
        Trace t = {};
        const char *plan = "[{\"plugin\": \"pdf.contains\", \"handle\": \"h-report\", \"inputs\": "
                           "{\"needle\": \"alice@example.org\"}},"
                           " {\"plugin\": \"pdf.blank-page\", \"handle\": \"h-bob\"},"
                           " {\"plugin\": \"pdf.blank-page\", \"handle\": \"h-notes\"}]";

        ck_assert_int_eq(validate_text(plan, &t, &e), -EINVAL);
        ck_assert_int_eq(e.code, E_PLAN_UNKNOWN_HANDLE);
        ck_assert_int_eq(e.step, 1);
        ck_assert_str_eq(t.calls, "h:h-report h:h-bob h:h-notes");
}
END_TEST

/* A handle that does not exist and one granted to another agent: the same answer after the same
 * calls, wherever it is in the plan. */
START_TEST(test_absent_and_foreign_handles_alike) {
/* A literal, so that the format is checked at every optimisation level. */
#define TWO_STEPS                                                                                  \
        "[{\"plugin\": \"pdf.blank-page\", \"handle\": \"%s\"},"                                   \
        " {\"plugin\": \"nope.nope\", \"handle\": \"%s\"}]"
        const char *ids[] = {"h-bob", "h-nobody"};
        PlanError e[2][2] = {};
        Trace t[2][2] = {};

        for (int k = 0; k < 2; k++) {
                char plan[512], expected_calls[128];

                /* The unknown handle first, then second. */
                snprintf(plan, sizeof(plan), TWO_STEPS, ids[k], "h-report");
                ck_assert_int_eq(validate_text(plan, &t[k][0], &e[k][0]), -EINVAL);
                snprintf(plan, sizeof(plan), TWO_STEPS, "h-report", ids[k]);
                ck_assert_int_eq(validate_text(plan, &t[k][1], &e[k][1]), -EINVAL);

                snprintf(expected_calls, sizeof(expected_calls), "h:%s h:h-report", ids[k]);
                ck_assert_str_eq(t[k][0].calls, expected_calls);
                ck_assert_int_eq(e[k][0].step, 0);
                ck_assert_int_eq(e[k][1].step, 1);
        }
        for (int pos = 0; pos < 2; pos++) {
                ck_assert_int_eq(e[0][pos].code, E_PLAN_UNKNOWN_HANDLE);
                ck_assert(memcmp(&e[0][pos], &e[1][pos], sizeof(PlanError)) == 0);
        }
}
END_TEST

/* Shape failures come before everything: no callback is called for a malformed plan. */
START_TEST(test_shape_before_callbacks) {
        PlanError e = {};
        Trace t = {};

        ck_assert_int_eq(validate_text("[{\"plugin\": \"pdf.blank-page\", \"handle\": \"h-bob\"},"
                                       " {\"plugin\": \"pdf.blank-page\", \"handle\": 7}]",
                                       &t, &e),
                         -EINVAL);
        ck_assert_int_eq(e.code, E_PLAN_INVALID_REQUEST);
        ck_assert_int_eq(e.step, 1);
        ck_assert_str_eq(e.field, "handle");
        ck_assert_str_eq(t.calls, "");
}
END_TEST

/* Every binding string, classified: placeholder, literal or malformed placeholder. */
START_TEST(test_binding_rules) {
        static const struct {
                const char *binding; /* JSON string contents */
                PlanErrorCode code;
        } cases[] = {
                {"${email}", PLAN_OK},
                {"${a}", PLAN_OK},
                {"${0_9}", PLAN_OK},
                {"${abcdefghijklmnopqrstuvwxyz012345}", PLAN_OK},
                {"${abcdefghijklmnopqrstuvwxyz0123456}", E_PLAN_BAD_PLACEHOLDER},
                {"alice@example.org", E_PLAN_LITERAL_INPUT},
                {"", E_PLAN_LITERAL_INPUT},
                {"$", E_PLAN_LITERAL_INPUT},
                {"$email", E_PLAN_LITERAL_INPUT},
                {"{email}", E_PLAN_LITERAL_INPUT},
                {" ${email}", E_PLAN_LITERAL_INPUT},
                {"$${email}", E_PLAN_LITERAL_INPUT},
                {"$(email)", E_PLAN_LITERAL_INPUT},
                {"%{email}", E_PLAN_LITERAL_INPUT},
                {"\\u0000${email}", E_PLAN_INVALID_REQUEST},
                {"${email}\\u0000", E_PLAN_INVALID_REQUEST},
                {"${", E_PLAN_BAD_PLACEHOLDER},
                {"${}", E_PLAN_BAD_PLACEHOLDER},
                {"${email", E_PLAN_BAD_PLACEHOLDER},
                {"${email} ", E_PLAN_BAD_PLACEHOLDER},
                {"${email}\\n", E_PLAN_BAD_PLACEHOLDER},
                {"${email}}", E_PLAN_BAD_PLACEHOLDER},
                {"${email}x", E_PLAN_BAD_PLACEHOLDER},
                {"${email}${name}", E_PLAN_BAD_PLACEHOLDER},
                {"${ email}", E_PLAN_BAD_PLACEHOLDER},
                {"${email }", E_PLAN_BAD_PLACEHOLDER},
                {"${\\temail}", E_PLAN_BAD_PLACEHOLDER},
                {"${Email}", E_PLAN_BAD_PLACEHOLDER},
                {"${e-mail}", E_PLAN_BAD_PLACEHOLDER},
                {"${e.mail}", E_PLAN_BAD_PLACEHOLDER},
                {"${a${b}}", E_PLAN_BAD_PLACEHOLDER},
                {"${${b}}", E_PLAN_BAD_PLACEHOLDER},
                {"${email:-x}", E_PLAN_BAD_PLACEHOLDER},
                {"${\\u00e9}", E_PLAN_BAD_PLACEHOLDER},
                {"${alice@example.org}", E_PLAN_BAD_PLACEHOLDER},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char plan[512];
                PlanError e = {};
                Trace t = {};
                int r;

                snprintf(plan, sizeof(plan),
                         "[{\"plugin\": \"pdf.contains\", \"handle\": \"h-report\", "
                         "\"inputs\": {\"needle\": \"%s\"}}]",
                         cases[i].binding);
                r = validate_text(plan, &t, &e);
                if (cases[i].code == PLAN_OK) {
                        ck_assert_msg(r == 0, "'%s': %d %s", cases[i].binding, r,
                                      plan_error_name(e.code));
                        continue;
                }
                ck_assert_msg(r == -EINVAL && e.code == cases[i].code, "'%s': %d %s",
                              cases[i].binding, r, plan_error_name(e.code));
                ck_assert_int_eq(e.step, 0);
                ck_assert_str_eq(e.field, e.code == E_PLAN_INVALID_REQUEST ? "inputs" : "needle");
        }
}
END_TEST

/* A refusal never holds the agent's binding: not in the field, the reason, or anywhere in it. */
START_TEST(test_binding_never_echoed) {
        static const char *const secret = "alice@example.org";
        static const char *const plans[] = {
                "[{\"plugin\": \"pdf.contains\", \"handle\": \"h-report\", "
                "\"inputs\": {\"needle\": \"alice@example.org\"}}]",
                "[{\"plugin\": \"pdf.contains\", \"handle\": \"h-report\", "
                "\"inputs\": {\"needle\": \"${alice@example.org}\"}}]",
                "[{\"plugin\": \"pdf.blank-page\", \"handle\": \"h-report\", "
                "\"inputs\": {\"x\": \"alice@example.org\"}}]",
        };

        for (size_t i = 0; i < ELEMENTSOF(plans); i++) {
                PlanError e;
                Trace t = {};

                memset(&e, 0, sizeof(e));
                ck_assert_int_eq(validate_text(plans[i], &t, &e), -EINVAL);
                ck_assert_ptr_null(memmem(&e, sizeof(e), "alice", 5));
                ck_assert_ptr_null(strstr(e.reason, "alice"));
                ck_assert_ptr_null(strstr(e.field, secret));
        }
}
END_TEST

/* The plan's structure: resolved pointers, canonical tuples, the distinct placeholders. */
START_TEST(test_plan_contents) {
        _cleanup_(plan_freep) Plan *p = NULL;
        PlanError e = {};
        Trace t = {};
        PlanCallbacks cb = callbacks(&t);
        json_t *v =
                parse_json("[{\"plugin\": \"mail.between\", \"handle\": \"h-report\", \"inputs\": "
                           "{\"sender\": \"${me}\", \"mail.between.recipient\": \"${boss}\"}},"
                           " {\"plugin\": \"pdf.contains\", \"handle\": \"h-notes\", \"inputs\": "
                           "{\"pdf.contains.needle\": \"${me}\"}},"
                           " {\"plugin\": \"pdf.blank-page\", \"handle\": \"h-report-copy\", "
                           "\"inputs\": null}]");
        char tuple[PLAN_TUPLE_STRING_MAX + 1];

        ck_assert_int_eq(plan_validate(v, AGENT_UID, &cb, &p, &e), 0);
        json_decref(v);
        ck_assert_uint_eq(p->n_steps, 3);

        ck_assert_ptr_eq(p->steps[0].handle, &handles[0]);
        ck_assert_ptr_eq(p->steps[0].manifest, manifests[2]);
        ck_assert_ptr_eq(p->steps[0].plugin, &manifests[2]);
        ck_assert_uint_eq(p->steps[0].n_bindings, 2);
        ck_assert_str_eq(p->steps[0].bindings[0].input, "recipient");
        ck_assert_str_eq(p->steps[0].bindings[0].placeholder, "boss");
        ck_assert_str_eq(p->steps[0].bindings[1].input, "sender");
        ck_assert_str_eq(p->steps[0].bindings[1].placeholder, "me");
        ck_assert_int_eq(plan_tuple_format(&p->steps[0], tuple, sizeof(tuple)), 0);
        ck_assert_str_eq(tuple, "recipient=boss,sender=me");
        ck_assert(p->steps[0].charged);
        ck_assert_uint_eq(p->steps[0].budget_account[0], 'A');

        ck_assert_ptr_eq(p->steps[1].handle, &handles[3]);
        ck_assert_str_eq(p->steps[1].bindings[0].input, "needle");
        ck_assert(p->steps[1].charged);

        ck_assert_uint_eq(p->steps[2].n_bindings, 0);
        ck_assert(!p->steps[2].charged); /* answered before on the same content */
        ck_assert_uint_eq(p->steps[2].budget_account[0], 'A');

        ck_assert_uint_eq(p->n_placeholders, 2);
        ck_assert_str_eq(p->placeholders[0], "boss");
        ck_assert_str_eq(p->placeholders[1], "me");

        ck_assert_str_eq(t.calls, "h:h-report h:h-notes h:h-report-copy "
                                  "p:mail.between p:pdf.contains p:pdf.blank-page "
                                  "b:h-report b:h-notes b:h-report-copy");
}
END_TEST

/* A callback's failure stops the validation with its errno; -EINVAL never escapes as one. */
START_TEST(test_callback_errors) {
        static const char *const plan =
                "[{\"plugin\": \"pdf.blank-page\", \"handle\": \"h-notes\"}]";
        Plan *sentinel = (Plan *)0x1, *p = sentinel;
        PlanError e = {.code = _E_PLAN_MAX};
        int *which[3];
        int codes[] = {-ENOMEM, -EINVAL, -EIO, 1};

        for (size_t w = 0; w < ELEMENTSOF(which); w++)
                for (size_t c = 0; c < ELEMENTSOF(codes); c++) {
                        Trace t = {};
                        PlanCallbacks cb = callbacks(&t);
                        json_t *v = parse_json(plan);
                        int r;

                        which[0] = &t.fail_handle;
                        which[1] = &t.fail_plugin;
                        which[2] = &t.fail_budget;
                        *which[w] = codes[c];
                        r = plan_validate(v, AGENT_UID, &cb, &p, &e);
                        json_decref(v);
                        if (codes[c] == 1 && w < 2) {
                                /* "found" without an object: not found, fail closed. */
                                ck_assert_int_eq(r, -EINVAL);
                                ck_assert_int_eq(e.code, w == 0 ? E_PLAN_UNKNOWN_HANDLE
                                                                : E_PLAN_UNKNOWN_PLUGIN);
                                e.code = _E_PLAN_MAX;
                        } else if (codes[c] == 1) {
                                /* The budget query's 1 is not its 0: a failure. */
                                ck_assert_int_eq(r, -EIO);
                        } else
                                ck_assert_int_eq(r, codes[c] == -EINVAL ? -EIO : codes[c]);
                        ck_assert_ptr_eq(p, sentinel);
                        ck_assert_int_eq(e.code, _E_PLAN_MAX);
                }
}
END_TEST

/* Outputs: *ret_plan untouched on failure, *ret_error untouched on success; bad arguments. */
START_TEST(test_untouched) {
        Plan *sentinel = (Plan *)0x1, *p = sentinel;
        PlanError e, before;
        Trace t = {};
        PlanCallbacks cb = callbacks(&t), partial = cb;
        json_t *bad = parse_json("[]");
        json_t *good = parse_json("[{\"plugin\": \"pdf.blank-page\", \"handle\": \"h-notes\"}]");

        ck_assert_int_eq(plan_validate(bad, AGENT_UID, &cb, &p, &e), -EINVAL);
        ck_assert_ptr_eq(p, sentinel);
        ck_assert_int_eq(e.code, E_PLAN_INVALID_REQUEST);
        ck_assert_int_eq(e.step, -1);
        ck_assert_str_eq(e.field, "steps");
        ck_assert_int_eq(plan_validate(bad, AGENT_UID, &cb, &p, NULL), -EINVAL);
        ck_assert_int_eq(plan_validate(NULL, AGENT_UID, &cb, &p, &e), -EINVAL);
        ck_assert_ptr_eq(p, sentinel);

        memset(&before, 0x5a, sizeof(before));
        e = before;
        p = NULL;
        ck_assert_int_eq(plan_validate(good, AGENT_UID, &cb, &p, &e), 0);
        ck_assert_ptr_nonnull(p);
        ck_assert(memcmp(&e, &before, sizeof(e)) == 0);
        p = plan_free(p);

        partial.budget_query = NULL;
        ck_assert_int_eq(plan_validate(good, AGENT_UID, &partial, &p, &e), -EFAULT);
        ck_assert_int_eq(plan_validate(good, AGENT_UID, NULL, &p, &e), -EFAULT);
        ck_assert_int_eq(plan_validate(good, AGENT_UID, &cb, NULL, &e), -EFAULT);
        ck_assert_ptr_null(p);
        ck_assert_ptr_null(plan_free(NULL));
        json_decref(bad);
        json_decref(good);
}
END_TEST

START_TEST(test_tuple_format) {
        PlanStep s = {};
        char buf[PLAN_TUPLE_STRING_MAX + 1], small[8];

        ck_assert_int_eq(plan_tuple_format(&s, buf, sizeof(buf)), 0);
        ck_assert_str_eq(buf, "");
        s.n_bindings = PLAN_INPUTS_MAX;
        for (size_t k = 0; k < PLAN_INPUTS_MAX; k++) {
                memset(s.bindings[k].input, 'a' + (int)k, 32);
                memset(s.bindings[k].placeholder, 'z', 32);
        }
        ck_assert_int_eq(plan_tuple_format(&s, buf, sizeof(buf)), 0);
        ck_assert_uint_eq(strlen(buf), PLAN_TUPLE_STRING_MAX);
        ck_assert_int_eq(plan_tuple_format(&s, buf, sizeof(buf) - 1), -ENOBUFS);
        ck_assert_str_eq(buf, "");
        ck_assert_int_eq(plan_tuple_format(&s, small, sizeof(small)), -ENOBUFS);
        ck_assert_int_eq(plan_tuple_format(&s, small, 0), -ENOBUFS);
}
END_TEST

START_TEST(test_error_names) {
        static const char *const varlink[] = {
                "InvalidRequest", "UnknownHandle", "UnknownPlugin", "LiteralInput",
                "BadPlaceholder", "UnknownInput",  "MissingInput",  "BudgetExhausted",
        };

        ck_assert_uint_eq(ELEMENTSOF(varlink), _E_PLAN_MAX - 1);
        for (int c = 1; c < _E_PLAN_MAX; c++) {
                ck_assert(strncmp(plan_error_name((PlanErrorCode)c), "E_PLAN_", 7) == 0);
                ck_assert_str_eq(plan_error_varlink((PlanErrorCode)c), varlink[c - 1]);
        }
        ck_assert_str_eq(plan_error_name(E_PLAN_LITERAL_INPUT), "E_PLAN_LITERAL_INPUT");
        ck_assert_ptr_null(plan_error_name(PLAN_OK));
        ck_assert_ptr_null(plan_error_name(_E_PLAN_MAX));
        ck_assert_ptr_null(plan_error_varlink(PLAN_OK));
        ck_assert_ptr_null(plan_error_varlink((PlanErrorCode)-1));
}
END_TEST

static Suite *plan_suite(void) {
        Suite *s = suite_create("plan");
        const CaseOptions each = {.setup = world_setup, .teardown = world_teardown};

        suite_add_case(s, &each, test_data_valid);
        suite_add_case(s, &each, test_data_invalid);
        suite_add_case(s, &each, test_order_handle_before_inputs);
        suite_add_case(s, &each, test_absent_and_foreign_handles_alike);
        suite_add_case(s, &each, test_shape_before_callbacks);
        suite_add_case(s, &each, test_binding_rules);
        suite_add_case(s, &each, test_binding_never_echoed);
        suite_add_case(s, &each, test_plan_contents);
        suite_add_case(s, &each, test_callback_errors);
        suite_add_case(s, &each, test_untouched);
        suite_add_case(s, &each, test_tuple_format);
        suite_add_case(s, &each, test_error_names);
        return s;
}

int main(void) {
        return check_run(plan_suite());
}
