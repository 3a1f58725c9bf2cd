/* One call into the passwd or group database, its buffer grown as the entry needs. */
#include <errno.h>
#include <stdlib.h>

#include "nss-util.h"

#define NSS_BUFFER_START (16 * 1024)

int nss_get(struct passwd *pw, struct group *gr, const char *name, uint32_t id, bool next,
            char **buf, size_t *len) {
        if (!*buf) {
                *len = NSS_BUFFER_START;
                *buf = malloc(*len);
                if (!*buf)
                        return -ENOMEM;
        }
        for (;;) {
                struct passwd *pw_res = NULL;
                struct group *gr_res = NULL;
                int r;

                if (pw && next)
                        r = getpwent_r(pw, *buf, *len, &pw_res);
                else if (pw && name)
                        r = getpwnam_r(name, pw, *buf, *len, &pw_res);
                else if (pw)
                        r = getpwuid_r(id, pw, *buf, *len, &pw_res);
                else if (next)
                        r = getgrent_r(gr, *buf, *len, &gr_res);
                else if (name)
                        r = getgrnam_r(name, gr, *buf, *len, &gr_res);
                else
                        r = getgrgid_r(id, gr, *buf, *len, &gr_res);
                if (r == ERANGE && *len < NSS_BUFFER_MAX) {
                        char *b = realloc(*buf, *len * 2);
                        if (!b)
                                return -ENOMEM;
                        *buf = b;
                        *len *= 2;
                        continue;
                }
                if (r == ENOENT || (r == 0 && !pw_res && !gr_res))
                        return -ENOENT;
                return -r;
        }
}
