/*
 * router.h - method + path dispatch with {params}, per-route body caps and
 * request metrics (count by status class, latency histogram) per route.
 * Web pages are routes too (a page_fn run through page_run); paths that
 * are not /api/..., /healthz or /metrics and match no route go to the
 * fallback (server/page.h). Page paths are matched with repeated and
 * trailing slashes removed ("/labs/" is "/labs").
 */
#ifndef CUGRADE_ROUTER_H
#define CUGRADE_ROUTER_H

#include "server/http.h"
#include <stddef.h>
#include <stdint.h>

struct app;
struct page;

/* A web page's handler (server/page.h): render into p and return
 * HTTP_DONE, or -1 for "no such page" (the 404 page). */
typedef int (*page_fn)(struct page *p);

/* A handler: fill the response and return HTTP_DONE, or HTTP_DEFERRED
 * (then call http_request_finish later). */
typedef int (*route_fn)(struct app *app, struct http_request *req);

struct route {
    int method;          /* HTTP_GET, HTTP_POST, ... (HEAD matches GET) */
    const char *pattern; /* "/api/labs/{lab}/submissions" */
    route_fn fn;
    size_t body_max;       /* 0: no body accepted */
    const char *body_note; /* the 413 message's end, e.g. "source files may be at most 256 KiB." */
    page_fn page;          /* a web page (fn NULL): run through the router's page runner */
    int off_loop;          /* a GET that only reads, a page's or the API's: it runs on
                            * the reader, through page_run (page.h: page_job_start) */
};

#define ROUTER_BUCKETS 14
extern const double router_buckets[ROUTER_BUCKETS]; /* seconds, upper bounds */

struct route_metrics {
    uint64_t count[6];                    /* by status class: [2]=2xx ... [5]=5xx */
    uint64_t buckets[ROUTER_BUCKETS + 1]; /* last is +Inf */
    double sum_s;
};

/* One view's routes (server/views.h). */
struct route_table {
    const struct route *routes;
    size_t n;
};

struct router {
    const struct route **routes; /* every table's routes, in order */
    size_t nroutes;
    route_fn fallback; /* paths no route matches, but /api ones; NULL: 404 */
    /* runs page routes and the API's off_loop routes */
    int (*page_run)(struct app *app, struct http_request *req, const struct route *rt);
    size_t fallback_body_max;
    struct route_metrics *metrics; /* nroutes + 2: [n] fallback, [n+1] unmatched */
};

/* Set up a router over static route tables (the tables themselves must
 * outlive the router). Returns 0 or -ENOMEM. */
int router_init(struct router *r, const struct route_table *tables, size_t ntables,
                route_fn fallback, size_t fallback_body_max,
                int (*page_run)(struct app *app, struct http_request *req,
                                const struct route *rt));
void router_free(struct router *r);

/* For admission, from req's head alone: the route it will be dispatched to,
 * or NULL for a web page or an API path that no route matches (anyone may
 * ask those; the page, or the 404/405, decides). Sets *body_max to the
 * route's cap (the pages' cap, or HTTP_BODY_DEFAULT_MAX for an unmatched
 * API path, so that the answer is the 404 the client needs and not a 413)
 * and req->body_note. */
const struct route *router_lookup(struct router *r, struct http_request *req, size_t *body_max);

/* Match and run the handler; 404/405 JSON errors for /api paths that do not
 * match. Returns HTTP_DONE or HTTP_DEFERRED. */
int router_dispatch(struct router *r, struct app *app, struct http_request *req);

/* Record a finished request in the metrics (http_callbacks.done). */
void router_record(struct router *r, struct http_request *req);

/* Append Prometheus text for the request metrics to out. 0 or -ENOMEM. */
int router_metrics_write(struct router *r, struct http_buf *out);

#endif
