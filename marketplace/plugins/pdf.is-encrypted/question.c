/*
 * pdf.is-encrypted: does the document have an encryption dictionary? (docs/plugins.md)
 *
 * Asked before any password (PDF_Q_LOCKED): a user password and an owner password alone both
 * answer 1, whatever the algorithm, one MuPDF cannot decrypt (an unknown handler) included. The
 * trailer MuPDF settled on (the last update's, or the one its repair rebuilt) names the dictionary
 * in /Encrypt.
 */
#include "pdfplugin.h"

const unsigned pdf_question_flags = PDF_Q_LOCKED;
const size_t pdf_heap_max = (size_t)40 << 20;

int pdf_question(PdfAsk *ask) {
        fz_context *ctx = ask->ctx;
        pdf_obj *trailer;

        /* An Encrypt dictionary MuPDF could not read (an unknown security handler, version or
         * revision) is still one: any algorithm counts. */
        if (ask->crypt_refused)
                return 1;
        trailer = pdf_trailer(ctx, ask->doc);

        /* A catalog without a page tree is no document a reader opens (its dictionaries are
         * readable without the password). */
        if (!pdf_is_dict(ctx, pdf_dict_getl(ctx, trailer, PDF_NAME(Root), PDF_NAME(Pages), NULL)))
                fz_throw(ctx, FZ_ERROR_GENERIC, "no page tree");
        return ask->doc->crypt != NULL ||
               pdf_is_dict(ctx, pdf_dict_get(ctx, trailer, PDF_NAME(Encrypt)));
}
