/* The disk writer (disk-writer.c): one thread that does the engine's fsync()s, one job at a time,
 * so that the event loop never waits for a disk (ARCHITECTURE.md, the group commit). */
#pragma once

#include <stdbool.h>
#include <systemd/sd-event.h>

typedef struct DiskWriter DiskWriter;

/* A job's work, on the writer's thread: it may touch only what ctx owns and file descriptors that
 * stay open until its done function ran. Returns 0 or a negative errno. */
typedef int (*DiskWorkFn)(void *ctx);
/* Called on the event loop once the work returned r. */
typedef void (*DiskDoneFn)(void *ctx, int r, void *userdata);

/*
 * Starts the thread (every signal blocked in it: sd-event's signalfd sources stay the loop's) and
 * watches its completions on e. done is called on the loop for every job, in order. 0 or a
 * negative errno with *ret untouched.
 */
int disk_writer_new(sd_event *e, DiskDoneFn done, void *userdata, DiskWriter **ret);
/* Waits for the job in progress (its done is not called), ends the thread; NULL-safe, NULL. */
DiskWriter *disk_writer_free(DiskWriter *w);

/* Hands the thread one job: -EBUSY while the last one's done has not been called, 0 else. */
int disk_writer_start(DiskWriter *w, DiskWorkFn work, void *ctx);
/* Whether a job was started whose done has not been called yet. */
bool disk_writer_busy(const DiskWriter *w);
/* Blocks until the job in progress (if any) returned from its work; its done comes later, from the
 * loop. For a write that must follow the job's on disk. */
void disk_writer_wait(DiskWriter *w);
/* disk_writer_wait(), then calls the job's done now: for a stop that cannot go back to the loop. */
void disk_writer_finish(DiskWriter *w);
