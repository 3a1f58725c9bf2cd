/*
 * fuzz.c: a PDF plugin's fuzz target: pdf_question() on the input as a document, through the
 * same pdf_ask_bytes() as the plugin. A plugin that takes the needle gets it from the input's
 * head: its first byte's value modulo 33 is the needle's length, then the needle, then the PDF.
 */
#include <stdint.h>
#include <string.h>

#include "pdfplugin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static fz_context *ctx;
        static PdfAsk ask;
        char needle[PDF_NEEDLE_MAX + 1] = "a", why[256];
        size_t needle_len = 1;

        if (!ctx)
                ctx = pdf_context_new(pdf_heap_max);
        if (!ctx)
                abort();
        if ((pdf_question_flags & PDF_Q_NEEDLE) && size > 0) {
                size_t n = data[0] % 33;

                if (n > 0 && size >= 1 + n && !memchr(data + 1, 0, n)) {
                        memcpy(needle, data + 1, n);
                        needle[n] = 0;
                        needle_len = n;
                }
                n = size >= 1 + n ? 1 + n : size;
                data += n;
                size -= n;
        }
        (void)pdf_ask_bytes(ctx, data, size, pdf_question_flags, needle, needle_len, &ask, why,
                            sizeof(why));
        /* Each input from an empty store and glyph cache: one input's cached objects never change
         * the next's. */
        fz_empty_store(ctx);
        fz_purge_glyph_cache(ctx);
        /* Every allocation of a run is freed by its end; the store keeps nothing now. */
        if (pdf_heap_used() > ((size_t)1 << 20))
                abort();
        return 0;
}
