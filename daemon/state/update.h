/* Updates of an installed plugin: which new versions may replace it, and which need the human to
 * type the plugin's name. */
#pragma once

#include <stdbool.h>

#include "manifest.h"

typedef enum UpdateVerdict {
        UPDATE_ACCEPT,             /* a newer version with the same question, one and zero */
        UPDATE_NEEDS_TYPED_NAME,   /* a new major version that changes question, one or zero */
        UPDATE_REFUSED_OTHER_NAME, /* the new manifest is another plugin */
        UPDATE_REFUSED_NOT_NEWER,  /* the same version, or a downgrade */
        UPDATE_REFUSED_MEANING,    /* question, one or zero changed without a new major version */
        _UPDATE_VERDICT_MAX,
} UpdateVerdict;

/* "UPDATE_ACCEPT", …; "UPDATE_UNKNOWN" out of range. */
const char *update_verdict_name(UpdateVerdict v);

/*
 * Decides whether new may replace installed. Returns 0 when it may, with *ret UPDATE_ACCEPT or
 * UPDATE_NEEDS_TYPED_NAME (then only after update_confirm()); -EPERM when it may not, with *ret
 * set to the UPDATE_REFUSED_* reason (a refusal is an answer, so *ret is set); -EINVAL for a NULL
 * argument, *ret untouched. Versions compare as SemVer MAJOR.MINOR.PATCH; the texts compare
 * byte for byte.
 */
int update_check(const Manifest *installed, const Manifest *new, UpdateVerdict *ret);

/* SemVer order of a's and b's MAJOR.MINOR.PATCH: negative, 0 or positive. */
int update_version_compare(const Manifest *a, const Manifest *b);

/* Whether a and b ask the same question with the same meaning of each answer, byte for byte. */
bool update_same_meaning(const Manifest *a, const Manifest *b);

/* Whether typed is exactly new's name (no trimming, no case folding); false for NULL. */
bool update_confirm(const Manifest *new, const char *typed);
