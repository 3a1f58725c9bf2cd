/*
 * main.c: a marketplace PDF plugin's process. Maps fd 3, reads the typed needle from fd 6 when
 * the plugin takes it, asks pdf_question() through pdf_ask_bytes(), writes its detail on fd 7
 * (protocol 2) and answers; anything else is lp_fail(), plugin_error.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lockplugin.h"
#include "pdfplugin.h"

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
