/*
 * submission_api.c - the JSON routes of submissions: submit, read, list,
 * the source, regrade, override, the admin queue (docs/api.md).
 */
#include "server/api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/multipart.h"
#include "server/staff_write.h"
#include "server/submission.h"
#include "server/views.h"

static int h_submit(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    const char *lab = http_request_param(req, "lab");
    if (api_need(app, req, &u, HUMANS))
        return HTTP_DONE;
    if (!app_lab_find(app, lab)) {
        api_fail(&e, 404, "not_found", "There is no lab called '%.64s'.", lab);
        return api_send_err(req, &e);
    }
    const char *ct = http_request_header(req, "Content-Type");
    char boundary[80];
    int rc;
    if (ct && api_ct_is(ct, "multipart/form-data")) {
        if (multipart_boundary(ct, boundary, sizeof(boundary))) {
            api_fail(
                &e, 400, "bad_request",
                "The multipart boundary in Content-Type is missing or invalid (1-70 characters).");
            return api_send_err(req, &e);
        }
        rc = submission_start(app, req, &u, lab, boundary, NULL, &e);
    } else if (!ct || api_ct_is(ct, "application/octet-stream") || api_ct_is(ct, "text/plain") ||
               api_ct_is(ct, "application/x-www-form-urlencoded") || api_ct_is(ct, "text/x-cuda") ||
               api_ct_is(ct, "text/x-c")) {
        /* curl --data-binary sends x-www-form-urlencoded unless told
         * otherwise: it is still the raw file, never decoded. */
        const char *fname = http_request_query(req, "filename");
        if (!fname && http_request_query_named(req, "filename")) {
            /* Not the default name in its place: the student named a file. */
            api_fail(&e, 400, "bad_request",
                     "The filename parameter could not be read (a %%00, a control character or a "
                     "bad %%-escape in it): send a plain name such as ?filename=kernel.cu.");
            return api_send_err(req, &e);
        }
        rc = submission_start(app, req, &u, lab, NULL, fname, &e);
    } else {
        api_fail(&e, 415, "unsupported_media_type",
                 "Send the file as multipart/form-data (curl -F file=@kernel.cu) or as a raw body "
                 "(curl --data-binary @kernel.cu), not %.64s.",
                 ct);
        return api_send_err(req, &e);
    }
    if (rc)
        return api_send_err(req, &e);
    return HTTP_DEFERRED; /* answered by submission_job.c */
}

static int h_submission(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    long long id;
    if (api_need(app, req, &u, HUMANS))
        return HTTP_DONE;
    if (api_path_id(req, "id", "Submission", &id))
        return HTTP_DONE;
    int rc = submission_get_cached(app, req, &u, id, &e);
    return rc < 0 ? api_send_err(req, &e) : rc; /* a miss: read off the loop */
}

static int h_source(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    long long id;
    char *src, fname[72];
    size_t len;
    if (api_need(app, req, &u, HUMANS))
        return HTTP_DONE;
    if (api_path_id(req, "id", "Submission", &id))
        return HTTP_DONE;
    if (api_submission_source(app, &u, id, &src, &len, fname, &e))
        return api_send_err(req, &e);
    char cd[128];
    snprintf(cd, sizeof(cd), "inline; filename=\"%s\"", fname);
    http_response_header(req, "Content-Disposition", cd);
    /* The source is the student's text: never let a browser sniff it into
     * HTML (stored XSS through a submission). */
    http_response_header(req, "X-Content-Type-Options", "nosniff");
    http_response_body(req, 200, "text/plain; charset=utf-8", src, len);
    free(src);
    return HTTP_DONE;
}

static int h_submissions(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *j;
    int limit, offset;
    if (api_need(app, req, &u, HUMANS))
        return HTTP_DONE;
    if (api_query_int(req, "limit", 50, &limit) || api_query_int(req, "offset", 0, &offset)) {
        api_fail(&e, 400, "bad_request", "limit and offset must be non-negative integers.");
        return api_send_err(req, &e);
    }
    if (api_submissions_list(app, &u, http_request_query(req, "lab"),
                             http_request_query(req, "user"), http_request_query(req, "status"),
                             limit, offset, &j, &e))
        return api_send_err(req, &e);
    return api_send_json(req, 200, j);
}

/* The writer stored a regrade or an override (staff_write.h): answer. */
static int staff_answer(struct app *app, struct http_request *req, const struct staff_write *w,
                        int rc)
{
    (void)app;
    if (rc)
        return api_send_err(req, &w->e);
    if (w->kind == STAFF_REGRADE)
        return api_send_json(req, 202,
                             json_pack("{s:I,s:s}", "id", (json_int_t)w->id, "status", "queued"));
    return api_send_json(req, 200,
                         json_pack("{s:I,s:f}", "id", (json_int_t)w->id, "score", w->score));
}

static int h_regrade(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    long long id;
    if (api_need(app, req, &u, STAFF))
        return HTTP_DONE;
    if (api_path_id(req, "id", "Submission", &id))
        return HTTP_DONE;
    struct staff_write w = {.kind = STAFF_REGRADE, .viewer = u, .id = id};
    if (staff_write_start(app, req, &w, staff_answer, &e))
        return api_send_err(req, &e);
    return HTTP_DEFERRED;
}

static int h_override(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    long long id;
    json_t *body;
    if (api_need(app, req, &u, STAFF))
        return HTTP_DONE;
    if (api_path_id(req, "id", "Submission", &id))
        return HTTP_DONE;
    if (api_body_json(req, &body, 0, &e))
        return api_send_err(req, &e);
    json_t *sc = json_object_get(body, "score");
    struct staff_write w = {.kind = STAFF_OVERRIDE,
                            .viewer = u,
                            .id = id,
                            .score = json_number_value(sc),
                            .reason = json_string_value(json_object_get(body, "reason"))};
    int rc = json_is_number(sc) ? staff_write_start(app, req, &w, staff_answer, &e) /* copies */
                                : api_fail(&e, 400, "bad_request", "score: expected a number.");
    json_decref(body);
    return rc ? api_send_err(req, &e) : HTTP_DEFERRED;
}

static int h_queue(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *j;
    if (api_need(app, req, &u, STAFF))
        return HTTP_DONE;
    if (api_queue_list(app, &u, &j, &e))
        return api_send_err(req, &e);
    return api_send_json(req, 200, j);
}

const struct route submission_api_routes[] = {
    /* The cap leaves room for multipart framing; the file itself is held to
     * 256 KiB by submission_check. */
    {HTTP_POST, "/api/labs/{lab}/submissions", h_submit, API_SOURCE_MAX + 16 * KiB,
     "source files may be at most 256 KiB.", NULL, 0},
    {HTTP_GET, "/api/submissions", h_submissions, 0, NULL, NULL, 1},
    {HTTP_GET, "/api/submissions/{id}", h_submission, 0, NULL, NULL, 0},
    {HTTP_GET, "/api/submissions/{id}/source", h_source, 0, NULL, NULL, 1},
    {HTTP_POST, "/api/admin/submissions/{id}/regrade", h_regrade, 4 * KiB, NULL, NULL, 0},
    {HTTP_POST, "/api/admin/submissions/{id}/override", h_override, 16 * KiB, NULL, NULL, 0},
    {HTTP_GET, "/api/admin/queue", h_queue, 0, NULL, NULL, 1},
};
const size_t submission_api_nroutes =
    sizeof(submission_api_routes) / sizeof(submission_api_routes[0]);
