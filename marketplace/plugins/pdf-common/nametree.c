/*
 * nametree.c: whether a name tree (ISO 32000-2, 7.9.6) has an entry: a key and value pair in a
 * Names array of any node reached through Kids. A tree whose Kids loop is walked once per node
 * (MuPDF's object marks); one deeper than NAME_TREE_DEPTH_MAX cannot be judged.
 */
#include "pdfplugin.h"

#define NAME_TREE_DEPTH_MAX 64

static bool node_has_entry(fz_context *ctx, pdf_obj *node, int depth) {
        pdf_obj *names, *kids;
        bool found = false;

        if (!pdf_is_dict(ctx, node) || pdf_mark_obj(ctx, node))
                return false;
        fz_var(found);
        fz_try(ctx) {
                if (depth > NAME_TREE_DEPTH_MAX)
                        fz_throw(ctx, FZ_ERROR_GENERIC, "a name tree deeper than %d levels",
                                 NAME_TREE_DEPTH_MAX);
                names = pdf_dict_get(ctx, node, PDF_NAME(Names));
                kids = pdf_dict_get(ctx, node, PDF_NAME(Kids));
                found = pdf_is_array(ctx, names) && pdf_array_len(ctx, names) >= 2;
                for (int i = 0; !found && i < pdf_array_len(ctx, kids); i++)
                        found = node_has_entry(ctx, pdf_array_get(ctx, kids, i), depth + 1);
        }
        fz_always(ctx) {
                pdf_unmark_obj(ctx, node);
        }
        fz_catch(ctx) {
                fz_rethrow(ctx);
        }
        return found;
}

bool pdf_name_tree_has_entry(fz_context *ctx, pdf_obj *tree) {
        return node_has_entry(ctx, tree, 0);
}
