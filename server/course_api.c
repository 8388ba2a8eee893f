/*
 * course_api.c - the JSON routes of the course: /api/me, /api/labs,
 * /api/admin/users, rubrics and extensions (docs/api.md).
 */
#include "server/api.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/course.h"
#include "server/page.h"
#include "server/staff_write.h"
#include "server/submission.h"
#include "server/views.h"
#include "server/writer.h"

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

/* GET /api/me's handler on a reader job's view (page_job_start). */
static int me_on_view(struct app *view, struct http_request *req, const struct route *rt)
{
    return rt->fn(view, req);
}

static const struct route me_route = {HTTP_GET, "/api/me", h_me, 0, NULL, NULL, 1};

/* The writer stored the opt-in (or a staff change, staff_write.h): /api/me
 * for PATCH /api/me (read on the reader), the revocation's counts, or {ok}. */
static int course_change_answer(struct app *app, struct http_request *req,
                                const struct staff_write *w, int rc)
{
    if (rc)
        return api_send_err(req, &w->e);
    if (w->kind == STAFF_SHOW_NAME)
        return page_job_start(app, req, &me_route, me_on_view);
    if (w->kind == STAFF_REVOKE)
        return api_send_json(req, 200,
                             json_pack("{s:s,s:i,s:i}", "user", w->user, "tokens_revoked",
                                       w->tokens, "sessions_ended", w->sessions));
    return api_send_json(req, 200, json_pack("{s:b}", "ok", 1));
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
    int rc;
    struct staff_write w = {.kind = STAFF_SHOW_NAME, .viewer = u, .show = json_is_true(sn)};
    if (!json_is_boolean(sn))
        rc = api_fail(&e, 400, "bad_request", "show_name: expected true or false.");
    else
        rc = staff_write_start(app, req, &w, course_change_answer, &e);
    json_decref(body);
    return rc ? api_send_err(req, &e) : HTTP_DEFERRED;
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

/* ---- an import (users), parsed and written by the writer thread ---- */

struct import_job {
    struct http_hold client; /* the request, while its client is there */
    struct app *app;
    course_write_answer *answer;
    struct auth_user viewer;
    int csv;    /* the body is a roster CSV, else {"users":[...]} */
    char *body; /* taken over */
    size_t len;
    json_t *out; /* set by import_run */
    struct api_error e;
};

static int import_run(struct db *db, void *arg)
{
    struct import_job *j = arg;
    if (j->csv)
        return course_users_add_csv(db, &j->viewer, j->body, j->len, &j->out, &j->e);
    json_t *body;
    int rc = api_json_parse(j->body, j->len, 0, &body, &j->e);
    if (rc)
        return rc;
    rc = course_users_add_json(db, &j->viewer, json_object_get(body, "users"), &j->out, &j->e);
    json_decref(body);
    return rc;
}

static void import_done(void *arg, int rc)
{
    struct import_job *j = arg;
    if (rc && !j->e.status)
        api_internal(&j->e, rc);
    struct http_request *req = http_hold_end(&j->client); /* NULL: the client hung up */
    if (req && j->answer(j->app, req, rc ? NULL : j->out, rc, &j->e) != HTTP_DEFERRED)
        http_request_finish(req);
    json_decref(j->out); /* tokens not delivered: the client hung up */
    free(j->body);
    free(j);
}

int course_users_add_start(struct app *app, struct http_request *req,
                           const struct auth_user *viewer, int csv, char *body, size_t len,
                           course_write_answer *answer, struct api_error *e)
{
    assert(answer);
    struct import_job *j = calloc(1, sizeof(*j));
    if (!body) {
        len = req->body_len;
        body = http_request_body_take(req);
    }
    if (!j || !body) {
        free(j);
        free(body);
        return api_internal(e, -ENOMEM);
    }
    j->body = body;
    j->len = len;
    j->app = app;
    j->answer = answer;
    j->viewer = *viewer;
    j->csv = csv;
    int rc = writer_submit(app->writer, import_run, import_done, j, len);
    if (rc) {
        free(j->body);
        free(j);
        return api_internal(e, rc);
    }
    http_hold_start(&j->client, req);
    return 0;
}

/* The API's answer to a users import: the users made, with their tokens. */
static int course_write_sent(struct app *app, struct http_request *req, json_t *out, int rc,
                             const struct api_error *e)
{
    (void)app;
    if (rc)
        return api_send_err(req, e);
    return api_send_json(req, 201, json_incref(out));
}

static int h_admin_users(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    if (api_need(app, req, &u, ADMIN))
        return HTTP_DONE;
    const char *ct = http_request_header(req, "Content-Type");
    int csv = ct && (api_ct_is(ct, "text/csv") || api_ct_is(ct, "application/csv"));
    /* Parsed, checked and stored by the writer: answered by import_done. */
    if (course_users_add_start(app, req, &u, csv, NULL, 0, course_write_sent, &e))
        return api_send_err(req, &e);
    return HTTP_DEFERRED;
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
    if (api_need(app, req, &u, ADMIN))
        return HTTP_DONE;
    struct staff_write w = {.kind = STAFF_REVOKE, .viewer = u};
    snprintf(w.user, sizeof(w.user), "%s", http_request_param(req, "name"));
    if (staff_write_start(app, req, &w, course_change_answer, &e))
        return api_send_err(req, &e);
    return HTTP_DEFERRED;
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

/* ---- a rubric, stored by the writer thread ---- */

struct rubric_job {
    struct http_hold client; /* the request, while its client is there */
    struct app *app;
    course_write_answer *answer;
    long long actor;
    char by[65];
    char lab[65];
    struct rubric r;
    json_t *copy;
    char *text;
    int regrade;               /* also requeue the submissions the change affects */
    int version;               /* set by rubric_run */
    size_t affected, regraded; /* set by rubric_run when regrade */
};

#define RUBRIC_REGRADE_MAX 2000 /* submissions requeued by one rubric change */

/* Writer: requeue the lab's affected submissions (each audited). */
static void rubric_regrade_run(struct db *db, struct rubric_job *j)
{
    long long *ids = malloc(RUBRIC_REGRADE_MAX * sizeof(*ids));
    if (!ids)
        return;
    size_t n = submission_ids_affected_on(db, j->lab, ids, RUBRIC_REGRADE_MAX);
    j->affected = n > RUBRIC_REGRADE_MAX ? RUBRIC_REGRADE_MAX : n;
    for (size_t i = 0; i < j->affected; i++) {
        char target[32];
        snprintf(target, sizeof(target), "submission:%lld", ids[i]);
        if (queue_regrade_in(db, ids[i]) == 0 &&
            db_audit(db, j->actor, "regrade", target, j->lab) == 0)
            j->regraded++;
    }
    free(ids);
}

static int rubric_run(struct db *db, void *arg)
{
    struct rubric_job *j = arg;
    int rc = course_rubric_store(db, j->actor, j->lab, j->text, &j->version);
    if (!rc && j->regrade)
        rubric_regrade_run(db, j);
    return rc;
}

static void rubric_done(void *arg, int rc)
{
    struct rubric_job *j = arg;
    struct app_lab *l = app_lab_find(j->app, j->lab);
    assert(l); /* labs are loaded once, at start */
    if (!rc) {
        course_rubric_install(j->app, l, &j->r, j->copy, j->version, j->by);
        if (j->regraded) { /* the caches: dropped by the install */
            queue_written(j->app->queue, 0, 1);
            app_log("%zu submissions of %s requeued for regrade by %s", j->regraded, j->lab, j->by);
        }
    } else {
        rubric_free(&j->r);
        json_decref(j->copy);
    }
    struct http_request *req = http_hold_end(&j->client); /* NULL: the client hung up */
    if (req) {
        struct api_error e = {0};
        json_t *out =
            rc ? json_pack("{s:s}", "lab", j->lab)
               : json_pack("{s:s,s:i,s:I,s:I}", "lab", j->lab, "version", j->version, "affected",
                           (json_int_t)j->affected, "regraded", (json_int_t)j->regraded);
        if (rc)
            api_internal(&e, rc);
        else if (!out)
            rc = api_internal(&e, -ENOMEM);
        if (j->answer(j->app, req, out, rc, &e) != HTTP_DEFERRED)
            http_request_finish(req);
        json_decref(out);
    }
    free(j->text);
    free(j);
}

int course_rubric_put_start(struct app *app, const struct auth_user *viewer, const char *lab,
                            const json_t *doc, int regrade, struct http_request *req,
                            course_write_answer *answer, struct api_error *e)
{
    assert(answer);
    struct rubric_job *j = calloc(1, sizeof(*j));
    struct app_lab *l;
    if (!j)
        return api_internal(e, -ENOMEM);
    int rc = course_rubric_prepare(app, viewer, lab, doc, &l, &j->r, &j->text, &j->copy, e);
    if (rc) {
        free(j);
        return rc;
    }
    j->app = app;
    j->answer = answer;
    j->regrade = regrade;
    j->actor = viewer->id;
    snprintf(j->by, sizeof(j->by), "%s", viewer->name);
    snprintf(j->lab, sizeof(j->lab), "%s", l->lab.name);
    rc = writer_submit(app->writer, rubric_run, rubric_done, j, strlen(j->text));
    if (rc) {
        rubric_free(&j->r);
        json_decref(j->copy);
        free(j->text);
        free(j);
        return api_internal(e, rc);
    }
    http_hold_start(&j->client, req);
    return 0;
}

/* The API's answer to a rubric: {"version"}. */
static int rubric_sent(struct app *app, struct http_request *req, json_t *out, int rc,
                       const struct api_error *e)
{
    (void)app;
    if (rc)
        return api_send_err(req, e);
    return api_send_json(req, 200, json_pack("{s:O}", "version", json_object_get(out, "version")));
}

static int h_rubric_put(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *body;
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
    int rc = course_rubric_put_start(app, &u, http_request_param(req, "lab"), doc, 0, req,
                                     rubric_sent, &e);
    json_decref(body);
    if (rc)
        return api_send_err(req, &e);
    return HTTP_DEFERRED; /* answered by rubric_done (course.c) */
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
    else {
        struct staff_write w = {.kind = STAFF_EXTENSION, .viewer = u, .due = due, .hard = hard};
        snprintf(w.user, sizeof(w.user), "%s", user);
        snprintf(w.lab, sizeof(w.lab), "%s", lab);
        rc = staff_write_start(app, req, &w, course_change_answer, &e);
    }
    json_decref(body);
    return rc ? api_send_err(req, &e) : HTTP_DEFERRED;
}

const struct route course_api_routes[] = {
    {HTTP_GET, "/api/me", h_me, 0, NULL, NULL, 1},
    {HTTP_PATCH, "/api/me", h_me_patch, 4 * KiB, NULL, NULL, 0},
    {HTTP_GET, "/api/labs", h_labs, 0, NULL, NULL, 1},
    {HTTP_GET, "/api/labs/{lab}", h_lab, 0, NULL, NULL, 1},
    {HTTP_POST, "/api/admin/users", h_admin_users, 4096 * KiB, "a roster may be at most 4 MiB.", NULL, 0},
    {HTTP_GET, "/api/admin/users", h_admin_users_list, 0, NULL, NULL, 1},
    {HTTP_POST, "/api/admin/users/{name}/revoke", h_admin_user_revoke, 4 * KiB, NULL, NULL, 0},
    {HTTP_GET, "/api/admin/labs/{lab}/rubric", h_rubric_get, 0, NULL, NULL, 1},
    {HTTP_PUT, "/api/admin/labs/{lab}/rubric", h_rubric_put, 256 * KiB,
     "a rubric may be at most 256 KiB.", NULL, 0},
    {HTTP_POST, "/api/admin/extensions", h_extension, 16 * KiB, NULL, NULL, 0},
};
const size_t course_api_nroutes = sizeof(course_api_routes) / sizeof(course_api_routes[0]);
