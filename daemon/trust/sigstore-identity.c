/* Identity patterns: POSIX extended regular expressions matched against the whole SAN. */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "identity.h"
#include "sigstore.h"

/* Returns true only if pattern_regex matches all of san: the pattern is wrapped as ^(...)$ and the
 * match must also span the string, so a pattern never matches a substring. */
bool sigstore_identity_match(const char *pattern_regex, const char *san) {
        if (!pattern_regex || !san || strlen(pattern_regex) > 4096)
                return false;
        /* Never compile a pattern the complexity check refuses (regcomp() blow-ups). */
        if (identity_pattern_check(pattern_regex, NULL) < 0)
                return false;
        size_t n = strlen(pattern_regex) + 5;
        char *wrapped = malloc(n);
        if (!wrapped)
                return false;
        snprintf(wrapped, n, "^(%s)$", pattern_regex);
        regex_t re;
        int r = regcomp(&re, wrapped, REG_EXTENDED);
        free(wrapped);
        if (r != 0)
                return false;
        regmatch_t m[1];
        bool ok = regexec(&re, san, 1, m, 0) == 0 && m[0].rm_so == 0 &&
                  (size_t)m[0].rm_eo == strlen(san);
        regfree(&re);
        return ok;
}
