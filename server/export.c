/*
 * export.c - the grades CSV and a lab's results.json built by a reader
 * job. See export.h.
 *
 * The builders run on the reader's thread against a view of struct app
 * (server/appview.h): the reader's connection, copies of the labs with
 * empty scoreboard caches, a read-only view of the queue.
 */
#include "server/export.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/appview.h"
#include "server/reader.h"
#include "server/scoreboard.h"
#include "server/submission.h"

enum export_kind { EXPORT_GRADES_CSV, EXPORT_RESULTS_JSON };

struct export_job {
    struct app *app;
    struct http_hold hold; /* the request, until the client goes away */
    export_done_fn done;
    enum export_kind kind;
    char lab[65]; /* EXPORT_RESULTS_JSON */
    struct app view; /* server/appview.h */
    int viewing;     /* view made */
    struct auth_user viewer;
    struct http_buf out;
    struct api_error e;
    int rc; /* api_grades_csv's */
};

static void export_job_free(struct export_job *j)
{
    if (j->viewing)
        app_view_end(j->app, &j->view);
    http_buf_free(&j->out);
    free(j);
}

/* Gradescope-style: [{"user","display_name","submission","results":{score,
 * max_score,output,tests,...}}] with each student's best submission of lab,
 * the score replaced by the override when there is one, into out. 0, or
 * -errno with e filled. */
static int results_json(struct app *app, const struct auth_user *viewer, const char *lab,
                        struct http_buf *buf, struct api_error *e)
{
    json_t *sb = NULL, *r, *out, *students;
    size_t i;
    int rc = api_scoreboard(app, viewer, lab, &sb, e);
    if (rc)
        return rc;
    out = json_pack("{s:s,s:[]}", "lab", lab, "students");
    students = json_object_get(out, "students");
    json_array_foreach(json_object_get(sb, "rows"), i, r) {
        json_t *sub = NULL, *res, *idv = json_object_get(r, "submission");
        const char *user = json_string_value(json_object_get(r, "user"));
        const char *name = json_string_value(json_object_get(r, "display_name"));
        long long id = json_is_number(idv) ? (long long)json_number_value(idv) : 0;
        struct api_error ign;
        if (api_submission_get(app, viewer, id, &sub, &ign) != 0)
            continue;
        res = json_object_get(sub, "result");
        res = json_is_object(res) ? json_deep_copy(res) : json_object();
        json_object_set(res, "score", json_object_get(r, "score"));
        json_object_set(res, "max_score", json_object_get(r, "max_score"));
        json_array_append_new(students, json_pack("{s:s,s:s,s:I,s:o}", "user", user ? user : "",
                                                  "display_name", name ? name : "",
                                                  "submission", id, "results", res));
        json_decref(sub);
    }
    json_decref(sb);
    char *text = json_dumps(out, JSON_INDENT(1));
    json_decref(out);
    rc = text ? http_buf_append(buf, text, strlen(text)) : -ENOMEM;
    free(text);
    return rc ? api_internal(e, rc) : 0;
}

/* Reader thread. */
static int export_run(struct db *db, void *arg)
{
    struct export_job *j = arg;
    app_view_db(&j->view, db);
    if (j->kind == EXPORT_GRADES_CSV)
        j->rc = api_grades_csv(&j->view, &j->viewer, &j->out, &j->e);
    else
        j->rc = results_json(&j->view, &j->viewer, j->lab, &j->out, &j->e);
    return 0;
}

/* Loop thread. */
static void export_after(void *arg, int rc)
{
    struct export_job *j = arg;
    struct app *app = j->app;
    if (rc && !j->rc)
        j->rc = api_internal(&j->e, rc);
    struct http_request *req = http_hold_end(&j->hold);
    if (req) {
        j->done(app, req, &j->out, j->rc ? &j->e : NULL);
        http_request_finish(req);
    }
    export_job_free(j);
    app_work_end(app); /* last: it may finish a stop */
}

/* Build an export of kind (lab: its lab) off the loop; see export.h. */
static int export_start(struct app *app, struct http_request *req, const struct auth_user *viewer,
                        enum export_kind kind, const char *lab, export_done_fn done)
{
    struct api_error e;
    struct http_buf out = {0};
    if (reader_sync(app->reader)) {
        int rc = kind == EXPORT_GRADES_CSV ? api_grades_csv(app, viewer, &out, &e)
                                           : results_json(app, viewer, lab, &out, &e);
        done(app, req, &out, rc ? &e : NULL);
        http_buf_free(&out);
        return HTTP_DONE;
    }
    struct export_job *j = calloc(1, sizeof(*j));
    int rc = j ? app_view_begin(app, &j->view) : -ENOMEM;
    if (!rc) {
        j->viewing = 1;
        j->app = app;
        j->done = done;
        j->kind = kind;
        snprintf(j->lab, sizeof(j->lab), "%s", lab ? lab : "");
        j->viewer = *viewer;
        rc = reader_submit(app->reader, export_run, export_after, j);
    }
    if (rc) {
        if (j)
            export_job_free(j);
        api_fail(&e, 503, "internal", "The export could not start (%s); try again in a moment.",
                 strerror(-rc));
        done(app, req, &out, &e);
        return HTTP_DONE;
    }
    app_work_begin(app);
    http_hold_start(&j->hold, req);
    return HTTP_DEFERRED;
}

int export_grades_csv(struct app *app, struct http_request *req, const struct auth_user *viewer,
                      export_done_fn done)
{
    return export_start(app, req, viewer, EXPORT_GRADES_CSV, NULL, done);
}

int export_results_json(struct app *app, struct http_request *req, const struct auth_user *viewer,
                        const char *lab, export_done_fn done)
{
    assert(lab);
    return export_start(app, req, viewer, EXPORT_RESULTS_JSON, lab, done);
}
