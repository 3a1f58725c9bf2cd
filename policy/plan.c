/* An agent's plan (Submit(steps)): the pure validator of its steps, in the fixed guard order. */
#include <errno.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "plan.h"

/* What the shape guard keeps of one step's inputs member, borrowed from the JSON. */
typedef struct RawBinding {
        const char *key;     /* as the agent wrote it */
        const char *name;    /* key without the "<plugin>." prefix, if it had one */
        const char *binding; /* the bound string */
        char placeholder[PLAN_PLACEHOLDER_MAX + 1]; /* its name, once guard 4 accepted it */
} RawBinding;

typedef struct RawStep {
        RawBinding bindings[PLAN_INPUTS_MAX];
        size_t n_bindings;
} RawStep;

static const char *const error_names[_E_PLAN_MAX] = {
        [E_PLAN_INVALID_REQUEST] = "E_PLAN_INVALID_REQUEST",
        [E_PLAN_UNKNOWN_HANDLE] = "E_PLAN_UNKNOWN_HANDLE",
        [E_PLAN_UNKNOWN_PLUGIN] = "E_PLAN_UNKNOWN_PLUGIN",
        [E_PLAN_LITERAL_INPUT] = "E_PLAN_LITERAL_INPUT",
        [E_PLAN_BAD_PLACEHOLDER] = "E_PLAN_BAD_PLACEHOLDER",
        [E_PLAN_UNKNOWN_INPUT] = "E_PLAN_UNKNOWN_INPUT",
        [E_PLAN_MISSING_INPUT] = "E_PLAN_MISSING_INPUT",
        [E_PLAN_BUDGET_EXHAUSTED] = "E_PLAN_BUDGET_EXHAUSTED",
};

static const char *const varlink_names[_E_PLAN_MAX] = {
        [E_PLAN_INVALID_REQUEST] = "InvalidRequest", [E_PLAN_UNKNOWN_HANDLE] = "UnknownHandle",
        [E_PLAN_UNKNOWN_PLUGIN] = "UnknownPlugin",   [E_PLAN_LITERAL_INPUT] = "LiteralInput",
        [E_PLAN_BAD_PLACEHOLDER] = "BadPlaceholder", [E_PLAN_UNKNOWN_INPUT] = "UnknownInput",
        [E_PLAN_MISSING_INPUT] = "MissingInput",     [E_PLAN_BUDGET_EXHAUSTED] = "BudgetExhausted",
};

const char *plan_error_name(PlanErrorCode code) {
        if (code <= PLAN_OK || code >= _E_PLAN_MAX)
                return NULL;
        return error_names[code];
}

const char *plan_error_varlink(PlanErrorCode code) {
        if (code <= PLAN_OK || code >= _E_PLAN_MAX)
                return NULL;
        return varlink_names[code];
}

/* Fills *e (a local one, copied out only when the plan is refused) and returns -EINVAL. */
static int fail(PlanError *e, PlanErrorCode code, int step, const char *field, const char *reason) {
        e->code = code;
        e->step = step;
        /* Every field written here is a static word, a key that passed the shape guard (at most
         * PLAN_NAME_MAX bytes) or a manifest's input name: it always fits. */
        snprintf(e->field, sizeof(e->field), "%s", field ? field : "");
        e->reason = reason;
        return -EINVAL;
}

/* A callback's errno, never -EINVAL (which means a refusal) nor a positive value. */
static int callback_errno(int r) {
        return r == -EINVAL || r >= 0 ? -EIO : r;
}

/*
 * Whether s (len bytes) is 1..PLAN_NAME_MAX bytes of printable ASCII without space: what a plugin
 * name, a handle id or an input key may be. Nothing wider is needed, and a name of this shape is
 * safe to hand to a callback, to compare, and to send back in an error as a field.
 */
static bool printable_name(const char *s, size_t len) {
        if (len == 0 || len > PLAN_NAME_MAX)
                return false;
        for (size_t i = 0; i < len; i++)
                if (s[i] < 0x21 || s[i] > 0x7e)
                        return false;
        return true;
}

/* The string of v, when v is a JSON string whose length is exactly that of its C string. */
static const char *json_cstring(const json_t *v, size_t *ret_len) {
        const char *s;
        size_t len;

        if (!json_is_string(v))
                return NULL;
        s = json_string_value(v);
        len = json_string_length(v);
        /* jansson strings may hold NUL bytes; a C string cut short would name something else. */
        if (!s || strlen(s) != len)
                return NULL;
        *ret_len = len;
        return s;
}

/*
 * Guard 1 for one step (index i): the members, their types, counts and lengths. Copies plugin and
 * handle into out and points raw's bindings into the JSON. 0 or -EINVAL with *e filled.
 */
static int check_step_shape(json_t *step, int i, PlanStep *out, RawStep *raw, PlanError *e) {
        json_t *plugin = NULL, *handle = NULL, *inputs = NULL, *v;
        const char *key, *s;
        size_t key_len, len, plugin_len;

        if (!json_is_object(step))
                return fail(e, E_PLAN_INVALID_REQUEST, i, "", "a step must be an object");
        json_object_keylen_foreach(step, key, key_len, v) {
                if (strlen(key) == key_len && strcmp(key, "plugin") == 0)
                        plugin = v;
                else if (strlen(key) == key_len && strcmp(key, "handle") == 0)
                        handle = v;
                else if (strlen(key) == key_len && strcmp(key, "inputs") == 0)
                        inputs = v;
                else
                        /* The unknown member's name is the agent's: not echoed. */
                        return fail(e, E_PLAN_INVALID_REQUEST, i, "",
                                    "a step has only plugin, handle and inputs");
        }

        s = json_cstring(plugin, &plugin_len);
        if (!s || !printable_name(s, plugin_len))
                return fail(e, E_PLAN_INVALID_REQUEST, i, "plugin",
                            "plugin must be a string of 1 to 128 printable ASCII bytes");
        memcpy(out->plugin_name, s, plugin_len + 1);

        s = json_cstring(handle, &len);
        if (!s || !printable_name(s, len))
                return fail(e, E_PLAN_INVALID_REQUEST, i, "handle",
                            "handle must be a string of 1 to 128 printable ASCII bytes");
        memcpy(out->handle_id, s, len + 1);

        raw->n_bindings = 0;
        if (!inputs || json_is_null(inputs))
                return 0;
        if (!json_is_object(inputs))
                return fail(e, E_PLAN_INVALID_REQUEST, i, "inputs",
                            "inputs must be an object of strings");
        if (json_object_size(inputs) > PLAN_INPUTS_MAX)
                return fail(e, E_PLAN_INVALID_REQUEST, i, "inputs",
                            "a step binds at most 4 inputs");

        json_object_keylen_foreach(inputs, key, key_len, v) {
                RawBinding *b = &raw->bindings[raw->n_bindings];
                const char *binding;
                size_t binding_len;

                /* Cannot overflow: the object was checked to have at most PLAN_INPUTS_MAX. */
                if (raw->n_bindings >= PLAN_INPUTS_MAX || strlen(key) != key_len ||
                    !printable_name(key, key_len))
                        return fail(e, E_PLAN_INVALID_REQUEST, i, "inputs",
                                    "an input key must be 1 to 128 printable ASCII bytes");
                binding = json_cstring(v, &binding_len);
                /* The binding's content is judged by guard 4; here only its type and size. */
                if (!binding || binding_len > PLAN_NAME_MAX)
                        return fail(e, E_PLAN_INVALID_REQUEST, i, "inputs",
                                    "a binding must be a string of at most 128 bytes");

                b->key = key;
                b->binding = binding;
                /* The contract's form "<plugin>.<input>": the step's own plugin, byte for byte. */
                if (key_len > plugin_len + 1 && memcmp(key, out->plugin_name, plugin_len) == 0 &&
                    key[plugin_len] == '.')
                        b->name = key + plugin_len + 1;
                else
                        b->name = key;

                for (size_t k = 0; k < raw->n_bindings; k++)
                        if (strcmp(raw->bindings[k].name, b->name) == 0)
                                return fail(e, E_PLAN_INVALID_REQUEST, i, "inputs",
                                            "an input is bound twice");
                raw->n_bindings++;
        }
        return 0;
}

static int raw_binding_cmp(const void *a, const void *b) {
        return strcmp(((const RawBinding *)a)->key, ((const RawBinding *)b)->key);
}

static bool placeholder_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/*
 * Guard 4 for one binding: 1 with the placeholder's name copied to ret (PLAN_PLACEHOLDER_MAX + 1
 * bytes) when it is exactly ${name}; otherwise 0 and the code it is refused with.
 *
 * What a literal is: anything that does not begin with the two bytes "${". The agent's only
 * legitimate binding is a placeholder, so every other string is a value it chose (refused: a
 * value chosen by the agent is how one bit is aimed at content). A string that begins with "${"
 * was meant as a placeholder and is refused as a malformed one unless it is exactly "${" +
 * [a-z0-9_]{1,32} + "}" and nothing else: no leading or trailing byte, no whitespace, no
 * uppercase, no nested "${", no default or other shell syntax.
 */
static int classify_binding(const char *s, char *ret, PlanErrorCode *ret_code) {
        size_t len = strlen(s), n;

        if (len < 2 || s[0] != '$' || s[1] != '{') {
                *ret_code = E_PLAN_LITERAL_INPUT;
                return 0;
        }
        for (n = 0; 2 + n < len && placeholder_char(s[2 + n]); n++)
                ;
        if (n == 0 || n > PLAN_PLACEHOLDER_MAX || 2 + n + 1 != len || s[2 + n] != '}') {
                *ret_code = E_PLAN_BAD_PLACEHOLDER;
                return 0;
        }
        memcpy(ret, s + 2, n);
        ret[n] = '\0';
        return 1;
}

/* Guard 4 for one step: every binding is a placeholder. Sorts raw's bindings by key. */
static int check_step_bindings(RawStep *raw, int i, PlanError *e) {
        qsort(raw->bindings, raw->n_bindings, sizeof(RawBinding), raw_binding_cmp);
        for (size_t k = 0; k < raw->n_bindings; k++) {
                PlanErrorCode code;

                if (classify_binding(raw->bindings[k].binding, raw->bindings[k].placeholder,
                                     &code) == 0)
                        return fail(e, code, i, raw->bindings[k].key,
                                    code == E_PLAN_LITERAL_INPUT
                                            ? "an input must be bound to a placeholder, never "
                                              "to a value"
                                            : "a placeholder is exactly ${name}, name of 1 to "
                                              "32 of [a-z0-9_]");
        }
        return 0;
}

static int binding_cmp(const void *a, const void *b) {
        return strcmp(((const PlanBinding *)a)->input, ((const PlanBinding *)b)->input);
}

/*
 * Guard 5 for one step: the bound inputs are exactly the ones the manifest declares (none on
 * protocol 1). Fills out's canonical tuple. raw's bindings are sorted and are placeholders.
 */
static int check_step_inputs(const RawStep *raw, int i, PlanStep *out, PlanError *e) {
        const Manifest *m = out->manifest;
        bool bound[MANIFEST_INPUTS_MAX] = {};

        out->n_bindings = 0;
        for (size_t k = 0; k < raw->n_bindings; k++) {
                const ManifestInput *in = NULL;
                PlanBinding *b;

                /* A protocol-1 plugin takes no input at all, whatever its manifest holds. */
                if (m->protocol >= 2)
                        in = manifest_find_input(m, raw->bindings[k].name);
                if (!in)
                        return fail(e, E_PLAN_UNKNOWN_INPUT, i, raw->bindings[k].key,
                                    "the plugin declares no such input");
                bound[in - m->inputs] = true;
                b = &out->bindings[out->n_bindings++];
                snprintf(b->input, sizeof(b->input), "%s", in->name);
                snprintf(b->placeholder, sizeof(b->placeholder), "%s",
                         raw->bindings[k].placeholder);
        }
        if (m->protocol >= 2)
                for (size_t d = 0; d < m->n_inputs && d < MANIFEST_INPUTS_MAX; d++)
                        if (!bound[d])
                                return fail(e, E_PLAN_MISSING_INPUT, i, m->inputs[d].name,
                                            "the plugin's input is not bound");
        qsort(out->bindings, out->n_bindings, sizeof(PlanBinding), binding_cmp);
        return 0;
}

/* Whether two steps ask the same question of the same budget account. */
static bool same_question(const PlanStep *a, const PlanStep *b) {
        if (memcmp(a->budget_account, b->budget_account, PLAN_ACCOUNT_SIZE) != 0 ||
            strcmp(a->manifest->name, b->manifest->name) != 0 ||
            strcmp(a->manifest->version, b->manifest->version) != 0 ||
            a->n_bindings != b->n_bindings)
                return false;
        for (size_t k = 0; k < a->n_bindings; k++)
                if (strcmp(a->bindings[k].input, b->bindings[k].input) != 0 ||
                    strcmp(a->bindings[k].placeholder, b->bindings[k].placeholder) != 0)
                        return false;
        return true;
}

/* Guard 6: each new question costs one answer from its account; 0, -EINVAL or a callback's. */
static int check_budget(Plan *p, const PlanCallbacks *cb, PlanError *e) {
        struct {
                const uint8_t *account;
                unsigned used;
        } accounts[PLAN_STEPS_MAX] = {};
        size_t n_accounts = 0;

        for (size_t i = 0; i < p->n_steps; i++) {
                PlanStep *s = &p->steps[i];
                PlanBudget b = {};
                bool asked = false;
                size_t a;
                int r;

                r = cb->budget_query(cb->userdata, s, &b);
                if (r != 0)
                        return callback_errno(r);
                memcpy(s->budget_account, b.account, PLAN_ACCOUNT_SIZE);
                s->charged = false;
                if (b.answered)
                        continue;
                /* Asked earlier in this plan: answered by the time this step runs. */
                for (size_t k = 0; k < i && !asked; k++)
                        asked = p->steps[k].charged && same_question(&p->steps[k], s);
                if (asked)
                        continue;

                for (a = 0; a < n_accounts; a++)
                        if (memcmp(accounts[a].account, s->budget_account, PLAN_ACCOUNT_SIZE) == 0)
                                break;
                if (a == n_accounts) {
                        accounts[a].account = s->budget_account;
                        accounts[a].used = 0;
                        n_accounts++;
                }
                if (accounts[a].used >= b.remaining)
                        return fail(e, E_PLAN_BUDGET_EXHAUSTED, (int)i, "",
                                    "the file's budget of answers is spent");
                accounts[a].used++;
                s->charged = true;
        }
        return 0;
}

static int placeholder_cmp(const void *a, const void *b) {
        return strcmp(a, b);
}

/* The distinct placeholders of the plan, sorted. */
static void collect_placeholders(Plan *p) {
        p->n_placeholders = 0;
        for (size_t i = 0; i < p->n_steps; i++)
                for (size_t k = 0; k < p->steps[i].n_bindings; k++) {
                        const char *name = p->steps[i].bindings[k].placeholder;
                        bool seen = false;

                        for (size_t j = 0; j < p->n_placeholders && !seen; j++)
                                seen = strcmp(p->placeholders[j], name) == 0;
                        /* At most PLAN_STEPS_MAX × PLAN_INPUTS_MAX bindings: always fits. */
                        if (!seen && p->n_placeholders < PLAN_PLACEHOLDERS_MAX)
                                snprintf(p->placeholders[p->n_placeholders++],
                                         sizeof(p->placeholders[0]), "%s", name);
                }
        qsort(p->placeholders, p->n_placeholders, sizeof(p->placeholders[0]), placeholder_cmp);
}

/* Runs the guards in order; 0, -EINVAL with *e filled, -ENOMEM or a callback's errno. */
static int validate(json_t *steps, uid_t agent, const PlanCallbacks *cb, Plan *p, PlanError *e) {
        RawStep raw[PLAN_STEPS_MAX];
        size_t n;
        int r, first;

        /* 1. Shape, every step. Nothing here depends on anything but the request itself. */
        if (!json_is_array(steps))
                return fail(e, E_PLAN_INVALID_REQUEST, -1, "steps", "steps must be an array");
        n = json_array_size(steps);
        if (n == 0 || n > PLAN_STEPS_MAX)
                return fail(e, E_PLAN_INVALID_REQUEST, -1, "steps", "a plan has 1 to 16 steps");
        p->n_steps = n;
        for (size_t i = 0; i < n; i++) {
                r = check_step_shape(json_array_get(steps, i), (int)i, &p->steps[i], &raw[i], e);
                if (r < 0)
                        return r;
        }

        /*
         * 2. Handles. Every step's handle is looked up, in order and in the same way, before the
         * first failure is answered: the number and order of lookups never depend on which
         * handles exist or whose they are, and every kind of "not visible" is the same 0.
         */
        first = -1;
        for (size_t i = 0; i < n; i++) {
                void *h = NULL;

                r = cb->handle_lookup(cb->userdata, p->steps[i].handle_id, agent, &h);
                if (r < 0)
                        return callback_errno(r);
                if (r == 0 || !h) {
                        if (first < 0)
                                first = (int)i;
                        continue;
                }
                p->steps[i].handle = h;
        }
        if (first >= 0)
                return fail(e, E_PLAN_UNKNOWN_HANDLE, first, "",
                            "no such handle is granted to this agent");

        /* 3. Plugins, every step. */
        first = -1;
        for (size_t i = 0; i < n; i++) {
                const Manifest *m = NULL;
                void *pl = NULL;

                r = cb->plugin_lookup(cb->userdata, p->steps[i].plugin_name, &m, &pl);
                if (r < 0)
                        return callback_errno(r);
                if (r == 0 || !m || !m->name || !m->version) {
                        if (first < 0)
                                first = (int)i;
                        continue;
                }
                p->steps[i].manifest = m;
                p->steps[i].plugin = pl;
        }
        if (first >= 0)
                return fail(e, E_PLAN_UNKNOWN_PLUGIN, first, "", "no such plugin is installed");

        /* 4. Bindings: literals and malformed placeholders, every step. */
        for (size_t i = 0; i < n; i++) {
                r = check_step_bindings(&raw[i], (int)i, e);
                if (r < 0)
                        return r;
        }

        /* 5. The bound inputs against the declared ones, every step. */
        for (size_t i = 0; i < n; i++) {
                r = check_step_inputs(&raw[i], (int)i, &p->steps[i], e);
                if (r < 0)
                        return r;
        }

        /* 6. Budget. */
        r = check_budget(p, cb, e);
        if (r < 0)
                return r;

        collect_placeholders(p);
        return 0;
}

int plan_validate(json_t *steps, uid_t agent, const PlanCallbacks *cb, Plan **ret_plan,
                  PlanError *ret_error) {
        _cleanup_(plan_freep) Plan *p = NULL;
        PlanError e = {};
        int r;

        if (!cb || !cb->handle_lookup || !cb->plugin_lookup || !cb->budget_query || !ret_plan)
                return -EFAULT;

        p = calloc(1, sizeof(Plan));
        if (!p)
                return -ENOMEM;

        r = validate(steps, agent, cb, p, &e);
        if (r == -EINVAL) {
                if (ret_error)
                        *ret_error = e;
                return r;
        }
        if (r < 0)
                return r;

        *ret_plan = TAKE_PTR(p);
        return 0;
}

Plan *plan_shrink(Plan *plan) {
        Plan *p;

        if (!plan || plan->n_steps == 0 || plan->n_steps >= PLAN_STEPS_MAX)
                return plan;
        p = realloc(plan, offsetof(Plan, steps) + plan->n_steps * sizeof(PlanStep));
        return p ? p : plan;
}

Plan *plan_free(Plan *plan) {
        free(plan);
        return NULL;
}

int plan_tuple_format(const PlanStep *step, char *buf, size_t size) {
        size_t off = 0;

        if (!step || !buf || size == 0)
                return -ENOBUFS;
        buf[0] = '\0';
        for (size_t k = 0; k < step->n_bindings; k++) {
                int w = snprintf(buf + off, size - off, "%s%s=%s", k ? "," : "",
                                 step->bindings[k].input, step->bindings[k].placeholder);
                if (w < 0 || (size_t)w >= size - off) {
                        buf[0] = '\0';
                        return -ENOBUFS;
                }
                off += (size_t)w;
        }
        return 0;
}
