/*
 * course_api.c - the JSON routes of the course: /api/me, /api/labs,
 * /api/admin/users, rubrics and extensions (docs/api.md).
 */
#include "server/api.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "server/course.h"
#include "server/views.h"

static int h_me(struct app *app, struct http_request *req)
{
    struct auth_user u;
    if (api_need(app, req, &u, HUMANS))
        return HTTP_DONE;
    /* The viewer's pseudonym in each lab where they have one (a student gets
     * one when they first appear on a lab's scoreboard). */
    json_t *ps = json_object();
    for (size_t i = 0; ps && i < app->nlabs; i++) {
        char p[65];
        if (auth_pseudonym(app->db, u.id, app->labs[i].lab.name, 0, p) == 0)
            json_object_set_new(ps, app->labs[i].lab.name, json_string(p));
    }
    return api_send_json(req, 200,
                     json_pack("{s:I,s:s,s:s,s:s,s:o,s:b}", "id", (json_int_t)u.id, "name", u.name,
                               "role", auth_role_name(u.role), "display_name", u.display_name,
                               "pseudonyms", ps ? ps : json_null(), "show_name", u.show_name));
}

static int h_me_patch(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *body;
    if (api_need(app, req, &u, HUMANS))
        return HTTP_DONE;
    if (api_body_json(req, &body, 0, &e))
        return api_send_err(req, &e);
    json_t *sn = json_object_get(body, "show_name");
    if (!json_is_boolean(sn)) {
        json_decref(body);
        api_fail(&e, 400, "bad_request", "show_name: expected true or false.");
        return api_send_err(req, &e);
    }
    int rc = api_show_name_set(app, &u, json_is_true(sn), &e);
    json_decref(body);
    if (rc)
        return api_send_err(req, &e);
    return h_me(app, req);
}

static int h_labs(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *j;
    if (api_need(app, req, &u, HUMANS))
        return HTTP_DONE;
    if (api_labs_list(app, &u, &j, &e))
        return api_send_err(req, &e);
    return api_send_json(req, 200, j);
}

static int h_lab(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *j;
    if (api_need(app, req, &u, HUMANS))
        return HTTP_DONE;
    if (api_lab_get(app, &u, http_request_param(req, "lab"), &j, &e))
        return api_send_err(req, &e);
    return api_send_json(req, 200, j);
}

static int h_admin_users(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *j = NULL, *body;
    if (api_need(app, req, &u, ADMIN))
        return HTTP_DONE;
    const char *ct = http_request_header(req, "Content-Type");
    int rc;
    if (ct && (api_ct_is(ct, "text/csv") || api_ct_is(ct, "application/csv"))) {
        rc = api_users_add_csv(app, &u, req->body, req->body_len, &j, &e);
    } else {
        if (api_body_json(req, &body, 0, &e))
            return api_send_err(req, &e);
        rc = api_users_add(app, &u, json_object_get(body, "users"), &j, &e);
        json_decref(body);
    }
    if (rc)
        return api_send_err(req, &e);
    return api_send_json(req, 201, j);
}

static int h_admin_users_list(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *j;
    if (api_need(app, req, &u, ADMIN))
        return HTTP_DONE;
    if (api_users_list(app, &u, &j, &e))
        return api_send_err(req, &e);
    return api_send_json(req, 200, j);
}

static int h_admin_user_revoke(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *j;
    if (api_need(app, req, &u, ADMIN))
        return HTTP_DONE;
    if (api_user_revoke(app, &u, http_request_param(req, "name"), &j, &e))
        return api_send_err(req, &e);
    return api_send_json(req, 200, j);
}

static int h_rubric_get(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *j;
    if (api_need(app, req, &u, ADMIN))
        return HTTP_DONE;
    if (api_rubric_get(app, &u, http_request_param(req, "lab"), &j, &e))
        return api_send_err(req, &e);
    return api_send_json(req, 200, j);
}

static int h_rubric_put(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *body;
    int v;
    if (api_need(app, req, &u, ADMIN))
        return HTTP_DONE;
    if (!app_lab_find(app, http_request_param(req, "lab"))) {
        api_fail(&e, 404, "not_found", "There is no lab called '%.64s'.",
                 http_request_param(req, "lab"));
        return api_send_err(req, &e);
    }
    if (api_body_json(req, &body, 0, &e))
        return api_send_err(req, &e);
    /* Accept the document itself, or {"rubric":{...}} as GET returns it. */
    json_t *doc = body;
    if (json_object_size(body) <= 2 && json_is_object(json_object_get(body, "rubric")))
        doc = json_object_get(body, "rubric");
    int rc = api_rubric_put(app, &u, http_request_param(req, "lab"), doc, &v, &e);
    json_decref(body);
    if (rc)
        return api_send_err(req, &e);
    return api_send_json(req, 200, json_pack("{s:i}", "version", v));
}

static int h_extension(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *body;
    if (api_need(app, req, &u, ADMIN))
        return HTTP_DONE;
    if (api_body_json(req, &body, 0, &e))
        return api_send_err(req, &e);
    const char *user = json_string_value(json_object_get(body, "user"));
    const char *lab = json_string_value(json_object_get(body, "lab"));
    const char *due_s = json_string_value(json_object_get(body, "due"));
    const char *hard_s = json_string_value(json_object_get(body, "hard_deadline"));
    double due = 0, hard = 0;
    int rc;
    if (!user || !lab)
        rc =
            api_fail(&e, 400, "bad_request", "Send {\"user\",\"lab\",\"due\",\"hard_deadline\"?}.");
    else if ((due_s && rubric_time_parse(due_s, &due)) ||
             (hard_s && rubric_time_parse(hard_s, &hard)))
        rc = api_fail(&e, 400, "bad_request",
                      "due, hard_deadline: use ISO 8601 UTC like 2026-12-04T23:59:00Z.");
    else
        rc = api_extension_set(app, &u, user, lab, due, hard, &e);
    json_decref(body);
    if (rc)
        return api_send_err(req, &e);
    return api_send_json(req, 200, json_pack("{s:b}", "ok", 1));
}

const struct route course_api_routes[] = {
    {HTTP_GET, "/api/me", h_me, 0, NULL, NULL},
    {HTTP_PATCH, "/api/me", h_me_patch, 4 * KiB, NULL, NULL},
    {HTTP_GET, "/api/labs", h_labs, 0, NULL, NULL},
    {HTTP_GET, "/api/labs/{lab}", h_lab, 0, NULL, NULL},
    {HTTP_POST, "/api/admin/users", h_admin_users, 4096 * KiB, "a roster may be at most 4 MiB.", NULL},
    {HTTP_GET, "/api/admin/users", h_admin_users_list, 0, NULL, NULL},
    {HTTP_POST, "/api/admin/users/{name}/revoke", h_admin_user_revoke, 4 * KiB, NULL, NULL},
    {HTTP_GET, "/api/admin/labs/{lab}/rubric", h_rubric_get, 0, NULL, NULL},
    {HTTP_PUT, "/api/admin/labs/{lab}/rubric", h_rubric_put, 256 * KiB,
     "a rubric may be at most 256 KiB.", NULL},
    {HTTP_POST, "/api/admin/extensions", h_extension, 16 * KiB, NULL, NULL},
};
const size_t course_api_nroutes = sizeof(course_api_routes) / sizeof(course_api_routes[0]);
