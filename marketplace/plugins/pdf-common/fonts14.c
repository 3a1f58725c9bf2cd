/*
 * fonts14.c: MuPDF's built-in font lookups with only the 14 standard PDF fonts.
 *
 * libmupdf.a's noto.o defines these functions and refers to every font MuPDF ships (Noto, CJK,
 * emoji: 39 MiB of writable data in a static binary, which then needs as much `memory`). Defined
 * here, the linker takes them from this object and never pulls noto.o or the fonts it names: the
 * plugins keep the 14 fonts a PDF may use without embedding them (URW's metric-compatible ones),
 * and a font outside them is drawn with one of these by MuPDF's own substitution. The PDF
 * plugins ask about structure, text and whether marks are painted, never about glyph shapes.
 */
#include <string.h>

#include <mupdf/fitz.h>

#include "pdfplugin.h"

/* The URW fonts' data, as libmupdf.a's font objects name it. */
#define URW(sym)                                                                                   \
        extern const unsigned char _binary_resources_fonts_urw_##sym##_cff_start[];                \
        extern const unsigned char _binary_resources_fonts_urw_##sym##_cff_end[];
URW(NimbusMonoPS_Regular)
URW(NimbusMonoPS_Italic)
URW(NimbusMonoPS_Bold)
URW(NimbusMonoPS_BoldItalic)
URW(NimbusSans_Regular)
URW(NimbusSans_Italic)
URW(NimbusSans_Bold)
URW(NimbusSans_BoldItalic)
URW(NimbusRoman_Regular)
URW(NimbusRoman_Italic)
URW(NimbusRoman_Bold)
URW(NimbusRoman_BoldItalic)
URW(StandardSymbolsPS)
URW(Dingbats)
#undef URW

typedef struct Base14 {
        const char *name;
        const unsigned char *start, *end;
} Base14;

#define FONT(n, sym)                                                                               \
        {                                                                                          \
                n, _binary_resources_fonts_urw_##sym##_cff_start,                                  \
                        _binary_resources_fonts_urw_##sym##_cff_end                                \
        }
static const Base14 base14[] = {
        FONT("Courier", NimbusMonoPS_Regular),
        FONT("Courier-Oblique", NimbusMonoPS_Italic),
        FONT("Courier-Bold", NimbusMonoPS_Bold),
        FONT("Courier-BoldOblique", NimbusMonoPS_BoldItalic),
        FONT("Helvetica", NimbusSans_Regular),
        FONT("Helvetica-Oblique", NimbusSans_Italic),
        FONT("Helvetica-Bold", NimbusSans_Bold),
        FONT("Helvetica-BoldOblique", NimbusSans_BoldItalic),
        FONT("Times-Roman", NimbusRoman_Regular),
        FONT("Times-Italic", NimbusRoman_Italic),
        FONT("Times-Bold", NimbusRoman_Bold),
        FONT("Times-BoldItalic", NimbusRoman_BoldItalic),
        FONT("Symbol", StandardSymbolsPS),
        FONT("ZapfDingbats", Dingbats),
};
#undef FONT

const unsigned char *fz_lookup_base14_font(fz_context *ctx, const char *name, int *len) {
        for (size_t i = 0; i < sizeof(base14) / sizeof(base14[0]); i++)
                if (strcmp(name, base14[i].name) == 0) {
                        *len = (int)(base14[i].end - base14[i].start);
                        return base14[i].start;
                }
        return NULL;
}

/* A family by name (MuPDF's own aliases: Arial is Helvetica, Times New Roman is Times). */
const unsigned char *fz_lookup_builtin_font(fz_context *ctx, const char *name, int bold, int italic,
                                            int *len) {
        static const char *const variants[3][4] = {
                {"Courier", "Courier-Oblique", "Courier-Bold", "Courier-BoldOblique"},
                {"Helvetica", "Helvetica-Oblique", "Helvetica-Bold", "Helvetica-BoldOblique"},
                {"Times-Roman", "Times-Italic", "Times-Bold", "Times-BoldItalic"},
        };
        int family = -1, v = (bold ? 2 : 0) + (italic ? 1 : 0);

        if (!fz_strcasecmp(name, "Courier"))
                family = 0;
        else if (!fz_strcasecmp(name, "Helvetica") || !fz_strcasecmp(name, "Arial"))
                family = 1;
        else if (!fz_strcasecmp(name, "Times") || !fz_strcasecmp(name, "Times Roman") ||
                 !fz_strcasecmp(name, "Times New Roman"))
                family = 2;
        else if (!fz_strcasecmp(name, "Symbol"))
                return fz_lookup_base14_font(ctx, "Symbol", len);
        else if (!fz_strcasecmp(name, "ZapfDingbats") || !fz_strcasecmp(name, "Dingbats"))
                return fz_lookup_base14_font(ctx, "ZapfDingbats", len);
        if (family < 0)
                return NULL;
        return fz_lookup_base14_font(ctx, variants[family][v], len);
}

/* No CJK, Noto, emoji, math, music or symbol fonts: MuPDF substitutes a base-14 font. */
const unsigned char *fz_lookup_cjk_font(fz_context *ctx, int ordering, int *len, int *index) {
        return NULL;
}

const unsigned char *fz_lookup_cjk_font_by_language(fz_context *ctx, const char *lang, int *len,
                                                    int *subfont) {
        return NULL;
}

int fz_lookup_cjk_ordering_by_language(const char *name) {
        return -1;
}

const unsigned char *fz_lookup_noto_font(fz_context *ctx, int script, int lang, int *len,
                                         int *subfont) {
        return NULL;
}

const unsigned char *fz_lookup_noto_math_font(fz_context *ctx, int *len) {
        return NULL;
}

const unsigned char *fz_lookup_noto_music_font(fz_context *ctx, int *len) {
        return NULL;
}

const unsigned char *fz_lookup_noto_symbol1_font(fz_context *ctx, int *len) {
        return NULL;
}

const unsigned char *fz_lookup_noto_symbol2_font(fz_context *ctx, int *len) {
        return NULL;
}

const unsigned char *fz_lookup_noto_emoji_font(fz_context *ctx, int *len) {
        return NULL;
}
