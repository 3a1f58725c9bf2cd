/*
 * threads.c: a plugin's pthread_create(), which fails. A PDF plugin runs on one thread; the only
 * caller linked in is OpenJPEG's thread pool, which MuPDF never asks for more than the calling
 * thread and which decodes there when creation fails. Defined here (in the plugin's process
 * only, not the fuzz targets, whose sanitizers and libFuzzer make threads), glibc's own is not
 * linked, and with it go clone and, through the resolver state a new thread initialises, socket
 * and bind: calls the plugin never makes, that the sandbox denies, and that the import check
 * looks for.
 */
#include <errno.h>
#include <pthread.h>

int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *),
                   void *arg) {
        return EAGAIN;
}
