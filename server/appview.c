/*
 * appview.c - views of struct app for reader jobs. See appview.h.
 */
#include "server/appview.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "server/queue.h"
#include "server/submission.h"

int app_view_begin(struct app *app, struct app *view)
{
    assert(app && view && app->db);
    *view = *app;
    view->db = NULL;
    view->writer = NULL;
    view->reader = NULL;
    view->queue = NULL;
    view->http = NULL;
    view->subcache = NULL;
    view->throttle = NULL;
    view->stopping = NULL;
    view->retired = NULL;
    view->views = 0;
    view->labs = calloc(app->nlabs ? app->nlabs : 1, sizeof(*view->labs));
    if (!view->labs)
        return -ENOMEM;
    if (app->queue && queue_view_new(app->queue, &view->queue) != 0) {
        free(view->labs);
        view->labs = NULL;
        return -ENOMEM;
    }
    for (size_t i = 0; i < app->nlabs; i++) {
        view->labs[i] = app->labs[i];
        memset(view->labs[i].sb_cache, 0, sizeof(view->labs[i].sb_cache));
        memset(view->labs[i].sb_valid, 0, sizeof(view->labs[i].sb_valid));
    }
    app->views++;
    return 0;
}

void app_view_db(struct app *view, struct db *db)
{
    assert(view && db);
    view->db = db;
    if (view->queue)
        queue_view_db(view->queue, db);
}

/* Free a kept rubric. */
static void retired_free(struct app_retired *r)
{
    if (r->has_rubric)
        rubric_free(&r->rubric);
    json_decref(r->doc);
    free(r);
}

void app_view_end(struct app *app, struct app *view)
{
    assert(app->views > 0);
    for (size_t i = 0; view->labs && i < view->nlabs; i++)
        for (int k = 0; k < 4; k++)
            http_buf_free(&view->labs[i].sb_cache[k]);
    free(view->labs);
    view->labs = NULL;
    queue_view_free(view->queue);
    view->queue = NULL;
    submission_cache_free(view);
    if (--app->views > 0)
        return;
    while (app->retired) {
        struct app_retired *r = app->retired;
        app->retired = r->next;
        retired_free(r);
    }
}

void app_rubric_drop(struct app *app, struct rubric *r, json_t *doc)
{
    if (app->views == 0) {
        if (r)
            rubric_free(r);
        json_decref(doc);
        return;
    }
    struct app_retired *k = calloc(1, sizeof(*k));
    if (!k) { /* never free it under a view: leak it */
        app_log("a replaced rubric is kept (out of memory while reader jobs read it)");
        return;
    }
    if (r) {
        k->rubric = *r;
        k->has_rubric = 1;
    }
    k->doc = doc;
    k->next = app->retired;
    app->retired = k;
}
