/*
 * pagetext.c: a page's extracted text as pdf.contains and pdf.has-text-layer see it: MuPDF's
 * structured text (ligatures expanded, characters wholly outside the media box left out), in
 * reading order of its blocks and lines, as UTF-8 with every run of whitespace, line ends
 * included, collapsed to one space and none at either end.
 */
#include "pdfplugin.h"

bool pdf_is_space(int c) {
        return c <= 0x20 || c == 0x7f || c == 0x85 || c == 0xa0 || c == 0x1680 ||
               (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
               c == 0x205f || c == 0x3000;
}

void pdf_text_append(fz_context *ctx, fz_buffer *out, int c, bool *pending_space) {
        if (pdf_is_space(c)) {
                *pending_space = true;
                return;
        }
        if (*pending_space && fz_buffer_storage(ctx, out, NULL) > 0)
                fz_append_byte(ctx, out, ' ');
        *pending_space = false;
        fz_append_rune(ctx, out, c);
}

void pdf_page_text(fz_context *ctx, pdf_document *doc, int n, fz_buffer *out) {
        fz_stext_options opts = {.flags = FZ_STEXT_MEDIABOX_CLIP};
        fz_page *page = NULL;
        fz_stext_page *text = NULL;
        fz_device *dev = NULL;
        bool space = false;

        fz_var(page);
        fz_var(text);
        fz_var(dev);
        fz_var(space);
        fz_try(ctx) {
                page = pdf_page_load(ctx, doc, n);
                /* As fz_new_stext_page_from_page() does, which lives in util.o with every
                 * document writer's constructor (options.c says why not those). */
                text = fz_new_stext_page(ctx, fz_bound_page(ctx, page));
                dev = fz_new_stext_device(ctx, text, &opts);
                fz_run_page(ctx, page, dev, fz_identity, NULL);
                fz_close_device(ctx, dev);
                for (fz_stext_block *b = text->first_block; b; b = b->next) {
                        if (b->type != FZ_STEXT_BLOCK_TEXT)
                                continue;
                        for (fz_stext_line *l = b->u.t.first_line; l; l = l->next) {
                                for (fz_stext_char *c = l->first_char; c; c = c->next)
                                        pdf_text_append(ctx, out, c->c, &space);
                                space = true;
                        }
                }
        }
        fz_always(ctx) {
                fz_drop_device(ctx, dev);
                fz_drop_stext_page(ctx, text);
                fz_drop_page(ctx, page);
        }
        fz_catch(ctx) {
                fz_rethrow(ctx);
        }
}
