/*
 * pdf.has-javascript: is there a JavaScript action anywhere? (docs/plugins.md)
 *
 * Every object reachable from the trailer is walked (objwalk.c): the catalog's OpenAction and AA,
 * the JavaScript name tree, pages' AA, annotations' and form fields' A and AA, outlines, and the
 * Next chains of each, wherever they are stored (object streams included; a document with an
 * owner password only is read with the empty one). A dictionary is a JavaScript action when its
 * /S is /JavaScript or it carries a /JS script (a Rendition action may); a non-empty JavaScript
 * name tree counts as well, whatever its values look like. Unreachable objects (leftovers of
 * earlier updates) are never run by a reader and do not count.
 */
#include "pdfplugin.h"

const unsigned pdf_question_flags = PDF_Q_PAGES;
const size_t pdf_heap_max = (size_t)96 << 20;

static int is_javascript(fz_context *ctx, pdf_obj *dict, void *user) {
        pdf_obj *js = pdf_dict_get(ctx, dict, PDF_NAME(JS));

        return pdf_name_eq(ctx, pdf_dict_get(ctx, dict, PDF_NAME(S)), PDF_NAME(JavaScript)) ||
               pdf_is_string(ctx, js) || pdf_is_stream(ctx, js);
}

int pdf_question(PdfAsk *ask) {
        fz_context *ctx = ask->ctx;
        pdf_obj *trailer = pdf_trailer(ctx, ask->doc);
        pdf_obj *tree = pdf_dict_getl(ctx, trailer, PDF_NAME(Root), PDF_NAME(Names),
                                      PDF_NAME(JavaScript), NULL);

        if (pdf_name_tree_has_entry(ctx, tree))
                return 1;
        return pdf_walk(ctx, ask->doc, trailer, is_javascript, NULL) != 0;
}
