/*
 * server.h - the server's life, at the top of the dependency graph: open
 * the course state (app.h) and the queue, install every view's routes in
 * the router, admit requests from their headers, serve, stop.
 */
#ifndef CUGRADE_SERVER_H
#define CUGRADE_SERVER_H

#include "server/app.h"

/* Open the database (must be initialized), load labs/ and rubrics/, start
 * the queue. Returns 0, or -errno with a sentence in err. */
int app_open(struct app *app, uv_loop_t *loop, const struct app_config *cfg, char *err,
             size_t errlen);

/* Install the routes and start serving on host:port. 0 or -errno. */
int app_listen(struct app *app, const char *host, int port);

/* Graceful stop: stop accepting, answer parked claims, let requests finish,
 * then close the database and call done(arg). */
void app_shutdown(struct app *app, void (*done)(void *arg), void *arg);

/* Free what app_open made (after app_shutdown's callback, or on an error). */
void app_close(struct app *app);

#endif
