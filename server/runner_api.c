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
#include "server/lateday.h"
#include "server/runner.h"
#include "server/scoreboard.h"
#include "server/submission.h"
#include "server/views.h"
#include "server/writer.h"

/* ---- a runner's claim, read and written by the writer thread ---- */

/* A lab's rubric as it was when the claim began: the version recorded on
 * the row and the document sent are the same one. */
struct claim_lab {
    char name[65];
    int version;
    json_t *doc; /* a reference (loop thread), or NULL */
};

struct claim_job {
    struct app *app;
    struct queue_waiter *w;
    char runner[72];
    long long uid;
    double lease_s;
    struct claim_lab *labs;
    size_t nlabs;
    struct queue_job job; /* filled on the writer */
};

static struct claim_lab *claim_lab_of(struct claim_job *c, const char *lab)
{
    for (size_t i = 0; i < c->nlabs; i++)
        if (strcmp(c->labs[i].name, lab) == 0)
            return &c->labs[i];
    return NULL;
}

/* Writer thread: the rubric version of a lab, from the copy. */
static int claim_version(void *ctx, const char *lab)
{
    struct claim_lab *l = claim_lab_of(ctx, lab);
    return l ? l->version : 0;
}

static int claim_run(struct db *db, void *arg)
{
    struct claim_job *c = arg;
    return queue_claim_in(db, c->runner, c->uid, c->lease_s, claim_version, c, &c->job);
}

static void claim_free(struct claim_job *c)
{
    for (size_t i = 0; i < c->nlabs; i++)
        json_decref(c->labs[i].doc);
    free(c->labs);
    free(c->job.source);
    free(c);
}

/* Answer req with the claimed job c->job (200), or an error. */
static void claim_answer(struct claim_job *c, struct http_request *req)
{
    struct queue_job *job = &c->job;
    struct api_error e;
    /* A claimed job is leased: it has an id and its attempt counts from 1. */
    assert(job->id > 0 && job->attempt > 0);
    char seed[33];
    if (auth_random_hex(16, seed)) {
        api_internal(&e, -EIO);
        api_send_err(req, &e);
        return;
    }
    struct claim_lab *l = claim_lab_of(c, job->lab);
    json_t *j = json_pack("{s:{s:I,s:s,s:i,s:I,s:s,s:s%,s:s,s:s,s:i,s:O?}}", "job", "id",
                          (json_int_t)job->id, "lab", job->lab, "attempt", job->attempt,
                          "lease_seconds", (json_int_t)c->lease_s, "filename", job->filename,
                          "source", job->source, job->size, "sha256", job->sha256, "seed", seed,
                          "rubric_version", l ? l->version : 0, "rubric", l ? l->doc : NULL);
    api_send_json(req, 200, j);
}

/* A job claimed for a runner that hung up before it was answered, given
 * back on the writer (queue_release_in): claimable again at once, not when
 * its lease runs out. */
struct claim_release {
    struct app *app;
    long long id, uid;
    int attempt;
    int handed_back;       /* 1: the runner's own POST .../release (h_release) */
    struct http_hold hold; /* that request, until the client goes away */
    char runner[72];
};

static int release_run(struct db *db, void *arg)
{
    struct claim_release *r = arg;
    return queue_release_in(db, r->id, r->uid, r->runner, r->attempt, r->handed_back);
}

/* A job handed back: the answer to the runner that gave it. */
static void release_answer(struct claim_release *r, int rc)
{
    struct http_request *req = http_hold_end(&r->hold);
    if (!req)
        return;
    struct api_error e;
    if (rc == -ESTALE)
        api_fail(&e, 409, "conflict",
                 "This runner no longer holds the lease of job %lld, or has judged it.", r->id);
    else if (rc)
        api_internal(&e, rc);
    if (rc)
        api_send_err(req, &e);
    else
        api_send_json(req, 200, json_pack("{s:s}", "status", "queued"));
    http_request_finish(req);
}

static void release_done(void *arg, int rc)
{
    struct claim_release *r = arg;
    if (!rc) {
        queue_written(r->app->queue, r->id, 1);
        api_cache_invalidate(r->app, r->id);
    }
    if (r->handed_back) {
        release_answer(r, rc);
        app_log("job %lld: handed back by runner %s (its GPU had no room): %s", r->id, r->runner,
                rc ? "refused" : "queued again (the attempt not counted)");
    } else {
        app_log("job %lld: its claim's runner %s hung up before the answer: %s", r->id, r->runner,
                rc ? "its lease expires" : "queued again (the attempt not counted)");
    }
    free(r);
}

/* A release of job id's lease (uid, runner, attempt), for the writer, or
 * NULL (out of memory). runner fits (both callers checked or copied it). */
static struct claim_release *release_new(struct app *app, long long id, long long uid,
                                         const char *runner, int attempt, int handed_back)
{
    struct claim_release *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    assert(strlen(runner) < sizeof r->runner);
    r->app = app;
    r->id = id;
    r->uid = uid;
    r->attempt = attempt;
    r->handed_back = handed_back;
    snprintf(r->runner, sizeof(r->runner), "%s", runner);
    return r;
}

/* Loop: give c's job back (c's runner is gone). */
static void claim_release(struct claim_job *c)
{
    struct claim_release *r = release_new(c->app, c->job.id, c->uid, c->runner, c->job.attempt, 0);
    if (!r || writer_submit(c->app->writer, release_run, release_done, r, 0) != 0) {
        free(r); /* the writer is stopping: the lease expires (or restart recovers it) */
        app_log("job %lld: its claim's runner %s hung up before the answer: its lease expires",
                c->job.id, c->runner);
    }
}

static void claim_done(void *arg, int rc)
{
    struct claim_job *c = arg;
    struct app *app = c->app;
    struct http_request *req = queue_wait_req(c->w);
    if (!rc) {
        queue_written(app->queue, c->job.id, 0);
        api_cache_invalidate(app, c->job.id);
        app_log("job %lld claimed by %s (attempt %d, lab %s)", c->job.id, c->runner,
                c->job.attempt, c->job.lab);
    }
    if (req && !rc) {
        claim_answer(c, req);
    } else if (req && rc != -ENOENT) {
        struct api_error e;
        api_internal(&e, rc);
        api_send_err(req, &e);
    } else if (!rc) {
        claim_release(c);
    }
    struct queue_waiter *w = c->w;
    claim_free(c);
    queue_wait_settle(w, rc != -ENOENT);
}

/* Hand the claim of w's runner to the writer. Returns QUEUE_WAIT_BUSY, or
 * 1 once req is answered with an error. */
static int claim_start(struct app *app, struct queue_waiter *w, struct http_request *req,
                       const char *runner, long long uid)
{
    struct claim_job *c = calloc(1, sizeof(*c));
    struct api_error e;
    int rc = -ENOMEM;
    if (c && (c->labs = calloc(app->nlabs ? app->nlabs : 1, sizeof(*c->labs))) != NULL) {
        c->app = app;
        c->w = w;
        c->uid = uid;
        c->lease_s = app->cfg.lease_s;
        snprintf(c->runner, sizeof(c->runner), "%s", runner);
        for (size_t i = 0; i < app->nlabs; i++) {
            const struct app_lab *l = &app->labs[i];
            if (!l->has_rubric)
                continue;
            struct claim_lab *cl = &c->labs[c->nlabs++];
            snprintf(cl->name, sizeof(cl->name), "%s", l->lab.name);
            cl->version = l->rubric_version;
            cl->doc = json_incref(l->rubric_doc);
        }
        rc = writer_submit(app->writer, claim_run, claim_done, c, 0);
    }
    if (!rc)
        return QUEUE_WAIT_BUSY;
    if (c)
        claim_free(c);
    api_internal(&e, rc);
    api_send_err(req, &e);
    return 1;
}

static int claim_wake(struct queue *q, struct queue_waiter *w, struct http_request *req, int wake,
                      const char *runner, void *data)
{
    struct app *app = req->app;
    long long uid = (long long)(intptr_t)data;
    (void)q;
    if (wake)
        return claim_start(app, w, req, runner, uid);
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

/* ---- a runner's first claim: it holds nothing (it started again) ---- */

struct fresh_job {
    char runner[72];
    long long uid;
    int n; /* leases expired (writer) */
};

static int fresh_run(struct db *db, void *arg)
{
    struct fresh_job *f = arg;
    return queue_runner_restarted_in(db, f->runner, f->uid, &f->n);
}

static void fresh_done(void *arg, int rc)
{
    struct fresh_job *f = arg;
    if (rc == 0 && f->n > 0)
        app_log("runner %s started again: %d lease%s of its earlier life expired now", f->runner,
                f->n, f->n == 1 ? "" : "s");
    else if (rc < 0)
        app_log("runner %s started again: its earlier leases stay until they expire: %s",
                f->runner, strerror(-rc));
    free(f);
}

/* Queued on the writer before the claim's first try: the next lease sweep
 * (each second) requeues what the runner held in its earlier life and
 * wakes the parked claims, this one among them. Best effort: without it
 * those leases run out as before. */
static void claim_fresh(struct app *app, const char *runner, long long uid)
{
    struct fresh_job *f = calloc(1, sizeof(*f));
    if (!f)
        return;
    snprintf(f->runner, sizeof(f->runner), "%s", runner);
    f->uid = uid;
    if (writer_submit(app->writer, fresh_run, fresh_done, f, 0))
        free(f);
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
    int fresh = json_is_true(json_object_get(body, "fresh"));
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
    runner_seen_later(app, runner, gpu[0] ? gpu : NULL);
    if (fresh)
        claim_fresh(app, runner, u.id);
    /* Parked at once: the first try is the writer's, as every later one
     * (the loop never reads the queue for a claim). */
    if (queue_wait(app->queue, req, wait, runner, 1, claim_wake, (void *)(intptr_t)u.id) == 0)
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

/* ---- a runner's progress, written by the writer thread ---- */

struct progress_job {
    struct app *app;
    struct http_hold hold; /* the request, until the client goes away */
    long long id, runner_user;
    char *runner; /* NULL: not named */
    int attempt;
    char phase[16];
    char *detail; /* NULL: none */
    double lease_s;
};

static int progress_run(struct db *db, void *arg)
{
    struct progress_job *j = arg;
    int rc = queue_progress_in(db, j->id, j->runner_user, j->runner, j->attempt, j->phase,
                               j->detail, j->lease_s);
    if (!rc && j->runner)
        runner_seen(db, j->runner, NULL);
    return rc;
}

static void progress_free(struct progress_job *j)
{
    free(j->runner);
    free(j->detail);
    free(j);
}

static void progress_done(void *arg, int rc)
{
    struct progress_job *j = arg;
    struct http_request *req = http_hold_end(&j->hold);
    if (!rc)
        queue_written(j->app->queue, j->id, 0);
    if (req) {
        struct api_error e;
        if (rc == -ENOENT)
            api_fail(&e, 404, "not_found", "There is no job %lld.", j->id);
        else if (rc == -ESTALE)
            api_fail(&e, 409, "conflict",
                     "This runner no longer holds the lease of job %lld; abandon it.", j->id);
        else if (rc)
            api_internal(&e, rc);
        if (rc)
            api_send_err(req, &e);
        else
            api_send_json(req, 200,
                          json_pack("{s:I}", "lease_expires_in", (json_int_t)j->lease_s));
        http_request_finish(req);
    }
    progress_free(j);
}

/* Hand req's progress to the writer. 0 (req deferred) or -errno with e. */
static int progress_start(struct app *app, struct http_request *req, long long id,
                          long long runner_user, const char *runner, int attempt,
                          const char *phase, const char *detail, struct api_error *e)
{
    struct progress_job *j = calloc(1, sizeof(*j));
    if (!j)
        return api_internal(e, -ENOMEM);
    j->app = app;
    j->id = id;
    j->runner_user = runner_user;
    j->attempt = attempt;
    j->lease_s = app->cfg.lease_s;
    snprintf(j->phase, sizeof(j->phase), "%s", phase);
    j->runner = runner ? strdup(runner) : NULL;
    j->detail = detail ? strdup(detail) : NULL;
    int rc = 0;
    if ((runner && !j->runner) || (detail && !j->detail))
        rc = api_internal(e, -ENOMEM);
    else if ((rc = writer_submit(app->writer, progress_run, progress_done, j, 0)) != 0)
        api_internal(e, rc);
    if (rc) {
        progress_free(j);
        return rc;
    }
    http_hold_start(&j->hold, req);
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
    if (api_path_id(req, "id", "Job", &id))
        return HTTP_DONE;
    if (api_body_json(req, &body, 0, &e))
        return api_send_err(req, &e);
    const char *phase = json_string_value(json_object_get(body, "phase"));
    json_t *jd = json_object_get(body, "detail");
    const char *detail = json_string_value(jd);
    const char *runner;
    int attempt, rc;
    job_lease_args(body, &runner, &attempt);
    if (!runner || !*runner || attempt <= 0) {
        /* As for a result: a stale runner of the same account overwrote the
         * holder's phase and renewed its lease. */
        rc = api_fail(&e, 400, "bad_request",
                      "runner and attempt: progress must name its lease (the runner name sent on "
                      "claim and the claim's attempt).");
    } else if (!phase || !status_in_progress(phase)) {
        rc =
            api_fail(&e, 400, "bad_request", "phase: one of compiling, checking, running, timing.");
    } else if (jd && !json_is_string(jd)) {
        rc = api_fail(&e, 400, "bad_request", "detail: expected a string.");
    } else if (detail && strlen(detail) > 200) {
        rc = api_fail(&e, 400, "bad_request", "detail: at most 200 characters.");
    } else {
        rc = progress_start(app, req, id, u.id, runner, attempt, phase, detail, &e);
    }
    json_decref(body);
    if (rc)
        return api_send_err(req, &e);
    return HTTP_DEFERRED; /* answered by progress_done */
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

/* A result's profile_key (the runner's name for the profile update to
 * follow): 8 to 64 hex digits. */
static int profile_key_ok(const json_t *k)
{
    const char *s = json_string_value(k);
    size_t n = s ? strlen(s) : 0;
    if (n < 8 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i]))
            return 0;
    return 1;
}

/* ---- a runner's result: parsed on libuv's pool, written by the writer ----
 * An 8 MiB result costs tens of milliseconds to parse and serialize and
 * more to write: none of it runs on the loop. */

struct result_job {
    struct app *app;
    struct http_hold hold; /* the request, until the client goes away */
    uv_work_t work;
    long long id, runner_user;
    char *body; /* the request body, taken over, freed once parsed */
    size_t body_len;
    double pct;        /* the late penalty in percent */
    double rubric_max; /* max_score when the result names none */
    char lab[65];
    /* set by result_parse (pool thread) */
    char *runner;
    char profile_key[65]; /* "" when no profile follows */
    int attempt;
    char status[32];
    struct queue_result qr;
    char *text;         /* the result document, compact */
    struct api_error e; /* e.status != 0: refused */
    /* set by result_run (writer thread) */
    const char *final;
};

static void result_job_free(struct result_job *j)
{
    free(j->body);
    free(j->runner);
    free(j->text);
    free(j);
}

/* Answer the runner (if it is still there) with j->e, or 200 and the final
 * status; then free j. */
static void result_answer(struct result_job *j, int rc)
{
    struct http_request *req = http_hold_end(&j->hold);
    if (req) {
        if (rc) {
            if (!j->e.status)
                api_internal(&j->e, rc);
            api_send_err(req, &j->e);
        } else {
            api_send_json(req, 200,
                          json_pack("{s:I,s:s}", "id", (json_int_t)j->id, "status", j->final));
        }
        http_request_finish(req);
    }
    result_job_free(j);
}

/* The stored numbers of j's result (the late penalty applies to the
 * stored score; the document stays verbatim) and its compact text. */
static void result_fill(struct result_job *j, json_t *result)
{
    json_t *js = json_object_get(result, "score"), *jm = json_object_get(result, "max_score");
    j->qr.status = j->status;
    /* A system error is ours: it stores no score, so the scoreboard and
     * the grades never take it for the student's best (the runner's
     * document says 0 / 0). */
    if (js && strcmp(j->status, "system_error") != 0) {
        j->qr.has_score = 1;
        j->qr.score = json_number_value(js) * (1 - j->pct / 100.0);
        if (j->qr.score < 0)
            j->qr.score = 0;
        j->qr.max_score = jm ? json_number_value(jm) : j->rubric_max;
    }
    json_t *sp =
        json_object_get(json_object_get(json_object_get(result, "cugrade"), "timing"), "speedup");
    if (json_is_number(sp) && isfinite(json_number_value(sp))) {
        j->qr.has_speedup = 1;
        j->qr.speedup = json_number_value(sp);
    }
    if (json_is_object(result)) {
        j->text = json_dumps(result, JSON_COMPACT | JSON_REAL_PRECISION(15));
        if (!j->text)
            api_internal(&j->e, -ENOMEM);
    }
    j->qr.result_json = j->text;
}

/* Pool thread: parse and check the body, apply the late penalty, serialize
 * the document. Touches only j. */
static void result_parse(uv_work_t *w)
{
    struct result_job *j = w->data;
    struct api_error *e = &j->e;
    json_t *body = NULL;
    writer_thread_background();
    if (api_json_parse(j->body, j->body_len, 0, &body, e))
        goto out;
    free(j->body); /* parsed: 8 MiB less held while the document is serialized */
    j->body = NULL;
    const char *status = json_string_value(json_object_get(body, "status"));
    json_t *result = json_object_get(body, "result");
    const char *runner;
    job_lease_args(body, &runner, &j->attempt);
    if (result_check(runner, j->attempt, status, result, e))
        goto out;
    json_t *js = json_object_get(result, "score"), *jm = json_object_get(result, "max_score");
    if ((js && !json_is_number(js)) || (jm && !json_is_number(jm))) {
        api_fail(e, 400, "bad_request", "result.score and result.max_score must be numbers.");
        goto out;
    }
    json_t *jk = json_object_get(body, "profile_key");
    if (jk && !profile_key_ok(jk)) {
        api_fail(e, 400, "bad_request", "profile_key: 8 to 64 hex digits.");
        goto out;
    }
    snprintf(j->profile_key, sizeof j->profile_key, "%s", jk ? json_string_value(jk) : "");
    j->qr.profile_key = j->profile_key;
    snprintf(j->status, sizeof(j->status), "%s", status);
    j->runner = strdup(runner);
    if (!j->runner) {
        api_internal(e, -ENOMEM);
        goto out;
    }
    result_fill(j, result);
out:
    json_decref(body);
    free(j->body);
    j->body = NULL;
}

/* Writer thread: the lease check and the rows. */
static int result_run(struct db *db, void *arg)
{
    struct result_job *j = arg;
    int rc = queue_result_in(db, j->id, j->runner_user, j->runner, j->attempt, &j->qr, &j->final);
    if (rc == -ENOENT)
        return api_fail(&j->e, 404, "not_found", "There is no job %lld.", j->id);
    if (rc == -ESTALE)
        return api_fail(&j->e, 409, "conflict",
                        "This runner no longer holds the lease of job %lld; the result was not "
                        "stored.",
                        j->id);
    if (rc)
        return rc;
    runner_job_done(db, j->runner);
    return 0;
}

/* Loop thread, after the commit. */
static void result_done(void *arg, int rc)
{
    struct result_job *j = arg;
    if (!rc) {
        queue_written(j->app->queue, j->id, strcmp(j->final, "queued") == 0);
        scoreboard_invalidate(j->app, j->lab);
        api_cache_invalidate(j->app, j->id);
        if (j->qr.has_score)
            app_log("job %lld: %s -> %s, score %g/%g%s", j->id, j->status, j->final, j->qr.score,
                    j->qr.max_score, j->pct > 0 ? " (late penalty applied)" : "");
        else
            app_log("job %lld: %s -> %s", j->id, j->status, j->final);
    }
    result_answer(j, rc);
}

/* Loop thread, once result_parse ran: refuse, or hand the job to the writer. */
static void result_parsed(uv_work_t *w, int status)
{
    struct result_job *j = w->data;
    struct app *app = j->app;
    int rc = status ? status : j->e.status ? -EINVAL : 0;
    if (!rc)
        rc = writer_submit(app->writer, result_run, result_done, j,
                           j->text ? strlen(j->text) : 0);
    if (rc)
        result_answer(j, rc);
    app_work_end(app); /* last: it may finish a stop */
}

static int h_result(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    long long id;
    if (api_need(app, req, &u, RUNNER))
        return HTTP_DONE;
    if (api_path_id(req, "id", "Job", &id))
        return HTTP_DONE;
    struct result_job *j = calloc(1, sizeof(*j));
    size_t len = req->body_len;
    if (!j || !(j->body = http_request_body_take(req))) {
        free(j);
        api_internal(&e, -ENOMEM);
        return api_send_err(req, &e);
    }
    j->body_len = len;
    j->app = app;
    j->id = id;
    j->runner_user = u.id;
    j->work.data = j;
    /* The penalty from the row and the rubric, read here: the pool thread
     * touches neither the database nor the labs. */
    double late_days = 0;
    submission_late_days(app, id, j->lab, &late_days);
    struct app_lab *l = app_lab_find(app, j->lab);
    if (late_days > 0) /* the days the pool covers carry no penalty */
        late_days = fmax(0, late_days - lateday_covered(app->db, id));
    j->pct = app_late_penalty_percent(l, late_days);
    j->rubric_max = l && l->has_rubric ? l->rubric.max_score : 0;
    int rc = uv_queue_work(app->loop, &j->work, result_parse, result_parsed);
    if (rc) {
        result_job_free(j);
        api_internal(&e, rc);
        return api_send_err(req, &e);
    }
    app_work_begin(app);
    http_hold_start(&j->hold, req);
    return HTTP_DEFERRED;
}

/* ---- a profile after its verdict (docs/api.md "Runner protocol") ----
 * Small (a few hints and one table): parsed on the loop like progress,
 * merged and written by the writer. */

struct profile_job {
    struct app *app;
    struct http_hold hold; /* the request, until the client goes away */
    long long id, runner_user;
    int attempt;
    char runner[72], key[65];
    json_t *update; /* {profile, hints?, hint_details?} */
    struct api_error e;
};

static int profile_run(struct db *db, void *arg)
{
    struct profile_job *j = arg;
    int rc = queue_profile_in(db, j->id, j->runner_user, j->runner, j->attempt, j->key, j->update);
    if (rc == -ENOENT)
        return api_fail(&j->e, 404, "not_found", "There is no job %lld.", j->id);
    if (rc == -ESTALE)
        return api_fail(&j->e, 409, "conflict",
                        "Job %lld no longer waits for this profile (regraded, retried or "
                        "another runner's); it was not stored.",
                        j->id);
    return rc;
}

static void profile_done(void *arg, int rc)
{
    struct profile_job *j = arg;
    struct http_request *req = http_hold_end(&j->hold);
    if (!rc) {
        api_cache_invalidate(j->app, j->id);
        app_log("job %lld: profile stored", j->id);
    }
    if (req) {
        if (rc) {
            if (!j->e.status)
                api_internal(&j->e, rc);
            api_send_err(req, &j->e);
        } else {
            api_send_json(req, 200, json_pack("{s:I,s:b}", "id", (json_int_t)j->id, "stored", 1));
        }
        http_request_finish(req);
    }
    json_decref(j->update);
    free(j);
}

/* The update of body: {profile, hints, hint_details} when they have their
 * types, else NULL with a 400 in e. New reference. */
static json_t *profile_update(const json_t *body, struct api_error *e)
{
    json_t *pf = json_object_get(body, "profile"), *h = json_object_get(body, "hints"),
           *hd = json_object_get(body, "hint_details");
    if (!json_is_object(pf) || !json_is_string(json_object_get(pf, "status"))) {
        api_fail(e, 400, "bad_request", "profile: an object with its status.");
        return NULL;
    }
    if ((h && !json_is_array(h)) || (hd && !json_is_array(hd))) {
        api_fail(e, 400, "bad_request", "hints and hint_details: arrays.");
        return NULL;
    }
    json_t *u = json_pack("{s:O}", "profile", pf);
    if (u && h)
        json_object_set(u, "hints", h);
    if (u && hd)
        json_object_set(u, "hint_details", hd);
    if (!u)
        api_internal(e, -ENOMEM);
    return u;
}

static int h_profile(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    long long id;
    json_t *body;
    if (api_need(app, req, &u, RUNNER))
        return HTTP_DONE;
    if (api_path_id(req, "id", "Job", &id))
        return HTTP_DONE;
    if (api_body_json(req, &body, 0, &e))
        return api_send_err(req, &e);
    const char *runner;
    int attempt, rc = 0;
    job_lease_args(body, &runner, &attempt);
    json_t *jk = json_object_get(body, "profile_key"), *update = NULL;
    if (!runner || !*runner || strlen(runner) > 64 || attempt <= 0)
        rc = api_fail(&e, 400, "bad_request",
                      "runner and attempt: a profile names the lease of its verdict.");
    else if (!profile_key_ok(jk))
        rc = api_fail(&e, 400, "bad_request",
                      "profile_key: the key its verdict's result named (8 to 64 hex digits).");
    else if (!(update = profile_update(body, &e)))
        rc = -EINVAL;
    struct profile_job *j = rc ? NULL : calloc(1, sizeof(*j));
    if (!rc && !j)
        rc = api_internal(&e, -ENOMEM);
    if (!rc) {
        j->app = app;
        j->id = id;
        j->runner_user = u.id;
        j->attempt = attempt;
        j->update = update;
        update = NULL;
        snprintf(j->runner, sizeof j->runner, "%s", runner);
        snprintf(j->key, sizeof j->key, "%s", json_string_value(jk));
        if ((rc = writer_submit(app->writer, profile_run, profile_done, j, 0)) != 0) {
            api_internal(&e, rc);
            json_decref(j->update);
            free(j);
        }
    }
    json_decref(update);
    json_decref(body);
    if (rc)
        return api_send_err(req, &e);
    http_hold_start(&j->hold, req);
    return HTTP_DEFERRED; /* answered by profile_done */
}

/* ---- a job handed back by its runner ---- */

/* POST /api/runner/jobs/{id}/release {runner, attempt}: the runner gives
 * back a job it holds and has not judged (its GPU's memory was taken while
 * another GPU of the host had room: docs/runner.md "Hand-back"). Queued
 * again at once, the attempt not counted; 409 when the lease is no longer
 * that claim's or a verdict was posted. */
static int h_release(struct app *app, struct http_request *req)
{
    struct auth_user u;
    struct api_error e;
    long long id;
    json_t *body;
    const char *runner;
    int attempt, rc = 0;
    if (api_need(app, req, &u, RUNNER))
        return HTTP_DONE;
    if (api_path_id(req, "id", "Job", &id))
        return HTTP_DONE;
    if (api_body_json(req, &body, 0, &e))
        return api_send_err(req, &e);
    job_lease_args(body, &runner, &attempt);
    struct claim_release *r = NULL;
    if (!runner || !*runner || strlen(runner) >= sizeof r->runner || attempt <= 0)
        rc = api_fail(&e, 400, "bad_request",
                      "runner and attempt: a release must name its lease (the runner name sent "
                      "on claim and the claim's attempt).");
    else if (!(r = release_new(app, id, u.id, runner, attempt, 1)))
        rc = api_internal(&e, -ENOMEM);
    else if ((rc = writer_submit(app->writer, release_run, release_done, r, 0)) != 0) {
        api_internal(&e, rc);
        free(r);
    }
    json_decref(body);
    if (rc)
        return api_send_err(req, &e);
    http_hold_start(&r->hold, req);
    return HTTP_DEFERRED; /* answered by release_done */
}

const struct route runner_api_routes[] = {
    {HTTP_POST, "/api/runner/claim", h_claim, 16 * KiB, NULL, NULL, 0},
    {HTTP_POST, "/api/runner/jobs/{id}/progress", h_progress, 16 * KiB, NULL, NULL, 0},
    {HTTP_POST, "/api/runner/jobs/{id}/release", h_release, 16 * KiB, NULL, NULL, 0},
    {HTTP_POST, "/api/runner/jobs/{id}/result", h_result, 8192 * KiB,
     "a result may be at most 8 MiB.", NULL, 0},
    {HTTP_POST, "/api/runner/jobs/{id}/profile", h_profile, 1024 * KiB,
     "a profile may be at most 1 MiB.", NULL, 0},
};
const size_t runner_api_nroutes = sizeof(runner_api_routes) / sizeof(runner_api_routes[0]);
