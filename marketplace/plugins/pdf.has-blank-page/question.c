/*
 * pdf.has-blank-page: does some page paint nothing a reader would see? (docs/plugins.md)
 *
 * A page is blank when its content and annotations paint no mark inside its crop box but white
 * ones: no painting operator at all, only white fills and strokes (any colour space, converted
 * to RGB), only invisible text (render mode 3, which MuPDF hands to ignore_text), only marks
 * wholly outside the crop box or clipped away, or fully transparent ones. A device sees each
 * operator; a path or text in a colour settles the page at once. Images, image masks and
 * shadings are judged by their pixels: only a page that paints nothing else is rendered, and it
 * is blank when every pixel of the render is white.
 */
#include <math.h>
#include <string.h>

#include "pdfplugin.h"

const unsigned pdf_question_flags = PDF_Q_PAGES;
const size_t pdf_heap_max = (size_t)96 << 20;

/* The render's size: at most 4 Mpixel (12 MiB of RGB), 72 dpi or less. */
#define RENDER_PIXELS_MAX (4.0f * 1024 * 1024)

typedef struct BlankDevice {
        fz_device super;
        fz_rect crop;      /* the page's crop box, in the device's space */
        fz_cookie *cookie; /* its abort stops the page's interpretation once visible */
        bool visible;      /* a mark in colour inside the crop box */
        bool pixels;       /* an image or shading inside it: only a render tells */
} BlankDevice;

/*
 * Whether bbox, painted with alpha, could be seen: not transparent, inside the crop box and
 * inside the clips in force. MuPDF's device keeps the clips' stack itself (each entry's scissor
 * is the bounding box of its clip within those before it); a box is conservative, so a mark it
 * rules out is wholly clipped away, while one it keeps may still be.
 */
static bool inside(BlankDevice *d, fz_rect bbox, float alpha) {
        fz_rect area = fz_intersect_rect(bbox, d->crop);

        /* A tile's content is in its cell's space, not the page's: clips from outside the tile
         * say nothing about it (and the crop box is applied to the tile as a whole). */
        for (int i = d->super.container_len - 1; i >= 0; i--) {
                if (d->super.container[i].type == fz_device_container_stack_is_tile) {
                        area = bbox;
                        break;
                }
                if (d->super.container[i].type == fz_device_container_stack_is_clip)
                        area = fz_intersect_rect(area, d->super.container[i].scissor);
        }
        return alpha > 0 && !fz_is_empty_rect(area);
}

static void mark(fz_context *ctx, BlankDevice *d, fz_rect bbox, fz_colorspace *cs,
                 const float *color, float alpha, fz_color_params params) {
        if (d->visible || !inside(d, bbox, alpha) || pdf_color_is_white(ctx, cs, color, params))
                return;
        d->visible = true;
        d->cookie->abort = 1;
}

static void fill_path(fz_context *ctx, fz_device *dev, const fz_path *path, int even_odd,
                      fz_matrix ctm, fz_colorspace *cs, const float *color, float alpha,
                      fz_color_params params) {
        mark(ctx, (BlankDevice *)dev, fz_bound_path(ctx, path, NULL, ctm), cs, color, alpha,
             params);
}

static void stroke_path(fz_context *ctx, fz_device *dev, const fz_path *path,
                        const fz_stroke_state *stroke, fz_matrix ctm, fz_colorspace *cs,
                        const float *color, float alpha, fz_color_params params) {
        mark(ctx, (BlankDevice *)dev, fz_bound_path(ctx, path, stroke, ctm), cs, color, alpha,
             params);
}

static void fill_text(fz_context *ctx, fz_device *dev, const fz_text *text, fz_matrix ctm,
                      fz_colorspace *cs, const float *color, float alpha, fz_color_params params) {
        mark(ctx, (BlankDevice *)dev, fz_bound_text(ctx, text, NULL, ctm), cs, color, alpha,
             params);
}

static void stroke_text(fz_context *ctx, fz_device *dev, const fz_text *text,
                        const fz_stroke_state *stroke, fz_matrix ctm, fz_colorspace *cs,
                        const float *color, float alpha, fz_color_params params) {
        mark(ctx, (BlankDevice *)dev, fz_bound_text(ctx, text, stroke, ctm), cs, color, alpha,
             params);
}

static void fill_shade(fz_context *ctx, fz_device *dev, fz_shade *shade, fz_matrix ctm, float alpha,
                       fz_color_params params) {
        BlankDevice *d = (BlankDevice *)dev;

        if (inside(d, fz_bound_shade(ctx, shade, ctm), alpha))
                d->pixels = true;
}

static void fill_image(fz_context *ctx, fz_device *dev, fz_image *image, fz_matrix ctm, float alpha,
                       fz_color_params params) {
        BlankDevice *d = (BlankDevice *)dev;

        if (inside(d, fz_transform_rect(fz_unit_rect, ctm), alpha))
                d->pixels = true;
}

/* A stencil mask paints its colour where the mask is set: white paints nothing visible. */
static void fill_image_mask(fz_context *ctx, fz_device *dev, fz_image *image, fz_matrix ctm,
                            fz_colorspace *cs, const float *color, float alpha,
                            fz_color_params params) {
        BlankDevice *d = (BlankDevice *)dev;

        if (inside(d, fz_transform_rect(fz_unit_rect, ctm), alpha) &&
            !pdf_color_is_white(ctx, cs, color, params))
                d->pixels = true;
}

/* Whether every pixel of the page's render is white (each channel within rounding of 255). */
static bool render_is_white(fz_context *ctx, fz_page *page, fz_rect crop) {
        float w = crop.x1 - crop.x0, h = crop.y1 - crop.y0, scale = 1;
        fz_pixmap *pix = NULL;
        fz_device *draw = NULL;
        bool white = true;

        if (w * h > RENDER_PIXELS_MAX)
                scale = sqrtf(RENDER_PIXELS_MAX / (w * h));
        fz_matrix ctm = fz_scale(scale, scale);
        fz_irect box = fz_round_rect(fz_transform_rect(crop, ctm));

        fz_var(pix);
        fz_var(white);
        fz_var(draw);
        fz_try(ctx) {
                pix = fz_new_pixmap_with_bbox(ctx, fz_device_rgb(ctx), box, NULL, 0);
                fz_clear_pixmap_with_value(ctx, pix, 0xff);
                draw = fz_new_draw_device(ctx, fz_identity, pix);
                fz_run_page(ctx, page, draw, ctm, NULL);
                fz_close_device(ctx, draw);

                const unsigned char *s = fz_pixmap_samples(ctx, pix);
                size_t stride = (size_t)fz_pixmap_stride(ctx, pix);
                int rows = fz_pixmap_height(ctx, pix), cols = fz_pixmap_width(ctx, pix) * 3;

                for (int y = 0; y < rows && white; y++)
                        for (int x = 0; x < cols; x++)
                                if (s[(size_t)y * stride + (size_t)x] < 0xfe) {
                                        white = false;
                                        break;
                                }
        }
        fz_always(ctx) {
                fz_drop_device(ctx, draw);
                fz_drop_pixmap(ctx, pix);
        }
        fz_catch(ctx) {
                fz_rethrow(ctx);
        }
        return white;
}

/* Whether page number `n` is blank. Throws when the page cannot be read. */
static bool page_is_blank(fz_context *ctx, pdf_document *doc, int n) {
        fz_page *page = NULL;
        BlankDevice *dev = NULL;
        fz_cookie cookie;
        bool blank = false;

        memset(&cookie, 0, sizeof(cookie));
        fz_var(page);
        fz_var(dev);
        fz_var(blank);
        fz_try(ctx) {
                page = pdf_page_load(ctx, doc, n);
                dev = fz_new_derived_device(ctx, BlankDevice);
                dev->super.fill_path = fill_path;
                dev->super.stroke_path = stroke_path;
                dev->super.fill_text = fill_text;
                dev->super.stroke_text = stroke_text;
                dev->super.fill_shade = fill_shade;
                dev->super.fill_image = fill_image;
                dev->super.fill_image_mask = fill_image_mask;
                dev->crop = fz_bound_page(ctx, page);
                dev->cookie = &cookie;
                fz_run_page(ctx, page, &dev->super, fz_identity, &cookie);
                fz_close_device(ctx, &dev->super);
                if (!dev->visible)
                        blank = !dev->pixels || render_is_white(ctx, page, dev->crop);
        }
        fz_always(ctx) {
                fz_drop_device(ctx, dev ? &dev->super : NULL);
                fz_drop_page(ctx, page);
        }
        fz_catch(ctx) {
                fz_rethrow(ctx);
        }
        return blank;
}

int pdf_question(PdfAsk *ask) {
        for (int n = 0; n < ask->pages; n++)
                if (page_is_blank(ask->ctx, ask->doc, n))
                        return 1;
        return 0;
}
