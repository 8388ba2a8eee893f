/*
 * router.c - route matching and request metrics. See router.h.
 */
#include "server/router.h"

#include <assert.h>
#include <errno.h>
#include <http_parser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const double router_buckets[ROUTER_BUCKETS] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                               0.025,  0.05,    0.1,    0.25,  0.5,    1.0,   5.0};

#define ROUTE_PAGES "(pages)"
#define ROUTE_NONE "(unmatched)"

int router_init(struct router *r, const struct route_table *tables, size_t ntables,
                route_fn fallback, size_t fallback_body_max,
                int (*page_run)(struct app *app, struct http_request *req,
                                const struct route *rt))
{
    size_t n = 0;
    memset(r, 0, sizeof(*r));
    for (size_t t = 0; t < ntables; t++)
        n += tables[t].n;
    r->routes = calloc(n ? n : 1, sizeof(*r->routes));
    r->metrics = calloc(n + 2, sizeof(*r->metrics));
    if (!r->routes || !r->metrics) {
        router_free(r);
        return -ENOMEM;
    }
    for (size_t t = 0; t < ntables; t++)
        for (size_t i = 0; i < tables[t].n; i++) {
            const struct route *rt = &tables[t].routes[i];
            /* A route is an API handler or a page, never both; a page
             * needs the runner. */
            assert(rt->pattern && rt->pattern[0] == '/' && (!rt->fn != !rt->page));
            assert(!rt->page || page_run);
            r->routes[r->nroutes++] = rt;
        }
    assert(r->nroutes == n);
    r->fallback = fallback;
    r->fallback_body_max = fallback_body_max;
    r->page_run = page_run;
    return 0;
}

void router_free(struct router *r)
{
    free(r->routes);
    r->routes = NULL;
    r->nroutes = 0;
    free(r->metrics);
    r->metrics = NULL;
}

static int is_api_path(const char *path)
{
    return strncmp(path, "/api/", 5) == 0 || strcmp(path, "/api") == 0 ||
           strcmp(path, "/healthz") == 0 || strcmp(path, "/metrics") == 0;
}

/* Match path against pattern; on success fill req->params (values copied
 * into a store that lives as long as the request) and return 1. */
static int pattern_match(const char *pattern, const char *path, struct http_request *req,
                         char *store, size_t storelen)
{
    const char *p = pattern, *s = path;
    size_t np = 0, used = 0;
    while (*p && *s) {
        if (*p == '{') {
            const char *pe = strchr(p, '}');
            const char *se = strchr(s, '/');
            size_t vlen = se ? (size_t)(se - s) : strlen(s);
            size_t klen = (size_t)(pe - p - 1);
            if (vlen == 0 || np == 8 || used + vlen + klen + 2 > storelen)
                return 0;
            char *k = store + used;
            memcpy(k, p + 1, klen);
            k[klen] = '\0';
            used += klen + 1;
            char *v = store + used;
            memcpy(v, s, vlen);
            v[vlen] = '\0';
            used += vlen + 1;
            req->params[np].name = k;
            req->params[np].value = v;
            np++;
            p = pe + 1;
            s += vlen;
            continue;
        }
        if (*p != *s)
            return 0;
        p++;
        s++;
    }
    if (*p || *s)
        return 0;
    req->nparams = np;
    return 1;
}

/* Per-request store for params: the request line is at most 16 KiB, but a
 * param is a lab name or an id; 512 bytes is plenty, longer is a 404. */
static char param_store[512];

/* A page path as the pages read it: "/labs//x/" is "/labs/x", "" is "/".
 * Longer than len: "" (no page matches it). */
static const char *page_path(const char *path, char *buf, size_t len)
{
    size_t n = 0;
    for (const char *s = path; *s; s++) {
        if (*s == '/' && (n > 0 && buf[n - 1] == '/'))
            continue;
        if (n + 2 > len)
            return "";
        buf[n++] = *s;
    }
    if (n > 1 && buf[n - 1] == '/')
        n--;
    if (n == 0)
        buf[n++] = '/';
    buf[n] = '\0';
    return buf;
}

static int route_find(struct router *r, struct http_request *req, size_t *idx, int *path_matched)
{
    int method = req->method == HTTP_HEAD ? HTTP_GET : req->method;
    char buf[512];
    const char *path = is_api_path(req->path) ? req->path : page_path(req->path, buf, sizeof(buf));
    *path_matched = 0;
    for (size_t i = 0; i < r->nroutes; i++) {
        if (!pattern_match(r->routes[i]->pattern, path, req, param_store, sizeof(param_store)))
            continue;
        *path_matched = 1;
        if (r->routes[i]->method == method) {
            *idx = i;
            return 1;
        }
    }
    req->nparams = 0;
    return 0;
}

const struct route *router_lookup(struct router *r, struct http_request *req, size_t *body_max)
{
    size_t i;
    int pm;
    /* req->route is set too, so that a request refused at admission is
     * counted under its route; the dispatch sets it again. */
    if (!is_api_path(req->path)) {
        /* A page decides for itself who sees it (admission lets anyone
         * through to it, under the anonymous body cap). */
        if (route_find(r, req, &i, &pm)) {
            req->route = r->routes[i]->pattern;
            *body_max = r->routes[i]->body_max;
        } else {
            req->route = ROUTE_PAGES;
            *body_max = r->fallback_body_max;
        }
        req->nparams = 0;
        return NULL;
    }
    /* route_find fills req->params into param_store: harmless here, the
     * dispatch finds them again (another request's admission may come in
     * between). */
    if (route_find(r, req, &i, &pm)) {
        req->route = r->routes[i]->pattern;
        req->body_note = r->routes[i]->body_note;
        *body_max = r->routes[i]->body_max;
        return r->routes[i];
    }
    req->nparams = 0;
    req->route = ROUTE_NONE;
    *body_max = HTTP_BODY_DEFAULT_MAX;
    return NULL;
}

int router_dispatch(struct router *r, struct app *app, struct http_request *req)
{
    size_t i;
    int pm;
    if (!is_api_path(req->path)) {
        if (route_find(r, req, &i, &pm)) {
            const struct route *rt = r->routes[i];
            req->route = rt->pattern;
            return rt->page ? r->page_run(app, req, rt) : rt->fn(app, req);
        }
        req->route = ROUTE_PAGES;
        if (!r->fallback) {
            http_response_error(req, 404, "not_found", "There is no page at %s.", req->path);
            return HTTP_DONE;
        }
        return r->fallback(app, req);
    }
    /* API answers are per user (tokens, cookies): no cache may keep them. */
    http_response_header(req, "Cache-Control", "no-store");
    if (route_find(r, req, &i, &pm)) {
        req->route = r->routes[i]->pattern;
        /* req->params point into param_store, valid while the handler
         * runs; handlers that defer (the claim long poll) take no params,
         * and a route read off the loop runs on a copy (page_job.c). */
        const struct route *rt = r->routes[i];
        return rt->off_loop && r->page_run ? r->page_run(app, req, rt) : rt->fn(app, req);
    }
    req->route = ROUTE_NONE;
    if (pm) {
        char allow[128] = "";
        size_t used = 0;
        for (size_t k = 0; k < r->nroutes; k++) {
            struct http_request tmp = {0};
            char st[512];
            if (pattern_match(r->routes[k]->pattern, req->path, &tmp, st, sizeof(st)) &&
                used + 12 < sizeof(allow)) {
                used += (size_t)snprintf(allow + used, sizeof(allow) - used, "%s%s",
                                         used ? ", " : "", http_method_str(r->routes[k]->method));
            }
        }
        http_response_header(req, "Allow", allow);
        http_response_error(req, 405, "method_not_allowed", "%s is not allowed on %s; use %s.",
                            req->method_name, req->path, allow);
        return HTTP_DONE;
    }
    http_response_error(req, 404, "not_found", "There is no API endpoint %s %s.", req->method_name,
                        req->path);
    return HTTP_DONE;
}

void router_record(struct router *r, struct http_request *req)
{
    size_t idx = r->nroutes + 1;
    if (req->route) {
        if (strcmp(req->route, ROUTE_PAGES) == 0) {
            idx = r->nroutes;
        } else {
            for (size_t i = 0; i < r->nroutes; i++) {
                if (req->route == r->routes[i]->pattern) {
                    idx = i;
                    break;
                }
            }
        }
    }
    struct route_metrics *m = &r->metrics[idx];
    int cls = req->status / 100;
    if (cls < 1 || cls > 5)
        cls = 5;
    m->count[cls]++;
    double s = (double)(uv_hrtime() - req->start_ns) / 1e9;
    m->sum_s += s;
    size_t b = 0;
    while (b < ROUTER_BUCKETS && s > router_buckets[b])
        b++;
    m->buckets[b]++;
}

int router_metrics_write(struct router *r, struct http_buf *out)
{
    int rc = 0;
    rc |= http_buf_printf(
        out, "# HELP cugrade_http_requests_total HTTP requests by route and status class.\n"
             "# TYPE cugrade_http_requests_total counter\n");
    for (size_t i = 0; i < r->nroutes + 2; i++) {
        const char *name = i < r->nroutes    ? r->routes[i]->pattern
                           : i == r->nroutes ? ROUTE_PAGES
                                             : ROUTE_NONE;
        const char *method = i < r->nroutes ? http_method_str(r->routes[i]->method) : "any";
        for (int c = 1; c <= 5; c++)
            if (r->metrics[i].count[c])
                rc |= http_buf_printf(
                    out,
                    "cugrade_http_requests_total{route=\"%s\",method=\"%s\",code=\"%dxx\"} %llu\n",
                    name, method, c, (unsigned long long)r->metrics[i].count[c]);
    }
    rc |= http_buf_printf(
        out,
        "# HELP cugrade_http_request_duration_seconds Time from the request line to the response.\n"
        "# TYPE cugrade_http_request_duration_seconds histogram\n");
    for (size_t i = 0; i < r->nroutes + 2; i++) {
        const char *name = i < r->nroutes    ? r->routes[i]->pattern
                           : i == r->nroutes ? ROUTE_PAGES
                                             : ROUTE_NONE;
        const char *method = i < r->nroutes ? http_method_str(r->routes[i]->method) : "any";
        struct route_metrics *m = &r->metrics[i];
        uint64_t total = 0;
        for (int c = 1; c <= 5; c++)
            total += m->count[c];
        if (!total)
            continue;
        uint64_t cum = 0;
        for (size_t b = 0; b < ROUTER_BUCKETS; b++) {
            cum += m->buckets[b];
            rc |= http_buf_printf(out,
                                  "cugrade_http_request_duration_seconds_bucket{route=\"%s\","
                                  "method=\"%s\",le=\"%g\"} %llu\n",
                                  name, method, router_buckets[b], (unsigned long long)cum);
        }
        cum += m->buckets[ROUTER_BUCKETS];
        rc |= http_buf_printf(
            out,
            "cugrade_http_request_duration_seconds_bucket{route=\"%s\",method=\"%s\",le=\"+Inf\"} "
            "%llu\n"
            "cugrade_http_request_duration_seconds_sum{route=\"%s\",method=\"%s\"} %.6f\n"
            "cugrade_http_request_duration_seconds_count{route=\"%s\",method=\"%s\"} %llu\n",
            name, method, (unsigned long long)cum, name, method, m->sum_s, name, method,
            (unsigned long long)cum);
    }
    return rc ? -ENOMEM : 0;
}
