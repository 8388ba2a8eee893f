/*
 * page_job.c - pages rendered off the event loop (docs/server.md, "The loop
 * never waits for the disk"). See page_job_start in page.h.
 *
 * A page reads the database on the thread that renders it; on the loop a
 * stalled disk (or another process holding SQLite's locks) stalled
 * /healthz and every client with it. A page job renders on the reader
 * (server/reader.h) instead, against a view of the app (server/appview.h)
 * and a copy of the request: the connection may go away meanwhile (its
 * memory with it), and the router's parameters live in a buffer the next
 * request reuses. The copy's response becomes the request's on the loop.
 */
#include "server/page.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/appview.h"
#include "server/reader.h"

struct page_job {
    struct app *app;
    struct http_hold hold; /* the request, until the client goes away */
    const struct route *rt;
    page_job_fn fn;
    page_again_fn again; /* or this, with a (page_again) */
    struct page_again a;
    char *again_mem;          /* a's strings */
    struct app view;          /* server/appview.h */
    int viewing;              /* view made */
    struct http_request copy; /* req's request, the job's own */
    struct app_cred cred;     /* admission's answer (copy.user) */
    char *mem;                /* the copy's strings */
    size_t used, size;
};

/* Copy n bytes of s (plus a NUL) into j->mem; NULL for NULL. */
static const char *put(struct page_job *j, const char *s, size_t n)
{
    if (!s)
        return NULL;
    assert(j->used + n + 1 <= j->size);
    char *d = j->mem + j->used;
    memcpy(d, s, n);
    d[n] = '\0';
    j->used += n + 1;
    return d;
}

static const char *puts0(struct page_job *j, const char *s)
{
    return put(j, s, s ? strlen(s) : 0);
}

/* Bytes the strings of n pairs take, NULs included. */
static size_t kv_size(const struct http_kv *kv, size_t n)
{
    size_t t = 0;
    for (size_t i = 0; i < n; i++)
        t += strlen(kv[i].name) + strlen(kv[i].value) + 2;
    return t;
}

/* n pairs copied into a new array (*out; NULL for none). 0 or -ENOMEM. */
static int kv_copy(struct page_job *j, const struct http_kv *kv, size_t n, struct http_kv **out)
{
    *out = NULL;
    if (n == 0)
        return 0;
    struct http_kv *a = calloc(n, sizeof(*a));
    if (!a)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        a[i].name = puts0(j, kv[i].name);
        a[i].value = puts0(j, kv[i].value);
    }
    *out = a;
    return 0;
}

/* j->copy: req's request (its query parsed first, on the loop), with no
 * connection and an empty response. 0 or -ENOMEM. */
static int request_copy(struct page_job *j, struct http_request *req)
{
    const char *s[] = {req->method_name, req->target, req->path,
                       req->query,       req->remote, req->client};
    http_request_query(req, ""); /* parsed here: the parse writes the connection's buffer */
    j->size = req->body_len + 1 + kv_size(req->headers, req->nheaders) +
              kv_size(req->qparams, req->nqparams) + kv_size(req->params, req->nparams);
    for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
        j->size += (s[i] ? strlen(s[i]) : 0) + 1;
    if (!(j->mem = malloc(j->size)))
        return -ENOMEM;
    struct http_request *c = &j->copy;
    memset(c, 0, sizeof(*c));
    c->method = req->method;
    c->method_name = puts0(j, req->method_name);
    c->target = puts0(j, req->target);
    c->path = puts0(j, req->path);
    c->query = puts0(j, req->query);
    c->remote = puts0(j, req->remote);
    c->client = puts0(j, req->client);
    c->body = put(j, req->body ? req->body : "", req->body ? req->body_len : 0);
    c->body_len = req->body ? req->body_len : 0;
    c->route = req->route;
    c->start_ns = req->start_ns;
    c->app = req->app;
    c->nheaders = req->nheaders;
    c->nqparams = req->nqparams;
    c->qparsed = 1;
    assert(req->nparams <= sizeof(c->params) / sizeof(c->params[0]));
    c->nparams = req->nparams;
    for (size_t i = 0; i < req->nparams; i++) {
        c->params[i].name = puts0(j, req->params[i].name);
        c->params[i].value = puts0(j, req->params[i].value);
    }
    /* No struct app_cred: admission saw no credential at all. */
    const struct app_cred *ac = req->user;
    j->cred = ac ? *ac : (struct app_cred){.rc = -ENOENT};
    assert(j->cred.rc != -EINPROGRESS);
    c->user = &j->cred;
    if (kv_copy(j, req->headers, req->nheaders, &c->headers) ||
        kv_copy(j, req->qparams, req->nqparams, &c->qparams))
        return -ENOMEM;
    return 0;
}

static void page_job_free(struct page_job *j)
{
    if (j->viewing)
        app_view_end(j->app, &j->view);
    free(j->copy.headers);
    free(j->copy.qparams);
    http_buf_free(&j->copy.res_headers);
    http_buf_free(&j->copy.res_body);
    free(j->mem);
    free(j->again_mem);
    free(j);
}

/* A page fn renders again (page_again), on app (the view, or the loop's). */
static int again_run(struct app *app, struct http_request *req, page_again_fn fn,
                     const struct page_again *a)
{
    struct page p;
    page_open(&p, app, req);
    /* What was typed, for the forms that show it again: the loop parsed
     * the same bytes before (a body a submission's job took is gone). */
    if (req->method == HTTP_POST && req->body_len > 0)
        (void)page_form_parse(&p);
    int rc = fn(&p, a);
    assert(rc != HTTP_DEFERRED);
    if (rc < 0)
        page_error(&p, 404, "Page not found",
                   "There is no page at this address. Use the links at the top of the page.");
    page_free(&p);
    return HTTP_DONE;
}

/* Reader thread. */
static int page_job_run(struct db *db, void *arg)
{
    struct page_job *j = arg;
    app_view_db(&j->view, db);
    int rc = j->again ? again_run(&j->view, &j->copy, j->again, &j->a)
                      : j->fn(&j->view, &j->copy, j->rt);
    assert(rc == HTTP_DONE);
    (void)rc;
    return 0;
}

/* The copy's response into req (a borrowed body copied: it may point into
 * the view, freed next). 0 or -ENOMEM. */
static int response_move(struct http_request *from, struct http_request *req)
{
    req->status = from->status;
    req->content_type = from->content_type;
    req->close_after |= from->close_after;
    req->body_ext = NULL;
    req->body_ext_len = 0;
    int rc = http_buf_append(&req->res_headers, from->res_headers.data, from->res_headers.len);
    if (from->body_ext) {
        req->res_body.len = 0;
        return rc ? rc : http_buf_append(&req->res_body, from->body_ext, from->body_ext_len);
    }
    http_buf_free(&req->res_body);
    req->res_body = from->res_body;
    memset(&from->res_body, 0, sizeof(from->res_body));
    return rc;
}

/* A page saying the server could not render (rc: the reader's -errno). */
static void page_job_failed(struct app *app, struct http_request *req, int rc)
{
    struct page p;
    struct api_error e;
    req->res_headers.len = 0;
    page_open(&p, app, req);
    api_internal(&e, rc);
    e.status = 503;
    snprintf(e.message, sizeof(e.message),
             "The server could not read this page (%s); try again "
             "in a moment.",
             strerror(-rc));
    page_api_error(&p, &e);
    page_free(&p);
}

/* Loop thread. */
static void page_job_after(void *arg, int rc)
{
    struct page_job *j = arg;
    struct app *app = j->app;
    struct http_request *req = http_hold_end(&j->hold);
    if (req) {
        if (!rc)
            rc = response_move(&j->copy, req);
        if (rc)
            page_job_failed(app, req, rc);
        http_request_finish(req);
    }
    page_job_free(j);
    app_work_end(app); /* last: it may finish a stop */
}

/* Queue job j (its fn or again set) for req: HTTP_DEFERRED; or HTTP_DONE
 * with a 503 page when it could not be (j freed). */
static int job_start(struct app *app, struct http_request *req, struct page_job *j)
{
    pages_warm();
    int rc = request_copy(j, req);
    if (!rc && !(rc = app_view_begin(app, &j->view))) {
        j->viewing = 1;
        j->app = app;
        rc = reader_submit(app->reader, page_job_run, page_job_after, j);
    }
    if (rc) {
        j->app = app;
        page_job_free(j);
        page_job_failed(app, req, rc);
        return HTTP_DONE;
    }
    app_work_begin(app);
    http_hold_start(&j->hold, req);
    return HTTP_DEFERRED;
}

int page_job_start(struct app *app, struct http_request *req, const struct route *rt,
                   page_job_fn fn)
{
    assert(fn);
    const struct app_cred *ac = req->user;
    if (reader_sync(app->reader) || (ac && ac->rc == -EINPROGRESS))
        return fn(app, req, rt);
    struct page_job *j = calloc(1, sizeof(*j));
    if (!j) {
        page_job_failed(app, req, -ENOMEM);
        return HTTP_DONE;
    }
    j->rt = rt;
    j->fn = fn;
    return job_start(app, req, j);
}

int page_again(struct page *p, page_again_fn fn, const struct page_again *a)
{
    assert(fn && a);
    struct app *app = p->app;
    struct http_request *req = p->req;
    size_t n = PAGE_AGAIN_STRS, size = 0;
    if (reader_sync(app->reader))
        return fn(p, a);
    for (size_t i = 0; i < n; i++)
        size += a->s[i] ? strlen(a->s[i]) + 1 : 0;
    struct page_job *j = calloc(1, sizeof(*j));
    if (!j || !(j->again_mem = malloc(size ? size : 1))) {
        free(j);
        page_job_failed(app, req, -ENOMEM);
        return HTTP_DONE;
    }
    j->again = fn;
    j->a = *a;
    for (size_t i = 0, used = 0; i < n; i++) {
        if (!a->s[i])
            continue;
        size_t len = strlen(a->s[i]) + 1;
        memcpy(j->again_mem + used, a->s[i], len);
        j->a.s[i] = j->again_mem + used;
        used += len;
    }
    return job_start(app, req, j);
}
