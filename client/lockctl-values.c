/* The typed values of a ticket as every approval surface names them: by the plugin's own input
 * and question, the agent's placeholder name only quoted as the agent's wording
 * (ARCHITECTURE.md, the human's side). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "lockctl-console.h"
#include "lockctl-pages.h"
#include "lockctl-values.h"
#include "macro.h"
#include "plan.h"
#include "varlink.h"

/* The longest string of lockd's taken into a label; a longer one is cut (and says so). */
#define LABEL_STRING_MAX 512
/* At most this many plugins are searched: lockd holds far fewer. */
#define PLUGINS_MAX 4096

json_t *values_plugins(void) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_(json_decrefp) json_t *reply = NULL;
        _cleanup_free_ char *error = NULL;
        json_t *plugins;

        if (varlink_client_connect(console_socket_path(), &c) < 0)
                return NULL;
        varlink_client_set_timeout(c, 30ULL * 1000 * 1000);
        if (console_all_pages_raw(c, "ListPlugins", NULL, "plugins", &reply, &error) < 0 || error)
                return NULL;
        plugins = json_object_get(reply, "plugins");
        if (!json_is_array(plugins) || json_array_size(plugins) > PLUGINS_MAX)
                return NULL;
        return json_incref(plugins);
}

/* s (may be NULL: "?") escaped and cut at LABEL_STRING_MAX bytes, into f. */
static void put_escaped(FILE *f, const char *s) {
        _cleanup_free_ char *e = NULL;
        size_t n;

        if (!s) {
                fputc('?', f);
                return;
        }
        n = strnlen(s, LABEL_STRING_MAX + 1);
        e = escape_bytes(s, n > LABEL_STRING_MAX ? LABEL_STRING_MAX : n);
        fputs(e ? e : "?", f);
        if (n > LABEL_STRING_MAX)
                fputs("...", f);
}

/* The input name of plugin@version in plugins, or NULL. Borrowed. */
static const json_t *plugin_input(const json_t *plugins, const char *plugin, const char *version,
                                  const char *input) {
        const json_t *p, *in;
        size_t i, j;

        if (!plugin || !version)
                return NULL;
        json_array_foreach(plugins, i, p) {
                const char *name = console_json_string(p, "name"),
                           *v = console_json_string(p, "version");

                if (!name || !v || strcmp(name, plugin) != 0 || strcmp(v, version) != 0)
                        continue;
                json_array_foreach(json_object_get(p, "inputs"), j, in) {
                        const char *n = console_json_string(in, "name");

                        if (n && strcmp(n, input) == 0)
                                return in;
                        if (j >= PLAN_PLACEHOLDERS_MAX * 4)
                                break;
                }
                return NULL;
        }
        return NULL;
}

/* "needle (text, at most 256 bytes)", or "needle (kind and size unknown)". */
static void put_input(FILE *f, const char *input, const json_t *spec) {
        long long max = console_json_integer(spec, "max_bytes", -1);
        const char *kind = console_json_string(spec, "kind");

        put_escaped(f, input);
        if (!spec || !kind || max < 1) {
                fputs(" (kind and size unknown: lockd did not list the plugin)", f);
                return;
        }
        fputs(" (", f);
        put_escaped(f, kind);
        fprintf(f, ", at most %lld byte%s)", max, max == 1 ? "" : "s");
}

int value_label_make(const json_t *t, const json_t *plugins, const char *placeholder,
                     ValueLabel *ret) {
        _cleanup_free_ char *prompt = NULL, *about = NULL;
        size_t prompt_size = 0, about_size = 0, i, uses = 0;
        FILE *pf = NULL, *af = NULL;
        const json_t *s;

        pf = open_memstream(&prompt, &prompt_size);
        af = open_memstream(&about, &about_size);
        if (!pf || !af) {
                if (pf)
                        fclose(pf);
                if (af)
                        fclose(af);
                return -ENOMEM;
        }
        json_array_foreach(json_object_get(t, "steps"), i, s) {
                const char *plugin = console_json_string(s, "plugin"),
                           *version = console_json_string(s, "version"), *input;
                const json_t *v;

                if (i >= PLAN_STEPS_MAX)
                        break;
                json_object_foreach((json_t *)json_object_get(s, "inputs"), input, v) {
                        const json_t *spec;

                        if (!json_is_string(v) || strcmp(json_string_value(v), placeholder) != 0)
                                continue;
                        spec = plugin_input(plugins, plugin, version, input);
                        /* The prompt names the first input bound to the value; the lines
                         * above it name each. */
                        if (uses == 0)
                                put_input(pf, input, spec);
                        fprintf(af, "step %zu: ", i);
                        put_escaped(af, plugin);
                        fputs(" asks: ", af);
                        put_escaped(af, console_json_string(s, "question"));
                        fputs("\n  this value is its input ", af);
                        put_input(af, input, spec);
                        fputc('\n', af);
                        uses++;
                }
        }
        if (uses == 0)
                fputs("a value no step uses", pf);
        /* The placeholder's name is the agent's choice ([a-z0-9_]{1,32}): it can say anything
         * ("your_password"), so it is never a prompt of its own, only quoted. */
        fputs("the agent's name for this value (the agent's wording, not the plugin's): \"${", af);
        put_escaped(af, placeholder);
        fputs("}\"\n", af);
        if (fclose(pf) != 0 || fclose(af) != 0)
                return -ENOMEM;
        ret->prompt = TAKE_PTR(prompt);
        ret->about = TAKE_PTR(about);
        return 0;
}

int ticket_summary(const json_t *t, bool full, char **ret) {
        _cleanup_free_ char *out = NULL;
        size_t size = 0, i;
        const json_t *s;
        FILE *f;

        f = open_memstream(&out, &size);
        if (!f)
                return -ENOMEM;
        fprintf(f, "The agent (uid %lld) asks", console_json_integer(t, "agent_uid", -1));
        fputs(json_array_size(json_object_get(t, "steps")) == 1 ? ":\n" : " these questions:\n", f);
        json_array_foreach(json_object_get(t, "steps"), i, s) {
                const char *label = console_json_string(s, "label");

                if (i >= PLAN_STEPS_MAX)
                        break;
                fputs("\n", f);
                put_escaped(f, console_json_string(s, "question"));
                fputs("\n  file: ", f);
                if (label) {
                        fputc('"', f);
                        put_escaped(f, label);
                        fputc('"', f);
                } else
                        put_escaped(f, console_json_string(s, "handle"));
                fputs("\n  plugin: ", f);
                put_escaped(f, console_json_string(s, "plugin"));
                fputc(' ', f);
                put_escaped(f, console_json_string(s, "version"));
                if (full) {
                        fputs("\n  1 means: ", f);
                        put_escaped(f, console_json_string(s, "one"));
                        fputs("\n  0 means: ", f);
                        put_escaped(f, console_json_string(s, "zero"));
                }
                fputc('\n', f);
        }
        if (fclose(f) != 0)
                return -ENOMEM;
        *ret = TAKE_PTR(out);
        return 0;
}

void value_label_done(ValueLabel *l) {
        l->prompt = mfree(l->prompt);
        l->about = mfree(l->about);
}
