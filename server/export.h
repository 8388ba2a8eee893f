/*
 * export.h - exports built off the event loop (docs/server.md, "The loop
 * never waits for the disk").
 *
 * The grades CSV reads every student's best submission of every lab, and a
 * lab's results.json every student's best result: tens of thousands of
 * rows, tens of MB, for a big course, on the loop's connection a stall
 * for every client (and for as long as the disk stalls). It is built by a
 * reader job (server/reader.h) and handed back to the loop, which sends it.
 */
#ifndef CUGRADE_EXPORT_H
#define CUGRADE_EXPORT_H

#include "server/app.h"
#include "server/http.h"

/* On the loop: fill req's response from the built export out (the callee
 * may take out's memory over: it is freed after) or from the error e
 * (NULL when it was built). */
typedef void (*export_done_fn)(struct app *app, struct http_request *req, struct http_buf *out,
                               const struct api_error *e);

/* Build the grades CSV (api_grades_csv, unchanged) for viewer off the loop
 * and call done with it; the request is then finished. Returns
 * HTTP_DEFERRED; or HTTP_DONE when done already ran (a database in memory:
 * built on the loop; or the job could not be queued: done with a 503). */
int export_grades_csv(struct app *app, struct http_request *req, const struct auth_user *viewer,
                      export_done_fn done);

/* The same for lab's Gradescope-style results.json: each student's best
 * submission with its result, the score the board's (overrides applied).
 * An unknown lab is done's 404. */
int export_results_json(struct app *app, struct http_request *req, const struct auth_user *viewer,
                        const char *lab, export_done_fn done);

#endif
