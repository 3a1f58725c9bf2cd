/* The marketplace name rule: [a-z0-9][a-z0-9-]{0,63}. */
#include <string.h>

#include "marketplace-name.h"

bool marketplace_name_valid(const char *name) {
        size_t n;

        if (!name)
                return false;
        n = strlen(name);
        if (n == 0 || n > MARKETPLACE_NAME_MAX || name[0] == '-')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
                      name[i] == '-'))
                        return false;
        return true;
}
