/* lockask's JSON forms of what lockd told it: files, a plugin's accepts and inputs, a ticket's
 * outcomes (lockask-json.h). */
#include "lockask-json.h"
#include "macro.h"

/* Appends item (stolen, also on failure) to list; false when either is missing. */
static bool append(json_t *list, json_t *item) {
        if (!list) {
                json_decref(item);
                return false;
        }
        return item && json_array_append_new(list, item) == 0;
}

json_t *lockask_files_json(const LockdFile *f, size_t n) {
        _cleanup_(json_decrefp) json_t *list = json_array();

        for (size_t i = 0; i < n; i++)
                if (!append(list,
                            json_pack("{s:s, s:s?, s:I, s:o}", "handle", f[i].handle, "label",
                                      f[i].label, "budget_left", (json_int_t)f[i].budget_left,
                                      "expires_usec",
                                      f[i].expires_usec < 0 ? json_null()
                                                            : json_integer(f[i].expires_usec))))
                        return NULL;
        return list ? json_pack("{s:O}", "files", list) : NULL;
}

json_t *lockask_accepts_json(const LockdQuestion *q) {
        _cleanup_(json_decrefp) json_t *list = json_array();

        for (size_t j = 0; j < q->n_accepts; j++)
                if (!append(list, json_string(q->accepts[j])))
                        return NULL;
        return TAKE_PTR(list);
}

json_t *lockask_inputs_json(const LockdQuestion *q) {
        _cleanup_(json_decrefp) json_t *list = json_array();

        for (size_t j = 0; j < q->n_inputs; j++)
                if (!append(list, json_pack("{s:s, s:s, s:I}", "name", q->inputs[j].name, "kind",
                                            q->inputs[j].kind, "max_bytes",
                                            (json_int_t)q->inputs[j].max_bytes)))
                        return NULL;
        return TAKE_PTR(list);
}

json_t *lockask_outcomes_json(const LockdTicket *t) {
        _cleanup_(json_decrefp) json_t *list = json_array();

        for (size_t i = 0; i < t->n_outcomes; i++) {
                const LockdOutcome *o = &t->outcomes[i];

                if (!append(list,
                            json_pack("{s:I, s:o, s:s?}", "step", (json_int_t)o->step, "result",
                                      o->result < 0 ? json_null() : json_integer(o->result),
                                      "error", o->error)))
                        return NULL;
        }
        return TAKE_PTR(list);
}
