/*
 * pdf.has-text-layer: does some page have extractable text? (docs/plugins.md)
 *
 * A page has text when its extracted text (pagetext.c, as pdf.contains searches it) holds a
 * character that is neither whitespace nor U+FFFD, MuPDF's mark for a glyph it could not map to
 * Unicode. Invisible text counts (an OCR layer is text in render mode 3); an image-only scan
 * answers 0, which is how a 0 of pdf.contains is told from a scan.
 */
#include "pdfplugin.h"

const unsigned pdf_question_flags = PDF_Q_PAGES;
const size_t pdf_heap_max = (size_t)96 << 20;

int pdf_question(PdfAsk *ask) {
        fz_context *ctx = ask->ctx;
        fz_buffer *text = fz_new_buffer(ctx, 4096);
        int found = 0;

        fz_var(found);
        fz_try(ctx) {
                for (int n = 0; n < ask->pages && !found; n++) {
                        unsigned char *t;
                        size_t len;

                        fz_clear_buffer(ctx, text);
                        pdf_page_text(ctx, ask->doc, n, text);
                        len = fz_buffer_storage(ctx, text, &t);
                        /* Whitespace is already gone but for single spaces between words. */
                        for (size_t i = 0; i < len && !found;) {
                                int c;

                                i += (size_t)fz_chartorune(&c, (const char *)t + i);
                                found = c != ' ' && c != FZ_REPLACEMENT_CHARACTER;
                        }
                }
        }
        fz_always(ctx) {
                fz_drop_buffer(ctx, text);
        }
        fz_catch(ctx) {
                fz_rethrow(ctx);
        }
        return found;
}
