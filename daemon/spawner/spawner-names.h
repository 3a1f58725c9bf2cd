/* The spawner's passwd and group lookups (spawner-names.c), made in a child that exits. */
#pragma once

#include <sys/types.h>

#include "policy.h"

/* What the spawner needs from the user and group databases at its start. */
typedef struct SpawnerNames {
        int engine_error; /* 0, -ENOENT no such user, -EPERM root, another negative errno */
        uid_t engine_uid;
        gid_t engine_gid;
        int range_error;     /* uid_pool_check_range() of the policy's ephemeral uids */
        char range_why[512]; /* its reason, NUL-terminated */
        gid_t socket_gid[2]; /* agent, console: as socket_policy_gid() gives them */
} SpawnerNames;

/*
 * Looks up the engine's user (ENGINE_USER), checks the ephemeral uid range against every user and
 * group, and resolves the sockets' groups, all in a forked child that writes the answers back and
 * exits: the NSS modules those calls load (libnss_systemd, and libm with it) never map into the
 * long-lived root process, whose resident size they would grow by about 600 KiB. 0 with *ret
 * filled (each lookup's own result in it), or a negative errno when the child could not tell.
 */
int spawner_names_lookup(const Policy *p, const char *engine_user, SpawnerNames *ret);
