/* lockctl audit verify --journal: every host's audit chain rebuilt from journal files. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Caps on what a collector's files may make lockctl hold: they are hostile input. */
#define JOURNAL_VERIFY_HOSTS_MAX   65536
#define JOURNAL_VERIFY_RECORDS_MAX (16u * 1024 * 1024) /* all hosts together */
#define JOURNAL_VERIFY_FILES_MAX   65536
#define JOURNAL_VERIFY_BREAKS_MAX  1000 /* listed per host; more are counted */

typedef struct JournalVerifyOptions {
        char **paths; /* journal files or directories (searched two levels deep) */
        size_t n_paths;
        const char *state_dir; /* the local audit log to compare with, or NULL */
        const char *match;     /* FIELD=VALUE an entry's sender must have; NULL: the default */
        bool json;
} JournalVerifyOptions;

/*
 * Reads lockd's audit records (LOCKD_AUDIT_RECORD) from the journal files with sd-journal,
 * groups them per host (_MACHINE_ID, _HOSTNAME) and per lockd start (_BOOT_ID, _PID), rebuilds
 * each host's chain and reports, per host, records, first and last seq, head, starts, and every
 * gap, rewrite and fork; with state_dir, whether the local log agrees up to the collector's head.
 * Returns the exit code: 0 when every chain verifies, 1 on any break or error.
 */
int journal_verify(const JournalVerifyOptions *o);
