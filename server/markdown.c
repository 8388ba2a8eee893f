/*
 * markdown.c - Markdown handouts and feedback through libcmark-gfm: see
 * markdown.h for what is rendered and what is refused.
 */
#include "markdown.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include <cmark-gfm-core-extensions.h>
#include <cmark-gfm.h>

/* No CMARK_OPT_UNSAFE: raw HTML is omitted and dangerous URLs are emptied.
 * Tables, strikethrough and autolinks are GitHub's extensions; tagfilter is
 * GitHub's filter of <script>, <iframe>... for when raw HTML is let through. */
#define MARKDOWN_OPTIONS CMARK_OPT_DEFAULT
static const char *const markdown_extensions[] = {"table", "strikethrough", "autolink",
                                                  "tagfilter"};

/* The nodes a walk found to wrap in a scroll box (tables and code blocks),
 * each with the label its box gets. Collected first and changed after the
 * walk, since moving a node under a live iterator would confuse it. */
struct wrap_list {
    cmark_node **node;
    char **label;
    size_t n, cap;
};

/* Append the text of node's subtree (text, code, and the words inside
 * links and emphasis) to b, escaped. */
static void node_text(struct html_buf *b, cmark_node *node)
{
    for (cmark_node *c = cmark_node_first_child(node); c; c = cmark_node_next(c)) {
        cmark_node_type t = cmark_node_get_type(c);

        if (t == CMARK_NODE_TEXT || t == CMARK_NODE_CODE)
            html_text(b, cmark_node_get_literal(c));
        else if (t == CMARK_NODE_SOFTBREAK || t == CMARK_NODE_LINEBREAK)
            html_raw(b, " ");
        else
            node_text(b, c);
    }
}

/* Remember node (a table or code block) with its box's label: "<what>" or
 * "<what>: <heading>" under the last heading seen. Returns 0 or -1 when
 * memory ran out (the node then stays unwrapped: still correct, only wider). */
static int wrap_add(struct wrap_list *w, cmark_node *node, const char *what, const char *heading)
{
    struct html_buf lb;
    char *label;

    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 8;
        cmark_node **nn = realloc(w->node, cap * sizeof(*nn));
        char **nl;

        if (nn == NULL)
            return -1;
        w->node = nn;
        nl = realloc(w->label, cap * sizeof(*nl));
        if (nl == NULL)
            return -1;
        w->label = nl;
        w->cap = cap;
    }
    html_buf_init(&lb);
    html_fmt(&lb, "<div class=\"scroll\" tabindex=\"0\" role=\"region\" aria-label=\"%R", what);
    if (heading && *heading)
        html_fmt(&lb, ": %R", heading); /* already escaped by node_text */
    html_raw(&lb, "\">");
    label = html_buf_take(&lb, NULL);
    if (label == NULL)
        return -1;
    w->node[w->n] = node;
    w->label[w->n] = label;
    w->n++;
    return 0;
}

/* Move node into a new custom block that opens with html and closes the
 * div. On failure the node stays where it was. */
static void wrap_node(cmark_node *node, const char *html)
{
    cmark_node *box = cmark_node_new(CMARK_NODE_CUSTOM_BLOCK);

    if (box == NULL)
        return;
    if (!cmark_node_set_on_enter(box, html) || !cmark_node_set_on_exit(box, "</div>") ||
        !cmark_node_insert_before(node, box)) {
        cmark_node_free(box);
        return;
    }
    if (!cmark_node_append_child(box, node)) {
        /* The box is in the tree but empty: render nothing of it. */
        cmark_node_set_on_enter(box, "");
        cmark_node_set_on_exit(box, "");
    }
}

/* Shift headings one level down (h1 is the page's) and wrap tables and
 * code blocks in scroll boxes labelled by the heading above them. */
static void doc_adjust(cmark_node *doc)
{
    struct wrap_list w = {0};
    struct html_buf heading;
    cmark_iter *it = cmark_iter_new(doc);
    cmark_event_type ev;
    char *last = NULL;

    if (it == NULL)
        return;
    while ((ev = cmark_iter_next(it)) != CMARK_EVENT_DONE) {
        cmark_node *n = cmark_iter_get_node(it);
        cmark_node_type t = cmark_node_get_type(n);
        const char *ts = cmark_node_get_type_string(n);

        if (ev != CMARK_EVENT_ENTER)
            continue;
        if (t == CMARK_NODE_HEADING) {
            int level = cmark_node_get_heading_level(n);
            cmark_node_set_heading_level(n, level < 6 ? level + 1 : 6);
            html_buf_init(&heading);
            node_text(&heading, n);
            free(last);
            last = html_buf_take(&heading, NULL);
        } else if (t == CMARK_NODE_CODE_BLOCK) {
            wrap_add(&w, n, "Code", last);
        } else if (ts && strcmp(ts, "table") == 0) {
            wrap_add(&w, n, "Table", last);
        }
    }
    cmark_iter_free(it);
    for (size_t i = 0; i < w.n; i++) {
        wrap_node(w.node[i], w.label[i]);
        free(w.label[i]);
    }
    free(w.node);
    free(w.label);
    free(last);
}

/* Parse md with our extensions and options. Returns the document (caller
 * frees with cmark_node_free) and sets *exts to the parser's extension list
 * for the renderer, or NULL; *parser is the caller's to free after the
 * render (it owns the list). */
static cmark_node *doc_parse(const char *md, cmark_parser **parser, cmark_llist **exts)
{
    cmark_parser *p;
    cmark_node *doc;

    cmark_gfm_core_extensions_ensure_registered();
    p = cmark_parser_new(MARKDOWN_OPTIONS);
    if (p == NULL)
        return NULL;
    for (size_t i = 0; i < sizeof(markdown_extensions) / sizeof(markdown_extensions[0]); i++) {
        cmark_syntax_extension *e = cmark_find_syntax_extension(markdown_extensions[i]);

        /* A libcmark-gfm without its core extensions is a broken install,
         * not a handout problem. */
        assert(e != NULL);
        if (e)
            cmark_parser_attach_syntax_extension(p, e);
    }
    cmark_parser_feed(p, md, strlen(md));
    doc = cmark_parser_finish(p);
    if (doc == NULL) {
        cmark_parser_free(p);
        return NULL;
    }
    *parser = p;
    *exts = cmark_parser_get_syntax_extensions(p);
    return doc;
}

/* Render md; when unwrap is set and the document is one paragraph, drop
 * its <p>...</p>. */
static void render(struct html_buf *b, const char *md, int unwrap)
{
    cmark_parser *parser = NULL;
    cmark_llist *exts = NULL;
    cmark_node *doc, *first;
    char *html;
    size_t len;

    if (md == NULL || *md == '\0')
        return;
    doc = doc_parse(md, &parser, &exts);
    if (doc == NULL) {
        b->failed = 1;
        return;
    }
    doc_adjust(doc);
    first = cmark_node_first_child(doc);
    unwrap = unwrap && first && cmark_node_next(first) == NULL &&
             cmark_node_get_type(first) == CMARK_NODE_PARAGRAPH;
    html = cmark_render_html(doc, MARKDOWN_OPTIONS, exts);
    if (html == NULL) {
        b->failed = 1;
    } else {
        len = strlen(html);
        if (unwrap && len >= 8 && strncmp(html, "<p>", 3) == 0 &&
            strcmp(html + len - 5, "</p>\n") == 0)
            html_rawn(b, html + 3, len - 8);
        else
            html_rawn(b, html, len);
        cmark_get_default_mem_allocator()->free(html);
    }
    cmark_node_free(doc);
    cmark_parser_free(parser);
}

void markdown_render(struct html_buf *b, const char *md)
{
    render(b, md, 0);
}

void markdown_render_inline(struct html_buf *b, const char *md)
{
    render(b, md, 1);
}
