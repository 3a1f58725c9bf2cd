/* The engine's runs by number: each run's id, and the end of each run told to the engine's owner
 * of the count in flight (manager.c: its status line and its stop). */
#pragma once

#include <stdint.h>

typedef struct RunRequest RunRequest;

/* Called on the loop after each run's end (runs_ended()). */
typedef void (*RunsEndedFn)(void *userdata);

typedef struct Runs {
        uint64_t last_id; /* the last run id */
        uint64_t total;   /* runs ended since the start */
        RunsEndedFn on_ended;
        void *userdata;
} Runs;

/*
 * Numbers start at the boot-time clock's milliseconds now and grow by one per run: they tell
 * nothing of the ticket.
 */
void runs_init(Runs *r, RunsEndedFn on_ended, void *userdata);

/* Names the next run: its id, which the spawner's replies carry (the scope's name is the
 * spawner's, and comes with EXITED). */
void runs_name(Runs *r, RunRequest *req);

/* Called by whoever consumed a finished run's result, on the loop. */
void runs_ended(Runs *r);
