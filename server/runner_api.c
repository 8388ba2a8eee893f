/*
 * runner_api.c - the runner protocol (docs/protocol.md): claim with a long
 * poll, progress that renews the lease, the result that must name its
 * lease. The leases themselves are the queue's (server/queue.h).
 */
#include "server/api.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"
#include "server/runner.h"
#include "server/scoreboard.h"
#include "server/submission.h"
#include "server/views.h"

static int rubric_version_of(void *ctx, const char *lab)
{
    struct app_lab *l = app_lab_find(ctx, lab);
    return l && l->has_rubric ? l->rubric_version : 0;
}

/* Try to claim a job for the runner and answer 200 with it. Returns 1 when
 * answered (a job or an error), 0 when nothing is queued. */
static int claim_now(struct app *app, struct http_request *req, const char *runner, long long uid)
{
    struct queue_job job;
    struct api_error e;
    int rc = queue_claim(app->queue, runner, uid, app->cfg.lease_s, rubric_version_of, app, &job);
    if (rc == -ENOENT)
        return 0;
    if (rc) {
        api_internal(&e, rc);
        api_send_err(req, &e);
        return 1;
    }
    /* A claimed job is leased: it has an id and its attempt counts from 1. */
    assert(job.id > 0 && job.attempt > 0);
    char seed[33];
    if (auth_random_hex(16, seed)) {
        free(job.source);
        api_internal(&e, -EIO);
        api_send_err(req, &e);
        return 1;
    }
    struct app_lab *l = app_lab_find(app, job.lab);
    json_t *j = json_pack(
        "{s:{s:I,s:s,s:i,s:I,s:s,s:s%,s:s,s:s,s:i,s:O?}}", "job", "id", (json_int_t)job.id, "lab",
        job.lab, "attempt", job.attempt, "lease_seconds", (json_int_t)app->cfg.lease_s, "filename",
        job.filename, "source", job.source, job.size, "sha256", job.sha256, "seed", seed,
        "rubric_version", l ? l->rubric_version : 0, "rubric", l ? l->rubric_doc : NULL);
    free(job.source);
    api_cache_invalidate(app, job.id);
    app_log("job %lld claimed by %s (attempt %d, lab %s)", job.id, runner, job.attempt, job.lab);
    api_send_json(req, 200, j);
    return 1;
}

static int claim_wake(struct queue *q, struct http_request *req, int wake, const char *runner,
                      void *data)
{
    struct app *app = req->app;
    long long uid = (long long)(intptr_t)data;
    (void)q;
    if (wake)
        return claim_now(app, req, runner, uid);
    http_response_status(req, 204);
    return 1;
}

static int runner_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("._-:@", s[i]))
            return 0;
    return 1;
}

static int h_claim(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    json_t *body;
    if (api_need(app, req, &u, RUNNER))
        return HTTP_DONE;
    if (api_body_json(req, &body, 1, &e))
        return api_send_err(req, &e);
    json_t *jr = json_object_get(body, "runner"), *jg = json_object_get(body, "gpu"),
           *jw = json_object_get(body, "wait");
    char runner[72], gpu[160] = "";
    if (jr && (!json_is_string(jr) || !runner_name_ok(json_string_value(jr)))) {
        json_decref(body);
        api_fail(&e, 400, "bad_request", "runner: 1-64 letters, digits or ._-:@");
        return api_send_err(req, &e);
    }
    if (jw && !json_is_number(jw)) {
        json_decref(body);
        api_fail(&e, 400, "bad_request", "wait: expected seconds (a number, at most 30).");
        return api_send_err(req, &e);
    }
    if (jr)
        snprintf(runner, sizeof(runner), "%s", json_string_value(jr));
    else
        snprintf(runner, sizeof(runner), "%s", u.name);
    if (json_is_string(jg))
        snprintf(gpu, sizeof(gpu), "%s", json_string_value(jg));
    double wait = jw ? json_number_value(jw) : 0;
    json_decref(body);
    if (!(wait >= 0))
        wait = 0;
    if (wait > app->cfg.max_wait_s)
        wait = app->cfg.max_wait_s;
    runner_seen(app, runner, gpu[0] ? gpu : NULL);
    if (claim_now(app, req, runner, u.id))
        return HTTP_DONE;
    if (wait > 0 &&
        queue_wait(app->queue, req, wait, runner, claim_wake, (void *)(intptr_t)u.id) == 0)
        return HTTP_DEFERRED;
    http_response_status(req, 204);
    return HTTP_DONE;
}

static int job_lease_args(json_t *body, const char **runner, int *attempt)
{
    json_t *jr = json_object_get(body, "runner"), *ja = json_object_get(body, "attempt");
    *runner = json_string_value(jr);
    *attempt = json_is_integer(ja) ? (int)json_integer_value(ja) : 0;
    return 0;
}

static int h_progress(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    long long id;
    json_t *body;
    if (api_need(app, req, &u, RUNNER))
        return HTTP_DONE;
    if (api_parse_id(http_request_param(req, "id"), &id)) {
        api_fail(&e, 404, "not_found", "Job ids are positive integers.");
        return api_send_err(req, &e);
    }
    if (api_body_json(req, &body, 0, &e))
        return api_send_err(req, &e);
    const char *phase = json_string_value(json_object_get(body, "phase"));
    json_t *jd = json_object_get(body, "detail");
    const char *detail = json_string_value(jd);
    const char *runner;
    int attempt, rc;
    job_lease_args(body, &runner, &attempt);
    if (!phase || !status_in_progress(phase)) {
        rc =
            api_fail(&e, 400, "bad_request", "phase: one of compiling, checking, running, timing.");
    } else if (jd && !json_is_string(jd)) {
        rc = api_fail(&e, 400, "bad_request", "detail: expected a string.");
    } else if (detail && strlen(detail) > 200) {
        rc = api_fail(&e, 400, "bad_request", "detail: at most 200 characters.");
    } else {
        rc = queue_progress(app->queue, id, u.id, runner, attempt, phase, detail, app->cfg.lease_s);
        if (rc == -ENOENT)
            api_fail(&e, 404, "not_found", "There is no job %lld.", id);
        else if (rc == -ESTALE)
            api_fail(&e, 409, "conflict",
                     "This runner no longer holds the lease of job %lld; abandon it.", id);
        else if (rc)
            api_internal(&e, rc);
    }
    if (!rc && runner)
        runner_seen(app, runner, NULL);
    json_decref(body);
    if (rc)
        return api_send_err(req, &e);
    return api_send_json(req, 200,
                     json_pack("{s:I}", "lease_expires_in", (json_int_t)app->cfg.lease_s));
}

/* The checks of a posted result before it touches the queue: it names its
 * lease, its status is a verdict, and a graded one has its numbers. 0 or
 * a 400 in e. */
static int result_check(const char *runner, int attempt, const char *status, const json_t *result,
                        struct api_error *e)
{
    int rc;
    /* A result must name its lease: without them a stale runner's late
     * result matched whatever lease the job had now and overwrote the
     * current holder's. */
    if (!runner || !*runner || attempt <= 0) {
        rc = api_fail(e, 400, "bad_request",
                      "runner and attempt: a result must name its lease (the runner name sent "
                      "on claim and the claim's attempt).");
        return rc;
    }
    if (!status || !status_verdict(status)) {
        rc = api_fail(e, 400, "bad_request",
                      "status: one of graded, compile_error, rejected, runtime_error, timeout, "
                      "system_error.");
        return rc;
    }
    if (result && !json_is_object(result) && !json_is_null(result)) {
        rc = api_fail(e, 400, "bad_request", "result: expected an object.");
        return rc;
    }
    if (strcmp(status, "system_error") != 0 && !json_is_object(result)) {
        rc = api_fail(e, 400, "bad_request",
                      "result: a %s result needs its result document (an object).", status);
        return rc;
    }
    if (strcmp(status, "graded") == 0 && (!json_is_number(json_object_get(result, "score")) ||
                                          !json_is_number(json_object_get(result, "max_score")))) {
        rc = api_fail(e, 400, "bad_request",
                      "result.score and result.max_score: a graded result needs both numbers.");
        return rc;
    }
    return 0;
}

static int h_result(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    long long id;
    json_t *body;
    if (api_need(app, req, &u, RUNNER))
        return HTTP_DONE;
    if (api_parse_id(http_request_param(req, "id"), &id)) {
        api_fail(&e, 404, "not_found", "Job ids are positive integers.");
        return api_send_err(req, &e);
    }
    if (api_body_json(req, &body, 0, &e))
        return api_send_err(req, &e);
    const char *status = json_string_value(json_object_get(body, "status"));
    json_t *result = json_object_get(body, "result");
    const char *runner;
    int attempt, rc = 0;
    char *text = NULL;
    char lab[65] = "";
    job_lease_args(body, &runner, &attempt);
    rc = result_check(runner, attempt, status, result, &e);
    if (rc)
        goto out;
    struct queue_result qr = {.status = status};
    json_t *js = json_object_get(result, "score"), *jm = json_object_get(result, "max_score");
    if ((js && !json_is_number(js)) || (jm && !json_is_number(jm))) {
        rc = api_fail(&e, 400, "bad_request", "result.score and result.max_score must be numbers.");
        goto out;
    }
    /* The late penalty applies to the stored score; the document stays verbatim. */
    double late_days, pct;
    submission_late_days(app, id, lab, &late_days);
    struct app_lab *l = app_lab_find(app, lab);
    pct = app_late_penalty_percent(l, late_days);
    if (js) {
        qr.has_score = 1;
        qr.score = json_number_value(js) * (1 - pct / 100.0);
        if (qr.score < 0)
            qr.score = 0;
        qr.max_score = jm ? json_number_value(jm) : l && l->has_rubric ? l->rubric.max_score : 0;
    }
    json_t *sp =
        json_object_get(json_object_get(json_object_get(result, "cugrade"), "timing"), "speedup");
    if (json_is_number(sp) && isfinite(json_number_value(sp))) {
        qr.has_speedup = 1;
        qr.speedup = json_number_value(sp);
    }
    text = result && json_is_object(result)
               ? json_dumps(result, JSON_COMPACT | JSON_REAL_PRECISION(15))
               : NULL;
    qr.result_json = text;
    const char *final = status;
    rc = queue_result(app->queue, id, u.id, runner, attempt, &qr, &final);
    if (rc == -ENOENT) {
        api_fail(&e, 404, "not_found", "There is no job %lld.", id);
        goto out;
    }
    if (rc == -ESTALE) {
        api_fail(&e, 409, "conflict",
                 "This runner no longer holds the lease of job %lld; the result was not stored.",
                 id);
        goto out;
    }
    if (rc) {
        api_internal(&e, rc);
        goto out;
    }
    runner_job_done(app, runner);
    scoreboard_invalidate(app, lab);
    api_cache_invalidate(app, id);
    if (qr.has_score)
        app_log("job %lld: %s -> %s, score %g/%g%s", id, status, final, qr.score, qr.max_score,
                pct > 0 ? " (late penalty applied)" : "");
    else
        app_log("job %lld: %s -> %s", id, status, final);
    json_t *ans = json_pack("{s:I,s:s}", "id", (json_int_t)id, "status", final);
    json_decref(body); /* final may point into body */
    free(text);
    return api_send_json(req, 200, ans);
out:
    json_decref(body);
    free(text);
    return api_send_err(req, &e);
}

const struct route runner_api_routes[] = {
    {HTTP_POST, "/api/runner/claim", h_claim, 16 * KiB, NULL, NULL},
    {HTTP_POST, "/api/runner/jobs/{id}/progress", h_progress, 16 * KiB, NULL, NULL},
    {HTTP_POST, "/api/runner/jobs/{id}/result", h_result, 8192 * KiB,
     "a result may be at most 8 MiB.", NULL},
};
const size_t runner_api_nroutes = sizeof(runner_api_routes) / sizeof(runner_api_routes[0]);
