/*
 * options.c: what the PDF plugins take of libmupdf.a's writer.o, defined here so that the
 * linker never takes writer.o itself: it names every document writer MuPDF has (docx through
 * libmupdf-third's extract, whose sys.o calls system(3)), and a plugin's static binary would
 * carry system, posix_spawn, execve and socket that it never calls (and that the import check
 * refuses). The draw device parses options with fz_has_option (the same behaviour as MuPDF's:
 * OPTS is "key=value,key=value,...", a key alone has the value "yes"); util.o, which the
 * signature code needs, and the text and PDF output code name the writers' constructors and
 * their four calls: the constructors throw, so no writer exists for the others to be given
 * (fz_drop_document_writer() takes the NULL of a cleanup path).
 */
#include <string.h>

#include <mupdf/fitz.h>

#include "pdfplugin.h"

int fz_has_option(fz_context *ctx, const char *opts, const char *key, const char **val) {
        size_t n = strlen(key);

        if (!opts || n == 0)
                return 0;
        while (*opts) {
                const char *end = strchr(opts, ',');
                size_t len = end ? (size_t)(end - opts) : strlen(opts);

                if (len >= n && strncmp(opts, key, n) == 0 && (len == n || opts[n] == '=')) {
                        *val = len == n ? "yes" : opts + n + 1;
                        return 1;
                }
                if (!end)
                        break;
                opts = end + 1;
        }
        return 0;
}

int fz_option_eq(const char *a, const char *b) {
        size_t n = strlen(b);

        return strncmp(a, b, n) == 0 && (a[n] == ',' || a[n] == 0);
}

size_t fz_copy_option(fz_context *ctx, const char *val, char *dest, size_t maxlen) {
        const char *end = strchr(val, ',');
        size_t len = end ? (size_t)(end - val) : strlen(val);

        if (maxlen == 0)
                return len + 1;
        if (len + 1 > maxlen) {
                memcpy(dest, val, maxlen - 1);
                dest[maxlen - 1] = 0;
                return len + 1 - maxlen;
        }
        memcpy(dest, val, len);
        dest[len] = 0;
        return 0;
}

fz_document_writer *fz_new_document_writer_with_output(fz_context *ctx, fz_output *out,
                                                       const char *format, const char *options) {
        fz_throw(ctx, FZ_ERROR_GENERIC, "a plugin writes no document");
}

fz_document_writer *fz_new_document_writer_of_size(fz_context *ctx, size_t size,
                                                   fz_document_writer_begin_page_fn *begin_page,
                                                   fz_document_writer_end_page_fn *end_page,
                                                   fz_document_writer_close_writer_fn *close,
                                                   fz_document_writer_drop_writer_fn *drop) {
        fz_throw(ctx, FZ_ERROR_GENERIC, "a plugin writes no document");
}

fz_device *fz_begin_page(fz_context *ctx, fz_document_writer *wri, fz_rect mediabox) {
        fz_throw(ctx, FZ_ERROR_GENERIC, "a plugin writes no document");
}

void fz_end_page(fz_context *ctx, fz_document_writer *wri) {
        fz_throw(ctx, FZ_ERROR_GENERIC, "a plugin writes no document");
}

void fz_close_document_writer(fz_context *ctx, fz_document_writer *wri) {
        fz_throw(ctx, FZ_ERROR_GENERIC, "a plugin writes no document");
}

void fz_drop_document_writer(fz_context *ctx, fz_document_writer *wri) {
}
