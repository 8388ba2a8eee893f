/*
 * scoreboard_api.c - GET /api/labs/{lab}/scoreboard and the grades export.
 */
#include "server/api.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "server/export.h"
#include "server/scoreboard.h"
#include "server/views.h"

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
    const struct http_buf *b;
    int rc = scoreboard_render(app, l, kind, &b);
    if (rc) {
        api_internal(&e, rc);
        return api_send_err(req, &e);
    }
    if (csv) {
        char cd[128];
        snprintf(cd, sizeof(cd), "attachment; filename=\"%s-scoreboard.csv\"", l->lab.name);
        http_response_header(req, "Content-Disposition", cd);
    }
    http_response_body_borrowed(req, 200, csv ? "text/csv; charset=utf-8" : "application/json",
                                b->data, b->len);
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
