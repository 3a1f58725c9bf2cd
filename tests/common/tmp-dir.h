/* A private temporary directory per test: made under $TMPDIR (else /tmp), removed with all it
 * holds. */
#pragma once

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct TmpDir {
        char path[128];
        int fd; /* the directory, O_DIRECTORY */
} TmpDir;

static inline int tmpdir_rm_one(const char *path, const struct stat *st, int flag,
                                struct FTW *ftw) {
        return remove(path);
}

/* Makes "<program>-XXXXXX" and opens it; fails the test on error. */
static inline void tmpdir_new(TmpDir *t) {
        const char *base = getenv("TMPDIR");

        snprintf(t->path, sizeof(t->path), "%s/%s-XXXXXX", base ? base : "/tmp",
                 program_invocation_short_name);
        ck_assert_ptr_nonnull(mkdtemp(t->path));
        t->fd = open(t->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(t->fd, 0);
}

/* Closes and removes the directory and everything below it. */
static inline void tmpdir_done(TmpDir *t) {
        close(t->fd);
        ck_assert_int_eq(nftw(t->path, tmpdir_rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}
