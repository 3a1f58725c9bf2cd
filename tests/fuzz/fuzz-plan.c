/* libFuzzer target: plan_validate on arbitrary JSON must never crash, leak or break its contract.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"
#include "plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A small world: two handles of this agent (one with its budget spent), one of another agent,
 * and the three kinds of plugin (protocol 1, one input, two inputs). */
#define AGENT 1000

static const struct {
        const char *id;
        uid_t agent;
        unsigned remaining;
} handles[] = {{"h-report", AGENT, 3}, {"h-spent", AGENT, 0}, {"h-bob", AGENT + 1, 5}};

static const char *const manifest_texts[] = {
        "name = \"pdf.blank-page\"\nversion = \"1.0.0\"\nprotocol = 1\nquestion = \"Blank?\"\n"
        "one = \"yes\"\nzero = \"no\"\naccepts = [\"application/pdf\"]\n"
        "limits = { cpu_s = 1, memory = \"128MiB\", timeout_s = 1 }\n",
        "name = \"pdf.contains\"\nversion = \"2.1.0\"\nprotocol = 2\nquestion = \"Has "
        "${needle}?\"\n"
        "one = \"yes\"\nzero = \"no\"\naccepts = [\"application/pdf\"]\n"
        "limits = { cpu_s = 1, memory = \"128MiB\", timeout_s = 1 }\n"
        "inputs = [{ name = \"needle\", kind = \"text\", max_bytes = 256 }]\n",
        "name = \"mail.between\"\nversion = \"1.0.0\"\nprotocol = 2\n"
        "question = \"Did ${sender} write to ${recipient}?\"\none = \"yes\"\nzero = \"no\"\n"
        "accepts = [\"message/rfc822\"]\nlimits = { cpu_s = 1, memory = \"128MiB\", timeout_s = 1 "
        "}\n"
        "inputs = [{ name = \"sender\", kind = \"email\", max_bytes = 254 }, "
        "{ name = \"recipient\", kind = \"email\", max_bytes = 254 }]\n",
};

static Manifest *manifests[sizeof(manifest_texts) / sizeof(manifest_texts[0])];

typedef struct Counts {
        size_t handle_calls, plugin_calls, budget_calls;
} Counts;

static int handle_lookup(void *userdata, const char *id, uid_t agent, void **ret) {
        Counts *c = userdata;

        c->handle_calls++;
        if (strlen(id) == 0 || strlen(id) > PLAN_NAME_MAX)
                abort();
        for (size_t i = 0; i < sizeof(handles) / sizeof(handles[0]); i++)
                if (strcmp(handles[i].id, id) == 0) {
                        if (handles[i].agent != agent)
                                return 0;
                        *ret = (void *)&handles[i];
                        return 1;
                }
        return 0;
}

static int plugin_lookup(void *userdata, const char *name, const Manifest **ret_m, void **ret_p) {
        Counts *c = userdata;

        c->plugin_calls++;
        for (size_t i = 0; i < sizeof(manifests) / sizeof(manifests[0]); i++)
                if (strcmp(manifests[i]->name, name) == 0) {
                        *ret_m = manifests[i];
                        *ret_p = manifests[i];
                        return 1;
                }
        return 0;
}

static int budget_query(void *userdata, const PlanStep *step, PlanBudget *ret) {
        Counts *c = userdata;
        const __typeof__(handles[0]) *h = step->handle;
        char tuple[PLAN_TUPLE_STRING_MAX + 1];

        c->budget_calls++;
        if (plan_tuple_format(step, tuple, sizeof(tuple)) != 0)
                abort();
        memset(ret->account, 0, sizeof(ret->account));
        ret->account[0] = (uint8_t)(h - handles + 1);
        ret->remaining = h->remaining;
        /* Answered before: the protocol-1 question on h-report. */
        ret->answered = h == &handles[0] && strcmp(step->manifest->name, "pdf.blank-page") == 0;
        return 0;
}

static bool placeholder_valid(const char *s) {
        size_t n = strlen(s);

        if (n == 0 || n > PLAN_PLACEHOLDER_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
                        return false;
        return true;
}

static void check_plan(const Plan *p) {
        if (p->n_steps == 0 || p->n_steps > PLAN_STEPS_MAX ||
            p->n_placeholders > PLAN_PLACEHOLDERS_MAX)
                abort();
        for (size_t i = 0; i < p->n_placeholders; i++)
                if (!placeholder_valid(p->placeholders[i]) ||
                    (i > 0 && strcmp(p->placeholders[i - 1], p->placeholders[i]) >= 0))
                        abort();
        for (size_t i = 0; i < p->n_steps; i++) {
                const PlanStep *s = &p->steps[i];

                if (!s->handle || !s->manifest || !s->plugin || s->budget_account[0] == 0 ||
                    s->n_bindings != (s->manifest->protocol >= 2 ? s->manifest->n_inputs : 0))
                        abort();
                for (size_t k = 0; k < s->n_bindings; k++) {
                        bool listed = false;

                        if (!placeholder_valid(s->bindings[k].placeholder) ||
                            !manifest_find_input(s->manifest, s->bindings[k].input) ||
                            (k > 0 && strcmp(s->bindings[k - 1].input, s->bindings[k].input) >= 0))
                                abort();
                        for (size_t j = 0; j < p->n_placeholders; j++)
                                listed = listed || strcmp(p->placeholders[j],
                                                          s->bindings[k].placeholder) == 0;
                        if (!listed)
                                abort();
                }
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        PlanCallbacks cb = {handle_lookup, plugin_lookup, budget_query, NULL};
        PlanError e[2];
        Counts counts[2];
        json_t *steps;
        int r[2];

        if (!manifests[0])
                for (size_t i = 0; i < sizeof(manifests) / sizeof(manifests[0]); i++)
                        if (manifest_parse(manifest_texts[i], strlen(manifest_texts[i]),
                                           &manifests[i], NULL) != 0)
                                abort();

        /* As the Varlink layer loads a message, but any value and NULs in strings too. */
        steps = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        if (!steps)
                return 0;

        /* Twice: the answer is a function of the request and the world, nothing else. */
        for (int k = 0; k < 2; k++) {
                Plan *p = NULL;

                memset(&e[k], 0, sizeof(e[k]));
                memset(&counts[k], 0, sizeof(counts[k]));
                cb.userdata = &counts[k];
                r[k] = plan_validate(steps, AGENT, &cb, &p, &e[k]);
                if (r[k] == 0) {
                        check_plan(p);
                        plan_free(p);
                } else if (r[k] == -EINVAL) {
                        if (p || !plan_error_name(e[k].code) || !plan_error_varlink(e[k].code) ||
                            !e[k].reason || e[k].step < -1 || e[k].step >= PLAN_STEPS_MAX ||
                            !memchr(e[k].field, '\0', sizeof(e[k].field)))
                                abort();
                        /* Past the shape guard, every step's handle was looked up once. */
                        if (e[k].code != E_PLAN_INVALID_REQUEST &&
                            counts[k].handle_calls != json_array_size(steps))
                                abort();
                        if (e[k].code == E_PLAN_INVALID_REQUEST && counts[k].handle_calls != 0)
                                abort();
                } else if (r[k] != -ENOMEM)
                        abort();
        }
        if (r[0] != r[1] || memcmp(&counts[0], &counts[1], sizeof(Counts)) != 0 ||
            (r[0] == -EINVAL && memcmp(&e[0], &e[1], sizeof(PlanError)) != 0))
                abort();

        json_decref(steps);
        return 0;
}
