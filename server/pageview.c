/*
 * pageview.c - see pageview.h: the bridge between a page route (page.h)
 * and the page_view the course modules render into.
 */
#include "server/pageview.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "server/page.h"

#define PAGE_VIEW_SEGS 6

static const char *view_field(void *page, const char *name)
{
    return page_field(page, name);
}

static int view_post_ok(void *page)
{
    return page_post_check(page) == 0 ? 0 : -1;
}

void page_view_open(struct page *p, struct page_view *v, struct html_buf *b)
{
    assert(p && v && b);
    memset(v, 0, sizeof(*v));
    v->app = p->app;
    v->req = p->req;
    v->user = &p->user;
    v->b = b;
    v->get = p->req->method == HTTP_GET || p->req->method == HTTP_HEAD;
    v->post = p->req->method == HTTP_POST;
    v->page = p;
    v->field = view_field;
    v->post_ok = view_post_ok;
    v->status = 200;
}

int page_view_error(struct page_view *v, int status, const char *what, const char *todo)
{
    snprintf(v->title, sizeof(v->title), "%s", what);
    v->status = status;
    html_fmt(v->b, "<h1>%s</h1>\n<div class=\"notice bad\" role=\"alert\"><p>%s</p></div>\n", what,
             todo);
    html_raw(v->b, "<p><a href=\"/labs\">Back to the labs</a></p>\n");
    return PAGE_VIEW_RENDERED;
}

/* What route rendered into v (b) as the answer of page p: the page in the
 * common layout, the redirect, or -1 for the 404 page. */
static int view_finish(struct page *p, struct page_view *v, struct html_buf *b, int rc)
{
    if (rc == PAGE_VIEW_NOT_MINE || rc == PAGE_VIEW_DONE || rc == PAGE_VIEW_DEFERRED ||
        v->location[0]) {
        html_buf_free(b);
        return rc == PAGE_VIEW_NOT_MINE   ? -1
               : rc == PAGE_VIEW_DONE     ? HTTP_DONE
               : rc == PAGE_VIEW_DEFERRED ? HTTP_DEFERRED
                                          : page_redirect(p, v->location);
    }
    page_begin(p, v->title[0] ? v->title : "cugrade");
    if (b->data)
        html_rawn(&p->b, b->data, b->len);
    html_buf_free(b);
    return page_end(p, v->status);
}

int page_view_finish(struct page *p, struct page_view *v, int rc)
{
    assert(rc != PAGE_VIEW_NOT_MINE && v->page == p);
    return view_finish(p, v, v->b, rc);
}

int page_view_written(struct app *app, struct http_request *req, page_view_written_fn fn,
                      const void *w, int rc)
{
    struct page p;
    struct page_view v;
    struct html_buf b;
    page_open(&p, app, req);
    html_buf_init(&b);
    page_view_open(&p, &v, &b);
    int r = page_view_finish(&p, &v, fn(&v, w, rc));
    page_free(&p);
    return r;
}

/* page_again's renderer for page_view_again: a->view on a view of p. */
static int view_again(struct page *p, const struct page_again *a)
{
    struct html_buf b;
    struct page_view v;
    html_buf_init(&b);
    page_view_open(p, &v, &b);
    return view_finish(p, &v, &b, a->view(&v, a));
}

int page_view_again(struct page_view *v, int (*fn)(struct page_view *v, const struct page_again *a),
                    const struct page_again *a)
{
    struct page_again b = *a;
    b.view = fn;
    int rc = page_again(v->page, view_again, &b);
    return rc == HTTP_DEFERRED ? PAGE_VIEW_DEFERRED : PAGE_VIEW_DONE;
}

int page_view_run(struct page *p, page_view_route route)
{
    char path[512], *seg[PAGE_VIEW_SEGS], *s, *save = NULL;
    size_t n = 0;

    snprintf(path, sizeof(path), "%s", p->req->path);
    for (s = strtok_r(path, "/", &save); s && n < PAGE_VIEW_SEGS; s = strtok_r(NULL, "/", &save))
        seg[n++] = s;
    if (s)
        return -1; /* deeper than any module's page: the 404 page */

    struct html_buf b;
    struct page_view v;
    html_buf_init(&b);
    page_view_open(p, &v, &b);
    return view_finish(p, &v, &b, route(&v, seg, n));
}
