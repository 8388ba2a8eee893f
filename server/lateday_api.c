/*
 * lateday_api.c - the JSON routes of lateday.h (docs/api-course.md).
 */
#include "server/api.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/auth.h"
#include "server/lateday.h"
#include "server/page.h"
#include "server/views.h"

/* GET /api/labs/{lab}/late-days: what a submission now would cost. */
static int h_quote(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    struct lateday_quote q;
    if (api_need(app, req, &u, HUMANS))
        return HTTP_DONE;
    struct app_lab *l = app_lab_find(app, http_request_param(req, "lab"));
    if (!l) {
        api_fail(&e, 404, "not_found", "There is no lab called '%.64s'.",
                 http_request_param(req, "lab"));
        return api_send_err(req, &e);
    }
    int rc = lateday_quote(app, l, u.id, db_now(), &q);
    if (rc) {
        api_internal(&e, rc);
        return api_send_err(req, &e);
    }
    char msg[400] = "";
    if (q.days_late > 0 && l->has_rubric)
        lateday_quote_sentence(&q, l->rubric.penalty_percent_per_day, msg, sizeof(msg));
    json_t *o = json_pack("{s:s,s:b,s:i,s:s}", "lab", l->lab.name, "late", q.days_late > 0,
                          "lab_late_days", q.lab_charged, "message", msg);
    if (o)
        lateday_quote_json(&q, o);
    return api_send_json(req, 200, o);
}

/* GET /api/me/late-days (?user= for staff). */
static int h_mine(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *o;
    if (api_need(app, req, &u, HUMANS))
        return HTTP_DONE;
    if (lateday_user_json(app, &u, http_request_query(req, "user"), &o, &e))
        return api_send_err(req, &e);
    return api_send_json(req, 200, o);
}

static int h_overview(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *o;
    if (api_need(app, req, &u, STAFF))
        return HTTP_DONE;
    if (lateday_overview(app, &u, &o, &e))
        return api_send_err(req, &e);
    return api_send_json(req, 200, o);
}

/* A whole number from a JSON integer (or integral real); -1 otherwise. */
static int json_days(const json_t *v)
{
    if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= 100000)
        return (int)json_integer_value(v);
    return -1;
}

/* The student's pool after a grant (201), on a reader job's view: the
 * user's name from the request's body again. */
static int h_granted(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *body, *o = NULL;
    if (api_need(app, req, &u, ROLE(AUTH_ADMIN)))
        return HTTP_DONE;
    if (api_json_parse(req->body, req->body_len, 0, &body, &e))
        return api_send_err(req, &e);
    int rc = lateday_user_json(app, &u, json_string_value(json_object_get(body, "user")), &o, &e);
    json_decref(body);
    return rc ? api_send_err(req, &e) : api_send_json(req, 201, o);
}

/* A route's handler on a reader job's view (page_job_start). */
static int on_view(struct app *view, struct http_request *req, const struct route *rt)
{
    return rt->fn(view, req);
}

static const struct route overview_route = {HTTP_GET, "/api/admin/late-days", h_overview, 0,
                                            NULL, NULL, 1};
static const struct route granted_route = {HTTP_POST, "/api/admin/late-days/grants", h_granted,
                                           0, NULL, NULL, 1};

/* The writer stored (or refused) the change (lateday.h): the overview
 * (the default) or the student's pool (a grant), read on the reader. */
static int written(struct app *app, struct http_request *req, const struct lateday_write *w,
                   int rc)
{
    if (rc)
        return api_send_err(req, &w->e);
    return page_job_start(app, req, w->grant ? &granted_route : &overview_route, on_view);
}

static int h_default(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *body;
    if (api_need(app, req, &u, ROLE(AUTH_ADMIN)))
        return HTTP_DONE;
    if (api_json_parse(req->body, req->body_len, 0, &body, &e))
        return api_send_err(req, &e);
    int rc = lateday_default_start(app, req, &u, json_days(json_object_get(body, "default_days")),
                                   written, &e);
    json_decref(body);
    return rc ? api_send_err(req, &e) : HTTP_DEFERRED;
}

static int h_grant(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *body;
    if (api_need(app, req, &u, ROLE(AUTH_ADMIN)))
        return HTTP_DONE;
    if (api_json_parse(req->body, req->body_len, 0, &body, &e))
        return api_send_err(req, &e);
    int rc = lateday_grant_start(app, req, &u, json_string_value(json_object_get(body, "user")),
                                 json_days(json_object_get(body, "days")),
                                 json_string_value(json_object_get(body, "reason")), written,
                                 &e); /* copies */
    json_decref(body);
    return rc ? api_send_err(req, &e) : HTTP_DEFERRED;
}

const struct route lateday_api_routes[] = {
    {HTTP_GET, "/api/labs/{lab}/late-days", h_quote, 0, NULL, NULL, 1},
    {HTTP_GET, "/api/me/late-days", h_mine, 0, NULL, NULL, 1},
    {HTTP_GET, "/api/admin/late-days", h_overview, 0, NULL, NULL, 1},
    {HTTP_PUT, "/api/admin/late-days", h_default, 4 * KiB, NULL, NULL, 0},
    {HTTP_POST, "/api/admin/late-days/grants", h_grant, 4 * KiB, NULL, NULL, 0},
};
const size_t lateday_api_nroutes = sizeof(lateday_api_routes) / sizeof(lateday_api_routes[0]);
