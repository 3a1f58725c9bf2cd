/*
 * main.c: a marketplace PDF plugin's process. Maps fd 3, reads the typed needle from fd 6 when
 * the plugin takes it, asks pdf_question() through pdf_ask_bytes(), writes its detail on fd 7
 * (protocol 2) and answers; anything else is lp_fail(), plugin_error.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>

#include "lockplugin.h"
#include "pdfplugin.h"

static void cpu_deadline(int sig) {
        static const char why[] = "CPU deadline: the file keeps MuPDF busy past its limit\n";

        (void)!write(STDERR_FILENO, why, sizeof(why) - 1);
        _exit(1);
}

/*
 * A CPU deadline of the plugin's own at nine tenths of lockd's RLIMIT_CPU (the manifest's
 * cpu_s): a file that keeps MuPDF busy (a content stream inflating to gigabytes of whitespace,
 * which no operator interrupts) ends by this exit, plugin_error, before the kernel's SIGXCPU.
 */
static void arm_cpu_deadline(void) {
        struct sigaction sa = {.sa_handler = cpu_deadline};
        struct rlimit rl;
        struct itimerval it = {};
        uint64_t usec;

        if (getrlimit(RLIMIT_CPU, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur == 0)
                return;
        usec = (uint64_t)rl.rlim_cur * 900000;
        it.it_value.tv_sec = (time_t)(usec / 1000000);
        it.it_value.tv_usec = (suseconds_t)(usec % 1000000);
        if (sigaction(SIGPROF, &sa, NULL) < 0 || setitimer(ITIMER_PROF, &it, NULL) < 0)
                lp_fail("cannot arm the CPU deadline");
}

int main(void) {
        char needle[PDF_NEEDLE_MAX + 1] = "";
        char why[256] = "";
        static PdfAsk ask;
        ssize_t needle_len = 0;
        const void *data;
        fz_context *ctx;
        size_t len;
        int answer;

        /* fd 6 first, before anything could take its number (lockplugin.h). */
        if (pdf_question_flags & PDF_Q_NEEDLE) {
                size_t jlen;
                char *json = lp_inputs(&jlen);

                if (!json)
                        lp_fail("no inputs");
                needle_len = lp_input_get(json, "needle", needle, sizeof(needle));
                free(json);
                /* lockd checked the value against max_bytes; an empty needle would match any
                 * document, and the manifest's kind `text` never gives one. */
                if (needle_len <= 0 || (size_t)needle_len > PDF_NEEDLE_MAX ||
                    memchr(needle, 0, (size_t)needle_len))
                        lp_fail("no usable needle");
        }
        arm_cpu_deadline();
        data = lp_mmap_input(&len);
        if (!data)
                lp_fail("cannot map the input");
        ctx = pdf_context_new(pdf_heap_max);
        if (!ctx)
                lp_fail("cannot make a MuPDF context");
        answer = pdf_ask_bytes(ctx, data, len, pdf_question_flags,
                               (pdf_question_flags & PDF_Q_NEEDLE) ? needle : NULL,
                               (size_t)needle_len, &ask, why, sizeof(why));
        if (answer < 0)
                lp_fail(why);
        if (ask.detail_len > 0)
                (void)lp_detail("%s", ask.detail);
        /* For the author (lockd drains stderr unread): what sizes the manifest's memory. */
        fprintf(stderr, "heap peak %zu bytes\n", pdf_heap_peak());
        lp_answer(answer == 1);
}
