/*
 * pages.h - the web interface: server-rendered HTML pages for students, TAs
 * and admins, the stylesheet and script under /static/, sign-in sessions and
 * CSRF checks (docs/web.md). The router hands every path that is not
 * /api/..., /healthz or /metrics to pages_handle().
 */
#ifndef CUGRADE_PAGES_H
#define CUGRADE_PAGES_H

#include <stddef.h>
#include "server/http.h"

struct app;

/* Body cap for page requests (router fallback_body_max): a submitted source
 * is at most 256 KiB, plus multipart framing and the other fields; a roster
 * CSV pasted by an admin may be larger. */
#define PAGES_BODY_MAX (1024 * 1024)

/* Serve one page request (GET/HEAD/POST on any non-API path). Fills the
 * response (HTML, a redirect, a static file or a 4xx page) and returns
 * HTTP_DONE. Never keeps the request. */
int pages_handle(struct app *app, struct http_request *req);

#endif
