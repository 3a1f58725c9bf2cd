/* The engine's runs by number (runs.h). */
#include "runs.h"
#include "clock.h"
#include "run-request.h"

void runs_init(Runs *r, RunsEndedFn on_ended, void *userdata) {
        *r = (Runs){
                .last_id = clock_boottime_usec() / 1000,
                .on_ended = on_ended,
                .userdata = userdata,
        };
}

void runs_name(Runs *r, RunRequest *req) {
        req->id = ++r->last_id; /* the unit comes with the spawner's EXITED */
}

void runs_ended(Runs *r) {
        r->total++;
        if (r->on_ended)
                r->on_ended(r->userdata);
}
