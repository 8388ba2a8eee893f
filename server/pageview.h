/*
 * pageview.h - how the course modules (late days, regrade requests,
 * similarity) render web pages without reaching into page.c: pageview.c hands
 * them a page_view (the request, the signed-in user, a buffer for the page's
 * main content, and two callbacks into its form handling), then wraps what
 * they wrote in the common layout (page.h: page_begin/page_end), or sends
 * the redirect they asked for.
 *
 * The escaping rule of html.h holds here too: user text only through %s of
 * html_fmt, html_text or html_attr.
 */
#ifndef CUGRADE_PAGEVIEW_H
#define CUGRADE_PAGEVIEW_H

#include <jansson.h>
#include <stddef.h>

struct app;
struct auth_user;
struct html_buf;
struct http_request;
struct page;
struct page_again;

struct page_view {
    struct app *app;
    struct http_request *req;
    const struct auth_user *user;
    struct html_buf *b; /* the main content */
    int get, post;      /* the method (HEAD counts as GET) */
    /* page.h form handling: a posted field (NULL when absent) and the
     * CSRF check of a POST (0 to go on; -1 when the refusal page is already
     * rendered, then the route returns PAGE_VIEW_DONE). */
    void *page;
    const char *(*field)(void *page, const char *name);
    int (*post_ok)(void *page);
    /* filled by the route */
    char title[120];
    char location[300]; /* non-empty: answer 303 See Other to it */
    int status;         /* 200 unless set */
};

#define PAGE_VIEW_NOT_MINE 0 /* not this module's path */
#define PAGE_VIEW_RENDERED 1 /* content in b (or location set) */
#define PAGE_VIEW_DONE 2     /* the response is already sent (post_ok refused) */
#define PAGE_VIEW_DEFERRED 3 /* the answer is rendered off the loop (page_view_again) */

/* A module's page routes: seg[0..n) is the path split at '/'. */
typedef int (*page_view_route)(struct page_view *v, char **seg, size_t n);

/* Fill v for page p, its content going to b (p->b, or a buffer the caller
 * owns). Nothing to free. */
void page_view_open(struct page *p, struct page_view *v, struct html_buf *b);

/* Run route for page p (a page route's handler, page.h): the content in the
 * common layout, the redirect, or -1 (the 404 page) when the route does not
 * know the path. Returns HTTP_DONE or -1. */
int page_view_run(struct page *p, page_view_route route);

/* Answer page p with what a route returned (rc, a PAGE_VIEW_* other than
 * NOT_MINE) and rendered into v (opened on p: page_view_open), as
 * page_view_run does: a POST's completion off the loop (the writer's done
 * callback) answers with it. v's buffer is freed. HTTP_DONE or
 * HTTP_DEFERRED. */
int page_view_finish(struct page *p, struct page_view *v, int rc);

/* What a module renders once its POST's write is done (the writer's
 * answer callback, on the loop): into v as a route would (a PAGE_VIEW_*
 * other than NOT_MINE), w the module's write (its struct), rc how it went
 * (0: stored; -errno: refused or failed, w says why). */
typedef int (*page_view_written_fn)(struct page_view *v, const void *w, int rc);

/* Answer req once its POST's write is done: its page opened, fn(v, w, rc)
 * rendered into a view of it, answered as page_view_finish does. For a
 * module's answer callback (lateday.h, regrade.h). HTTP_DONE or
 * HTTP_DEFERRED. */
int page_view_written(struct app *app, struct http_request *req, page_view_written_fn fn,
                      const void *w, int rc);

/* Loop thread, in a module's POST whose writes are done: its page again
 * (the form with what went wrong), fn(v, a) rendered on the reader
 * (page.h: page_again; a's strings copied, the form parsed again).
 * PAGE_VIEW_DEFERRED, or PAGE_VIEW_DONE when the answer is already made
 * (rendered here: a database in memory; or a 503 page). */
int page_view_again(struct page_view *v, int (*fn)(struct page_view *v, const struct page_again *a),
                    const struct page_again *a);

/* Render an error into v (title, a sentence saying what to do, status). */
int page_view_error(struct page_view *v, int status, const char *what, const char *todo);

/* Each module's pages: seg[0..n) is the path split at '/'. */
int lateday_page_route(struct page_view *v, char **seg, size_t n);
int regrade_page_route(struct page_view *v, char **seg, size_t n);
int similarity_page_route(struct page_view *v, char **seg, size_t n);

/* The regrade section of a submission's page (sub: the submission JSON). */
void regrade_page_section(struct page_view *v, json_t *sub);

#endif
