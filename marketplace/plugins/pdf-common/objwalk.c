/*
 * objwalk.c: a walk over every object reachable from a PDF's trailer, each indirect object
 * once (a visited bit per object number), without recursion: references that loop, and a
 * nesting as deep as the file likes, cost a bit and a stack slot each, within the heap cap.
 */
#include "pdfplugin.h"

int pdf_walk(fz_context *ctx, pdf_document *doc, pdf_obj *from, PdfWalkFn fn, void *user) {
        int len = pdf_xref_len(ctx, doc);
        unsigned char *seen = NULL;
        pdf_obj **stack = NULL;
        size_t depth = 0, cap = 0;
        int r = 0;

        fz_var(seen);
        fz_var(stack);
        fz_var(r);
        fz_try(ctx) {
                seen = fz_calloc(ctx, (size_t)len / 8 + 1, 1);
                cap = 1024;
                stack = fz_malloc_array(ctx, cap, pdf_obj *);
                stack[depth++] = from;
                while (depth > 0 && r == 0) {
                        pdf_obj *o = stack[--depth];
                        int n;

                        if (pdf_is_indirect(ctx, o)) {
                                int num = pdf_to_num(ctx, o);

                                if (num <= 0 || num >= len || (seen[num / 8] & (1u << (num % 8))))
                                        continue;
                                seen[num / 8] |= (unsigned char)(1u << (num % 8));
                                /* A broken object resolves to null (MuPDF warns): it holds nothing.
                                 */
                                o = pdf_resolve_indirect(ctx, o);
                        }
                        if (pdf_is_dict(ctx, o)) {
                                r = fn(ctx, o, user);
                                n = pdf_dict_len(ctx, o);
                        } else if (pdf_is_array(ctx, o)) {
                                n = pdf_array_len(ctx, o);
                        } else {
                                continue;
                        }
                        for (int i = 0; i < n && r == 0; i++) {
                                pdf_obj *v = pdf_is_dict(ctx, o) ? pdf_dict_get_val(ctx, o, i)
                                                                 : pdf_array_get(ctx, o, i);

                                if (!pdf_is_dict(ctx, v) && !pdf_is_array(ctx, v))
                                        continue;
                                if (depth == cap) {
                                        stack = fz_realloc_array(ctx, stack, cap * 2, pdf_obj *);
                                        cap *= 2;
                                }
                                stack[depth++] = v;
                        }
                }
        }
        fz_always(ctx) {
                fz_free(ctx, stack);
                fz_free(ctx, seen);
        }
        fz_catch(ctx) {
                fz_rethrow(ctx);
        }
        return r;
}
