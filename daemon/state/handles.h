/* Handles: immutable snapshots of files a human granted to an agent, each in a sealed memfd with
 * its SHA-256, an unguessable id, a label, an expiry and a budget. Kept in a handle store in the
 * state directory when one is attached (handle-store.h). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#define HANDLES_MAX           1024 /* handles alive at once, all agents */
#define HANDLES_PER_AGENT_MAX 256  /* handles alive at once for one agent uid */
#define HANDLE_ID_PREFIX      "h-"
#define HANDLE_ID_RANDOM      16 /* bytes of getrandom() in an id: 128 bits */
#define HANDLE_ID_LEN         (2 + 2 * HANDLE_ID_RANDOM) /* "h-" + 32 lowercase hex digits */
#define HANDLE_LABEL_MAX      64                         /* bytes */
#define HANDLE_SHA256_HEX     64

typedef struct Handle {
        char id[HANDLE_ID_LEN + 1];
        int memfd;          /* sealed immutable (MEMFD_SEALS_IMMUTABLE), never executable */
        uint64_t bytes;     /* the snapshot's size */
        uint8_t digest[32]; /* SHA-256 of the snapshot: the budget's key */
        char sha256[HANDLE_SHA256_HEX + 1]; /* the same in lowercase hex */
        char *label;                        /* NULL for none */
        uid_t agent;                        /* the one agent uid it is granted to */
        uint64_t expires_usec;              /* CLOCK_REALTIME; 0 for never */
        uint32_t budget;                    /* distinct answers the content may give */
        bool auto_run;                      /* protocol-1 questions run without approval */
        uint64_t granted_usec;              /* CLOCK_REALTIME */
        /* CLOCK_BOOTTIME; 0 for never: what the expiry runs on, so that a jump of the wall clock
         * neither ends a grant early nor keeps it late (expires_usec is only shown and stored). */
        uint64_t deadline_usec;
} Handle;

typedef struct Handles Handles;
typedef struct HandleStore HandleStore;

/* What a grant asks for. fd is read from its start (it is not closed; its offset moves). */
typedef struct HandleSpec {
        int fd;
        uint64_t max_bytes; /* the policy's limits.max_handle_bytes */
        const char *label;  /* NULL for none; else handle_label_valid() */
        uid_t agent;
        uint64_t expires_usec; /* CLOCK_REALTIME; 0 for never */
        uint32_t budget;       /* >= 1; the caller applies the policy's cap */
        bool auto_run;
} HandleSpec;

/* Called for each handle that expires, just before it is freed (borrowed). */
typedef void (*HandleExpiredFn)(const Handle *h, void *userdata);

/*
 * A new, empty set. With e, a CLOCK_BOOTTIME timer on e removes each handle when its expiry
 * passes (calling on_expired, which may be NULL); without one, expired handles go only on lookup,
 * listing and handles_expire(). 0 or -ENOMEM.
 */
int handles_new(sd_event *e, HandleExpiredFn on_expired, void *userdata, Handles **ret);
/* Frees every handle (closing its memfd) and the timer; NULL-safe; returns NULL. */
Handles *handles_free(Handles *hs);
static inline void handles_freep(Handles **hs) {
        if (*hs)
                handles_free(*hs);
}

/* CLOCK_REALTIME in microseconds. */
uint64_t handles_now_usec(void);

/*
 * Whether s (len bytes) may be a label: 1..HANDLE_LABEL_MAX bytes of valid UTF-8 (no overlong
 * form, no surrogate, nothing past U+10FFFF) holding no control character (C0, DEL, C1), no line
 * or paragraph separator, no byte order mark and no bidirectional mark, override or isolate
 * (U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069): a label is shown to the human when
 * approving, and must look like what it is.
 */
bool handle_label_valid(const char *s, size_t len);
/* Whether s has the form of a handle id: "h-" and 32 lowercase hex digits, nothing else. */
bool handle_id_valid(const char *s);

/*
 * Snapshots spec->fd (from offset 0) into a sealed, non-executable memfd, hashes it and adds a
 * handle with a fresh random id, stored first when a store is attached. 0 with *ret (owned by
 * hs; valid until it is revoked, expires or hs is freed), or a negative errno with *ret
 * untouched: -EINVAL bad spec (label, budget 0, a past expiry, fd not a readable regular file),
 * -EFBIG larger than max_bytes, -EMFILE HANDLES_MAX reached, -EUSERS HANDLES_PER_AGENT_MAX
 * reached for that agent, -ENOBUFS the store's byte cap reached, -ENOMEM, I/O errnos (reading
 * the file, or writing the store: then nothing was granted).
 */
int handles_grant(Handles *hs, const HandleSpec *spec, const Handle **ret);

/*
 * The live handle with id, or NULL (expired handles are removed first). _for_agent() returns
 * NULL too for a handle granted to another uid, so an agent cannot tell "not yours" from "none".
 */
const Handle *handles_get(Handles *hs, const char *id);
const Handle *handles_get_for_agent(Handles *hs, const char *id, uid_t agent);

/*
 * Attaches store (borrowed; it must outlive hs, or be detached with NULL): from now on a grant
 * is stored durably before handles_grant() returns (a handle that cannot be stored is not
 * granted), and a revoked or expired handle leaves the store.
 */
void handles_set_store(Handles *hs, HandleStore *store);

/*
 * Adds a handle read back from the store: its id, fields, label (taken) and sealed memfd
 * (taken), as they were granted. 0; -EEXIST an id already live; -EMFILE, -EUSERS as
 * handles_grant(); -EINVAL. On failure nothing is taken.
 */
int handles_restore(Handles *hs, const Handle *h);

/*
 * Removes and frees the handle with id, and its files from the store. 0; -ENOENT; or the store's
 * errno when its files could not be removed (the handle is revoked in memory all the same, and
 * the caller must say that it would come back at the next start). Runs that hold a reopened fd
 * keep it.
 */
int handles_revoke(Handles *hs, const char *id);

/* Removes every handle whose deadline is at or before now_usec (CLOCK_BOOTTIME), calling
 * on_expired. The count. */
size_t handles_expire(Handles *hs, uint64_t now_usec);

/*
 * The live handles in grant order, after removing the expired: handles_n() then
 * handles_at(hs, 0..n-1). handles_at() is NULL out of range.
 */
size_t handles_n(Handles *hs);
const Handle *handles_at(const Handles *hs, size_t i);
/* The live handles of one agent uid (expired ones count until removed). */
size_t handles_n_agent(const Handles *hs, uid_t agent);

/*
 * A new read-only open of the handle's snapshot for one run: its own offset at 0, O_CLOEXEC,
 * no write through it (the seals forbid any other way). The fd, or a negative errno.
 */
int handle_open_for_run(const Handle *h);
