/*
 * pdfplugin.c: the PDF plugins' shared opening of a document, MuPDF's capped allocator and the
 * helpers their questions use (pdfplugin.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "pdfplugin.h"

/*
 * The allocator: malloc with a size header, counted. MuPDF allocates everything through its
 * context (FreeType, the decoders, the store), so the count is the document's whole heap. The
 * plugins are single-threaded: no lock.
 */
typedef union Header {
        size_t size;
        max_align_t align;
} Header;

static size_t heap_cap, heap_used, heap_peak;

size_t pdf_heap_used(void) {
        return heap_used;
}

size_t pdf_heap_peak(void) {
        return heap_peak;
}

static void *heap_malloc(void *user, size_t size) {
        Header *h;

        if (heap_cap - heap_used < sizeof(Header) || size > heap_cap - heap_used - sizeof(Header))
                return NULL;
        h = malloc(sizeof(Header) + size);
        if (!h)
                return NULL;
        h->size = size;
        heap_used += size + sizeof(Header);
        if (heap_used > heap_peak)
                heap_peak = heap_used;
        return h + 1;
}

static void heap_free(void *user, void *p) {
        Header *h;

        if (!p)
                return;
        h = (Header *)p - 1;
        heap_used -= h->size + sizeof(Header);
        free(h);
}

static void *heap_realloc(void *user, void *p, size_t size) {
        Header *h, *n;
        size_t old;

        if (!p)
                return heap_malloc(user, size);
        if (size == 0) {
                heap_free(user, p);
                return NULL;
        }
        h = (Header *)p - 1;
        old = h->size;
        if (size > old && (size - old > heap_cap - heap_used))
                return NULL;
        n = realloc(h, sizeof(Header) + size);
        if (!n)
                return NULL;
        n->size = size;
        heap_used = heap_used - old + size;
        if (heap_used > heap_peak)
                heap_peak = heap_used;
        return n + 1;
}

/* MuPDF's warnings (a repaired xref, a syntax error skipped) say nothing the answer needs. */
static void quiet(void *user, const char *message) {
}

fz_context *pdf_context_new(size_t heap_max) {
        static fz_alloc_context alloc = {NULL, heap_malloc, heap_realloc, heap_free};
        fz_context *ctx;

        heap_cap = heap_max;
        heap_used = heap_peak = 0;
        /* The store (decoded images, fonts, objects kept for reuse) gets an eighth of the heap. */
        ctx = fz_new_context(&alloc, NULL, heap_max / 8);
        if (!ctx)
                return NULL;
        fz_set_warning_callback(ctx, quiet, NULL);
        fz_set_error_callback(ctx, quiet, NULL);
        return ctx;
}

void pdf_detail(PdfAsk *ask, const char *fmt, ...) {
        va_list ap;
        int n;

        if (ask->detail_len >= PDF_DETAIL_MAX)
                return;
        va_start(ap, fmt);
        n = vsnprintf(ask->detail + ask->detail_len, PDF_DETAIL_MAX + 1 - ask->detail_len, fmt, ap);
        va_end(ap);
        if (n < 0)
                return;
        ask->detail_len += (size_t)n;
        if (ask->detail_len > PDF_DETAIL_MAX)
                ask->detail_len = PDF_DETAIL_MAX;
}

bool pdf_color_is_white(fz_context *ctx, fz_colorspace *cs, const float *color,
                        fz_color_params params) {
        float rgb[3] = {0, 0, 0};

        if (!cs || !color)
                return false;
        fz_convert_color(ctx, cs, color, fz_device_rgb(ctx), rgb, NULL, params);
        /* 1/255 below full: a conversion's rounding, never a visible tint. */
        return rgb[0] >= 254.0f / 255 && rgb[1] >= 254.0f / 255 && rgb[2] >= 254.0f / 255;
}

/*
 * Whether pdf_lookup_page_obj() returns a reference of its own. MuPDF 1.21's does while the page
 * tree is loaded (it returns pdf_load_object()'s new reference; its callers, fz_load_page()'s
 * included, treat it as borrowed), so that every page looked up would stay allocated for the
 * process's life: harmless in a plugin, a leak per input in a fuzz campaign. Measured on the
 * document rather than assumed from the version, so that a MuPDF that fixed it is never given a
 * drop too many.
 */
static bool lookup_keeps;

static void calibrate_lookup(fz_context *ctx, pdf_document *doc) {
        pdf_obj *a = pdf_lookup_page_obj(ctx, doc, 0);
        int ra = pdf_obj_refs(ctx, a);
        pdf_obj *b = pdf_lookup_page_obj(ctx, doc, 0);

        lookup_keeps = a && a == b && pdf_obj_refs(ctx, b) == ra + 1;
        if (lookup_keeps) {
                pdf_drop_obj(ctx, a);
                pdf_drop_obj(ctx, b);
        }
}

pdf_obj *pdf_page_object(fz_context *ctx, pdf_document *doc, int n) {
        pdf_obj *obj = pdf_lookup_page_obj(ctx, doc, n);

        if (lookup_keeps)
                pdf_drop_obj(ctx, obj); /* the xref's own reference keeps it */
        return obj;
}

fz_page *pdf_page_load(fz_context *ctx, pdf_document *doc, int n) {
        fz_page *page = fz_load_page(ctx, &doc->super, n);

        /* pdf_load_page() looked the page up once, and keeps its own reference to it. */
        if (lookup_keeps)
                pdf_drop_obj(ctx, ((pdf_page *)page)->obj);
        return page;
}

/*
 * A PDF starts with "%PDF-" within its first 1024 bytes (ISO 32000-2, 7.5.2, as readers accept
 * it). Without it MuPDF's repair would still find "objects" in any text that looks like one, and
 * a file of another format must be plugin_error, never an answer.
 */
static bool has_pdf_header(const uint8_t *data, size_t len) {
        size_t n = len < 1024 + 5 ? len : 1024 + 5;

        return n >= 5 && memmem(data, n, "%PDF-", 5) != NULL;
}

/*
 * Whether MuPDF's open failed in its security handler (pdf-crypt.c: an unknown handler, method,
 * version or revision, a bad key length). MuPDF builds one only for a trailer's Encrypt
 * dictionary, so such a file has one, in a form MuPDF cannot read.
 */
static bool crypt_error(const char *message) {
        return strcasestr(message, "crypt") || strstr(message, "AES key") ||
               strstr(message, "key length");
}

/* PDF_Q_LOCKED's question for a document whose Encrypt dictionary MuPDF refused. */
static int ask_crypt_refused(fz_context *ctx, PdfAsk *ask, char *why, size_t why_size) {
        int answer = -1;

        ask->doc = NULL;
        ask->crypt_refused = true;
        fz_var(answer);
        fz_try(ctx) {
                answer = pdf_question(ask);
        }
        fz_catch(ctx) {
                snprintf(why, why_size, "%s", fz_caught_message(ctx));
                answer = -1;
        }
        return answer == 0 || answer == 1 ? answer : -1;
}

int pdf_ask_bytes(fz_context *ctx, const uint8_t *data, size_t len, unsigned flags,
                  const char *needle, size_t needle_len, PdfAsk *ask, char *why, size_t why_size) {
        fz_stream *stm = NULL;
        pdf_document *doc = NULL;
        bool tree = false, opened = false;
        int answer = -1;

        memset(ask, 0, sizeof(*ask));
        lookup_keeps = false;
        ask->ctx = ctx;
        ask->pages = -1;
        ask->needle = needle;
        ask->needle_len = needle_len;
        if (!has_pdf_header(data, len)) {
                snprintf(why, why_size, "not a PDF: no %%PDF- header");
                return -1;
        }

        fz_var(stm);
        fz_var(doc);
        fz_var(tree);
        fz_var(answer);
        fz_var(opened);
        fz_try(ctx) {
                stm = fz_open_memory(ctx, data, len);
                doc = pdf_open_document_with_stream(ctx, stm);
                opened = true;
                ask->doc = doc;
                /* Only an owner password (or none) opens with the empty one: a user password is
                 * a file this plugin cannot read, plugin_error. */
                if (!(flags & PDF_Q_LOCKED) && pdf_needs_password(ctx, doc) &&
                    !pdf_authenticate_password(ctx, doc, ""))
                        fz_throw(ctx, FZ_ERROR_GENERIC, "a user password is needed");
                if (flags & PDF_Q_PAGES) {
                        /* The page tree once, with its maps: a page is then found in O(1), and
                         * MuPDF refuses a tree that loops or lies about its count. */
                        pdf_load_page_tree(ctx, doc);
                        tree = true;
                        ask->pages = pdf_count_pages(ctx, doc);
                        if (ask->pages <= 0)
                                fz_throw(ctx, FZ_ERROR_GENERIC, "no page");
                        calibrate_lookup(ctx, doc);
                }
                answer = pdf_question(ask);
                if (answer != 0 && answer != 1)
                        fz_throw(ctx, FZ_ERROR_GENERIC, "no answer");
        }
        fz_always(ctx) {
                if (tree)
                        pdf_drop_page_tree(ctx, doc);
                pdf_drop_document(ctx, doc);
                fz_drop_stream(ctx, stm);
                ask->doc = NULL;
        }
        fz_catch(ctx) {
                snprintf(why, why_size, "%s", fz_caught_message(ctx));
                if (!opened && (flags & PDF_Q_LOCKED) && crypt_error(why))
                        return ask_crypt_refused(ctx, ask, why, why_size);
                return -1;
        }
        return answer;
}
