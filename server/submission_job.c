/*
 * submission_job.c - a submission, off the loop: the body is taken over
 * (no copy), parsed and checked for text on libuv's pool when it is big,
 * checked against the lab on the loop (submission_check), and written with
 * its deadlines (the student's extension is read there) and rate limits by
 * the writer thread; the 202 goes out once the rows are
 * on disk. See submission_start in submission.h. The web form's
 * submissions take the same path from the check on (submission_start_form),
 * answered by the page's callback instead of a 202.
 */
#include "server/api.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/lateday.h"
#include "server/multipart.h"
#include "server/submission.h"
#include "server/writer.h"

#define SUBMIT_INLINE_MAX (16 * 1024) /* bodies up to this are parsed on the loop */

struct submit_job {
    struct http_hold client; /* the request, while its client is there */
    struct app *app;
    uv_work_t work;
    struct auth_user viewer;
    char lab[65];
    char boundary[80]; /* "": a raw body */
    char filename[256];
    char *body; /* the request body, taken over */
    size_t body_len;
    const char *src; /* set by submit_parse: the file, in body */
    size_t src_len;
    int text_ok;
    struct queue_submit qs; /* set on the loop for the writer (late: by the writer) */
    struct submission_deadlines dl; /* the student's, checked on the writer */
    int student, max_in_flight, max_per_hour;
    double now;
    long long id; /* set by submit_run, on the writer thread */
    int superseded;
    struct lateday_quote quote; /* set by submit_run when qs.late */
    struct api_error e; /* e.status != 0: refused */
    submission_form_done *form_done; /* the web form's answer, or NULL: the API's 202 */
    long long keep; /* the form's queued submission not to replace (0: none) */
};

/* Answer the client (if it is still there): j->e, or the 202; free j. */
static void submit_answer(struct submit_job *j, int rc)
{
    struct http_request *req = http_hold_end(&j->client); /* NULL: the client hung up */
    if (rc && !j->e.status)
        api_internal(&j->e, rc);
    if (req && j->form_done) {
        if (j->form_done(j->app, req, j->lab, j->filename, rc ? 0 : j->id, rc ? &j->e : NULL) !=
            HTTP_DEFERRED)
            http_request_finish(req);
    } else if (req) {
        if (rc) {
            api_send_err(req, &j->e);
        } else {
            char url[64];
            snprintf(url, sizeof(url), "/api/submissions/%lld", j->id);
            http_response_header(req, "Location", url);
            json_t *o = json_pack("{s:I,s:s,s:s,s:b,s:i}", "id", (json_int_t)j->id, "status",
                                  "queued", "url", url, "late", j->qs.late, "superseded",
                                  j->superseded);
            if (o && j->qs.late)
                lateday_quote_json(&j->quote, o);
            api_send_json(req, 202, o);
        }
        http_request_finish(req);
    }
    free(j->body);
    free(j);
}

/* Find the file in the body and check that it is text (on the pool, or on
 * the loop for a small body). Touches only j. */
static void submit_parse(uv_work_t *w)
{
    struct submit_job *j = w->data;
    j->src = j->body;
    j->src_len = j->body_len;
    if (j->boundary[0]) {
        struct multipart_part parts[MULTIPART_MAX_PARTS];
        char err[200];
        size_t n;
        if (multipart_parse(j->body, j->body_len, j->boundary, parts, MULTIPART_MAX_PARTS, &n, err,
                            sizeof(err))) {
            api_fail(&j->e, 400, "bad_request", "Bad multipart body: %s", err);
            return;
        }
        const struct multipart_part *p = multipart_find(parts, n, "file");
        if (!p) {
            api_fail(&j->e, 400, "bad_request",
                     "The form has no part named 'file'; send it as: curl -F file=@kernel.cu ...");
            return;
        }
        snprintf(j->filename, sizeof(j->filename), "%s",
                 p->has_filename ? p->filename : "kernel.cu");
        j->src = p->data;
        j->src_len = p->len;
    }
    j->text_ok = http_utf8_valid(j->src, j->src_len);
}

/* Writer thread: the form showed the student's queued submission j->keep
 * and its box to replace it was not ticked: 409 while it is still queued
 * (the browser asks first; this is for those that do not validate). */
static int keep_check(struct db *db, struct submit_job *j)
{
    sqlite3_stmt *st = db_stmt(db, "SELECT 1 FROM submissions WHERE id = ?1 AND user_id = ?2"
                                   " AND lab = ?3 AND status = 'queued'");
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, j->keep);
    sqlite3_bind_int64(st, 2, j->viewer.id);
    sqlite3_bind_text(st, 3, j->lab, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc == SQLITE_DONE)
        return 0;
    if (rc != SQLITE_ROW)
        return db_errno(rc);
    api_fail(&j->e, 409, "replace_unticked",
             "Your submission #%lld is still waiting in the queue and a new one would replace "
             "it. Tick \xe2\x80\x9cReplace my queued submission #%lld\xe2\x80\x9d to send this "
             "one instead, or wait for #%lld to be graded.",
             j->keep, j->keep, j->keep);
    return -EEXIST;
}

/* Writer thread: the limits and the rows, in one transaction. */
static int submit_run(struct db *db, void *arg)
{
    struct submit_job *j = arg;
    int rc = submission_deadline_in(db, &j->dl, j->viewer.id, j->lab, j->now, &j->qs.late,
                                    &j->qs.late_days, &j->e);
    if (rc)
        return rc;
    if (j->keep > 0 && (rc = keep_check(db, j)) != 0)
        return rc;
    if (j->student && (rc = submission_rate_check(db, j->qs.user_id, j->qs.lab,
                                                  j->max_in_flight, j->max_per_hour, j->now,
                                                  &j->e)) != 0)
        return rc;
    rc = queue_enqueue_in(db, &j->qs, &j->id, &j->superseded);
    /* Pooled late days are spent in the same transaction (lateday.h). */
    if (!rc && j->qs.late)
        rc = lateday_spend(db, j->qs.lab, j->qs.user_id, j->id, (int)j->qs.late_days, &j->quote);
    return rc;
}

/* Loop thread, after the commit: the rows are on disk when rc is 0. */
static void submit_done(void *arg, int rc)
{
    struct submit_job *j = arg;
    if (!rc) {
        queue_written(j->app->queue, 0, 1);
        app_log("submission %lld queued: %s, lab %s, %zu bytes%s%s", j->id, j->viewer.name,
                j->qs.lab, j->qs.size, j->qs.late ? ", late" : "",
                j->superseded ? ", superseding the queued one" : "");
    }
    submit_answer(j, rc);
}

static void submit_parse_pool(uv_work_t *w)
{
    writer_thread_background();
    submit_parse(w);
}

/* Loop thread, once submit_parse ran: the lab's checks, then the writer.
 * 0, or -errno with j->e (when e.status is 0: an internal error). */
static int submit_queue(struct submit_job *j)
{
    struct app_lab *l;
    int rc = j->e.status ? -EINVAL : 0;
    j->now = db_now();
    if (!rc)
        rc = submission_check(j->app, &j->viewer, j->lab, j->filename, j->src, j->src_len,
                              j->text_ok, &l, &j->dl, &j->e);
    if (!rc) {
        /* What the writer needs, copied: the rubric may change meanwhile. */
        j->qs = (struct queue_submit){.user_id = j->viewer.id,
                                      .lab = j->lab,
                                      .filename = j->filename,
                                      .source = j->src,
                                      .size = j->src_len,
                                      .max_attempts = l->rubric.max_attempts};
        j->student = j->viewer.role == AUTH_STUDENT;
        j->max_in_flight = l->rubric.max_in_flight;
        j->max_per_hour = l->rubric.max_per_hour;
        rc = writer_submit(j->app->writer, submit_run, submit_done, j, j->src_len);
    }
    return rc;
}

static void submit_parsed(uv_work_t *w, int status)
{
    struct submit_job *j = w->data;
    struct app *app = j->app;
    int rc = status ? status : submit_queue(j);
    if (rc)
        submit_answer(j, rc);
    app_work_end(app); /* last: it may finish a stop */
}

int submission_start_form(struct app *app, struct http_request *req,
                          const struct auth_user *viewer, const char *lab, const char *filename,
                          const char *source, size_t len, long long keep,
                          submission_form_done *done, struct api_error *e)
{
    assert(done && source);
    struct submit_job *j = calloc(1, sizeof(*j));
    if (!j || !(j->body = malloc(len ? len : 1))) {
        free(j);
        return api_internal(e, -ENOMEM);
    }
    memcpy(j->body, source, len);
    j->body_len = j->src_len = len;
    j->src = j->body;
    j->text_ok = -1; /* submission_check looks */
    j->app = app;
    j->viewer = *viewer;
    j->form_done = done;
    j->keep = keep;
    snprintf(j->lab, sizeof(j->lab), "%s", lab);
    snprintf(j->filename, sizeof(j->filename), "%s", filename);
    int rc = submit_queue(j);
    if (rc) {
        if (j->e.status)
            *e = j->e;
        else
            api_internal(e, rc);
        free(j->body);
        free(j);
        return rc;
    }
    http_hold_start(&j->client, req);
    return 0;
}

/* Start req's submission to lab (known to exist) with the body's file
 * (boundary: multipart, or NULL for a raw body named filename). 0: req is
 * deferred; -errno with e to answer now. */
int submission_start(struct app *app, struct http_request *req, const struct auth_user *viewer,
                     const char *lab, const char *boundary, const char *filename,
                     struct api_error *e)
{
    struct submit_job *j = calloc(1, sizeof(*j));
    size_t len = req->body_len;
    if (!j || !(j->body = http_request_body_take(req))) {
        free(j);
        return api_internal(e, -ENOMEM);
    }
    j->body_len = len;
    j->app = app;
    j->viewer = *viewer;
    j->work.data = j;
    snprintf(j->lab, sizeof(j->lab), "%s", lab);
    snprintf(j->boundary, sizeof(j->boundary), "%s", boundary ? boundary : "");
    snprintf(j->filename, sizeof(j->filename), "%s", filename ? filename : "kernel.cu");
    int rc;
    if (len <= SUBMIT_INLINE_MAX) {
        /* A small file is parsed at once: cheaper than two trips. */
        submit_parse(&j->work);
        rc = submit_queue(j);
        if (rc) {
            if (j->e.status)
                *e = j->e;
            else
                api_internal(e, rc);
        }
    } else {
        rc = uv_queue_work(app->loop, &j->work, submit_parse_pool, submit_parsed);
        if (rc)
            api_internal(e, rc);
        else
            app_work_begin(app);
    }
    if (rc) {
        free(j->body);
        free(j);
        return rc;
    }
    http_hold_start(&j->client, req);
    return 0;
}
