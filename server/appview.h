/*
 * appview.h - a view of struct app for a reader job (server/reader.h;
 * docs/server.md, "The loop never waits for the disk").
 *
 * A job on libuv's pool must not touch what the loop changes meanwhile: the
 * loop's connection, the scoreboard and submission caches, the queue's
 * cached order, the writer. It reads through a view instead: a copy of
 * struct app whose db is the job's own connection, whose labs are copies
 * with empty scoreboard caches, whose queue is a read-only view
 * (queue_view_new: the fair order and the rate read on the job's
 * connection), and whose handles (writer, reader, http, submission cache,
 * throttle) are cleared. Labs are loaded once at start; a rubric the loop
 * replaces while a view is alive is kept until the last view ends
 * (app_rubric_drop), so the rubrics a view copied stay valid.
 */
#ifndef CUGRADE_APPVIEW_H
#define CUGRADE_APPVIEW_H

#include "server/app.h"

/* Loop thread: make view from app (see above; its db NULL until
 * app_view_db). 0, or -ENOMEM (then view needs no app_view_end). */
int app_view_begin(struct app *app, struct app *view);

/* Pool thread, before the job reads: its connection becomes view's (and its
 * queue view's). */
void app_view_db(struct app *view, struct db *db);

/* Loop thread, once the job is done: free what app_view_begin made and
 * what the job cached in view (scoreboards, submissions); the last view to
 * end frees the rubrics kept for views. */
void app_view_end(struct app *app, struct app *view);

/* Loop thread: a rubric (NULL: none) and its document (NULL: none) that a
 * lab no longer uses, taken over: freed now, or once no view is alive. */
void app_rubric_drop(struct app *app, struct rubric *r, json_t *doc);

#endif
