/* Updates of an installed plugin: SemVer order, and a new major version plus the typed name for a
 * change of meaning. */
#include <errno.h>
#include <string.h>

#include "update.h"

static const char *const verdict_names[_UPDATE_VERDICT_MAX] = {
        [UPDATE_ACCEPT] = "UPDATE_ACCEPT",
        [UPDATE_NEEDS_TYPED_NAME] = "UPDATE_NEEDS_TYPED_NAME",
        [UPDATE_REFUSED_OTHER_NAME] = "UPDATE_REFUSED_OTHER_NAME",
        [UPDATE_REFUSED_NOT_NEWER] = "UPDATE_REFUSED_NOT_NEWER",
        [UPDATE_REFUSED_MEANING] = "UPDATE_REFUSED_MEANING",
};

const char *update_verdict_name(UpdateVerdict v) {
        if ((unsigned)v >= _UPDATE_VERDICT_MAX)
                return "UPDATE_UNKNOWN";
        return verdict_names[v];
}

int update_version_compare(const Manifest *a, const Manifest *b) {
        const unsigned va[3] = {a->version_major, a->version_minor, a->version_patch};
        const unsigned vb[3] = {b->version_major, b->version_minor, b->version_patch};

        for (size_t i = 0; i < 3; i++)
                if (va[i] != vb[i])
                        return va[i] < vb[i] ? -1 : 1;
        return 0;
}

static bool str_eq(const char *a, const char *b) {
        return a && b && strcmp(a, b) == 0;
}

int update_check(const Manifest *installed, const Manifest *new, UpdateVerdict *ret) {
        bool meaning_changed;

        if (!installed || !new || !ret || !installed->name || !new->name)
                return -EINVAL;

        if (!str_eq(installed->name, new->name)) {
                *ret = UPDATE_REFUSED_OTHER_NAME;
                return -EPERM;
        }
        if (update_version_compare(new, installed) <= 0) {
                *ret = UPDATE_REFUSED_NOT_NEWER;
                return -EPERM;
        }

        meaning_changed = !update_same_meaning(installed, new);
        if (!meaning_changed) {
                *ret = UPDATE_ACCEPT;
                return 0;
        }
        if (new->version_major <= installed->version_major) {
                *ret = UPDATE_REFUSED_MEANING;
                return -EPERM;
        }
        *ret = UPDATE_NEEDS_TYPED_NAME;
        return 0;
}

bool update_same_meaning(const Manifest *a, const Manifest *b) {
        return a && b && str_eq(a->question, b->question) && str_eq(a->one, b->one) &&
               str_eq(a->zero, b->zero);
}

bool update_confirm(const Manifest *new, const char *typed) {
        return new &&typed &&str_eq(new->name, typed);
}
