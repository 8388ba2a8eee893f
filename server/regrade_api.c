/*
 * regrade_api.c - the JSON routes of regrade.h (docs/api-course.md).
 */
#include "server/api.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/auth.h"
#include "server/regrade.h"
#include "server/submission.h"
#include "server/views.h"

/* The writer stored (or refused) the request or the answer
 * (regrade.h): the request as stored, or the refusal. */
static int written(struct app *app, struct http_request *req, const struct regrade_write *w,
                   int rc)
{
    (void)app;
    if (rc)
        return api_send_err(req, &w->e);
    return api_send_json(req, w->answering ? 200 : 201, json_incref(w->out));
}

static int h_open(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *body;
    if (api_need(app, req, &u, HUMANS))
        return HTTP_DONE;
    long long id;
    if (api_path_id(req, "id", "Submission", &id))
        return HTTP_DONE;
    if (api_json_parse(req->body, req->body_len, 0, &body, &e))
        return api_send_err(req, &e);
    const char *reason = json_string_value(json_object_get(body, "reason"));
    int rc = regrade_open_start(app, req, &u, id, reason, written, &e); /* copies */
    json_decref(body);
    return rc ? api_send_err(req, &e) : HTTP_DEFERRED;
}

static int h_list_of_submission(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *out = NULL, *sub = NULL;
    if (api_need(app, req, &u, HUMANS))
        return HTTP_DONE;
    long long id;
    /* The submission's own rule decides who may look (403 / 404). */
    if (api_path_id(req, "id", "Submission", &id))
        return HTTP_DONE;
    if (api_submission_get(app, &u, id, &sub, &e))
        return api_send_err(req, &e);
    json_decref(sub);
    if (regrade_request_list(app, &u, NULL, NULL, NULL, id, &out, &e))
        return api_send_err(req, &e);
    return api_send_json(req, 200, out);
}

static int h_list(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *out = NULL;
    if (api_need(app, req, &u, HUMANS))
        return HTTP_DONE;
    if (regrade_request_list(app, &u, http_request_query(req, "status"),
                             http_request_query(req, "lab"), http_request_query(req, "user"), 0,
                             &out, &e))
        return api_send_err(req, &e);
    return api_send_json(req, 200, out);
}

static int h_get(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *out = NULL;
    if (api_need(app, req, &u, HUMANS))
        return HTTP_DONE;
    long long rid;
    if (api_path_id(req, "rid", "Regrade request", &rid))
        return HTTP_DONE;
    if (regrade_request_get(app, &u, rid, &out, &e))
        return api_send_err(req, &e);
    return api_send_json(req, 200, out);
}

static int h_answer(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *body;
    if (api_need(app, req, &u, STAFF))
        return HTTP_DONE;
    long long rid;
    if (api_path_id(req, "rid", "Regrade request", &rid))
        return HTTP_DONE;
    if (api_json_parse(req->body, req->body_len, 0, &body, &e))
        return api_send_err(req, &e);
    json_t *js = json_object_get(body, "score");
    int rc = regrade_answer_start(app, req, &u, rid,
                                  json_string_value(json_object_get(body, "answer")),
                                  json_string_value(json_object_get(body, "action")),
                                  json_is_number(js) ? json_number_value(js) : NAN, written,
                                  &e); /* copies */
    json_decref(body);
    return rc ? api_send_err(req, &e) : HTTP_DEFERRED;
}

const struct route regrade_api_routes[] = {
    {HTTP_POST, "/api/submissions/{id}/regrade-requests", h_open, 16 * KiB, NULL, NULL, 0},
    {HTTP_GET, "/api/submissions/{id}/regrade-requests", h_list_of_submission, 0, NULL, NULL, 1},
    {HTTP_GET, "/api/regrade-requests", h_list, 0, NULL, NULL, 1},
    {HTTP_GET, "/api/regrade-requests/{rid}", h_get, 0, NULL, NULL, 1},
    {HTTP_POST, "/api/regrade-requests/{rid}/answer", h_answer, 16 * KiB, NULL, NULL, 0},
};
const size_t regrade_api_nroutes = sizeof(regrade_api_routes) / sizeof(regrade_api_routes[0]);
