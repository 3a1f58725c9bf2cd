/* Roles: the policy's agents and consoles resolved through NSS, and the role of a peer. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy.h"

/* Bit flags, usable as a Varlink role_mask. */
typedef enum RoleKind {
        ROLE_NONE = 0,
        ROLE_AGENT = 1u << 0,
        ROLE_CONSOLE = 1u << 1,
} RoleKind;

/* The same bits as the Varlink role masks of the two interfaces (api/console.c). */
#define ROLE_MASK_AGENT   (1u << 0)
#define ROLE_MASK_CONSOLE (1u << 1)

#define ROLES_CACHE_MAX 1024 /* uids whose group lists are remembered */

typedef struct RoleSet {
        uid_t *uids;
        size_t n_uids;
        gid_t *gids;
        size_t n_gids;
} RoleSet;

typedef struct RolesCacheEntry {
        uid_t uid;
        unsigned mask; /* the RoleKind bits this uid has by its own id and its group list */
} RolesCacheEntry;

typedef struct Roles {
        RoleSet agents;         /* sorted, without duplicates */
        RoleSet consoles;       /* sorted, without duplicates */
        RolesCacheEntry *cache; /* ring of at most ROLES_CACHE_MAX entries */
        size_t n_cache, next_cache;
} Roles;

/*
 * Resolves every principal of p's agents and consoles to numbers through NSS (getpwnam_r,
 * getgrnam_r; a number is taken as is) and checks that no user can be both: no uid or gid in
 * both sets, and no user (every user the passwd database enumerates, every named user and every
 * member of a role group) who is in one role by uid and in the other through a group (primary or
 * supplementary, getgrouplist()), or in both through groups. Returns 0 and a new Roles in *ret;
 * -ENOENT for a name NSS does not know, -EPERM for an agent that resolves to uid or gid 0,
 * -ENOTUNIQ for a user in both roles, -ENOMEM or another negative errno from NSS; on failure a
 * one-line reason for the log is in why (when why_len > 0) and *ret is untouched. Not pure:
 * NSS may read files or ask a directory service.
 */
int roles_resolve(const Policy *p, Roles **ret, char *why, size_t why_len);

Roles *roles_free(Roles *r);
static inline void roles_freep(Roles **r) {
        if (*r)
                roles_free(*r);
}

/*
 * The role of a peer with uid and (primary) gid from SO_PEERCRED: agent or console by its uid,
 * by gid, or by a supplementary group the group database gives its passwd name (looked up once
 * per uid and cached for the life of r). A peer that matches both roles (possible only if the
 * databases changed since roles_resolve(), or through a gid the peer holds by a setgid program)
 * gets ROLE_NONE: fail closed. A uid NSS cannot look up counts by uid and gid only.
 */
RoleKind roles_classify(Roles *r, uid_t uid, gid_t gid);
