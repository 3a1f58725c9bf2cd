/*
 * pdfplugin.h: what the marketplace's PDF plugins share. A plugin is one function,
 * pdf_question(), asked of a document MuPDF opened from memory; pdf-common's main() (the plugin)
 * and fuzz.c (its fuzz target) open the document and call it. See docs/plugins.md for each
 * plugin's definition and limits.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mupdf/fitz.h>
#include <mupdf/pdf.h>

/* What a plugin needs besides the document (pdf_question_flags). */
enum {
        PDF_Q_NEEDLE = 1 << 0, /* the typed input `needle` (protocol 2) */
        PDF_Q_LOCKED = 1 << 1, /* asked before any password: a user password is no error, and a
                                  security handler MuPDF refuses is asked with doc NULL and
                                  crypt_refused set */
        PDF_Q_PAGES = 1 << 2,  /* about pages: a document without one cannot be judged */
};

#define PDF_NEEDLE_MAX 256  /* the manifest's max_bytes of `needle` */
#define PDF_DETAIL_MAX 4096 /* what lockd keeps of the detail (lockplugin.h's LP_DETAIL_MAX) */

typedef struct PdfAsk {
        fz_context *ctx;
        pdf_document *doc;
        int pages;          /* the page count (PDF_Q_PAGES), else -1 */
        bool crypt_refused; /* PDF_Q_LOCKED: MuPDF refused the Encrypt dictionary */
        const char *needle; /* PDF_Q_NEEDLE: the value, NUL-terminated */
        size_t needle_len;
        char detail[PDF_DETAIL_MAX + 1]; /* a human-only detail, NUL-terminated */
        size_t detail_len;
} PdfAsk;

/* Defined by each plugin: its PDF_Q_* flags, and the bytes of heap MuPDF may take in all. */
extern const unsigned pdf_question_flags;
extern const size_t pdf_heap_max;

/*
 * Defined by each plugin: answers its question about ask->doc, 1 or 0. It throws (fz_throw) when
 * the document cannot be judged; the caller turns that into plugin_error, never into a 0.
 */
int pdf_question(PdfAsk *ask);

/*
 * Makes a MuPDF context whose allocations, together, never pass `heap_max` bytes: past it an
 * allocation fails, which MuPDF throws as an error (a hostile file ends as plugin_error, not as
 * the kernel's limit's signal). Returns NULL when even that fails.
 */
fz_context *pdf_context_new(size_t heap_max);

/* The bytes the context's allocator holds now and at most so far. */
size_t pdf_heap_used(void);
size_t pdf_heap_peak(void);

/*
 * Opens `data` (`len` bytes, kept by the caller for the document's life) as a PDF, authenticates
 * with the empty password unless `flags` has PDF_Q_LOCKED, and asks pdf_question(). Returns 1 or
 * 0, or -1 with a reason in `why` when the file is not a PDF, cannot be read (past MuPDF's
 * repair, past the heap cap) or needs a user password.
 */
int pdf_ask_bytes(fz_context *ctx, const uint8_t *data, size_t len, unsigned flags,
                  const char *needle, size_t needle_len, PdfAsk *ask, char *why, size_t why_size);

/* Page n's object (borrowed) and page n loaded (drop it with fz_drop_page()), with the page
 * tree loaded (PDF_Q_PAGES): use these, never pdf_lookup_page_obj() or fz_load_page() (see
 * pdfplugin.c on MuPDF 1.21's references). Both throw when the page cannot be read. */
pdf_obj *pdf_page_object(fz_context *ctx, pdf_document *doc, int n);
fz_page *pdf_page_load(fz_context *ctx, pdf_document *doc, int n);

/* Appends printf-style text to ask->detail, silently cut at PDF_DETAIL_MAX bytes. */
__attribute__((format(printf, 2, 3))) void pdf_detail(PdfAsk *ask, const char *fmt, ...);

/* Says whether the colour (`cs`, `color`) converts to white in RGB, to within rounding. */
bool pdf_color_is_white(fz_context *ctx, fz_colorspace *cs, const float *color,
                        fz_color_params params);

/* Says whether the code point is whitespace for the text's comparison (pagetext.c). */
bool pdf_is_space(int c);

/* Appends the code point c to out, a run of whitespace as one space between words (pagetext.c):
 * *pending_space carries a run's start from one call to the next; start it false. */
void pdf_text_append(fz_context *ctx, fz_buffer *out, int c, bool *pending_space);

/* Appends page n's extracted text, whitespace collapsed, to out (pagetext.c). Throws when the
 * page cannot be read. */
void pdf_page_text(fz_context *ctx, pdf_document *doc, int n, fz_buffer *out);

/* Called with each dictionary pdf_walk() reaches; a non-zero return ends the walk with it. */
typedef int (*PdfWalkFn)(fz_context *ctx, pdf_obj *dict, void *user);

/*
 * Calls fn on every dictionary reachable from `from` (direct ones, indirect ones once each, a
 * stream's dictionary too), depth first (objwalk.c). Returns fn's first non-zero return, or 0.
 * Throws past the heap cap.
 */
int pdf_walk(fz_context *ctx, pdf_document *doc, pdf_obj *from, PdfWalkFn fn, void *user);

/* Says whether the name tree rooted at `tree` has at least one entry (nametree.c). Throws when
 * it is too deep to judge. */
bool pdf_name_tree_has_entry(fz_context *ctx, pdf_obj *tree);
