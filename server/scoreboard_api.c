/*
 * scoreboard_api.c - GET /api/labs/{lab}/scoreboard and the grades export.
 */
#include "server/api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/appview.h"
#include "server/export.h"
#include "server/reader.h"
#include "server/scoreboard.h"
#include "server/views.h"

/* The answer: b's bytes (borrowed: the loop's cache, sent at once; or
 * copied for a deferred request). */
static void sb_send(struct http_request *req, const struct app_lab *l, int kind,
                    const struct http_buf *b, int borrowed)
{
    int csv = kind >= SCOREBOARD_CSV_STAFF;
    const char *type = csv ? "text/csv; charset=utf-8" : "application/json";
    if (csv) {
        char cd[128];
        snprintf(cd, sizeof(cd), "attachment; filename=\"%s-scoreboard.csv\"", l->lab.name);
        http_response_header(req, "Content-Disposition", cd);
    }
    if (borrowed)
        http_response_body_borrowed(req, 200, type, b->data, b->len);
    else if (http_response_body(req, 200, type, b->data, b->len) != 0)
        http_response_error(req, 500, "internal", "Out of memory; try again.");
}

/* A request waiting for a scoreboard being ranked. */
struct sb_waiter {
    struct http_hold hold; /* the request, until the client goes away */
    struct sb_waiter *next;
};

/* A scoreboard not in the loop's cache, ranked on the reader once for
 * every request that misses while it runs (l->sb_job[kind]). */
struct sb_job {
    struct app *app;
    struct sb_waiter *waiters;
    size_t lab; /* index in app->labs */
    int kind;
    unsigned gen; /* the lab's sb_gen when it began */
    struct app view;
    struct http_buf out;
    int rc;
};

/* Reader thread: rank in the view, take the bytes. */
static int sb_run(struct db *db, void *arg)
{
    struct sb_job *j = arg;
    const struct http_buf *b;
    app_view_db(&j->view, db);
    struct app_lab *l = &j->view.labs[j->lab];
    j->rc = scoreboard_render(&j->view, l, j->kind, &b);
    if (!j->rc) {
        j->out = l->sb_cache[j->kind];
        memset(&l->sb_cache[j->kind], 0, sizeof(l->sb_cache[j->kind]));
        l->sb_valid[j->kind] = 0;
    }
    return 0;
}

/* Loop thread: into the loop's cache when nothing changed the lab's
 * scoreboard meanwhile, then the answer to each waiter. */
static void sb_after(void *arg, int rc)
{
    struct sb_job *j = arg;
    struct app *app = j->app;
    struct app_lab *l = &app->labs[j->lab];
    if (l->sb_job[j->kind] == j)
        l->sb_job[j->kind] = NULL;
    if (!rc)
        rc = j->rc;
    const struct http_buf *b = &j->out;
    if (!rc && l->sb_gen == j->gen && !l->sb_valid[j->kind]) {
        http_buf_free(&l->sb_cache[j->kind]);
        l->sb_cache[j->kind] = j->out;
        memset(&j->out, 0, sizeof(j->out));
        l->sb_valid[j->kind] = 1;
        b = &l->sb_cache[j->kind];
    }
    while (j->waiters) {
        struct sb_waiter *w = j->waiters;
        j->waiters = w->next;
        struct http_request *req = http_hold_end(&w->hold);
        if (req) {
            struct api_error e;
            if (rc) {
                api_internal(&e, rc);
                api_send_err(req, &e);
            } else {
                sb_send(req, l, j->kind, b, 0);
            }
            http_request_finish(req);
        }
        free(w);
    }
    app_view_end(app, &j->view);
    http_buf_free(&j->out);
    free(j);
    app_work_end(app); /* last: it may finish a stop */
}

/* Wait for l's scoreboard of kind: join the ranking under way (of the
 * scoreboard as it is now), or start one on the reader. HTTP_DEFERRED,
 * or -errno. */
static int sb_wait(struct app *app, struct http_request *req, struct app_lab *l, int kind)
{
    struct sb_job *j = l->sb_job[kind];
    struct sb_waiter *w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    if (!j || j->gen != l->sb_gen) {
        int rc = (j = calloc(1, sizeof(*j))) ? app_view_begin(app, &j->view) : -ENOMEM;
        if (!rc) {
            j->app = app;
            j->lab = (size_t)(l - app->labs);
            j->kind = kind;
            j->gen = l->sb_gen;
            if ((rc = reader_submit(app->reader, sb_run, sb_after, j)) != 0)
                app_view_end(app, &j->view);
        }
        if (rc) {
            free(j);
            free(w);
            return rc;
        }
        app_work_begin(app);
        l->sb_job[kind] = j;
    }
    w->next = j->waiters;
    j->waiters = w;
    http_hold_start(&w->hold, req);
    return HTTP_DEFERRED;
}

static int h_scoreboard(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    if (api_need(app, req, &u, HUMANS))
        return HTTP_DONE;
    struct app_lab *l = app_lab_find(app, http_request_param(req, "lab"));
    if (!l) {
        api_fail(&e, 404, "not_found", "There is no lab called '%.64s'.",
                 http_request_param(req, "lab"));
        return api_send_err(req, &e);
    }
    const char *fmt = http_request_query(req, "format");
    int csv = fmt && strcmp(fmt, "csv") == 0;
    if (fmt && !csv && strcmp(fmt, "json") != 0) {
        api_fail(&e, 400, "bad_request", "format must be json or csv.");
        return api_send_err(req, &e);
    }
    int kind = (csv ? 2 : 0) + (u.role == AUTH_STUDENT ? 1 : 0);
    /* The cache answers on the loop; a miss is ranked on the reader. */
    if (!l->sb_valid[kind] && !reader_sync(app->reader)) {
        int rc = sb_wait(app, req, l, kind);
        if (rc == HTTP_DEFERRED)
            return rc;
        api_internal(&e, rc);
        return api_send_err(req, &e);
    }
    const struct http_buf *b;
    int rc = scoreboard_render(app, l, kind, &b);
    if (rc) {
        api_internal(&e, rc);
        return api_send_err(req, &e);
    }
    sb_send(req, l, kind, b, 1);
    return HTTP_DONE;
}

/* The grades CSV built (export.c): its bytes become the body, no copy. */
static void grades_done(struct app *app, struct http_request *req, struct http_buf *out,
                        const struct api_error *e)
{
    (void)app;
    if (e) {
        api_send_err(req, e);
        return;
    }
    http_buf_free(&req->res_body);
    req->res_body = *out;
    memset(out, 0, sizeof(*out));
    req->status = 200;
    req->content_type = "text/csv; charset=utf-8";
    http_response_header(req, "Content-Disposition", "attachment; filename=\"grades.csv\"");
}

static int h_grades(struct app *app, struct http_request *req)
{
    struct auth_user u;
    if (api_need(app, req, &u, ADMIN))
        return HTTP_DONE;
    return export_grades_csv(app, req, &u, grades_done); /* read off the loop */
}

const struct route scoreboard_api_routes[] = {
    {HTTP_GET, "/api/labs/{lab}/scoreboard", h_scoreboard, 0, NULL, NULL, 0},
    {HTTP_GET, "/api/admin/export/grades.csv", h_grades, 0, NULL, NULL, 0},
};
const size_t scoreboard_api_nroutes =
    sizeof(scoreboard_api_routes) / sizeof(scoreboard_api_routes[0]);
