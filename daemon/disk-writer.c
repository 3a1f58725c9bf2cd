/* The disk writer: a thread that runs one disk job at a time for the event loop, and an eventfd
 * that brings each job's result back to the loop. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "disk-writer.h"
#include "fd-util.h"
#include "macro.h"

struct DiskWriter {
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        /* Under lock: the job handed over and not yet taken, whether the thread is working, the
         * result of the job that ended, and the end of the thread. */
        DiskWorkFn work;
        void *ctx;
        bool working;
        bool ended;
        int result;
        bool quit;
        bool started; /* the thread exists: disk_writer_free() joins it */
        /* The loop's own: a job started whose done has not been called. */
        bool busy;
        void *busy_ctx;
        int efd;
        sd_event_source *source;
        DiskDoneFn done;
        void *userdata;
};

static void *writer_main(void *arg) {
        DiskWriter *w = arg;
        const uint64_t one = 1;

        pthread_mutex_lock(&w->lock);
        for (;;) {
                DiskWorkFn work;
                void *ctx;
                int r;

                while (!w->work && !w->quit)
                        pthread_cond_wait(&w->cond, &w->lock);
                if (!w->work)
                        break;
                work = w->work;
                ctx = w->ctx;
                w->work = NULL;
                w->working = true;
                pthread_mutex_unlock(&w->lock);

                r = work(ctx);

                pthread_mutex_lock(&w->lock);
                w->working = false;
                w->ended = true;
                w->result = r;
                pthread_mutex_unlock(&w->lock);
                /*
                 * Told once the lock is free: a thread woken while we held it (the loop, on
                 * this CPU) would preempt us only to block on the lock and switch back. The
                 * loop reads the counter and then looks at ended, under the lock.
                 */
                pthread_cond_broadcast(&w->cond);
                (void)!write(w->efd, &one, sizeof(one));
                pthread_mutex_lock(&w->lock);
        }
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

/* Calls done for the job that ended, if one did. */
static void dispatch(DiskWriter *w) {
        void *ctx;
        bool ended;
        int r;

        pthread_mutex_lock(&w->lock);
        ended = w->ended;
        r = w->result;
        w->ended = false;
        pthread_mutex_unlock(&w->lock);
        if (!ended || !w->busy)
                return;
        ctx = w->busy_ctx;
        w->busy = false;
        w->busy_ctx = NULL;
        w->done(ctx, r, w->userdata);
}

static int on_event(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        DiskWriter *w = userdata;
        uint64_t n;

        (void)!read(w->efd, &n, sizeof(n));
        dispatch(w);
        return 0;
}

int disk_writer_new(sd_event *e, DiskDoneFn done, void *userdata, DiskWriter **ret) {
        DiskWriter *w;
        sigset_t all, old;
        int r;

        if (!e || !done || !ret)
                return -EINVAL;
        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->done = done;
        w->userdata = userdata;
        pthread_mutex_init(&w->lock, NULL);
        pthread_cond_init(&w->cond, NULL);
        w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        r = w->efd < 0 ? negative_errno()
                       : sd_event_add_io(e, &w->source, w->efd, EPOLLIN, on_event, w);
        if (r >= 0) {
                /* The thread inherits the mask: no signal is ever delivered to it. */
                sigfillset(&all);
                pthread_sigmask(SIG_SETMASK, &all, &old);
                r = -pthread_create(&w->thread, NULL, writer_main, w);
                pthread_sigmask(SIG_SETMASK, &old, NULL);
                w->started = r >= 0;
        }
        if (r < 0) {
                disk_writer_free(w);
                return r;
        }
        *ret = w;
        return 0;
}

DiskWriter *disk_writer_free(DiskWriter *w) {
        if (!w)
                return NULL;
        pthread_mutex_lock(&w->lock);
        w->quit = true;
        pthread_cond_broadcast(&w->cond);
        pthread_mutex_unlock(&w->lock);
        /* A job handed over but not taken yet still runs: the thread leaves once it has none. */
        if (w->started)
                pthread_join(w->thread, NULL);
        sd_event_source_disable_unref(w->source);
        safe_close(w->efd);
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return NULL;
}

int disk_writer_start(DiskWriter *w, DiskWorkFn work, void *ctx) {
        if (!w || !work)
                return -EINVAL;
        if (w->busy)
                return -EBUSY;
        w->busy = true;
        w->busy_ctx = ctx;
        pthread_mutex_lock(&w->lock);
        w->work = work;
        w->ctx = ctx;
        w->ended = false;
        pthread_mutex_unlock(&w->lock);
        /* After the unlock: the writer, woken, takes the lock at once instead of blocking on it
         * (two context switches more per job, measured on the commit's path). */
        pthread_cond_broadcast(&w->cond);
        return 0;
}

bool disk_writer_busy(const DiskWriter *w) {
        return w && w->busy;
}

void disk_writer_wait(DiskWriter *w) {
        if (!w || !w->busy)
                return;
        pthread_mutex_lock(&w->lock);
        while (w->work || w->working)
                pthread_cond_wait(&w->cond, &w->lock);
        pthread_mutex_unlock(&w->lock);
}

void disk_writer_finish(DiskWriter *w) {
        disk_writer_wait(w);
        if (w)
                dispatch(w);
}
