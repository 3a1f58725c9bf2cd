/* Copies of the files a console passed, made off the event loop by a child process with a
 * deadline, so that a file that never answers (a hung NFS, sshfs or FUSE mount) never stops lockd
 * (ARCHITECTURE.md, processes). */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

typedef struct FileCopy FileCopy;

/* error: 0 (the fds were replaced), -ETIMEDOUT (the deadline passed; the child was killed),
 * -EFBIG (a file was larger than max_bytes), or the errno of the failed read or copy. */
typedef void (*FileCopyDoneFn)(int error, void *userdata);

/*
 * Takes the n fds at fds (owned by the copy from now on, and replaced in place): each one that is
 * a regular file open for reading is copied, from offset 0, by a child process into a sealed
 * memfd (at most max_bytes), and replaced by it once all copies are done; any other fd is left as
 * it is, for the method's own checks to refuse it. done(error, userdata) runs on e's loop when
 * the child ended, or timeout_usec after the start (the child is then killed with SIGKILL, which
 * ends even a read that hangs in the kernel), never from within this call. 0 and the copy in
 * *ret, or a negative errno (nothing started; the fds are untouched).
 */
int file_copy_start(sd_event *e, int *fds, size_t n, uint64_t max_bytes, uint64_t timeout_usec,
                    FileCopyDoneFn done, void *userdata, FileCopy **ret);

/* Ends a copy: kills the child if it still runs; done is not called. The fds stay the caller's.
 * NULL-safe; returns NULL. */
FileCopy *file_copy_cancel(FileCopy *c);
