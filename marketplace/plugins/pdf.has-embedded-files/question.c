/*
 * pdf.has-embedded-files: does the document embed files? (docs/plugins.md)
 *
 * 1 when the catalog's EmbeddedFiles name tree has an entry (at any depth of its Kids), or when
 * a page has a file attachment annotation (/Subtype /FileAttachment), whatever its file
 * specification holds. Files named only by associated-file arrays (/AF) or by a portable
 * collection's other parts are not looked for.
 */
#include "pdfplugin.h"

const unsigned pdf_question_flags = PDF_Q_PAGES;
const size_t pdf_heap_max = (size_t)96 << 20;

int pdf_question(PdfAsk *ask) {
        fz_context *ctx = ask->ctx;
        pdf_obj *tree = pdf_dict_getl(ctx, pdf_trailer(ctx, ask->doc), PDF_NAME(Root),
                                      PDF_NAME(Names), PDF_NAME(EmbeddedFiles), NULL);

        if (pdf_name_tree_has_entry(ctx, tree))
                return 1;
        for (int n = 0; n < ask->pages; n++) {
                pdf_obj *annots =
                        pdf_dict_get(ctx, pdf_page_object(ctx, ask->doc, n), PDF_NAME(Annots));

                for (int i = 0; i < pdf_array_len(ctx, annots); i++)
                        if (pdf_name_eq(ctx,
                                        pdf_dict_get(ctx, pdf_array_get(ctx, annots, i),
                                                     PDF_NAME(Subtype)),
                                        PDF_NAME(FileAttachment)))
                                return 1;
        }
        return 0;
}
