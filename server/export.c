/*
 * export.c - the grades CSV built by a reader job. See export.h.
 *
 * api_grades_csv runs unchanged on the reader's thread against a view of
 * struct app: a copy whose db is the reader's connection and whose labs are
 * copies with empty scoreboard caches, its handles (writer, queue, http,
 * caches) cleared. Labs are loaded once at start; a rubric change replaces
 * a lab's rubric on the loop meanwhile, so a job reads only the scalars of
 * its copy (the rubric's max_score), never a rubric's pointers.
 */
#include "server/export.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "server/reader.h"
#include "server/scoreboard.h"

struct export_job {
    struct app *app;
    struct http_request *req; /* NULL once the client went away */
    export_done_fn done;
    struct app view;
    struct auth_user viewer;
    struct http_buf out;
    struct api_error e;
    int rc; /* api_grades_csv's */
};

/* A view of app for another thread (see the top of this file). 0 or -ENOMEM. */
static int view_make(const struct app *app, struct app *view)
{
    *view = *app;
    view->db = NULL;
    view->writer = NULL;
    view->reader = NULL;
    view->queue = NULL;
    view->http = NULL;
    view->subcache = NULL;
    view->throttle = NULL;
    view->labs = calloc(app->nlabs ? app->nlabs : 1, sizeof(*view->labs));
    if (!view->labs)
        return -ENOMEM;
    for (size_t i = 0; i < app->nlabs; i++) {
        view->labs[i] = app->labs[i];
        memset(view->labs[i].sb_cache, 0, sizeof(view->labs[i].sb_cache));
        memset(view->labs[i].sb_valid, 0, sizeof(view->labs[i].sb_valid));
    }
    return 0;
}

static void export_job_free(struct export_job *j)
{
    for (size_t i = 0; j->view.labs && i < j->view.nlabs; i++)
        for (int k = 0; k < 4; k++)
            http_buf_free(&j->view.labs[i].sb_cache[k]);
    free(j->view.labs);
    http_buf_free(&j->out);
    free(j);
}

/* Reader thread. */
static int export_run(struct db *db, void *arg)
{
    struct export_job *j = arg;
    j->view.db = db;
    j->rc = api_grades_csv(&j->view, &j->viewer, &j->out, &j->e);
    return 0;
}

static void export_abort(struct http_request *req, void *data)
{
    (void)req;
    ((struct export_job *)data)->req = NULL;
}

/* Loop thread. */
static void export_after(void *arg, int rc)
{
    struct export_job *j = arg;
    struct app *app = j->app;
    if (rc && !j->rc)
        j->rc = api_internal(&j->e, rc);
    if (j->req) {
        j->req->on_abort = NULL;
        j->done(app, j->req, &j->out, j->rc ? &j->e : NULL);
        http_request_finish(j->req);
    }
    export_job_free(j);
    app_work_end(app); /* last: it may finish a stop */
}

int export_grades_csv(struct app *app, struct http_request *req, const struct auth_user *viewer,
                      export_done_fn done)
{
    struct api_error e;
    struct http_buf out = {0};
    if (reader_sync(app->reader)) {
        int rc = api_grades_csv(app, viewer, &out, &e);
        done(app, req, &out, rc ? &e : NULL);
        http_buf_free(&out);
        return HTTP_DONE;
    }
    struct export_job *j = calloc(1, sizeof(*j));
    int rc = j ? view_make(app, &j->view) : -ENOMEM;
    if (!rc) {
        j->app = app;
        j->req = req;
        j->done = done;
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
    req->on_abort = export_abort;
    req->abort_data = j;
    return HTTP_DEFERRED;
}
