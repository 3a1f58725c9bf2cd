/*
 * pdf.contains: does the extracted text of the PDF contain the typed value? (docs/plugins.md)
 *
 * Each page's text as pagetext.c extracts it (whitespace runs, line ends included, as one
 * space) is searched for the needle with its whitespace collapsed the same way: byte for byte in
 * UTF-8, case and accents as typed, within one page. The detail names the pages where it was
 * found (human-only; the agent gets the bit).
 */
#include <string.h>

#include "pdfplugin.h"

const unsigned pdf_question_flags = PDF_Q_PAGES | PDF_Q_NEEDLE;
const size_t pdf_heap_max = (size_t)96 << 20;

/* The needle as the pages' text is compared: decoded from UTF-8, whitespace collapsed. A needle
 * that is not UTF-8 or only whitespace cannot be searched: the run fails. */
static fz_buffer *needle_normal(fz_context *ctx, const char *needle, size_t len) {
        const char *end = needle + len;
        fz_buffer *out;
        bool space = false;

        for (const char *p = needle; p < end;) {
                int c, n = fz_chartorune(&c, p);

                if ((c == FZ_REPLACEMENT_CHARACTER && n == 1) || (size_t)(end - p) < (size_t)n)
                        fz_throw(ctx, FZ_ERROR_GENERIC, "the needle is not UTF-8");
                p += n;
        }
        out = fz_new_buffer(ctx, len + 1);
        fz_try(ctx) {
                for (size_t i = 0; i < len;) {
                        int c;

                        i += (size_t)fz_chartorune(&c, needle + i);
                        pdf_text_append(ctx, out, c, &space);
                }
        }
        fz_catch(ctx) {
                fz_drop_buffer(ctx, out);
                fz_rethrow(ctx);
        }
        if (fz_buffer_storage(ctx, out, NULL) == 0) {
                fz_drop_buffer(ctx, out);
                fz_throw(ctx, FZ_ERROR_GENERIC, "the needle is only whitespace");
        }
        return out;
}

int pdf_question(PdfAsk *ask) {
        fz_context *ctx = ask->ctx;
        fz_buffer *needle = NULL, *text = NULL;
        /* The pages' numbers, cut where lockd would cut the detail. */
        char list[PDF_DETAIL_MAX] = "";
        size_t used = 0;
        int found = 0;

        fz_var(needle);
        fz_var(text);
        fz_var(found);
        fz_var(used);
        fz_try(ctx) {
                unsigned char *nd;
                size_t nlen;

                needle = needle_normal(ctx, ask->needle, ask->needle_len);
                nlen = fz_buffer_storage(ctx, needle, &nd);
                text = fz_new_buffer(ctx, 4096);
                for (int n = 0; n < ask->pages; n++) {
                        unsigned char *t;
                        size_t tlen;

                        fz_clear_buffer(ctx, text);
                        pdf_page_text(ctx, ask->doc, n, text);
                        tlen = fz_buffer_storage(ctx, text, &t);
                        if (!memmem(t, tlen, nd, nlen))
                                continue;
                        if (used < sizeof(list)) {
                                int k = snprintf(list + used, sizeof(list) - used, "%s%d",
                                                 found ? ", " : "", n + 1);
                                used = k < 0 ? sizeof(list) : used + (size_t)k;
                        }
                        found++;
                }
                if (found == 1)
                        pdf_detail(ask, "found on page %s", list);
                else if (found > 1)
                        pdf_detail(ask, "found on %d pages: %s", found, list);
        }
        fz_always(ctx) {
                fz_drop_buffer(ctx, text);
                fz_drop_buffer(ctx, needle);
        }
        fz_catch(ctx) {
                fz_rethrow(ctx);
        }
        return found > 0;
}
