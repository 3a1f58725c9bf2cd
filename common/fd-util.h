/* File descriptor helpers: sealed memfd snapshots, fresh read-only reopens, full reads and writes.
 */
#pragma once

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif
#ifndef F_SEAL_EXEC
#define F_SEAL_EXEC 0x0020
#endif

/* The seals every snapshot carries: its bytes can never change again, nor its seals. */
#define MEMFD_SEALS_IMMUTABLE (F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL)

/*
 * Copies everything readable from fd (from its current offset) into a new memfd named name, at
 * most max bytes (-EFBIG past that), then seals it immutable. With executable the memfd keeps its
 * exec bits (a plugin binary); otherwise it is created MFD_NOEXEC_SEAL where the kernel knows it,
 * so nothing can ever execute the data. Returns the memfd (O_CLOEXEC) or a negative errno.
 */
int memfd_snapshot(int fd, const char *name, uint64_t max, bool executable);

/* The two halves of memfd_snapshot(), for a memfd filled elsewhere: a new sealable memfd
 * (O_CLOEXEC; never executable unless executable), and its seals (immutable, mode 0444 or 0555,
 * non-executable for data where the kernel knows F_SEAL_EXEC). An fd or 0; a negative errno. */
int memfd_new(const char *name, bool executable);
int memfd_seal(int fd, bool executable);

/* Whether fd is a memfd sealed against every change of its bytes (write, grow, shrink): what it
 * holds now it holds for good, whoever else has it open. */
bool memfd_is_sealed(int fd);

/* Like memfd_snapshot() for a buffer. */
int memfd_from_buffer(const void *buf, size_t len, const char *name);

/*
 * Opens a new read-only description of the file behind fd (through /proc/self/fd), so the
 * result has its own offset and cannot be written through. Returns the fd (O_CLOEXEC) or a
 * negative errno.
 */
int fd_reopen_readonly(int fd);

/* A directory stream over a duplicate of the directory fd dfd (which stays the caller's), rewound
 * to its start; NULL with errno set. */
DIR *fd_opendir_dup(int dfd);

/*
 * The names of directory dfd's entries that keep() accepts (keep sees every name, "." and ".."
 * too), sorted by strcmp(): 0 with a new NULL-terminated array of *ret_n strings in *ret (free it
 * with strv_free_n()); -E2BIG past max names, -ENOMEM, or the errno of reading the directory, with
 * *ret untouched.
 */
int dir_names_sorted(int dfd, bool (*keep)(const char *name), size_t max, char ***ret,
                     size_t *ret_n);

/* Frees the n strings of v and v itself; v may be NULL. */
void strv_free_n(char **v, size_t n);

/* Reads until len bytes or EOF, retrying EINTR; returns the bytes read or a negative errno. */
ssize_t loop_read(int fd, void *buf, size_t len);
/* Writes all len bytes, retrying EINTR and short writes; 0 or a negative errno. */
int loop_write(int fd, const void *buf, size_t len);

/*
 * Reads a whole file of at most max bytes into a new NUL-terminated buffer. 0 or a negative
 * errno (-EFBIG past max); *ret and *ret_len untouched on failure.
 */
int read_full_fd(int fd, size_t max, char **ret, size_t *ret_len);

/*
 * Reads the whole regular file at path (at most max bytes) into a new NUL-terminated buffer, like
 * read_full_fd(). 0 or a negative errno: -EINVAL when path is not a regular file, -EFBIG past
 * max; *ret and *ret_len untouched on failure.
 */
int read_full_file(const char *path, size_t max, char **ret, size_t *ret_len);

#define RECV_FDS_MAX 16
/*
 * Receives one datagram from fd (MSG_DONTWAIT, fds close-on-exec) into buf, with room for the
 * control data of max_fds + 1 fds (at most RECV_FDS_MAX), so that one fd too many is still seen.
 * Every fd it carried is taken: up to max_fds into fds (the caller's now), any beyond closed at
 * once; *ret_n_fds is how many there were in all. *ret_cut is set when the datagram or its
 * control data was cut short (MSG_TRUNC, MSG_CTRUNC) or held control data other than
 * SCM_RIGHTS, which nobody here expects. Returns the datagram's length, or a negative errno
 * (-EAGAIN: nothing yet); 0 with no fd is the peer's end.
 */
ssize_t recv_datagram_fds(int fd, void *buf, size_t size, int *fds, size_t max_fds,
                          size_t *ret_n_fds, bool *ret_cut);
