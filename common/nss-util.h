/* One call into the passwd or group database (getpw*_r, getgr*_r), its buffer grown as needed. */
#pragma once

#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NSS_BUFFER_MAX (16 * 1024 * 1024) /* a group with more members than this is refused */

/*
 * One call into the passwd database (pw) or the group database (gr, pw NULL): the entry named name,
 * the one with id (name NULL), or with next the next entry of the enumeration the caller opened
 * with setpwent()/setgrent(). Its strings live in *buf of *len bytes, allocated when *buf is NULL
 * and grown on ERANGE up to NSS_BUFFER_MAX. 0 with the entry filled, -ENOENT when there is no such
 * entry or no further one, or another negative errno.
 */
int nss_get(struct passwd *pw, struct group *gr, const char *name, uint32_t id, bool next,
            char **buf, size_t *len);
